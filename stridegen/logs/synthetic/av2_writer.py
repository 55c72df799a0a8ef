"""Write any stridegen log in the Argoverse 2 sensor-log layout (for tests of the AV2 reader against another one).

One AV2 log folder per scene, named by the scene *token* (AV2 log ids are opaque identifiers; a build seeds each
scene's random draws from its token, so the AV2 copy of a scene draws the same numbers as the source). Per log:

- ``annotations.feather``: the frame's ground-truth cuboids in the ego frame of the frame (its LiDAR time),
  ``timestamp_ns = timestamp_us * 1000``, ``track_uuid`` = the source track id, ``num_interior_pts`` = the source's
  ``num_lidar_pts``. Categories: a category that is already an AV2 category of the box's class is kept; otherwise
  the box's nuScenes detection class goes to ``DETECTION_TO_AV2`` (the inverse of ``AV2_TO_DETECTION`` picked
  below); a box without an AV2 counterpart (classes ``barrier`` and ``construction_vehicle``, and boxes of no
  class) keeps its source category, which the AV2 reader labels "" (``unmapped`` counts them). A frame without
  any box cannot be written (AV2 frames are annotation timestamps): it is dropped and counted.
- ``city_SE3_egovehicle.feather``: the ego pose of every frame and every written sensor sample, by timestamp (the
  first pose of a timestamp wins: frames first, then samples in frame order).
- ``sensors/lidar/<ts_ns>.feather``: the frame's first LiDAR key sample in the ego frame, columns x, y, z, intensity
  (float32: AV2 stores x, y, z as float16 and intensity as uint8, which would lose the source's precision),
  laser_number (uint8, the source's fifth column, else 0), offset_ns (int32, 0).
- ``sensors/cameras/<av2 camera>/<ts_ns>.jpg``: every camera sample of every written frame, bytes unchanged,
  named by the sample's own timestamp. Camera names: ``NUSCENES_TO_AV2_CAMERA`` (by viewing direction), AV2 names
  kept, others from ``camera_names``.
- ``calibration/intrinsics.feather`` (K, k1 = k2 = k3 = 0, image size; rows in the source's camera order) and
  ``calibration/egovehicle_SE3_sensor.feather`` (the cameras and the LiDAR, named ``up_lidar``).

pyarrow (the ``av2`` extra) is imported when a log is written.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.core.errors import LogFormatError, require
from stridegen.core.transforms import invert_transform, quat_multiply, rotmat_to_quat, transform_points, yaw_to_quat
from stridegen.logs._common import scenes_named
from stridegen.logs.av2_cameras import AV2_CAMERAS, IMAGE_SUFFIX
from stridegen.logs.av2_layout import AV2_TO_DETECTION
from stridegen.logs.base import Frame, LogReader, Scene, SensorCalibration
from stridegen.logs.box_rotation import ROTATION_GLOBAL

# nuScenes detection class -> AV2 category: for each class, the AV2 category whose definition is the class's
# general case (argoverse/av2-api src/av2/datasets/sensor/README.md taxonomy). TRUCK (not BOX_TRUCK or TRUCK_CAB)
# is AV2's catch-all truck; every entry maps back to its class through AV2_TO_DETECTION.
DETECTION_TO_AV2: dict[str, str] = {
    "car": "REGULAR_VEHICLE",
    "truck": "TRUCK",
    "bus": "BUS",
    "trailer": "VEHICULAR_TRAILER",
    "bicycle": "BICYCLE",
    "motorcycle": "MOTORCYCLE",
    "pedestrian": "PEDESTRIAN",
    "traffic_cone": "CONSTRUCTION_CONE",
}

# nuScenes camera -> AV2 ring camera with the nearest viewing direction (nuScenes rig: front 0, front side +-55,
# back side +-110, back 180 degrees; AV2 ring, from the calibration of a real log: front 0, front side +-45,
# side +-99, rear +-153). CAM_BACK lies between the two rear cameras; it takes ring_rear_left, the first of them
# in AV2's camera order.
NUSCENES_TO_AV2_CAMERA: dict[str, str] = {
    "CAM_FRONT": "ring_front_center",
    "CAM_FRONT_LEFT": "ring_front_left",
    "CAM_FRONT_RIGHT": "ring_front_right",
    "CAM_BACK_LEFT": "ring_side_left",
    "CAM_BACK_RIGHT": "ring_side_right",
    "CAM_BACK": "ring_rear_left",
}
LIDAR_SENSOR_NAME = "up_lidar"
_LOG_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass
class AV2LogSummary:
    """What ``write_av2_log`` wrote for one scene."""

    scene: str  # source scene name
    log_dir: Path
    frames: int  # frames written (annotation timestamps)
    dropped_frames: int  # source frames without any box (not representable)
    boxes: int
    images: int
    lidar_sweeps: int
    cameras: dict[str, str]  # source channel -> AV2 camera name
    unmapped: Counter[str] = field(default_factory=Counter)  # categories written verbatim (read back with label "")


def av2_camera_name(channel: str, camera_names: Mapping[str, str] | None = None) -> str:
    """The AV2 name of a source camera channel (``camera_names``, then AV2 names, then the nuScenes table)."""
    if camera_names and channel in camera_names:
        return camera_names[channel]
    if channel in AV2_CAMERAS:
        return channel
    if channel in NUSCENES_TO_AV2_CAMERA:
        return NUSCENES_TO_AV2_CAMERA[channel]
    raise LogFormatError(channel, "no AV2 camera name for this channel: pass camera_names={channel: av2_name}")


def av2_category(category: str, label: str) -> str | None:
    """The AV2 category to write for a box, or None when the class has no AV2 counterpart."""
    if AV2_TO_DETECTION.get(category) == label and label:
        return category  # already an AV2 category of this class
    return DETECTION_TO_AV2.get(label)


def write_av2_log(
    reader: LogReader,
    out_root: str | Path,
    scenes: Sequence[str] | None = None,
    camera_names: Mapping[str, str] | None = None,
) -> list[AV2LogSummary]:
    """Write the scenes of ``reader`` (all, or those named / tokened in ``scenes``) as AV2 logs under ``out_root``.

    A log folder that exists and is not empty is refused (FileExistsError).
    """
    feather = require("pyarrow.feather", "av2")
    pa = require("pyarrow", "av2")
    chosen = scenes_named(reader, scenes)
    out = Path(out_root)
    return [_write_scene(scene, out, camera_names, feather, pa) for scene in chosen]


def _write_scene(
    scene: Scene, out_root: Path, camera_names: Mapping[str, str] | None, feather: Any, pa: Any
) -> AV2LogSummary:
    if not _LOG_ID.match(scene.token):
        raise LogFormatError(scene.name, f"scene token {scene.token!r} is not usable as an AV2 log folder name")
    log_dir = out_root / scene.token
    if log_dir.exists() and any(log_dir.iterdir()):
        raise FileExistsError(f"{log_dir} exists and is not empty")
    summary = AV2LogSummary(scene.name, log_dir, 0, 0, 0, 0, 0, {})
    calibrations = _camera_calibrations(scene, camera_names, summary)
    annotations: list[dict[str, np.ndarray]] = []
    poses: dict[int, np.ndarray] = {}
    sample_poses: list[tuple[int, np.ndarray]] = []
    lidar_calib: SensorCalibration | None = None
    for frame in scene.frames:
        ts_ns = int(frame.timestamp_us) * 1000
        rows = _annotation_rows(frame, ts_ns, summary)
        if rows is None:
            summary.dropped_frames += 1
            continue
        annotations.append(rows)
        summary.frames += 1
        poses.setdefault(ts_ns, frame.T_global_from_ego)
        lidar_calib = _write_lidar(frame, log_dir, ts_ns, feather, pa, summary) or lidar_calib
        for channel in frame.camera_channels:
            sample = frame.sensor(channel)
            _check_calibration(sample.calibration, calibrations[channel], frame)
            image_ns = int(sample.timestamp_us) * 1000
            _write_image(frame.image_bytes(channel), log_dir, summary.cameras[channel], image_ns, sample.path)
            sample_poses.append((image_ns, sample.T_global_from_ego))
            summary.images += 1
    for ts_ns, pose in sample_poses:
        poses.setdefault(ts_ns, pose)
    if not annotations:
        raise LogFormatError(scene.name, "no frame has a box: an AV2 log needs at least one annotation timestamp")
    table = {k: np.concatenate([a[k] for a in annotations]) for k in annotations[0]}
    log_dir.mkdir(parents=True, exist_ok=True)
    feather.write_feather(pa.table(table), log_dir / "annotations.feather")
    feather.write_feather(pa.table(_pose_columns(poses)), log_dir / "city_SE3_egovehicle.feather")
    _write_calibration(log_dir, calibrations, summary.cameras, lidar_calib, feather, pa)
    return summary


def _camera_calibrations(
    scene: Scene, camera_names: Mapping[str, str] | None, summary: AV2LogSummary
) -> dict[str, SensorCalibration]:
    """Source channel -> calibration, from the first frame that has each camera, in the source's camera order."""
    out: dict[str, SensorCalibration] = {}
    for frame in scene.frames:
        for channel in frame.camera_channels:
            if channel not in out:
                out[channel] = frame.sensor(channel).calibration
    names = {channel: av2_camera_name(channel, camera_names) for channel in out}
    twice = [n for n, c in Counter(names.values()).items() if c > 1]
    if twice:
        raise LogFormatError(scene.name, f"several cameras would be written as {twice}: {names}")
    summary.cameras = names
    return out


