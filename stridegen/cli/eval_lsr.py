"""`stridegen eval lsr`: STRIDE-QA localization metrics from official bench files or stridegen records.

The options say which inputs go together; the items come from ``stridegen.eval.lsr.inputs``, the metrics from
``stridegen.eval.lsr.evaluate`` and the reports from ``stridegen.eval.lsr.report``.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import TYPE_CHECKING, cast

import typer

from stridegen.cli.errors import guarded
from stridegen.core.errors import MissingExtraError

if TYPE_CHECKING:
    from stridegen.eval.lsr.answer_values import ParserMode


def _usage(message: str, option: str | None = None) -> Exception:
    """A usage error (exit 2, one line): a bad value of ``option``, or inputs that do not go together."""
    from stridegen.core.errors import UsageError

    return typer.BadParameter(message, param_hint=f"'{option}'") if option else UsageError(message)


def _check_options(
    official: bool,
    records: Path | None,
    dataset: Path | None,
    sheet: Path | None,
    pred: Path | None,
    responses: Path | None,
    bench_dir: Path | None,
) -> None:
    """Which inputs go together (a UsageError, exit 2, otherwise)."""
    if sum(x is not None for x in (records, dataset)) + official > 1:
        raise _usage("give one input: official files (--bench-dir/--responses), --dataset or --records")
    if not official and records is None and dataset is None:
        raise _usage("give --responses [--bench-dir], --bench-dir --pred, --dataset --pred or --records --pred")
    if sheet is not None and dataset is None:
        raise _usage("--sheet goes with --dataset (official inputs read annotation_sheet.csv from --bench-dir)")
    if (records is not None or dataset is not None or (bench_dir is not None and responses is None)) and pred is None:
        raise _usage("--pred is required with --dataset, --records and --bench-dir alone")
    if responses is not None and pred is not None:
        raise _usage("--pred cannot be combined with --responses (responses already hold the answers)")


def summary_table(
    profile: str, parser: str, success_rates: dict[str, list[dict]], consistency: list[dict] | None
) -> str:
    """The run's averages as a text table for a person: success rate per dimension (in %, over every horizon, with
    its number of scored slots), then TLC and MLSR over the consistency groups (in %)."""
    rows = [
        (name, f"{rows[-1]['success_rate'] * 100:.1f}", str(rows[-1]["sample_size"]))
        for name, rows in success_rates.items()
        if rows
    ]
    if consistency:
        rows += [(key, f"{consistency[0][key] * 100:.1f}", "") for key in ("TLC", "MLSR")]
    header = ("metric", "success rate (%)", "slots")
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(3)]
    lines = [f"LSR summary (profile {profile}, parser {parser}; average over horizons)"]
    for r in (header, *rows):
        lines.append(f"{r[0]:<{widths[0]}}  {r[1]:>{widths[1]}}  {r[2]:>{widths[2]}}".rstrip())
    if consistency:
        lines.append("TLC: groups right at every horizon; MLSR: share of a group's horizons answered right (both in %)")
    return "\n".join(lines)


@guarded
def eval_lsr(
    out: Path = typer.Option(..., "--out", help="Output folder: metrics.json, metrics.md, items.jsonl, plots."),
    bench_dir: Path | None = typer.Option(
        None,
        "--bench-dir",
        help="Official STRIDE-QA-Bench annotation folder (strideqa_bench*_t*.json, annotation_sheet.csv).",
    ),
    responses: Path | None = typer.Option(None, "--responses", help="Official response file or folder (*_t*.json)."),
    records: Path | None = typer.Option(None, "--records", help="stridegen LsrRecord JSONL (dataset stand-in)."),
    dataset: Path | None = typer.Option(None, "--dataset", help="stridegen dataset folder (its spatiotemporal QA)."),
    sheet: Path | None = typer.Option(
        None,
        "--sheet",
        help="With --dataset: annotation sheet CSV (group_id, object_type, relation) for the per-scenario "
        "breakdown (default: the rule-based relations of stridegen.pipeline.scenario).",
    ),
    pred: Path | None = typer.Option(None, "--pred", help="Predictions JSONL: {question_id, pred} per line."),
    profile: str | None = typer.Option(
        None,
        "--profile",
        help="paper | strideqa-bench | a YAML file. Default: strideqa-bench for official inputs, paper otherwise.",
    ),
    parser: str | None = typer.Option(None, "--parser", help="official | robust (default: the profile's)."),
    on_invalid: str = typer.Option("error", "--on-invalid", help="Bad records: error | skip | fail (counted)."),
    missing: str | None = typer.Option(
        None,
        "--missing",
        help="Questions without a prediction: exclude | fail. "
        "Default: exclude for official responses (the toolkit's), fail otherwise.",
    ),
    plots: bool = typer.Option(True, "--plots/--no-plots", help="Write the polar and per-scenario plots."),
    as_json: bool = typer.Option(
        False, "--json", help="Print the summary as JSON (rates on a 0-1 scale) instead of a table in %."
    ),
) -> None:
    """Score localization answers: success rates per dimension and horizon, LSR, MLSR, TLC, TLC@k."""
    from stridegen.eval.lsr.evaluate import evaluate
    from stridegen.eval.lsr.inputs import official_items, record_items
    from stridegen.eval.lsr.report import write_reports
    from stridegen.eval.lsr.tolerance import load_profile

    if on_invalid not in ("error", "skip", "fail"):
        raise _usage(f"must be error, skip or fail, got {on_invalid!r}", "--on-invalid")
    if parser not in (None, "official", "robust"):
        raise _usage(f"must be official or robust, got {parser!r}", "--parser")
    if missing not in (None, "exclude", "fail"):
        raise _usage(f"must be exclude or fail, got {missing!r}", "--missing")
    if plots and importlib.util.find_spec("matplotlib") is None:
        raise MissingExtraError("plots", "matplotlib", alternative="--no-plots, which writes no plots")
    official = bench_dir is not None or responses is not None
    _check_options(official, records, dataset, sheet, pred, responses, bench_dir)
    prof = load_profile(profile or ("strideqa-bench" if official else "paper"))
    prof = prof.with_parser(cast("ParserMode | None", parser))
    if official:
        items, report = official_items(bench_dir, responses, pred, prof, on_invalid, missing or "exclude")
    else:
        assert pred is not None
        items, report = record_items(dataset, records, sheet, pred, prof, on_invalid, missing or "fail")
    result = evaluate(items, prof)
    paths = write_reports(result, out, report, plots=plots, items=items)
    summary = {name: rows[-1]["success_rate"] for name, rows in result.success_rates.items() if rows}
    if result.temporal_consistency:
        overall = result.temporal_consistency[0]
        summary.update({"TLC": overall["TLC"], "MLSR": overall["MLSR"]})
    if as_json:
        typer.echo(json.dumps({"profile": prof.name, "parser": prof.parser, "avg": summary}, indent=2))
    else:
        typer.echo(summary_table(prof.name, prof.parser, result.success_rates, result.temporal_consistency))
    if result.counts["localization_slots"] and not result.counts["consistency_groups"]:
        typer.echo(
            "note: no group has a scenario relation, so TLC / MLSR are empty under this profile "
            "(the toolkit needs annotation_sheet.csv; --profile paper scores every group)",
            err=True,
        )
    skipped = sum(report.get("skipped", {}).values())
    if skipped or report.get("missing_predictions"):
        typer.echo(
            f"note: {skipped} records skipped, {report.get('missing_predictions', 0)} questions without a "
            f"prediction ({report.get('missing_policy')}); see {paths['json']}",
            err=True,
        )
    typer.echo(f"wrote {', '.join(str(p) for p in paths.values())}")
