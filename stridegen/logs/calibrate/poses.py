"""The LiDAR odometry of one scene (``stridegen calibrate poses``): key sweeps with the points of moving objects
removed (``BoxRemoval``), ``calibration.odometry`` run on them (twice when de-skewing, the second pass de-skewed
with the first's motion), the poses anchored at the log's first pose of the scene, and the scene's report row:
registration quality, degeneracy, and the drift against the log's own poses when it has any. ``write_posed_log``
writes the log with every scene's new poses and the report (``REPORT_FILE``) from the scenes' records
(``poses_record``: what a worker of ``stridegen.jobs.calibrate`` keeps of its scene)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.calibration.odometry import OdometryConfig, OdometryResult, lidar_odometry, points_outside_boxes
from stridegen.calibration.poses import trajectory_error
from stridegen.core.boxes import Boxes
from stridegen.core.errors import ConfigError
from stridegen.core.transforms import invert_transform
from stridegen.logs.base import Frame, LogReader, Scene
from stridegen.logs.calibrate.sweeps import DeskewOptions, lidar_channel, lidar_frames, scene_sweeps

REPORT_FILE = "calibrate_poses_report.json"


@dataclasses.dataclass(frozen=True)
class BoxRemoval:
    """Which points are dropped before registration: those inside 3D boxes grown by ``margin_m`` on every side.

    ``source``: ``auto`` (the log's annotations when the scene has any, else no removal), ``none``,
    ``annotations``, or a ``detector`` backend name of the registry (boxes from ``detector.detect(frame)``, built
    with ``detector_options`` by the caller: ``scene_poses``'s ``detect``). Boxes whose known speed is below
    ``static_speed_mps`` are kept as static structure (parked cars, cones, barriers: on a flat road often the only
    structure that fixes x, y and yaw); a box without a velocity (NaN) is removed. Moving objects that look static
    to the ego (a lead car at the ego's speed) would otherwise pull the registration to a standstill.
    """

    source: str = "auto"
    margin_m: float = 0.3
    static_speed_mps: float = 0.5
    detector_options: dict[str, Any] = dataclasses.field(default_factory=dict)


def scene_boxes_ego(
    scene: Scene, channel: str, removal: BoxRemoval, detect: Callable[[Frame], Boxes] | None = None
) -> tuple[str, list[Any] | None]:
    """The source used (``BoxRemoval.source`` resolved) and per key sweep the boxes to remove in the ego frame of
    the sweep (placed with the log's own poses, which also placed the boxes), or None for no removal. ``detect``
    gives a frame's boxes when the source is a detector."""
    source = removal.source
    if source == "auto":
        source = "annotations" if any(len(f.annotations()) for f in lidar_frames(scene, channel)) else "none"
    if source == "none":
        return source, None
    if source != "annotations" and detect is None:
        raise ConfigError(f"box removal by the detector {source!r} needs its detect function")
    out = []
    for frame in lidar_frames(scene, channel):
        boxes = frame.annotations().boxes if source == "annotations" or detect is None else detect(frame)
        speed = np.linalg.norm(boxes.velocity[:, :2], axis=1)
        moving = ~(speed < removal.static_speed_mps)  # NaN speed: unknown, removed
        T_ego_from_global = invert_transform(frame.sensor(channel).T_global_from_ego)
        out.append(boxes[np.flatnonzero(moving)].transform(T_ego_from_global, "ego"))
    return source, out


def has_poses(poses: np.ndarray) -> bool:
    """Whether a scene's poses say anything (not every pose the same, e.g. all identity: a log without poses)."""
    return bool(np.abs(poses - poses[:1]).max() > 1e-9)


def scene_poses(
    scene: Scene,
    channel: str | None,
    deskew: DeskewOptions,
    config: OdometryConfig | None,
    removal: BoxRemoval,
    detect: Callable[[Frame], Boxes] | None = None,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """The odometry of one scene: the times [F] (s) of its key sweeps, its poses ``T_global_from_ego`` [F, 4, 4]
    anchored at the log's first pose of the scene, and its report row (``calibrate_poses``). ``detect``: the
    box-removal detector's, when ``removal.source`` names one."""
    ch = lidar_channel(scene, channel)
    box_source, boxes = scene_boxes_ego(scene, ch, removal, detect)

    def static(pts: list[np.ndarray]) -> tuple[list[np.ndarray], int]:
        if boxes is None:
            return pts, 0
        keep = [
            points_outside_boxes(p, b.center, b.size_lwh, b.yaw, removal.margin_m)
            for p, b in zip(pts, boxes, strict=True)
        ]
        return [p[m] for p, m in zip(pts, keep, strict=True)], int(sum((~m).sum() for m in keep))

    pts, times = scene_sweeps(scene, ch, deskew)
    pts, removed = static(pts)
    result = lidar_odometry(pts, times, config)
    if deskew.resolved() != "none":  # second pass on sweeps de-skewed with the first pass's motion
        pts, times = scene_sweeps(scene, ch, deskew, result)
        pts, removed = static(pts)
        result = lidar_odometry(pts, times, config)
    old = np.stack([f.sensor(ch).T_global_from_ego for f in lidar_frames(scene, ch)])
    anchored = old[0][None] @ result.T_world_from_ego
    row = scene_report(result, anchored, old)
    row["box_removal"] = {"source": box_source, "removed_points": removed, "margin_m": removal.margin_m}
    return times, anchored, row


def scene_report(result: OdometryResult, new: np.ndarray, old: np.ndarray) -> dict[str, Any]:
    fit, rmse = result.fitness[1:], result.rmse_m[1:]
    out: dict[str, Any] = {
        "sweeps": int(new.shape[0]),
        "distance_m": float(np.linalg.norm(np.diff(new[:, :3, 3], axis=0), axis=1).sum()),
        "fitness_mean": float(np.nanmean(fit)) if fit.size else None,
        "fitness_min": float(np.nanmin(fit)) if fit.size else None,
        "rmse_mean_m": float(np.nanmean(rmse)) if rmse.size else None,
        "start_speed_mps": None if np.isnan(result.start_speed_mps) else result.start_speed_mps,
        # Degeneracy (calibration.odometry, step 3): per sweep the directions taken from the constant-velocity
        # prediction and the smallest eigenvalue of the scaled information matrix.
        "degenerate_sweeps": int(sum(1 for w in result.weak if w)),
        "degeneracy": [
            {"sweep": k, "weak": list(w), "min_eigenvalue": float(result.eigenvalues[k, 0])}
            for k, w in enumerate(result.weak)
            if k > 0
        ],
        "drift_vs_log": None,
    }
    if has_poses(old):
        err = trajectory_error(new, old)
        out["drift_vs_log"] = {
            "max_translation_m": float(err.translation_m.max()),
            "final_translation_m": float(err.translation_m[-1]),
            "translation_per_distance": err.max_translation_ratio,
            "max_yaw_deg": float(np.abs(err.yaw_deg).max()),
            "max_rotation_deg": float(err.rotation_deg.max()),
        }
    return out


def poses_record(token: str, times: np.ndarray, poses: np.ndarray, row: dict[str, Any]) -> dict[str, Any]:
    """``scene_poses``'s result for the scene ``token`` as plain JSON data (floats read back exactly): ``{"token",
    "times_s", "T_global_from_ego", "report"}``."""
    return {"token": token, "times_s": times.tolist(), "T_global_from_ego": poses.tolist(), "report": row}


def write_posed_log(
    reader: LogReader,
    records: Mapping[str, dict[str, Any]],
    out: str | Path,
    report: dict[str, Any],
    scenes: Sequence[str],
    overwrite: bool,
) -> dict[str, Any]:
    """``reader``'s log with the new poses of ``records`` (scene name -> ``poses_record``) written as a
    stridegen-log at ``out`` (the scenes ``scenes``, tokens, in order; ``write_native_log`` through a
    ``PosedReader``), and ``out/REPORT_FILE``: ``report`` with every scene's report row and the output's path.
    Returns the report."""
    from stridegen.logs.native_writer import write_native_log
    from stridegen.logs.posed import PosedReader

    poses = {r["token"]: (np.asarray(r["times_s"]), np.asarray(r["T_global_from_ego"])) for r in records.values()}
    report = {**report, "scenes": {name: r["report"] for name, r in records.items()}}
    summary = write_native_log(
        PosedReader(reader, poses),
        out,
        scenes=list(scenes),
        overwrite=overwrite,
        source={"format": reader.format_name, "poses": "stridegen calibrate poses (LiDAR odometry)"},
    )
    report["out"] = str(summary.out_root)
    (Path(out) / REPORT_FILE).write_text(json.dumps(report, indent=1, allow_nan=True) + "\n", encoding="utf-8")
    return report
