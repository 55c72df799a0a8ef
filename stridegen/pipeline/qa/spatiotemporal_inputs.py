"""What the spatiotemporal QA generator (``stridegen.pipeline.qa.spatiotemporal``) is given and reports: its options
(``TemporalQAConfig``, ``qa.temporal_options``), the candidate targets of one (keyframe, camera)
(``TemporalTargets``), the frame nearest a wanted time, whether a point is out of the camera's view, the skip
reasons it counts and the ``gt_extra`` key of a partial group (definitions: docs/qa-spatiotemporal.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from stridegen.core.errors import ConfigError
from stridegen.core.transforms import invert_transform
from stridegen.core.vocabulary import QA_CATEGORIES
from stridegen.pipeline.keyframes import nearest_within
from stridegen.pipeline.qa.base import QAContext

NEAR_PLANE_M = 0.1  # a point closer to the camera plane than this is "behind" (projection.project_points' default)

# Skip reasons (keys of the second return value of generate_spatiotemporal_qa).
# no frame within the tolerance of a context time (or of a horizon, with keep_partial_groups off)
SKIP_FRAME_MISSING = "frame_missing"
SKIP_TARGET_ABSENT = "target_absent"  # the target's track is not present at one of the horizons asked
SKIP_TARGET_VELOCITY = "target_velocity_unknown"  # the target's velocity is NaN at a horizon (one-frame track)
SKIP_EGO_VELOCITY = "ego_velocity_unknown"
SKIP_TOO_CLOSE = "target_too_close"  # BEV distance below min_distance_m at a horizon: the bearing is meaningless
SKIP_TOO_SLOW = "target_too_slow"  # target speed at t = 0 below min_target_speed_mps
SKIP_OUT_OF_VIEW = "target_out_of_view"  # only with skip_out_of_view: out of view at some horizon
# gt_extra key of every item of a partial group: the future horizons (whole seconds) the clip has no frame for.
MISSING_HORIZONS_KEY = "missing_horizons"
SKIP_REASONS: tuple[str, ...] = (
    SKIP_FRAME_MISSING,
    SKIP_TARGET_ABSENT,
    SKIP_TARGET_VELOCITY,
    SKIP_EGO_VELOCITY,
    SKIP_TOO_CLOSE,
    SKIP_TOO_SLOW,
    SKIP_OUT_OF_VIEW,
)


@dataclass
class TemporalQAConfig:
    """Options of the spatiotemporal generator (``qa.temporal_options`` in the build config).

    ``context_offsets_s``: times of the context frames relative to the keyframe (the images the model sees);
    ``horizons_s``: future horizons in whole seconds (t = 0 is always asked); ``time_tolerance_s``: a needed
    time takes the nearest frame within this tolerance (ties: the earlier frame); ``min_distance_m``: targets
    nearer than this (BEV) at any horizon are skipped (their bearing is ill-defined); ``min_target_speed_mps``:
    targets slower than this at t = 0 are skipped (0 keeps parked objects); ``skip_out_of_view``: skip targets
    that leave the camera's view at some horizon (default: keep them, flagged by ``out_of_view``);
    ``keep_partial_groups``: a horizon without a frame (the clip ends first) drops only its questions, the others
    are asked and marked with ``gt_extra["missing_horizons"]`` (False: the whole group is skipped as
    ``frame_missing``). A missing *context* frame always skips the group.
    """

    context_offsets_s: tuple[float, ...] = (-1.5, -1.0, -0.5, 0.0)
    horizons_s: tuple[int, ...] = (1, 2, 3)
    time_tolerance_s: float = 0.1
    min_distance_m: float = 0.5
    min_target_speed_mps: float = 0.0
    skip_out_of_view: bool = False
    keep_partial_groups: bool = True

    def __post_init__(self) -> None:
        self.context_offsets_s = tuple(float(x) for x in self.context_offsets_s)
        horizons = tuple(self.horizons_s)
        if not horizons or any(isinstance(h, bool) or float(h) != int(h) or int(h) < 1 for h in horizons):
            raise ConfigError(f"temporal QA: horizons_s must be whole seconds >= 1, got {horizons!r}")
        self.horizons_s = tuple(int(h) for h in horizons)
        if len(set(self.horizons_s)) != len(self.horizons_s):
            raise ConfigError(f"temporal QA: repeated horizon in {self.horizons_s!r}")
        missing = [h for h in self.horizons_s if f"ego_distance_data_4d_t{h}" not in QA_CATEGORIES]
        if missing:
            raise ConfigError(f"temporal QA: horizons {missing} have no STRIDE-QA-Bench category (1, 2, 3 s)")
        if not self.context_offsets_s:
            raise ConfigError("temporal QA: context_offsets_s is empty")
        if not all(math.isfinite(x) for x in self.context_offsets_s):
            raise ConfigError(f"temporal QA: context_offsets_s must be finite, got {self.context_offsets_s!r}")
        for name in ("time_tolerance_s", "min_distance_m", "min_target_speed_mps"):
            value = float(getattr(self, name))
            if not math.isfinite(value) or value < 0.0:
                raise ConfigError(f"temporal QA: {name} must be a finite number >= 0, got {value!r}")
            setattr(self, name, value)
        if self.time_tolerance_s <= 0.0:
            raise ConfigError("temporal QA: time_tolerance_s must be > 0")
        for name in ("skip_out_of_view", "keep_partial_groups"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"temporal QA: {name} must be true or false, got {getattr(self, name)!r}")

    @property
    def predicates(self) -> tuple[str, ...]:
        """The predicates of one (complete) group, in emission order."""
        return group_predicates(self.horizons_s)


def group_predicates(horizons_s: tuple[int, ...]) -> tuple[str, ...]:
    """The predicates of a group asked at t = 0 and at these future horizons, in emission order."""
    out = ["ego_distance_data", "target_bearing_angle_data", "target_speed_data", "ego_speed_data"]
    for h in horizons_s:
        out += [f"ego_distance_data_4d_t{h}", f"target_speed_data_4d_t{h}", f"ego_speed_data_4d_t{h}"]
    return tuple(out)


@dataclass
class TemporalTargets:
    """The candidate targets of one (keyframe, camera): regions visible in that image, and the camera.

    Arrays are indexed by region (N). ``track_index`` are rows of the scene's tracks table; ``T_ego_from_cam`` is
    the camera's extrinsic (camera frame x right, y down, z forward), ``intrinsic`` its 3x3 pinhole matrix of a
    ``width`` x ``height`` image (pixels).
    """

    scene: str
    keyframe_index: int
    channel: str
    region_id: np.ndarray  # [N] int
    track_index: np.ndarray  # [N] int
    object_class: np.ndarray  # [N] str
    T_ego_from_cam: np.ndarray  # [4, 4]
    intrinsic: np.ndarray  # [3, 3]
    width: int
    height: int
    T_cam_from_ego: np.ndarray = field(init=False, repr=False, compare=False)  # inverse of T_ego_from_cam

    def __post_init__(self) -> None:
        self.region_id = np.asarray(self.region_id, dtype=np.int64).reshape(-1)
        self.track_index = np.asarray(self.track_index, dtype=np.int64).reshape(-1)
        self.object_class = np.asarray(self.object_class, dtype=object).reshape(-1)
        self.T_ego_from_cam = np.asarray(self.T_ego_from_cam, dtype=np.float64)
        self.intrinsic = np.asarray(self.intrinsic, dtype=np.float64)
        n = self.region_id.shape[0]
        if self.track_index.shape[0] != n or self.object_class.shape[0] != n:
            raise ValueError(
                f"TemporalTargets: region_id, track_index and object_class lengths differ "
                f"({n}, {self.track_index.shape[0]}, {self.object_class.shape[0]})"
            )
        if np.unique(self.region_id).shape[0] != n:
            raise ValueError(f"TemporalTargets {self.scene}/k{self.keyframe_index}/{self.channel}: repeated region id")
        if self.T_ego_from_cam.shape != (4, 4) or self.intrinsic.shape != (3, 3):
            raise ValueError("TemporalTargets: T_ego_from_cam must be 4x4 and intrinsic 3x3")
        if int(self.width) <= 0 or int(self.height) <= 0:
            raise ValueError(f"TemporalTargets: bad image size {self.width}x{self.height}")
        self.T_cam_from_ego = invert_transform(self.T_ego_from_cam)

    def __len__(self) -> int:
        return int(self.region_id.shape[0])

    @classmethod
    def from_context(
        cls, ctx: QAContext, T_ego_from_cam: np.ndarray, intrinsic: np.ndarray, width: int, height: int
    ) -> TemporalTargets:
        """The targets of a spatial ``QAContext`` (same regions), with the camera's calibration."""
        return cls(
            scene=ctx.scene,
            keyframe_index=ctx.keyframe_index,
            channel=ctx.channel,
            region_id=ctx.region_id,
            track_index=ctx.track_index,
            object_class=ctx.object_class,
            T_ego_from_cam=T_ego_from_cam,
            intrinsic=intrinsic,
            width=width,
            height=height,
        )


