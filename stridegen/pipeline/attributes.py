"""Attribute extractor: per (track, frame) geometry of every object of a scene, vectorised.

Definitions (docs/attributes.md):

- Positions are box centres. ``distance_m`` is the bird's-eye-view (xy) distance from the reference ego origin;
  ``distance_3d_m`` includes z. Heading angle is ``polar_angle_deg`` (0 = ahead, counter-clockwise positive),
  clock direction 12 = ahead, 3 = right. Left/right is the sign of y, front/behind the sign of x in the reference
  ego frame.
- Two reference frames are provided: the keyframe's ego frame (``*_kf``: where everything is, seen from where the
  ego was at the keyframe) and each frame's own ego frame (``*_now``: seen from where the ego is at that moment).
- Velocities come from the change of the box centre over time (global frame) by finite differences: central
  ``(c[f+1] - c[f-1]) / (t[f+1] - t[f-1])`` where both neighbours exist, one-sided at the ends of a track or
  beside a gap, NaN for a track seen in one frame only. They are expressed in the reference ego frame by rotation
  only (no ego-motion subtraction): they are the object's ground velocity, not relative velocity. Ego velocity uses
  the same scheme on the ego poses' translations. Central differences are exact for constant acceleration; their
  error is at most ``h^2/6 * max|jerk|`` for smooth motion (h = half the central span), and at most
  ``h/2 * |delta a|`` within one step of an acceleration change (one-sided differences: ``h/2 * max|a|``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from stridegen.core.angles import clock_direction, polar_angle_deg, wrap_angle
from stridegen.core.boxes import Boxes
from stridegen.core.transforms import invert_transform, rotate_vectors, rotmat_yaw, transform_points


@dataclass
class SceneTracks:
    """Dense (track x frame) arrays of one scene; entries where a track is absent are NaN / False."""

    track_id: np.ndarray  # [T] str
    label: np.ndarray  # [T] str (the most frequent label of the track)
    times_s: np.ndarray  # [F]
    present: np.ndarray  # [T, F] bool
    center_global: np.ndarray  # [T, F, 3]
    size_lwh: np.ndarray  # [T, F, 3]
    yaw_global: np.ndarray  # [T, F]
    score: np.ndarray  # [T, F]
    T_global_from_ego: np.ndarray  # [F, 4, 4]

    @property
    def num_tracks(self) -> int:
        return self.track_id.shape[0]


def dense_tracks(
    boxes_per_frame: Sequence[Boxes], times_s: Sequence[float], T_global_from_ego: np.ndarray
) -> SceneTracks:
    """Gather per-frame tracked boxes (global frame, ``track_id`` set) into dense track x frame arrays."""
    n_frames = len(boxes_per_frame)
    poses = np.asarray(T_global_from_ego, dtype=np.float64).reshape(n_frames, 4, 4)
    for b in boxes_per_frame:
        if b.frame != "global":
            raise ValueError(f"attributes need boxes in the global frame, got {b.frame!r}")
    all_ids = [b.track_id for b in boxes_per_frame if len(b)]
    ids = np.unique(np.concatenate(all_ids)) if all_ids else np.zeros(0, dtype=object)
    ids = ids[ids != ""]
    n_tracks = ids.size
    present = np.zeros((n_tracks, n_frames), dtype=bool)
    center = np.full((n_tracks, n_frames, 3), np.nan)
    size = np.full((n_tracks, n_frames, 3), np.nan)
    yaw = np.full((n_tracks, n_frames), np.nan)
    score = np.full((n_tracks, n_frames), np.nan)
    labels = np.full((n_tracks, n_frames), "", dtype=object)
    for f, b in enumerate(boxes_per_frame):
        if not len(b):
            continue
        rows = np.searchsorted(ids, b.track_id)
        ok = (rows < n_tracks) & (ids[np.minimum(rows, n_tracks - 1)] == b.track_id) if n_tracks else rows < 0
        if np.unique(rows[ok]).size != ok.sum():
            raise ValueError(f"frame {f}: a track id appears twice")
        rows = rows[ok]
        present[rows, f] = True
        center[rows, f] = b.center[ok]
        size[rows, f] = b.size_lwh[ok]
        yaw[rows, f] = b.yaw[ok]
        score[rows, f] = b.score[ok]
        labels[rows, f] = b.label[ok]
    track_label = np.array([_most_frequent(labels[t][present[t]]) for t in range(n_tracks)], dtype=object)
    return SceneTracks(
        ids, track_label, np.asarray(times_s, dtype=np.float64), present, center, size, yaw, score, poses
    )


def _most_frequent(values: np.ndarray) -> str:
    if values.size == 0:
        return ""
    uniq, counts = np.unique(values.astype(str), return_counts=True)
    return str(uniq[np.argmax(counts)])


def finite_difference_velocity(position: np.ndarray, times_s: np.ndarray, present: np.ndarray) -> np.ndarray:
    """d(position)/dt along the frame axis of [..., F, D] arrays with gaps (see module docstring)."""
    position = np.asarray(position, dtype=np.float64)
    t = np.asarray(times_s, dtype=np.float64)
    prev_ok = np.zeros_like(present)
    next_ok = np.zeros_like(present)
    prev_ok[..., 1:] = present[..., 1:] & present[..., :-1]
    next_ok[..., :-1] = present[..., :-1] & present[..., 1:]
    p_prev = np.concatenate([position[..., :1, :], position[..., :-1, :]], axis=-2)
    p_next = np.concatenate([position[..., 1:, :], position[..., -1:, :]], axis=-2)
    t_prev = np.concatenate([t[:1], t[:-1]])
    t_next = np.concatenate([t[1:], t[-1:]])
    first = np.where(prev_ok[..., None], p_prev, position)
    last = np.where(next_ok[..., None], p_next, position)
    t_first = np.where(prev_ok, t_prev, t)
    t_last = np.where(next_ok, t_next, t)
    dt = t_last - t_first
    with np.errstate(divide="ignore", invalid="ignore"):
        v = (last - first) / dt[..., None]
    return np.where(((prev_ok | next_ok) & present)[..., None], v, np.nan)


@dataclass
class Attributes:
    """Per (track, frame) attributes in one reference ego frame. All arrays are [T, F] or [T, F, 3]."""

    position_ego: np.ndarray
    distance_m: np.ndarray
    distance_3d_m: np.ndarray
    heading_deg: np.ndarray
    clock: np.ndarray  # int, 0 where absent
    is_left: np.ndarray
    is_front: np.ndarray
    yaw_rel_ego: np.ndarray  # radians, box heading relative to the reference ego heading
    velocity_ego: np.ndarray  # object ground velocity rotated into the reference ego frame
    speed_mps: np.ndarray  # BEV speed
    size_lwh: np.ndarray


def attributes_in_frame(tracks: SceneTracks, T_ref_from_global: np.ndarray, velocity_global: np.ndarray) -> Attributes:
    """Attributes of every (track, frame) seen from one or several reference ego poses.

    ``T_ref_from_global`` is a single 4x4 (keyframe reference) or [F, 4, 4] (each frame's own ego).
    """
    T = np.asarray(T_ref_from_global, dtype=np.float64)
    if T.ndim == 2:
        pos = transform_points(T, tracks.center_global)
        vel = rotate_vectors(T, velocity_global)
        ref_yaw = rotmat_yaw(T[:3, :3])  # heading of global x in the ego frame = -ego yaw
    else:
        pos = np.einsum("fij,tfj->tfi", T[:, :3, :3], tracks.center_global) + T[None, :, :3, 3]
        vel = np.einsum("fij,tfj->tfi", T[:, :3, :3], velocity_global)
        ref_yaw = rotmat_yaw(T[:, :3, :3])[None, :]
    x, y = pos[..., 0], pos[..., 1]
    present = tracks.present
    clock = np.where(present, clock_direction(np.nan_to_num(x, nan=1.0), np.nan_to_num(y)), 0)
    return Attributes(
        position_ego=pos,
        distance_m=np.hypot(x, y),
        distance_3d_m=np.linalg.norm(pos, axis=-1),
        heading_deg=polar_angle_deg(x, y),
        clock=clock,
        is_left=present & (y > 0),
        is_front=present & (x > 0),
        yaw_rel_ego=wrap_angle(tracks.yaw_global + ref_yaw),
        velocity_ego=vel,
        speed_mps=np.hypot(vel[..., 0], vel[..., 1]),
        size_lwh=tracks.size_lwh,
    )


@dataclass
class SceneAttributes:
    tracks: SceneTracks
    velocity_global: np.ndarray  # [T, F, 3] objects
    ego_velocity_global: np.ndarray  # [F, 3]
    now: Attributes  # each frame seen from its own ego pose

    def in_keyframe(self, frame_index: int) -> Attributes:
        """Every (track, frame) seen from the ego pose of ``frame_index``."""
        T = invert_transform(self.tracks.T_global_from_ego[frame_index])
        return attributes_in_frame(self.tracks, T, self.velocity_global)

    def ego_velocity_in(self, frame_index: int) -> np.ndarray:
        """[F, 3] ego velocity of every frame expressed in the ego frame of ``frame_index``."""
        T = invert_transform(self.tracks.T_global_from_ego[frame_index])
        return rotate_vectors(T, self.ego_velocity_global)

    @property
    def ego_speed_mps(self) -> np.ndarray:
        return np.hypot(self.ego_velocity_global[:, 0], self.ego_velocity_global[:, 1])


def extract_attributes(tracks: SceneTracks) -> SceneAttributes:
    velocity = finite_difference_velocity(tracks.center_global, tracks.times_s, tracks.present)
    ego_pos = tracks.T_global_from_ego[:, :3, 3]
    ego_vel = finite_difference_velocity(ego_pos, tracks.times_s, np.ones(len(tracks.times_s), dtype=bool))
    T_now = invert_transform(tracks.T_global_from_ego)
    return SceneAttributes(tracks, velocity, ego_vel, attributes_in_frame(tracks, T_now, velocity))
