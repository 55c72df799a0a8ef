"""Boxes: a structure of arrays of 3D boxes tagged with the frame their numbers are in."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np
from numpy.typing import ArrayLike

from stridegen.core.angles import wrap_angle
from stridegen.core.box_geometry import box_corners, box_corners_rotated
from stridegen.core.errors import GeometryError
from stridegen.core.transforms import quat_to_rotmat, rotate_vectors, rotmat_to_quat, transform_points, yaw_to_quat

FRAMES = ("global", "ego", "lidar", "cam")

# The full rotation of each box, where it has more than a yaw: the extra ``rotation_<frame>`` ([N, 4] unit
# quaternions [w, x, y, z], box axes -> that frame; ``rotation_global`` for the global frame). Log readers fill
# ``rotation_global`` from each annotation's logged rotation (logged cuboids follow the road: a car on a slope, or
# under an ego pose with pitch, is pitched in the global frame); ``Boxes.transform`` carries it into the target
# frame, and ``corners``, ``rotation_matrices`` and ``rotation_quat`` use the one of the boxes' own frame.
ROTATION_GLOBAL = "rotation_global"
# A rotation whose z axis is this close to the frame's z (|1 - R[2, 2]| below it) has no tilt worth keeping:
# ``transform`` then adds no rotation extra, so yaw-only boxes stay yaw-only through level transforms.
_LEVEL_TOL = 1e-12


def _yaw_matrices(yaw: np.ndarray) -> np.ndarray:
    """[N, 3, 3] rotations about +z by ``yaw`` [N]."""
    c, s = np.cos(yaw), np.sin(yaw)
    out = np.zeros((np.size(yaw), 3, 3))
    out[:, 0, 0], out[:, 0, 1], out[:, 1, 0], out[:, 1, 1], out[:, 2, 2] = c, -s, s, c, 1.0
    return out


def rotation_extra(frame: str) -> str:
    """The extra holding boxes' full rotations in ``frame`` (``rotation_global`` for the global frame)."""
    return f"rotation_{frame}"


def _as_str_array(values: Sequence[str] | np.ndarray | None, n: int, fill: str = "") -> np.ndarray:
    if values is None:
        return np.full(n, fill, dtype=object)
    arr = np.empty(len(values), dtype=object)
    arr[:] = [str(v) for v in values]
    return arr


