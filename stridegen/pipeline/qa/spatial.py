"""Spatial QA generator: object-centric pair questions and ego-centric questions about the regions of one image.

Input is a ``QAContext`` (visible regions of one keyframe camera image): box centres in the keyframe ego frame
(x forward, y left, z up; metres) and in the camera frame (x right, y down, z forward; metres), box sizes
(length, width, height; metres). Definitions (docs/qa-spatial.md has the full table):

- object-centric, ordered pair (A, B), yes/no: ``left_of`` / ``right_of`` compare camera x (the viewer's left is
  smaller x), ``in_front_of`` / ``behind`` camera z (nearer / farther from the camera), ``bigger`` / ``smaller``
  box volume l*w*h, ``taller`` / ``shorter`` height h, ``wider`` / ``thinner`` width w;
- object-centric numbers (m): ``direct_distance`` (3-D centre distance), ``horizontal_distance`` (distance in the
  ego xy plane), ``vertical_distance`` (``|z_A - z_B|`` of the centres in the ego frame), ``width`` and ``height``
  of one region;
- ego-centric: ``ego_distance`` (BEV distance ``hypot(x, y)`` from the ego origin, m), ``ego_heading_angle``
  (``polar_angle_deg``, integer degrees), ``ego_clock_direction`` (hour 1..12), ``ego_left_right`` (sign of y,
  "left"/"right"), sizes ``region_length`` / ``region_width`` / ``region_height`` (m) and yes/no comparisons with
  the ego vehicle's size (``bigger_than_ego`` / ``smaller_than_ego`` volume, ``taller_than_ego`` /
  ``shorter_than_ego`` height, ``wider_than_ego`` / ``thinner_than_ego`` width).

Ambiguous comparisons (near-equal positions or sizes, thresholds in ``SpatialQAConfig``) produce no item. Yes/no
balance: the pair order and the predicate polarity are drawn uniformly and independently, and polarity flips the
truth, so every qualitative item is "yes" with probability exactly 1/2 whatever the geometry.

Speed: geometry is vectorised over all pairs and regions, random choices come from at most four generator calls
per image, and strings are built with ``str.format`` on precomputed Python values (benchmarks/bench_qa.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from stridegen.core.angles import clock_direction, polar_angle_deg
from stridegen.core.errors import GeometryError
from stridegen.pipeline.qa.base import (
    CATEGORY_EGO_SPATIAL,
    CATEGORY_OBJECT_SPATIAL,
    UNIT_CLOCK,
    UNIT_DEGREE,
    UNIT_METRE,
    QAContext,
    QAItem,
    region_name,
)
from stridegen.pipeline.qa.spatial_predicates import (
    EGO_NUMBER_PREDICATES,
    EGO_SIZE_PREDICATES,
    EGO_YES_NO_FAMILIES,
    OBJECT_SINGLE_PREDICATES,
    OBJECT_SPATIAL_PREDICATES,
    PAIR_NUMBER_PREDICATES,
    PAIR_YES_NO_FAMILIES,
    SPATIAL_PREDICATES,
    SpatialQAConfig,
)
from stridegen.pipeline.qa.templates_spatial import SPATIAL_PHRASEBOOK

# ---------------------------------------------------------------------------------------------- predicate table

# Value kinds (how gt_value is rounded and written).
_NONE, _METRE, _DEGREE, _CLOCK = 0, 1, 2, 3
# Labels (gt_label) by code.
_LABELS = ("", "yes", "no", "left", "right")
_YES, _NO, _LEFT, _RIGHT = 1, 2, 3, 4
_PRED_INDEX = {name: i for i, name in enumerate(SPATIAL_PREDICATES)}


def _value_kind(name: str) -> int:
    if name == "ego_heading_angle":
        return _DEGREE
    if name == "ego_clock_direction":
        return _CLOCK
    if (
        name in PAIR_NUMBER_PREDICATES
        or name in OBJECT_SINGLE_PREDICATES
        or name in EGO_SIZE_PREDICATES
        or name == "ego_distance"
    ):
        return _METRE
    return _NONE


def _positional(template: str) -> str:
    """``{a}``, ``{b}``, ``{value}`` -> ``{0}``, ``{1}``, ``{2}`` (positional str.format is the faster call)."""
    return template.replace("{a}", "{0}").replace("{b}", "{1}").replace("{value}", "{2}")


_UNIT_OF_KIND = {_NONE: "", _METRE: UNIT_METRE, _DEGREE: UNIT_DEGREE, _CLOCK: UNIT_CLOCK}
_PRED_CATEGORY = tuple(
    CATEGORY_OBJECT_SPATIAL if p in OBJECT_SPATIAL_PREDICATES else CATEGORY_EGO_SPATIAL for p in SPATIAL_PREDICATES
)
_PRED_KIND = tuple(_value_kind(p) for p in SPATIAL_PREDICATES)
_PRED_UNIT = tuple(_UNIT_OF_KIND[k] for k in _PRED_KIND)
_PRED_QUESTIONS = tuple(tuple(_positional(t) for t in SPATIAL_PHRASEBOOK.questions[p]) for p in SPATIAL_PREDICATES)
_N_QUESTIONS = np.array([len(q) for q in _PRED_QUESTIONS], dtype=np.float64)


def _answer_set_name(pred: str, label: int) -> str:
    return pred if label == 0 else f"{pred}:{_LABELS[label]}"


# Answer sets indexed by pred * len(_LABELS) + label; () where that combination never occurs.
_ANSWER_SETS: tuple[tuple[str, ...], ...] = tuple(
    tuple(_positional(t) for t in SPATIAL_PHRASEBOOK.answers.get(_answer_set_name(p, lab), ()))
    for p in SPATIAL_PREDICATES
    for lab in range(len(_LABELS))
)
_N_ANSWERS = np.array([max(len(a), 1) for a in _ANSWER_SETS], dtype=np.float64)


def _check_phrasebook() -> None:
    """Every predicate has its question templates and every (predicate, label) it can emit an answer set."""
    for p in SPATIAL_PREDICATES:
        labels: tuple[int, ...]
        if p == "ego_left_right":
            labels = (_LEFT, _RIGHT)
        elif _PRED_KIND[_PRED_INDEX[p]] == _NONE:
            labels = (_YES, _NO)
        else:
            labels = (0,)
        for lab in labels:
            if not _ANSWER_SETS[_PRED_INDEX[p] * len(_LABELS) + lab]:
                raise KeyError(f"templates_spatial lacks answer set {_answer_set_name(p, lab)!r}")


_check_phrasebook()

# Rows of the vectorised arrays: (positive, negative) predicate per row; single predicates repeat themselves.
_PAIR_ROWS: tuple[tuple[str, str], ...] = PAIR_YES_NO_FAMILIES + tuple((p, p) for p in PAIR_NUMBER_PREDICATES)
_REGION_SINGLE = (*OBJECT_SINGLE_PREDICATES, *EGO_NUMBER_PREDICATES, "ego_left_right", *EGO_SIZE_PREDICATES)
_REGION_ROWS: tuple[tuple[str, str], ...] = tuple((p, p) for p in _REGION_SINGLE) + EGO_YES_NO_FAMILIES
_N_PAIR_YES_NO = len(PAIR_YES_NO_FAMILIES)
_N_REGION_SINGLE = len(_REGION_SINGLE)


@dataclass(frozen=True)
class _Plan:
    """Per-row constants derived from a config ([rows, 1] arrays broadcasting over pairs / regions)."""

    pair_pos: np.ndarray
    pair_neg: np.ndarray
    pair_mode: np.ndarray  # -1 off, 0 positive only, 1 negative only, 2 polarity drawn
    pair_abs_min: np.ndarray  # [5, 1] yes/no rows only
    pair_rel_min: np.ndarray
    pair_sign: np.ndarray  # +1: positive(A, B) means q_A > q_B; -1: q_A < q_B
    region_pos: np.ndarray
    region_neg: np.ndarray
    region_mode: np.ndarray


def _mode(config: SpatialQAConfig, row: tuple[str, str]) -> int:
    pos_on, neg_on = row[0] in config.predicates, row[1] in config.predicates
    if row[0] == row[1]:
        return 0 if pos_on else -1
    if pos_on and neg_on:
        return 2
    if pos_on:
        return 0
    return 1 if neg_on else -1


def _column(values: list) -> np.ndarray:
    return np.asarray(values)[:, None]


@lru_cache(maxsize=64)
def _plan(predicates: frozenset[str], lateral_min_m: float, depth_min_m: float, size_rel_min: float) -> _Plan:
    cfg = SpatialQAConfig(
        lateral_min_m=lateral_min_m, depth_min_m=depth_min_m, size_rel_min=size_rel_min, predicates=predicates
    )
    return _Plan(
        pair_pos=_column([_PRED_INDEX[r[0]] for r in _PAIR_ROWS]),
        pair_neg=_column([_PRED_INDEX[r[1]] for r in _PAIR_ROWS]),
        pair_mode=_column([_mode(cfg, r) for r in _PAIR_ROWS]),
        pair_abs_min=_column([lateral_min_m, depth_min_m, 0.0, 0.0, 0.0]),
        pair_rel_min=_column([0.0, 0.0, size_rel_min, size_rel_min, size_rel_min]),
        pair_sign=_column([-1.0, -1.0, 1.0, 1.0, 1.0]),  # left of: smaller camera x; in front of: smaller camera z
        region_pos=_column([_PRED_INDEX[r[0]] for r in _REGION_ROWS]),
        region_neg=_column([_PRED_INDEX[r[1]] for r in _REGION_ROWS]),
        region_mode=_column([_mode(cfg, r) for r in _REGION_ROWS]),
    )


# ---------------------------------------------------------------------------------------------- geometry


def _checked_size(ctx: QAContext) -> tuple[int, tuple[float, float, float]]:
    """The context's region count and ego size; GeometryError for arrays of the wrong shape or a bad ego size."""
    n = len(ctx)
    where = f"QAContext of scene {ctx.scene!r} keyframe {ctx.keyframe_index} channel {ctx.channel!r}"
    for name, shape in (
        ("center_ego", (n, 3)),
        ("center_cam", (n, 3)),
        ("size_lwh", (n, 3)),
        ("track_index", (n,)),
        ("object_class", (n,)),
    ):
        arr_shape = np.shape(getattr(ctx, name))
        if arr_shape != shape:
            raise GeometryError(f"{where}: {name} has shape {arr_shape}, expected {shape}")
    ego = tuple(float(v) for v in ctx.ego_size_lwh)
    if len(ego) != 3 or not all(math.isfinite(v) and v > 0.0 for v in ego):
        raise GeometryError(f"{where}: ego_size_lwh must be three positive lengths, got {ctx.ego_size_lwh}")
    return n, (ego[0], ego[1], ego[2])


