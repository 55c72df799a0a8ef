"""The report's dataset sections, from ``DatasetStats``: overview, distributions and the visibility funnel."""

from __future__ import annotations

import itertools

import numpy as np

from stridegen.pipeline.scenario import RELATIONS
from stridegen.viz.report import svg
from stridegen.viz.report.markup import Cell, esc, figure, fmt_float, fmt_int, fmt_pct, note, section, subsection, table
from stridegen.viz.report.stats import (
    DEPTH_BANDS_M,
    FUNNEL_STEPS,
    SIZE_KEYS,
    DatasetStats,
    Funnel,
    Histogram,
    band_name,
)

# The paper's category order (STRIDE-QA: object-centric spatial, ego-centric spatial, ego-centric spatiotemporal).
CATEGORY_ORDER = ("object_spatial", "ego_spatial", "spatiotemporal")
MAX_SCENE_ROWS = 1000  # per-scene rows shown; a larger dataset's table says how many it leaves out
_SCENE_COLUMNS = (
    ("frames", "frames"),
    ("keyframes", "keyframes"),
    ("images", "images"),
    ("tracks", "tracks"),
    ("masks", "masks"),
    ("visible", "visible_masks"),
    ("regions", "regions"),
    ("QA", "qa"),
)


def ordered_categories(stats: DatasetStats) -> list[str]:
    known = [c for c in CATEGORY_ORDER if c in stats.qa_by_category]
    return known + [c for c in stats.categories if c not in CATEGORY_ORDER]


def _tiles(stats: DatasetStats) -> str:
    t = stats.totals
    items = [
        ("scenes", len(stats.scenes)),
        ("frames", t.get("frames", 0)),
        ("keyframes", t.get("keyframes", 0)),
        ("cameras", len(stats.cameras)),
        ("images", t.get("images", 0)),
        ("tracks", t.get("tracks", 0)),
        ("masks", t.get("masks", 0)),
        ("visible masks", t.get("visible_masks", 0)),
        ("regions", t.get("regions", 0)),
        ("QA", stats.qa_total),
    ]
    tiles = "".join(
        f'<div class="stat" data-key="{esc(k)}"><b>{fmt_int(v)}</b><span>{esc(k)}</span></div>' for k, v in items
    )
    size = f"{t.get('bytes', 0) / 1e6:,.1f} MB in {fmt_int(t.get('shards', len(stats.scenes)))} shards"
    return f'<div class="stats">{tiles}</div>' + note(f"{esc(size)}; cameras: {esc(', '.join(stats.cameras))}")


def qa_by_category_table(stats: DatasetStats) -> str:
    """STRIDE-QA Table 4's shape: QA per category, with the images (spatial) or groups (spatiotemporal) they
    come from."""
    total = stats.qa_total
    rows = []
    for cat in ordered_categories(stats):
        n = stats.qa_by_category[cat]
        predicates = sum(1 for c in stats.predicate_category.values() if c == cat)
        unit = "groups" if cat == "spatiotemporal" else "images"
        rows.append(
            [
                esc(cat),
                fmt_int(n),
                fmt_pct(n, total),
                f"{fmt_int(stats.samples_by_category[cat])} {unit}",
                fmt_int(predicates),
            ]
        )
    rows.append(
        ["<b>total</b>", f"<b>{fmt_int(total)}</b>", fmt_pct(total, total), "", fmt_int(len(stats.qa_by_predicate))]
    )
    return table(
        ["category", "QA", "share", "samples", "predicates"],
        rows,
        table_id="table-qa-category",
        caption="QA by category (the shape of STRIDE-QA Table 4)",
    )