# ============================================================================================ frames


def frames_at_times(frame_times_s: np.ndarray, times_s: np.ndarray, tolerance_s: float) -> np.ndarray:
    """Index of the nearest frame to each wanted time, -1 where none is within the tolerance (ties: earlier).

    The keyframe sampler's rule (``stridegen.pipeline.keyframes.nearest_within``, ties within 1e-9 s), so that a
    context frame is the frame of the keyframe window at the same offset, also at high frame rates where an
    offset falls half-way between two frames. ``frame_times_s`` must increase.
    """
    ft = np.asarray(frame_times_s, dtype=np.float64).reshape(-1)
    want = np.asarray(times_s, dtype=np.float64).reshape(-1)
    if ft.size > 1 and np.any(np.diff(ft) <= 0):
        raise ValueError("frame times must increase strictly")
    return nearest_within(ft, want, tolerance_s)


def out_of_view_flags(
    position_ego: np.ndarray,
    T_ego_from_cam: np.ndarray,
    intrinsic: np.ndarray,
    width: int,
    height: int,
    T_cam_from_ego: np.ndarray | None = None,
) -> np.ndarray:
    """[...] bool: points (ego frame of their own time, [..., 3]) behind the camera (depth < 0.1 m) or projecting
    outside the ``width`` x ``height`` image (pixel coordinates u in [0, width), v in [0, height)); pinhole
    projection as ``projection.project_points``. ``T_cam_from_ego`` may be given to skip the inversion."""
    p = np.asarray(position_ego, dtype=np.float64)
    if T_cam_from_ego is None:
        T_cam_from_ego = invert_transform(np.asarray(T_ego_from_cam, dtype=np.float64))
    p_cam = p.reshape(-1, 3) @ T_cam_from_ego[:3, :3].T + T_cam_from_ego[:3, 3]
    in_front = p_cam[:, 2] >= NEAR_PLANE_M  # NaN (unknown position) compares False: out of view
    uvw = p_cam @ np.asarray(intrinsic, dtype=np.float64).T
    w = np.where(in_front, uvw[:, 2], 1.0)  # the image of points behind the plane is not needed
    u, v = uvw[:, 0] / w, uvw[:, 1] / w
    inside = in_front & (u >= 0.0) & (u < width) & (v >= 0.0) & (v < height)
    return (~inside).reshape(p.shape[:-1])


__all__ = [
    "MISSING_HORIZONS_KEY",
    "SKIP_REASONS",
    "TemporalQAConfig",
    "TemporalTargets",
    "frames_at_times",
    "group_predicates",
    "out_of_view_flags",
]
