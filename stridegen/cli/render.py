"""`stridegen render`: one question's images with its regions marked (stridegen.viz.render_qa)."""

from __future__ import annotations

from pathlib import Path

import typer

from stridegen.cli.errors import guarded


@guarded
def render(
    dataset_dir: Path = typer.Argument(..., help="Built dataset folder (manifest.json + shards/)."),
    qa: str = typer.Option(..., "--qa", help="The question_id to draw."),
    out: Path = typer.Option(..., "--out", "-o", help="Folder for the overlay images and the text file."),
    alpha: float = typer.Option(0.4, "--alpha", min=0.0, max=1.0, help="Opacity of the mask fills."),
) -> None:
    """Draw one question's images with its regions marked (Set-of-Mark) and write its answer next to them."""
    from stridegen.viz.render_qa import render_qa  # numpy and the shard reader: on use only (start-up, issue 35)

    paths = render_qa(dataset_dir, qa, out, alpha=alpha)
    for path in paths:
        typer.echo(str(path))
