"""nuScenes tracking metrics (AMOTA, AMOTP, MOTA, MOTP, IDS, FRAG, ...), vectorised over plain arrays.

Reproduces the semantics of nuscenes-devkit 1.2.0 ``python-sdk/nuscenes/eval/tracking`` (``evaluate.py``,
``algo.py``, ``metrics.py``) and of the py-motmetrics 1.4.0 ``MOTAccumulator.update`` event logic it relies on,
without either package, on tracks already filtered, score-averaged and interpolated
(``stridegen.eval.tracking.prepare``):

* per class: one association pass with all predictions gives the scores of the matched predictions, from which
  ``num_thresholds`` (40) score thresholds are read off the recall curve starting at ``min_recall`` (0.1)
  (``algo.py::compute_thresholds``); one association pass per distinct threshold gives the CLEAR-MOT counts;
* association per frame as motmetrics does it: previous correspondences are kept first when still within the gate,
  the rest is solved as a linear assignment on the centre distances gated at ``dist_th_tp`` (2 m); a match whose
  object was last matched to another hypothesis is an identity switch;
* AMOTA = mean of MOTAR over the 40 recall thresholds, AMOTP = mean of MOTP (unachieved thresholds take the
  configured worst value); MOTA, MOTP, IDS, FRAG, ... are taken at the threshold with the best MOTA.

Per class, all thresholds and all scenes are processed together: a frame step handles the same frame index of
every scene, and the state (last matched hypothesis of every object) is an array with one row per threshold.
Pairs alone in their row and column are matched directly; any contended (threshold, frame) goes to scipy's solver
on the very matrix motmetrics would build, so even exact ties break the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from stridegen.eval.tracking.data import (
    EXTRA_METRICS,
    INTERNAL_METRICS,
    LEGACY_METRICS,
    THRESHOLD_METRICS,
    TRACKING_METRICS,
    ClassMetricData,
    Timeline,
    TrackBoxes,
    TrackingConfig,
    TrackingResult,
)

# Sample period used by TID / LGD (devkit ``metrics.py``: "approx. sample period (0.5 sec)").
_SAMPLE_PERIOD_S = 0.5


# ---------------------------------------------------------------------------------------------- association


@dataclass
class _Problem:
    """GT and predicted boxes of one class, sorted by (frame, input order), and their gated pairs.

    Objects (GT tracks) and hypotheses (predicted tracks) are numbered per (scene, tracking id), as the devkit's
    merge of per-scene accumulators does. Pairs are sorted by (frame index within the scene, frame, gt, pred), so
    that one frame step handles the same frame index of every scene.
    """

    gt_frame: np.ndarray
    gt_obj: np.ndarray
    gt_track_id: np.ndarray
    pr_frame: np.ndarray
    pr_hyp: np.ndarray
    pr_score: np.ndarray
    gt_frame_start: np.ndarray  # [N_gt] first gt index of the gt's frame
    gt_frame_size: np.ndarray
    pr_frame_start: np.ndarray  # [N_pred] first pred index of the pred's frame
    pr_frame_size: np.ndarray
    pair_gt: np.ndarray
    pair_pr: np.ndarray
    pair_dist: np.ndarray
    step_gt: list[np.ndarray]  # gt indices of each frame step
    step_pairs: list[slice]
    n_obj: int


def _encode_ids(scene: np.ndarray, track_id: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense index per (scene, tracking id)."""
    if len(track_id) == 0:
        return np.zeros(0, dtype=np.int64), 0
    _, code = np.unique(track_id, return_inverse=True)
    uniq, inv = np.unique(scene * (int(code.max()) + 1) + code, return_inverse=True)
    return inv.astype(np.int64).reshape(-1), len(uniq)


def _frame_ranges(frame: np.ndarray, n_frames: int) -> tuple[np.ndarray, np.ndarray]:
    count = np.bincount(frame, minlength=n_frames)
    first = np.cumsum(count) - count
    return first[frame], count[frame]


