"""Rotations and rigid transforms: quaternions, rotation matrices, yaw, and SE(3) 4x4 transforms of points.

Conventions (see docs/conventions.md):
- Quaternions are [w, x, y, z] (nuScenes / pyquaternion order), active rotations, Hamilton product.
- Transforms are 4x4 homogeneous matrices named ``T_<to>_from_<from>``: ``p_to = T_to_from_from @ p_from``.
- Frames are right-handed with z up; in the ego frame x points forward and y to the left.
- Angles are radians.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from stridegen.core.errors import GeometryError

# ---------------------------------------------------------------------------------------------- quaternions


def check_unit_quaternion(q: np.ndarray, atol: float = 1e-3) -> None:
    """Raise GeometryError if ``q`` ([..., 4]) holds non-finite values or is not of unit norm."""
    q = np.asarray(q, dtype=np.float64)
    if q.shape[-1] != 4:
        raise GeometryError(f"quaternion must have 4 components [w, x, y, z], got shape {q.shape}")
    if not np.all(np.isfinite(q)):
        raise GeometryError("quaternion has non-finite components")
    norms = np.linalg.norm(q, axis=-1)
    if np.any(np.abs(norms - 1.0) > atol):
        worst = float(norms.reshape(-1)[np.argmax(np.abs(norms - 1.0).reshape(-1))])
        raise GeometryError(f"quaternion is not of unit norm (norm {worst:.6f})")


def quat_normalize(q: np.ndarray) -> np.ndarray:
    q = np.asarray(q, dtype=np.float64)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def quat_to_rotmat(q: np.ndarray) -> np.ndarray:
    """[..., 4] quaternions [w, x, y, z] -> [..., 3, 3] rotation matrices (normalised first)."""
    w, x, y, z = np.moveaxis(quat_normalize(q), -1, 0)
    r = np.empty(w.shape + (3, 3))
    r[..., 0, 0] = 1 - 2 * (y * y + z * z)
    r[..., 0, 1] = 2 * (x * y - z * w)
    r[..., 0, 2] = 2 * (x * z + y * w)
    r[..., 1, 0] = 2 * (x * y + z * w)
    r[..., 1, 1] = 1 - 2 * (x * x + z * z)
    r[..., 1, 2] = 2 * (y * z - x * w)
    r[..., 2, 0] = 2 * (x * z - y * w)
    r[..., 2, 1] = 2 * (y * z + x * w)
    r[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return r


def rotmat_to_quat(r: np.ndarray) -> np.ndarray:
    """[..., 3, 3] rotation matrices -> [..., 4] unit quaternions [w, x, y, z] with w >= 0.

    Shepperd's method: pick the largest of (w, x, y, z) to divide by, for numerical stability.
    """
    r = np.asarray(r, dtype=np.float64)
    batch = r.shape[:-2]
    m = r.reshape(-1, 3, 3)
    tr = np.trace(m, axis1=1, axis2=2)
    cands = np.stack([tr, m[:, 0, 0], m[:, 1, 1], m[:, 2, 2]], axis=1)
    pick = np.argmax(cands, axis=1)
    q = np.empty((m.shape[0], 4))
    for k in range(4):
        sel = pick == k
        if not np.any(sel):
            continue
        s = m[sel]
        if k == 0:
            t = np.sqrt(1.0 + tr[sel]) * 2
            q[sel] = np.stack(
                [0.25 * t, (s[:, 2, 1] - s[:, 1, 2]) / t, (s[:, 0, 2] - s[:, 2, 0]) / t, (s[:, 1, 0] - s[:, 0, 1]) / t],
                axis=1,
            )
        elif k == 1:
            t = np.sqrt(1.0 + s[:, 0, 0] - s[:, 1, 1] - s[:, 2, 2]) * 2
            q[sel] = np.stack(
                [(s[:, 2, 1] - s[:, 1, 2]) / t, 0.25 * t, (s[:, 0, 1] + s[:, 1, 0]) / t, (s[:, 0, 2] + s[:, 2, 0]) / t],
                axis=1,
            )
        elif k == 2:
            t = np.sqrt(1.0 + s[:, 1, 1] - s[:, 0, 0] - s[:, 2, 2]) * 2
            q[sel] = np.stack(
                [(s[:, 0, 2] - s[:, 2, 0]) / t, (s[:, 0, 1] + s[:, 1, 0]) / t, 0.25 * t, (s[:, 1, 2] + s[:, 2, 1]) / t],
                axis=1,
            )
        else:
            t = np.sqrt(1.0 + s[:, 2, 2] - s[:, 0, 0] - s[:, 1, 1]) * 2
            q[sel] = np.stack(
                [(s[:, 1, 0] - s[:, 0, 1]) / t, (s[:, 0, 2] + s[:, 2, 0]) / t, (s[:, 1, 2] + s[:, 2, 1]) / t, 0.25 * t],
                axis=1,
            )
    q = quat_normalize(q)
    q = np.where(q[:, :1] < 0, -q, q)
    return q.reshape(batch + (4,))


def quat_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product a * b of [..., 4] quaternions [w, x, y, z] (apply b first, then a)."""
    aw, ax, ay, az = np.moveaxis(np.asarray(a, dtype=np.float64), -1, 0)
    bw, bx, by, bz = np.moveaxis(np.asarray(b, dtype=np.float64), -1, 0)
    return np.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        axis=-1,
    )


