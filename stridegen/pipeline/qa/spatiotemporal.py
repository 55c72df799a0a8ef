"""Ego-centric spatiotemporal QA: STRIDE-QA-Bench groups of 13 questions about one target over time.

A *group* is one target (a region visible in the keyframe image of one camera), shown to the model as four
context frames at 2 Hz (t = -1.5, -1.0, -0.5, 0 s relative to the keyframe) and asked about horizons
t = 0, +1, +2, +3 s. The 13 questions carry the official ``qa_category`` names of STRIDE-QA-Bench as predicate
(``stridegen.core.vocabulary.QA_CATEGORIES``):

- t = 0: ``ego_distance_data`` (target distance, m), ``target_bearing_angle_data`` (target direction, integer
  degrees), ``target_speed_data`` and ``ego_speed_data`` (m/s);
- t = 1, 2, 3: ``ego_distance_data_4d_t{t}`` (distance in ``gt_value`` and direction in
  ``gt_extra["direction"]``: one question asks both, as one official record holds
  ``{"distance": .., "direction": ..}``), ``target_speed_data_4d_t{t}``, ``ego_speed_data_4d_t{t}``.

Definitions (docs/qa-spatiotemporal.md):

- Distance and direction at horizon t are measured in the ego frame *of time t* (``SceneAttributes.now``: the
  ego's own pose then; x forward, y left, z up): distance = BEV ``hypot(x, y)`` of the box centre, direction =
  ``atan2(y, x)`` in degrees, 0 = ahead, counter-clockwise positive, (-180, 180].
- Speeds are BEV ground speeds ``|v_xy|`` from finite differences of the box centres (target) and of the ego
  poses (ego): the target's own speed over the ground, not its speed relative to the ego.
- ``out_of_view`` at t: 1 when the target's box centre, seen from the camera at the ego pose of time t, is behind
  the camera (depth < 0.1 m) or projects outside the image; else 0. Every item of horizon t carries it.

Numbers in answers are canonical (``fmt_metres`` / ``fmt_degrees`` / ``fmt_mps``) and ``gt_value`` is the rounded
number the answer states. A group is made only when all its questions can be; other targets are counted by reason.
A future horizon the clip has no frame for (a keyframe near the clip's end) drops only that horizon's questions
(``keep_partial_groups``, default): every item of such a *partial group* carries ``gt_extra["missing_horizons"]``
(the missing horizons, seconds), and the evaluator leaves the group out of TLC and MLSR (docs/qa-spatiotemporal.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from stridegen.core.errors import ConfigError
from stridegen.core.transforms import invert_transform
from stridegen.core.vocabulary import QA_CATEGORIES
from stridegen.formats.lsr_record import LsrRecord
from stridegen.pipeline.attributes import SceneAttributes
from stridegen.pipeline.keyframes import nearest_within
from stridegen.pipeline.qa.base import (
    CATEGORY_SPATIOTEMPORAL,
    UNIT_DEGREE,
    UNIT_METRE,
    UNIT_MPS,
    QAContext,
    QAItem,
    fmt_clock,
    fmt_degrees,
    fmt_metres,
    fmt_mps,
    region_name,
    round_degrees,
    round_metres,
    round_mps,
)
from stridegen.pipeline.qa.templates_temporal import ANSWER_SET, PHRASEBOOK, seconds_word, side_phrase

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


_DEFAULT_CONFIG = TemporalQAConfig()


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


# ============================================================================================ generator


def _count(skips: dict[str, int], reason: str, n: int) -> None:
    if n:
        skips[reason] = skips.get(reason, 0) + int(n)


def _direction_slots(deg: float) -> tuple[str, str, str]:
    """(fmt_degrees, clock, side) of a rounded angle; the clock position is taken from the rounded angle so the
    answer is self-consistent (12 = ahead, 3 = right, nearest hour, half hours round up as in
    ``angles.clock_direction``)."""
    hour = math.floor(-deg / 30.0 + 0.5) % 12
    return fmt_degrees(deg), fmt_clock(12 if hour == 0 else hour), side_phrase(deg)


@lru_cache(maxsize=16)
def _templates(
    predicates: tuple[str, ...],
) -> tuple[tuple[tuple[str, ...], ...], tuple[tuple[str, ...], ...], np.ndarray]:
    """Question and answer templates per predicate, and the number of options of each (questions, then answers)."""
    questions = tuple(PHRASEBOOK.questions[p] for p in predicates)
    answers = tuple(PHRASEBOOK.answers[ANSWER_SET[p]] for p in predicates)
    n_options = np.array([len(q) for q in questions] + [len(a) for a in answers], dtype=np.float64)
    n_options.flags.writeable = False
    return questions, answers, n_options


@dataclass
class _Prepared:
    """One image's draw-independent part: the skip counts, and (when some target is kept) the kept targets'
    [S, H] rows of BEV distance (m), heading (deg), target speed (m/s) and out-of-view flags."""

    skips: dict[str, int]
    sel: np.ndarray | None = None  # [S] positions of the kept targets in the image's TemporalTargets
    distance: list[list[float]] = field(default_factory=list)
    heading: list[list[float]] = field(default_factory=list)
    speed: list[list[float]] = field(default_factory=list)
    oov: list[list[int]] = field(default_factory=list)


@dataclass
class _KeyframePlan:
    """What every image of one keyframe shares: context frames, the horizons asked (t = 0 first) and their frames,
    the missing horizons, the ego speeds at the horizons, and the group's templates."""

    context_frames: list[int]
    horizon_s: tuple[int, ...]
    missing: tuple[int, ...]
    ego_speed: list[float]
    predicates: tuple[str, ...]
    questions: tuple[tuple[str, ...], ...]
    answers: tuple[tuple[str, ...], ...]
    n_options: np.ndarray


