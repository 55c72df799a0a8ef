"""The reports of `stridegen calibrate ...` as tables for a person (each command's ``--json`` prints the report
itself): one row per scene (poses, ground, align) or per camera (lidar-camera), units in the headers, a caption that
says what a spread or a flag means. numpy and rich are imported inside the functions (a cheap CLI import)."""

from __future__ import annotations

from typing import Any

WEAK_INLIER_FRACTION = 0.2  # a ground plane resting on fewer of the sweep's points than this is weak
WEAK_HEIGHT_OFFSET_M = 0.1  # ... and so is one whose height is this far from the scene's median
DASH = "-"  # a figure the report does not have (e.g. no poses in the input log to compare with)


def fixed(value: float | None, digits: int) -> str:
    """``value`` with ``digits`` decimals, without the sign of a value that rounds to zero ("0.00", not "-0.00");
    ``DASH`` for None or NaN."""
    if value is None or value != value:
        return DASH
    text = f"{value:.{digits}f}"
    return text.lstrip("-") if float(text) == 0 else text


def percent(fraction: float | None, digits: int) -> str:
    """A fraction (0-1) as a percentage with ``digits`` decimals, ``DASH`` for None."""
    return fixed(None if fraction is None else 100.0 * fraction, digits)


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
            cells.append(f"{fixed(median, digits)} ±{high - low:.{digits}f}")
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


def poses_summary(report: dict) -> list[Any]:
    """The odometry report (``stridegen calibrate poses``) as tables, one row per scene: sweeps, distance driven
    (m), ICP fitness (mean and worst, %), mean point-to-plane RMSE (cm), degenerate sweeps, and, where the input log
    had poses, the drift against them (largest and final translation, m; drift per distance, %; largest yaw, deg)."""
    from stridegen.cli.terminal_tables import fitted_tables

    columns = [
        "sweeps",
        "distance (m)",
        "fitness mean / min (%)",
        "RMSE (cm)",
        "degenerate",
        "drift max / final (m)",
        "drift / distance (%)",
        "yaw drift (deg)",
    ]
    rows = []
    for name, row in report["scenes"].items():
        fit_mean, fit_min = row.get("fitness_mean"), row.get("fitness_min")
        rmse = row.get("rmse_mean_m")
        drift = row.get("drift_vs_log") or {}
        rows.append(
            (
                name,
                [
                    str(row["sweeps"]),
                    fixed(row["distance_m"], 1),
                    f"{percent(fit_mean, 1)} / {percent(fit_min, 1)}",
                    percent(rmse, 1),  # m -> cm
                    str(row.get("degenerate_sweeps", 0)),
                    f"{fixed(drift.get('max_translation_m'), 2)} / {fixed(drift.get('final_translation_m'), 2)}",
                    fixed(
                        None
                        if drift.get("translation_per_distance") is None
                        else 100 * drift["translation_per_distance"],
                        2,
                    ),
                    fixed(drift.get("max_yaw_deg"), 2),
                ],
            )
        )
    caption = (
        "fitness: share of a sweep's points matched by ICP; degenerate: sweeps where a direction was taken from the "
        f"constant-velocity prediction; drift: against the input log's poses ({DASH}: it had none). "
        f"Log written to {report.get('out', '?')}; --json for the full report"
    )
    return fitted_tables("Ego poses (LiDAR odometry)", "Scene", columns, rows, caption=caption)


def align_summary(report: dict) -> list[Any]:
    """The trajectory alignment report (``stridegen calibrate align``) as tables, one row per scene: pose pairs,
    the translation (m) and rotation angle (deg) of the transform, its scale (with ``--scale``), the RMSE and the
    largest position residual (m), the largest heading residual (deg); a scene that failed shows its reason."""
    import numpy as np

    from stridegen.cli.terminal_tables import fitted_tables

    columns = ["pairs", "translation (m)", "rotation (deg)", "scale", "RMSE (m)", "max residual (m)", "heading (deg)"]
    rows = []
    for name, row in report["scenes"].items():
        if "error" in row:
            rows.append((name, [f"[red]{row['error']}[/red]", *[DASH] * (len(columns) - 1)]))
            continue
        rotation = np.asarray(row["rotation"], dtype=np.float64)
        angle = float(np.degrees(np.arccos(np.clip((np.trace(rotation) - 1.0) / 2.0, -1.0, 1.0))))
        rows.append(
            (
                name,
                [
                    str(row["pairs"]),
                    fixed(float(np.linalg.norm(row["translation_m"])), 3),
                    fixed(angle, 3),
                    fixed(row["scale"], 5) if report.get("with_scale") else DASH,
                    fixed(row["rmse_m"], 3),
                    fixed(row["max_residual_m"], 3),
                    fixed(row["max_heading_residual_deg"], 2),
                ],
            )
        )
    kind = "Sim(3)" if report.get("with_scale") else "SE(3)"
    caption = (
        f"{kind} transform taking A's ego positions onto B's (Umeyama 1991): translation is its length, rotation its "
        "angle; residuals after the transform; --json for the matrices"
    )
    return fitted_tables("Trajectory alignment", "Scene", columns, rows, caption=caption)


def lidar_camera_summary(report: dict) -> list[Any]:
    """The LiDAR-camera report (``stridegen calibrate lidar-camera``) as tables, one row per camera: edge
    misalignment before and after refinement (px), edge points used, and how far the refined extrinsic is from the
    log's (deg, cm)."""
    from stridegen.cli.terminal_tables import fitted_tables

    columns = ["misalignment before / after (px)", "edge points", "from log: rotation (deg)", "translation (cm)"]
    rows = [
        (
            camera,
            [
                f"{fixed(row['misalignment_before_px'], 2)} / {fixed(row['misalignment_after_px'], 2)}",
                str(row["edge_points"]),
                fixed(row["rotation_from_log_deg"], 3),
                percent(row["translation_from_log_m"], 1),  # m -> cm
            ],
        )
        for camera, row in report["cameras"].items()
    ]
    caption = (
        f"scene {report['scene']}, {report['frames']} frame(s), LiDAR {report['lidar']}: mean distance of LiDAR depth "
        "edges to image edges; the refined extrinsics are in the rig YAML; --json for the full report"
    )
    return fitted_tables("LiDAR-camera extrinsics", "Camera", columns, rows, caption=caption)
