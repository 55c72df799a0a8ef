"""nuScenes detection evaluation, orchestrated: load the ground truth of a log and a results file, filter both as
the devkit does (``filter_eval_boxes``), accumulate and compute the metrics (devkit ``DetectionEval``)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

from stridegen.eval.detection.algo import accumulate_all, metrics_from_data
from stridegen.eval.detection.data import DetectionConfig, DetectionMetrics
from stridegen.eval.detection.gt import FilterCounts, filter_eval_boxes, load_detection_gt
from stridegen.formats.detection_boxes import DetectionBoxes
from stridegen.formats.nuscenes_results import load_results
from stridegen.formats.results_json import DroppedMeta, summary_meta


def evaluate_detection(
    gt: DetectionBoxes, pred: DetectionBoxes, cfg: DetectionConfig | None = None
) -> tuple[DetectionMetrics, dict]:
    """nuScenes detection metrics of already-filtered boxes: (metrics, metric data per (class, threshold))."""
    cfg = cfg or DetectionConfig.cvpr_2019()
    gt.validate("ground truth")
    pred.validate("predictions")
    start = time.perf_counter()
    md = accumulate_all(gt, pred, cfg.class_names, cfg.dist_ths)
    metrics = metrics_from_data(md, cfg)
    metrics.eval_time_s = time.perf_counter() - start
    return metrics, md


@dataclass
class DetectionReport:
    """Metrics plus what happened to the inputs on the way (counts a user should see)."""

    metrics: DetectionMetrics
    gt_counts: FilterCounts
    pred_counts: FilterCounts
    n_samples: int
    nan_velocity: int
    meta: dict  # the results file's meta flags; only these reach the summary (summary_meta)
    total_time_s: float
    meta_dropped: DroppedMeta = field(default_factory=DroppedMeta)  # other meta keys: counted and named only

    def to_dict(self) -> dict:
        out = _json_safe(self.metrics.to_dict())
        assert isinstance(out, dict)
        out.update(
            {
                "summary_row": _json_safe(self.metrics.summary_row()),
                "class_table": _json_safe(self.metrics.class_table()),
                "n_samples": self.n_samples,
                "gt_filter_counts": self.gt_counts.to_dict(),
                "pred_filter_counts": self.pred_counts.to_dict(),
                "pred_nan_velocity": self.nan_velocity,
                **summary_meta(self.meta, self.meta_dropped),
                "total_time": self.total_time_s,
            }
        )
        return out


def _json_safe(value: object) -> object:
    """NaN -> None (exempt TP errors), so that the summary is standard JSON."""
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def evaluate_log(
    gt_root: Path, pred_path: Path, cfg: DetectionConfig | None = None, version: str | None = None
) -> DetectionReport:
    """Load the ground truth of a log and a results file, filter both as the devkit does, compute the metrics."""
    start = time.perf_counter()
    cfg = cfg or DetectionConfig.cvpr_2019()
    gt, context = load_detection_gt(gt_root, version)
    loaded = load_results(
        pred_path, known_sample_tokens=context.sample_tokens, max_boxes_per_sample=cfg.max_boxes_per_sample
    )
    gt_f, gt_counts = filter_eval_boxes(gt, context, cfg.class_range)
    pred_f, pred_counts = filter_eval_boxes(loaded.boxes, context, cfg.class_range)
    metrics, _ = evaluate_detection(gt_f, pred_f, cfg)
    return DetectionReport(
        metrics,
        gt_counts,
        pred_counts,
        len(context.sample_tokens),
        loaded.nan_velocity,
        loaded.meta,
        time.perf_counter() - start,
        loaded.meta_dropped,
    )
