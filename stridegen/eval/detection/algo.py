"""nuScenes detection metrics (mAP, TP errors), vectorised, with the nuscenes-devkit 1.2.0 semantics: the pure
algorithms (matching, accumulation, AP and TP errors) over already-filtered boxes.

Reference behaviour (read, not copied): nuscenes-devkit 1.2.0 ``nuscenes/eval/detection/algo.py`` (``accumulate``,
``calc_ap``, ``calc_tp``) and ``nuscenes/eval/common/utils.py`` (``center_distance``, ``velocity_l2``,
``scale_iou``, ``yaw_diff``, ``attr_acc``, ``cummean``).

The devkit matches predictions one at a time in a Python loop. Here the greedy matching runs in *rounds*: the
greedy order only matters among predictions that compete for the same ground truth, i.e. that share a (class,
sample) group, so round ``r`` processes the ``r``-th prediction of every group at once, for every distance
threshold at once. The result is the devkit's matching, prediction for prediction.

All positions are in the global frame, as in nuScenes results files: ``translation`` [N, 3], ``size`` [N, 3] as
(w, l, h), ``rotation`` [N, 4] quaternions [w, x, y, z], ``velocity`` [N, 2] (vx, vy).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from stridegen.core.errors import ConfigError
from stridegen.eval.detection.data import (
    EXEMPT_TP_METRICS,
    HALF_PERIOD_CLASSES,
    N_RECALL_POINTS,
    TP_METRICS,
    DetectionConfig,
    DetectionMetricData,
    DetectionMetrics,
)
from stridegen.formats.detection_boxes import DetectionBoxes, factorize

# Distances within this relative margin of a decision (threshold or tie) are recomputed exactly the way the
# devkit computes them, so that BLAS rounding differences (the devkit's norm uses a fused multiply-add on some
# CPUs) can never flip a match decision.
_DECISION_RTOL = 1e-12


def cummean(x: np.ndarray) -> np.ndarray:
    """Running mean that skips NaN; all-NaN gives ones; leading NaN positions give 0 (devkit common/utils.py)."""
    x = np.asarray(x, dtype=np.float64)
    valid = ~np.isnan(x)
    if not valid.any():
        return np.ones(len(x))
    sums = np.nancumsum(x)
    counts = np.cumsum(valid)
    return np.divide(sums, counts, out=np.zeros_like(sums), where=counts != 0)


def calc_ap(md: DetectionMetricData, min_recall: float, min_precision: float) -> float:
    """Area under the precision curve above ``min_recall``, with precision clipped at ``min_precision`` and
    rescaled to [0, 1] (devkit algo.py calc_ap)."""
    if not (0 <= min_precision < 1 and 0 <= min_recall <= 1):
        raise ConfigError(f"min_precision {min_precision} / min_recall {min_recall} out of range")
    prec = md.precision[round(100 * min_recall) + 1 :] - min_precision  # skip the min-recall bin itself
    prec[prec < 0] = 0
    return float(np.mean(prec)) / (1.0 - min_precision)


def calc_tp(md: DetectionMetricData, min_recall: float, metric_name: str) -> float:
    """Mean TP error from just above ``min_recall`` to the highest recall reached; 1 if that range is empty."""
    first_ind = round(100 * min_recall) + 1
    last_ind = md.max_recall_ind
    if last_ind < first_ind:
        return 1.0
    return float(np.mean(getattr(md, metric_name)[first_ind : last_ind + 1]))


# ============================================================================================== matching


@dataclass
class MatchResult:
    """Greedy center-distance matching of predictions to ground truth, per distance threshold.

    ``pred_order`` lists prediction rows (of the canonical-order arrays) class by class (in ``class_names``
    order), each class by descending score with ties broken towards the later row, as the devkit sorts.
    ``match_gt[t, k]`` is the matched ground-truth row for ``pred_order[k]`` at ``dist_ths[t]`` or -1;
    ``match_dist[t, k]`` the centre distance of that match (NaN where none).
    """

    pred_order: np.ndarray
    pred_class: np.ndarray  # class index of pred_order entries
    match_gt: np.ndarray
    match_dist: np.ndarray
    gt_class: np.ndarray  # class index per gt row (-1 for classes not evaluated)


def _round_minimum(
    dist: np.ndarray, taken_cand: np.ndarray, seg: np.ndarray, seg_len: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per segment and threshold: the smallest untaken distance, the first pair reaching it, and a flag
    [T, m] marking pairs within _DECISION_RTOL of that minimum (the candidates a rounding error could swap)."""
    m = len(dist)
    masked = np.where(taken_cand, np.inf, dist[None, :])  # [T, m]
    seg_min = np.minimum.reduceat(masked, seg, axis=1)  # [T, k]
    min_rep = np.repeat(seg_min, seg_len, axis=1)
    first = np.minimum.reduceat(np.where(masked == min_rep, np.arange(m), m), seg, axis=1)
    with np.errstate(invalid="ignore"):  # inf - inf where every candidate is taken
        near = (masked - min_rep <= _DECISION_RTOL * np.maximum(min_rep, 1.0)) & np.isfinite(masked)
    return seg_min, first, near