def _check_calibration(calib: SensorCalibration, first: SensorCalibration, frame: Frame) -> None:
    same = (
        calib.intrinsic is not None
        and first.intrinsic is not None
        and np.array_equal(calib.intrinsic, first.intrinsic)
        and np.array_equal(calib.T_ego_from_sensor, first.T_ego_from_sensor)
        and (calib.width, calib.height) == (first.width, first.height)
    )
    if not same:
        raise LogFormatError(frame.token, f"camera {calib.channel} changes calibration: AV2 has one per log")


def _annotation_rows(frame: Frame, ts_ns: int, summary: AV2LogSummary) -> dict[str, np.ndarray] | None:
    """The frame's boxes as annotations.feather columns (ego frame at the frame's time); None without boxes."""
    ann = frame.annotations()
    n = len(ann)
    if n == 0:
        return None
    T_ego_from_global = invert_transform(frame.T_global_from_ego)
    center = transform_points(T_ego_from_global, ann.boxes.center)
    rotation_global = ann.boxes.extras.get(ROTATION_GLOBAL)
    if rotation_global is None:
        rotation_global = yaw_to_quat(ann.boxes.yaw)
    q_ego_from_global = rotmat_to_quat(T_ego_from_global[:3, :3])
    rotation = quat_multiply(np.broadcast_to(q_ego_from_global, (n, 4)), np.asarray(rotation_global))
    categories = []
    for category, label in zip(ann.category, ann.boxes.label, strict=True):
        av2 = av2_category(str(category), str(label))
        if av2 is None:
            summary.unmapped[str(category)] += 1
            av2 = str(category)
        categories.append(av2)
    summary.boxes += n
    size = np.asarray(ann.boxes.size_lwh, dtype=np.float64)
    return {
        "timestamp_ns": np.full(n, ts_ns, dtype=np.int64),
        "track_uuid": np.array([str(t) for t in ann.boxes.track_id], dtype=object),
        "category": np.array(categories, dtype=object),
        "length_m": size[:, 0],
        "width_m": size[:, 1],
        "height_m": size[:, 2],
        "qw": rotation[:, 0],
        "qx": rotation[:, 1],
        "qy": rotation[:, 2],
        "qz": rotation[:, 3],
        "tx_m": center[:, 0],
        "ty_m": center[:, 1],
        "tz_m": center[:, 2],
        "num_interior_pts": np.asarray(ann.num_lidar_pts, dtype=np.int64),
    }