def _prepare_keyframe(
    attrs: SceneAttributes,
    rel: np.ndarray,
    keyframe_frame: int,
    group: list[TemporalTargets],
    cfg: TemporalQAConfig,
) -> tuple[_KeyframePlan | None, list[_Prepared]]:
    """The frames, checks and out-of-view flags of the targets of every image of one keyframe (``rel``: frame
    times since the clip's first frame, s), the checks done once over all the keyframe's targets."""
    sizes = [len(t) for t in group]
    if not any(sizes):
        return None, [_Prepared({}) for _ in group]
    tracks = np.concatenate([t.track_index for t in group])
    if tracks.min() < 0 or tracks.max() >= attrs.tracks.num_tracks:
        bad = next(
            t for t in group if len(t) and (t.track_index.min() < 0 or t.track_index.max() >= attrs.tracks.num_tracks)
        )
        raise ValueError(
            f"{bad.scene}/k{bad.keyframe_index}/{bad.channel}: track_index outside 0..{attrs.tracks.num_tracks - 1}"
        )
    # Times since the clip's first frame, as the keyframe sampler computes them: the same sums pick the same frames.
    t0 = float(rel[int(keyframe_frame)])
    n_ctx = len(cfg.context_offsets_s)
    wanted = frames_at_times(
        rel, t0 + np.asarray(cfg.context_offsets_s + (0, *cfg.horizons_s), dtype=np.float64), cfg.time_tolerance_s
    )
    ctx_frames, h_wanted = wanted[:n_ctx], wanted[n_ctx:]
    missing = tuple(h for h, f in zip(cfg.horizons_s, h_wanted[1:].tolist(), strict=True) if f < 0)
    if (ctx_frames < 0).any() or h_wanted[0] < 0 or (missing and not cfg.keep_partial_groups):
        return None, [_Prepared({SKIP_FRAME_MISSING: n} if n else {}) for n in sizes]
    horizon_s = (0, *(h for h in cfg.horizons_s if h not in missing))
    h_frames = h_wanted[h_wanted >= 0]

    # Gather [M, H] (M targets of all images, H = 1 + number of horizons), each in the ego frame of its own time.
    rows, cols = tracks[:, None], h_frames[None, :]
    present = attrs.tracks.present[rows, cols]
    distance = attrs.now.distance_m[rows, cols]
    heading = attrs.now.heading_deg[rows, cols]
    speed = attrs.now.speed_mps[rows, cols]
    ego_speed = attrs.ego_speed_mps[h_frames]
    m = tracks.size
    keep = np.ones(m, dtype=bool)
    with np.errstate(invalid="ignore"):
        far = (distance >= cfg.min_distance_m).all(axis=1)
        fast = speed[:, 0] >= cfg.min_target_speed_mps
    checks = (  # in this order: a target is counted under the first check it fails
        (SKIP_TARGET_ABSENT, present.all(axis=1)),
        (SKIP_TARGET_VELOCITY, np.isfinite(speed).all(axis=1)),
        (SKIP_EGO_VELOCITY, np.full(m, bool(np.isfinite(ego_speed).all()))),
        (SKIP_TOO_CLOSE, far),
        (SKIP_TOO_SLOW, fast),
    )
    ends = np.cumsum(sizes)
    bounds = list(zip((ends - sizes).tolist(), ends.tolist(), strict=True))
    failed: list[tuple[str, list[int]]] = []
    for reason, ok in checks:
        dropped = np.concatenate([[0], np.cumsum(keep & ~ok)])  # per-image counts from running sums
        failed.append((reason, (dropped[ends] - dropped[ends - sizes]).tolist()))
        keep &= ok
    predicates = group_predicates(horizon_s[1:])
    questions, answers, n_options = _templates(predicates)
    plan = _KeyframePlan(
        [int(f) for f in ctx_frames.tolist()],
        horizon_s,
        missing,
        ego_speed.tolist(),
        predicates,
        questions,
        answers,
        n_options,
    )
    out = []
    for j, (targets, (lo, hi)) in enumerate(zip(group, bounds, strict=True)):
        skips: dict[str, int] = {}
        for reason, counts in failed:
            _count(skips, reason, counts[j])
        sel = np.flatnonzero(keep[lo:hi])
        if sel.size == 0:
            out.append(_Prepared(skips))
            continue
        oov = out_of_view_flags(
            attrs.now.position_ego[targets.track_index[sel][:, None], cols],
            targets.T_ego_from_cam,
            targets.intrinsic,
            targets.width,
            targets.height,
            targets.T_cam_from_ego,
        )
        if cfg.skip_out_of_view:
            visible = ~oov.any(axis=1)
            _count(skips, SKIP_OUT_OF_VIEW, int((~visible).sum()))
            sel, oov = sel[visible], oov[visible]
            if sel.size == 0:
                out.append(_Prepared(skips))
                continue
        at = lo + sel
        out.append(
            _Prepared(
                skips,
                sel,
                distance[at].tolist(),
                heading[at].tolist(),
                speed[at].tolist(),
                oov.astype(np.int64).tolist(),
            )
        )
    return plan, out