def _build_problem(gt: TrackBoxes, pred: TrackBoxes, timeline: Timeline, dist_th: float) -> _Problem:
    gt = gt.take(np.argsort(gt.frame, kind="stable"))
    pred = pred.take(np.argsort(pred.frame, kind="stable"))
    gt_obj, n_obj = _encode_ids(timeline.scene[gt.frame], gt.track_id)
    pr_hyp, _ = _encode_ids(timeline.scene[pred.frame], pred.track_id)
    n_frames = len(timeline)
    gt_first, gt_count = _frame_ranges(gt.frame, n_frames)
    pr_count_all = np.bincount(pred.frame, minlength=n_frames)
    pr_first_all = np.cumsum(pr_count_all) - pr_count_all
    pr_first, pr_count = pr_first_all[pred.frame], pr_count_all[pred.frame]

    # Every (gt, pred) pair of a frame, in (frame, gt, pred) order.
    n_per_gt = pr_count_all[gt.frame]
    pair_gt = np.repeat(np.arange(len(gt)), n_per_gt)
    start_of_gt = np.cumsum(n_per_gt) - n_per_gt
    pair_pr = pr_first_all[gt.frame][pair_gt] + np.arange(pair_gt.size) - np.repeat(start_of_gt, n_per_gt)
    # sklearn ``euclidean_distances`` as the devkit calls it: sqrt(max(-2 x.y + |x|^2 + |y|^2, 0)).
    x = gt.translation_global[pair_gt, :2]
    y = pred.translation_global[pair_pr, :2]
    d2 = -2 * (x[:, 0] * y[:, 0] + x[:, 1] * y[:, 1])
    d2 += x[:, 0] * x[:, 0] + x[:, 1] * x[:, 1]
    d2 += y[:, 0] * y[:, 0] + y[:, 1] * y[:, 1]
    dist = np.sqrt(np.maximum(d2, 0.0))
    valid = dist < dist_th  # the devkit sets distances >= dist_th_tp to NaN: never paired
    pair_gt, pair_pr, dist = pair_gt[valid], pair_pr[valid], dist[valid]

    local = timeline.local_index
    n_steps = int(local.max()) + 1 if n_frames else 0
    pair_step = local[gt.frame[pair_gt]]
    order = np.argsort(pair_step, kind="stable")
    pair_gt, pair_pr, dist = pair_gt[order], pair_pr[order], dist[order]
    bounds = np.searchsorted(pair_step[order], np.arange(n_steps + 1))
    gt_step = local[gt.frame]
    gt_step_order = np.argsort(gt_step, kind="stable")
    gt_bounds = np.searchsorted(gt_step[gt_step_order], np.arange(n_steps + 1))
    return _Problem(
        gt_frame=gt.frame,
        gt_obj=gt_obj,
        gt_track_id=gt.track_id,
        pr_frame=pred.frame,
        pr_hyp=pr_hyp,
        pr_score=pred.score,
        gt_frame_start=gt_first,
        gt_frame_size=gt_count,
        pr_frame_start=pr_first,
        pr_frame_size=pr_count,
        pair_gt=pair_gt,
        pair_pr=pair_pr,
        pair_dist=dist,
        step_gt=[gt_step_order[gt_bounds[k] : gt_bounds[k + 1]] for k in range(n_steps)],
        step_pairs=[slice(int(bounds[k]), int(bounds[k + 1])) for k in range(n_steps)],
        n_obj=n_obj,
    )


@dataclass
class _Association:
    """Per threshold row t: the pred matched to each GT box (-1: miss), whether it was a switch, its distance."""

    gt_pred: np.ndarray  # [T, N_gt]
    gt_switch: np.ndarray  # [T, N_gt]
    gt_dist: np.ndarray  # [T, N_gt]


