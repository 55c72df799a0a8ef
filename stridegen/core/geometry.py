"""Coordinate-frame core: SE(3), quaternions, box corners, projection, IoU, polar and clock angles.

Conventions (see docs/conventions.md):
- Quaternions are [w, x, y, z] (nuScenes / pyquaternion order), active rotations, Hamilton product.
- Transforms are 4x4 homogeneous matrices named ``T_<to>_from_<from>``: ``p_to = T_to_from_from @ p_from``.
- Frames are right-handed with z up; in the ego frame x points forward and y to the left.
- Boxes are (center, size [l, w, h], yaw about +z); l runs along the heading.
- Angles are radians unless the name ends in ``_deg``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from stridegen.core.errors import GeometryError

# ---------------------------------------------------------------------------------------------- angles


def wrap_angle(angle: np.ndarray | float) -> np.ndarray:
    """Wrap radians to (-pi, pi]."""
    a = np.asarray(angle, dtype=np.float64)
    wrapped = np.mod(a + np.pi, 2.0 * np.pi) - np.pi  # [-pi, pi)
    return np.where(wrapped <= -np.pi, wrapped + 2.0 * np.pi, wrapped)


def wrap_angle_deg(angle_deg: np.ndarray | float) -> np.ndarray:
    """Wrap degrees to (-180, 180]."""
    a = np.asarray(angle_deg, dtype=np.float64)
    wrapped = np.mod(a + 180.0, 360.0) - 180.0
    return np.where(wrapped <= -180.0, wrapped + 360.0, wrapped)


def polar_angle_deg(x_ego: np.ndarray | float, y_ego: np.ndarray | float) -> np.ndarray:
    """Heading angle of a point in the ego frame: 0 = straight ahead, counter-clockwise positive, (-180, 180]."""
    return wrap_angle_deg(np.degrees(np.arctan2(y_ego, x_ego)))


# A heading within this of a half hour (clockwise 15 + 30 k degrees) is on it. A point on such a boundary (x = |y|:
# 45 degrees) comes out of arctan2 a few ulp (~1e-14 degrees) either side of it, and on which side depends on the
# build (numpy's AVX-512 arctan2 is not correctly rounded); without the tie width that noise would pick the hour.
# 1e-7 degrees (1.7e-9 rad, 0.2 um at 100 m) lies far above the noise of ego-frame coordinates (1e-12 m from global
# coordinates of 1e4 m) and far below anything a heading is measured to.
CLOCK_TIE_DEG = 1e-7


def clock_direction(x_ego: np.ndarray | float, y_ego: np.ndarray | float) -> np.ndarray:
    """Clock direction of a point in the ego frame: 12 = ahead, 3 = right, 9 = left, nearest hour.

    Half hours round up (e.g. 45 degrees to the right, 1.5 h, becomes 2 o'clock; 45 degrees to the left, 10.5 h,
    becomes 11), so the rule is ``floor(clockwise_hours + 0.5)`` rather than numpy's round-half-to-even; a heading
    within ``CLOCK_TIE_DEG`` below a half hour counts as the half hour, so that the rounding of arctan2 does not
    decide the hour of a point on the boundary.
    """
    clockwise_deg = -polar_angle_deg(x_ego, y_ego)  # clockwise from ahead, [-180, 180)
    hours = np.floor((clockwise_deg + CLOCK_TIE_DEG) / 30.0 + 0.5).astype(np.int64) % 12
    return np.where(hours == 0, 12, hours)


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
    r = quat_to_rotmat(rotation) if rotation.shape[-1] == 4 and rotation.shape[-2:] != (4, 4) else rotation
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


# ---------------------------------------------------------------------------------------------- boxes

# Corner order of the nuScenes devkit ``Box.corners``: the four front corners (+x half) first, then the rear
# ones; within each face: top-left, top-right, bottom-right, bottom-left seen from outside (y left, z up).
_CORNER_SIGNS = np.array(
    [
        [1, 1, 1],
        [1, -1, 1],
        [1, -1, -1],
        [1, 1, -1],
        [-1, 1, 1],
        [-1, -1, 1],
        [-1, -1, -1],
        [-1, 1, -1],
    ],
    dtype=np.float64,
)

# The 12 edges of a box as pairs of corner indices.
BOX_EDGES = np.array(
    [
        [0, 1],
        [1, 2],
        [2, 3],
        [3, 0],
        [4, 5],
        [5, 6],
        [6, 7],
        [7, 4],
        [0, 4],
        [1, 5],
        [2, 6],
        [3, 7],
    ]
)

# The 6 faces as corner quadruples (front, back, left, right, top, bottom).
BOX_FACES = np.array(
    [
        [0, 1, 2, 3],
        [5, 4, 7, 6],
        [4, 0, 3, 7],
        [1, 5, 6, 2],
        [4, 5, 1, 0],
        [3, 2, 6, 7],
    ]
)


def box_corners(center: np.ndarray, size_lwh: np.ndarray, yaw: np.ndarray) -> np.ndarray:
    """Corners [N, 8, 3] of yaw-only boxes: center [N, 3], size [N, 3] as (l, w, h), yaw [N]."""
    center = np.asarray(center, dtype=np.float64).reshape(-1, 3)
    size_lwh = np.asarray(size_lwh, dtype=np.float64).reshape(-1, 3)
    yaw = np.asarray(yaw, dtype=np.float64).reshape(-1)
    local = 0.5 * size_lwh[:, None, :] * _CORNER_SIGNS[None]  # [N, 8, 3]
    c, s = np.cos(yaw)[:, None], np.sin(yaw)[:, None]
    x = c * local[..., 0] - s * local[..., 1]
    y = s * local[..., 0] + c * local[..., 1]
    return np.stack([x, y, local[..., 2]], axis=-1) + center[:, None, :]


def bev_corners(center_xy: np.ndarray, size_lw: np.ndarray, yaw: np.ndarray) -> np.ndarray:
    """Counter-clockwise BEV rectangle corners [N, 4, 2]."""
    center_xy = np.asarray(center_xy, dtype=np.float64).reshape(-1, 2)
    size_lw = np.asarray(size_lw, dtype=np.float64).reshape(-1, 2)
    yaw = np.asarray(yaw, dtype=np.float64).reshape(-1)
    signs = np.array([[1, 1], [-1, 1], [-1, -1], [1, -1]], dtype=np.float64)  # ccw
    local = 0.5 * size_lw[:, None, :] * signs[None]
    c, s = np.cos(yaw)[:, None], np.sin(yaw)[:, None]
    x = c * local[..., 0] - s * local[..., 1]
    y = s * local[..., 0] + c * local[..., 1]
    return np.stack([x, y], axis=-1) + center_xy[:, None, :]


def points_in_boxes(points: np.ndarray, center: np.ndarray, size_lwh: np.ndarray, yaw: np.ndarray) -> np.ndarray:
    """Boolean [N_boxes, N_points]: whether each point lies inside each yaw-only box (boundary inclusive)."""
    points = np.asarray(points, dtype=np.float64)[:, :3]
    center = np.asarray(center, dtype=np.float64).reshape(-1, 3)
    size_lwh = np.asarray(size_lwh, dtype=np.float64).reshape(-1, 3)
    yaw = np.asarray(yaw, dtype=np.float64).reshape(-1)
    dx, dy, dz = (points[None, :, k] - center[:, None, k] for k in range(3))  # [N_boxes, N_points] each
    c, s = np.cos(yaw)[:, None], np.sin(yaw)[:, None]
    lx = c * dx + s * dy
    ly = -s * dx + c * dy
    half = 0.5 * size_lwh
    return (np.abs(lx) <= half[:, None, 0]) & (np.abs(ly) <= half[:, None, 1]) & (np.abs(dz) <= half[:, None, 2])


def segments_pass_through_box(
    origin: np.ndarray, points: np.ndarray, center: np.ndarray, size_lwh: np.ndarray, yaw: float
) -> np.ndarray:
    """[P] bool: whether the segment from ``origin`` [3] to each point [P, 3] enters the yaw-only box and leaves it
    before reaching the point (a range sensor at ``origin`` measured the point *through* the box).

    Slab method (Kay and Kajiya, SIGGRAPH 1986) in the box frame: the segment ``origin + t (p - origin)``,
    t in [0, 1], meets the box for t in [max of the slabs' entries, min of their exits]; the segment passes
    through when that interval is non-empty, starts before t = 1 and ends before t = 1 (a point inside the box
    or on its far face is not measured through it).
    """
    points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    c, s = np.cos(float(yaw)), np.sin(float(yaw))
    to_box = np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])
    o = to_box @ (np.asarray(origin, dtype=np.float64).reshape(3) - np.asarray(center, dtype=np.float64).reshape(3))
    rel = (points - np.asarray(center, dtype=np.float64).reshape(1, 3)) @ to_box.T
    half = 0.5 * np.asarray(size_lwh, dtype=np.float64).reshape(3)
    t_enter = np.zeros(points.shape[0])
    t_exit = np.full(points.shape[0], np.inf)
    outside = np.zeros(points.shape[0], dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        for k in range(3):  # one slab at a time (numpy reduces a length-3 last axis row by row, much slower)
            direction = rel[:, k] - o[k]
            t_a = (-half[k] - o[k]) / direction
            t_b = (half[k] - o[k]) / direction
            parallel = direction == 0.0  # the slab holds the whole line or none of it
            if parallel.any():
                outside |= parallel & (abs(o[k]) > half[k])
                t_a = np.where(parallel, -np.inf, t_a)
                t_b = np.where(parallel, np.inf, t_b)
            np.maximum(t_enter, np.minimum(t_a, t_b), out=t_enter)
            np.minimum(t_exit, np.maximum(t_a, t_b), out=t_exit)
    return ~outside & (t_enter <= t_exit) & (t_exit < 1.0)


# ---------------------------------------------------------------------------------------------- projection


def project_points(
    points_cam: np.ndarray, intrinsic: np.ndarray, near: float = 0.1
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pinhole projection of [N, 3] camera-frame points (x right, y down, z forward).

    Returns (uv [N, 2] pixels, depth [N], in_front [N] = depth >= near). uv of points behind the near plane is NaN.
    """
    points_cam = np.asarray(points_cam, dtype=np.float64).reshape(-1, 3)
    k = np.asarray(intrinsic, dtype=np.float64)
    depth = points_cam[:, 2]
    in_front = depth >= near
    homog = points_cam @ k.T
    uv = np.empty((homog.shape[0], 2))
    with np.errstate(divide="ignore", invalid="ignore"):  # column by column, as in ``transform_points``
        np.divide(homog[:, 0], homog[:, 2], out=uv[:, 0])
        np.divide(homog[:, 1], homog[:, 2], out=uv[:, 1])
    behind = ~in_front
    uv[:, 0][behind] = np.nan  # per column: a row mask on [N, 2] takes numpy's slower path
    uv[:, 1][behind] = np.nan
    return uv, depth, in_front


def frustum_candidates(
    T_cam_from_frame: np.ndarray,
    intrinsic: np.ndarray,
    near: float,
    rect: tuple[float, float, float, float],
    points: np.ndarray,
    margin_px: float = 1.0,
    margin_m: float = 1e-3,
) -> np.ndarray:
    """Indices of the [N, 3] points (in the frame ``T_cam_from_frame`` maps into the camera) that may project into
    ``rect`` = (u0, v0, u1, v1) at depth >= ``near``: a superset of those ``project_points`` puts there, found
    without moving every point into the camera.

    The camera's view is the intersection of five half-spaces, each linear in the point: with h = K q the
    homogeneous pixel of the camera point q = R p + t (K's last row (0, 0, 1), so h_2 = z), u >= u0 is
    (k_0 - u0 k_2) . q >= 0 (z > 0), and likewise for u <= u1, v >= v0, v <= v1; depth: k_2 . q >= near. Each is
    widened (the rectangle by ``margin_px`` pixels, the near plane by ``margin_m``), so rounding (the tests here
    group the products differently from the projection) cannot drop a point the projection keeps. A matrix with
    another last row gets every index.
    """
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    k = np.asarray(intrinsic, dtype=np.float64)
    if not np.array_equal(k[2], [0.0, 0.0, 1.0]):
        return np.arange(pts.shape[0])
    u0, v0, u1, v1 = rect
    planes_cam = np.stack(  # rows a with a . q >= 0 inside (the near plane with its offset below)
        [
            k[0] - (u0 - margin_px) * k[2],
            (u1 + margin_px) * k[2] - k[0],
            k[1] - (v0 - margin_px) * k[2],
            (v1 + margin_px) * k[2] - k[1],
            k[2],
        ]
    )
    t = np.asarray(T_cam_from_frame, dtype=np.float64)
    normals = planes_cam @ t[:3, :3]  # a . (R p + t) = (a R) . p + a . t
    offsets = planes_cam @ t[:3, 3]
    offsets[4] -= near - margin_m
    side = normals @ pts.T  # [5, N]: one row per half-space
    keep = side[0] >= -offsets[0]
    for j in range(1, 5):
        keep &= side[j] >= -offsets[j]
    return np.flatnonzero(keep)


def clip_segments_near(p0: np.ndarray, p1: np.ndarray, near: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Clip camera-frame segments [..., 3] to the half space z >= near.

    Returns (q0, q1, keep): clipped end points and whether any part of the segment survives.
    """
    z0, z1 = p0[..., 2], p1[..., 2]
    in0, in1 = z0 >= near, z1 >= near
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (near - z0) / (z1 - z0)
    t = np.where(np.isfinite(t), t, 0.0)  # only used where the segment crosses the plane (z0 != z1)
    hit = p0 + t[..., None] * (p1 - p0)
    q0 = np.where((~in0 & in1)[..., None], hit, p0)
    q1 = np.where((in0 & ~in1)[..., None], hit, p1)
    return q0, q1, in0 | in1


def project_clipped_edges(
    corners_cam: np.ndarray, intrinsic: np.ndarray, near: float = 0.1
) -> tuple[np.ndarray, np.ndarray]:
    """End points of the 12 edges of each 3D box, clipped at the near plane ``z >= near`` and projected to pixels.

    ``corners_cam`` is [N, 8, 3] in the camera frame (metres), ``intrinsic`` the 3x3 pinhole matrix. Returns
    (uv [N, 24, 2] pixels: the first end point of each edge, then the second; NaN for edges wholly behind the near
    plane, keep [N, 24] bool). Every vertex of the near-clipped box is among the kept points, so their extent is
    the box's 2D box and their convex hull its silhouette.
    """
    corners_cam = np.asarray(corners_cam, dtype=np.float64).reshape(-1, 8, 3)
    p0 = corners_cam[:, BOX_EDGES[:, 0]]
    p1 = corners_cam[:, BOX_EDGES[:, 1]]
    q0, q1, keep = clip_segments_near(p0, p1, near)
    pts = np.concatenate([q0, q1], axis=1)  # [N, 24, 3]
    keep2 = np.concatenate([keep, keep], axis=1)
    k = np.asarray(intrinsic, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        homog = pts @ k.T
        uv = homog[..., :2] / homog[..., 2:3]
    uv[~keep2] = np.nan
    return uv, keep2


def project_boxes_2d(
    corners_cam: np.ndarray, intrinsic: np.ndarray, image_size: tuple[int, int] | None = None, near: float = 0.1
) -> tuple[np.ndarray, np.ndarray]:
    """2D boxes [N, 4] (x0, y0, x1, y1) of projected 3D boxes, edges clipped at the near plane.

    ``corners_cam`` is [N, 8, 3] in the camera frame. With ``image_size = (width, height)`` the boxes are also
    clipped to the image. Returns (boxes_xyxy, valid): ``valid`` is False for boxes wholly behind the near plane
    or (with an image size) wholly outside the image; their rows are NaN.
    """
    uv, keep = project_clipped_edges(corners_cam, intrinsic, near)
    valid = np.asarray(keep.any(axis=1))
    out = np.full((uv.shape[0], 4), np.nan)
    if np.any(valid):
        out[valid, 0] = np.nanmin(uv[valid, :, 0], axis=1)
        out[valid, 1] = np.nanmin(uv[valid, :, 1], axis=1)
        out[valid, 2] = np.nanmax(uv[valid, :, 0], axis=1)
        out[valid, 3] = np.nanmax(uv[valid, :, 1], axis=1)
    if image_size is not None:
        width, height = image_size
        inside = valid & (out[:, 2] > 0) & (out[:, 0] < width) & (out[:, 3] > 0) & (out[:, 1] < height)
        out[:, [0, 2]] = np.clip(out[:, [0, 2]], 0, width)
        out[:, [1, 3]] = np.clip(out[:, [1, 3]], 0, height)
        out[~inside] = np.nan
        valid = inside
    return out, valid


def box_area_xyxy(boxes: np.ndarray) -> np.ndarray:
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    return np.clip(boxes[:, 2] - boxes[:, 0], 0, None) * np.clip(boxes[:, 3] - boxes[:, 1], 0, None)


def iou_2d(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairwise IoU [N, M] of axis-aligned boxes (x0, y0, x1, y1). Empty unions give 0."""
    a = np.asarray(a, dtype=np.float64).reshape(-1, 4)
    b = np.asarray(b, dtype=np.float64).reshape(-1, 4)
    return _iou_xyxy(a[:, None, :], b[None, :, :], box_area_xyxy(a)[:, None], box_area_xyxy(b)[None, :])


def iou_2d_rowwise(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """[N] IoU of box ``a[i]`` with box ``b[i]``: ``iou_2d(a, b).diagonal()``, the same numbers, without the
    N x N matrix."""
    a = np.asarray(a, dtype=np.float64).reshape(-1, 4)
    b = np.asarray(b, dtype=np.float64).reshape(-1, 4)
    if a.shape != b.shape:
        raise GeometryError(f"iou_2d_rowwise needs as many boxes on both sides, got {a.shape[0]} and {b.shape[0]}")
    return _iou_xyxy(a, b, box_area_xyxy(a), box_area_xyxy(b))


def _iou_xyxy(a: np.ndarray, b: np.ndarray, area_a: np.ndarray, area_b: np.ndarray) -> np.ndarray:
    """IoU of broadcast boxes [..., 4] with their areas (elementwise: each pair gets the same operations)."""
    ix0 = np.maximum(a[..., 0], b[..., 0])
    iy0 = np.maximum(a[..., 1], b[..., 1])
    ix1 = np.minimum(a[..., 2], b[..., 2])
    iy1 = np.minimum(a[..., 3], b[..., 3])
    inter = np.clip(ix1 - ix0, 0, None) * np.clip(iy1 - iy0, 0, None)
    union = area_a + area_b - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, inter / union, 0.0)


# ---------------------------------------------------------------------------------------------- rotated BEV IoU


def _polygon_area(poly: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Shoelace area of padded polygons [P, V, 2] whose first ``count`` vertices are valid (ccw)."""
    v = poly.shape[1]
    idx = np.arange(v)
    valid = idx[None, :] < count[:, None]
    nxt = np.where(idx[None, :] + 1 < count[:, None], idx[None, :] + 1, 0)
    pn = np.take_along_axis(poly, nxt[..., None].repeat(2, axis=-1), axis=1)
    cross = poly[..., 0] * pn[..., 1] - poly[..., 1] * pn[..., 0]
    return 0.5 * np.abs(np.sum(np.where(valid, cross, 0.0), axis=1))


def convex_intersection_area(subject: np.ndarray, clip: np.ndarray) -> np.ndarray:
    """Area of the intersection of pairs of convex ccw quadrilaterals, [P, 4, 2] each (Sutherland-Hodgman).

    Vectorised over pairs: polygons are padded to 8 vertices with a per-pair vertex count.
    """
    p = subject.shape[0]
    max_v = 8
    poly = np.zeros((p, max_v, 2))
    poly[:, :4] = subject
    count = np.full(p, 4)
    rows = np.arange(p)
    for e in range(4):
        a = clip[:, e]
        b = clip[:, (e + 1) % 4]
        edge = b - a

        def side(pt: np.ndarray, a: np.ndarray = a, edge: np.ndarray = edge) -> np.ndarray:
            # > 0: left of the edge (inside for a ccw clip polygon)
            return edge[:, None, 0] * (pt[..., 1] - a[:, None, 1]) - edge[:, None, 1] * (pt[..., 0] - a[:, None, 0])

        idx = np.arange(max_v)
        valid = idx[None, :] < count[:, None]
        nxt = np.where(idx[None, :] + 1 < count[:, None], idx[None, :] + 1, 0)
        cur = poly
        nex = poly[rows[:, None], nxt]
        s_cur = side(cur)
        s_nex = side(nex)
        in_cur = s_cur >= 0
        in_nex = s_nex >= 0
        with np.errstate(divide="ignore", invalid="ignore"):
            t = s_cur / (s_cur - s_nex)
        t = np.where(np.isfinite(t), t, 0.0)  # only used where the edge crosses (s_cur, s_nex differ in sign)
        inter = cur + t[..., None] * (nex - cur)
        # Each input vertex emits up to two output vertices: [cur if inside] + [intersection if the edge crosses].
        emit_cur = valid & in_cur
        emit_int = valid & (in_cur != in_nex)
        out_pts = np.stack([cur, inter], axis=2).reshape(p, 2 * max_v, 2)
        emit = np.stack([emit_cur, emit_int], axis=2).reshape(p, 2 * max_v)
        order = np.argsort(~emit, axis=1, kind="stable")
        packed = np.take_along_axis(out_pts, order[..., None].repeat(2, axis=-1), axis=1)
        count = np.minimum(emit.sum(axis=1), max_v)
        poly = np.where((np.arange(max_v)[None, :] < count[:, None])[..., None], packed[:, :max_v], 0.0)
    area = _polygon_area(poly, count)
    return np.where(count >= 3, area, 0.0)


def bev_iou(
    center_xy_a: np.ndarray,
    size_lw_a: np.ndarray,
    yaw_a: np.ndarray,
    center_xy_b: np.ndarray,
    size_lw_b: np.ndarray,
    yaw_b: np.ndarray,
) -> np.ndarray:
    """Pairwise rotated bird's-eye-view IoU [N, M] of yaw-only boxes."""
    ca = bev_corners(center_xy_a, size_lw_a, yaw_a)
    cb = bev_corners(center_xy_b, size_lw_b, yaw_b)
    n, m = ca.shape[0], cb.shape[0]
    if n == 0 or m == 0:
        return np.zeros((n, m))
    area_a = np.prod(np.asarray(size_lw_a, dtype=np.float64).reshape(-1, 2), axis=1)
    area_b = np.prod(np.asarray(size_lw_b, dtype=np.float64).reshape(-1, 2), axis=1)
    # Only pairs whose bounding circles overlap can intersect.
    ra = 0.5 * np.hypot(*np.asarray(size_lw_a, dtype=np.float64).reshape(-1, 2).T)
    rb = 0.5 * np.hypot(*np.asarray(size_lw_b, dtype=np.float64).reshape(-1, 2).T)
    da = np.asarray(center_xy_a, dtype=np.float64).reshape(-1, 2)
    db = np.asarray(center_xy_b, dtype=np.float64).reshape(-1, 2)
    dist = np.linalg.norm(da[:, None] - db[None], axis=-1)
    ii, jj = np.nonzero(dist <= ra[:, None] + rb[None, :])
    out = np.zeros((n, m))
    if ii.size:
        inter = convex_intersection_area(ca[ii], cb[jj])
        union = area_a[ii] + area_b[jj] - inter
        with np.errstate(divide="ignore", invalid="ignore"):
            out[ii, jj] = np.where(union > 0, inter / union, 0.0)
    return out


def polygon_area(poly: np.ndarray) -> float:
    """Area of a simple polygon [V, 2] (shoelace)."""
    p = np.asarray(poly, dtype=np.float64).reshape(-1, 2)
    if p.shape[0] < 3:
        return 0.0
    x, y = p[:, 0], p[:, 1]
    y_next = np.concatenate((y[1:], y[:1]))  # np.roll(y, -1), without np.roll's generic overhead
    x_next = np.concatenate((x[1:], x[:1]))
    return float(abs(np.dot(x, y_next) - np.dot(y, x_next)) / 2.0)


def clip_polygon_to_rect(poly: np.ndarray, x0: float, y0: float, x1: float, y1: float) -> np.ndarray:
    """Sutherland-Hodgman clipping of a polygon [V, 2] to the rectangle [x0, x1] x [y0, y1] (exact for convex
    polygons)."""
    pts = [tuple(p) for p in np.asarray(poly, dtype=np.float64).reshape(-1, 2)]
    for axis, bound, keep_above in ((0, x0, True), (0, x1, False), (1, y0, True), (1, y1, False)):
        if not pts:
            break
        out: list[tuple[float, float]] = []
        for i, cur in enumerate(pts):
            prev = pts[i - 1]
            cur_in = cur[axis] >= bound if keep_above else cur[axis] <= bound
            prev_in = prev[axis] >= bound if keep_above else prev[axis] <= bound
            if cur_in != prev_in:
                t = (bound - prev[axis]) / (cur[axis] - prev[axis])
                out.append((prev[0] + t * (cur[0] - prev[0]), prev[1] + t * (cur[1] - prev[1])))
            if cur_in:
                out.append(cur)
        pts = out
    return np.asarray(pts, dtype=np.float64).reshape(-1, 2)


def convex_hull_2d(points: np.ndarray) -> np.ndarray:
    """Convex hull [V, 2] of [P, 2] points, counter-clockwise in (u, v) maths orientation, no repeated vertex.

    Andrew's monotone chain (A. M. Andrew, Inf. Proc. Letters 9(5), 1979) in float64: the points are sorted by u,
    then v, and deduplicated with numpy (``_sorted_unique``); the two chains run on Python floats, whose
    arithmetic is the same IEEE double arithmetic as numpy's, so every turn test (``_cross``) is decided exactly
    as ``convex_hulls_2d`` decides it for the same set, at a fraction of the per-point cost of numpy scalars. The
    hull starts at the smallest (u, v). Collinear points are dropped; fewer than three distinct points give those
    points (a degenerate hull of area 0). Rows with a non-finite coordinate are ignored. For many small sets at
    once (projected boxes) use ``convex_hulls_2d``.
    """
    pts = np.asarray(points, dtype=np.float64).reshape(1, -1, 2)
    su, sv, count = _sorted_unique(pts, np.ones(pts.shape[:2], dtype=bool))
    m = int(count[0])
    ordered: list[list[float]] = np.stack([su[0, :m], sv[0, :m]], axis=1).tolist()
    if m < 3:
        return np.asarray(ordered, dtype=np.float64).reshape(-1, 2)
    lower = _monotone_chain(ordered)
    upper = _monotone_chain(ordered[::-1])
    return np.asarray(lower[:-1] + upper[:-1], dtype=np.float64)


def convex_hulls_2d(points: np.ndarray, valid: np.ndarray | None = None) -> list[np.ndarray]:
    """``convex_hull_2d`` of each of N point sets at once: points [N, P, 2], ``valid`` [N, P] bool (which points
    belong to each set; default all). Returns N arrays [V_i, 2], equal element for element to ``convex_hull_2d``
    of each set's valid points.

    The monotone chains run in lockstep over the N sets as numpy arrays: step t offers every set its t-th sorted
    point, and the sets whose last turn is not a strict left turn pop their chain's top until none does. The turn
    tests are the same float64 expressions (``_cross``) on the same operands as the sequential chain, so every
    decision and every vertex is the same; the cost is O(P) numpy steps whatever N is.
    """
    pts = np.asarray(points, dtype=np.float64).reshape(-1, np.shape(points)[-2], 2)
    ok = np.ones(pts.shape[:2], dtype=bool) if valid is None else np.asarray(valid, dtype=bool).reshape(pts.shape[:2])
    n = pts.shape[0]
    if n == 0:
        return []
    su, sv, count = _sorted_unique(pts, ok)
    lu, lv, nl = _lockstep_chain(su, sv, count)
    rev = np.clip(count[:, None] - 1 - np.arange(su.shape[1])[None, :], 0, None)  # each set's points reversed
    rows = np.arange(n)[:, None]
    uu, uv, nu = _lockstep_chain(su[rows, rev], sv[rows, rev], count)
    out: list[np.ndarray] = []
    for i in range(n):
        m = int(count[i])
        if m < 3:
            out.append(np.stack([su[i, :m], sv[i, :m]], axis=1))
            continue
        a, b = int(nl[i]) - 1, int(nu[i]) - 1
        out.append(np.stack([np.concatenate([lu[i, :a], uu[i, :b]]), np.concatenate([lv[i, :a], uv[i, :b]])], axis=1))
    return out


def _sorted_unique(pts: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each set's distinct finite valid points sorted by u, then v: (u [N, P], v [N, P], count [N]); the first
    count[i] entries of row i are set i's points (the rest is padding)."""
    valid = valid & np.isfinite(pts).all(axis=-1)
    u = np.where(valid, pts[..., 0], 0.0)
    v = np.where(valid, pts[..., 1], 0.0)
    order = np.lexsort((v, u, ~valid), axis=-1)  # valid points first, by u then v
    rows = np.arange(pts.shape[0])[:, None]
    u, v, valid = u[rows, order], v[rows, order], valid[rows, order]
    fresh = valid.copy()
    fresh[:, 1:] &= (u[:, 1:] != u[:, :-1]) | (v[:, 1:] != v[:, :-1])
    pack = np.argsort(~fresh, axis=1, kind="stable")
    return u[rows, pack], v[rows, pack], fresh.sum(axis=1)


def _lockstep_chain(su: np.ndarray, sv: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``_monotone_chain`` over N sets at once: points (su, sv) [N, P] in chain order, the first count[i] of row i.
    Returns the chains' (u [N, P], v [N, P], length [N])."""
    n, p = su.shape
    cu, cv = np.zeros((n, p)), np.zeros((n, p))
    length = np.zeros(n, dtype=np.int64)
    rows = np.arange(n)
    for t in range(int(count.max(initial=0))):
        offered = t < count
        b = (su[:, t], sv[:, t])
        while True:
            check = offered & (length >= 2)
            if not check.any():
                break
            i1, i2 = np.maximum(length - 1, 0), np.maximum(length - 2, 0)
            turn = _cross((cu[rows, i2], cv[rows, i2]), (cu[rows, i1], cv[rows, i1]), b)
            pop = check & (turn <= 0)
            if not pop.any():
                break
            length -= pop
        at = rows[offered]
        cu[at, length[at]] = b[0][at]
        cv[at, length[at]] = b[1][at]
        length += offered
    return cu, cv, length


def _monotone_chain(ordered: list[list[float]]) -> list[list[float]]:
    """One half of Andrew's hull: the points in order, keeping only strict left turns (cross product > 0)."""
    chain: list[list[float]] = []
    for b in ordered:
        while len(chain) >= 2 and _cross(chain[-2], chain[-1], b) <= 0:
            chain.pop()
        chain.append(b)
    return chain


def _cross(o: Sequence[Any], a: Sequence[Any], b: Sequence[Any]) -> Any:
    """z of (a - o) x (b - o) for points given as (u, v) pairs of floats or of [N] arrays: > 0 for a left turn
    o -> a -> b. One expression for the sequential and the lockstep chain, so both round alike."""
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])