def _write_lidar(
    frame: Frame, log_dir: Path, ts_ns: int, feather: Any, pa: Any, summary: AV2LogSummary
) -> SensorCalibration | None:
    """The frame's first LiDAR key sweep, moved into the ego frame, as ``sensors/lidar/<ts_ns>.feather``."""
    if not frame.lidar_channels:
        return None
    sample = frame.sensor(frame.lidar_channels[0])
    points = frame.lidar(sample.channel)
    xyz = transform_points(sample.calibration.T_ego_from_sensor, points[:, :3].astype(np.float64))
    n = points.shape[0]
    laser = np.clip(points[:, 4], 0, 255).astype(np.uint8) if points.shape[1] > 4 else np.zeros(n, np.uint8)
    columns = {
        "x": xyz[:, 0].astype(np.float32),
        "y": xyz[:, 1].astype(np.float32),
        "z": xyz[:, 2].astype(np.float32),
        "intensity": points[:, 3].astype(np.float32),
        "laser_number": laser,
        "offset_ns": np.zeros(n, dtype=np.int32),
    }
    path = log_dir / "sensors" / "lidar" / f"{ts_ns}.feather"
    path.parent.mkdir(parents=True, exist_ok=True)
    feather.write_feather(pa.table(columns), path)
    summary.lidar_sweeps += 1
    return sample.calibration


