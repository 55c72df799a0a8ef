"""`stridegen detect` and `stridegen track`: nuScenes detection / tracking results files of a log, the inputs of
`stridegen eval detection` and `stridegen eval tracking`.

``detect LOG --out results.json [--detector NAME] [--option key=value ...] [--seed N] [--scenes a,b]``
``track LOG --out tracking.json [detect's options] [--tracker center] [--max-age N] [--matching greedy|hungarian]
[--tracker-option key=value ...]``

Exit code 2 for a configuration error (unknown backend, bad option, unknown scene) or an unreadable log
(stridegen.cli.errors, docs/cli.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from stridegen.cli.errors import guarded

if TYPE_CHECKING:
    from rich.console import Console

    from stridegen.run.detect import ResultsSummary

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


def parse_options(items: list[str] | None) -> dict[str, Any]:
    """``["a=1", "b=x"]`` -> ``{"a": 1, "b": "x"}`` (values parsed as YAML); ConfigError for a malformed item."""
    from stridegen.run.config import parse_override

    return dict(parse_override(item) for item in items or [])


def _scene_list(text: str | None) -> list[str] | None:
    return None if text is None else [s.strip() for s in text.split(",") if s.strip()]


@contextmanager
def _frame_progress(console: Console, label: str) -> Iterator[Callable[[int, int], None]]:
    """A rich bar over frames, shown from the first report on (an error before it prints no empty bar)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console)
    task = progress.add_task(label, total=None)

    def report(done: int, total: int) -> None:
        if not progress.live.is_started:
            progress.start()
        progress.update(task, completed=done, total=total)

    try:
        yield report
    finally:
        if progress.live.is_started:  # stop() on a bar never shown would still print a newline
            progress.stop()


def _run(label: str, call: Callable[[Callable[[int, int], None]], ResultsSummary]) -> ResultsSummary:
    from rich.console import Console

    console = Console()
    with _frame_progress(console, label) as progress:
        summary = call(progress)
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
) -> None:
    """Run a detector over every frame of a log; write a nuScenes detection-results file (an entry for every
    sample) for `stridegen eval detection --gt LOG --pred OUT`."""
    from stridegen.run.detect import run_detect

    def call(progress: Callable[[int, int], None]) -> ResultsSummary:
        return run_detect(
            log_root, out, detector, parse_options(option), seed, _scene_list(scenes), log_format, version, progress
        )

    _run("detect", call)


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
) -> None:
    """Detect, then track each scene; write a nuScenes tracking-results file (tracking classes only) for
    `stridegen eval tracking --gt LOG --pred OUT`."""
    from stridegen.run.detect import run_track

    def call(progress: Callable[[int, int], None]) -> ResultsSummary:
        tracker_options = parse_options(tracker_option)
        if max_age is not None:
            tracker_options["max_age"] = max_age
        if matching is not None:
            tracker_options["matching"] = matching
        return run_track(
            log_root,
            out,
            detector,
            parse_options(option),
            seed,
            tracker,
            tracker_options,
            _scene_list(scenes),
            log_format,
            version,
            progress,
        )

    _run("track", call)