def qa_by_class_table(stats: DatasetStats) -> str:
    """STRIDE-QA Table 5's shape: QA per object class, split by category."""
    cats = ordered_categories(stats)
    total = stats.qa_total
    rows = []
    for cls in stats.classes:
        per = [stats.qa_by_category_class[(cat, cls)] for cat in cats]
        rows.append([esc(cls or "(none)"), *(fmt_int(n) for n in per), fmt_int(sum(per)), fmt_pct(sum(per), total)])
    sums = [stats.qa_by_category[c] for c in cats]
    rows.append(["<b>total</b>", *(fmt_int(n) for n in sums), f"<b>{fmt_int(total)}</b>", fmt_pct(total, total)])
    return table(
        ["class", *cats, "total", "share"],
        rows,
        table_id="table-qa-class",
        caption="QA by object class and category (the shape of STRIDE-QA Table 5)",
    )


def scenario_table(stats: DatasetStats) -> str:
    """Spatiotemporal groups and QA per scenario relation (the bench's breakdown; docs/scenarios.md)."""
    groups, questions = stats.groups_by_scenario, stats.qa_by_scenario
    if not groups:
        return ""
    order = [r for r in RELATIONS if r in groups] + sorted(set(groups) - set(RELATIONS))
    n_groups, n_qa = sum(groups.values()), sum(questions.values())
    rows = [
        [esc(r), fmt_int(groups[r]), fmt_pct(groups[r], n_groups), fmt_int(questions[r]), fmt_pct(questions[r], n_qa)]
        for r in order
    ]
    rows.append(["<b>total</b>", fmt_int(n_groups), fmt_pct(n_groups, n_groups), fmt_int(n_qa), fmt_pct(n_qa, n_qa)])
    out = table(
        ["scenario relation", "groups", "share", "QA", "share"],
        rows,
        table_id="table-scenarios",
        caption="Spatiotemporal groups by scenario relation over their keyframe window (docs/scenarios.md)",
    )
    if stats.scenes_labelled_on_read:
        out += note(
            f"{stats.scenes_labelled_on_read:,} scene(s) from shards older than schema v4, which store no labels: "
            "labelled now from their tables, with the same rules"
        )
    return out


def scenes_table(stats: DatasetStats) -> str:
    shown = stats.scenes[:MAX_SCENE_ROWS]
    rows = [
        [
            esc(s.name),
            fmt_int(s.cameras),
            *(fmt_int(s.counts.get(k, 0)) for _, k in _SCENE_COLUMNS),
            f"{s.megabytes:,.1f}",
        ]
        for s in shown
    ]
    out = table(["scene", "cameras", *(h for h, _ in _SCENE_COLUMNS), "MB"], rows, table_id="table-scenes")
    if len(stats.scenes) > len(shown):
        out += note(f"the first {len(shown):,} of {len(stats.scenes):,} scenes (inspect lists them all)")
    failed = stats.manifest.get("failed_scenes") or []
    if failed:
        items = "".join(f"<li><b>{esc(f.get('scene', '?'))}</b>: {esc(f.get('reason', ''))}</li>" for f in failed)
        out += f'<div class="failed"><h4>{len(failed)} failed scene(s)</h4><ul>{items}</ul></div>'
    return out


def overview_section(stats: DatasetStats) -> str:
    m = stats.manifest
    source = m.get("source", {})
    head = note(
        f"schema v{esc(m.get('schema_version', '?'))}, stridegen {esc(m.get('versions', {}).get('stridegen', '?'))}, "
        f"config {esc(str(m.get('config_hash', ''))[:12])}; source {esc(source.get('format', '?'))} "
        f"{esc(source.get('version', ''))}"
    )
    body = head + _tiles(stats) + qa_by_category_table(stats) + qa_by_class_table(stats) + scenario_table(stats)
    body += subsection("Scenes", scenes_table(stats), "overview-scenes")
    return section("overview", "Overview", body)


# ------------------------------------------------------------------------------------------------ distributions
def _centres(hist: Histogram) -> np.ndarray:
    edges = np.asarray(hist.spec.edges)
    return (edges[:-1] + edges[1:]) / 2


def _class_order(hist: Histogram) -> list[str]:
    return sorted(hist.counts, key=lambda c: (-int(hist.counts[c].sum()), c))


