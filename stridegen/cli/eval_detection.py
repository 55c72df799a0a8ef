"""`stridegen eval detection`: nuScenes detection metrics of a results file against a log's ground truth."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from stridegen.cli.errors import guarded

if TYPE_CHECKING:  # the evaluator (numpy, the log readers) is imported on use only (start-up, issue 35)
    from stridegen.eval.detection.data import DetectionMetrics
    from stridegen.eval.detection.evaluate import DetectionReport

ABSENT_CLASSES_NOTE = (
    "mAP and NDS average over all {n} classes of the config: a class absent from the ground truth counts as AP 0 "
    "(the nuScenes devkit's rule); `stridegen validate` leaves such classes out, so its mAP is higher on the same data"
)


def _fmt(value: float, digits: int = 4) -> str:
    return "-" if math.isnan(value) else f"{value:.{digits}f}"


def short_row(metrics: DetectionMetrics) -> str:
    """One line in the shape of a paper table row (STRIDE-QA Table 6 style): mAP, mATE..mAAE, NDS."""
    row = metrics.summary_row()
    return " | ".join(f"{k} {_fmt(v)}" for k, v in row.items())


def print_report(report: DetectionReport) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    from stridegen.cli.terminal_tables import fitted_tables
    from stridegen.eval.detection.data import TP_METRIC_SHORT, TP_METRICS

    console = Console()
    m = report.metrics
    headers = [*(f"AP@{th:g}m" for th in m.cfg.dist_ths), "AP", *(TP_METRIC_SHORT[name][1:] for name in TP_METRICS)]
    rows = [
        (
            c,
            [
                *(_fmt(m.label_aps[c][th], 3) for th in m.cfg.dist_ths),
                _fmt(m.mean_dist_aps[c], 3),
                *(_fmt(m.label_tp_errors[c][name], 3) for name in TP_METRICS),
            ],
        )
        for c in m.cfg.class_names
    ]
    for table in fitted_tables("nuScenes detection: per class", "Class", headers, rows):  # split on 80 columns
        console.print(table)
    summary = Table(title="Summary", box=box.SIMPLE_HEAD)
    for key in m.summary_row():
        summary.add_column(key, justify="right")
    summary.add_row(*(_fmt(v) for v in m.summary_row().values()))
    console.print(summary)
    console.print(ABSENT_CLASSES_NOTE.format(n=len(m.cfg.class_names)), highlight=False)
    console.print(short_row(m))
    console.print(
        f"samples {report.n_samples}; GT boxes {report.gt_counts.total} -> {report.gt_counts.after_bike_rack}"
        f" after filtering; predictions {report.pred_counts.total} -> "
        f"{report.pred_counts.after_bike_rack}; predictions with NaN velocity (left out of mAVE): "
        f"{report.nan_velocity}; {report.total_time_s:.2f} s"
    )


@guarded
def eval_detection(
    gt: Path = typer.Option(..., "--gt", help="Log root with ground truth (e.g. a nuScenes dataroot)."),
    pred: Path = typer.Option(..., "--pred", help="nuScenes detection results JSON."),
    out: Path | None = typer.Option(None, "--out", help="Write the JSON summary here."),
    config: Path | None = typer.Option(None, "--config", help="Detection config YAML (default: detection_cvpr_2019)."),
    version: str | None = typer.Option(None, "--version", help="Dataset version folder, e.g. v1.0-mini."),
    as_json: bool = typer.Option(
        False, "--json", help="Print the JSON summary (the --out file) instead of the tables."
    ),
) -> None:
    """nuScenes detection metrics (mAP, mATE, mASE, mAOE, mAVE, mAAE, NDS) of a results file."""
    from stridegen.eval.detection.data import DetectionConfig
    from stridegen.eval.detection.evaluate import evaluate_log

    cfg = DetectionConfig.from_yaml(config) if config else DetectionConfig.cvpr_2019()
    report = evaluate_log(gt, pred, cfg, version)
    text = json.dumps(report.to_dict(), indent=2)
    if as_json:
        typer.echo(text)
    else:
        print_report(report)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
