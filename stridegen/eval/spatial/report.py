"""Write a spatial QA scoring: ``metrics.json`` (the metrics dict), ``metrics.md`` (its tables, rates in percent)
and ``items.jsonl`` (one line per question: truth, prediction, what was read, correct, error, reason)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from stridegen.eval.spatial.algo import form_names
from stridegen.eval.spatial.data import QUALITATIVE_FORMS
from stridegen.eval.spatial.evaluate import SpatialScores
from stridegen.eval.spatial.parse import NO_PREDICTION

_BREAKDOWNS: tuple[tuple[str, str], ...] = (
    ("by_category", "Category"),
    ("by_predicate", "Predicate"),
    ("by_object_class", "Object class"),
    ("by_distance_bin", "Distance of the first region"),
)


def _pct(rate: float | None) -> str:
    return "-" if rate is None else f"{100 * rate:.1f}"


def _number(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def _json_value(value: Any) -> Any:
    """``value`` if it is strict JSON, else its ``repr`` (a NaN or infinite number as given)."""
    try:
        json.dumps(value, allow_nan=False)
    except ValueError:
        return repr(value)
    return value


def _median_error(row: dict[str, Any]) -> str:
    """The median error of a row's quantitative answers, per form ("-" when none)."""
    errors = row.get("quantitative", {}).get("error", {})
    parts = []
    for form, stats in errors.items():
        key = "rel_error" if "rel_error" in stats else next(iter(stats))
        if stats[key].get("n"):
            unit = "" if key == "rel_error" else f" {key.rsplit('_', 1)[-1]}"
            value = f"{100 * stats[key]['p50']:.1f} %" if key == "rel_error" else f"{stats[key]['p50']:.3g}{unit}"
            parts.append(f"{form} {value}")
    return ", ".join(parts) or "-"


def _table(title: str, rows: dict[str, dict[str, Any]]) -> list[str]:
    headers = [title, "n", "correct %", "qualitative acc. %", "quantitative success %", "median error", "invalid"]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for name, row in rows.items():
        cells = [
            name,
            str(row["n"]),
            _pct(row["rate"]),
            _pct(row.get("qualitative", {}).get("accuracy")),
            _pct(row.get("quantitative", {}).get("success_rate")),
            _median_error(row),
            str(row["invalid"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def markdown_report(metrics: dict[str, Any]) -> str:
    """Markdown: the bands, the overall row, one table per breakdown, invalid answers by reason, the counts."""
    parts = [f"# Spatial QA scores (rule-based, parser `{metrics['parser']}`)", "", "Tolerance bands:", ""]
    parts += [f"- {form}: {band}" for form, band in metrics["tolerance"].items()]
    parts += ["", *_table("", {"all": metrics["overall"]}), ""]
    for key, title in _BREAKDOWNS:
        parts += [f"## By {title.lower()}", "", *_table(title, metrics[key]), ""]
    parts += ["## Invalid answers (failures) by reason", ""]
    reasons = metrics["invalid_reasons"]
    parts += [f"- {reason}: {count}" for reason, count in reasons.items()] or ["none"]
    parts += ["", "## Inputs", "", "```", json.dumps(metrics["counts"], indent=2), "```", ""]
    return "\n".join(parts)


def item_rows(scores: SpatialScores) -> list[dict[str, Any]]:
    """One JSON-ready row per item."""
    items, answers, judged = scores.items, scores.answers, scores.judged
    forms = form_names(items.form)
    rows = []
    for i, qid in enumerate(items.question_id):
        qualitative = forms[i] in QUALITATIVE_FORMS
        pred = scores.predictions[i]
        rows.append(
            {
                "question_id": qid,
                "category": str(items.category[i]),
                "predicate": str(items.predicate[i]),
                "object_class": str(items.object_class[i]),
                "form": forms[i],
                "distance_m": _number(float(items.distance_m[i])),
                "distance_bin": scores.bin_names[int(scores.distance_bin[i])],
                "gt": str(items.gt_label[i]) if qualitative else _number(float(items.gt_value[i])),
                "pred": None if pred is NO_PREDICTION else _json_value(pred),
                "read": (answers.label[i] or None) if qualitative else _number(float(answers.value[i])),
                "correct": bool(judged.correct[i]),
                "abs_error": _number(float(judged.abs_error[i])),
                "rel_error": _number(float(judged.rel_error[i])),
                "reason": answers.reason[i],
            }
        )
    return rows


def write_reports(scores: SpatialScores, metrics: dict[str, Any], out: str | Path) -> dict[str, Path]:
    """Write ``metrics.json``, ``metrics.md`` and ``items.jsonl`` into ``out`` (created); their paths by kind."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"json": folder / "metrics.json", "md": folder / "metrics.md", "items": folder / "items.jsonl"}
    paths["json"].write_text(json.dumps(metrics, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    paths["md"].write_text(markdown_report(metrics), encoding="utf-8")
    with paths["items"].open("w", encoding="utf-8") as f:
        for row in item_rows(scores):
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return paths
