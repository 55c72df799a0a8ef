"""`stridegen augment`: robustness splits of a built dataset, and the corruption preview sheet.

- ``stridegen augment DIR --out DIR2 --corruptions NAMES|all --severity 1-5|all [--seed] [--workers] [--overwrite]``
  writes one dataset per (corruption, severity) under DIR2 (stridegen.jobs.augment);
- ``stridegen augment --preview IMAGE --out sheet.png`` draws a corruption x severity contact sheet.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from stridegen.cli import executor_options
from stridegen.cli.errors import EXIT_FAILED, guarded, one_line

if TYPE_CHECKING:
    from stridegen.jobs.augment import RobustnessResult
    from stridegen.run.config import ExecutorSection


def _preview(preview: Path, out: Path, corruptions: str, severity: str, seed: int, tile_width: int) -> None:
    from stridegen.augment.corruptions import CAMERA_CORRUPTIONS, resolve_names, resolve_severities
    from stridegen.formats.images import check_image_path, read_rgb, write_rgb
    from stridegen.viz.contact_sheet import contact_sheet

    if tile_width < 32:
        raise typer.BadParameter("must be at least 32", param_hint="--tile-width")
    check_image_path(out)
    names = resolve_names(corruptions)
    levels = resolve_severities(severity)
    skipped = [n for n in names if n in CAMERA_CORRUPTIONS]
    sheet = contact_sheet(read_rgb(preview), names, levels, seed=seed, tile_width=tile_width)
    path = write_rgb(out, sheet)
    shown = len(names) - len(skipped)
    typer.echo(f"wrote {path} ({sheet.shape[1]}x{sheet.shape[0]}): {shown} corruptions x {len(levels)} severities")
    if skipped:
        typer.echo(f"not shown (they act on the cameras of a frame, not on one image): {', '.join(skipped)}")


def _split(
    dataset: Path,
    out: Path,
    corruptions: str,
    severity: str,
    seed: int,
    workers: int,
    overwrite: bool,
    jpeg_quality: int,
    executor: ExecutorSection,
) -> None:
    from rich.console import Console

    from stridegen.augment.split import resolve_corruptions, resolve_levels
    from stridegen.cli.progress import SceneProgress
    from stridegen.jobs.augment import build_robustness_split

    console = Console()
    labels = [name for name in resolve_corruptions(corruptions) for _ in resolve_levels(severity)]
    with SceneProgress(console=console, job_labels=labels, label_width=32) as progress:
        result = build_robustness_split(
            dataset,
            out,
            corruptions,
            severity,
            seed=seed,
            workers=workers,
            overwrite=overwrite,
            jpeg_quality=jpeg_quality,
            observer=progress,
            executor=executor,
        )
    console.print(summary_table(result))
    console.print(f"index: {result.index_path}", markup=False)
    failed = [(s.spec.rel_path, r) for s in result.splits for r in s.failed]
    if failed:
        typer.echo(f"{len(failed)} scene(s) failed:", err=True)
        for rel, r in failed:
            typer.echo(f"error: {one_line(f'{rel} {r.scene}: {r.reason}')}", err=True)
        raise typer.Exit(EXIT_FAILED)


@guarded
def augment(
    dataset: Path | None = typer.Argument(None, help="Built dataset folder to rewrite with degraded images."),
    out: Path = typer.Option(
        ...,
        "--out",
        "-o",
        help="Output: the splits' folder (with DATASET) or the contact sheet file (with --preview: .png / .jpg).",
    ),
    preview: Path | None = typer.Option(None, "--preview", help="Draw a corruption x severity sheet of this image."),
    corruptions: str = typer.Option(
        "all",
        "--corruptions",
        "-c",
        help="Comma-separated names or groups (intellicockpit, nuscenes_c, drivebench, imagenet_c), or 'all'.",
    ),
    severity: str = typer.Option("all", "--severity", "-s", help="1-5, a list such as 1,3,5, a range 2-4, or 'all'."),
    seed: int = typer.Option(0, "--seed", help="Seed of every random draw."),
    workers: int = typer.Option(1, "--workers", "-w", min=1, help="Worker processes (one scene of one split each)."),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace splits in --out made from another source or with other arguments."
    ),
    jpeg_quality: int = typer.Option(
        95, "--jpeg-quality", min=1, max=100, help="JPEG quality of the re-encoded images."
    ),
    tile_width: int = typer.Option(320, "--tile-width", help="Width of one tile of the sheet in pixels (--preview)."),
    executor: str = executor_options.EXECUTOR,
    executor_address: str = executor_options.ADDRESS,
    executor_option: list[str] | None = executor_options.OPTION,
) -> None:
    """Degrade images with the corruption library (IntelliCockpitBench, nuScenes-C, DriveBench, ImageNet-C): a
    robustness split per (corruption, severity) of a built dataset, or a preview sheet of one image."""
    if (preview is None) == (dataset is None):
        raise typer.BadParameter("give either a DATASET folder (robustness splits) or --preview IMAGE (contact sheet)")
    if preview is not None:
        _preview(preview, out, corruptions, severity, seed, tile_width)
    else:
        assert dataset is not None
        section = executor_options.executor_section(executor, executor_address, executor_option)
        _split(dataset, out, corruptions, severity, seed, workers, overwrite, jpeg_quality, section)


def summary_table(result: RobustnessResult) -> Any:
    """A rich Table: one row per sub-dataset with its scene statuses."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"robustness splits {result.out_dir}  ({result.wall_s:.1f} s)")
    for name, justify in (
        ("corruption", "left"),
        ("severity", "right"),
        ("built", "right"),
        ("resumed", "right"),
        ("failed", "right"),
        ("path", "left"),
    ):
        table.add_column(name, justify=justify, no_wrap=name != "path", overflow="fold")  # type: ignore[arg-type]
    for split in result.splits:
        n = {s: sum(r.status == s for r in split.results) for s in ("built", "resumed", "failed")}
        failed = f"[red]{n['failed']}[/red]" if n["failed"] else "0"
        table.add_row(
            split.spec.corruption,
            str(split.spec.severity),
            str(n["built"]),
            str(n["resumed"]),
            failed,
            escape(split.spec.rel_path),
        )
    return table
