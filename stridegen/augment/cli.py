"""`stridegen augment`: robustness splits (not yet) and the corruption preview sheet."""

from __future__ import annotations

from pathlib import Path

import typer

SPLIT_NOT_AVAILABLE = (
    "building a robustness split from a dataset needs the shard reader, which is not available yet; "
    "for now `stridegen augment --preview IMAGE --out sheet.png` draws what each corruption and severity does"
)


def augment(
    dataset: Path | None = typer.Argument(None, help="Built dataset folder (robustness split: not available yet)."),
    out: Path = typer.Option(..., "--out", "-o", help="Output: the contact sheet file (.png / .jpg)."),
    preview: Path | None = typer.Option(None, "--preview", help="Draw a corruption x severity sheet of this image."),
    corruptions: str = typer.Option("all", "--corruptions", "-c",
                                    help="Comma-separated names or groups (intellicockpit, nuscenes_c, drivebench, "
                                         "imagenet_c), or 'all'."),
    severity: str = typer.Option("all", "--severity", "-s", help="1-5, a list such as 1,3,5, a range 2-4, or 'all'."),
    seed: int = typer.Option(0, "--seed", help="Seed of every random draw."),
    tile_width: int = typer.Option(320, "--tile-width", help="Width of one tile of the sheet in pixels."),
) -> None:
    """Degrade images with the corruption library (IntelliCockpitBench, nuScenes-C, DriveBench, ImageNet-C)."""
    from stridegen.augment.corruptions import CAMERA_CORRUPTIONS, resolve_names, resolve_severities
    from stridegen.augment.preview import contact_sheet, read_rgb, write_rgb
    from stridegen.errors import ConfigError

    if preview is None:
        typer.echo(f"error: {SPLIT_NOT_AVAILABLE}", err=True)
        raise typer.Exit(2)
    if dataset is not None:
        typer.echo("error: give either a DATASET folder or --preview IMAGE, not both", err=True)
        raise typer.Exit(2)
    if tile_width < 32:
        typer.echo("error: --tile-width must be at least 32", err=True)
        raise typer.Exit(2)
    try:
        names = resolve_names(corruptions)
        levels = resolve_severities(severity)
        skipped = [n for n in names if n in CAMERA_CORRUPTIONS]
        sheet = contact_sheet(read_rgb(preview), names, levels, seed=seed, tile_width=tile_width)
        path = write_rgb(out, sheet)
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    shown = len(names) - len(skipped)
    typer.echo(f"wrote {path} ({sheet.shape[1]}x{sheet.shape[0]}): {shown} corruptions x {len(levels)} severities")
    if skipped:
        typer.echo(f"not shown (they act on the cameras of a frame, not on one image): {', '.join(skipped)}")