def _write_image(data: bytes, log_dir: Path, camera: str, ts_ns: int, source: Path) -> None:
    if data[:2] != b"\xff\xd8":
        raise LogFormatError(source, "not a JPEG: the AV2 layout stores cameras as .jpg and bytes are kept unchanged")
    path = log_dir / "sensors" / "cameras" / camera / f"{ts_ns}{IMAGE_SUFFIX}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _pose_columns(poses: dict[int, np.ndarray]) -> dict[str, np.ndarray]:
    stamps = np.array(sorted(poses), dtype=np.int64)
    T = np.array([poses[int(t)] for t in stamps], dtype=np.float64).reshape(-1, 4, 4)
    return {"timestamp_ns": stamps, **_se3_columns(T)}


def _se3_columns(T: np.ndarray) -> dict[str, np.ndarray]:
    q = rotmat_to_quat(T[:, :3, :3])
    return {
        "qw": q[:, 0],
        "qx": q[:, 1],
        "qy": q[:, 2],
        "qz": q[:, 3],
        "tx_m": T[:, 0, 3].copy(),
        "ty_m": T[:, 1, 3].copy(),
        "tz_m": T[:, 2, 3].copy(),
    }


def _write_calibration(
    log_dir: Path,
    calibrations: dict[str, SensorCalibration],
    names: dict[str, str],
    lidar: SensorCalibration | None,
    feather: Any,
    pa: Any,
) -> None:
    folder = log_dir / "calibration"
    folder.mkdir(parents=True, exist_ok=True)
    channels = list(calibrations)
    intrinsics = [_intrinsic_row(calibrations[c]) for c in channels]
    intr = {k: np.array([row[k] for row in intrinsics]) for k in ("fx_px", "fy_px", "cx_px", "cy_px")}
    zeros = np.zeros(len(channels), dtype=np.float64)
    feather.write_feather(
        pa.table(
            {
                "sensor_name": np.array([names[c] for c in channels], dtype=object),
                **{k: v.astype(np.float64) for k, v in intr.items()},
                "k1": zeros,
                "k2": zeros,
                "k3": zeros,
                "height_px": np.array([calibrations[c].height or 0 for c in channels], dtype=np.uint16),
                "width_px": np.array([calibrations[c].width or 0 for c in channels], dtype=np.uint16),
            }
        ),
        folder / "intrinsics.feather",
    )
    sensor_names = [names[c] for c in channels] + ([LIDAR_SENSOR_NAME] if lidar is not None else [])
    transforms = [calibrations[c].T_ego_from_sensor for c in channels]
    if lidar is not None:
        transforms.append(lidar.T_ego_from_sensor)
    T = np.array(transforms, dtype=np.float64).reshape(-1, 4, 4)
    feather.write_feather(
        pa.table({"sensor_name": np.array(sensor_names, dtype=object), **_se3_columns(T)}),
        folder / "egovehicle_SE3_sensor.feather",
    )


def _intrinsic_row(calib: SensorCalibration) -> dict[str, float]:
    K = calib.intrinsic
    if K is None or not (calib.width and calib.height):
        raise LogFormatError(calib.channel, "camera has no intrinsic matrix or image size")
    if K[0, 1] != 0.0 or K[1, 0] != 0.0 or K[2, 0] != 0.0 or K[2, 1] != 0.0 or K[2, 2] != 1.0:
        raise LogFormatError(calib.channel, f"intrinsic {K.tolist()} is not fx, fy, cx, cy only (AV2 has no skew)")
    return {"fx_px": float(K[0, 0]), "fy_px": float(K[1, 1]), "cx_px": float(K[0, 2]), "cy_px": float(K[1, 2])}