@lru_cache(maxsize=128)
def _pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The unordered region pairs (first < second) of an image with ``n`` regions, in ``triu_indices`` order."""
    first, second = np.triu_indices(n, 1)
    first.flags.writeable = second.flags.writeable = False
    return first, second


@dataclass
class _ImageGeometry:
    """What one image's items depend on besides the random draws: [rows, P] arrays over all its unordered pairs
    (``_PAIR_ROWS`` rows) and [rows, N] arrays over its regions (``_REGION_ROWS`` rows); positions are local to
    the image's context arrays. Values are metres, degrees or clock hours (NaN for qualitative rows)."""

    n: int
    first: np.ndarray  # [P] int, first region of each unordered pair (first < second)
    second: np.ndarray  # [P] int
    pair_keep: np.ndarray  # [8, P] bool: unambiguous, finite and switched on
    pair_greater: np.ndarray  # [5, P] bool: positive(first, second) holds (yes/no rows)
    pair_value: np.ndarray  # [8, P] float, NaN on the yes/no rows
    region_keep: np.ndarray  # [12, N] bool
    region_value: np.ndarray  # [12, N] float
    region_label: np.ndarray  # [12, N] int: _LEFT / _RIGHT on the ego_left_right row, else 0
    ego_greater: np.ndarray  # [3, N] bool: the region's volume / height / width exceeds the ego vehicle's


