"""`stridegen convert LOG --out DIR`: any log stridegen reads -> a stridegen-log folder (docs/log-format.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from stridegen.cli.errors import guarded


@guarded
def convert(
    log: Path = typer.Argument(..., help="Log folder in any format stridegen reads (nuScenes, AV2, ROS, a plugin)."),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder of the stridegen-log copy."),
    format_name: str | None = typer.Option(
        None, "--format", "-f", help="Input log format (nuscenes, av2, ros, stridegen-log, plugin); default: detected."
    ),
    version: str | None = typer.Option(
        None, "--version", help="nuScenes version folder, e.g. v1.0-mini (when the root has several)."
    ),
    scene: list[str] | None = typer.Option(
        None,
        "--scene",
        "-s",
        help="Scene name or token to convert; repeatable (default: every scene).",
        show_default=False,
    ),
    sweeps: bool = typer.Option(False, "--sweeps", help="Also copy each sample's earlier non-key sweeps."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace a non-empty output folder."),
) -> None:
    """Write a log's scenes as a stridegen-log: manifest, frames.jsonl per scene, images copied unchanged, point
    clouds as float32 .npy, ground-truth boxes as JSON (docs/log-format.md)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import Progress, TaskID
    from rich.table import Table

    from stridegen.logs import open_log
    from stridegen.logs.native_writer import write_native_log

    reader = open_log(log, format_name, version)
    with Progress(console=Console(stderr=True), transient=True) as bars:
        tasks: dict[str, TaskID] = {}

        def advance(name: str, done: int, total: int) -> None:
            if name not in tasks:
                tasks[name] = bars.add_task(escape(name), total=total)
            bars.update(tasks[name], completed=done)

        summary = write_native_log(
            reader, out, scenes=scene or None, progress=advance, sweeps=sweeps, overwrite=overwrite
        )

    table = Table(title=escape(f"stridegen-log {summary.out_root} (from {reader.format_name})"))
    table.add_column("item")
    table.add_column("value", justify="right")
    table.add_row("scenes", str(len(summary.scenes)))
    table.add_row("frames", str(summary.frames))
    table.add_row("sensor files", str(summary.sensor_files))
    table.add_row("boxes", str(summary.boxes))
    table.add_row("channels", escape(", ".join(summary.channels)))
    Console().print(table)
