"""LiDAR-camera extrinsics by edge alignment (``stridegen calibrate lidar-camera``): each camera's misalignment
against the LiDAR's depth edges, the refined extrinsic, and a rig YAML."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.calibration.edges import EdgeViews, depth_edges, refine_extrinsic
from stridegen.calibration.poses import rotation_angle_rad
from stridegen.core.transforms import invert_transform, transform_points
from stridegen.logs import open_log
from stridegen.logs.calibrate.sweeps import lidar_channel


def camera_spec_angles(T_ego_from_cam: np.ndarray) -> tuple[float, float, float]:
    """(yaw, pitch, roll) in degrees of a camera mounting in the convention of ``calibration.rig.CameraSpec``:
    ``R = Rz(yaw) R_fwd Rz(roll) Rx(pitch)``, so ``R_fwd^T R = Ry(-yaw) Rz(roll) Rx(pitch)`` (``R_fwd^T Rz R_fwd``
    is a rotation about the camera's -y axis: the ego's z)."""
    from scipy.spatial.transform import Rotation

    from stridegen.calibration.rig import _R_EGO_FROM_CAM_FORWARD

    m = _R_EGO_FROM_CAM_FORWARD.T @ np.asarray(T_ego_from_cam)[:3, :3]
    a, roll, pitch = Rotation.from_matrix(m).as_euler("YZX", degrees=True)
    return float(-a), float(pitch), float(roll)


# The synthetic checks (docs/calibrate.md) used 40 frames; a single real frame left the translation unconstrained.
LIDAR_CAMERA_MIN_FRAMES = 20


def lidar_camera_report(
    log: str | Path,
    *,
    format_name: str | None = None,
    version: str | None = None,
    scene: str | None = None,
    channel: str | None = None,
    cameras: Sequence[str] | None = None,
    frame_step: int = 1,
    perturb_rotation_deg: Sequence[float] | None = None,
    perturb_translation_m: Sequence[float] | None = None,
    rig_out: str | Path | None = None,
    rig_name: str = "calibrated",
) -> dict[str, Any]:
    """Edge misalignment (pixels) of each camera of one scene (the first by default) against its LiDAR, and the
    extrinsics after a small search (``calibration.edges``); every ``frame_step``-th frame is used. The
    ``perturb_*`` options move the log's extrinsic first (``edges.perturb``: a rotation vector in degrees and a
    translation in m, camera frame; a self-test: ``*_from_log`` then says how far the search ended from the log's
    extrinsic). ``rig_out``:
    write the refined cameras as a rig YAML (schema ``calibration.rig.Rig``) there."""
    from stridegen.calibration.edges import perturb
    from stridegen.calibration.rig import CameraSpec, Rig

    reader = open_log(log, format_name, version)
    sc = reader.scene(scene) if scene else reader.scenes()[0]
    lid = lidar_channel(sc, channel)
    frames = sc.frames[:: max(frame_step, 1)]
    cams = list(cameras) if cameras else [c for c in frames[0].camera_channels]
    clouds = [f.reader.load_points(f.sensor(lid)) for f in frames]
    edges = [depth_edges(p, p[:, 4] if p.shape[1] > 4 else None) for p in clouds]
    out: dict[str, Any] = {"log": str(log), "scene": sc.name, "lidar": lid, "frames": len(frames), "cameras": {}}
    out["warnings"] = []
    if len(frames) < LIDAR_CAMERA_MIN_FRAMES:
        out["warnings"].append(
            f"{sc.name}: {len(frames)} frame(s): the refined extrinsics are not reliable below "
            f"{LIDAR_CAMERA_MIN_FRAMES} (one nuScenes keyframe moved them by up to 28 cm; docs/calibrate.md)"
        )
    specs = []
    for cam in cams:
        calib = frames[0].sensor(cam).calibration
        moved = []
        for f, e in zip(frames, edges, strict=True):
            # LiDAR points at the image's time: through the global frame with each sample's own ego pose.
            T_cam_from_lidar_f = (
                invert_transform(f.sensor(cam).T_global_from_sensor) @ f.sensor(lid).T_global_from_sensor
            )
            T_log = invert_transform(calib.T_ego_from_sensor) @ f.sensor(lid).calibration.T_ego_from_sensor
            motion = invert_transform(T_log) @ T_cam_from_lidar_f  # LiDAR moved to the camera's time
            moved.append(dataclasses.replace(e, points=transform_points(motion, e.points)))
        T_log0 = invert_transform(calib.T_ego_from_sensor) @ frames[0].sensor(lid).calibration.T_ego_from_sensor
        T_start = T_log0
        if perturb_rotation_deg is not None or perturb_translation_m is not None:
            T_start = perturb(
                T_start, np.asarray(perturb_rotation_deg or (0, 0, 0)), np.asarray(perturb_translation_m or (0, 0, 0))
            )
        assert calib.intrinsic is not None
        views = EdgeViews.build([f.image(cam) for f in frames], moved, T_start, calib.intrinsic)
        refined = refine_extrinsic(T_start, calib.intrinsic, views)
        T_ego_from_lidar = frames[0].sensor(lid).calibration.T_ego_from_sensor
        T_ego_from_cam = T_ego_from_lidar @ invert_transform(refined.T_cam_from_lidar)
        change = invert_transform(T_start) @ refined.T_cam_from_lidar
        from_log = refined.T_cam_from_lidar @ invert_transform(T_log0)  # camera frame: refined <- log's

        out["cameras"][cam] = {
            "misalignment_before_px": refined.before_px,
            "misalignment_after_px": refined.after_px,
            "score_before": refined.score_before,
            "score_after": refined.score_after,
            "edge_points": int(views.weight.size),
            "rotation_change_deg": float(np.degrees(rotation_angle_rad(change[:3, :3]))),
            "translation_change_m": float(np.linalg.norm(change[:3, 3])),
            "rotation_from_log_deg": float(np.degrees(rotation_angle_rad(from_log[:3, :3]))),
            "translation_from_log_m": float(np.linalg.norm(from_log[:3, 3])),
            "T_ego_from_sensor": T_ego_from_cam.tolist(),
        }
        yaw, pitch, roll = camera_spec_angles(T_ego_from_cam)
        K = calib.intrinsic
        specs.append(
            CameraSpec(
                channel=cam,
                width=int(calib.width or 1),
                height=int(calib.height or 1),
                fx=float(K[0, 0]),
                fy=float(K[1, 1]),
                cx=float(K[0, 2]),
                cy=float(K[1, 2]),
                translation_ego=(float(T_ego_from_cam[0, 3]), float(T_ego_from_cam[1, 3]), float(T_ego_from_cam[2, 3])),
                yaw_deg=yaw,
                pitch_deg=pitch,
                roll_deg=roll,
            )
        )
    if rig_out is not None:
        import yaml

        rig = Rig(name=rig_name, description=f"stridegen calibrate lidar-camera of {log} ({sc.name})", cameras=specs)
        path = Path(rig_out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(rig.model_dump(mode="json"), sort_keys=False), encoding="utf-8")
        out["rig"] = str(path)
    return out
