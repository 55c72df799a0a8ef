"""`stridegen render`: one question's images with its regions marked (stridegen.viz.render_qa)."""

from __future__ import annotations

from pathlib import Path

import typer

from stridegen.core.errors import StrideGenError
from stridegen.viz.render_qa import render_qa


def render(
    dataset_dir: Path = typer.Argument(..., help="Built dataset folder (manifest.json + shards/)."),
    qa: str = typer.Option(..., "--qa", help="The question_id to draw."),
    out: Path = typer.Option(..., "--out", "-o", help="Folder for the overlay images and the text file."),
    alpha: float = typer.Option(0.4, "--alpha", min=0.0, max=1.0, help="Opacity of the mask fills."),
) -> None:
    """Draw one question's images with its regions marked (Set-of-Mark) and write its answer next to them."""
    try:
        paths = render_qa(dataset_dir, qa, out, alpha=alpha)
    except StrideGenError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    for path in paths:
        typer.echo(str(path))
