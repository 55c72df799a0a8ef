"""The devkit's tracking steps before accumulation, vectorised over plain arrays: the checks of the input rows,
the filters, the track-mean scores and the interpolation of missing frames.

Reproduces nuscenes-devkit 1.2.0 (``python-sdk/nuscenes/eval/common/loaders.py``, ``eval/tracking/loaders.py``):

* filtering: class range on the xy distance to the ego pose, GT boxes with zero LiDAR + radar points, bicycles and
  motorcycles inside a bicycle rack (``nuscenes/eval/common/loaders.py::filter_eval_boxes``);
* every predicted box's score is replaced by the mean score of its track (per scene and tracking id), before the
  missing timestamps of every GT and predicted track are filled by interpolation
  (``nuscenes/eval/tracking/loaders.py::create_tracks`` / ``interpolate_tracks``, including the devkit's weighting).

The metrics of the prepared tracks are computed by ``stridegen.eval.tracking.algo``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from stridegen.eval.tracking.data import BIKE_RACK_CLASSES, RackBoxes, Timeline, TrackBoxes, TrackingConfig


def validate_tracks(boxes: TrackBoxes, timeline: Timeline, cfg: TrackingConfig, what: str) -> None:
    """Raise ValueError naming the first bad row: frame out of range, unknown class, non-finite values, or a
    tracking id used twice in one frame (the devkit's interpolation and matching assume unique ids per frame)."""
    n = len(boxes)
    if n == 0:
        return
    bad = np.flatnonzero((boxes.frame < 0) | (boxes.frame >= len(timeline)))
    if bad.size:
        raise ValueError(f"{what}: row {bad[0]} refers to frame {boxes.frame[bad[0]]} outside the timeline")
    known = np.isin(boxes.class_name, np.array(cfg.class_names, dtype=object))
    if not known.all():
        i = int(np.flatnonzero(~known)[0])
        raise ValueError(f"{what}: row {i} has class {boxes.class_name[i]!r}; expected one of {cfg.class_names}")
    finite = np.isfinite(boxes.translation_global).all(axis=1) & np.isfinite(boxes.score)
    if not finite.all():
        i = int(np.flatnonzero(~finite)[0])
        raise ValueError(f"{what}: row {i} has a non-finite translation or score")
    _, track_code = np.unique(boxes.track_id, return_inverse=True)
    key = boxes.frame * (int(track_code.max()) + 1) + track_code
    _, first, counts = np.unique(key, return_index=True, return_counts=True)
    if np.any(counts > 1):
        i = int(first[np.flatnonzero(counts > 1)[0]])
        raise ValueError(f"{what}: tracking id {boxes.track_id[i]!r} appears more than once in frame {boxes.frame[i]}")


def _order_by_frame(boxes: TrackBoxes) -> TrackBoxes:
    return boxes.take(np.argsort(boxes.frame, kind="stable"))


def filter_tracks(
    boxes: TrackBoxes, timeline: Timeline, cfg: TrackingConfig, racks: RackBoxes | None = None
) -> TrackBoxes:
    """Class range on the xy distance to the ego, zero-point boxes, bicycles/motorcycles in bike racks.

    devkit ``filter_eval_boxes``: ``ego_dist < class_range[class]``, ``num_pts != 0`` (``-1`` passes), and a
    bicycle / motorcycle whose centre lies in a ``static_object.bicycle_rack`` box of the same sample is removed.
    """
    ego_xy = boxes.translation_global[:, :2] - timeline.ego_translation_global[boxes.frame, :2]
    ego_dist = np.sqrt(ego_xy[:, 0] ** 2 + ego_xy[:, 1] ** 2)
    max_dist = np.array([cfg.class_range.get(c, -np.inf) for c in boxes.class_name], dtype=np.float64)
    keep = (ego_dist < max_dist) & (boxes.num_pts != 0)
    if racks is not None and len(racks.frame):
        keep &= ~_in_bike_rack(boxes, racks)
    return boxes.take(np.flatnonzero(keep))


def _in_bike_rack(boxes: TrackBoxes, racks: RackBoxes) -> np.ndarray:
    """[N] whether a bicycle/motorcycle centre lies inside (boundary inclusive) a rack of its frame.

    devkit ``points_in_box``: the centre projected on the rack's three (fully rotated) axes lies within the box.
    """
    from stridegen.core.transforms import quat_to_rotmat

    inside = np.zeros(len(boxes), dtype=bool)
    candidates = np.flatnonzero(np.isin(boxes.class_name, np.array(BIKE_RACK_CLASSES, dtype=object)))
    if candidates.size == 0 or len(racks.frame) == 0:
        return inside
    order = np.argsort(racks.frame, kind="stable")
    rack_frame = np.asarray(racks.frame)[order]
    n_frames = int(max(rack_frame.max(), boxes.frame[candidates].max())) + 1
    count = np.bincount(rack_frame, minlength=n_frames)
    first = np.cumsum(count) - count
    # Every (candidate, rack of the same frame) pair.
    n_per = count[boxes.frame[candidates]]
    cand = np.repeat(candidates, n_per)
    offsets = np.arange(cand.size) - np.repeat(np.cumsum(n_per) - n_per, n_per)
    rack = order[first[boxes.frame[cand]] + offsets]
    rot = quat_to_rotmat(np.asarray(racks.rotation_global, dtype=np.float64).reshape(-1, 4))  # [R, 3, 3]
    half_lwh = 0.5 * np.asarray(racks.size_wlh, dtype=np.float64)[:, [1, 0, 2]]
    delta = boxes.translation_global[cand] - np.asarray(racks.center_global, dtype=np.float64)[rack]
    local = np.einsum("nij,ni->nj", rot[rack], delta)  # R^T (p - c)
    hit = np.all(np.abs(local) <= half_lwh[rack], axis=1)
    inside[cand[hit]] = True
    return inside


def average_track_scores(pred: TrackBoxes, timeline: Timeline) -> TrackBoxes:
    """Replace every box's score by the mean score of its track (same scene and tracking id, any class).

    devkit ``create_tracks``: the mean is ``np.mean`` over the track's scores in time order, taken before
    interpolation; the per-track ``np.mean`` calls keep its summation order exactly.
    """
    if len(pred) == 0:
        return pred
    pred = _order_by_frame(pred)
    _, track_code = np.unique(pred.track_id, return_inverse=True)
    key = timeline.scene[pred.frame] * (int(track_code.max()) + 1) + track_code
    order = np.argsort(key, kind="stable")  # each track's boxes stay in time order
    sorted_scores = pred.score[order]
    starts = np.flatnonzero(np.r_[True, np.diff(key[order]) != 0])
    ends = np.r_[starts[1:], len(order)]
    means = np.empty(len(starts))
    for k, (a, b) in enumerate(zip(starts, ends, strict=True)):
        means[k] = np.mean(sorted_scores[a:b])
    new_sorted = np.repeat(means, ends - starts)
    score = np.empty_like(pred.score)
    score[order] = new_sorted
    return replace(pred, score=score)


def interpolate_tracks(boxes: TrackBoxes, timeline: Timeline) -> TrackBoxes:
    """Fill every frame between a track's first and last box that lacks a box of that track.

    devkit ``interpolate_tracks``: the neighbours are the track's boxes just before and after the frame, with
    ``right_ratio = (t_right - t) / (t_right - t_left)`` and value ``(1 - right_ratio) * left + right_ratio *
    right`` (the devkit's weighting, kept as is); class and id come from the right box; the score is interpolated
    the same way. New boxes follow the frame's own boxes, ordered by the first appearance of their track.
    """
    if len(boxes) == 0:
        return boxes
    boxes = _order_by_frame(boxes)
    n = len(boxes)
    _, track_code = np.unique(boxes.track_id, return_inverse=True)
    key = timeline.scene[boxes.frame] * (int(track_code.max()) + 1) + track_code
    order = np.argsort(key, kind="stable")
    k_sorted = key[order]
    same_next = k_sorted[1:] == k_sorted[:-1]
    left = order[:-1][same_next]
    right = order[1:][same_next]
    gap = boxes.frame[right] - boxes.frame[left] - 1
    has_gap = gap > 0
    left, right, gap = left[has_gap], right[has_gap], gap[has_gap]
    if left.size == 0:
        return boxes
    # One new box per missing frame.
    rep_left = np.repeat(left, gap)
    rep_right = np.repeat(right, gap)
    first_new = np.cumsum(gap) - gap
    offset = np.arange(int(gap.sum())) - np.repeat(first_new, gap) + 1
    new_frame = boxes.frame[rep_left] + offset
    t = timeline.timestamp_us[new_frame]
    t_left = timeline.timestamp_us[boxes.frame[rep_left]]
    t_right = timeline.timestamp_us[boxes.frame[rep_right]]
    right_ratio = (t_right - t).astype(np.float64) / (t_right - t_left).astype(np.float64)
    w_left = 1.0 - right_ratio
    translation = (
        w_left[:, None] * boxes.translation_global[rep_left]
        + right_ratio[:, None] * boxes.translation_global[rep_right]
    )
    score = w_left * boxes.score[rep_left] + right_ratio * boxes.score[rep_right]
    new = TrackBoxes(
        new_frame,
        boxes.track_id[rep_right],
        boxes.class_name[rep_right],
        translation,
        score,
        np.full(new_frame.shape[0], -1, dtype=np.int64),
    )
    # Order inside a frame: original boxes (input order), then new boxes by their track's first appearance.
    first_seen = np.empty(n, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, ~same_next])
    first_pos = np.minimum.reduceat(order, starts)  # boxes are in (frame, input) order, so min index = first
    first_seen[order] = np.repeat(first_pos, np.diff(np.r_[starts, n]))
    sort_key_old = np.arange(n)
    sort_key_new = n + first_seen[rep_right]
    merged = TrackBoxes.concat([boxes, new])
    frame_all = merged.frame
    sub_key = np.r_[sort_key_old, sort_key_new]
    return merged.take(np.lexsort((sub_key, frame_all)))


def prepare_tracks(
    gt: TrackBoxes,
    pred: TrackBoxes,
    timeline: Timeline,
    cfg: TrackingConfig,
    racks: RackBoxes | None = None,
    filter_boxes: bool = True,
) -> tuple[TrackBoxes, TrackBoxes]:
    """The devkit's pipeline before accumulation: filter both, average predicted scores, interpolate both."""
    validate_tracks(gt, timeline, cfg, "ground truth")
    validate_tracks(pred, timeline, cfg, "predictions")
    gt, pred = _order_by_frame(gt), _order_by_frame(pred)
    if filter_boxes:
        gt = filter_tracks(gt, timeline, cfg, racks)
        pred = filter_tracks(pred, timeline, cfg, racks)
    pred = average_track_scores(pred, timeline)
    return interpolate_tracks(gt, timeline), interpolate_tracks(pred, timeline)
