"""Run a detector over a log with ground truth and score it with the nuScenes detection metrics."""

from __future__ import annotations

import numpy as np

from stridegen.core.boxes import Boxes
from stridegen.eval.detection import DetectionConfig, DetectionMetrics, evaluate_detection
from stridegen.eval.detection_gt import filter_eval_boxes, gather_detection_gt
from stridegen.formats.detection_boxes import to_detection_boxes
from stridegen.logs.base import LogReader
from stridegen.pipeline.detect.base import Detector


def validate_detector(reader: LogReader, detector: Detector,
                      cfg: DetectionConfig | None = None) -> tuple[DetectionMetrics, dict[str, float]]:
    """Run ``detector`` on every frame and score it: see ``score_detections``."""
    samples = [(f.token, detector.detect(f)) for s in reader.scenes() for f in s.frames]
    return score_detections(reader, samples, cfg)


def score_detections(reader: LogReader, samples: list[tuple[str, Boxes]],
                     cfg: DetectionConfig | None = None) -> tuple[DetectionMetrics, dict[str, float]]:
    """(devkit-identical metrics over all 10 classes, a Table-6 style row averaged over the classes with GT).

    Classes without any ground truth score AP 0 and error 1 in the devkit's means; a log that lacks some classes
    (the synthetic world has no trailers or construction vehicles) is compared with published figures through the
    row averaged over the classes it has.
    """
    cfg = cfg or DetectionConfig.cvpr_2019()
    gt, context = gather_detection_gt(reader)
    gt_f, _ = filter_eval_boxes(gt, context, cfg.class_range)
    pred_f, _ = filter_eval_boxes(to_detection_boxes(samples), context, cfg.class_range)
    metrics, _ = evaluate_detection(gt_f, pred_f, cfg)
    present = sorted(set(gt_f.detection_name.tolist()))
    row = {"mAP": float(np.mean([metrics.mean_dist_aps[c] for c in present])) if present else float("nan")}
    for key, metric in (("mATE", "trans_err"), ("mASE", "scale_err"), ("mAOE", "orient_err"), ("mAVE", "vel_err")):
        values = [metrics.label_tp_errors[c][metric] for c in present]
        row[key] = float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")
    return metrics, row
