"""`stridegen judge ...`: run an LLM judge over items.jsonl, and measure judge-human agreement.

Mounted by stridegen.cli as the ``judge`` group (attribute ``judge_app``). The commands parse their options into
the objects of ``stridegen.eval.judges.evaluate``, which does the work, and print the results; heavy imports
(openai) happen inside the commands.

Exit codes: 0 every item judged; 1 some items failed (rerun to retry them); 2 bad input or usage, or the
endpoint refused the credentials (HTTP 401/403). Errors are one line on stderr, redacted: the commands are
``guarded`` (stridegen.cli.errors, docs/cli.md) with the judges' ``redact`` as the message filter.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from stridegen.cli.errors import guarded
from stridegen.llm.redact import redact

judge_app = typer.Typer(
    name="judge",
    help="LLM-as-a-judge evaluation of free-form answers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


@judge_app.command("run")
@guarded(clean=redact)
def run_command(
    method: str = typer.Option(..., "--method", "-m", help="intellicockpit | codalm | cee | general | pairwise"),
    input_path: Path | None = typer.Option(
        None,
        "--input",
        "-i",
        help="items.jsonl (id, question, reference, answer, category, optional image / answer_b / meta)",
    ),
    dataset: Path | None = typer.Option(
        None,
        "--dataset",
        help="stridegen dataset folder: judge --pred answers to its QA (the templated answer is the reference)",
    ),
    pred: Path | None = typer.Option(None, "--pred", help="with --dataset: predictions JSONL {question_id, pred}"),
    out_dir: Path = typer.Option(Path("out/judge"), "--out", "-o", help="verdicts.jsonl and summary.json go here"),
    mode: str | None = typer.Option(
        None, "--mode", help="robust (default) | faithful (the paper's prompt; open to answer injection)"
    ),
    config: Path | None = typer.Option(
        None, "--config", help="method YAML (default: the packaged stridegen/resources/judges/<method>.yaml)"
    ),
    pricing: Path | None = typer.Option(
        None, "--pricing", help="pricing YAML (default: the packaged stridegen/resources/judges/pricing.yaml)"
    ),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="default: <out>/cache"),
    base_url: str | None = typer.Option(
        None, "--base-url", help="OpenAI-compatible endpoint (env STRIDEGEN_JUDGE_BASE_URL / OPENAI_BASE_URL)"
    ),
    model: str | None = typer.Option(None, "--model", help="judge model (env STRIDEGEN_JUDGE_MODEL)"),
    api_key_env: str | None = typer.Option(None, "--api-key-env", help="env variable holding the API key"),
    concurrency: int | None = typer.Option(None, "--concurrency", min=1),
    rpm: float | None = typer.Option(None, "--rpm", help="requests per minute limit"),
    tpm: float | None = typer.Option(None, "--tpm", help="tokens per minute limit"),
    timeout_s: float | None = typer.Option(None, "--timeout", help="per-request timeout, seconds"),
    max_retries: int | None = typer.Option(None, "--max-retries", min=0),
    backoff_base_s: float | None = typer.Option(None, "--backoff-base", help="first backoff delay, seconds"),
    budget_usd: float | None = typer.Option(None, "--budget-usd", help="hard cost budget for this run"),
    images: bool | None = typer.Option(None, "--images/--no-images", help="send item images to the judge"),
    max_answer_chars: int | None = typer.Option(
        None,
        "--max-answer-chars",
        min=0,
        help="cut longer answers before judging, recorded per item (default: config, else 4000; 0: no cap)",
    ),
    max_reply_chars: int | None = typer.Option(
        None,
        "--max-reply-chars",
        min=1,
        help="a longer judge reply is an error of its item, not stored "
        "(default: env STRIDEGEN_REPLY_MAX_CHARS, config, else 1000000)",
    ),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="send nothing: print counts and the estimated cost, write the requests to <out>/dry_run_requests.jsonl",
    ),
    show_requests: int = typer.Option(
        0, "--show-requests", min=0, help="with --dry-run: also print the first N requests (JSON, one a line)"
    ),
) -> None:
    """Judge every item of INPUT with METHOD; cached requests are not sent again."""
    from stridegen.eval.judges.evaluate import (
        ClientOverrides,
        JudgeInputs,
        JudgeOptionError,
        JudgeRunOptions,
        prepare_run,
    )

    client = ClientOverrides(
        base_url=base_url,
        model=model,
        api_key_env=api_key_env,
        concurrency=concurrency,
        requests_per_minute=rpm,
        tokens_per_minute=tpm,
        timeout_s=timeout_s,
        max_retries=max_retries,
        backoff_base_s=backoff_base_s,
        budget_usd=budget_usd,
        supports_images=images,
        max_reply_chars=max_reply_chars,
    )
    options = JudgeRunOptions(
        method,
        JudgeInputs(input_path, dataset, pred),
        out_dir,
        mode=mode,
        config=config,
        pricing=pricing,
        cache_dir=cache_dir,
        client=client,
        max_answer_chars=max_answer_chars,
    )
    try:
        run = prepare_run(options, warn=lambda text: typer.echo(f"warning: {text}", err=True))
    except JudgeOptionError as exc:
        raise typer.BadParameter(exc.reason, param_hint=exc.option) from exc
    if dry_run:
        estimate, requests_path, summary_path = run.dry_run()
        _print_dry_run(estimate, requests_path, summary_path, show_requests)
        return
    result, verdict_path, summary_path = run.execute()
    _print_summary(result.summary)
    typer.echo(f"verdicts: {verdict_path}\nsummary: {summary_path}")
    if result.summary["n_error"]:
        typer.echo(f"{result.summary['n_error']} item(s) failed; rerun to retry them (cached ones are kept)", err=True)
        raise typer.Exit(code=1)


def _print_summary(summary: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=escape(f"{summary['method']} ({summary['mode']}, judge {summary['model']})"))
    level = round(100 * float(summary.get("ci", {}).get("level", 0.95)))
    for col in ("group", "n", "mean (0-100)", f"{level}% CI", "std", "errors"):
        table.add_column(col)

    def fmt(x: float | None) -> str:
        return "-" if x is None else f"{x:.2f}"

    def ci(s: dict[str, Any]) -> str:
        lo, hi = s.get("ci_low_100"), s.get("ci_high_100")
        return "-" if lo is None or hi is None else f"{lo:.1f} to {hi:.1f}"

    o = summary["overall"]
    table.add_row("overall", str(o["n"]), fmt(o["mean_100"]), ci(o), fmt(o["std_100"]), str(summary["n_error"]))
    for name, g in summary["groups"].items():
        table.add_row(escape(name), str(g["n"]), fmt(g["mean_100"]), ci(g), fmt(g["std_100"]), str(g["n_error"]))
    Console(file=sys.stdout).print(table)
    u = summary["usage"]
    typer.echo(
        f"requests sent {summary['requests_sent']}, cached {summary['requests_cached']}; tokens "
        f"{u['prompt_tokens']} in / {u['completion_tokens']} out; cost ${u['cost_usd']:.4f}; "
        f"flags {summary['flags']}"
    )


def _print_dry_run(estimate: dict[str, Any], requests_path: Path, summary_path: Path, show: int) -> None:
    """The first ``show`` lines of the requests file, then the dry run's counts and estimate for a person."""
    if show:
        with requests_path.open(encoding="utf-8") as f:
            for _, line in zip(range(show), f, strict=False):
                sys.stdout.write(line)
    e = estimate
    unsendable = f", {e['not_sendable']:,} not sendable (listed in the requests file)" if e["not_sendable"] else ""
    typer.echo(
        f"dry run of {e['method']} ({e['mode']}, judge {e['model']}): nothing was sent\n"
        f"  items             {e['items']:,}{unsendable}\n"
        f"  requests          {e['requests']:,} to send, {e['cached']:,} cached\n"
        f"  distinct images   {e['distinct_images']:,} in the requests to send\n"
        f"  prompt tokens     {e['est_prompt_tokens']:,} (estimated)\n"
        f"  completion tokens {e['max_output_tokens']:,} at most (max_tokens of each request)\n"
        f"  cost              ${e['est_cost_usd_upper']:.4f} at most\n"
        f"requests: {requests_path}\nsummary: {summary_path}"
    )


