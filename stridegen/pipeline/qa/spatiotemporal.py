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
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from stridegen.pipeline.attributes import SceneAttributes
from stridegen.pipeline.qa.base import (
    CATEGORY_SPATIOTEMPORAL,
    UNIT_DEGREE,
    UNIT_METRE,
    UNIT_MPS,
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
from stridegen.pipeline.qa.spatiotemporal_inputs import (
    MISSING_HORIZONS_KEY,
    SKIP_EGO_VELOCITY,
    SKIP_FRAME_MISSING,
    SKIP_OUT_OF_VIEW,
    SKIP_TARGET_ABSENT,
    SKIP_TARGET_VELOCITY,
    SKIP_TOO_CLOSE,
    SKIP_TOO_SLOW,
    TemporalQAConfig,
    TemporalTargets,
    frames_at_times,
    group_predicates,
    out_of_view_flags,
)
from stridegen.pipeline.qa.templates_temporal import ANSWER_SET, PHRASEBOOK, seconds_word, side_phrase

_DEFAULT_CONFIG = TemporalQAConfig()

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


__all__ = ["generate_spatiotemporal_qa", "spatiotemporal_scene_generator"]
