"""The report's evaluation section: one block per result (LSR, spatial, detection, tracking, judges, agreement),
labelled with the model it scored; a model's result and its blind baseline share one block."""

from __future__ import annotations

import base64
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.viz.report import svg
from stridegen.viz.report.markup import (
    esc,
    figure,
    fmt_float,
    fmt_int,
    json_number,
    note,
    section,
    subsection,
    table,
)
from stridegen.viz.report.model_blocks import model_label, pct, spatial_block, versus_blind_rows, worst_block
from stridegen.viz.report.results import SCORE_BINS, EvalInputs, EvalResult
from stridegen.viz.report.worst_answers import WorstAnswer

LSR_METRICS = ("target_distance", "target_direction", "ego_velocity", "target_velocity", "lsr")
DETECTION_TP = (
    ("trans_err", "ATE"),
    ("scale_err", "ASE"),
    ("orient_err", "AOE"),
    ("vel_err", "AVE"),
    ("attr_err", "AAE"),
)
TRACKING_COLUMNS = ("amota", "amotp", "recall", "motar", "mota", "motp", "ids", "frag", "fp", "fn")
TRACKING_COUNTS = {"ids", "frag", "fp", "fn", "gt", "tp", "mt", "ml"}


def _rate_cell(row: dict[str, Any] | None) -> str:
    if not row:
        return "-"
    return f"{100 * json_number(row.get('success_rate')):.1f}% ({fmt_int(row.get('sample_size', 0))})"


def _horizons(tables: list[list[dict[str, Any]]]) -> list[Any]:
    found = sorted({r["time"] for t in tables for r in t if r.get("time") != "avg"}, key=lambda t: float(t))
    return [*found, "avg"]


def _rate_matrix(label: str, per: dict[str, list[dict[str, Any]]], table_id: str) -> str:
    horizons = _horizons(list(per.values()))
    rows = []
    for name, rates in per.items():
        by_t = {r.get("time"): r for r in rates}
        rows.append([esc(name), *(_rate_cell(by_t.get(t)) for t in horizons)])
    headers = [label, *(f"t={t}s" if t != "avg" else "avg" for t in horizons)]
    return table(headers, rows, table_id=table_id)


def _rate_lines(title: str, per: dict[str, list[dict[str, Any]]], key: str) -> str:
    series = {}
    for name, rates in per.items():
        pts = sorted(
            (float(r["time"]), 100 * json_number(r.get("success_rate"))) for r in rates if r.get("time") != "avg"
        )
        if pts:
            series[name] = ([p[0] for p in pts], [p[1] for p in pts])
    chart = svg.line_chart(
        title, series, xlabel="horizon (s)", ylabel="success rate (%)", y_range=(0, 100), markers=True
    )
    return figure(chart, esc(title), key)