@judge_app.command("agreement")
@guarded(clean=redact)
def agreement_command(
    judge_path: Path = typer.Option(
        ..., "--judge", help="verdicts.jsonl of a judge run (or any JSONL with id and score)"
    ),
    human_path: Path = typer.Option(
        ..., "--human", help="JSONL: id, score, optional dimensions {name: score}, system, group"
    ),
    n_boot: int = typer.Option(1000, "--n-boot", min=0, help="bootstrap replicates (0: no intervals)"),
    seed: int = typer.Option(0, "--seed"),
    alpha: float = typer.Option(0.05, "--alpha"),
    allow_scale_mismatch: bool = typer.Option(
        False,
        "--allow-scale-mismatch",
        help="compare scores on different scales (e.g. a 0/1 judge with 1-10 human ratings) instead of refusing",
    ),
    out: Path | None = typer.Option(None, "--out", help="write the report as strict JSON here"),
) -> None:
    """Judge-human agreement: Pearson (sample/system level), pairwise w/o ties, Spearman, Kendall, kappa."""
    from stridegen.eval.judges.evaluate import agreement_from_files

    report = agreement_from_files(judge_path, human_path, n_boot, seed, alpha, allow_scale_mismatch)
    _print_agreement(report)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2, allow_nan=False) + "\n")


def _print_agreement(report: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    alpha = report["bootstrap"]["alpha"]

    def fmt(x: float | None) -> str:
        return "-" if x is None else f"{x:.4f}"

    table = Table(title=f"judge vs human agreement ({report['n_matched']} matched items, {int((1 - alpha) * 100)}% CI)")
    for col in ("metric", "value", "CI low", "CI high", "n"):
        table.add_column(col)
    for name, r in report["metrics"].items():
        table.add_row(name, fmt(r["value"]), fmt(r["low"]), fmt(r["high"]), str(r["n"]))
    Console(file=sys.stdout).print(table)
    scales = report["scales"]
    if not scales["compatible"]:
        typer.echo(
            f"warning: judge scale {scales['judge']} vs human scale {scales['human']}: compared because "
            "--allow-scale-mismatch was given",
            err=True,
        )
