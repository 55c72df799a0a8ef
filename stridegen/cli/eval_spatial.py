"""`stridegen eval spatial`: rule-based scores of the spatial questions (object-centric and ego-centric) of a built
dataset: accuracy of qualitative answers, success rate within a tolerance band and error distribution of
quantitative ones (``stridegen.eval.spatial``, docs/metrics-spatial.md)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from stridegen.cli.errors import guarded


@guarded
def eval_spatial(
    dataset: Path = typer.Option(..., "--dataset", help="stridegen dataset folder (its spatial QA is scored)."),
    pred: Path = typer.Option(..., "--pred", help="Predictions JSONL: {question_id, pred} per line."),
    out: Path = typer.Option(..., "--out", help="Output folder: metrics.json, metrics.md, items.jsonl."),
) -> None:
    """Score spatial QA answers: accuracy (yes/no, left/right), success rate within a band and error (numbers)."""
    from stridegen.eval.spatial.evaluate import evaluate_files
    from stridegen.eval.spatial.report import write_reports

    scores, metrics = evaluate_files(dataset, pred)
    paths = write_reports(scores, metrics, out)
    overall = metrics["overall"]
    summary = {
        "questions": overall["n"],
        "correct": overall["rate"],
        "qualitative_accuracy": overall.get("qualitative", {}).get("accuracy"),
        "quantitative_success_rate": overall.get("quantitative", {}).get("success_rate"),
        "invalid": overall["invalid"],
    }
    typer.echo(json.dumps(summary, indent=2))
    missing = metrics["counts"]["missing_predictions"]
    if missing:
        typer.echo(f"note: {missing} spatial questions have no prediction (scored as failures)", err=True)
    typer.echo(f"wrote {', '.join(str(p) for p in paths.values())}")
