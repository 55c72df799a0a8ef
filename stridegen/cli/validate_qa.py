"""`stridegen validate --qa`: build a log with the oracle and with a detector, compare the datasets' answers.

Prints one table (rows per QA category, predicate and answer dimension: matched answers, the share beyond the
bench's tolerance, the absolute error's median and 90th percentile, questions lost and gained), the totals per
category, and where the results file is; ``--json`` prints the results file's content instead.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer

from stridegen.core.errors import UsageError


def validate_qa_command(
    log_root: Path | None,
    detector: str,
    profile: str,
    seed: int,
    option: list[str] | None,
    out: Path | None,
    reference: Path | None,
    candidate: Path | None,
    config: Path | None,
    set_: list[str] | None,
    tolerance: str,
    plots: bool,
    overwrite: bool,
    as_json: bool,
) -> None:
    """The body of ``stridegen validate --qa`` (options: stridegen/cli/validate.py)."""
    import importlib.util

    from rich.console import Console

    from stridegen.cli.progress import SceneProgress
    from stridegen.core.errors import MissingExtraError
    from stridegen.eval.lsr.tolerance import load_profile
    from stridegen.eval.validate.qa_compare import QATolerances
    from stridegen.eval.validate.qa_evaluate import build_and_validate, build_configs, candidate_detector_options
    from stridegen.jobs.build import STAGES
    from stridegen.run.config import parse_override

    if (reference is None or candidate is None) and out is None:
        raise UsageError("validate --qa builds the datasets not given with --reference / --candidate: pass --out DIR")
    if plots and importlib.util.find_spec("matplotlib") is None:
        raise MissingExtraError("plots", "matplotlib", alternative="--no-plots, which writes no plots")
    tolerances = QATolerances(profile=load_profile(tolerance))
    options = candidate_detector_options(detector, profile, seed)
    options.update(parse_override(item) for item in option or [])
    ref_cfg, cand_cfg = build_configs(config, detector, options, list(set_ or []))
    console = Console(stderr=as_json)  # with --json, stdout holds the JSON alone
    building = reference is None or candidate is None
    if building and log_root is None:
        from stridegen.logs.synthetic.default import ensure_default_log

        log_root = ensure_default_log()
        console.print(f"no LOG_ROOT: the embedded synthetic default ({log_root})", markup=False, highlight=False)

    @contextmanager
    def observe(role: str) -> Iterator[Any]:
        console.print(f"building the {role} ({'oracle' if role == 'reference' else detector})", highlight=False)
        with SceneProgress(console=console, stages=STAGES) as progress:
            yield progress

    result = build_and_validate(
        log_root or Path("."), out, ref_cfg, cand_cfg, reference, candidate, tolerances, overwrite, plots, observe
    )
    for role, build in result.builds.items():
        for r in build.failed:
            typer.echo(
                f"warning: {role} build: {r.scene} failed ({r.reason}); its questions count as lost/gained", err=True
            )
    if as_json:
        typer.echo(json.dumps(result.summary, indent=2))
        return
    print_summary(console, result.summary, detector)
    console.print(f"results: {result.results_path}", markup=False, highlight=False)
    if result.plot_path is not None:
        console.print(f"error histograms: {result.plot_path}", markup=False, highlight=False)


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}" if whole else "-"


def _num(stats: dict[str, Any] | None, key: str) -> str:
    if not stats or not stats.get("n"):
        return "-"
    return f"{stats[key]:.2f}"


def print_summary(console: Any, summary: dict[str, Any], label: str = "") -> None:
    """One table per QA category (rows: predicate and answer dimension), then the totals, then the rules; tables
    split to fit the terminal (``stridegen.cli.terminal_tables``)."""
    from rich.markup import escape

    from stridegen.cli.terminal_tables import fitted_tables
    from stridegen.eval.validate.qa_compare import REASONS

    cand = summary["candidate"]
    console.print(
        f"answers of the {cand['detector'].get('name', label)} build (tracker {cand['tracker']}, segmenter "
        f"{cand['segmenter']}) against the oracle's: share beyond the bench's tolerance, |error| quantiles, "
        "questions lost and gained",
        markup=False,
        highlight=False,
    )
    columns = ["kind", "matched", "beyond %", "|err| p50", "|err| p90", "unit", "lost", "gained"]
    justify = ["left", "right", "right", "right", "right", "left", "right", "right"]
    for category in summary["categories"]:
        rows = []
        for row in (r for r in summary["rows"] if r["category"] == category):
            value_row = row["dimension"] == "value"
            name = row["predicate"] if value_row else f"{row['predicate']} ({row['dimension']})"
            cells = [
                row["kind"] or "-",
                str(row["matched"]),
                _pct(row["changed"], row["matched"]),
                _num(row.get("abs_error"), "p50"),
                _num(row.get("abs_error"), "p90"),
                row["unit"],
                str(row["lost"]) if value_row else "",
                str(row["gained"]) if value_row else "",
            ]
            rows.append((escape(name), [escape(c) for c in cells]))
        for table in fitted_tables(escape(category), "predicate", columns, rows, justify=justify):
            console.print(table)
    blocks = [*summary["categories"].items(), ("all", summary["total"])]
    styles = [None] * (len(blocks) - 1) + ["bold"]
    columns = ["matched", "changed", "beyond %", "lost", "gained"]
    rows = [
        (
            escape(cat),
            [
                str(b["matched"]),
                str(b["changed"]),
                _pct(b["changed"], b["matched"]),
                str(b["lost"]),
                str(b["gained"]),
            ],
        )
        for cat, b in blocks
    ]
    for table in fitted_tables("totals", "category", columns, rows, row_styles=styles):
        console.print(table)
    columns = [f"{side}: {r.replace('_', ' ')}" for side in ("lost", "gained") for r in REASONS]
    rows = [
        (escape(cat), [str(b[f"{side}_by_reason"][r]) for side in ("lost", "gained") for r in REASONS])
        for cat, b in blocks
    ]
    for table in fitted_tables("questions lost and gained, by reason", "category", columns, rows, row_styles=styles):
        console.print(table)
    total = summary["total"]
    console.print(
        f"questions: oracle {total['reference_questions']}, candidate {total['candidate_questions']}. matched, "
        "changed: scored answer dimensions; lost, gained: questions. Reasons, looking at the other build's "
        "keyframe: no track: an object the question names has no track there (missed, 2 m or more away, or a "
        "false positive); not marked: tracked but not a marked region of that image (visibility filter, region "
        "size); not asked: every object marked, the question not asked (an ambiguity threshold, another draw of "
        "the per-image caps, or a spatiotemporal group skipped, e.g. its target's track breaks before a horizon).",
        markup=False,
        highlight=False,
    )
    console.print("tolerances (oracle answer = ref, candidate answer = cand):", markup=False)
    for kind, rule in summary["tolerances"].items():
        console.print(f"  {kind}: {rule}", markup=False, highlight=False)
