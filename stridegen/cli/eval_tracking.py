"""``stridegen eval tracking``: nuScenes tracking metrics of a results file against a log's ground truth."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from stridegen.cli.errors import guarded

if TYPE_CHECKING:  # the evaluator (numpy, the log readers) is imported on use only (start-up, issue 35)
    from stridegen.eval.tracking.evaluate import TrackingReport

# Two per-class tables (the devkit prints all of TRACKING_METRICS in one row; split to fit 80 columns) and the
# number formats of devkit ``metric_name_to_print_format``.
_TABLES = (
    ("scores", ("amota", "amotp", "recall", "motar", "mota", "motp", "faf")),
    ("counts", ("gt", "tp", "fp", "fn", "ids", "frag", "mt", "ml", "tid", "lgd")),
)
_FLOAT3 = {"amota", "amotp", "motar", "recall", "mota", "motp"}
_FLOAT2 = {"tid", "lgd"}
_FLOAT1 = {"faf"}


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


def all_row_footnote(metrics: tuple[str, ...]) -> str:
    """How the "all" row aggregates ``metrics`` over the classes: counts summed, the rest averaged, as the devkit
    does (so the averaged GT is not the summed TP + FN)."""
    from stridegen.eval.tracking.data import SUMMED_METRICS

    summed = [m.upper() for m in metrics if m in SUMMED_METRICS]
    averaged = [m.upper() for m in metrics if m not in SUMMED_METRICS]
    parts = []
    if summed:
        parts.append(f"{', '.join(summed)} summed over the classes")
    if averaged:
        parts.append(f"{', '.join(averaged)} the mean over the classes with a value")
    note = f"all: {'; '.join(parts)}, as the nuScenes devkit reports them"
    return note + (" (GT is a mean, not TP + FN)" if "gt" in metrics and "tp" in metrics else "")


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
        console.print(all_row_footnote(metrics), highlight=False)
    info = result.info
    console.print(
        f"AMOTA {_fmt('amota', result.summary('amota'))}  AMOTP {_fmt('amotp', result.summary('amotp'))}"
        f"  MOTA {_fmt('mota', result.summary('mota'))}  IDS {_fmt('ids', result.summary('ids'))}"
    )
    console.print(
        f"scenes {len(report.scenes_evaluated)} evaluated, {len(report.scenes_skipped)} skipped (no "
        f"sample in the results); samples {report.n_samples}; GT boxes {info.get('gt_boxes_in')} -> "
        f"{info.get('gt_boxes_evaluated')} after filtering + interpolation; predictions "
        f"{info.get('pred_boxes_in')} -> {info.get('pred_boxes_evaluated')}; {report.total_time_s:.2f} s"
    )


@guarded
def eval_tracking(
    gt: Path = typer.Option(..., "--gt", help="Log root with ground truth (e.g. a nuScenes dataroot)."),
    pred: Path = typer.Option(..., "--pred", help="nuScenes tracking results JSON."),
    out: Path | None = typer.Option(None, "--out", help="Write the JSON summary here."),
    config: Path | None = typer.Option(
        None, "--config", help="Tracking config YAML or devkit JSON (default: tracking_nips_2019)."
    ),
    version: str | None = typer.Option(None, "--version", help="Dataset version folder, e.g. v1.0-mini."),
    as_json: bool = typer.Option(
        False, "--json", help="Print the JSON summary (the --out file) instead of the tables."
    ),
) -> None:
    """nuScenes tracking metrics (AMOTA, AMOTP, MOTA, MOTP, IDS, FRAG, ...) of a results file."""
    from stridegen.eval.tracking.data import TrackingConfig
    from stridegen.eval.tracking.evaluate import evaluate_log

    cfg = TrackingConfig.from_yaml(config) if config else TrackingConfig()
    report = evaluate_log(gt, pred, cfg, version)
    text = json.dumps(report.to_dict(), indent=2)
    if as_json:
        typer.echo(text)
    else:
        print_report(report)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        typer.echo(f"wrote {out}", err=as_json)
