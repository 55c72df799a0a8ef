"""`stridegen check LOG`: the log doctor (``stridegen.logs.check``) on the command line.

``check LOG [key=value ...] [--config FILE] [--format NAME] [--version NAME] [--json]``: one row per scene with
what a build would produce (frames, duration, frame rate, keyframes of the configured schedule, cameras, LiDAR,
annotations, ego speed), then every finding with its likely cause. The config (file and overrides, as for
``build``) decides what counts: the keyframe schedule, the segmenter (LiDAR needed?), the detector (annotations
needed?). Exit code 1 when there is an error finding (the report lists them all; the first is also the one
``error:`` line on stderr), 2 for a configuration error, 0 otherwise (warnings print). docs/cli.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from stridegen.cli.errors import EXIT_FAILED, guarded, one_line

if TYPE_CHECKING:
    from rich.console import Console

    from stridegen.logs.check import CheckReport


@guarded
def check(
    log_root: Path = typer.Argument(..., help="Log folder (nuScenes, AV2, ROS recordings, or a plugin reader's)."),
    overrides: list[str] | None = typer.Argument(
        None,
        help="Build config overrides key=value, as for build (e.g. segmenter.name=projected_box).",
        show_default=False,
    ),
    config: Path | None = typer.Option(None, "--config", "-c", help="Build config YAML (see configs/build.yaml)."),
    log_format: str | None = typer.Option(
        None, "--format", "-f", help="Log reader name (log.format); default: detected from the folder."
    ),
    version: str | None = typer.Option(None, "--version", help="nuScenes table folder (log.version)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON instead of tables."),
) -> None:
    """Check a log before building it: per scene, what a build would produce, and the conversion mistakes
    (quaternion order, timestamp unit, modality names, intrinsics, duplicate tokens, empty files, ...) with their
    likely causes. Reads metadata, file sizes and image headers only."""
    from rich.console import Console

    from stridegen.logs.check import check_log
    from stridegen.run.config import load_build_config

    console = Console()
    extra = list(overrides or [])
    if log_format is not None:
        extra.append(f"log.format={log_format}")
    if version is not None:
        extra.append(f"log.version={version}")
    cfg = load_build_config(config, extra)
    report = check_log(log_root, cfg.check_settings())
    topics = recording_topics(log_root) if report.format == "ros" else None
    if as_json:
        typer.echo(json.dumps({**report.to_json(), **({"topics": topics} if topics is not None else {})}, indent=2))
    else:
        if topics:
            console.print(topic_table(topics))
        print_report(console, report)
    if report.errors:
        typer.echo(error_line(report), err=True)
        raise typer.Exit(code=EXIT_FAILED)


def error_line(report: CheckReport) -> str:
    """The one ``error:`` line of a check with error findings (stderr): the first finding, naming its file (or the
    log), and how many more the report lists."""
    first = report.errors[0]
    where = first.file or report.root
    text = first.message if first.message.startswith(str(where)) else f"{where}: {first.message}"
    more = len(report.errors) - 1
    tail = f" (and {more} more error finding(s), listed above)" if more else ""
    return f"error: {one_line(f'{text} [{first.code}]{tail}')}"


def print_report(console: Console, report: CheckReport) -> None:
    """The per-scene table, then the findings (errors first) with their likely causes."""
    n = len(report.scenes)
    per_scene = sum(s.check_s for s in report.scenes) / n if n else 0.0
    source = escape_text(f"{report.format or '?'} {report.version}")
    console.print(
        f"[bold]{escape_text(report.root)}[/bold]: {source}, {n} scene(s); "
        f"opened in {report.open_s * 1e3:.0f} ms, checked in {report.wall_s * 1e3:.0f} ms "
        f"({per_scene * 1e3:.1f} ms per scene)"
    )
    if report.scenes:
        console.print(scene_table(report))
    for severity, color in (("error", "red"), ("warning", "yellow")):
        items = [f for f in report.findings if f.severity == severity]
        for f in items:
            where = escape_text(f.scene or "whole log")
            console.print(f"[{color}]{severity}[/{color}] {where} [bold]{f.code}[/bold]: {escape_text(f.message)}")
            console.print(f"    likely cause: {escape_text(f.likely_cause)}")
            if f.file:
                console.print(f"    file: {escape_text(f.file)}")
    errors, warnings = len(report.errors), len(report.warnings)
    verdict = "[green]ok[/green]" if not errors else f"[red]{errors} error(s)[/red]"
    console.print(f"{verdict}, {warnings} warning(s)" + (": build would fail these scenes or stop" if errors else ""))


def recording_topics(log_root: Path) -> list[dict[str, Any]]:
    """Per topic of every recording: type, count, rate, gaps, stamp order (``stridegen.logs.ros.check``)."""
    from stridegen.logs.ros.check import topic_stats
    from stridegen.logs.ros.reader import RosReader

    reader = RosReader(log_root)
    return [s.to_json() for rec in reader.recordings for s in topic_stats(rec, reader.mappings[rec.name])]


def topic_table(topics: list[dict[str, Any]]) -> Any:
    """The recordings' topics as a table."""
    from rich.table import Table

    table = Table(caption="Hz = 1 / median stamp interval; gaps = intervals above max_gap_periods periods")
    for header in ("recording", "topic", "type", "count", "Hz", "gaps", "max gap s", "frame_id"):
        table.add_column(header, overflow="fold")
    for t in topics:
        table.add_row(
            escape_text(t["recording"]),
            escape_text(t["topic"]),
            escape_text(t["msgtype"].replace("/msg/", "/")),
            str(t["count"]),
            f"{t['rate_hz']:.3g}" if t["rate_hz"] else "-",
            str(t["gaps"]),
            f"{t['max_gap_s']:.3f}" if t["max_gap_s"] is not None else "-",
            escape_text(t["frame_id"]),
        )
    return table


def escape_text(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def scene_table(report: CheckReport) -> Any:
    from rich.table import Table

    table = Table(
        caption="s = duration, kf = keyframes of the configured schedule, cams / lidar = channels, "
        "anns = annotations, ego = mean ego speed (m/s)"
    )
    table.add_column("scene", overflow="fold", min_width=min(24, max((len(s.name) for s in report.scenes), default=5)))
    for header in ("frames", "s", "Hz", "kf", "cams", "lidar", "anns", "ego", "check"):
        table.add_column(header, justify="right", no_wrap=True)
    for s in report.scenes:
        mine = [f for f in report.findings if f.scene == s.name]
        errors = sum(f.severity == "error" for f in mine)
        warnings = len(mine) - errors
        status = (
            "[green]ok[/green]"
            if not mine
            else (f"[red]{errors} err[/red] " if errors else "")
            + (f"[yellow]{warnings} warn[/yellow]" if warnings else "")
        )
        table.add_row(
            escape_text(s.name),
            str(s.frames),
            f"{s.duration_s:.1f}",
            f"{s.frame_rate_hz:.3g}" if s.frame_rate_hz else "-",
            str(s.keyframes),
            str(len(s.cameras)),
            str(len(s.lidar)),
            str(s.annotations),
            f"{s.ego_speed_mps:.2f}" if s.ego_speed_mps is not None else "-",
            status.strip(),
        )
    return table


def _standalone_app() -> typer.Typer:
    """``python -m stridegen.cli.check check LOG ...`` (a group, as the main CLI, so the command keeps its name)."""
    app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_show_locals=False)
    app.callback()(lambda: None)
    app.command("check")(check)
    return app


if __name__ == "__main__":
    _standalone_app()()