def _scene_geometry(contexts: list[QAContext], config: SpatialQAConfig, plan: _Plan) -> list[_ImageGeometry]:
    """The ``_ImageGeometry`` of every context, computed in one pass over the regions and pairs of all of them
    (element-wise operations only, so each image's numbers are those of a pass over that image alone)."""
    sizes = [_checked_size(ctx) for ctx in contexts]
    counts = [n for n, _ in sizes]
    region_end = np.cumsum(counts).tolist()
    pairs = [_pairs(n) for n in counts]
    pair_end = np.cumsum([p[0].size for p in pairs]).tolist()
    total = region_end[-1] if region_end else 0
    if total == 0:
        empty = np.zeros(0, dtype=np.int64)
        return [_ImageGeometry(0, empty, empty, *([np.zeros((0, 0))] * 7)) for _ in contexts]
    offsets = [end - n for end, n in zip(region_end, counts, strict=True)]
    first = np.concatenate([p[0] + off for p, off in zip(pairs, offsets, strict=True)])
    second = np.concatenate([p[1] + off for p, off in zip(pairs, offsets, strict=True)])
    center_ego = np.concatenate([np.asarray(ctx.center_ego, dtype=np.float64).reshape(-1, 3) for ctx in contexts])
    center_cam = np.concatenate([np.asarray(ctx.center_cam, dtype=np.float64).reshape(-1, 3) for ctx in contexts])
    size = np.concatenate([np.asarray(ctx.size_lwh, dtype=np.float64).reshape(-1, 3) for ctx in contexts])
    size = np.where(size > 0.0, size, np.nan)  # a zero or negative extent cannot be compared
    length, width, height = size.T
    volume = length * width * height
    # Pairs: the yes/no rows compare camera x, camera z, volume, height, width; the number rows measure centres.
    compared = np.stack([center_cam[:, 0], center_cam[:, 2], volume, height, width])
    q1, q2 = compared[:, first], compared[:, second]
    y = _N_PAIR_YES_NO
    pair_keep = np.empty((len(_PAIR_ROWS), first.size), dtype=bool)
    pair_value = np.full((len(_PAIR_ROWS), first.size), np.nan)
    pair_keep[:y] = ~_ambiguous(q1, q2, plan.pair_abs_min, plan.pair_rel_min)
    pair_greater = plan.pair_sign * (q1 - q2) > 0.0
    delta = center_ego[first] - center_ego[second]
    horizontal = np.hypot(delta[:, 0], delta[:, 1])
    distances = {
        "direct_distance": np.hypot(horizontal, delta[:, 2]),
        "horizontal_distance": horizontal,
        "vertical_distance": np.abs(delta[:, 2]),
    }
    pair_value[y:] = [distances[name] for name in PAIR_NUMBER_PREDICATES]
    pair_keep[y:] = np.isfinite(pair_value[y:])
    pair_keep &= plan.pair_mode >= 0
    # Regions: one-region rows (_REGION_SINGLE order), then the three comparisons with the ego vehicle.
    rows = len(_REGION_ROWS)
    region_value = np.full((rows, total), np.nan)
    region_keep = np.empty((rows, total), dtype=bool)
    region_label = np.zeros((rows, total), dtype=np.int64)
    x, yy = center_ego[:, 0], center_ego[:, 1]
    finite_xy = np.isfinite(x) & np.isfinite(yy)
    x1, y0 = np.where(finite_xy, x, 1.0), np.where(finite_xy, yy, 0.0)
    distance = np.hypot(x, yy)  # BEV distance, as attributes.distance_m
    heading = polar_angle_deg(x1, y0)
    far_enough = finite_xy & (distance >= config.heading_min_distance_m)
    offset = np.mod(-heading - 15.0, 30.0)  # clock boundaries lie at clockwise angles 15 + 30 k degrees
    clear = np.minimum(offset, 30.0 - offset) >= config.clock_margin_deg
    single_value = {
        "width": width,
        "height": height,
        "ego_distance": distance,
        "ego_heading_angle": heading,
        "ego_clock_direction": clock_direction(x1, y0),
        "ego_left_right": np.full(total, np.nan),
        "region_length": length,
        "region_width": width,
        "region_height": height,
    }
    single_keep = {
        "width": np.isfinite(width),
        "height": np.isfinite(height),
        "ego_distance": finite_xy,
        "ego_heading_angle": far_enough,
        "ego_clock_direction": far_enough & clear,
        "ego_left_right": finite_xy & (np.abs(yy) >= config.ego_lateral_min_m) & (yy != 0.0),
        "region_length": np.isfinite(length),
        "region_width": np.isfinite(width),
        "region_height": np.isfinite(height),
    }
    s = _N_REGION_SINGLE
    region_value[:s] = [single_value[name] for name in _REGION_SINGLE]
    region_keep[:s] = [single_keep[name] for name in _REGION_SINGLE]
    region_label[_REGION_SINGLE.index("ego_left_right")] = np.where(yy > 0.0, _LEFT, _RIGHT)
    q = np.stack([volume, height, width])
    ego = np.repeat(np.array([e for _, e in sizes], dtype=np.float64), counts, axis=0).T  # [3, N] l, w, h
    q_ego = np.stack([ego[0] * ego[1] * ego[2], ego[2], ego[1]])  # ego volume, height, width
    region_keep[s:] = ~_ambiguous(q, q_ego, 0.0, config.ego_size_rel_min)
    region_keep &= plan.region_mode >= 0
    ego_greater = q > q_ego
    out = []
    for n, (pf, ps), p_end, r_end in zip(counts, pairs, pair_end, region_end, strict=True):
        pc, rc = slice(p_end - pf.size, p_end), slice(r_end - n, r_end)
        out.append(
            _ImageGeometry(
                n,
                pf,
                ps,
                pair_keep[:, pc],
                pair_greater[:, pc],
                pair_value[:, pc],
                region_keep[:, rc],
                region_value[:, rc],
                region_label[:, rc],
                ego_greater[:, rc],
            )
        )
    return out


