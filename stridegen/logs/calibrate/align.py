"""One log's ego trajectory aligned onto another's (``stridegen calibrate align``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from stridegen.calibration.poses import interpolate_poses, yaw_rad
from stridegen.calibration.umeyama import umeyama
from stridegen.core.errors import ConfigError, GeometryError
from stridegen.logs import open_log


def align_logs(
    log_a: str | Path,
    log_b: str | Path,
    *,
    with_scale: bool = False,
    format_a: str | None = None,
    format_b: str | None = None,
) -> dict[str, Any]:
    """Per scene present in both logs (by token): log A's ego positions aligned onto log B's at A's frame times
    (B interpolated) by Umeyama's method (SE(3), or Sim(3) ``with_scale``); the transform and the residuals."""
    a, b = open_log(log_a, format_a), open_log(log_b, format_b)
    b_scenes = {s.token: s for s in b.scenes()}
    out: dict[str, Any] = {"a": str(log_a), "b": str(log_b), "with_scale": with_scale, "scenes": {}}
    for scene in a.scenes():
        other = b_scenes.get(scene.token)
        if other is None:
            continue
        ta, tb = scene.timestamps_s, other.timestamps_s
        inside = (ta >= tb[0]) & (ta <= tb[-1])
        pa = np.stack([f.T_global_from_ego for f in scene.frames])[inside]
        pb = interpolate_poses(tb, np.stack([f.T_global_from_ego for f in other.frames]), ta[inside])
        try:
            sim = umeyama(pa[:, :3, 3], pb[:, :3, 3], with_scale)
        except GeometryError as exc:
            out["scenes"][scene.name] = {"error": str(exc)}
            continue
        x_axis = pa[:, :3, 0] @ sim.rotation.T  # A's heading direction in B's frame
        heading = np.degrees(np.angle(np.exp(1j * (np.arctan2(x_axis[:, 1], x_axis[:, 0]) - yaw_rad(pb)))))
        out["scenes"][scene.name] = {
            "pairs": int(inside.sum()),
            "rotation": sim.rotation.tolist(),
            "translation_m": sim.translation.tolist(),
            "scale": sim.scale,
            "rmse_m": sim.rmse_m,
            "max_residual_m": float(sim.residuals_m.max()),
            "max_heading_residual_deg": float(np.abs(heading).max()),
        }
    if not out["scenes"]:
        raise ConfigError(f"no scene of {log_a} is in {log_b} (scenes are matched by token)")
    return out
