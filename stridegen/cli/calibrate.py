"""`stridegen calibrate ...`: ego poses by LiDAR odometry, the ground plane, trajectory alignment and the
LiDAR-camera extrinsic check (docs/calibrate.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from stridegen.cli import calibrate_tables, executor_options
from stridegen.cli.errors import exit_failed_scenes, guarded

calibrate_app = typer.Typer(
    help="Calibrate a log's rig: ego poses by LiDAR odometry, ground plane, trajectory alignment, LiDAR-camera "
    "extrinsics (docs/calibrate.md).",
    no_args_is_help=True,
)

_FORMAT = typer.Option(None, "--format", "-f", help="Input log format; default: detected.")
_VERSION = typer.Option(None, "--version", help="nuScenes version folder (when the root has several).")
_SCENES = typer.Option(None, "--scene", "-s", help="Scene name or token; repeatable (default: every scene).")
_CHANNEL = typer.Option(None, "--lidar", help="LiDAR channel (default: the first LiDAR).")


def _write(report: dict, out: Path) -> str:
    """Write ``report`` as JSON to ``out``; the text written (without its final newline)."""
    text = json.dumps(report, indent=1)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n", encoding="utf-8")
    return text


_JSON = typer.Option(False, "--json", help="Print the full JSON report instead of the summary table.")


def _show(report: dict, out: Path | None, as_json: bool, tables: Callable[[dict], list[Any]]) -> None:
    """Write ``report`` to ``out`` (if given) and print it: as JSON with ``as_json``, else as ``tables(report)``."""
    text = _write(report, out) if out is not None else json.dumps(report, indent=1)
    if as_json:
        typer.echo(text)
        return
    from rich.console import Console

    console = Console()
    for table in tables(report):
        console.print(table)


@calibrate_app.command("poses")
@guarded
def poses(
    log: Path = typer.Argument(..., help="Log folder in any format stridegen reads."),
    out: Path = typer.Option(..., "--out", "-o", help="Output stridegen-log folder with the new ego poses."),
    format_name: str | None = _FORMAT,
    version: str | None = _VERSION,
    scene: list[str] | None = _SCENES,
    lidar: str | None = _CHANNEL,
    deskew: str = typer.Option("auto", "--deskew", help="auto | none | times | azimuth (docs/calibrate.md)."),
    time_column: int | None = typer.Option(None, "--time-column", help="Per-point time column of the clouds."),
    time_unit: str = typer.Option("ns", "--time-unit", help="Unit of the time column: s, ms, us, ns."),
    sweep_period: float = typer.Option(0.1, "--sweep-period", help="Seconds per LiDAR turn (--deskew azimuth)."),
    detector: str = typer.Option(
        "auto",
        "--detector",
        help="Boxes whose points are dropped before registration: auto (the log's annotations when present, "
        "else none), none, annotations, or a detector backend name.",
    ),
    box_margin: float = typer.Option(0.3, "--box-margin", help="Metres added to every side of those boxes."),
    static_speed: float = typer.Option(
        0.5, "--static-speed", help="Boxes slower than this (m/s) are kept as static structure."
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace a non-empty output folder (and parts in OUT.parts/ of other options)."
    ),
    workers: int = typer.Option(1, "--workers", "-w", min=1, help="Worker processes (one scene each)."),
    executor: str = executor_options.EXECUTOR,
    executor_address: str = executor_options.ADDRESS,
    executor_option: list[str] | None = executor_options.OPTION,
    as_json: bool = _JSON,
) -> None:
    """Ego poses by LiDAR odometry (open3d point-to-plane ICP); writes the log with them and a quality report.
    Scene by scene: the odometry of each scene is kept in OUT.parts/, and a rerun resumes."""
    from rich.console import Console

    from stridegen.cli.progress import SceneProgress
    from stridegen.jobs.calibrate import PosesOptions, run_calibrate_poses
    from stridegen.logs.calibrate.poses import BoxRemoval
    from stridegen.logs.calibrate.sweeps import DeskewOptions

    options = PosesOptions(
        format_name,
        version,
        scene or None,
        lidar,
        DeskewOptions(deskew, time_column, time_unit, sweep_period),
        removal=BoxRemoval(detector, box_margin, static_speed),
    )
    section = executor_options.executor_section(executor, executor_address, executor_option)
    with SceneProgress(console=Console(stderr=True), stages=("odometry",)) as progress:
        result = run_calibrate_poses(
            log,
            out,
            options,
            overwrite=overwrite,
            workers=workers,
            executor=section,
            observer=progress,
        )
    exit_failed_scenes(result.failed)
    assert result.report is not None  # every scene is done
    _show(result.report, None, as_json, calibrate_tables.poses_summary)


@calibrate_app.command("ground")
@guarded
def ground(
    log: Path = typer.Argument(..., help="Log folder."),
    format_name: str | None = _FORMAT,
    version: str | None = _VERSION,
    scene: list[str] | None = _SCENES,
    lidar: str | None = _CHANNEL,
    report: Path | None = typer.Option(None, "--report", help="Also write the JSON report here."),
    as_json: bool = typer.Option(
        False, "--json", help="Print the full JSON report (every sweep) instead of the summary table."
    ),
) -> None:
    """Ground plane per key sweep (RANSAC): sensor height, pitch, roll and their drift; prints a summary per scene."""
    from stridegen.logs.calibrate.ground import ground_report

    result = ground_report(log, format_name=format_name, version=version, scenes=scene or None, channel=lidar)
    _show(result, report, as_json, calibrate_tables.ground_summary)


@calibrate_app.command("align")
@guarded
def align(
    a: Path = typer.Argument(..., help="Log whose trajectory is aligned (e.g. odometry)."),
    b: Path = typer.Argument(..., help="Reference log (e.g. RTK-GNSS poses); scenes matched by token."),
    scale: bool = typer.Option(False, "--scale", help="Sim(3): also estimate a scale."),
    report: Path | None = typer.Option(None, "--report", help="Also write the JSON report here."),
    as_json: bool = _JSON,
) -> None:
    """Align A's ego trajectory onto B's (Umeyama 1991), with residuals."""
    from stridegen.logs.calibrate.align import align_logs

    _show(align_logs(a, b, with_scale=scale), report, as_json, calibrate_tables.align_summary)


@calibrate_app.command("lidar-camera")
@guarded
def lidar_camera(
    log: Path = typer.Argument(..., help="Log folder."),
    format_name: str | None = _FORMAT,
    version: str | None = _VERSION,
    scene: str | None = typer.Option(None, "--scene", "-s", help="Scene (default: the first)."),
    lidar: str | None = _CHANNEL,
    camera: list[str] | None = typer.Option(None, "--camera", "-c", help="Camera channel; repeatable."),
    frame_step: int = typer.Option(1, "--frame-step", help="Use every n-th frame."),
    perturb_rotation: tuple[float, float, float] | None = typer.Option(
        None, "--perturb-rotation", help="Self-test: rotate the log's extrinsic first (rotation vector, deg, camera)."
    ),
    perturb_translation: tuple[float, float, float] | None = typer.Option(
        None, "--perturb-translation", help="Self-test: move the log's extrinsic first (m, camera frame)."
    ),
    rig: str = typer.Option("calibrated", "--rig", help="Name of the rig YAML written into calibration/."),
    rig_dir: Path = typer.Option(Path("calibration"), "--rig-dir", help="Folder of the rig YAML."),
    report: Path | None = typer.Option(None, "--report", help="Also write the JSON report here."),
    as_json: bool = _JSON,
) -> None:
    """Edge misalignment (pixels) of each camera against the LiDAR, refined extrinsics, rig YAML."""
    from stridegen.logs.calibrate.lidar_camera import lidar_camera_report

    result = lidar_camera_report(
        log,
        format_name=format_name,
        version=version,
        scene=scene,
        channel=lidar,
        cameras=camera or None,
        frame_step=frame_step,
        perturb_rotation_deg=perturb_rotation,
        perturb_translation_m=perturb_translation,
        rig_out=rig_dir / f"{rig}.yaml",
        rig_name=rig,
    )
    for warning in result["warnings"]:
        typer.echo(f"warning: {warning}", err=True)
    _show(result, report, as_json, calibrate_tables.lidar_camera_summary)
