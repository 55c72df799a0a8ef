"""Detector + tracker quality on a log with ground truth, scored like STRIDE-QA table 6.

Detection: nuScenes detection metrics (devkit-identical), mAP and TP errors averaged over the classes the log's
ground truth has. Tracking: the tracker's active tracks per frame, scored with the nuScenes tracking metrics
(devkit-identical): AMOTA, AMOTP, recall and ID switches over the tracking classes present.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from stridegen.core import registry
from stridegen.core.boxes import Boxes
from stridegen.eval.detection.data import DetectionConfig, DetectionMetrics
from stridegen.eval.detection.evaluate import evaluate_detection
from stridegen.eval.detection.gt import filter_eval_boxes, gather_detection_gt
from stridegen.formats.detection_boxes import to_detection_boxes
from stridegen.logs.base import LogReader
from stridegen.pipeline.detect.base import Detector
from stridegen.pipeline.results import track_scene_rows
from stridegen.pipeline.track import SceneTracker, TrackerConfig


def validate_detector(
    reader: LogReader, detector: Detector, cfg: DetectionConfig | None = None
) -> tuple[DetectionMetrics, dict[str, float]]:
    """Run ``detector`` on every frame and score it: see ``score_detections``."""
    samples = [(f.token, detector.detect(f)) for s in reader.scenes() for f in s.frames]
    return score_detections(reader, samples, cfg)


def score_detections(
    reader: LogReader, samples: list[tuple[str, Boxes]], cfg: DetectionConfig | None = None
) -> tuple[DetectionMetrics, dict[str, float]]:
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


def detector_options(detector: str, profile: str, seed: int) -> dict[str, Any]:
    """The options a validation gives the detector backend ``detector`` before the user's, read from its registered
    factory (nothing is built): the backend's own ``validation_options`` (the oracle's minimum of one LiDAR point,
    so that it emits what the evaluation keeps of the ground truth and scores perfectly), and ``profile`` and
    ``seed`` when the factory takes them (the simulated detector's error profile and seed)."""
    options = dict(getattr(registry.resolve("detector", detector), "validation_options", {}))
    for key, value in (("profile", profile), ("seed", seed)):
        if registry.accepts("detector", detector, key):
            options[key] = value
    return options


@dataclass
class ValidationReport:
    detection: dict[str, float]  # mAP, mATE, mASE, mAOE, mAVE
    tracking: dict[str, float]  # AMOTA, AMOTP, recall, IDSW
    nds_all_classes: float
    n_frames: int


def tracking_results(reader: LogReader, samples: Mapping[str, Boxes], tracker: TrackerConfig | None = None) -> dict:
    """Track each scene's per-sample detections; the active tracks as a nuScenes tracking-results dict."""
    results: dict[str, list[dict]] = {}
    for scene in reader.scenes():
        results.update(track_scene_rows(scene, [samples[f.token] for f in scene.frames], SceneTracker(tracker)))
    return results


def validate_log(reader: LogReader, detector: Detector, tracker: TrackerConfig | None = None) -> ValidationReport:
    from stridegen.eval.tracking.data import TrackingConfig
    from stridegen.eval.tracking.evaluate import evaluate_tracking, results_to_boxes
    from stridegen.eval.tracking.gt import gather_tracking_gt
    from stridegen.formats.results_json import LIDAR_ONLY_META
    from stridegen.formats.tracking_results import parse_tracking_results

    frames = [f for s in reader.scenes() for f in s.frames]
    samples = {f.token: detector.detect(f) for f in frames}
    det_metrics, det_row = score_detections(reader, list(samples.items()))

    gt = gather_tracking_gt(reader.scenes(), reader.root)
    results = parse_tracking_results(
        {"meta": dict(LIDAR_ONLY_META), "results": tracking_results(reader, samples, tracker)},
        "<tracker output>",
        known_sample_tokens=gt.sample_tokens,
    )
    result = evaluate_tracking(gt.boxes, results_to_boxes(results, gt), gt.timeline, TrackingConfig(), gt.racks)
    present = sorted(set(np.asarray(gt.boxes.class_name).astype(str).tolist()))

    def mean_over_present(metric: str) -> float:
        values = np.array([result.label_metrics[metric][c] for c in present], dtype=np.float64)
        return float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")

    tracking = {
        "AMOTA": mean_over_present("amota"),
        "AMOTP": mean_over_present("amotp"),
        "recall": mean_over_present("recall"),
        "IDSW": float(np.nansum([result.label_metrics["ids"][c] for c in present])),
    }
    return ValidationReport(det_row, tracking, det_metrics.nd_score, len(frames))