def _decisive_pairs(
    seg_min: np.ndarray, near: np.ndarray, seg: np.ndarray, seg_len: np.ndarray, ths: np.ndarray
) -> np.ndarray:
    """Pairs [m] whose exact value decides a match: near-minimal pairs of segments whose minimum is near a
    threshold or shared (within rounding) by several candidates."""
    n_near = np.add.reduceat(near.astype(np.int64), seg, axis=1)  # [T, k]
    at_threshold = np.abs(seg_min - ths[:, None]) <= _DECISION_RTOL * np.maximum(ths[:, None], 1.0)
    ambiguous = (n_near > 1) | at_threshold
    return (near & np.repeat(ambiguous, seg_len, axis=1)).any(axis=0)


def _devkit_center_distances(pred_xy: np.ndarray, gt_xy: np.ndarray) -> np.ndarray:
    """Distances computed one by one exactly as the devkit's center_distance does (np.linalg.norm of the 2-vector
    difference; its rounding can differ from a vectorised sqrt(dx*dx + dy*dy) by one ulp)."""
    return np.array(
        [np.linalg.norm(np.array(p) - np.array(g)) for p, g in zip(pred_xy, gt_xy, strict=True)], dtype=np.float64
    ).reshape(-1)


@dataclass
class _GroupIndex:
    """Where each prediction's candidates are: GT rows sorted by (class, sample) group, group starts, and per
    prediction (in greedy order) its group, its candidate count and its rank inside the group."""

    gt_sorted: np.ndarray
    group_start: np.ndarray
    pr_group: np.ndarray
    counts: np.ndarray
    rank: np.ndarray


def _match_rounds(
    active: np.ndarray,
    g: _GroupIndex,
    order: np.ndarray,
    pred: DetectionBoxes,
    gt: DetectionBoxes,
    ths: np.ndarray,
    taken: np.ndarray,
    match_gt: np.ndarray,
    match_dist: np.ndarray,
) -> None:
    """Greedy matching of the predictions ``active`` (positions in ``order``), round r taking the r-th
    prediction of every (class, sample) group; fills ``match_gt`` / ``match_dist`` and ``taken`` in place."""
    active = active[np.argsort(g.rank[active], kind="stable")]  # round by round
    act_counts = g.counts[active]
    pair_offset = np.concatenate([[0], np.cumsum(act_counts)])
    n_pairs = int(pair_offset[-1])
    pair_slot = np.repeat(np.arange(len(active)), act_counts)  # index into `active`
    within = np.arange(n_pairs) - pair_offset[:-1][pair_slot]
    pair_gt = g.gt_sorted[g.group_start[g.pr_group[active]][pair_slot] + within]
    pair_pred = order[active][pair_slot]
    delta = pred.translation[pair_pred, :2] - gt.translation[pair_gt, :2]
    dist = np.sqrt(delta[:, 0] * delta[:, 0] + delta[:, 1] * delta[:, 1])
    refined = np.zeros(n_pairs, dtype=bool)
    round_bounds = np.searchsorted(g.rank[active], np.arange(int(g.rank[active].max()) + 2))
    for lo, hi in itertools.pairwise(round_bounds):
        if lo == hi:
            continue
        q_lo, q_hi = pair_offset[lo], pair_offset[hi]
        seg, seg_len = pair_offset[lo:hi] - q_lo, act_counts[lo:hi]
        cand = pair_gt[q_lo:q_hi]
        taken_cand = taken[:, cand]
        seg_min, first, near = _round_minimum(dist[q_lo:q_hi], taken_cand, seg, seg_len)
        redo = np.flatnonzero(_decisive_pairs(seg_min, near, seg, seg_len, ths) & ~refined[q_lo:q_hi]) + q_lo
        if len(redo):  # rare: recompute those distances the devkit's way, then decide again
            dist[redo] = _devkit_center_distances(
                pred.translation[pair_pred[redo], :2], gt.translation[pair_gt[redo], :2]
            )
            refined[redo] = True
            seg_min, first, _ = _round_minimum(dist[q_lo:q_hi], taken_cand, seg, seg_len)
        t_idx, k_idx = np.nonzero(seg_min < ths[:, None])
        chosen = cand[first[t_idx, k_idx]]
        taken[t_idx, chosen] = True
        match_gt[t_idx, active[lo:hi][k_idx]] = chosen
        match_dist[t_idx, active[lo:hi][k_idx]] = seg_min[t_idx, k_idx]