# ---------------------------------------------------------------------------------------------- candidates


@dataclass
class _Candidates:
    """Items that qualify, before phrasing: parallel arrays (one entry per item)."""

    pred: np.ndarray  # int, index into SPATIAL_PREDICATES
    a: np.ndarray  # int, position of the first region in the context arrays
    b: np.ndarray  # int, position of the second region, -1 for one-region items
    value: np.ndarray  # float, unrounded truth (NaN for qualitative items)
    label: np.ndarray  # int, index into _LABELS (0 for quantitative items)

    @staticmethod
    def from_rows(
        keep: np.ndarray, pred: np.ndarray, a: np.ndarray, b: np.ndarray, value: np.ndarray, label: np.ndarray
    ) -> _Candidates:
        """[rows, M] arrays -> the kept entries in column-major order (all rows of column 0, then column 1, ...)."""
        k = keep.T
        return _Candidates(pred.T[k], a.T[k], b.T[k], value.T[k], label.T[k])

    @staticmethod
    def concat(first: _Candidates, second: _Candidates) -> _Candidates:
        return _Candidates(
            *(np.concatenate([getattr(first, k), getattr(second, k)]) for k in ("pred", "a", "b", "value", "label"))
        )

    def take(self, idx: np.ndarray) -> _Candidates:
        return _Candidates(self.pred[idx], self.a[idx], self.b[idx], self.value[idx], self.label[idx])

    def __len__(self) -> int:
        return int(self.pred.shape[0])