@dataclass(init=False)
class Boxes:
    """N 3D boxes: yaw-only, or fully rotated where the ``rotation_<frame>`` extra holds their rotation.

    center      [N, 3] metres, in ``frame``
    size_lwh    [N, 3] length (along heading), width, height in metres (nuScenes tables store [w, l, h])
    yaw         [N] heading about +z in ``frame``, radians, (-pi, pi]
    velocity    [N, 3] m/s in ``frame`` (NaN where unknown)
    label       [N] class names (object array of str)
    score       [N] confidence (1.0 for ground truth)
    track_id    [N] instance / track identifiers (object array of str; "" where none)
    frame       "global", "ego", "lidar" or "cam"
    extras      optional per-box columns (each with N entries); ``rotation_<frame>`` (``rotation_extra``) holds
                the full rotation ([N, 4] quaternions) where the boxes have pitch or roll; ``yaw`` is then its
                heading (the box x axis projected on the frame's xy plane)

    Every array field is always set after construction: the constructor fills the documented defaults for the
    optional arguments (NaN velocity, "" labels and track ids, score 1.0).
    """

    center: np.ndarray
    size_lwh: np.ndarray
    yaw: np.ndarray
    velocity: np.ndarray
    label: np.ndarray
    score: np.ndarray
    track_id: np.ndarray
    frame: str
    extras: dict[str, np.ndarray]

    def __init__(
        self,
        center: ArrayLike,
        size_lwh: ArrayLike,
        yaw: ArrayLike,
        velocity: ArrayLike | None = None,
        label: Sequence[str] | np.ndarray | None = None,
        score: ArrayLike | None = None,
        track_id: Sequence[str] | np.ndarray | None = None,
        frame: str = "global",
        extras: dict[str, np.ndarray] | None = None,
    ) -> None:
        self.center = np.asarray(center, dtype=np.float64).reshape(-1, 3)
        n = self.center.shape[0]
        self.size_lwh = np.asarray(size_lwh, dtype=np.float64).reshape(n, 3)
        self.yaw = np.asarray(yaw, dtype=np.float64).reshape(n)
        if velocity is None:
            self.velocity = np.full((n, 3), np.nan)
        else:
            vel = np.asarray(velocity, dtype=np.float64)
            self.velocity = vel.reshape(n, vel.shape[-1] if vel.ndim > 1 else 3)
        if self.velocity.shape[1] == 2:  # nuScenes velocities are (vx, vy)
            self.velocity = np.concatenate([self.velocity, np.zeros((n, 1))], axis=1)
        if self.velocity.shape[1] != 3:
            raise GeometryError(f"velocity must be [N, 2] or [N, 3], got {self.velocity.shape}")
        self.label = label if isinstance(label, np.ndarray) else _as_str_array(label, n)
        self.score = np.ones(n) if score is None else np.asarray(score, dtype=np.float64).reshape(n)
        self.track_id = track_id if isinstance(track_id, np.ndarray) else _as_str_array(track_id, n)
        self.frame = frame
        self.extras = {} if extras is None else extras
        if self.frame not in FRAMES:
            raise GeometryError(f"unknown frame {self.frame!r}; expected one of {FRAMES}")
        for name in ("label", "track_id"):
            if getattr(self, name).shape != (n,):
                raise GeometryError(f"{name} must have {n} entries, got {getattr(self, name).shape}")
        for key, value in self.extras.items():
            if len(value) != n:
                raise GeometryError(f"extra {key!r} must have {n} entries, got {len(value)}")

    # ------------------------------------------------------------------ construction
    @classmethod
    def empty(cls, frame: str = "global") -> Boxes:
        return cls(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), frame=frame)

    @classmethod
    def concat(cls, parts: Sequence[Boxes]) -> Boxes:
        if not parts:
            raise ValueError("Boxes.concat needs at least one part (use Boxes.empty)")
        frames = {p.frame for p in parts}
        if len(frames) != 1:
            raise GeometryError(f"cannot concatenate boxes in different frames {sorted(frames)}")
        keys = set(parts[0].extras)
        extras = {k: np.concatenate([p.extras[k] for p in parts]) for k in keys if all(k in p.extras for p in parts)}
        rotation = rotation_extra(parts[0].frame)
        if rotation not in extras and any(rotation in p.extras for p in parts):  # yaw-only parts: their yaw's
            extras[rotation] = np.concatenate([p.rotation_quat().reshape(-1, 4) for p in parts])
        return cls(
            np.concatenate([p.center for p in parts]),
            np.concatenate([p.size_lwh for p in parts]),
            np.concatenate([p.yaw for p in parts]),
            np.concatenate([p.velocity for p in parts]),
            np.concatenate([p.label for p in parts]),
            np.concatenate([p.score for p in parts]),
            np.concatenate([p.track_id for p in parts]),
            parts[0].frame,
            extras,
        )

    def __len__(self) -> int:
        return self.center.shape[0]

    def __getitem__(self, index: int | slice | np.ndarray | Sequence[int]) -> Boxes:
        if isinstance(index, (int, np.integer)):
            index = [int(index)]
        return Boxes(
            self.center[index],
            self.size_lwh[index],
            self.yaw[index],
            self.velocity[index],
            self.label[index],
            self.score[index],
            self.track_id[index],
            self.frame,
            {k: v[index] for k, v in self.extras.items()},
        )

    def replace(self, **changes: object) -> Boxes:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return Boxes(**values)

    # ------------------------------------------------------------------ geometry
    @property
    def full_rotation(self) -> np.ndarray | None:
        """[N, 4] quaternions of the boxes' full rotations in ``frame``, where the ``rotation_<frame>`` extra holds
        them and some box is tilted (pitch or roll); None for yaw-only boxes (no extra, or every kept rotation a
        rotation about z: their corners then come from the yaw, as they always did)."""
        q = self.extras.get(rotation_extra(self.frame))
        if q is None:
            return None
        q = np.asarray(q, dtype=np.float64).reshape(-1, 4)
        # 1 - R[2, 2] = 2 (x^2 + y^2): the tilt of the box's z axis
        return q if np.any(2.0 * (q[:, 1] ** 2 + q[:, 2] ** 2) > _LEVEL_TOL) else None

    def rotation_matrices(self) -> np.ndarray:
        """[N, 3, 3] box axes -> ``frame``: the full rotation where kept (``full_rotation``), else the yaw's."""
        q = self.full_rotation
        if q is not None:
            return quat_to_rotmat(q).reshape(-1, 3, 3)
        return _yaw_matrices(self.yaw)

    def corners(self) -> np.ndarray:
        """[N, 8, 3] corners in ``frame`` (nuScenes devkit corner order), with the full rotation where kept."""
        q = self.full_rotation
        if q is not None:
            return box_corners_rotated(self.center, self.size_lwh, quat_to_rotmat(q).reshape(-1, 3, 3))
        return box_corners(self.center, self.size_lwh, self.yaw)

    def transform(self, t_to_from: np.ndarray, to_frame: str) -> Boxes:
        """Express the boxes in another frame: ``t_to_from`` maps points of ``self.frame`` into ``to_frame``.

        The centre is transformed as a point, the velocity as a free vector, and the yaw is the heading of the
        rotated box x axis projected onto the new xy plane (exact for rotations about z). The rotation goes along:
        where the boxes kept one (the ``rotation_<frame>`` extra) or the transform tilts them (it is not a
        rotation about z, e.g. an ego pose with pitch), the ``rotation_<to_frame>`` extra gets ``R_t @ R`` (``R``
        the kept rotation, else the yaw's) and, for tilted boxes, the yaw is that rotation's heading. Yaw-only
        boxes through level transforms stay yaw-only. Other extras are kept as they are.
        """
        t = np.asarray(t_to_from, dtype=np.float64)
        center = transform_points(t, self.center)
        heading = np.stack([np.cos(self.yaw), np.sin(self.yaw), np.zeros_like(self.yaw)], axis=1)
        heading_to = rotate_vectors(t, heading)
        yaw = wrap_angle(np.arctan2(heading_to[:, 1], heading_to[:, 0]))
        velocity = rotate_vectors(t, self.velocity)
        extras = dict(self.extras)
        key = rotation_extra(to_frame)
        kept = self.extras.get(rotation_extra(self.frame))
        tilted = self.full_rotation is not None or abs(1.0 - t[2, 2]) > _LEVEL_TOL
        if kept is not None or tilted:
            source = _yaw_matrices(self.yaw) if kept is None else quat_to_rotmat(np.asarray(kept)).reshape(-1, 3, 3)
            rotation = np.einsum("ij,njk->nik", t[:3, :3], source)
            extras[key] = rotmat_to_quat(rotation).reshape(-1, 4)
            if tilted:  # the heading of the tilted box x axis
                yaw = wrap_angle(np.arctan2(rotation[:, 1, 0], rotation[:, 0, 0]))
        elif key in extras:
            del extras[key]  # a rotation of the target frame from elsewhere would contradict the new yaw
        return self.replace(center=center, yaw=yaw, velocity=velocity, frame=to_frame, extras=extras)

    def rotation_quat(self) -> np.ndarray:
        """[N, 4] quaternions [w, x, y, z] of the boxes' rotations: the kept ones (the ``rotation_<frame>``
        extra), else the yaws'."""
        q = self.extras.get(rotation_extra(self.frame))
        return yaw_to_quat(self.yaw).reshape(-1, 4) if q is None else np.asarray(q, dtype=np.float64).reshape(-1, 4)

    def distance_xy(self) -> np.ndarray:
        """Bird's-eye-view distance of each centre from the frame origin."""
        return np.hypot(self.center[:, 0], self.center[:, 1])
