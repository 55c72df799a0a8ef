"""Boxes: a structure of arrays of 3D boxes tagged with the frame their numbers are in."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np
from numpy.typing import ArrayLike

from stridegen.core.angles import wrap_angle
from stridegen.core.box_geometry import box_corners
from stridegen.core.errors import GeometryError
from stridegen.core.transforms import rotate_vectors, transform_points, yaw_to_quat

FRAMES = ("global", "ego", "lidar", "cam")


def _as_str_array(values: Sequence[str] | np.ndarray | None, n: int, fill: str = "") -> np.ndarray:
    if values is None:
        return np.full(n, fill, dtype=object)
    arr = np.empty(len(values), dtype=object)
    arr[:] = [str(v) for v in values]
    return arr


@dataclass(init=False)
class Boxes:
    """N yaw-only 3D boxes.

    center      [N, 3] metres, in ``frame``
    size_lwh    [N, 3] length (along heading), width, height in metres (nuScenes tables store [w, l, h])
    yaw         [N] heading about +z in ``frame``, radians, (-pi, pi]
    velocity    [N, 3] m/s in ``frame`` (NaN where unknown)
    label       [N] class names (object array of str)
    score       [N] confidence (1.0 for ground truth)
    track_id    [N] instance / track identifiers (object array of str; "" where none)
    frame       "global", "ego", "lidar" or "cam"
    extras      optional per-box columns (each with N entries)

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
    def corners(self) -> np.ndarray:
        """[N, 8, 3] corners in ``frame`` (nuScenes devkit corner order)."""
        return box_corners(self.center, self.size_lwh, self.yaw)

    def transform(self, t_to_from: np.ndarray, to_frame: str) -> Boxes:
        """Express the boxes in another frame: ``t_to_from`` maps points of ``self.frame`` into ``to_frame``.

        The centre is transformed as a point, the velocity as a free vector, and the yaw is the heading of the
        rotated box x axis projected onto the new xy plane (exact for rotations about z).
        """
        t = np.asarray(t_to_from, dtype=np.float64)
        center = transform_points(t, self.center)
        heading = np.stack([np.cos(self.yaw), np.sin(self.yaw), np.zeros_like(self.yaw)], axis=1)
        heading_to = rotate_vectors(t, heading)
        yaw = wrap_angle(np.arctan2(heading_to[:, 1], heading_to[:, 0]))
        velocity = rotate_vectors(t, self.velocity)
        return self.replace(center=center, yaw=yaw, velocity=velocity, frame=to_frame)

    def rotation_quat(self) -> np.ndarray:
        """[N, 4] quaternions [w, x, y, z] of the yaw rotations."""
        return yaw_to_quat(self.yaw)

    def distance_xy(self) -> np.ndarray:
        """Bird's-eye-view distance of each centre from the frame origin."""
        return np.hypot(self.center[:, 0], self.center[:, 1])