def yaw_to_quat(yaw: np.ndarray | float) -> np.ndarray:
    """Rotation by ``yaw`` about +z as [..., 4] quaternions [w, x, y, z]."""
    yaw = np.asarray(yaw, dtype=np.float64)
    zeros = np.zeros_like(yaw)
    return np.stack([np.cos(yaw / 2), zeros, zeros, np.sin(yaw / 2)], axis=-1)


def rotmat_yaw(r: np.ndarray) -> np.ndarray:
    """Heading of the rotated x axis projected onto the xy plane (nuScenes devkit ``quaternion_yaw``)."""
    r = np.asarray(r, dtype=np.float64)
    return np.arctan2(r[..., 1, 0], r[..., 0, 0])


def quat_to_yaw(q: np.ndarray) -> np.ndarray:
    return rotmat_yaw(quat_to_rotmat(q))


# ---------------------------------------------------------------------------------------------- SE(3)


def make_transform(rotation: np.ndarray, translation: np.ndarray) -> np.ndarray:
    """4x4 transform from a rotation (3x3 matrix or [w, x, y, z] quaternion) and a translation (3,).

    Batched: rotation [..., 3, 3] or [..., 4], translation [..., 3] -> [..., 4, 4].
    """
    rotation = np.asarray(rotation, dtype=np.float64)
    translation = np.asarray(translation, dtype=np.float64)
    # A last axis of 4 is always quaternions (a rotation matrix is 3x3): [4, 4] is a batch of four of them.
    r = quat_to_rotmat(rotation) if rotation.shape[-1] == 4 else rotation
    batch = np.broadcast_shapes(r.shape[:-2], translation.shape[:-1])
    t = np.zeros(batch + (4, 4))
    t[..., :3, :3] = r
    t[..., :3, 3] = translation
    t[..., 3, 3] = 1.0
    return t


def pose_transform(rotation: Any, translation: Any) -> np.ndarray:
    """``make_transform(rotation, translation)``, the same bits, for one pose of a table: a [w, x, y, z]
    quaternion and a translation given as JSON lists of numbers, without numpy's overhead per small array.

    The same float operations in the same order as ``quat_normalize`` and ``quat_to_rotmat``: the norm
    ``sqrt(((w*w + x*x) + y*y) + z*z)`` (numpy's ``linalg.norm`` adds the four squares in this order;
    ``tests/logs/test_nuscenes_scene_speedups.py`` compares both on every pose of a log and random quaternions),
    each component divided by it, then the matrix entries. Anything else (arrays, other types or lengths, a zero
    or non-finite norm, an int too large for a float) goes to ``make_transform``.
    """
    fast = _list_pose_transform(rotation, translation)
    return make_transform(rotation, translation) if fast is None else fast


def _list_pose_transform(rotation: Any, translation: Any) -> np.ndarray | None:
    """``pose_transform`` of lists of 4 and 3 floats or ints whose quaternion has a finite non-zero norm; None
    for anything else."""
    if not (
        type(rotation) is list
        and type(translation) is list
        and len(rotation) == 4
        and len(translation) == 3
        and all(type(v) is float or type(v) is int for v in rotation + translation)
    ):
        return None
    try:
        w, x, y, z, tx, ty, tz = (float(v) for v in rotation + translation)
    except OverflowError:
        return None
    norm = math.sqrt(((w * w + x * x) + y * y) + z * z)
    if not 0.0 < norm < math.inf:
        return None
    w, x, y, z = w / norm, x / norm, y / norm, z / norm
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w), tx],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w), ty],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y), tz],
            [0.0, 0.0, 0.0, 1.0],
        ]
    )


def invert_transform(t: np.ndarray) -> np.ndarray:
    """Inverse of rigid [..., 4, 4] transforms (R^T, -R^T t)."""
    t = np.asarray(t, dtype=np.float64)
    r = t[..., :3, :3]
    rt = np.swapaxes(r, -1, -2)
    out = np.zeros_like(t)
    out[..., :3, :3] = rt
    out[..., :3, 3] = -np.einsum("...ij,...j->...i", rt, t[..., :3, 3])
    out[..., 3, 3] = 1.0
    return out


def transform_points(t: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Apply a 4x4 transform to [..., 3] points."""
    t = np.asarray(t, dtype=np.float64)
    points = np.asarray(points, dtype=np.float64)
    out = points @ t[:3, :3].T
    for k in range(3):  # column by column: numpy broadcasts over a length-3 last axis about 5x slower (same sums)
        out[..., k] += t[k, 3]
    return out


def rotate_vectors(t: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """Apply only the rotation of a 4x4 transform (or a 3x3 matrix) to [..., 3] free vectors."""
    t = np.asarray(t, dtype=np.float64)
    return np.asarray(vectors, dtype=np.float64) @ t[:3, :3].T
