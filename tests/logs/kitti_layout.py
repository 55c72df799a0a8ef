"""Test helper (not shipped): write the scenes of any stridegen LogReader in the KITTI tracking layout.

The layout is the one read by the example plugin (examples/kitti_tracking_reader, docs/own-logs.md); this writer
is written independently of that reader (its own inverse formulas), so that a round trip tests both. What it writes
for scene k (sequence ``%04d`` k, frames ``%06d`` in scene order):

- ``image_02/<seq>/<frame>.png``: the chosen camera's decoded pixels, re-encoded losslessly as PNG;
- ``velodyne/<seq>/<frame>.bin``: the first LiDAR's points in a velodyne frame *defined here*: KITTI's axes
  (x forward, y left, z up, i.e. the ego axes) at the LiDAR's mount; reflectance = intensity / 255;
- ``calib/<seq>.txt``: the calibration of *this* rig (not KITTI's): camera 2 = the chosen camera, its rectified
  reference camera ("cam0") ``CAM2_FROM_RECT_M`` away, an arbitrary small rectifying rotation ``R_RECT`` (so the
  reader's whole chain is exercised), the IMU = the source's ego frame;
- ``oxts/<seq>.txt``: 30 values a line; lat, lon, alt, roll, pitch, yaw from the source ego poses by inverting the
  devkit's Mercator conversion, with the first frame put at ``ORIGIN_LAT_LON_ALT`` (an arbitrary point near
  Karlsruhe); ve, vn, vu, vf, vl from the poses (np.gradient); the accelerations, angular rates, accuracies and
  status fields are not simulated (0);
- ``label_02/<seq>.txt``: the annotations whose projected box overlaps the image (KITTI labels only what camera 2
  sees), in the rectified camera frame, with integer track ids numbered in order of first appearance;
- ``times/<seq>.txt``: each frame's timestamp in seconds (not part of the KITTI release: the source need not run
  at KITTI's 10 Hz; the reader's optional timestamps file).

KITTI holds one pose per frame and boxes that rotate about the camera's y axis only, so the writer refuses
(ValueError) a camera sample whose pose differs from its frame's and a camera whose y axis is not vertical.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from stridegen.core.angles import wrap_angle
from stridegen.core.iou import box_area_xyxy
from stridegen.core.projection import project_boxes_2d
from stridegen.core.transforms import invert_transform, make_transform, rotate_vectors, transform_points
from stridegen.formats.images import write_rgb
from stridegen.logs.base import Frame, LogReader, Scene

EARTH_RADIUS_M = 6378137.0  # the KITTI devkit's Mercator radius
ORIGIN_LAT_LON_ALT = (49.0110, 8.4165, 115.0)  # where the first frame of every sequence is put (degrees, metres)
CAM2_FROM_RECT_M = np.array([0.06, 0.0, 0.0])  # p_cam2 = p_rect + t (KITTI's colour camera is ~6 cm from cam0)
STEREO_BASELINE_M = 0.54  # for the P1 / P3 lines only (no images of cameras 1 and 3 are written)
DETECTION_TO_KITTI = {"car": "Car", "truck": "Truck", "pedestrian": "Pedestrian", "bicycle": "Cyclist"}  # else Misc
VISIBILITY_TO_OCCLUDED = {4: 0, 3: 1, 2: 1, 1: 2, 0: 3}  # nuScenes visibility bin -> KITTI occluded


def _rotation(axis: np.ndarray, angle_rad: float) -> np.ndarray:
    """Rodrigues' formula: rotation by ``angle_rad`` about the unit vector ``axis``."""
    k = np.asarray(axis, dtype=np.float64) / np.linalg.norm(axis)
    cross = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + np.sin(angle_rad) * cross + (1.0 - np.cos(angle_rad)) * cross @ cross


R_RECT = _rotation(np.array([0.3, -0.5, 0.8]), np.radians(0.6))  # of the size of KITTI's (~0.5 degree)


@dataclass
class WrittenSequence:
    """What the writer did with one scene: the test compares the reader's output against these."""

    name: str  # sequence folder name
    scene: str  # source scene name
    origin_global: np.ndarray  # [3] source global position of the first frame's ego = the copy's global origin
    track_ids: dict[str, int] = field(default_factory=dict)  # source track id -> KITTI track id
    labelled: list[np.ndarray] = field(default_factory=list)  # per frame: indices of the source annotations written