def spatiotemporal_scene_generator(
    attrs: SceneAttributes,
    frame_times_s: np.ndarray,
    images: list[tuple[int, TemporalTargets]],
    config: TemporalQAConfig | None = None,
) -> Callable[[int, np.random.Generator], tuple[list[QAItem], dict[str, int]]]:
    """``(i, rng) -> (items, skips)`` of ``images[i]`` = (keyframe frame index, targets), with the frames, checks
    and out-of-view flags of all images computed up front (once per keyframe for the images that share it); each
    call draws from ``rng`` exactly what ``generate_spatiotemporal_qa`` does for that image (that function is this
    one over a single image)."""
    cfg = config if config is not None else _DEFAULT_CONFIG
    frame_times = np.asarray(frame_times_s, dtype=np.float64).reshape(-1)
    n_frames = attrs.tracks.present.shape[1]
    if frame_times.shape[0] != n_frames:
        raise ValueError(f"frame_times_s has {frame_times.shape[0]} entries, the attributes {n_frames} frames")
    by_keyframe: dict[int, list[int]] = {}
    for i, (keyframe_frame, _) in enumerate(images):
        if not 0 <= int(keyframe_frame) < n_frames:
            raise ValueError(f"keyframe_frame {keyframe_frame} outside 0..{n_frames - 1}")
        by_keyframe.setdefault(int(keyframe_frame), []).append(i)
    rel = frame_times - frame_times[0] if n_frames else frame_times
    plans: list[_KeyframePlan | None] = [None] * len(images)
    prepared: list[_Prepared] = [_Prepared({})] * len(images)
    for keyframe_frame, members in by_keyframe.items():
        plan, made = _prepare_keyframe(attrs, rel, keyframe_frame, [images[i][1] for i in members], cfg)
        for i, p in zip(members, made, strict=True):
            plans[i], prepared[i] = plan, p

    def generate(i: int, rng: np.random.Generator) -> tuple[list[QAItem], dict[str, int]]:
        p, plan = prepared[i], plans[i]
        if p.sel is None or plan is None:
            return [], dict(p.skips)
        # One draw for every template choice of every group: floor(u * n_options), u uniform in [0, 1).
        choice = (rng.random((p.sel.size, plan.n_options.size)) * plan.n_options).astype(np.int64)
        writer = _GroupWriter(
            images[i][1],
            plan.context_frames,
            plan.horizon_s,
            plan.predicates,
            plan.questions,
            plan.answers,
            plan.ego_speed,
            plan.missing,
        )
        items: list[QAItem] = []
        for j, picks, dist_row, head_row, speed_row, oov_row in zip(
            p.sel.tolist(), choice.tolist(), p.distance, p.heading, p.speed, p.oov, strict=True
        ):
            items += writer.group(j, picks, dist_row, head_row, speed_row, oov_row)
        return items, dict(p.skips)

    return generate