def _ambiguous(
    q_first: np.ndarray, q_second: np.ndarray, abs_min: np.ndarray | float, rel_min: np.ndarray | float
) -> np.ndarray:
    """Comparisons closer than ``abs_min + rel_min * max(|q1|, |q2|)``, equal ones, or with non-finite values."""
    diff = q_first - q_second
    with np.errstate(invalid="ignore"):
        close = np.abs(diff) < abs_min + rel_min * np.maximum(np.abs(q_first), np.abs(q_second))
    return close | (diff == 0.0) | ~np.isfinite(diff)


def _negative(mode: np.ndarray, drawn: np.ndarray) -> np.ndarray:
    """Whether each row asks its negative predicate: drawn where both polarities are on, else fixed by the mode."""
    return np.where(mode == 2, drawn, mode == 1)


def _pair_candidates(g: _ImageGeometry, plan: _Plan, chosen: np.ndarray | None, bits: np.ndarray) -> _Candidates:
    """Object-centric items of the drawn pairs (all when ``chosen`` is None), pair by pair; ``bits`` [8, P] in
    0..3: bit 0 names the pair as (second, first), bit 1 asks the negative predicate where both are on."""
    first, second, keep, greater, value = g.first, g.second, g.pair_keep, g.pair_greater, g.pair_value
    if chosen is not None:
        first, second = first[chosen], second[chosen]
        keep, greater, value = keep[:, chosen], greater[:, chosen], value[:, chosen]
    swap = (bits & 1).astype(bool)
    negative = _negative(plan.pair_mode, (bits >> 1).astype(bool))
    a = np.where(swap, second, first)
    b = np.where(swap, first, second)
    y = _N_PAIR_YES_NO
    # Yes/no rows: positive(first, second) from the sign of the difference, flipped by the order and the polarity.
    label = np.zeros(keep.shape, dtype=np.int64)
    label[:y] = np.where(greater ^ swap[:y] ^ negative[:y], _YES, _NO)
    pred = np.where(negative, plan.pair_neg, plan.pair_pos)
    return _Candidates.from_rows(keep, pred, a, b, value, label)