def lsr_block(result: EvalResult, key: str) -> str:
    d = result.data
    per_metric = {m: d[m] for m in LSR_METRICS if d.get(m)}
    body = note(
        f"profile {esc(d.get('profile'))}, parser {esc(d.get('parser'))}; counts "
        + ", ".join(f"{esc(k)} {esc(v)}" for k, v in d.get("counts", {}).items() if not isinstance(v, dict))
    )
    body += _rate_matrix("metric", per_metric, f"{key}-rates")
    charts = _rate_lines("success rate per horizon", per_metric, f"{key}-horizon")
    scenario = {name: rates.get("lsr", []) for name, rates in d.get("breakdowns", {}).get("scenario", {}).items()}
    scenario = {k: v for k, v in scenario.items() if v}
    if scenario:
        charts += _rate_lines("LSR per scenario relation", scenario, f"{key}-scenario")
    polar = result.extras.get("polar_png")
    if polar:
        image = base64.b64encode(polar).decode("ascii")
        charts += (
            f'<figure class="chart wide" data-chart="{esc(key)}-polar"><img class="plot" alt="LSR polar plot" '
            f'src="data:image/png;base64,{image}"><figcaption>predicted and true target positions per '
            "horizon (lsr_polar.png of the run)</figcaption></figure>"
        )
    body += '<div class="charts">' + charts + "</div>"
    if not polar:
        body += note(
            "no lsr_polar.png beside the metrics (run <code>stridegen eval lsr</code> with plots) — the "
            "polar plot needs the per-question positions, which metrics.json does not hold"
        )
    if scenario:
        body += subsection("LSR per scenario relation", _rate_matrix("scenario", scenario, f"{key}-scenario-table"))
    for name, title in (("object_class", "object class"), ("out_of_view", "view status")):
        per = {k: v.get("lsr", []) for k, v in d.get("breakdowns", {}).get(name, {}).items() if v.get("lsr")}
        if per:
            body += subsection(f"LSR per {title}", _rate_matrix(title, per, f"{key}-{name}"))
    tc = d.get("temporal_consistency") or []
    if tc:
        cols = [k for k in tc[0] if k != "relation"]
        rows = [[esc(r.get("relation")), *(pct(r.get(c)) for c in cols)] for r in tc]  # rates: %, as LSR
        body += subsection("Temporal consistency", table(["relation", *cols], rows, table_id=f"{key}-tlc"))
    return body


def _pr_curves(metric_data: dict[str, Any], classes: list[str], key: str) -> str:
    """One chart per distance threshold, one precision / recall curve per class (the devkit's 101 recall points)."""
    by_threshold: dict[str, dict[str, tuple[list[float], list[float]]]] = {}
    for name, md in metric_data.items():
        cls, _, th = str(name).rpartition(":")
        if cls in classes and isinstance(md, dict) and md.get("recall") and md.get("precision"):
            curve = ([json_number(x) for x in md["recall"]], [json_number(y) for y in md["precision"]])
            by_threshold.setdefault(th, {})[cls] = curve
    charts = []
    for th in sorted(by_threshold, key=float):
        series = {c: by_threshold[th][c] for c in classes if c in by_threshold[th]}
        chart = svg.line_chart(
            f"PR at {th} m", series, xlabel="recall", ylabel="precision", x_range=(0, 1), y_range=(0, 1)
        )
        charts.append(
            figure(chart, f"precision / recall per class, centre distance threshold {esc(th)} m", f"{key}-pr-{th}")
        )
    return "".join(charts)


def detection_block(result: EvalResult, key: str) -> str:
    d = result.data
    aps: dict[str, dict[str, Any]] = d.get("label_aps", {})
    classes = list(aps)
    thresholds = sorted({t for per in aps.values() for t in per}, key=float)
    summary = d.get("summary_row") or {"mAP": d.get("mean_ap"), "NDS": d.get("nd_score")}
    body = table(
        list(summary),
        [[fmt_float(json_number(v), 4) for v in summary.values()]],
        table_id=f"{key}-summary",
        numeric_from=0,
    )
    tp = d.get("label_tp_errors", {})
    rows = []
    for cls in classes:
        ap_cells = [fmt_float(json_number(aps[cls].get(t)), 3) for t in thresholds]
        mean_ap = d.get("mean_dist_aps", {}).get(cls)
        rows.append(
            [
                esc(cls),
                *ap_cells,
                fmt_float(json_number(mean_ap), 3),
                *(fmt_float(json_number(tp.get(cls, {}).get(m)), 3) for m, _ in DETECTION_TP),
            ]
        )
    body += table(
        ["class", *(f"AP@{t}" for t in thresholds), "AP", *(s for _, s in DETECTION_TP)],
        rows,
        table_id=f"{key}-classes",
    )
    charts = ""
    metric_data = result.extras.get("metric_data")
    if metric_data:
        charts += _pr_curves(metric_data, classes, key)
    else:
        series = {f"AP@{t}": [json_number(aps[c].get(t)) for c in classes] for t in thresholds}
        chart = svg.bar_chart("AP per class and threshold", classes, series, ylabel="AP", y_max=1.0)
        charts += figure(chart, "AP per class at each distance threshold", f"{key}-ap")
    errors = {
        short: [0.0 if math.isnan(json_number(tp.get(c, {}).get(m))) else json_number(tp[c][m]) for c in classes]
        for m, short in DETECTION_TP
    }
    chart = svg.bar_chart("TP errors per class", classes, errors, ylabel="error (m, rad, 1 - IoU, ...)")
    charts += figure(chart, "true-positive errors per class (exempt classes left out)", f"{key}-tp")
    body += '<div class="charts">' + charts + "</div>"
    if not metric_data:
        body += note(
            "no PR curves: the summary carries no <code>metric_data</code> and no metrics_details.json "
            "(the nuScenes devkit layout) lies beside it; AP per threshold is shown instead"
        )
    return body


