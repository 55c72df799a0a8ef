"""`stridegen export DIR --format F --out OUT`: a built dataset in another tool's format (stridegen.run.export)."""

from __future__ import annotations

from pathlib import Path

import typer


def export(
    dataset: Path = typer.Argument(..., help="Built dataset folder (manifest.json + shards/)."),
    format_name: str = typer.Option(..., "--format", "-f", help="Exporter: strideqa-bench, or a plugin name."),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (resumed if it holds this export)."),
    workers: int = typer.Option(1, "--workers", "-w", min=1, help="Worker processes (one scene each)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an export of another source or format."),
) -> None:
    """Write the dataset in another format, scene by scene; a rerun resumes and gives the same bytes."""
    from rich.console import Console

    from stridegen.cli.progress import SceneProgress
    from stridegen.core.errors import StrideGenError
    from stridegen.run.export import run_export

    console = Console(stderr=True)
    try:
        with SceneProgress(console=console, stages=("export",)) as progress:
            result = run_export(dataset, out, format_name, workers=workers, overwrite=overwrite, observer=progress)
    except StrideGenError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if not result.ok:
        for r in result.failed:
            typer.echo(f"error: {r.scene}: {r.reason}", err=True)
        typer.echo(f"{len(result.failed)} scene(s) failed; rerun to retry them", err=True)
        raise typer.Exit(1)
    typer.echo(
        f"{format_name} export of {len(result.results)} scenes in {out} ({result.wall_s:.1f} s): {result.manifest_path}"
    )