def _assign_like_motmetrics(costs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """motmetrics 1.4.0 ``lap.lsa_solve_scipy``: NaN edges become a large constant, then scipy's solver."""
    from scipy.optimize import linear_sum_assignment

    valid = np.isfinite(costs)
    if valid.all():
        finite = costs.copy()
    elif not valid.any():
        finite = np.zeros_like(costs)
    else:
        r = min(costs.shape)
        c = np.abs(costs[valid]).max() + 1
        finite = np.where(valid, costs, 2 * r * c + 1)
    rids, cids = linear_sum_assignment(finite)
    keep = valid[rids, cids]
    return rids[keep], cids[keep]


def _associate(p: _Problem, active: np.ndarray) -> _Association:
    """motmetrics' per-frame association (``MOTAccumulator.update``) for every threshold row of ``active``
    ([T, N_pred]: which predictions pass the row's score threshold) at once."""
    n_t, n_pr = active.shape
    n_gt = p.gt_obj.shape[0]
    m = np.full((n_t, p.n_obj), -1, dtype=np.int64)  # last hypothesis each object was matched to
    gt_pred = np.full((n_t, n_gt), -1, dtype=np.int64)
    gt_switch = np.zeros((n_t, n_gt), dtype=bool)
    gt_dist = np.full((n_t, n_gt), np.nan)
    pr_matched = np.zeros((n_t, n_pr), dtype=bool)
    for k, sl in enumerate(p.step_pairs):
        pi, pj, pd = p.pair_gt[sl], p.pair_pr[sl], p.pair_dist[sl]
        if pi.size == 0:
            continue
        act = active[:, pj]
        # 1. Previous correspondences still within the gate are kept; the first GT row of the frame claiming a
        # hypothesis wins (ids are unique per frame, so a row has at most one such pair).
        t1, q1 = np.nonzero((m[:, p.gt_obj[pi]] == p.pr_hyp[pj][None, :]) & act)
        if t1.size:
            _, first = np.unique(t1 * n_pr + pj[q1], return_index=True)
            t1, q1 = t1[first], q1[first]
            gt_pred[t1, pi[q1]] = pj[q1]
            gt_dist[t1, pi[q1]] = pd[q1]
            pr_matched[t1, pj[q1]] = True
        # 2. Linear assignment of the remaining pairs.
        t2, q2 = np.nonzero(act & (gt_pred[:, pi] < 0) & ~pr_matched[:, pj])
        if t2.size:
            t2, q2 = _assign_step(p, t2, q2, pi, pj, pd, active, gt_pred, pr_matched)
            gi, gj = pi[q2], pj[q2]
            prev = m[t2, p.gt_obj[gi]]
            gt_switch[t2, gi] = (prev >= 0) & (prev != p.pr_hyp[gj])
            gt_pred[t2, gi] = gj
            gt_dist[t2, gi] = pd[q2]
            pr_matched[t2, gj] = True
        # 5. Remember this frame's correspondences.
        gi_all = p.step_gt[k]
        tt, ii = np.nonzero(gt_pred[:, gi_all] >= 0)
        if tt.size:
            g = gi_all[ii]
            m[tt, p.gt_obj[g]] = p.pr_hyp[gt_pred[tt, g]]
    return _Association(gt_pred, gt_switch, gt_dist)


def _assign_step(
    p: _Problem,
    t2: np.ndarray,
    q2: np.ndarray,
    pi: np.ndarray,
    pj: np.ndarray,
    pd: np.ndarray,
    active: np.ndarray,
    gt_pred: np.ndarray,
    pr_matched: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Matches (row t, pair q) of step 2 among the open pairs (t2, q2).

    A pair alone in its row and its column is in every maximum-cardinality assignment, hence in motmetrics' one.
    Any (threshold, frame) with a contended pair is solved on the very matrix motmetrics builds (all GT rows,
    the active predictions as columns, NaN where gated or already matched), so ties break the same way.
    """
    n_gt, n_pr = gt_pred.shape[1], active.shape[1]
    _, row_inv, row_cnt = np.unique(t2 * n_gt + pi[q2], return_inverse=True, return_counts=True)
    _, col_inv, col_cnt = np.unique(t2 * n_pr + pj[q2], return_inverse=True, return_counts=True)
    alone = (row_cnt[row_inv.reshape(-1)] == 1) & (col_cnt[col_inv.reshape(-1)] == 1)
    if alone.all():
        return t2, q2
    frame_key = t2 * (p.gt_frame_start.shape[0] + 1) + p.gt_frame_start[pi[q2]]
    hard_keys = np.unique(frame_key[~alone])
    easy = ~np.isin(frame_key, hard_keys)
    out_t, out_q = [t2[easy]], [q2[easy]]
    for key in hard_keys:
        sel = frame_key == key
        t = int(t2[sel][0])
        qs = q2[sel]
        g0 = int(p.gt_frame_start[pi[qs[0]]])
        p0 = int(p.pr_frame_start[pj[qs[0]]])
        cols = p0 + np.flatnonzero(active[t, p0 : p0 + int(p.pr_frame_size[pj[qs[0]]])])
        col = np.searchsorted(cols, pj[qs])  # open pairs have active predictions: all found
        costs = np.full((int(p.gt_frame_size[pi[qs[0]]]), cols.size), np.nan)
        costs[pi[qs] - g0, col] = pd[qs]
        rids, cids = _assign_like_motmetrics(costs)
        q_of = {(int(r), int(c)): int(q) for r, c, q in zip(pi[qs] - g0, col, qs, strict=True)}
        out_q.append(np.array([q_of[(int(r), int(c))] for r, c in zip(rids, cids, strict=True)], dtype=np.int64))
        out_t.append(np.full(out_q[-1].size, t, dtype=np.int64))
    return np.concatenate(out_t), np.concatenate(out_q)


# ---------------------------------------------------------------------------------------------- metrics


def _per_threshold_metrics(
    p: _Problem, assoc: _Association, active: np.ndarray, n_frames: int
) -> dict[str, np.ndarray]:
    """motmetrics / devkit metrics (``MOT_METRIC_MAP``) of each threshold row; arrays [T]."""
    n_t = active.shape[0]
    n_obj_boxes = p.gt_obj.shape[0]
    tracked = assoc.gt_pred >= 0
    n_det = tracked.sum(axis=1)
    n_switch = assoc.gt_switch.sum(axis=1)
    n_match = n_det - n_switch
    n_pred = active.sum(axis=1)
    n_fp = n_pred - n_det
    n_miss = n_obj_boxes - n_det
    has_gt = np.zeros(n_frames, dtype=bool)
    has_gt[p.gt_frame] = True
    counted = np.broadcast_to(has_gt, (n_t, n_frames)).copy()
    tt, jj = np.nonzero(active)
    counted[tt, p.pr_frame[jj]] = True
    # devkit frame ids: frames with a GT or an active prediction are numbered; differences within a scene are
    # all the metrics use, so one running count over all scenes does.
    frame_id = np.cumsum(counted, axis=1)
    n_frames_counted = counted.sum(axis=1)
    sum_dist = np.where(tracked, assoc.gt_dist, 0.0).sum(axis=1)
    out = {name: np.full(n_t, np.nan) for name in THRESHOLD_METRICS}
    out.update(
        gt=np.full(n_t, float(n_obj_boxes)),
        tp=n_match.astype(float),
        fp=n_fp.astype(float),
        fn=n_miss.astype(float),
        ids=n_switch.astype(float),
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        out["mota"] = np.maximum(0.0, 1.0 - (n_miss + n_switch + n_fp) / n_obj_boxes)
        out["motp"] = np.where(n_det == 0, np.nan, sum_dist / np.maximum(n_det, 1))
        # devkit ``motar``: recall from the MATCH events only.
        recall = n_match / n_obj_boxes
        nominator = (n_miss + n_switch + n_fp) - (1 - recall) * n_obj_boxes
        denominator = recall * n_obj_boxes
        out["motar"] = np.where(denominator == 0, np.nan, np.maximum(0, 1 - nominator / denominator))
        out["faf"] = n_fp / n_frames_counted * 100
        out["recall"] = n_det / n_obj_boxes
        out["precision"] = np.where(n_det + n_fp == 0, np.nan, n_det / (n_fp + n_det))
        out["f1"] = 2 * n_det / (n_obj_boxes + n_pred)
    # Per-object metrics from each object's boxes in time order.
    order = np.lexsort((p.gt_frame, p.gt_obj))
    obj_sorted = p.gt_obj[order]
    starts = np.flatnonzero(np.r_[True, obj_sorted[1:] != obj_sorted[:-1]])
    for t in range(n_t):
        _object_metrics(out, t, tracked[t, order], frame_id[t, p.gt_frame[order]], starts)
    return out


def _object_metrics(out: dict[str, np.ndarray], t: int, tr: np.ndarray, f: np.ndarray, s0: np.ndarray) -> None:
    """MT, ML, FRAG, TID, LGD of row t; ``tr`` / ``f``: tracked flag / frame id of each box, grouped by object
    (segments start at ``s0``), each object in time order."""
    n = tr.size
    n_obj = s0.size
    lengths = np.diff(np.r_[s0, n])
    seg = np.repeat(np.arange(n_obj), lengths)
    n_tracked = np.add.reduceat(tr.astype(np.int64), s0)
    # motmetrics ``track_ratios``: tracked / frequency; MT >= 0.8, ML < 0.2.
    ratio = n_tracked / lengths
    out["mt"][t] = np.count_nonzero(ratio >= 0.8)
    out["ml"][t] = np.count_nonzero(ratio < 0.2)
    pos = np.arange(n)
    first_tr = np.minimum.reduceat(np.where(tr, pos, n), s0)
    last_tr = np.maximum.reduceat(np.where(tr, pos, -1), s0)
    # devkit ``num_fragmentations_custom``: tracked -> missed transitions before the object's last tracked box.
    drop = np.zeros(n, dtype=bool)
    drop[1:] = tr[:-1] & ~tr[1:] & (seg[1:] == seg[:-1])
    out["frag"][t] = np.count_nonzero(drop & (pos < last_tr[seg]))
    matched = n_tracked > 0
    n_matched = int(np.count_nonzero(matched))
    if n_matched == 0:
        return  # devkit: TID and LGD are NaN without a matched object
    # devkit ``track_initialization_duration``: frames from the first box to the first tracked box.
    tid = (f[first_tr[matched]] - f[s0[matched]]) * _SAMPLE_PERIOD_S
    out["tid"][t] = float(np.sum(tid)) / n_matched
    # devkit ``longest_gap_duration``: longest run of frames without a match between first and last box.
    tp_pos = pos[tr]
    new_obj = np.r_[True, seg[tp_pos][1:] != seg[tp_pos][:-1]]
    gap_before = np.empty(tp_pos.size, dtype=np.int64)
    gap_before[new_obj] = f[tp_pos[new_obj]] - f[s0[seg[tp_pos[new_obj]]]]
    cont = np.flatnonzero(~new_obj)
    gap_before[cont] = f[tp_pos[cont]] - f[tp_pos[cont - 1]] - 1
    gaps = np.zeros(n, dtype=np.int64)
    gaps[tp_pos] = gap_before
    longest = np.maximum.reduceat(gaps, s0)
    trailing = f[s0 + lengths - 1] - f[np.maximum(last_tr, 0)]
    longest = np.where(matched, np.maximum(longest, trailing), 0)
    out["lgd"][t] = float(np.sum(longest * _SAMPLE_PERIOD_S)) / n_matched


# ---------------------------------------------------------------------------------------------- thresholds


def compute_thresholds(
    match_scores: np.ndarray, gt_box_count: int, min_recall: float, num_thresholds: int
) -> tuple[np.ndarray, np.ndarray]:
    """Score thresholds at ``num_thresholds`` recall values from ``min_recall`` to 1, highest recall first.

    devkit ``TrackingEvaluation.compute_thresholds``: the scores of the matched predictions sorted high to low
    give recall k / n_gt at the k-th score; thresholds are interpolated on that curve (``np.interp(..., right=0)``)
    and are NaN above the maximum achieved recall. Returned reversed (NaNs first), as the devkit stores them.
    """
    rec_interp = np.linspace(min_recall, 1, num_thresholds).round(12)
    if match_scores.size == 0:
        return np.full(num_thresholds, np.nan), np.full(num_thresholds, np.nan)
    scores = np.sort(np.asarray(match_scores, dtype=np.float64))[::-1]
    rec = np.arange(1, scores.size + 1) / gt_box_count
    thresholds = np.interp(rec_interp, rec, scores, right=0)
    thresholds[rec_interp > np.max(rec)] = np.nan
    return thresholds[::-1].copy(), rec_interp[::-1].copy()


def _expand_to_thresholds(values: np.ndarray, thresholds: np.ndarray, unique_thr: np.ndarray) -> np.ndarray:
    """Per distinct threshold values -> one value per threshold slot, NaN for unachieved recall (devkit order)."""
    n_nan = int(np.isnan(thresholds).sum())
    reps = np.array([np.sum(thresholds == u) for u in unique_thr], dtype=np.int64)
    return np.concatenate([np.full(n_nan, np.nan), np.repeat(values, reps)])


def _worst_data(cfg: TrackingConfig, n_boxes: int, n_tracks: int) -> dict[str, np.ndarray]:
    """devkit ``accumulate`` when no recall threshold is achieved: worst value of each metric."""
    out = {}
    for name in THRESHOLD_METRICS:
        worst = cfg.metric_worst.get(name, math.nan)
        if worst == -1:
            worst = {"ml": n_tracks, "gt": n_boxes, "fn": n_boxes}.get(name, math.nan)
        out[name] = np.full(cfg.num_thresholds, float(worst))
    return out


def evaluate_prepared(gt: TrackBoxes, pred: TrackBoxes, timeline: Timeline, cfg: TrackingConfig) -> TrackingResult:
    """Metrics of already filtered / averaged / interpolated tracks (see ``prepare_tracks``)."""
    import time

    start = time.perf_counter()
    label_metrics = {m: dict.fromkeys(cfg.class_names, math.nan) for m in (*TRACKING_METRICS, *EXTRA_METRICS)}
    metric_data: dict[str, ClassMetricData] = {}
    for name in cfg.class_names:
        data = evaluate_class(
            gt.take(np.flatnonzero(gt.class_name == name)),
            pred.take(np.flatnonzero(pred.class_name == name)),
            timeline,
            cfg,
        )
        metric_data[name] = data
        _summarize_class(label_metrics, name, data.metrics, cfg)
    return TrackingResult(cfg, label_metrics, metric_data, time.perf_counter() - start)


def evaluate_class(gt: TrackBoxes, pred: TrackBoxes, timeline: Timeline, cfg: TrackingConfig) -> ClassMetricData:
    """devkit ``TrackingEvaluation.accumulate`` for the boxes of one class: metrics at every recall threshold."""
    n_thr = cfg.num_thresholds
    if len(gt) == 0:  # devkit: a class without GT keeps NaN everywhere
        nan = np.full(n_thr, np.nan)
        return ClassMetricData(nan, nan.copy(), {k: nan.copy() for k in THRESHOLD_METRICS})
    problem = _build_problem(gt, pred, timeline, cfg.dist_th_tp)
    n_boxes = problem.gt_obj.shape[0]
    # Pass 1, all predictions: the scores of the MATCH (not SWITCH) predictions give the thresholds.
    first = _associate(problem, np.ones((1, problem.pr_hyp.shape[0]), dtype=bool))
    hit = (first.gt_pred[0] >= 0) & ~first.gt_switch[0]
    thr, rec = compute_thresholds(problem.pr_score[first.gt_pred[0][hit]], n_boxes, cfg.min_recall, n_thr)
    unique = np.array(list(dict.fromkeys(thr[~np.isnan(thr)].tolist())), dtype=np.float64)  # devkit skips repeats
    if unique.size == 0:
        return ClassMetricData(thr, rec, _worst_data(cfg, n_boxes, np.unique(problem.gt_track_id).size))
    # Pass 2: one row per distinct threshold; a prediction takes part where its (track mean) score >= threshold.
    active = problem.pr_score[None, :] >= unique[:, None]
    assoc = _associate(problem, active)
    per_row = _per_threshold_metrics(problem, assoc, active, len(timeline))
    return ClassMetricData(thr, rec, {k: _expand_to_thresholds(per_row[k], thr, unique) for k in THRESHOLD_METRICS})


def _summarize_class(
    label_metrics: dict[str, dict[str, float]], name: str, data: dict[str, np.ndarray], cfg: TrackingConfig
) -> None:
    """devkit ``TrackingEval.evaluate`` step 2: values at the best-MOTA threshold, AMOTA / AMOTP averages."""
    if not np.all(np.isnan(data["mota"])):
        best = int(np.nanargmax(data["mota"]))
        for metric in (*INTERNAL_METRICS, *LEGACY_METRICS, *EXTRA_METRICS):
            label_metrics[metric][name] = float(data[metric][best])
    for avg, per_thr in (("amota", "motar"), ("amotp", "motp")):
        values = data[per_thr].copy()
        if np.all(np.isnan(values)):
            label_metrics[avg][name] = math.nan
        else:
            values[np.isnan(values)] = cfg.metric_worst[avg]
            label_metrics[avg][name] = float(np.mean(values))
