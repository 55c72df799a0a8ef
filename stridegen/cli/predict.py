"""`stridegen predict SOURCE --model M --out OUT`: a vision-language model answers a dataset's questions
(stridegen.predict; docs/predict.md)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer

from stridegen.cli import executor_options

_SIZE = re.compile(r"^\s*([0-9]+)\s*[xX]\s*([0-9]+)\s*$")


def parse_size(text: str) -> tuple[int, int] | None:
    """``--image-size``: ``"WxH"`` -> (W, H); ``"stored"`` -> None (the stored size)."""
    from stridegen.core.errors import ConfigError

    if text.strip().lower() == "stored":
        return None
    match = _SIZE.match(text)
    if not match:
        raise ConfigError(f"--image-size {text!r}: expected WIDTHxHEIGHT (e.g. 532x336) or 'stored'")
    return int(match.group(1)), int(match.group(2))


def predictor_options(name: str, model: str, option: list[str] | None, given: dict[str, Any]) -> dict[str, Any]:
    """The predictor's options: ``-O key=value`` items, the model, and each shortcut option that was given (an
    error when the predictor does not take it)."""
    from stridegen.cli.detect import parse_options
    from stridegen.core import registry
    from stridegen.core.errors import ConfigError

    options = parse_options(option)
    options["model"] = model
    for key, value in given.items():
        if value is None:
            continue
        if key in options and key != "model":
            raise ConfigError(f"--{key.replace('_', '-')} and -O {key}=... both given; use one of them")
        if not registry.accepts("predictor", name, key):
            raise ConfigError(f"--{key.replace('_', '-')}: predictor {name!r} has no option {key!r}")
        options[key] = value
    return options


class QuestionProgress:
    """The run's progress on stderr: questions answered (from the cache or the model) with rate and ETA, and
    scenes done / failed."""

    def __init__(self, counts: dict[str, int], console: Any) -> None:
        self.counts = counts
        self.console = console
        self.progress: Any = None
        self.bar: Any = None
        self.done = 0
        self.failed = 0

    def __enter__(self) -> QuestionProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()

    def planned(self, tasks: Sequence[tuple[int, str]]) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        if not tasks:
            return
        total = sum(self.counts.get(scene, 0) for _, scene in tasks)
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
        )
        self.progress.start()
        self.bar = self.progress.add_task(self._label(), total=total, rate="")

    def _label(self) -> str:
        return f"questions (scenes done {self.done}, failed {self.failed})"

    def event(self, event: Any) -> None:
        from stridegen.predict.job import PROGRESS_STAGE

        if self.bar is None or not event.stage.startswith(PROGRESS_STAGE):
            return
        self.progress.advance(self.bar, int(event.stage[len(PROGRESS_STAGE) :]))
        speed = self.progress.tasks[0].speed
        self.progress.update(self.bar, rate=f"{speed:.1f} q/s" if speed else "")

    def finished(self, job: int, result: Any) -> None:
        if result.ok:
            self.done += 1
        else:
            self.failed += 1
        if self.bar is not None:
            self.progress.update(self.bar, description=self._label())


def predict(
    source: Path = typer.Argument(..., help="A built dataset folder, or a strideqa-bench export folder."),
    model: str = typer.Option(
        ..., "--model", "-m", help="openai: the served model name; transformers: a model folder (or cached hub id)."
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (resumed if it holds this run)."),
    predictor: str = typer.Option("openai", "--predictor", "-p", help="openai, transformers, or a plugin."),
    base_url: str | None = typer.Option(
        None, "--base-url", help="openai: the server's /v1 URL (vLLM, SGLang, ...).", show_default=False
    ),
    api_key_env: str | None = typer.Option(
        None,
        "--api-key-env",
        help="openai: the environment variable holding the key [OPENAI_API_KEY].",
        show_default=False,
    ),
    concurrency: int | None = typer.Option(
        None, "--concurrency", "-c", min=1, help="openai: requests in flight [16].", show_default=False
    ),
    batch_size: int | None = typer.Option(
        None, "--batch-size", min=1, help="transformers: questions per generate call [8].", show_default=False
    ),
    option: list[str] | None = typer.Option(
        None,
        "--option",
        "-O",
        help="Predictor option key=value (YAML value), repeatable (docs/predict.md).",
        show_default=False,
    ),
    profile: str = typer.Option(
        "strideqa-bench", "--profile", help="Prompt profile: strideqa-bench, plain, or a YAML file."
    ),
    system_prompt_file: Path | None = typer.Option(
        None,
        "--system-prompt-file",
        help="Replace the profile's system prompts by this file's text.",
        show_default=False,
    ),
    image_size: str | None = typer.Option(
        None, "--image-size", help="Frame size WxH, or 'stored' [the profile's].", show_default=False
    ),
    blind: bool = typer.Option(False, "--blind", help="Leave the images out: the language-prior baseline."),
    max_new_tokens: int = typer.Option(200, "--max-new-tokens", min=1, help="Longest answer in tokens."),
    temperature: float = typer.Option(0.0, "--temperature", min=0.0, help="0: greedy decoding."),
    seed: int = typer.Option(42, "--seed", help="Generation seed."),
    limit: int | None = typer.Option(
        None,
        "--limit",
        min=1,
        help="Ask at most N questions per scene (the first ones): a quick trial.",
        show_default=False,
    ),
    cache: Path | None = typer.Option(
        None, "--cache", help="Reply cache folder (shared between runs) [OUT/cache].", show_default=False
    ),
    workers: int = typer.Option(1, "--workers", "-w", min=1, help="Worker processes (one scene each)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace a run of another model or setting."),
    executor: str = executor_options.EXECUTOR,
    executor_address: str = executor_options.ADDRESS,
    executor_option: list[str] | None = executor_options.OPTION,
) -> None:
    """Ask a vision-language model every question of a dataset; write predictions the evaluators read."""
    from rich.console import Console

    from stridegen.cli.errors import exit_failed_scenes
    from stridegen.predict.base import GenerationSettings
    from stridegen.predict.job import PredictSpec, run_predict
    from stridegen.predict.prompts import load_profile
    from stridegen.predict.questions import QuestionSource

    options = predictor_options(
        predictor,
        model,
        option,
        {"base_url": base_url, "api_key_env": api_key_env, "concurrency": concurrency, "batch_size": batch_size},
    )
    loaded = load_profile(profile, system_prompt_file)
    if image_size is not None:
        size = parse_size(image_size)
        image = loaded.image.model_copy(
            update={"width": None if size is None else size[0], "height": None if size is None else size[1]}
        )
        loaded = loaded.model_copy(update={"image": image})
    spec = PredictSpec(
        source=str(source),
        predictor=predictor,
        options=options,
        profile=loaded,
        generation=GenerationSettings(max_new_tokens=max_new_tokens, temperature=temperature, seed=seed),
        blind=blind,
        limit=limit,
        cache_dir=str(cache if cache is not None else out / "cache"),
        out_dir=str(out),
    )
    section = executor_options.executor_section(executor, executor_address, executor_option)
    counts = QuestionSource(source, spec.marks()).question_counts(limit)
    with QuestionProgress(counts, Console(stderr=True)) as progress:
        result = run_predict(spec, workers=workers, overwrite=overwrite, observer=progress, executor=section)
    s = result.summary
    latency = (
        ""
        if s["latency_p50_s"] is None
        else f"; latency p50 {s['latency_p50_s']:.2f} s, p95 {s['latency_p95_s']:.2f} s"
    )
    typer.echo(
        f"{result.answered} answered, {result.failed_questions} failed ({s['cached']} from the cache, {s['sent']} sent"
        f"; {s['prompt_tokens']} prompt + {s['completion_tokens']} completion tokens, ${s['cost_usd']:.4f}{latency})"
        f" in {s['wall_s']:.1f} s: {out / 'predictions.jsonl'}"
    )
    exit_failed_scenes(result.failed)
