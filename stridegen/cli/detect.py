"""`stridegen detect` and `stridegen track`: nuScenes detection / tracking results files of a log, the inputs of
`stridegen eval detection` and `stridegen eval tracking`.

``detect LOG --out results.json [--detector NAME] [--option key=value ...] [--seed N] [--scenes a,b]
[--workers N] [--executor local|ray] [--overwrite]``
``track LOG --out tracking.json [detect's options] [--tracker center] [--max-age N] [--matching greedy|hungarian]
[--tracker-option key=value ...]``

Scene by scene on the scene runner (stridegen.jobs.detect): the parts are kept in ``OUT.parts/`` and a rerun
resumes. Exit code 2 for a configuration error (unknown backend, bad option, unknown scene) or an unreadable log,
1 when some scenes failed (stridegen.cli.errors, docs/cli.md).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from stridegen.cli import executor_options
from stridegen.cli.errors import exit_failed_scenes, guarded

if TYPE_CHECKING:
    from stridegen.jobs.detect import ResultsSummary
    from stridegen.run.runner import RunObserver

_LOG = typer.Argument(..., help="Log folder (nuScenes or AV2 layout; e.g. one written by `stridegen synth`).")
_DETECTOR = typer.Option(
    "oracle", "--detector", "-d", help="Detector backend: oracle, simulated, precomputed, a plugin or module:Factory."
)
_OPTION = typer.Option(
    None,
    "--option",
    help="Detector option key=value (YAML value), repeatable, e.g. --option profile=bevfusion.",
    show_default=False,
)
_SEED = typer.Option(0, "--seed", help="Seed, for detectors whose factory takes one (simulated).")
_SCENES = typer.Option(None, "--scenes", help="Comma-separated scene names or tokens (default: every scene).")
_FORMAT = typer.Option(None, "--format", help="Log format (default: detected from the folder).")
_VERSION = typer.Option(None, "--version", help="nuScenes version folder, e.g. v1.0-mini (when the root has several).")
_WORKERS = typer.Option(1, "--workers", "-w", min=1, help="Worker processes (one scene each).")
_OVERWRITE = typer.Option(
    False, "--overwrite", help="Replace the parts in OUT.parts/ of a run with other arguments (else resumed)."
)


def parse_options(items: list[str] | None) -> dict[str, Any]:
    """``["a=1", "b=x"]`` -> ``{"a": 1, "b": "x"}`` (values parsed as YAML); ConfigError for a malformed item."""
    from stridegen.run.config import parse_override

    return dict(parse_override(item) for item in items or [])


def _scene_list(text: str | None) -> list[str] | None:
    return None if text is None else [s.strip() for s in text.split(",") if s.strip()]


def _run(stages: tuple[str, ...], call: Callable[[RunObserver], ResultsSummary]) -> ResultsSummary:
    """``call`` with the CLI's scene progress (stderr) as its observer; the summary on stdout, or one error line
    per failed scene and exit code 1."""
    from rich.console import Console

    from stridegen.cli.progress import SceneProgress

    with SceneProgress(console=Console(stderr=True), stages=stages) as progress:
        summary = call(progress)
    exit_failed_scenes(summary.failed)
    console = Console()
    classes = ", ".join(f"{name} {count}" for name, count in summary.class_counts.items()) or "none"
    tracks = f", {summary.n_tracks} tracks" if summary.n_tracks else ""
    console.print(
        f"{summary.source}: {summary.n_frames} frames of {summary.n_scenes} scene(s), {summary.n_boxes} boxes"
        f"{tracks} ({classes}); {summary.n_samples} samples in the file",
        markup=False,
    )
    if summary.truncated:
        console.print(f"[yellow]{summary.truncated} lowest-scoring boxes dropped (at most 500 per sample)[/yellow]")
    console.print(f"wrote {summary.path}", markup=False)
    return summary


@guarded
def detect(
    log_root: Path = _LOG,
    out: Path = typer.Option(..., "--out", "-o", help="nuScenes detection-results JSON to write."),
    detector: str = _DETECTOR,
    option: list[str] | None = _OPTION,
    seed: int = _SEED,
    scenes: str | None = _SCENES,
    log_format: str | None = _FORMAT,
    version: str | None = _VERSION,
    workers: int = _WORKERS,
    overwrite: bool = _OVERWRITE,
    executor: str = executor_options.EXECUTOR,
    executor_address: str = executor_options.ADDRESS,
    executor_option: list[str] | None = executor_options.OPTION,
) -> None:
    """Run a detector over every frame of a log; write a nuScenes detection-results file (an entry for every
    sample) for `stridegen eval detection --gt LOG --pred OUT`. Scene by scene: a rerun resumes."""
    from stridegen.jobs.detect import run_detect

    options = parse_options(option)
    section = executor_options.executor_section(executor, executor_address, executor_option)

    def call(observer: RunObserver) -> ResultsSummary:
        return run_detect(
            log_root,
            out,
            detector,
            options,
            seed,
            _scene_list(scenes),
            log_format,
            version,
            workers=workers,
            executor=section,
            overwrite=overwrite,
            observer=observer,
        )

    _run(("detect",), call)


@guarded
def track(
    log_root: Path = _LOG,
    out: Path = typer.Option(..., "--out", "-o", help="nuScenes tracking-results JSON to write."),
    detector: str = _DETECTOR,
    option: list[str] | None = _OPTION,
    seed: int = _SEED,
    tracker: str = typer.Option("center", "--tracker", "-t", help="Tracker backend: center, precomputed, a plugin."),
    max_age: int | None = typer.Option(
        None, "--max-age", min=1, help="center: frames a lost track coasts before it ends (default 3)."
    ),
    matching: str | None = typer.Option(None, "--matching", help="center: greedy (default) or hungarian."),
    tracker_option: list[str] | None = typer.Option(
        None,
        "--tracker-option",
        help="Tracker option key=value, repeatable (e.g. path=tracks.json).",
        show_default=False,
    ),
    scenes: str | None = _SCENES,
    log_format: str | None = _FORMAT,
    version: str | None = _VERSION,
    workers: int = _WORKERS,
    overwrite: bool = _OVERWRITE,
    executor: str = executor_options.EXECUTOR,
    executor_address: str = executor_options.ADDRESS,
    executor_option: list[str] | None = executor_options.OPTION,
) -> None:
    """Detect, then track each scene; write a nuScenes tracking-results file (tracking classes only) for
    `stridegen eval tracking --gt LOG --pred OUT`. Scene by scene: a rerun resumes."""
    from stridegen.jobs.detect import run_track

    options = parse_options(option)
    tracker_options = parse_options(tracker_option)
    if max_age is not None:
        tracker_options["max_age"] = max_age
    if matching is not None:
        tracker_options["matching"] = matching
    section = executor_options.executor_section(executor, executor_address, executor_option)

    def call(observer: RunObserver) -> ResultsSummary:
        return run_track(
            log_root,
            out,
            detector,
            options,
            seed,
            tracker,
            tracker_options,
            _scene_list(scenes),
            log_format,
            version,
            workers=workers,
            executor=section,
            overwrite=overwrite,
            observer=observer,
        )

    _run(("detect", "track"), call)