def _histogram_lines(hist: Histogram) -> str:
    x = _centres(hist)
    series = {cls or "(none)": (x.tolist(), hist.counts[cls].tolist()) for cls in _class_order(hist)}
    edges = hist.spec.edges
    chart = svg.line_chart(
        f"{hist.spec.label} per class", series, xlabel=hist.spec.label, ylabel="QA", x_range=(edges[0], edges[-1])
    )
    caption = (
        f"{esc(hist.spec.label)}: answers of <code>{esc(hist.spec.predicate)}</code> per class "
        f"({fmt_int(hist.total())} values; the last bin holds everything at or beyond {edges[-1]:g})"
    )
    return figure(chart, caption, hist.spec.key)


def _clock_bars(hist: Histogram) -> str:
    classes = _class_order(hist)
    hours = [str(h) for h in range(1, 13)]
    chart = svg.bar_chart(
        "clock direction per class",
        hours,
        {c or "(none)": hist.counts[c].tolist() for c in classes},
        xlabel="o'clock (12 = ahead, 3 = right)",
        ylabel="QA",
        stacked=True,
    )
    return figure(
        chart,
        f"clock direction of <code>{esc(hist.spec.predicate)}</code> answers, stacked by class "
        f"({fmt_int(hist.total())} values)",
        hist.spec.key,
    )


def _bearing_rose(hist: Histogram) -> str:
    classes = _class_order(hist)
    chart = svg.polar_histogram(
        "bearing per class", hist.spec.edges, {c or "(none)": hist.counts[c].tolist() for c in classes}
    )
    return figure(
        chart,
        f"bearing of <code>{esc(hist.spec.predicate)}</code> answers (0° ahead, left positive; "
        f"wedge area ∝ count; {fmt_int(hist.total())} values)",
        hist.spec.key,
    )


def _size_table(stats: DatasetStats) -> str:
    hists = [stats.histograms.get(k) for k in SIZE_KEYS]
    classes = sorted({c for h in hists if h is not None for c in h.counts})
    rows = []
    for cls in classes:
        cells = []
        for h in hists:
            n, mean, sd = h.mean_sd(cls) if h is not None else (0, float("nan"), float("nan"))
            cells.append(f"{fmt_float(mean, 2)} ± {fmt_float(sd, 2)} ({fmt_int(n)})" if n else "-")
        rows.append([esc(cls or "(none)"), *cells])
    return table(
        ["class", *(f"{k} (m)" for k in SIZE_KEYS)],
        rows,
        table_id="table-size",
        caption="object size per class: mean ± standard deviation (values)",
    )


def yes_no_table(stats: DatasetStats) -> str:
    """Per predicate with a qualitative answer: the count of each label and the share of the first."""
    rows: list[list[Cell]] = []
    for pred in sorted(stats.labels_by_predicate):
        labels = stats.labels_by_predicate[pred]
        order = sorted(labels, key=lambda lab: (lab not in ("yes", "left"), lab))
        n = sum(labels.values())
        first = labels[order[0]]
        share = 100.0 * first / n if n else 0.0
        bar = f'<span class="bar"><span style="width:{share:.1f}%"></span></span>'
        text = " · ".join(f"{esc(lab)} {fmt_int(labels[lab])}" for lab in order)
        rows.append(
            [
                esc(pred),
                esc(stats.predicate_category.get(pred, "")),
                fmt_int(n),
                text,
                (f"{bar} {esc(order[0])} {share:.1f}%", 'class="share"'),
            ]
        )
    return table(
        ["predicate", "category", "QA", "answers", "share of the first"],
        rows,
        table_id="table-yes-no",
        caption="answer balance per predicate with a qualitative answer (a fair generator sits near 50%)",
        numeric_from=2,
    )