def _region_candidates(g: _ImageGeometry, plan: _Plan, bits: np.ndarray) -> _Candidates:
    """One-region items (object sizes and ego-centric questions), region by region; ``bits`` [3, N] booleans: ask
    the negative predicate of the ego comparisons where both are on."""
    n, s = g.n, _N_REGION_SINGLE
    rows = len(_REGION_ROWS)
    negative = np.zeros((rows, n), dtype=bool)
    negative[s:] = _negative(plan.region_mode[s:], bits)
    label = g.region_label.copy()
    label[s:] = np.where(g.ego_greater ^ negative[s:], _YES, _NO)
    pred = np.where(negative, plan.region_neg, plan.region_pos)
    a = np.broadcast_to(np.arange(n), (rows, n))
    return _Candidates.from_rows(g.region_keep, pred, a, np.full((rows, n), -1), g.region_value, label)


# ---------------------------------------------------------------------------------------------- phrasing


def _phrase(ctx: QAContext, cands: _Candidates, rng: np.random.Generator) -> list[QAItem]:
    """QA items from the candidates: template choice from one generator call, canonical numbers, plain format."""
    n = len(cands)
    if n == 0:
        return []
    answer_set = cands.pred * len(_LABELS) + cands.label
    u = rng.random((2, n))
    q_pick = (u[0] * _N_QUESTIONS[cands.pred]).astype(np.int64).tolist()
    a_pick = (u[1] * _N_ANSWERS[answer_set]).astype(np.int64).tolist()
    rid = [int(r) for r in np.asarray(ctx.region_id).tolist()]
    tid = [int(t) for t in np.asarray(ctx.track_index).tolist()]
    names = [region_name(r) for r in rid]
    # One (regions, tracks) tuple pair per region and per ordered pair, shared by its items: fewer objects for the
    # garbage collector to track (every item lives until the shard is written).
    singles = [((r,), (t,)) for r, t in zip(rid, tid, strict=True)]
    pairs: dict[int, tuple[tuple[int, int], tuple[int, int]]] = {}
    n_regions = len(rid)
    classes = [str(c) for c in np.asarray(ctx.object_class).tolist()]
    kinds, categories, units, labels = _PRED_KIND, _PRED_CATEGORY, _PRED_UNIT, _LABELS
    questions, answer_sets, predicates = _PRED_QUESTIONS, _ANSWER_SETS, SPATIAL_PREDICATES
    nan = math.nan
    out: list[QAItem] = []
    append = out.append
    for p, a, b, v, lab, aset, qi, ai in zip(
        cands.pred.tolist(),
        cands.a.tolist(),
        cands.b.tolist(),
        cands.value.tolist(),
        cands.label.tolist(),
        answer_set.tolist(),
        q_pick,
        a_pick,
        strict=True,
    ):
        kind = kinds[p]
        if kind == _METRE:  # base.round_metres / fmt_metres
            gt = round(v, 2)
            text = f"{gt:.2f} m"
        elif kind == _NONE:
            gt, text = nan, ""
        elif kind == _DEGREE:  # base.round_degrees / fmt_degrees: integer degrees in (-180, 180]
            gt = float(round(v))
            if gt <= -180.0:
                gt = 180.0
            text = f"{gt:.0f} degrees"
        else:  # base.fmt_clock
            gt = v
            text = f"{int(v)} o'clock"
        name_a = names[a]
        regions: tuple[int, ...]
        tracks: tuple[int, ...]
        if b >= 0:
            name_b = names[b]
            key = a * n_regions + b
            named = pairs.get(key)
            if named is None:
                named = pairs[key] = ((rid[a], rid[b]), (tid[a], tid[b]))
            regions, tracks = named
        else:
            name_b = ""
            regions, tracks = singles[a]
        append(
            QAItem(
                categories[p],
                predicates[p],
                questions[p][qi].format(name_a, name_b),
                answer_sets[aset][ai].format(name_a, name_b, text),
                regions,
                tracks,
                gt,
                units[p],
                labels[lab],
                {},
                "",
                0,
                (),
                -1,
                classes[a],
            )
        )
    return out


