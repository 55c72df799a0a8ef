"""`stridegen eval spatial`: rule-based scores of the spatial questions (object-centric and ego-centric) of a built
dataset: accuracy of qualitative answers, success rate within a tolerance band and error distribution of
quantitative ones (``stridegen.eval.spatial``, docs/metrics-spatial.md)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from stridegen.cli.errors import guarded


def _percent(rate: float | None) -> str:
    return "-" if rate is None else f"{rate * 100:.1f}"


def summary_table(summary: dict) -> str:
    """The overall scores as a text table for a person: rates in % (``-`` where no question of that kind)."""
    rows = [
        ("questions", str(summary["questions"])),
        ("correct (%)", _percent(summary["correct"])),
        ("qualitative accuracy (%)", _percent(summary["qualitative_accuracy"])),
        ("quantitative success rate (%)", _percent(summary["quantitative_success_rate"])),
        ("invalid answers", str(summary["invalid"])),
    ]
    width = max(len(label) for label, _ in rows)
    value_width = max(len(value) for _, value in rows)
    return "\n".join(["Spatial QA summary"] + [f"{label:<{width}}  {value:>{value_width}}" for label, value in rows])


@guarded
def eval_spatial(
    dataset: Path = typer.Option(..., "--dataset", help="stridegen dataset folder (its spatial QA is scored)."),
    pred: Path = typer.Option(..., "--pred", help="Predictions JSONL: {question_id, pred} per line."),
    out: Path = typer.Option(..., "--out", help="Output folder: metrics.json, metrics.md, items.jsonl."),
    as_json: bool = typer.Option(
        False, "--json", help="Print the summary as JSON (rates on a 0-1 scale) instead of a table in %."
    ),
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
    typer.echo(json.dumps(summary, indent=2) if as_json else summary_table(summary))
    missing = metrics["counts"]["missing_predictions"]
    if missing:
        typer.echo(f"note: {missing} spatial questions have no prediction (scored as failures)", err=True)
    typer.echo(f"wrote {', '.join(str(p) for p in paths.values())}")
