"""`stridegen report DIR [--eval RESULTS ...] --out report.html`: one self-contained HTML page of a dataset and
its evaluations (stridegen.viz.report, docs/report.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from stridegen.cli.errors import guarded


@guarded
def report(
    dataset_dir: Path = typer.Argument(..., help="Built dataset folder (manifest.json + shards/)."),
    eval_paths: list[Path] | None = typer.Option(
        None,
        "--eval",
        "-e",
        help="Evaluation results to show: a JSON file or a folder of them (eval lsr / spatial / detection / tracking, "
        "judge run / agreement); repeatable.",
        show_default=False,
    ),
    out: Path = typer.Option(Path("report.html"), "--out", "-o", help="The HTML file to write."),
    samples: int = typer.Option(24, "--samples", "-n", min=0, help="Gallery samples (half spatial, half groups)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the gallery's sample draw."),
    image_width: int = typer.Option(480, "--image-width", min=64, max=1920, help="Gallery image width (pixels)."),
    worst: int = typer.Option(
        8, "--worst", min=0, help="Worst answers shown per result with a per-question file (eval lsr / spatial)."
    ),
) -> None:
    """Write one HTML file (no network needed to view it): overview, distributions, visibility funnel, a sample
    gallery with Set-of-Mark images, and the evaluation results given with --eval (each labelled with its model, a
    blind baseline beside its model, and the worst answers with their Set-of-Mark image)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from stridegen.viz.report import write_report

    progress = Progress(
        TextColumn("reading tables"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = progress.add_task("scenes", total=None)

    def on_scene(done: int, total: int) -> None:
        progress.update(task, completed=done, total=total)

    with progress:
        result = write_report(
            dataset_dir,
            out,
            eval_paths or [],
            samples=samples,
            seed=seed,
            image_width=image_width,
            on_scene=on_scene,
            worst=worst,
        )
    kinds = ", ".join(result.evaluations) or "none"
    typer.echo(
        f"wrote {result.path} ({result.bytes / 1e6:.2f} MB) in {result.seconds['total']:.2f} s: {result.scenes} "
        f"scenes, {result.qa} QA, {result.samples} gallery samples; evaluations: {kinds}"
    )