def match_boxes(
    gt: DetectionBoxes,
    pred: DetectionBoxes,
    class_names: Sequence[str],
    dist_ths: Sequence[float],
    max_pairs: int = 2_000_000,
) -> MatchResult:
    """Greedy matching for every class and threshold (devkit ``accumulate``'s loop, vectorised).

    ``gt`` and ``pred`` must already be in canonical order (see ``DetectionBoxes.canonical_order``). Each
    prediction, in descending score order, takes the nearest untaken ground truth of its class in its sample
    (first one on ties); the match counts if the distance is strictly below the threshold.
    """
    ths = np.asarray(dist_ths, dtype=np.float64)
    n_th, n_cls = len(ths), len(class_names)
    class_index = {c: i for i, c in enumerate(class_names)}
    gt_cls = np.array([class_index.get(c, -1) for c in gt.detection_name], dtype=np.int64)
    pr_cls = np.array([class_index.get(c, -1) for c in pred.detection_name], dtype=np.int64)

    sample_id = factorize(np.concatenate([gt.sample_token, pred.sample_token]))
    gt_sample, pr_sample = sample_id[: len(gt)], sample_id[len(gt) :]
    n_samples = int(sample_id.max()) + 1 if len(sample_id) else 1

    # Prediction order: by class, then descending score, ties by descending row (devkit: sorted(...)[::-1]).
    rows = np.arange(len(pred))
    keep = pr_cls >= 0
    assert pred.detection_score is not None  # set by __post_init__
    order = rows[keep][np.lexsort((-rows[keep], -pred.detection_score[keep], pr_cls[keep]))]
    order_cls = pr_cls[order]

    # Ground truth grouped by (class, sample), stable in row order.
    gt_rows = np.flatnonzero(gt_cls >= 0)
    gt_group = gt_cls[gt_rows] * n_samples + gt_sample[gt_rows]
    gt_sorted = gt_rows[np.argsort(gt_group, kind="stable")]
    group_count = np.bincount(gt_group, minlength=n_cls * n_samples)
    group_start = np.concatenate([[0], np.cumsum(group_count)[:-1]])

    # Rank of each prediction inside its (class, sample) group, in greedy order.
    pr_group = order_cls * n_samples + pr_sample[order]
    by_group = np.argsort(pr_group, kind="stable")
    grp_sorted = pr_group[by_group]
    first_of_group = np.searchsorted(grp_sorted, grp_sorted, side="left")
    rank = np.empty(len(order), dtype=np.int64)
    rank[by_group] = np.arange(len(order)) - first_of_group

    match_gt = np.full((n_th, len(order)), -1, dtype=np.int64)
    match_dist = np.full((n_th, len(order)), np.nan)
    counts = group_count[pr_group] if len(order) else np.zeros(0, dtype=np.int64)
    active = np.flatnonzero(counts > 0)  # predictions with at least one candidate
    if len(active) == 0:
        return MatchResult(order, order_cls, match_gt, match_dist, gt_cls)
    # Samples are independent: match them in chunks of about max_pairs prediction-GT pairs to bound memory.
    act_sample = pr_sample[order[active]]
    pairs_per_sample = np.bincount(act_sample, weights=counts[active], minlength=n_samples)
    chunk_of_sample = (np.cumsum(pairs_per_sample) - pairs_per_sample) // max_pairs
    chunk = chunk_of_sample[act_sample]
    taken = np.zeros((n_th, len(gt)), dtype=bool)
    groups = _GroupIndex(gt_sorted, group_start, pr_group, counts, rank)
    for c in np.unique(chunk):
        _match_rounds(active[chunk == c], groups, order, pred, gt, ths, taken, match_gt, match_dist)
    return MatchResult(order, order_cls, match_gt, match_dist, gt_cls)


# ============================================================================================== accumulate


def _angle_diff_abs(yaw_to: np.ndarray, yaw_from: np.ndarray, period: float) -> np.ndarray:
    """|smallest signed difference| of angles with the given period (devkit common/utils.py angle_diff)."""
    diff = (yaw_to - yaw_from + period / 2) % period - period / 2
    diff = np.where(diff > np.pi, diff - 2 * np.pi, diff)
    return np.abs(diff)