def generate_spatiotemporal_qa(
    attrs: SceneAttributes,
    frame_times_s: np.ndarray,
    keyframe_frame: int,
    targets: TemporalTargets,
    rng: np.random.Generator,
    config: TemporalQAConfig | None = None,
) -> tuple[list[QAItem], dict[str, int]]:
    """The spatiotemporal QA groups of one (keyframe, camera), and the number of skipped targets by reason.

    ``frame_times_s`` [F] are the times (s) of the scene's frames, the frame axis of ``attrs``; ``keyframe_frame``
    is the keyframe's frame index. Template choices of all groups are drawn from ``rng`` in one call.
    """
    return spatiotemporal_scene_generator(attrs, frame_times_s, [(keyframe_frame, targets)], config)(0, rng)


class _GroupWriter:
    """Formats the items of a group (13 when complete) from plain Python floats (no numpy scalars in the per-item
    loop). ``missing``: the future horizons not asked (no frame), written into every item's ``gt_extra``."""

    def __init__(
        self,
        targets: TemporalTargets,
        context_frames: list[int],
        horizon_s: tuple[int, ...],
        predicates: tuple[str, ...],
        questions: tuple[tuple[str, ...], ...],
        answers: tuple[tuple[str, ...], ...],
        ego_speed: list[float],
        missing: tuple[int, ...] = (),
    ) -> None:
        self.frames = tuple(context_frames)
        self.mark: dict[str, object] = {MISSING_HORIZONS_KEY: list(missing)} if missing else {}
        self.predicates = predicates
        self.questions = questions
        self.answers = answers
        self.region_ids = targets.region_id.tolist()
        self.track_ids = targets.track_index.tolist()
        self.classes = [str(c) for c in targets.object_class.tolist()]
        self.prefix = f"{targets.scene}/k{int(targets.keyframe_index):03d}/{targets.channel}/r"
        self.ego_gt = [round_mps(v) for v in ego_speed]
        self.ego_text = [fmt_mps(v) for v in ego_speed]
        self.when = [(h, seconds_word(h)) for h in horizon_s]

    def group(
        self,
        i: int,
        picks: list[int],
        dist_row: list[float],
        head_row: list[float],
        speed_row: list[float],
        oov_row: list[int],
    ) -> list[QAItem]:
        """The items of target ``i``; ``picks`` = question then answer template indices, one per predicate."""
        region_id, track = self.region_ids[i], self.track_ids[i]
        region = region_name(region_id)
        # (gt_value, unit, gt_extra, slots, horizon, out_of_view) in predicate order (group_predicates)
        mark = self.mark
        specs: list[tuple[float, str, dict[str, object], dict[str, object], int, int]] = []
        for h_idx, (n_s, secs) in enumerate(self.when):
            d_gt = round_metres(dist_row[h_idx])
            deg_gt = round_degrees(head_row[h_idx])
            v_gt = round_mps(speed_row[h_idx])
            deg_text, clock, side = _direction_slots(deg_gt)
            target = {
                "region": region,
                "n": n_s,
                "secs": secs,
                "dist": fmt_metres(d_gt),
                "deg": deg_text,
                "clock": clock,
                "side": side,
                "speed": fmt_mps(v_gt),
            }
            ego = {"region": region, "n": n_s, "secs": secs, "speed": self.ego_text[h_idx]}
            flag = oov_row[h_idx]
            if h_idx == 0:
                specs += [
                    (d_gt, UNIT_METRE, {**mark}, target, n_s, flag),
                    (deg_gt, UNIT_DEGREE, {**mark}, target, n_s, flag),
                    (v_gt, UNIT_MPS, {**mark}, target, n_s, flag),
                    (self.ego_gt[0], UNIT_MPS, {**mark}, ego, n_s, flag),
                ]
            else:
                specs += [
                    (d_gt, UNIT_METRE, {"direction": deg_gt, **mark}, target, n_s, flag),
                    (v_gt, UNIT_MPS, {**mark}, target, n_s, flag),
                    (self.ego_gt[h_idx], UNIT_MPS, {**mark}, ego, n_s, flag),
                ]
        k = len(self.predicates)
        group_id = f"{self.prefix}{region_id}"
        region_ids, track_indices, cls = (region_id,), (track,), self.classes[i]
        return [
            QAItem(
                category=CATEGORY_SPATIOTEMPORAL,
                predicate=self.predicates[j],
                question=self.questions[j][picks[j]].format_map(slots),
                answer=self.answers[j][picks[k + j]].format_map(slots),
                region_ids=region_ids,
                track_indices=track_indices,
                gt_value=gt,
                unit=unit,
                gt_extra=extra,
                group_id=group_id,
                horizon_s=horizon,
                frame_indices=self.frames,
                out_of_view=flag,
                object_class=cls,
            )
            for j, (gt, unit, extra, slots, horizon, flag) in enumerate(specs)
        ]