def tracking_block(result: EvalResult, key: str) -> str:
    d = result.data
    per = d.get("label_metrics", {})
    classes = sorted({c for m in per.values() for c in m})
    cols = [m for m in TRACKING_COLUMNS if m in per]

    def cell(metric: str, value: Any) -> str:
        x = json_number(value)
        return fmt_int(x) if metric in TRACKING_COUNTS and not math.isnan(x) else fmt_float(x, 3)

    rows = [[esc(c), *(cell(m, per[m].get(c)) for m in cols)] for c in classes]
    rows.append(["<b>all</b>", *(cell(m, d.get(m)) for m in cols)])
    body = table(["class", *(m.upper() for m in cols)], rows, table_id=f"{key}-classes")
    details = d.get("metrics_details", {})
    charts = ""
    for metric in ("mota", "motar"):
        series = {
            c: ([json_number(x) for x in md.get("recall_hypo", [])], [json_number(y) for y in md.get(metric, [])])
            for c, md in details.items()
            if isinstance(md, dict) and md.get(metric)
        }
        if series:
            chart = svg.line_chart(
                f"{metric.upper()} over recall",
                series,
                xlabel="recall threshold",
                ylabel=metric.upper(),
                x_range=(0, 1),
            )
            charts += figure(
                chart,
                f"{metric.upper()} at each recall threshold, per class (gaps: recall not reached)",
                f"{key}-{metric}",
            )
    series = {
        c: ([json_number(x) for x in md.get("recall_hypo", [])], [json_number(y) for y in md.get("recall", [])])
        for c, md in details.items()
        if isinstance(md, dict) and md.get("recall")
    }
    if series:
        chart = svg.line_chart(
            "recall achieved", series, xlabel="recall threshold", ylabel="recall", x_range=(0, 1), y_range=(0, 1)
        )
        charts += figure(chart, "recall achieved at each recall threshold, per class", f"{key}-recall")
    return body + '<div class="charts">' + charts + "</div>"


