"""The report's blocks of a model's answers: the rule-based spatial scores (``eval spatial``), a result beside its
blind baseline (the same model answering without the images), and the worst answers with their Set-of-Mark image.

Rates are percentages of the rows' ``rate`` (every answer), ``qualitative.accuracy`` and
``quantitative.success_rate``; "Δ (pp)" is the model's rate minus the blind baseline's, in percentage points.
"""

from __future__ import annotations

import math
from typing import Any

from stridegen.viz.report import svg
from stridegen.viz.report.markup import esc, figure, fmt_int, json_number, note, subsection, table
from stridegen.viz.report.results import EvalResult
from stridegen.viz.report.worst_answers import WorstAnswer

SPATIAL_BREAKDOWNS: tuple[tuple[str, str, str], ...] = (
    ("by_category", "category", "category"),
    ("by_predicate", "predicate", "predicate"),
    ("by_object_class", "object class", "class"),
    ("by_distance_bin", "distance of the first region", "distance"),
)
ERROR_UNITS = {"abs_error_m": "m", "abs_error_deg": "°", "abs_error_h": "h"}


def pct(rate: Any) -> str:
    """A rate (0..1) as a percentage with one decimal; "-" for null."""
    x = json_number(rate)
    return "-" if math.isnan(x) else f"{100 * x:.1f}%"


def delta_pp(rate: Any, baseline: Any) -> str:
    """``rate - baseline`` in percentage points, signed ("-" when either is null)."""
    d = 100 * (json_number(rate) - json_number(baseline))
    return "-" if math.isnan(d) else f"{d:+.1f}"


def model_label(result: EvalResult) -> str:
    """The model a result scored, as the block's heading shows it (escaped HTML; empty when it names none)."""
    if result.model is None:
        return ""
    return f" · {esc(result.model)}" + (" (blind)" if result.blind else "")


def _median_error(row: dict[str, Any]) -> str:
    """The median error of a row's quantitative answers per form: relative for distances, else absolute."""
    parts = []
    for form, stats in row.get("quantitative", {}).get("error", {}).items():
        rel = stats.get("rel_error", {})
        if rel.get("n"):
            parts.append(f"{esc(form)} {100 * json_number(rel.get('p50')):.1f}%")
            continue
        for name, unit in ERROR_UNITS.items():
            if stats.get(name, {}).get("n"):
                parts.append(f"{esc(form)} {json_number(stats[name].get('p50')):.3g} {unit}")
    return ", ".join(parts) or "-"


def _spatial_table(label: str, rows: dict[str, Any], base: dict[str, Any] | None, table_id: str) -> str:
    headers = [label, "n", "correct", *(("blind", "Δ (pp)") if base is not None else ())]
    headers += ["qualitative acc.", "quantitative success", "median error", "invalid"]
    body = []
    for name, row in rows.items():
        cells = [esc(name), fmt_int(row.get("n", 0)), pct(row.get("rate"))]
        if base is not None:
            other = base.get(name) or {}
            cells += [pct(other.get("rate")), delta_pp(row.get("rate"), other.get("rate"))]
        cells += [
            pct(row.get("qualitative", {}).get("accuracy")),
            pct(row.get("quantitative", {}).get("success_rate")),
            _median_error(row),
            fmt_int(row.get("invalid", 0)),
        ]
        body.append(cells)
    return table(headers, body, table_id=table_id)


def spatial_block(result: EvalResult, key: str, baseline: EvalResult | None = None) -> str:
    """Overall and per category, predicate, class and distance bin: answers correct, qualitative accuracy,
    quantitative success rate, median error and invalid answers; the blind baseline's rate beside, when given."""
    d = result.data
    counts = d.get("counts", {})
    bands = "; ".join(f"{esc(form)}: {esc(band)}" for form, band in d.get("tolerance", {}).items())
    reasons = ", ".join(f"{esc(k)} {fmt_int(v)}" for k, v in d.get("invalid_reasons", {}).items()) or "none"
    body = note(
        f"parser {esc(d.get('parser'))}; {fmt_int(counts.get('questions', 0))} spatial questions, "
        f"{fmt_int(counts.get('missing_predictions', 0))} without a prediction; invalid answers by reason: "
        f"{reasons}. Tolerance bands: {bands}"
    )
    base = baseline.data if baseline is not None else None
    body += _spatial_table(
        "", {"all": d.get("overall", {})}, {"all": base.get("overall", {})} if base else None, f"{key}-overall"
    )
    per_predicate = d.get("by_predicate", {})
    if per_predicate:
        names = list(per_predicate)
        series = {"model": [100 * max(json_number(per_predicate[n].get("rate")), 0.0) for n in names]}
        if base is not None:
            other = base.get("by_predicate", {})
            series["blind"] = [100 * max(json_number((other.get(n) or {}).get("rate")), 0.0) for n in names]
        chart = svg.bar_chart("correct per predicate", names, series, ylabel="correct (%)", y_max=100.0)
        body += '<div class="charts">' + figure(chart, "answers correct per predicate (%)", f"{key}-predicates")
        body += "</div>"
    for field, title, suffix in SPATIAL_BREAKDOWNS:
        rows = d.get(field, {})
        if rows:
            other = base.get(field, {}) if base is not None else None
            body += subsection(f"Per {title}", _spatial_table(title, rows, other, f"{key}-{suffix}"))
    return body


def versus_blind_rows(rates: list[tuple[str, Any, Any]]) -> list[list[str]]:
    """Rows ``[label, model, blind, Δ (pp)]`` of (label, model's rate, baseline's rate) triples (rates 0..1)."""
    return [[esc(label), pct(mine), pct(theirs), delta_pp(mine, theirs)] for label, mine, theirs in rates]


def worst_block(answers: list[WorstAnswer], failed: int, key: str) -> str:
    """The worst answers as cards (``div``s: the page's ``article``s are the gallery's samples): the question's
    Set-of-Mark image, the question, the model's answer, the truth and what was compared."""
    if not failed:
        return subsection("Worst answers", note("every answer is correct"), f"{key}-worst")
    cards = []
    for a in answers:
        image = (
            f'<div class="frames"><img src="data:image/jpeg;base64,{a.image}" width="{a.image_size[0]}" '
            f'height="{a.image_size[1]}" alt="{esc(a.scene)} {esc(a.camera)} frame {a.frame}" loading="lazy"></div>'
            if a.image
            else note("this question is not in the report's dataset")
        )
        head = f"{esc(a.scene)} · {esc(a.camera)} · frame {a.frame} · " if a.scene else ""
        cards.append(
            f'<div class="card worst" data-question="{esc(a.question_id)}"><header>{head}'
            f'<span class="tag">{esc(a.predicate)}</span> {esc(a.question_id)}</header>{image}'
            f'<dl class="answer"><dt>question</dt><dd class="q">{esc(a.question)}</dd>'
            f'<dt>model</dt><dd class="pred">{esc(a.answer)}</dd>'
            f'<dt>truth</dt><dd class="truth">{esc(a.truth)}</dd>'
            f'<dt>scored</dt><dd class="scored">{esc(a.scored)}</dd></dl></div>'
        )
    intro = note(
        f"the {len(answers)} worst of {fmt_int(failed)} failed answers: nothing read first, then the largest "
        "error (relative for lengths and speeds; headings per 180°, clock hours per 6 h)"
    )
    return subsection("Worst answers", intro + f'<div class="cards">{"".join(cards)}</div>', f"{key}-worst")
