"""The ground plane under the LiDAR, sweep by sweep (``stridegen calibrate ground``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.calibration.ground import fit_ground_plane
from stridegen.logs import open_log
from stridegen.logs.calibrate.sweeps import lidar_channel


def ground_report(
    log: str | Path,
    *,
    format_name: str | None = None,
    version: str | None = None,
    scenes: Sequence[str] | None = None,
    channel: str | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Per scene and key sweep: the ground plane under the LiDAR (RANSAC in the LiDAR frame), as the sensor's
    height above it (m), pitch and roll (degrees; docs/calibrate.md for signs); and per scene their mean, standard
    deviation and drift (slope of a straight-line fit over time, per second)."""
    reader = open_log(log, format_name, version)
    chosen = [reader.scene(s) for s in scenes] if scenes else reader.scenes()
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {"log": str(log), "scenes": {}}
    for scene in chosen:
        ch = lidar_channel(scene, channel)
        times = scene.timestamps_s
        rows = []
        for frame in scene.frames:  # in the LiDAR's own frame: its height, pitch and roll above the ground
            p = np.asarray(frame.reader.load_points(frame.sensor(ch)))[:, :3].astype(np.float64)
            plane = fit_ground_plane(p, rng, max_height_m=0.0)
            rows.append((plane.height_m, plane.pitch_deg, plane.roll_deg, float(plane.inliers.mean())))
        arr = np.array(rows)
        stats = {}
        for i, name in enumerate(("height_m", "pitch_deg", "roll_deg")):
            slope = float(np.polyfit(times - times[0], arr[:, i], 1)[0]) if len(times) >= 2 else 0.0
            stats[name] = {"mean": float(arr[:, i].mean()), "std": float(arr[:, i].std()), "drift_per_s": slope}
        out["scenes"][scene.name] = {
            "frames": [
                {
                    "timestamp_us": int(f.timestamp_us),
                    "height_m": r[0],
                    "pitch_deg": r[1],
                    "roll_deg": r[2],
                    "inlier_fraction": r[3],
                }
                for f, r in zip(scene.frames, rows, strict=True)
            ],
            **stats,
        }
    return out
