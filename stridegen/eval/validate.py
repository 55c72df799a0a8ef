"""`stridegen validate`: detector + tracker over a log with ground truth, scored like STRIDE-QA table 6.

Detection: nuScenes detection metrics (devkit-identical), mAP and TP errors averaged over the classes the log's
ground truth has. Tracking: the tracker's active tracks per frame, scored with the nuScenes tracking metrics
(devkit-identical): AMOTA, AMOTP, recall and ID switches over the tracking classes present.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from stridegen.core.vocabulary import TRACKING_CLASSES
from stridegen.eval.detector_validation import score_detections
from stridegen.logs.base import LogReader
from stridegen.pipeline.detect.base import Detector
from stridegen.pipeline.track import TrackerConfig, track_scene


@dataclass
class ValidationReport:
    detection: dict[str, float]  # mAP, mATE, mASE, mAOE, mAVE
    tracking: dict[str, float]  # AMOTA, AMOTP, recall, IDSW
    nds_all_classes: float
    n_frames: int


def tracking_results(reader: LogReader, samples: dict[str, object], tracker: TrackerConfig | None = None) -> dict:
    """Track each scene's per-sample detections; the active tracks as a nuScenes tracking-results dict."""
    results: dict[str, list[dict]] = {}
    for scene in reader.scenes():
        tracked = track_scene([samples[f.token] for f in scene.frames], scene.timestamps_s, tracker)
        for frame, boxes in zip(scene.frames, tracked, strict=True):
            quat = boxes.extras.get("rotation_global")
            rows = []
            for i in np.flatnonzero(np.isin(boxes.label, TRACKING_CLASSES)):
                rotation = quat[i] if quat is not None else np.r_[np.cos(boxes.yaw[i] / 2), 0, 0,
                                                                   np.sin(boxes.yaw[i] / 2)]
                rows.append({"sample_token": frame.token, "translation": boxes.center[i].tolist(),
                             "size": boxes.size_lwh[i, [1, 0, 2]].tolist(), "rotation": list(map(float, rotation)),
                             "velocity": np.nan_to_num(boxes.velocity[i, :2]).tolist(),
                             "tracking_id": f"{scene.name}/{boxes.track_id[i]}",
                             "tracking_name": str(boxes.label[i]), "tracking_score": float(boxes.score[i])})
            results[frame.token] = rows
    return results


def validate_log(reader: LogReader, detector: Detector, tracker: TrackerConfig | None = None) -> ValidationReport:
    from stridegen.eval.tracking import TrackingConfig, evaluate_tracking
    from stridegen.eval.tracking_cli import results_to_boxes
    from stridegen.eval.tracking_gt import gather_tracking_gt
    from stridegen.formats.tracking_results import parse_tracking_results

    frames = [f for s in reader.scenes() for f in s.frames]
    samples = {f.token: detector.detect(f) for f in frames}
    det_metrics, det_row = score_detections(reader, list(samples.items()))

    gt = gather_tracking_gt(reader.scenes(), reader.root)
    results = parse_tracking_results({"meta": {}, "results": tracking_results(reader, samples, tracker)},
                                     "<tracker output>", known_sample_tokens=gt.sample_tokens)
    result = evaluate_tracking(gt.boxes, results_to_boxes(results, gt), gt.timeline, TrackingConfig(), gt.racks)
    present = sorted(set(np.asarray(gt.boxes.class_name).astype(str).tolist()))

    def mean_over_present(metric: str) -> float:
        values = np.array([result.label_metrics[metric][c] for c in present], dtype=np.float64)
        return float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")

    tracking = {"AMOTA": mean_over_present("amota"), "AMOTP": mean_over_present("amotp"),
                "recall": mean_over_present("recall"),
                "IDSW": float(np.nansum([result.label_metrics["ids"][c] for c in present]))}
    return ValidationReport(det_row, tracking, det_metrics.nd_score, len(frames))


def validate(
    log_root: Path | None = None,
    detector: str = "simulated",
    profile: str = "bevfusion",
    seed: int = 0,
    max_age: int = 3,
) -> None:
    """Detection and tracking quality on a log with ground truth, printed like STRIDE-QA table 6.

    Without LOG_ROOT the embedded synthetic default is used. --detector oracle must report perfect scores.
    """
    import typer
    from rich.console import Console
    from rich.table import Table

    from stridegen.core.errors import StrideGenError
    from stridegen.logs import open_log
    from stridegen.pipeline.detect import make_detector

    try:
        if log_root is None:
            from stridegen.logs.synthetic.default import ensure_default_log

            log_root = ensure_default_log()
        # The oracle emits what the evaluation keeps: ground truth with at least one LiDAR point.
        options = ({"profile": profile, "seed": seed} if detector == "simulated"
                   else {"min_lidar_points": 1} if detector == "oracle" else {})
        report = validate_log(open_log(log_root), make_detector(detector, **options), TrackerConfig(max_age=max_age))
    except StrideGenError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    table = Table(title=f"{detector}{' (' + profile + ')' if detector == 'simulated' else ''} on {log_root} "
                        f"({report.n_frames} frames)")
    cells = {**report.detection, **report.tracking}
    for key in cells:
        table.add_column(key, justify="right")
    table.add_row(*(f"{v:.0f}" if k == "IDSW" else f"{v:.3f}" for k, v in cells.items()))
    Console().print(table)
    Console().print(f"means over the classes present in the ground truth; NDS over all 10 classes: "
                    f"{report.nds_all_classes:.3f}")