def _tp_errors(
    gt: DetectionBoxes,
    pred: DetectionBoxes,
    gt_rows: np.ndarray,
    pred_rows: np.ndarray,
    trans_err: np.ndarray,
    period: float,
    gt_yaw: np.ndarray,
    pred_yaw: np.ndarray,
) -> dict:
    """Per-match errors (devkit velocity_l2, 1 - scale_iou, yaw_diff, 1 - attr_acc)."""
    dv = pred.velocity[pred_rows] - gt.velocity[gt_rows]
    vel_err = np.sqrt(dv[:, 0] * dv[:, 0] + dv[:, 1] * dv[:, 1])
    s_gt, s_pr = gt.size[gt_rows], pred.size[pred_rows]
    s_min = np.minimum(s_gt, s_pr)
    inter = s_min[:, 0] * s_min[:, 1] * s_min[:, 2]
    union = s_gt[:, 0] * s_gt[:, 1] * s_gt[:, 2] + s_pr[:, 0] * s_pr[:, 1] * s_pr[:, 2] - inter
    scale_err = 1 - inter / union
    orient_err = _angle_diff_abs(gt_yaw[gt_rows], pred_yaw[pred_rows], period)
    assert gt.attribute_name is not None and pred.attribute_name is not None  # set by __post_init__
    gt_attr, pr_attr = gt.attribute_name[gt_rows], pred.attribute_name[pred_rows]
    acc = np.where(gt_attr == "", np.nan, (gt_attr == pr_attr).astype(np.float64))
    return {
        "trans_err": trans_err,
        "vel_err": vel_err,
        "scale_err": scale_err,
        "orient_err": orient_err,
        "attr_err": 1 - acc,
    }


def _metric_data(tp: np.ndarray, conf: np.ndarray, npos: int, errors: dict) -> DetectionMetricData:
    """Precision / recall / confidence and TP-error curves on 101 recall points (devkit accumulate's tail)."""
    tp_cum = np.cumsum(tp.astype(np.int64)).astype(float)
    fp_cum = np.cumsum((~tp).astype(np.int64)).astype(float)
    prec = tp_cum / (fp_cum + tp_cum)
    rec = tp_cum / float(npos)
    rec_interp = np.linspace(0, 1, N_RECALL_POINTS)
    prec_i = np.interp(rec_interp, rec, prec, right=0)
    conf_i = np.interp(rec_interp, rec, conf, right=0)
    match_conf = conf[tp][::-1]
    curves = {}
    for name in TP_METRICS:
        running = cummean(errors[name])
        curves[name] = np.interp(conf_i[::-1], match_conf, running[::-1])[::-1]
    return DetectionMetricData(rec_interp, prec_i, conf_i, **curves)


def accumulate_all(
    gt: DetectionBoxes, pred: DetectionBoxes, class_names: Sequence[str], dist_ths: Sequence[float]
) -> dict[tuple[str, float], DetectionMetricData]:
    """DetectionMetricData for every (class, threshold): the devkit's ``accumulate`` for all of them at once.

    The inputs may be in any row order; they are put in canonical order (grouped by sample in order of first
    appearance) first, which is the order the devkit sees them in when the same rows are added to EvalBoxes.
    """
    gt = gt.select(gt.canonical_order())
    pred = pred.select(pred.canonical_order())
    m = match_boxes(gt, pred, class_names, dist_ths)
    gt_yaw, pred_yaw = gt.yaw, pred.yaw
    assert pred.detection_score is not None  # set by __post_init__
    npos = np.bincount(m.gt_class[m.gt_class >= 0], minlength=len(class_names))
    cls_bounds = np.searchsorted(m.pred_class, np.arange(len(class_names) + 1))
    out: dict[tuple[str, float], DetectionMetricData] = {}
    for c, name in enumerate(class_names):
        lo, hi = cls_bounds[c], cls_bounds[c + 1]
        rows = m.pred_order[lo:hi]
        conf = pred.detection_score[rows]
        period = np.pi if name in HALF_PERIOD_CLASSES else 2 * np.pi
        for t, th in enumerate(dist_ths):
            matched = m.match_gt[t, lo:hi]
            tp = matched >= 0
            if npos[c] == 0 or not tp.any():
                out[(name, th)] = DetectionMetricData.no_predictions()
                continue
            errors = _tp_errors(gt, pred, matched[tp], rows[tp], m.match_dist[t, lo:hi][tp], period, gt_yaw, pred_yaw)
            out[(name, th)] = _metric_data(tp, conf, int(npos[c]), errors)
    return out


def metrics_from_data(md: dict[tuple[str, float], DetectionMetricData], cfg: DetectionConfig) -> DetectionMetrics:
    """APs and TP errors from accumulated data (devkit DetectionEval.evaluate, step 2)."""
    metrics = DetectionMetrics(cfg)
    for c in cfg.class_names:
        metrics.label_aps[c] = {th: calc_ap(md[(c, th)], cfg.min_recall, cfg.min_precision) for th in cfg.dist_ths}
        exempt = EXEMPT_TP_METRICS.get(c, ())
        metrics.label_tp_errors[c] = {
            m: float("nan") if m in exempt else calc_tp(md[(c, cfg.dist_th_tp)], cfg.min_recall, m) for m in TP_METRICS
        }
    return metrics
