"""`stridegen export DIR --format F --out OUT`: a built dataset in another tool's format (stridegen.jobs.export)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer

from stridegen.cli import executor_options
from stridegen.cli.errors import exit_failed_scenes, guarded

_COUNT = re.compile(r"[0-9]+")


def parse_balance(text: str) -> int | dict[str, int]:
    """``--balance``: ``"N"`` -> N, ``"Rel=N,Rel=N"`` -> {Rel: N}; ConfigError for any other form (relation names
    are checked by the exporter)."""
    from stridegen.core.errors import ConfigError

    form = "expected N or Relation=N,Relation=N with whole numbers N >= 0"
    text = text.strip()
    if _COUNT.fullmatch(text):
        return int(text)
    out: dict[str, int] = {}
    for item in text.split(","):
        rel, sep, count = (part.strip() for part in item.partition("="))
        if not sep or not rel or not _COUNT.fullmatch(count):
            raise ConfigError(f"--balance {text!r}: bad item {item.strip()!r}; {form}")
        if rel in out:
            raise ConfigError(f"--balance {text!r}: relation {rel!r} given twice")
        out[rel] = int(count)
    return out


def _exporter_options(option: list[str] | None, balance: str | None) -> dict[str, Any]:
    from stridegen.cli.detect import parse_options
    from stridegen.core.errors import ConfigError

    options = parse_options(option)
    if balance is not None:
        if "balance" in options:
            raise ConfigError("--balance and -O balance=... both given; use one of them")
        options["balance"] = parse_balance(balance)
    return options


@guarded
def export(
    dataset: Path = typer.Argument(..., help="Built dataset folder (manifest.json + shards/)."),
    format_name: str = typer.Option(
        ...,
        "--format",
        "-f",
        help="Exporter: strideqa, strideqa-bench, llava, messages, hf, answers, lmms-eval, or a plugin.",
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (resumed if it holds this export)."),
    workers: int = typer.Option(1, "--workers", "-w", min=1, help="Worker processes (one scene each)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an export of another source or format."),
    option: list[str] | None = typer.Option(
        None,
        "--option",
        "-O",
        help="Exporter option key=value (YAML value), repeatable, e.g. -O jpeg_quality=95 (docs/export.md).",
        show_default=False,
    ),
    balance: str | None = typer.Option(
        None,
        "--balance",
        help="strideqa-bench split: N groups per relation, or Relation=N,Relation=N (only those); "
        "the exporter option `balance` (docs/export.md).",
        show_default=False,
    ),
    executor: str = executor_options.EXECUTOR,
    executor_address: str = executor_options.ADDRESS,
    executor_option: list[str] | None = executor_options.OPTION,
) -> None:
    """Write the dataset in another format, scene by scene; a rerun resumes and gives the same bytes."""
    from rich.console import Console

    from stridegen.cli.progress import SceneProgress
    from stridegen.jobs.export import run_export

    options = _exporter_options(option, balance)
    section = executor_options.executor_section(executor, executor_address, executor_option)
    with SceneProgress(console=Console(stderr=True), stages=("export",)) as progress:
        result = run_export(
            dataset,
            out,
            format_name,
            options,
            workers=workers,
            overwrite=overwrite,
            observer=progress,
            executor=section,
        )
    exit_failed_scenes(result.failed)
    typer.echo(
        f"{format_name} export of {len(result.results)} scenes in {out} ({result.wall_s:.1f} s): {result.manifest_path}"
    )