def judges_block(result: EvalResult, key: str) -> str:
    d = result.data
    groups = {"overall": d.get("overall", {}), **d.get("groups", {})}
    level = round(100 * json_number(d.get("ci", {}).get("level", 0.95)))
    rows = []
    for name, g in groups.items():
        lo, hi = g.get("ci_low_100"), g.get("ci_high_100")
        ci = "-" if lo is None or hi is None else f"{json_number(lo):.1f} to {json_number(hi):.1f}"
        rows.append(
            [
                esc(name),
                fmt_int(g.get("n", 0)),
                fmt_float(json_number(g.get("mean_100")), 2),
                ci,
                fmt_float(json_number(g.get("std_100")), 2),
                fmt_int(g.get("n_error", d.get("n_error", 0))),
            ]
        )
    head = note(
        f"method {esc(d.get('method', '?'))}, judge {esc(d.get('model', '?'))}; {fmt_int(d.get('n_ok', 0))} "
        f"of {fmt_int(d.get('n_items', 0))} items scored; flags {esc(d.get('flags', {}))}"
    )
    body = head + table(["group", "n", "mean (0-100)", f"{level}% CI", "std", "errors"], rows, table_id=f"{key}-groups")
    names = list(groups)

    def opt(v: Any) -> float | None:
        x = json_number(v)
        return None if math.isnan(x) else x

    chart = svg.interval_chart(
        "mean score with CI",
        names,
        [opt(groups[n].get("mean_100")) for n in names],
        [opt(groups[n].get("ci_low_100")) for n in names],
        [opt(groups[n].get("ci_high_100")) for n in names],
        xlabel="score (0-100)",
    )
    charts = figure(chart, f"mean score per group with its {level}% bootstrap interval", f"{key}-ci")
    scores: dict[str, np.ndarray] = result.extras.get("scores", {})
    if scores:
        labels = [f"{SCORE_BINS[i]:g}" for i in range(len(SCORE_BINS) - 1)]
        per = {k.removeprefix("category:"): v.tolist() for k, v in sorted(scores.items()) if k != "all"}
        chart = svg.bar_chart(
            "score distribution",
            labels,
            per or {"all": scores["all"].tolist()},
            xlabel="score (0-100, 5-point bins)",
            ylabel="items",
            stacked=True,
        )
        charts += figure(chart, "scores of the ok verdicts (verdicts.jsonl), stacked by category", f"{key}-scores")
    body += '<div class="charts">' + charts + "</div>"
    if not scores:
        body += note("no verdicts.jsonl beside the summary: the score distribution is not shown")
    return body


def agreement_block(result: EvalResult, key: str) -> str:
    d = result.data
    metrics: dict[str, dict[str, Any]] = d.get("metrics", {})
    rows = [
        [
            esc(name),
            fmt_float(json_number(m.get("value")), 4),
            fmt_float(json_number(m.get("low")), 4),
            fmt_float(json_number(m.get("high")), 4),
            fmt_int(m.get("n", 0)),
        ]
        for name, m in metrics.items()
    ]
    scales = d.get("scales", {})
    alpha = json_number(d.get("bootstrap", {}).get("alpha", 0.05))
    head = note(
        f"{fmt_int(d.get('n_matched', 0))} matched items; judge scale {esc(scales.get('judge'))}, human "
        f"scale {esc(scales.get('human'))}; {round(100 * (1 - alpha))}% bootstrap intervals"
    )
    body = head + table(["metric", "value", "CI low", "CI high", "n"], rows, table_id=f"{key}-metrics")
    names = list(metrics)

    def opt(v: Any) -> float | None:
        x = json_number(v)
        return None if math.isnan(x) else x

    chart = svg.interval_chart(
        "agreement",
        names,
        [opt(metrics[n].get("value")) for n in names],
        [opt(metrics[n].get("low")) for n in names],
        [opt(metrics[n].get("high")) for n in names],
        x_range=(-1.0, 1.0),
        xlabel="correlation / agreement",
    )
    return (
        body + '<div class="charts">' + figure(chart, "agreement metrics with their intervals", f"{key}-ci") + "</div>"
    )


