"""Write LSR evaluation results: metrics JSON, a Markdown report, the scored values per question (items.jsonl)
and plots (matplotlib, imported lazily).

Plots: the predicted target positions in the ego frame per horizon, as a polar plot (0 degrees = ahead, at the
top; counter-clockwise positive), coloured by localization success, with the true positions (the paper's
figure 4); and LSR per horizon for each scenario relation (the paper's figure 5).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.eval.lsr.data import DIMENSIONS, REPORT_ORDER, LsrItems, LsrResult


def round_half_up(value: float, ndigits: int = 0) -> float:
    """Round half away from zero for positive numbers (the toolkit's report rounding, not banker's)."""
    scale = 10**ndigits
    return math.floor(value * scale + 0.5) / scale


def _pct(v: Any) -> str:
    if isinstance(v, float):
        return f"{round_half_up(v * 100, 1)}"
    return str(v)


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    fmt = "| " + " | ".join(f"{{:<{w}}}" for w in widths) + " |"
    lines = [fmt.format(*headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    lines += [fmt.format(*r) for r in rows]
    return "\n".join(lines)


def _records_table(records: list[dict[str, Any]]) -> str:
    headers = list(records[0].keys())
    return _table(headers, [[_pct(rec.get(h, "")) for h in headers] for rec in records])


def _horizon_matrix(title: str, per_label: dict[str, dict[str, list[dict[str, Any]]]], metric: str) -> str:
    """Rows: label; columns: t=0..K and avg; cells: metric success rate in percent (n)."""
    horizons = sorted({r["time"] for rates in per_label.values() for r in rates.get(metric, []) if r["time"] != "avg"})
    if not horizons:
        return ""
    headers = [title] + [f"t={t}s" for t in horizons] + ["avg"]
    rows = []
    for label, rates in per_label.items():
        by_t = {r["time"]: r for r in rates.get(metric, [])}
        if not by_t:
            continue
        cells = [
            f"{_pct(by_t[t]['success_rate'])} ({by_t[t]['sample_size']})" if t in by_t else "-"
            for t in [*horizons, "avg"]
        ]
        rows.append([label, *cells])
    return _table(headers, rows)


def markdown_report(metrics: dict[str, Any], inputs: dict[str, Any] | None = None) -> str:
    """Markdown: one table per metric (success rates in percent, one decimal, half-up as in the toolkit),
    temporal consistency, LSR per scenario / object class / view status, and the input counts."""
    parts = [f"# STRIDE-QA localization metrics (profile `{metrics['profile']}`, parser `{metrics['parser']}`)", ""]
    for name in REPORT_ORDER:
        records = metrics.get(name)
        if records:
            parts += [f"### {name.replace('_', ' ').title()}", "", _records_table(records), ""]
    if metrics.get("temporal_consistency"):
        parts += ["### Temporal Consistency", "", _records_table(metrics["temporal_consistency"]), ""]
    titles = {"scenario": "Scenario relation", "object_class": "Object class", "out_of_view": "View status"}
    for key, title in titles.items():
        table = _horizon_matrix(title, metrics["breakdowns"].get(key, {}), "lsr")
        if table:
            parts += [f"### LSR by {title.lower()} (percent, sample size)", "", table, ""]
    counts = dict(metrics.get("counts", {}))
    if inputs:
        counts.update({k: v for k, v in inputs.items() if k not in ("examples", "files")})
    if counts:
        parts += ["### Inputs", "", "```json", json.dumps(counts, indent=2, sort_keys=True), "```", ""]
    return "\n".join(parts)


def item_rows(items: LsrItems, success: np.ndarray) -> list[dict[str, Any]]:
    """One JSON-ready row per question, in the order of its first item: ``question_id``, ``group_id``,
    ``horizon_s``, and per dimension (canonical units: m, degrees, m/s) the truth ``gt``, the value read ``pred``
    (null when nothing was read), ``success`` and, where nothing was read, ``reason``."""
    rows: dict[str, dict[str, Any]] = {}
    columns = zip(
        items.question_id,
        items.group.tolist(),
        items.horizon.tolist(),
        items.dimension.tolist(),
        items.gt.tolist(),
        items.pred.tolist(),
        items.pred_reason,
        success.tolist(),
        strict=True,
    )
    for qid, group, horizon, dim, gt, pred, reason, ok in columns:
        row = rows.get(qid)
        if row is None:
            row = rows[qid] = {
                "question_id": qid,
                "group_id": items.group_ids[group],
                "horizon_s": horizon,
                "gt": {},
                "pred": {},
                "success": {},
            }
        name = DIMENSIONS[dim]
        row["gt"][name] = gt
        row["pred"][name] = None if pred != pred else pred  # NaN: nothing read
        row["success"][name] = bool(ok)
        if reason:
            row.setdefault("reason", {})[name] = reason
    return list(rows.values())


def write_reports(
    result: LsrResult,
    out_dir: str | Path,
    inputs: dict[str, Any] | None = None,
    plots: bool = True,
    items: LsrItems | None = None,
) -> dict[str, Path]:
    """Write ``metrics.json``, ``metrics.md``, (optionally) the two plots and, given the scored ``items``,
    ``items.jsonl`` (``item_rows``); return the paths written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    metrics = result.metrics()
    doc = dict(metrics)
    if inputs is not None:
        doc["inputs"] = inputs
    paths = {"json": out / "metrics.json", "markdown": out / "metrics.md"}
    paths["json"].write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    paths["markdown"].write_text(markdown_report(metrics, inputs), encoding="utf-8")
    if items is not None:
        paths["items"] = out / "items.jsonl"
        encode = json.JSONEncoder(ensure_ascii=False).encode
        with paths["items"].open("w", encoding="utf-8") as f:
            f.writelines(encode(row) + "\n" for row in item_rows(items, result.item_success))
    if plots:
        paths["polar"] = plot_polar(result, out / "lsr_polar.png")
        paths["scenario"] = plot_lsr_by_scenario(result, out / "lsr_by_scenario.png")
    return paths