# ---------------------------------------------------------------------------------------------- entry point


def spatial_scene_generator(
    contexts: list[QAContext], config: SpatialQAConfig | None = None
) -> Callable[[int, np.random.Generator], list[QAItem]]:
    """``(i, rng) -> items of contexts[i]``, with the geometry of all contexts computed once up front; each call
    draws from ``rng`` exactly what ``generate_spatial_qa(contexts[i], rng, config)`` does (that function is this
    one over a single context). GeometryError here for any malformed context."""
    cfg = config if config is not None else SpatialQAConfig()
    plan = _plan(cfg.predicates, float(cfg.lateral_min_m), float(cfg.depth_min_m), float(cfg.size_rel_min))
    geometry = _scene_geometry(contexts, cfg, plan)
    max_pairs, cap = int(cfg.max_pairs_per_image), int(cfg.max_qa_per_image)
    n_pair_rows, n_ego_rows = len(_PAIR_ROWS), len(EGO_YES_NO_FAMILIES)

    def generate(i: int, rng: np.random.Generator) -> list[QAItem]:
        g = geometry[i]
        n = g.n
        if n == 0:
            return []
        chosen = None
        n_pairs = g.first.size
        if n_pairs > max_pairs:
            chosen = np.sort(rng.choice(n_pairs, size=max_pairs, replace=False))
            n_pairs = max_pairs
        bits = rng.integers(0, 4, size=n_pair_rows * n_pairs + n_ego_rows * n, dtype=np.int64)
        pair_bits = bits[: n_pair_rows * n_pairs].reshape(n_pair_rows, n_pairs)
        ego_bits = (bits[n_pair_rows * n_pairs :].reshape(n_ego_rows, n) & 1).astype(bool)
        cands = _Candidates.concat(_pair_candidates(g, plan, chosen, pair_bits), _region_candidates(g, plan, ego_bits))
        if cap and len(cands) > cap:
            cands = cands.take(np.sort(rng.choice(len(cands), size=cap, replace=False)))
        return _phrase(contexts[i], cands, rng)

    return generate


def generate_spatial_qa(
    ctx: QAContext, rng: np.random.Generator, config: SpatialQAConfig | None = None
) -> list[QAItem]:
    """Spatial QA items (object-centric pairs and ego-centric) of one keyframe image.

    Random draws, in order: the pair subset (only when more than ``max_pairs_per_image`` pairs exist), one block of
    order / polarity bits for the whole image, the item subset (only when more than ``max_qa_per_image`` qualify),
    one block of template choices. Same context + same generator state -> identical items. Items come pair by pair
    (pairs in region order), then region by region; regions with non-finite geometry take part in no comparison that
    needs the missing values.
    """
    return spatial_scene_generator([ctx], config)(0, rng)
