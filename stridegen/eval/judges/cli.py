"""`stridegen judge ...`: run an LLM judge over items.jsonl, and measure judge-human agreement.

Mounted by stridegen/cli.py as the ``judge`` group (module ``stridegen.eval.judges.cli``, attribute
``judge_app``). Heavy imports (openai) happen inside the commands.

Exit codes: 0 every item judged; 1 some items failed (rerun to retry them); 2 bad input or usage, or the
endpoint refused the credentials (HTTP 401/403). Errors are one line on stderr, redacted: the commands are
``guarded`` (stridegen.core.cli_errors, docs/cli.md) with the judges' ``redact`` as the message filter.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from stridegen.core.cli_errors import guarded
from stridegen.eval.judges.redact import redact

if TYPE_CHECKING:
    from stridegen.eval.judges.methods import JudgeMethod
    from stridegen.eval.judges.records import JudgeItem

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
    dry_run: bool = typer.Option(False, "--dry-run", help="print the requests and estimated cost; send nothing"),
) -> None:
    """Judge every item of INPUT with METHOD; cached requests are not sent again."""
    from stridegen.eval.judges.methods import get_method
    from stridegen.eval.judges.records import JudgeError

    try:
        judge = get_method(method)
    except JudgeError as exc:
        raise typer.BadParameter(str(exc), param_hint="--method") from exc
    client_overrides: dict[str, Any] = {
        k: v
        for k, v in {
            "base_url": base_url,
            "model": model,
            "api_key_env": api_key_env,
            "concurrency": concurrency,
            "requests_per_minute": rpm,
            "tokens_per_minute": tpm,
            "timeout_s": timeout_s,
            "max_retries": max_retries,
            "backoff_base_s": backoff_base_s,
            "budget_usd": budget_usd,
            "supports_images": images,
        }.items()
        if v is not None
    }
    _run(
        judge,
        method,
        mode=mode,
        config=config,
        pricing=pricing,
        client_overrides=client_overrides,
        sources=(input_path, dataset, pred),
        out_dir=out_dir,
        cache_dir=cache_dir,
        max_answer_chars=max_answer_chars,
        dry_run=dry_run,
    )


def _run(
    judge: JudgeMethod,
    method: str,
    *,
    mode: str | None,
    config: Path | None,
    pricing: Path | None,
    client_overrides: dict[str, Any],
    sources: tuple[Path | None, Path | None, Path | None],
    out_dir: Path,
    cache_dir: Path | None,
    max_answer_chars: int | None,
    dry_run: bool,
) -> None:
    """The body of ``judge run`` once the method is known; errors go to the caller (the command's guard)."""
    from stridegen.eval.judges.cache import VerdictCache
    from stridegen.eval.judges.client import (
        ChatClient,
        CostMeter,
        apply_pricing,
        settings_from_sources,
    )
    from stridegen.eval.judges.config import load_method_config, load_pricing
    from stridegen.eval.judges.methods import (
        DEFAULT_MAX_ANSWER_CHARS,
        DEFAULT_MODE,
        FAITHFUL_WARNING,
        MODES,
        JudgeContext,
    )
    from stridegen.eval.judges.runner import dry_run as do_dry_run
    from stridegen.eval.judges.runner import run_judge, write_outputs
    from stridegen.eval.judges.safety import load_or_create_key

    cfg = load_method_config(method, config)
    run_mode = mode or cfg.get("mode", DEFAULT_MODE)
    if run_mode not in MODES:
        raise typer.BadParameter(f"'{run_mode}' is not one of {', '.join(MODES)}", param_hint="--mode")
    if run_mode == "faithful":
        typer.echo(f"warning: {FAITHFUL_WARNING}", err=True)
    settings = apply_pricing(settings_from_sources(cfg.get("client"), client_overrides), load_pricing(pricing))
    items, base_dir = _load_input(*sources, out_dir, judge.uses_images and settings.supports_images)
    method_settings = cfg.get("settings") or {}
    cap = max_answer_chars
    if cap is None:
        cap = int(method_settings.get("max_answer_chars", DEFAULT_MAX_ANSWER_CHARS))
    cache = VerdictCache(cache_dir or out_dir / "cache")
    ctx = JudgeContext(
        nonce_key=load_or_create_key(cache.directory / "nonce.key"),
        send_images=settings.supports_images,
        base_dir=base_dir,
        settings=method_settings,
        max_answer_chars=cap or None,
    )
    if dry_run:
        from stridegen.eval.judges.runner import plan

        meter = CostMeter(settings.price_input_per_mtok, settings.price_output_per_mtok)
        do_dry_run(
            plan(items, judge, run_mode, ctx), cache, settings.model, meter, settings.image_tokens_estimate, sys.stdout
        )
        return
    client = ChatClient(settings)
    result = run_judge(items, judge, run_mode, ctx, cache, client, concurrency=settings.concurrency)
    verdict_path, summary_path = write_outputs(result, out_dir)
    _print_summary(result.summary)
    typer.echo(f"verdicts: {verdict_path}\nsummary: {summary_path}")
    if result.summary["n_error"]:
        typer.echo(f"{result.summary['n_error']} item(s) failed; rerun to retry them (cached ones are kept)", err=True)
        raise typer.Exit(code=1)


def _load_input(
    input_path: Path | None, dataset: Path | None, pred: Path | None, out_dir: Path, with_images: bool
) -> tuple[list[JudgeItem], Path]:
    """Judge items from --input, or from --dataset + --pred (images drawn into <out>/images when judged)."""
    from stridegen.eval.judges.runner import load_items

    one_source = "give either --input items.jsonl or --dataset DIR --pred preds.jsonl"
    if input_path is not None:
        if dataset is not None:
            raise typer.BadParameter(one_source)
        if pred is not None:
            raise typer.BadParameter("--pred goes with --dataset", param_hint="--pred")
        return load_items(input_path), input_path.resolve().parent
    if dataset is None:
        raise typer.BadParameter(one_source)
    if pred is None:
        raise typer.BadParameter("--dataset needs --pred (predictions JSONL)", param_hint="--pred")
    from stridegen.eval.judges.dataset_items import items_from_dataset
    from stridegen.eval.lsr.algo import read_predictions_jsonl

    predictions, _ = read_predictions_jsonl(str(pred), "error")
    items = items_from_dataset(dataset, predictions, out_dir / "images" if with_images else None, str(pred))
    return items, dataset.resolve()


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


def _read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line; one-line errors naming the file and line."""
    from stridegen.core.errors import PredictionFormatError
    from stridegen.formats.textfile import iter_jsonl

    rows = []
    for lineno, row in iter_jsonl(path, "file", PredictionFormatError):
        if not isinstance(row, dict):
            raise PredictionFormatError(path, f"line {lineno}: expected a JSON object, got {type(row).__name__}")
        rows.append((lineno, row))
    return rows


def _number(path: Path, lineno: int, value: Any, what: str) -> float:
    import math

    from stridegen.core.errors import PredictionFormatError
    from stridegen.formats.textfile import shown

    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise PredictionFormatError(path, f"line {lineno}: {what} is not a number: {shown(value)}")
    try:
        number = float(value)
    except ValueError:
        raise PredictionFormatError(path, f"line {lineno}: {what} is not a number: {shown(value)}") from None
    if not math.isfinite(number):
        raise PredictionFormatError(path, f"line {lineno}: {what} is not finite: {shown(value)}")
    return number


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
    report = _agreement(judge_path, human_path, n_boot, seed, alpha, allow_scale_mismatch)
    _print_agreement(report)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2, allow_nan=False) + "\n")


def _agreement(
    judge_path: Path, human_path: Path, n_boot: int, seed: int, alpha: float, allow_scale_mismatch: bool
) -> dict[str, Any]:
    """The agreement report with its header (matched count, scales, bootstrap settings)."""
    from stridegen.core.errors import PredictionFormatError
    from stridegen.eval.judges.agreement import (
        METHOD_SCALES,
        agreement_report,
        describe_scale,
        infer_scale,
        scales_compatible,
    )

    judged: dict[str, tuple[int, dict[str, Any]]] = {}
    for lineno, r in _read_jsonl(judge_path):
        if r.get("status", "ok") == "ok" and "id" in r:
            judged[str(r["id"])] = (lineno, r)
    a, b, systems, groups, a_dims, b_dims, methods = [], [], [], [], [], [], set()
    for lineno, h in _read_jsonl(human_path):
        hit = judged.get(str(h.get("id")))
        if hit is None or "score" not in h:
            continue
        jline, j = hit
        a.append(_number(judge_path, jline, j.get("score"), "'score'"))
        b.append(_number(human_path, lineno, h["score"], "'score'"))
        methods.add(str(j.get("method", "")))
        systems.append(str(h.get("system", j.get("system", ""))))
        groups.append(str(h.get("group", j.get("group", ""))))
        jd = (j.get("details") or {}).get("dimensions") or j.get("dimensions") or {}
        hd = h.get("dimensions") or {}
        common = sorted(set(jd) & set(hd)) if isinstance(jd, dict) and isinstance(hd, dict) else []
        a_dims.append([_number(judge_path, jline, jd[k], f"dimension '{k}'") for k in common])
        b_dims.append([_number(human_path, lineno, hd[k], f"dimension '{k}'") for k in common])
    if len(a) < 2:
        raise PredictionFormatError(
            human_path,
            f"only {len(a)} id(s) with a score match a verdict of {judge_path} ({len(judged)} judged); need at least 2",
        )
    method = next(iter(methods)) if len(methods) == 1 else ""
    judge_scale = METHOD_SCALES.get(method) or infer_scale(a)
    human_scale = infer_scale(b)
    compatible = scales_compatible(judge_scale, human_scale)
    if not compatible and not allow_scale_mismatch:
        source = f"method {method}" if method in METHOD_SCALES else "from its values"
        raise PredictionFormatError(
            human_path,
            f"scale mismatch: judge scores are {describe_scale(judge_scale)} ({source}) but human scores are "
            f"{describe_scale(human_scale)} (min {min(b):g}, max {max(b):g}); agreement across scales is "
            "meaningless; pass --allow-scale-mismatch to compute it anyway",
        )
    metrics = agreement_report(
        a,
        b,
        systems=systems if any(systems) else None,
        groups=groups if any(groups) else None,
        a_dims=a_dims if any(a_dims) else None,
        b_dims=b_dims if any(b_dims) else None,
        n_boot=n_boot,
        alpha=alpha,
        seed=seed,
        categorical=judge_scale in ("binary", "pairwise"),
    )
    return {
        "n_matched": len(a),
        "scales": {
            "judge": judge_scale,
            "human": human_scale,
            "compatible": compatible,
            "mismatch_allowed": bool(allow_scale_mismatch and not compatible),
        },
        "bootstrap": {"n_boot": n_boot, "alpha": alpha, "seed": seed},
        "metrics": metrics,
    }


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
