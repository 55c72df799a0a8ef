"""`stridegen judge ...`: run an LLM judge over items.jsonl, and measure judge-human agreement.

Mounted by stridegen/cli.py as the ``judge`` group (module ``stridegen.eval.judges.cli``, attribute
``judge_app``). Heavy imports (openai) happen inside the commands.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from stridegen.eval.judges.records import JudgeItem

judge_app = typer.Typer(
    name="judge",
    help="LLM-as-a-judge evaluation of free-form answers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


@judge_app.command("run")
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
    mode: str | None = typer.Option(None, "--mode", help="faithful | robust (default: config, else robust)"),
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
    dry_run: bool = typer.Option(False, "--dry-run", help="print the requests and estimated cost; send nothing"),
) -> None:
    """Judge every item of INPUT with METHOD; cached requests are not sent again."""
    from stridegen.eval.judges.cache import VerdictCache
    from stridegen.eval.judges.client import (
        ChatClient,
        CostMeter,
        apply_pricing,
        settings_from_sources,
    )
    from stridegen.eval.judges.config import load_method_config, load_pricing
    from stridegen.eval.judges.methods import MODES, JudgeContext, get_method
    from stridegen.eval.judges.records import JudgeError
    from stridegen.eval.judges.runner import dry_run as do_dry_run
    from stridegen.eval.judges.runner import run_judge, write_outputs
    from stridegen.eval.judges.safety import load_or_create_key

    try:
        judge = get_method(method)
    except JudgeError as exc:
        raise typer.BadParameter(str(exc), param_hint="--method") from exc
    cfg = load_method_config(method, config)
    run_mode = mode or cfg.get("mode", "robust")
    if run_mode not in MODES:
        raise typer.BadParameter(f"'{run_mode}' is not one of {', '.join(MODES)}", param_hint="--mode")
    overrides: dict[str, Any] = {
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
    settings = apply_pricing(settings_from_sources(cfg.get("client"), overrides), load_pricing(pricing))
    items, base_dir = _load_input(input_path, dataset, pred, out_dir, judge.uses_images and settings.supports_images)
    cache = VerdictCache(cache_dir or out_dir / "cache")
    ctx = JudgeContext(
        nonce_key=load_or_create_key(cache.directory / "nonce.key"),
        send_images=settings.supports_images,
        base_dir=base_dir,
        settings=cfg.get("settings") or {},
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
        raise typer.Exit(code=2)


def _load_input(
    input_path: Path | None, dataset: Path | None, pred: Path | None, out_dir: Path, with_images: bool
) -> tuple[list[JudgeItem], Path]:
    """Judge items from --input, or from --dataset + --pred (images drawn into <out>/images when judged)."""
    from stridegen.core.errors import StrideGenError
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

    try:
        predictions, _ = read_predictions_jsonl(str(pred), "error")
        items = items_from_dataset(dataset, predictions, out_dir / "images" if with_images else None, str(pred))
    except StrideGenError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(code=2) from None
    return items, dataset.resolve()


def _print_summary(summary: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{summary['method']} ({summary['mode']}, judge {summary['model']})")
    for col in ("group", "n", "mean (0-100)", "std", "errors"):
        table.add_column(col)

    def fmt(x: float | None) -> str:
        return "-" if x is None else f"{x:.2f}"

    o = summary["overall"]
    table.add_row("overall", str(o["n"]), fmt(o["mean_100"]), fmt(o["std_100"]), str(summary["n_error"]))
    for name, g in summary["groups"].items():
        table.add_row(name, str(g["n"]), fmt(g["mean_100"]), fmt(g["std_100"]), str(g["n_error"]))
    Console(file=sys.stdout).print(table)
    u = summary["usage"]
    typer.echo(
        f"requests sent {summary['requests_sent']}, cached {summary['requests_cached']}; tokens "
        f"{u['prompt_tokens']} in / {u['completion_tokens']} out; cost ${u['cost_usd']:.4f}; "
        f"flags {summary['flags']}"
    )


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    from stridegen.core.errors import PredictionFormatError

    if not path.exists():
        raise PredictionFormatError(path, "file does not exist")
    rows = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except ValueError as exc:
                raise PredictionFormatError(path, f"line {lineno}: {exc}") from exc
    return rows


@judge_app.command("agreement")
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
    out: Path | None = typer.Option(None, "--out", help="write the report as JSON here"),
) -> None:
    """Judge-human agreement: Pearson (sample/system level), pairwise w/o ties, Spearman, Kendall, kappa."""
    from stridegen.core.errors import PredictionFormatError
    from stridegen.eval.judges.agreement import agreement_report

    judged = {str(r["id"]): r for r in _read_jsonl(judge_path) if r.get("status", "ok") == "ok"}
    humans = _read_jsonl(human_path)
    a, b, systems, groups, a_dims, b_dims = [], [], [], [], [], []
    for h in humans:
        j = judged.get(str(h.get("id")))
        if j is None or "score" not in h:
            continue
        a.append(float(j["score"]))
        b.append(float(h["score"]))
        systems.append(str(h.get("system", j.get("system", ""))))
        groups.append(str(h.get("group", j.get("group", ""))))
        jd = (j.get("details") or {}).get("dimensions") or j.get("dimensions") or {}
        hd = h.get("dimensions") or {}
        common = sorted(set(jd) & set(hd))
        a_dims.append([float(jd[k]) for k in common])
        b_dims.append([float(hd[k]) for k in common])
    if len(a) < 2:
        raise PredictionFormatError(human_path, f"only {len(a)} id(s) match a judged verdict; need at least 2")
    report = agreement_report(
        a,
        b,
        systems=systems if any(systems) else None,
        groups=groups if any(groups) else None,
        a_dims=a_dims if any(a_dims) else None,
        b_dims=b_dims if any(b_dims) else None,
        n_boot=n_boot,
        alpha=alpha,
        seed=seed,
    )
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"judge vs human agreement ({len(a)} matched items, {int((1 - alpha) * 100)}% CI)")
    for col in ("metric", "value", "CI low", "CI high", "n"):
        table.add_column(col)
    for name, r in report.items():
        table.add_row(name, f"{r['value']:.4f}", f"{r['low']:.4f}", f"{r['high']:.4f}", str(r["n"]))
    Console(file=sys.stdout).print(table)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n")