# ============================================================================================ evaluator records


def question_id_of(item: QAItem) -> str:
    """A dataset-unique id of a spatiotemporal item: ``<group_id>/<predicate>`` (one predicate per group)."""
    return f"{item.group_id}/{item.predicate}"


def _dimensions(predicate: str) -> tuple[str, ...]:
    if predicate.startswith("ego_distance_data"):
        return ("target_distance", "target_direction")
    if predicate == "target_bearing_angle_data":
        return ("target_direction",)
    if predicate.startswith("target_speed_data"):
        return ("target_velocity",)
    if predicate.startswith("ego_speed_data"):
        return ("ego_velocity",)
    raise ValueError(f"no LSR dimension for predicate {predicate!r}")


def lsr_records(
    items: Iterable[QAItem],
    scenario_of: Callable[[str], str | None] | Mapping[str, str | None] | None = None,
    question_id: Callable[[QAItem], str] = question_id_of,
) -> list[LsrRecord]:
    """The evaluator's records (``stridegen.formats.lsr_record.LsrRecord``) of spatiotemporal items; other items are
    ignored. A distance-and-direction item gives two records with one question id (target distance from
    ``gt_value``, target direction from ``gt_extra["direction"]``); a t = 0 distance item without a direction
    gives one. ``scenario_of`` maps a group id to its scenario relation (callable or mapping; None: unknown). Items
    of a partial group (``gt_extra["missing_horizons"]``) give records with ``partial_group=True``."""
    if scenario_of is None:
        lookup: Callable[[str], str | None] = lambda _gid: None  # noqa: E731
    elif isinstance(scenario_of, Mapping):
        lookup = scenario_of.get
    else:
        lookup = scenario_of
    out: list[LsrRecord] = []
    for it in items:
        if it.category != CATEGORY_SPATIOTEMPORAL:
            continue
        category = QA_CATEGORIES.get(it.predicate)
        if category is None:
            raise ValueError(f"spatiotemporal item with unknown predicate {it.predicate!r}")
        if category[0] != it.horizon_s:
            raise ValueError(
                f"item {it.group_id}/{it.predicate}: horizon_s {it.horizon_s} but the category is at {category[0]} s"
            )
        qid = question_id(it)
        scenario = lookup(it.group_id)
        oov = None if it.out_of_view == -1 else bool(it.out_of_view)
        cls = it.object_class or None
        partial = MISSING_HORIZONS_KEY in it.gt_extra
        unit: str | None
        for dim in _dimensions(it.predicate):
            if dim == "target_direction" and it.predicate != "target_bearing_angle_data":
                if "direction" not in it.gt_extra:
                    continue
                value, unit = float(it.gt_extra["direction"]), UNIT_DEGREE
            else:
                value, unit = float(it.gt_value), it.unit or None
            out.append(
                LsrRecord(
                    question_id=qid,
                    group_id=it.group_id,
                    horizon_s=int(it.horizon_s),
                    dimension=dim,
                    gt_value=value,
                    unit=unit,
                    scenario=scenario,
                    object_class=cls,
                    out_of_view=oov,
                    partial_group=partial,
                )
            )
    return out


__all__ = [
    "MISSING_HORIZONS_KEY",
    "SKIP_REASONS",
    "TemporalQAConfig",
    "TemporalTargets",
    "frames_at_times",
    "generate_spatiotemporal_qa",
    "group_predicates",
    "lsr_records",
    "out_of_view_flags",
    "question_id_of",
    "spatiotemporal_scene_generator",
]
