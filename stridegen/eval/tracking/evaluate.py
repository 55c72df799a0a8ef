"""nuScenes tracking evaluation, orchestrated: prepare and accumulate raw boxes (devkit ``TrackingEval``), and the
whole run on a log's ground truth and a results file (load, select the covered scenes, evaluate)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from stridegen.core.errors import PredictionFormatError
from stridegen.eval.tracking.algo import evaluate_prepared
from stridegen.eval.tracking.data import RackBoxes, Timeline, TrackBoxes, TrackingConfig, TrackingResult
from stridegen.eval.tracking.gt import TrackingGroundTruth, load_tracking_gt
from stridegen.eval.tracking.prepare import prepare_tracks
from stridegen.formats.results_json import DroppedMeta, summary_meta
from stridegen.formats.tracking_results import TrackingResults, load_tracking_results


def evaluate_tracking(
    gt: TrackBoxes,
    pred: TrackBoxes,
    timeline: Timeline,
    cfg: TrackingConfig | None = None,
    racks: RackBoxes | None = None,
    filter_boxes: bool = True,
) -> TrackingResult:
    """The nuScenes tracking evaluation of raw GT and predicted boxes: prepare (filter, average, interpolate)
    then accumulate every class at every recall threshold."""
    cfg = cfg or TrackingConfig()
    gt_p, pred_p = prepare_tracks(gt, pred, timeline, cfg, racks, filter_boxes)
    result = evaluate_prepared(gt_p, pred_p, timeline, cfg)
    result.info.update(
        {
            "gt_boxes_in": len(gt),
            "gt_boxes_evaluated": len(gt_p),
            "pred_boxes_in": len(pred),
            "pred_boxes_evaluated": len(pred_p),
        }
    )
    return result


@dataclass
class TrackingReport:
    """Metrics plus what happened to the inputs on the way."""

    result: TrackingResult
    scenes_evaluated: list[str]
    scenes_skipped: list[str]  # log scenes with no sample in the results file
    n_samples: int
    meta: dict  # the results file's meta flags; only these reach the summary (summary_meta)
    nan_velocity: int
    total_time_s: float
    info: dict = field(default_factory=dict)
    meta_dropped: DroppedMeta = field(default_factory=DroppedMeta)  # other meta keys: counted and named only

    def to_dict(self) -> dict:
        out = self.result.serialize()
        out.update(
            {
                **summary_meta(self.meta, self.meta_dropped),
                "scenes_evaluated": self.scenes_evaluated,
                "scenes_skipped": self.scenes_skipped,
                "n_samples": self.n_samples,
                "pred_nan_velocity": self.nan_velocity,
                "total_time": self.total_time_s,
            }
        )
        return out


def results_to_boxes(results: TrackingResults, gt: TrackingGroundTruth) -> TrackBoxes:
    """Predicted boxes indexed on the ground truth's timeline (tokens were checked against it)."""
    assert gt.timeline.token is not None  # a log's timeline has its sample tokens
    frame_of = {str(t): i for i, t in enumerate(gt.timeline.token)}
    frame = np.array([frame_of[str(t)] for t in results.sample_token], dtype=np.int64)
    return TrackBoxes(
        frame, results.tracking_id, results.tracking_name, results.translation, results.tracking_score, results.num_pts
    )


def covered_scenes(results: TrackingResults, gt: TrackingGroundTruth) -> np.ndarray:
    """[n_scenes] whether the results list samples of each scene. A scene listed only in part is an error: the
    devkit requires every sample of an evaluated scene (an empty list where nothing was tracked)."""
    present = set(results.sample_tokens)
    assert gt.timeline.token is not None  # a log's timeline has its sample tokens
    tokens = [str(t) for t in gt.timeline.token]
    has = np.array([t in present for t in tokens], dtype=bool)
    n_scenes = len(gt.scene_names)
    covered = np.bincount(gt.timeline.scene, weights=has, minlength=n_scenes)
    total = np.bincount(gt.timeline.scene, minlength=n_scenes)
    partial = np.flatnonzero((covered > 0) & (covered < total))
    if partial.size:
        s = int(partial[0])
        missing = [tokens[i] for i in np.flatnonzero((gt.timeline.scene == s) & ~has)]
        raise PredictionFormatError(
            results.path,
            f"scene {gt.scene_names[s]!r}: {len(missing)} of its "
            f"{int(total[s])} samples have no entry in 'results', e.g. "
            f"{missing[:3]} (give them an empty list)",
        )
    return covered > 0


def evaluate_log(
    gt_root: Path, pred_path: Path, cfg: TrackingConfig | None = None, version: str | None = None
) -> TrackingReport:
    """Load a log's tracking GT and a results file; evaluate the scenes the results cover."""
    start = time.perf_counter()
    cfg = cfg or TrackingConfig()
    gt = load_tracking_gt(gt_root, version)
    results = load_tracking_results(
        pred_path, cfg.class_names, cfg.max_boxes_per_sample, known_sample_tokens=gt.sample_tokens
    )
    keep = covered_scenes(results, gt)
    if not keep.any():
        raise PredictionFormatError(pred_path, "the results cover no scene of the ground truth")
    skipped = [n for n, k in zip(gt.scene_names, keep, strict=True) if not k]
    gt = gt.select_scenes(keep)
    result = evaluate_tracking(gt.boxes, results_to_boxes(results, gt), gt.timeline, cfg, gt.racks)
    return TrackingReport(
        result,
        list(gt.scene_names),
        skipped,
        len(gt.timeline),
        results.meta,
        results.nan_velocity,
        time.perf_counter() - start,
        meta_dropped=results.meta_dropped,
    )
