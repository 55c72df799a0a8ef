"""`stridegen calibrate ...`: ego poses by LiDAR odometry, the ground plane, trajectory alignment and the
LiDAR-camera extrinsic check (docs/calibrate.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from stridegen.cli import executor_options
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


def _print(report: dict, out: Path | None) -> None:
    typer.echo(_write(report, out) if out is not None else json.dumps(report, indent=1))


WEAK_INLIER_FRACTION = 0.2  # a ground plane resting on fewer of the sweep's points than this is weak
WEAK_HEIGHT_OFFSET_M = 0.1  # ... and so is one whose height is this far from the scene's median


def _fixed(value: float, digits: int) -> str:
    """``value`` with ``digits`` decimals, without the sign of a value that rounds to zero ("0.00", not "-0.00")."""
    text = f"{value:.{digits}f}"
    return text.lstrip("-") if float(text) == 0 else text


def ground_summary(report: dict) -> list[Any]:
    """The ground report as tables for a person, one row per scene: key sweeps, sensor height (median and spread
    p5-p95, m), pitch and roll (median and spread, deg) and the weak sweeps (fewer than ``WEAK_INLIER_FRACTION`` of
    the points on the plane, or a height ``WEAK_HEIGHT_OFFSET_M`` or more from the scene's median); a footnote."""
    import numpy as np

    from stridegen.cli.terminal_tables import fitted_tables

    columns = ["sweeps", "height (m)", "pitch (deg)", "roll (deg)", "weak sweeps"]
    rows = []
    for name, scene in report["scenes"].items():
        frames = scene["frames"]
        cells = [str(len(frames))]
        for key, digits in (("height_m", 3), ("pitch_deg", 2), ("roll_deg", 2)):
            values = np.array([f[key] for f in frames], dtype=np.float64)
            low, median, high = np.percentile(values, [5, 50, 95])
            cells.append(f"{_fixed(median, digits)} ±{high - low:.{digits}f}")
        height = float(np.median([f["height_m"] for f in frames]))
        weak = sum(
            f["inlier_fraction"] < WEAK_INLIER_FRACTION or abs(f["height_m"] - height) >= WEAK_HEIGHT_OFFSET_M
            for f in frames
        )
        rows.append((name, [*cells, str(weak)]))
    caption = (
        f"per key sweep, in the LiDAR frame: median ±spread (p95 - p5); weak: under "
        f"{WEAK_INLIER_FRACTION:.0%} of the points on the plane or {WEAK_HEIGHT_OFFSET_M:g} m off the median "
        "height; --json for every sweep"
    )
    return fitted_tables("Ground plane", "Scene", columns, rows, caption=caption)


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
    _print(result.report, None)


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
    from rich.console import Console

    from stridegen.logs.calibrate.ground import ground_report

    result = ground_report(log, format_name=format_name, version=version, scenes=scene or None, channel=lidar)
    if as_json:
        _print(result, report)
        return
    if report is not None:
        _write(result, report)
    console = Console()
    for table in ground_summary(result):
        console.print(table)


@calibrate_app.command("align")
@guarded
def align(
    a: Path = typer.Argument(..., help="Log whose trajectory is aligned (e.g. odometry)."),
    b: Path = typer.Argument(..., help="Reference log (e.g. RTK-GNSS poses); scenes matched by token."),
    scale: bool = typer.Option(False, "--scale", help="Sim(3): also estimate a scale."),
    report: Path | None = typer.Option(None, "--report", help="Also write the JSON report here."),
) -> None:
    """Align A's ego trajectory onto B's (Umeyama 1991), with residuals."""
    from stridegen.logs.calibrate.align import align_logs

    _print(align_logs(a, b, with_scale=scale), report)


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
    _print(result, report)
