"""``stridegen eval tracking``: nuScenes tracking metrics of a results file against a log's ground truth."""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import typer

from stridegen.core.errors import PredictionFormatError, StrideGenError
from stridegen.eval.tracking import (
    TrackBoxes,
    TrackingConfig,
    TrackingResult,
    evaluate_tracking,
)
from stridegen.eval.tracking_gt import TrackingGroundTruth, load_tracking_gt
from stridegen.formats.tracking_results import TrackingResults, load_tracking_results

# Two per-class tables (the devkit prints all of TRACKING_METRICS in one row; split to fit 80 columns) and the
# number formats of devkit ``metric_name_to_print_format``.
_TABLES = (("scores", ("amota", "amotp", "recall", "motar", "mota", "motp", "faf")),
           ("counts", ("gt", "tp", "fp", "fn", "ids", "frag", "mt", "ml", "tid", "lgd")))
_FLOAT3 = {"amota", "amotp", "motar", "recall", "mota", "motp"}
_FLOAT2 = {"tid", "lgd"}
_FLOAT1 = {"faf"}


@dataclass
class TrackingReport:
    """Metrics plus what happened to the inputs on the way."""

    result: TrackingResult
    scenes_evaluated: list[str]
    scenes_skipped: list[str]  # log scenes with no sample in the results file
    n_samples: int
    meta: dict
    nan_velocity: int
    total_time_s: float
    info: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        out = self.result.serialize()
        out.update({
            "meta": self.meta,
            "scenes_evaluated": self.scenes_evaluated,
            "scenes_skipped": self.scenes_skipped,
            "n_samples": self.n_samples,
            "pred_nan_velocity": self.nan_velocity,
            "total_time": self.total_time_s,
        })
        return out


def results_to_boxes(results: TrackingResults, gt: TrackingGroundTruth) -> TrackBoxes:
    """Predicted boxes indexed on the ground truth's timeline (tokens were checked against it)."""
    frame_of = {str(t): i for i, t in enumerate(gt.timeline.token)}
    frame = np.array([frame_of[str(t)] for t in results.sample_token], dtype=np.int64)
    return TrackBoxes(frame, results.tracking_id, results.tracking_name, results.translation,
                      results.tracking_score, results.num_pts)


def covered_scenes(results: TrackingResults, gt: TrackingGroundTruth) -> np.ndarray:
    """[n_scenes] whether the results list samples of each scene. A scene listed only in part is an error: the
    devkit requires every sample of an evaluated scene (an empty list where nothing was tracked)."""
    present = set(results.sample_tokens)
    tokens = [str(t) for t in gt.timeline.token]
    has = np.array([t in present for t in tokens], dtype=bool)
    n_scenes = len(gt.scene_names)
    covered = np.bincount(gt.timeline.scene, weights=has, minlength=n_scenes)
    total = np.bincount(gt.timeline.scene, minlength=n_scenes)
    partial = np.flatnonzero((covered > 0) & (covered < total))
    if partial.size:
        s = int(partial[0])
        missing = [tokens[i] for i in np.flatnonzero((gt.timeline.scene == s) & ~has)]
        raise PredictionFormatError(results.path, f"scene {gt.scene_names[s]!r}: {len(missing)} of its "
                                                  f"{int(total[s])} samples have no entry in 'results', e.g. "
                                                  f"{missing[:3]} (give them an empty list)")
    return covered > 0


def evaluate_log(gt_root: Path, pred_path: Path, cfg: TrackingConfig | None = None,
                 version: str | None = None) -> TrackingReport:
    """Load a log's tracking GT and a results file; evaluate the scenes the results cover."""
    start = time.perf_counter()
    cfg = cfg or TrackingConfig()
    gt = load_tracking_gt(gt_root, version)
    results = load_tracking_results(pred_path, cfg.class_names, cfg.max_boxes_per_sample,
                                    known_sample_tokens=gt.sample_tokens)
    keep = covered_scenes(results, gt)
    if not keep.any():
        raise PredictionFormatError(pred_path, "the results cover no scene of the ground truth")
    skipped = [n for n, k in zip(gt.scene_names, keep, strict=True) if not k]
    gt = gt.select_scenes(keep)
    result = evaluate_tracking(gt.boxes, results_to_boxes(results, gt), gt.timeline, cfg, gt.racks)
    return TrackingReport(result, list(gt.scene_names), skipped, len(gt.timeline), results.meta,
                          results.nan_velocity, time.perf_counter() - start)


def _fmt(metric: str, value: float) -> str:
    if math.isnan(value):
        return "-"
    if metric in _FLOAT3:
        return f"{value:.3f}"
    if metric in _FLOAT2:
        return f"{value:.2f}"
    if metric in _FLOAT1:
        return f"{value:.1f}"
    return f"{value:.0f}"


def print_report(report: TrackingReport) -> None:
    from rich.console import Console
    from rich.table import Table

    result = report.result
    console = Console()
    for title, metrics in _TABLES:
        table = Table(title=f"nuScenes tracking metrics: {title}")
        table.add_column("class", no_wrap=True)
        for metric in metrics:
            table.add_column(metric.upper(), justify="right", no_wrap=True)
        for cls in result.cfg.class_names:
            table.add_row(cls, *(_fmt(m, result.label_metrics[m][cls]) for m in metrics))
        table.add_row("all", *(_fmt(m, result.summary(m)) for m in metrics), style="bold")
        console.print(table)
    info = result.info
    console.print(f"AMOTA {_fmt('amota', result.summary('amota'))}  AMOTP {_fmt('amotp', result.summary('amotp'))}"
                  f"  MOTA {_fmt('mota', result.summary('mota'))}  IDS {_fmt('ids', result.summary('ids'))}")
    console.print(f"scenes {len(report.scenes_evaluated)} evaluated, {len(report.scenes_skipped)} skipped (no "
                  f"sample in the results); samples {report.n_samples}; GT boxes {info.get('gt_boxes_in')} -> "
                  f"{info.get('gt_boxes_evaluated')} after filtering + interpolation; predictions "
                  f"{info.get('pred_boxes_in')} -> {info.get('pred_boxes_evaluated')}; {report.total_time_s:.2f} s")


def eval_tracking(
    gt: Path = typer.Option(..., "--gt", help="Log root with ground truth (e.g. a nuScenes dataroot)."),
    pred: Path = typer.Option(..., "--pred", help="nuScenes tracking results JSON."),
    out: Path | None = typer.Option(None, "--out", help="Write the JSON summary here."),
    config: Path | None = typer.Option(None, "--config",
                                       help="Tracking config YAML or devkit JSON (default: tracking_nips_2019)."),
    version: str | None = typer.Option(None, "--version", help="Dataset version folder, e.g. v1.0-mini."),
) -> None:
    """nuScenes tracking metrics (AMOTA, AMOTP, MOTA, MOTP, IDS, FRAG, ...) of a results file."""
    try:
        cfg = TrackingConfig.from_yaml(config) if config else TrackingConfig()
        report = evaluate_log(gt, pred, cfg, version)
    except StrideGenError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    print_report(report)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report.to_dict(), indent=2))
        typer.echo(f"wrote {out}")
