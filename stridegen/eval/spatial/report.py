"""Write a spatial QA scoring: ``metrics.json`` (the metrics dict), ``metrics.md`` (its tables, rates in percent)
and ``items.jsonl`` (one line per question: truth, prediction, what was read, correct, error, reason)."""

from __future__ import annotations

import json
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


def _numbers(values: Any) -> list[float | None]:
    """A float array as a list with None for NaN (strict JSON)."""
    return [None if v != v else v for v in values.tolist()]


def item_rows(scores: SpatialScores) -> list[dict[str, Any]]:
    """One JSON-ready row per item (columns turned into Python lists once, then zipped)."""
    items, answers, judged = scores.items, scores.answers, scores.judged
    forms = form_names(items.form)
    qualitative = [f in QUALITATIVE_FORMS for f in forms]
    gt = [
        label if q else value
        for q, label, value in zip(qualitative, items.gt_label.tolist(), _numbers(items.gt_value), strict=True)
    ]
    read = [
        (label or None) if q else value
        for q, label, value in zip(qualitative, answers.label, _numbers(answers.value), strict=True)
    ]
    preds = [p if isinstance(p, str) else None if p is NO_PREDICTION else _json_value(p) for p in scores.predictions]
    bins = [scores.bin_names[b] for b in scores.distance_bin.tolist()]
    columns = {
        "question_id": items.question_id,
        "category": [str(c) for c in items.category.tolist()],
        "predicate": [str(p) for p in items.predicate.tolist()],
        "object_class": [str(c) for c in items.object_class.tolist()],
        "form": forms,
        "distance_m": _numbers(items.distance_m),
        "distance_bin": bins,
        "gt": gt,
        "pred": preds,
        "read": read,
        "correct": judged.correct.tolist(),
        "abs_error": _numbers(judged.abs_error),
        "rel_error": _numbers(judged.rel_error),
        "reason": answers.reason,
    }
    names = list(columns)
    return [dict(zip(names, row, strict=True)) for row in zip(*columns.values(), strict=True)]


def write_reports(scores: SpatialScores, metrics: dict[str, Any], out: str | Path) -> dict[str, Path]:
    """Write ``metrics.json``, ``metrics.md`` and ``items.jsonl`` into ``out`` (created); their paths by kind."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"json": folder / "metrics.json", "md": folder / "metrics.md", "items": folder / "items.jsonl"}
    paths["json"].write_text(json.dumps(metrics, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    paths["md"].write_text(markdown_report(metrics), encoding="utf-8")
    encode = json.JSONEncoder(ensure_ascii=False).encode
    with paths["items"].open("w", encoding="utf-8") as f:
        f.writelines(encode(row) + "\n" for row in item_rows(scores))
    return paths