def lsr_versus_blind(result: EvalResult, baseline: EvalResult, key: str) -> str:
    """Success rate per metric and LSR per scenario relation (over every horizon), and LSR per horizon, beside the
    blind baseline's."""

    def at(rates: list[dict[str, Any]] | None, time: Any) -> Any:
        return next((r.get("success_rate") for r in rates or [] if r.get("time") == time), None)

    def scenario(d: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
        per = d.get("breakdowns", {}).get("scenario", {})
        return {name: rates.get("lsr", []) for name, rates in per.items() if rates.get("lsr")}

    mine, theirs = result.data, baseline.data
    overall = [(m, at(mine[m], "avg"), at(theirs.get(m), "avg")) for m in LSR_METRICS if mine.get(m)]
    relations = scenario(mine)
    overall += [
        (f"LSR · {name}", at(rates, "avg"), at(scenario(theirs).get(name), "avg")) for name, rates in relations.items()
    ]
    lsr = mine.get("lsr") or []
    horizons = [(f"t={t}s", at(lsr, t), at(theirs.get("lsr"), t)) for t in _horizons([lsr])[:-1]]
    headers = ["model", "blind", "Δ (pp)"]
    body = table(["metric (all horizons)", *headers], versus_blind_rows(overall), table_id=f"{key}-blind")
    if horizons:
        body += table(["LSR per horizon", *headers], versus_blind_rows(horizons), table_id=f"{key}-blind-horizon")
    return subsection("Against the blind baseline", body)


BLOCKS: dict[str, tuple[str, Callable[[EvalResult, str], str]]] = {
    "lsr": ("LSR (localization success rate)", lsr_block),
    "spatial": ("Spatial QA (rule-based)", spatial_block),
    "detection": ("Detection (nuScenes)", detection_block),
    "tracking": ("Tracking (nuScenes)", tracking_block),
    "judges": ("LLM judge scores", judges_block),
    "agreement": ("Judge-human agreement", agreement_block),
}


# Kinds whose results can stand beside a blind baseline: (model result, baseline, key) -> the block's body.
WITH_BASELINE: dict[str, Callable[[EvalResult, EvalResult, str], str]] = {
    "lsr": lambda r, b, key: lsr_block(r, key) + lsr_versus_blind(r, b, key),
    "spatial": lambda r, b, key: spatial_block(r, key, b),
}
Worst = dict[Path, tuple[list[WorstAnswer], int]]  # result file -> (its worst answers, its failed answers)


def shown_blocks(results: list[EvalResult]) -> list[tuple[EvalResult, EvalResult | None]]:
    """The results that get a block, in the page's order (LSR first, then spatial, detection, ...), each with the
    blind baseline it stands beside: a blind result of the same kind and model as a result that is not blind (the
    first of each, in the order given). A paired baseline gets no block of its own."""
    order = list(BLOCKS)
    ranked = sorted(results, key=lambda r: order.index(r.kind))
    baselines: dict[int, EvalResult] = {}
    taken: set[int] = set()
    for i, r in enumerate(ranked):
        if r.kind not in WITH_BASELINE or r.blind or r.model is None:
            continue
        for j, b in enumerate(ranked):
            if j not in taken and b.blind and b.kind == r.kind and b.model == r.model:
                baselines[i] = b
                taken.add(j)
                break
    return [(r, baselines.get(i)) for i, r in enumerate(ranked) if i not in taken]


def evaluations_section(inputs: EvalInputs | None, worst: Worst | None = None) -> str:
    """One block per result (LSR first, then spatial, detection, ...), each labelled with its model; a result
    with a blind baseline shows it beside; ``worst`` adds each result's worst answers."""
    if inputs is None or not inputs.results:
        body = note(
            "no evaluation results given (<code>stridegen report DIR --eval RESULTS</code> adds LSR, spatial, "
            "detection, tracking and judge results)"
        )
        return section("evaluations", "Evaluations", body)
    body = ""
    for i, (result, baseline) in enumerate(shown_blocks(inputs.results)):
        title, block = BLOCKS[result.kind]
        key = f"eval-{result.kind}-{i}"
        source = f'<p class="source">{esc(result.source)}</p>'
        if baseline is None:
            inner = source + block(result, key)
        else:
            source += f'<p class="source">blind baseline: {esc(baseline.source)}</p>'
            inner = source + WITH_BASELINE[result.kind](result, baseline, key)
            title += " with its blind baseline"
        if worst and result.source in worst:
            inner += worst_block(*worst[result.source], key)
        model = f' data-model="{esc(result.model)}"' if result.model is not None else ""
        body += (
            f'<div class="sub eval" id="{key}" data-kind="{esc(result.kind)}"{model}>'
            f"<h3>{esc(title)}{model_label(result)}</h3>{inner}</div>"
        )
    if inputs.skipped:
        body += note("skipped (not evaluation results): " + ", ".join(esc(p.name) for p, _ in inputs.skipped))
    return section("evaluations", "Evaluations", body)