def distributions_section(stats: DatasetStats) -> str:
    parts = []
    for key, draw in (
        ("distance", _histogram_lines),
        ("bearing", _bearing_rose),
        ("clock", _clock_bars),
        ("speed", _histogram_lines),
    ):
        hist = stats.histograms.get(key)
        parts.append(draw(hist) if hist is not None else note(f"no {esc(key)} answers in this dataset"))
    charts = '<div class="charts">' + "".join(parts) + "</div>"
    sizes = [_histogram_lines(stats.histograms[k]) for k in SIZE_KEYS if k in stats.histograms]
    size_body = '<div class="charts">' + "".join(sizes) + "</div>" + _size_table(stats)
    body = charts + subsection("Object size", size_body, "distributions-size")
    body += subsection("Yes / no balance", yes_no_table(stats), "distributions-yes-no")
    intro = (
        "Values of the ground-truth answers at the keyframe, per STRIDE-QA object class (the class of the "
        "question's first region)."
    )
    return section("distributions", "Distributions", body, intro)


# ------------------------------------------------------------------------------------------------ visibility
def funnel_table(funnel: Funnel, label: str, table_id: str, order: list[str] | None = None) -> str:
    groups = order or sorted(funnel.rows, key=lambda g: (-int(funnel.rows[g][0]), g))
    rows = []
    for g in [*groups, "all"]:
        steps = funnel.total() if g == "all" else funnel.rows[g]
        head = "<b>all</b>" if g == "all" else esc(g or "(none)")
        cells = [fmt_int(steps[0])] + [f"{fmt_int(v)} ({fmt_pct(v, steps[0])})" for v in steps[1:]]
        rows.append([head, *cells])
    return table([label, *FUNNEL_STEPS], rows, table_id=table_id)


def _funnel_lines(funnel: Funnel, title: str, key: str, order: list[str]) -> str:
    steps = list(range(len(FUNNEL_STEPS)))
    series: dict[str, tuple[svg.Values, svg.Values]] = {}
    for g in order:
        row = funnel.rows[g]
        series[g or "(none)"] = (steps, (100.0 * row / row[0]).tolist() if row[0] else [None] * len(steps))
    chart = svg.line_chart(
        title,
        series,
        ylabel="% of candidates",
        x_labels=FUNNEL_STEPS,
        y_range=(0, 100),
        x_range=(0, len(steps) - 1),
        markers=True,
    )
    return figure(chart, esc(title), key)


def visibility_section(stats: DatasetStats) -> str:
    vis = stats.manifest.get("visibility") or {}
    thresholds = vis.get("thresholds") or stats.manifest.get("config", {}).get("visibility", {})
    total = stats.funnel_by_class.total()
    overall = svg.bar_chart("visibility funnel", list(FUNNEL_STEPS), {"masks": total.tolist()}, ylabel="masks")
    rule = ", ".join(f"{esc(k)} {esc(v)}" for k, v in thresholds.items()) or "not recorded"
    intro = (
        f"Each candidate (a track's projected box in a camera image, with its mask) must pass box IoU, then "
        f"coverage, then quality; the steps are cumulative. Thresholds: {rule}. Segmenter: "
        f"{esc(vis.get('segmenter', '?'))}."
    )
    by_class = sorted(stats.funnel_by_class.rows, key=lambda g: (-int(stats.funnel_by_class.rows[g][0]), g))
    names = [band_name(lo, hi) for lo, hi in itertools.pairwise(DEPTH_BANDS_M)]
    bands = [b for b in names if b in stats.funnel_by_band.rows]
    charts = '<div class="charts">' + figure(overall, "masks left after each step (all classes)", "funnel")
    if by_class:
        charts += _funnel_lines(
            stats.funnel_by_class, "share left after each step, per class", "funnel-class", by_class
        )
    if bands:
        charts += _funnel_lines(
            stats.funnel_by_band, "share left after each step, per distance band", "funnel-band", bands
        )
    charts += "</div>"
    body = charts
    body += subsection("Per class", funnel_table(stats.funnel_by_class, "class", "table-funnel-class", by_class))
    body += subsection(
        "Per distance band (camera depth of the box centre)",
        funnel_table(stats.funnel_by_band, "distance", "table-funnel-band", bands),
    )
    if not total[0]:
        body += note("this dataset stores no masks (segmenter none)")
    return section("visibility", "Visibility funnel", body, intro)