def _pyplot() -> Any:
    from stridegen.core.errors import require

    mpl = require("matplotlib", "plots")
    mpl.use("Agg")
    return require("matplotlib.pyplot", "plots")


def _emptiest_direction(*directions_deg: np.ndarray, step_deg: float = 22.5) -> float:
    """The polar angle (degrees, matplotlib's theta of a north-up, counter-clockwise axis) at the middle of the
    ``step_deg`` sector (sectors centred on multiples of ``step_deg``) holding the fewest of the given directions
    (NaN ignored), for the radial tick labels; ties go to the sector nearest behind-left (157.5 deg), where targets
    rarely are."""
    values = np.concatenate([np.asarray(d, dtype=float).ravel() for d in directions_deg])
    values = np.mod(values[np.isfinite(values)], 360.0)
    n = round(360.0 / step_deg)
    counts = np.bincount(((values + step_deg / 2) // step_deg).astype(int) % n, minlength=n)
    centres = np.arange(n) * step_deg  # sector i spans centres[i] -+ step / 2
    preferred = 157.5
    distance = np.abs((centres - preferred + 180.0) % 360.0 - 180.0)
    best = min(range(n), key=lambda i: (int(counts[i]), float(distance[i])))
    return float(centres[best])


def plot_polar(
    result: LsrResult, path: str | Path, max_range_m: float = 50.0, fov_half_deg: float | None = None
) -> Path:
    """Predicted vs true target positions per horizon (polar, 0 deg ahead at the top, counter-clockwise)."""
    plt = _pyplot()
    s = result.slots
    horizons = sorted(set(s.horizon.tolist())) or [0]
    fig, axes = plt.subplots(
        1, len(horizons), figsize=(3.8 * len(horizons), 4.2), subplot_kw={"projection": "polar"}, squeeze=False
    )
    for ax, t in zip(axes[0], horizons, strict=True):
        ax.set_theta_zero_location("N")
        ax.set_theta_direction(1)
        ax.set_ylim(0, max_range_m)
        sel = s.horizon == t
        ax.set_rlabel_position(_emptiest_direction(s.direction_gt[sel], s.direction_pred[sel]))
        ax.tick_params(axis="y", labelsize=7, labelcolor="0.4")  # radial labels: small and grey, off the points
        ticks = [0, 45, 90, 135, 180, -135, -90, -45]
        ax.set_thetagrids([t_ % 360 for t_ in ticks], [f"{t_}°" for t_ in ticks], fontsize=8)
        if fov_half_deg is not None:
            theta = np.radians(np.linspace(-fov_half_deg, fov_half_deg, 50))
            ax.fill_between(theta, 0, max_range_m, color="tab:blue", alpha=0.12, linewidth=0)
        ax.scatter(
            np.radians(s.direction_gt[sel]),
            s.distance_gt[sel],
            s=14,
            facecolors="none",
            edgecolors="0.45",
            linewidths=0.7,
            label="truth",
        )
        has_pred = sel & np.isfinite(s.distance_pred) & np.isfinite(s.direction_pred)
        for ok, colour, label in ((True, "tab:green", "success"), (False, "tab:red", "failure")):
            m = has_pred & (s.success == ok)
            ax.scatter(
                np.radians(s.direction_pred[m]),
                np.minimum(s.distance_pred[m], max_range_m),
                s=12,
                color=colour,
                alpha=0.75,
                label=f"{label} ({int(m.sum())})",
            )
        n_unparsed = int((sel & ~has_pred).sum())
        ax.set_title(f"t = {t} s  (unparsed {n_unparsed})", fontsize=10)
        ax.legend(loc="lower left", fontsize=7, bbox_to_anchor=(-0.15, -0.2))
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_lsr_by_scenario(result: LsrResult, path: str | Path) -> Path:
    """LSR per horizon, one panel per scenario relation (plus the overall LSR)."""
    plt = _pyplot()
    panels: list[tuple[str, list[dict[str, Any]]]] = [("Overall", result.success_rates.get("lsr", []))]
    panels += [(name, rates.get("lsr", [])) for name, rates in result.breakdowns["scenario"].items()]
    cols = min(3, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.6 * rows), sharex=True, sharey=True, squeeze=False)
    for ax, (name, table) in zip(axes.flat, panels, strict=False):
        pts = [(r["time"], r["success_rate"], r["sample_size"]) for r in table if r["time"] != "avg"]
        if pts:
            t, rate, n = zip(*pts, strict=True)
            ax.plot(t, rate, marker="o", lw=1.3)
            ax.set_title(f"{name.replace('_', ' ')} (n={n[0]})", fontsize=9)
            ax.set_xticks(list(t))
        ax.set_ylim(-0.05, 1.0)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("horizon (s)")
    for ax in axes[:, 0]:
        ax.set_ylabel("LSR")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