def _text(values: np.ndarray | list[float]) -> str:
    return " ".join(format(float(v), ".17g") for v in np.ravel(values))  # round-trips every float64


def write_kitti_tracking(
    reader: LogReader, out_root: str | Path, camera: str = "CAM_FRONT", lidar: str | None = None
) -> list[WrittenSequence]:
    """Write every scene of ``reader`` under ``out_root`` (a split folder) in the KITTI tracking layout."""
    out = Path(out_root)
    return [_write_scene(scene, out, f"{k:04d}", camera, lidar) for k, scene in enumerate(reader.scenes())]


def _write_scene(scene: Scene, out: Path, seq: str, camera: str, lidar: str | None) -> WrittenSequence:
    first = scene.frames[0]
    lidar = lidar or first.lidar_channels[0]
    cam, velo = first.sensor(camera).calibration, first.sensor(lidar).calibration
    if cam.intrinsic is None or cam.width is None or cam.height is None:
        raise ValueError(f"{scene.name}: {camera} has no intrinsics or image size")
    T_ego_from_velo = make_transform(np.eye(3), velo.T_ego_from_sensor[:3, 3])
    T_rect_from_ego = make_transform(np.eye(3), -CAM2_FROM_RECT_M) @ invert_transform(cam.T_ego_from_sensor)
    T_cam0_from_velo = make_transform(R_RECT.T, np.zeros(3)) @ T_rect_from_ego @ T_ego_from_velo
    _write_calib(out / "calib" / f"{seq}.txt", cam.intrinsic, T_cam0_from_velo, invert_transform(T_ego_from_velo))
    poses = np.array([f.T_global_from_ego for f in scene.frames])
    times_us = np.array([f.timestamp_us for f in scene.frames], dtype=np.int64)
    write_oxts(out / "oxts" / f"{seq}.txt", poses, times_us * 1e-6)
    (out / "times").mkdir(parents=True, exist_ok=True)
    (out / "times" / f"{seq}.txt").write_text("".join(f"{t // 1_000_000}.{t % 1_000_000:06d}\n" for t in times_us))
    written = WrittenSequence(seq, scene.name, poses[0, :3, 3].copy())
    lines: list[str] = []
    for i, frame in enumerate(scene.frames):
        if not np.array_equal(frame.sensor(camera).T_global_from_ego, frame.T_global_from_ego):
            raise ValueError(f"{scene.name} frame {i}: the camera's pose differs from the frame's; KITTI has one")
        write_rgb(out / "image_02" / seq / f"{i:06d}.png", frame.image(camera))
        points = frame.lidar(lidar)
        xyz = transform_points(invert_transform(T_ego_from_velo) @ velo.T_ego_from_sensor, points[:, :3])
        bin_path = out / "velodyne" / seq / f"{i:06d}.bin"
        bin_path.parent.mkdir(parents=True, exist_ok=True)
        np.column_stack([xyz, points[:, 3] / 255.0]).astype("<f4").tofile(bin_path)
        lines += _labels(frame, i, camera, T_rect_from_ego, written)
    (out / "label_02").mkdir(parents=True, exist_ok=True)
    (out / "label_02" / f"{seq}.txt").write_text("".join(lines))
    return written


def _write_calib(path: Path, k: np.ndarray, T_cam0_from_velo: np.ndarray, T_velo_from_imu: np.ndarray) -> None:
    def projection(t: np.ndarray) -> np.ndarray:  # P = K [I | t]
        return k @ np.column_stack([np.eye(3), t])

    baseline = np.array([-STEREO_BASELINE_M, 0.0, 0.0])
    cameras = [np.zeros(3), baseline, CAM2_FROM_RECT_M, CAM2_FROM_RECT_M + baseline]
    text = [f"P{i}: {_text(projection(t))}" for i, t in enumerate(cameras)]
    text += [f"R_rect {_text(R_RECT)}", f"Tr_velo_cam {_text(T_cam0_from_velo[:3])}"]
    text += [f"Tr_imu_velo {_text(T_velo_from_imu[:3])}"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(text) + "\n")


def write_oxts(path: Path, poses: np.ndarray, time_s: np.ndarray) -> None:
    """Inverse of the devkit's pose conversion: Mercator x / y (scale cos(lat) of the first frame) -> lat / lon,
    lat = 360 / pi * atan(exp(my / (scale * R))) - 90, lon = mx * 180 / (pi * scale * R); roll / pitch / yaw of
    R = Rz(yaw) Ry(pitch) Rx(roll)."""
    lat0, lon0, alt0 = ORIGIN_LAT_LON_ALT
    scale = np.cos(np.radians(lat0))
    mx0 = scale * np.radians(lon0) * EARTH_RADIUS_M
    my0 = scale * EARTH_RADIUS_M * np.log(np.tan(np.radians(90.0 + lat0) / 2.0))
    offset = poses[:, :3, 3] - poses[0, :3, 3]
    lon = np.degrees((mx0 + offset[:, 0]) / (scale * EARTH_RADIUS_M))
    lat = 360.0 / np.pi * np.arctan(np.exp((my0 + offset[:, 1]) / (scale * EARTH_RADIUS_M))) - 90.0
    lat[0], lon[0] = lat0, lon0  # exactly: the reader's Mercator scale comes from this latitude
    r = poses[:, :3, :3]
    roll, pitch, yaw = (
        np.arctan2(r[:, 2, 1], r[:, 2, 2]),
        -np.arcsin(np.clip(r[:, 2, 0], -1, 1)),
        np.arctan2(r[:, 1, 0], r[:, 0, 0]),
    )
    v_global = np.gradient(poses[:, :3, 3], time_s, axis=0) if len(time_s) > 1 else np.zeros((len(time_s), 3))
    v_ego = np.einsum("nji,nj->ni", r, v_global)
    rows = np.column_stack(
        [lat, lon, alt0 + offset[:, 2], roll, pitch, yaw, v_global[:, 1], v_global[:, 0], v_ego[:, 0], v_ego[:, 1]]
        + [v_global[:, 2]]
        + [np.zeros(len(lat))] * 19
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(_text(row[:25]) + " 0 0 0 0 0\n" for row in rows))


def _labels(frame: Frame, index: int, camera: str, T_rect_from_ego: np.ndarray, written: WrittenSequence) -> list[str]:
    """label_02 lines of one frame: the annotations whose 3D box projects into the image."""
    ann = frame.annotations()
    cal = frame.sensor(camera).calibration
    T_rect_from_global = T_rect_from_ego @ invert_transform(frame.T_global_from_ego)
    if np.abs(T_rect_from_global[:3, :3] @ np.array([0.0, 0.0, 1.0]) - [0.0, -1.0, 0.0]).max() > 1e-9:
        raise ValueError(f"frame {frame.token}: camera y is not vertical; KITTI boxes rotate about it only")
    T_cam_from_global = make_transform(np.eye(3), CAM2_FROM_RECT_M) @ T_rect_from_global
    corners = transform_points(T_cam_from_global, ann.boxes.corners().reshape(-1, 3)).reshape(-1, 8, 3)
    k, size = np.asarray(cal.intrinsic), (int(cal.width or 0), int(cal.height or 0))  # checked in _write_scene
    bbox, inside = project_boxes_2d(corners, k, size)
    unclipped, _ = project_boxes_2d(corners, k)
    keep = np.flatnonzero(inside)
    written.labelled.append(keep)
    center = transform_points(T_rect_from_global, ann.boxes.center)
    heading = rotate_vectors(
        T_rect_from_global, np.column_stack([np.cos(ann.boxes.yaw), np.sin(ann.boxes.yaw), 0 * ann.boxes.yaw])
    )
    lines = []
    for j in keep:
        track = written.track_ids.setdefault(str(ann.boxes.track_id[j]), len(written.track_ids))
        length, width, height = ann.boxes.size_lwh[j]
        ry = float(np.arctan2(-heading[j, 2], heading[j, 0]))
        alpha = float(wrap_angle(ry - np.arctan2(center[j, 0], center[j, 2])))
        outside = 1.0 - box_area_xyxy(bbox[j : j + 1])[0] / max(box_area_xyxy(unclipped[j : j + 1])[0], 1e-12)
        truncated = 0 if outside < 1e-6 else (1 if outside < 0.5 else 2)
        kitti_type = DETECTION_TO_KITTI.get(str(ann.boxes.label[j]), "Misc")
        occluded = VISIBILITY_TO_OCCLUDED.get(int(ann.visibility[j]), 3)
        bottom = center[j] + [0.0, height / 2, 0.0]  # KITTI's location: centre of the bottom face (y down)
        numbers = _text([alpha, *bbox[j], height, width, length, *bottom, ry])
        lines.append(f"{index} {track} {kitti_type} {truncated} {occluded} {numbers}\n")
    return lines
