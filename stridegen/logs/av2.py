"""Reader of Argoverse 2 sensor-dataset logs (annotations, ego poses, LiDAR sweeps, cameras, calibration).

Layout of one log (https://argoverse.github.io/user-guide/datasets/sensor.html, argoverse/av2-api):
``<log_id>/annotations.feather`` (cuboids in the ego frame at their timestamp),
``<log_id>/city_SE3_egovehicle.feather`` (ego poses ``city_T_ego``), ``<log_id>/sensors/lidar/<ts_ns>.feather``
(sweeps in the ego frame), ``<log_id>/sensors/cameras/<camera>/<ts_ns>.jpg`` (7 ring and 2 stereo cameras at
20 Hz), ``<log_id>/calibration/{intrinsics,egovehicle_SE3_sensor}.feather``. The AV2 city frame plays the role of
the nuScenes global frame. pyarrow is the ``av2`` extra and is imported lazily.

Cameras. Each annotated frame (an annotation timestamp, which is a LiDAR sweep's) gets, per camera, the image
nearest in time if it lies within half that camera's period (the median interval of its images; 50 ms nominal,
av2-api ``CAM_FPS = 20``), else no image of that camera in that frame (``camera_misses`` counts them). The image's
sample carries the ego pose interpolated at the image's own timestamp. Channels keep AV2's names.

Distortion. ``intrinsics.feather`` lists radial coefficients ``k1, k2, k3`` (OpenCV's model with p1 = p2 = 0), but
the released AV2 images are already undistorted: av2-api projects with ``K`` alone (``PinholeCamera``) and its
maintainers state that k1..k3 describe the raw lens (argoverse/av2-api issues 219 and 226; argoverse-api issue 81
for Argoverse 1). Undistorting them again would bend straight lines the other way, so by default the bytes are
returned unchanged and ``intrinsic`` is the pinhole ``K``; the coefficients stay available from
``camera_distortion``. A log in this layout whose images *are* raw (a custom export) opens with
``undistort=True`` (``log.format=stridegen.logs.av2:open_av2_undistorted``): an image of a camera with any non-zero
``k`` is decoded, undistorted with ``cv2.undistort`` onto the same ``K`` and re-encoded as a JPEG of quality
``UNDISTORTED_JPEG_QUALITY`` (deterministic with a given OpenCV build; about 90 ms per 2048x1550 image on one
core: decode 29, undistort 42, encode 15). With all ``k`` zero the bytes are never touched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from stridegen.core.boxes import Boxes
from stridegen.core.cache import LruCache
from stridegen.core.errors import ConfigError, InvalidPoseError, LogFormatError
from stridegen.core.transforms import (
    make_transform,
    quat_multiply,
    quat_normalize,
    quat_to_yaw,
    rotmat_to_quat,
)
from stridegen.logs._common import (
    SCENE_CACHE,
    neighbour_velocity,
    require_finite_points,
    validate_pose_table,
)
from stridegen.logs.av2_cameras import AV2Camera, camera_period_ns, image_timestamps, match_nearest, undistort_jpeg
from stridegen.logs.av2_layout import (
    ANNOTATION_COLUMNS,
    EXTRINSICS_COLUMNS,
    INTRINSICS_COLUMNS,
    LIDAR_CHANNEL,
    LIDAR_COLUMNS,
    POSE_COLUMNS,
    av2_to_detection,
    find_av2_logs,
    is_av2_layout,
    read_feather,
)
from stridegen.logs.base import Annotations, Frame, LogReader, Scene, SensorCalibration, SensorSample
from stridegen.logs.box_rotation import ROTATION_GLOBAL


def slerp(q0: np.ndarray, q1: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Spherical linear interpolation of [..., 4] unit quaternions [w, x, y, z] at fractions t in [0, 1].

    Shortest arc (q1 negated when the dot product is negative); normalised linear interpolation when the two
    rotations are almost equal. Formula: Shoemake, "Animating rotation with quaternion curves", SIGGRAPH 1985.
    """
    q0 = quat_normalize(q0)
    q1 = quat_normalize(q1)
    t = np.asarray(t, dtype=np.float64)[..., None]
    dot = np.sum(q0 * q1, axis=-1, keepdims=True)
    q1 = np.where(dot < 0, -q1, q1)
    dot = np.abs(dot)
    theta = np.arccos(np.clip(dot, -1.0, 1.0))
    sin_theta = np.sin(theta)
    near = sin_theta < 1e-6
    safe = np.where(near, 1.0, sin_theta)
    w0 = np.where(near, 1.0 - t, np.sin((1.0 - t) * theta) / safe)
    w1 = np.where(near, t, np.sin(t * theta) / safe)
    return quat_normalize(w0 * q0 + w1 * q1)


@dataclass
class _PoseTable:
    """Ego poses of one log sorted by time (duplicate timestamps dropped)."""

    path: Path
    timestamp_ns: np.ndarray
    rotation: np.ndarray  # [P, 4] city_R_ego quaternions
    translation: np.ndarray  # [P, 3] city_t_ego

    def T_city_from_ego(self, timestamp_ns: np.ndarray) -> np.ndarray:
        """Poses [F, 4, 4] at the given times: exact match, else interpolated between the two neighbours."""
        ts = np.asarray(timestamp_ns, dtype=np.int64).reshape(-1)
        if self.timestamp_ns.size == 0:
            raise InvalidPoseError(self.path, "no ego poses")
        outside = (ts < self.timestamp_ns[0]) | (ts > self.timestamp_ns[-1])
        if np.any(outside):
            bad = int(ts[np.argmax(outside)])
            raise InvalidPoseError(
                self.path,
                f"timestamp {bad} ns is outside the pose range [{self.timestamp_ns[0]}, {self.timestamp_ns[-1]}] ns",
            )
        hi = np.searchsorted(self.timestamp_ns, ts, side="left")
        exact = self.timestamp_ns[np.minimum(hi, self.timestamp_ns.size - 1)] == ts
        lo = np.where(exact, hi, hi - 1)  # not exact: pose[hi - 1] < ts < pose[hi]
        span = np.maximum(self.timestamp_ns[hi] - self.timestamp_ns[lo], 1).astype(np.float64)
        frac = np.where(exact, 0.0, (ts - self.timestamp_ns[lo]).astype(np.float64) / span)
        rotation = slerp(self.rotation[lo], self.rotation[hi], frac)
        translation = (1.0 - frac)[:, None] * self.translation[lo] + frac[:, None] * self.translation[hi]
        return make_transform(rotation, translation)


# The AV2 pose table as the ROS reader uses it (stridegen.logs.ros.poses): one interpolation rule for both.
PoseTable = _PoseTable


@dataclass
class _LogData:
    """Annotation table of one log (rows sorted by timestamp) with per-row global-frame quantities."""

    log_dir: Path
    frame_ts_ns: np.ndarray  # [F] distinct annotation timestamps
    frame_start: np.ndarray  # [F + 1] row ranges of each frame
    columns: dict[str, np.ndarray]
    T_city_from_ego: np.ndarray  # [F, 4, 4]
    center_global: np.ndarray  # [N, 3]
    rotation_global: np.ndarray  # [N, 4]
    velocity_global: np.ndarray  # [N, 3]
    poses: _PoseTable
    camera_misses: dict[str, int] = field(default_factory=dict)  # camera -> frames without an image of it


class AV2Reader(LogReader):
    """Argoverse 2 logs -> Scene / Frame objects: one Scene per log, one Frame per annotation timestamp.

    ``root`` is a single log folder or a folder of log folders. Boxes come out in the city (global) frame.
    ``undistort``: undistort the images of cameras with non-zero ``k1..k3`` on read (module docstring: released
    AV2 images are already undistorted, so this is off by default).
    """

    format_name = "av2"

    def __init__(self, root: str | Path, undistort: bool = False) -> None:
        super().__init__(root)
        self.undistort = undistort
        self.log_dirs = find_av2_logs(self.root)
        if not self.log_dirs:
            raise LogFormatError(self.root, "no AV2 log (a folder with annotations.feather) found")
        self._scene_cache: LruCache[str, Scene] = LruCache(SCENE_CACHE)  # log id -> scene
        self._logs: dict[str, _LogData] = {}
        self._frame_rows: dict[str, tuple[str, int]] = {}  # frame token -> (log id, frame index)
        self._cameras: dict[str, dict[str, AV2Camera]] = {}  # log id -> camera name -> camera
        self._camera_of_folder: dict[Path, AV2Camera] = {}

    # ------------------------------------------------------------------------------------------ metadata
    def _log(self, log_id: str) -> _LogData:
        if log_id not in self._logs:
            self._logs[log_id] = self._load_log(self._log_dir(log_id))
        return self._logs[log_id]

    def _log_dir(self, log_id: str) -> Path:
        for d in self.log_dirs:
            if d.name == log_id:
                return d
        raise LogFormatError(self.root, f"no AV2 log {log_id!r}; logs: {[d.name for d in self.log_dirs]}")

    def _load_log(self, log_dir: Path) -> _LogData:
        path = log_dir / "annotations.feather"
        cols = read_feather(path, ANNOTATION_COLUMNS)
        order = np.argsort(cols["timestamp_ns"].astype(np.int64), kind="stable")
        cols = {k: v[order] for k, v in cols.items()}
        ts = cols["timestamp_ns"].astype(np.int64)
        quat_ego = np.stack([cols[k].astype(np.float64) for k in ("qw", "qx", "qy", "qz")], axis=1)
        center_ego = np.stack([cols[k].astype(np.float64) for k in ("tx_m", "ty_m", "tz_m")], axis=1)
        validate_pose_table(quat_ego, center_ego, path, cols["track_uuid"])
        frame_ts, frame_start = np.unique(ts, return_index=True)
        frame_start = np.append(frame_start, ts.size)
        row_frame = np.searchsorted(frame_ts, ts)
        poses = self._poses(log_dir)
        T_city_from_ego = poses.T_city_from_ego(frame_ts)
        T_rows = T_city_from_ego[row_frame]
        center_global = np.einsum("nij,nj->ni", T_rows[:, :3, :3], center_ego) + T_rows[:, :3, 3]
        rotation_global = quat_multiply(rotmat_to_quat(T_rows[:, :3, :3]), quat_ego)
        velocity = self._velocities(cols["track_uuid"], ts, center_global)
        return _LogData(
            log_dir, frame_ts, frame_start, cols, T_city_from_ego, center_global, rotation_global, velocity, poses
        )

    @staticmethod
    def _poses(log_dir: Path) -> _PoseTable:
        path = log_dir / "city_SE3_egovehicle.feather"
        cols = read_feather(path, POSE_COLUMNS)
        ts = cols["timestamp_ns"].astype(np.int64)
        ts, first = np.unique(ts, return_index=True)
        rotation = np.stack([cols[k].astype(np.float64) for k in ("qw", "qx", "qy", "qz")], axis=1)[first]
        translation = np.stack([cols[k].astype(np.float64) for k in ("tx_m", "ty_m", "tz_m")], axis=1)[first]
        validate_pose_table(rotation, translation, path, ts)
        return _PoseTable(path, ts, rotation, translation)

    @staticmethod
    def _velocities(track: np.ndarray, ts_ns: np.ndarray, center_global: np.ndarray) -> np.ndarray:
        """Per-row velocity from the previous / next annotation of the same track (nuScenes rule)."""
        order = np.lexsort((ts_ns, track.astype(str)))
        same_as_prev = np.zeros(order.size, dtype=bool)
        same_as_prev[1:] = track[order[1:]] == track[order[:-1]]
        prev_idx = np.full(order.size, -1, dtype=np.int64)
        next_idx = np.full(order.size, -1, dtype=np.int64)
        prev_idx[order[1:][same_as_prev[1:]]] = order[:-1][same_as_prev[1:]]
        next_idx[order[:-1][same_as_prev[1:]]] = order[1:][same_as_prev[1:]]
        # Microsecond times, as for nuScenes (AV2 annotation timestamps are whole microseconds).
        time_s = 1e-6 * (ts_ns // 1000).astype(np.float64)
        return neighbour_velocity(center_global, time_s, prev_idx, next_idx)

    # ------------------------------------------------------------------------------------------ scenes
    def scenes(self) -> list[Scene]:
        """Every log's scene, built (and cached) one by one: the first broken log raises its error."""
        return [self._cached_scene(d) for d in self.log_dirs]

    def scene_ids(self) -> list[tuple[str, str]]:
        """(name, token) of every log (both the log id) without reading any log."""
        return [(d.name, d.name) for d in self.log_dirs]

    def scene(self, name_or_token: str) -> Scene:
        """One log's scene, built alone: another log's broken files do not concern it."""
        for d in self.log_dirs:
            if d.name == name_or_token:
                return self._cached_scene(d)
        logs = [d.name for d in self.log_dirs]
        raise LogFormatError(self.root, f"no scene named {name_or_token!r}; AV2 logs: {logs}")

    def _cached_scene(self, log_dir: Path) -> Scene:
        return self._scene_cache.get(log_dir.name, lambda: self._make_scene(log_dir))

    def unknown_modalities(self) -> dict[str, list[str]]:
        """{}: the rig is fixed (ring and stereo cameras, the LiDAR), every sensor of a known modality."""
        return {}

    def _make_scene(self, log_dir: Path) -> Scene:
        log_id = log_dir.name
        data = self._log(log_id)
        scene = Scene(self, log_id, log_id, [], "", log_id)
        lidar_dir = log_dir / "sensors" / "lidar"
        cameras = self._camera_samples(log_id, data)
        lidar_calibration = SensorCalibration(LIDAR_CHANNEL, "lidar", np.eye(4), ray_origin_m=_lidar_origin(log_dir))
        for i, ts_ns in enumerate(data.frame_ts_ns):
            token = f"{log_id}_{int(ts_ns)}"
            pose = data.T_city_from_ego[i]
            sensors: dict[str, SensorSample] = {}
            lidar_path = lidar_dir / f"{int(ts_ns)}.feather"
            if lidar_path.is_file():
                sensors[LIDAR_CHANNEL] = SensorSample(
                    token, LIDAR_CHANNEL, int(ts_ns) // 1000, lidar_path, pose, lidar_calibration, True
                )
            for name, samples in cameras.items():
                sample = samples[i]
                if sample is not None:
                    sensors[name] = sample
            scene.frames.append(Frame(self, token, log_id, i, int(ts_ns) // 1000, pose, sensors))
            self._frame_rows[token] = (log_id, i)
        return scene

    def _camera_samples(self, log_id: str, data: _LogData) -> dict[str, list[SensorSample | None]]:
        """Per camera, per frame: the nearest image within half the camera period (None where there is none),
        with the ego pose interpolated at the image's own timestamp. Records the misses in ``data``."""
        out: dict[str, list[SensorSample | None]] = {}
        for name, cam in self.cameras(log_id).items():
            index = match_nearest(data.frame_ts_ns, cam.timestamp_ns, cam.period_ns)
            matched = index >= 0
            image_ns = cam.timestamp_ns[index[matched]]
            poses = data.poses.T_city_from_ego(image_ns) if image_ns.size else np.zeros((0, 4, 4))
            samples: list[SensorSample | None] = [None] * index.size
            for row, ts, pose in zip(np.flatnonzero(matched), image_ns, poses, strict=True):
                samples[int(row)] = SensorSample(
                    f"{log_id}_{name}_{int(ts)}", name, int(ts) // 1000, cam.image_path(int(ts)), pose, cam.calibration
                )
            out[name] = samples
            data.camera_misses[name] = int(np.count_nonzero(~matched))
        return out

    # ------------------------------------------------------------------------------------------ cameras
    def cameras(self, scene: Scene | str) -> dict[str, AV2Camera]:
        """The log's cameras that have an image folder, in ``intrinsics.feather`` row order; empty without
        ``sensors/cameras/``. A camera folder without an ``intrinsics.feather`` row raises LogFormatError."""
        log_id = scene.token if isinstance(scene, Scene) else scene
        if log_id not in self._cameras:
            self._cameras[log_id] = self._load_cameras(self._log_dir(log_id))
            for cam in self._cameras[log_id].values():
                self._camera_of_folder[cam.folder] = cam
        return self._cameras[log_id]

    def _load_cameras(self, log_dir: Path) -> dict[str, AV2Camera]:
        camera_root = log_dir / "sensors" / "cameras"
        folders = sorted(p.name for p in camera_root.iterdir() if p.is_dir()) if camera_root.is_dir() else []
        if not folders:
            return {}
        intr_path = log_dir / "calibration" / "intrinsics.feather"
        calibrations, distortion = self._read_camera_calibration(log_dir, required=True)
        unknown = [f for f in folders if f not in calibrations]
        if unknown:
            raise LogFormatError(intr_path, f"camera folders {unknown} of sensors/cameras have no intrinsics row")
        out: dict[str, AV2Camera] = {}
        for name, calibration in calibrations.items():
            if name not in folders:
                continue
            stamps = image_timestamps(camera_root / name)
            out[name] = AV2Camera(
                name, calibration, distortion[name], camera_root / name, stamps, camera_period_ns(stamps)
            )
        return out

    def camera_misses(self, scene: Scene | str) -> dict[str, int]:
        """Per camera of the log, how many of its frames have no image of that camera (none within half the
        camera period)."""
        log_id = scene.token if isinstance(scene, Scene) else scene
        self.scene(log_id)  # the matching runs when the scene is made
        return dict(self._log(log_id).camera_misses)

    def camera_calibrations(self, scene: Scene | str) -> dict[str, SensorCalibration]:
        """Calibrations of the log's cameras (pinhole ``K``, image size, ``T_ego_from_sensor``), in
        ``intrinsics.feather`` order, whether or not the log has images; empty without a ``calibration/`` folder."""
        log_dir = self._log_dir(scene.token if isinstance(scene, Scene) else scene)
        return self._read_camera_calibration(log_dir, required=False)[0]

    def camera_distortion(self, scene: Scene | str) -> dict[str, np.ndarray]:
        """Radial distortion ``[k1, k2, k3]`` of each camera of ``intrinsics.feather`` (not applied unless the
        reader was opened with ``undistort=True``)."""
        log_dir = self._log_dir(scene.token if isinstance(scene, Scene) else scene)
        return self._read_camera_calibration(log_dir, required=False)[1]

    @staticmethod
    def _read_camera_calibration(
        log_dir: Path, required: bool
    ) -> tuple[dict[str, SensorCalibration], dict[str, np.ndarray]]:
        intr_path = log_dir / "calibration" / "intrinsics.feather"
        extr_path = log_dir / "calibration" / "egovehicle_SE3_sensor.feather"
        if not required and not (intr_path.is_file() and extr_path.is_file()):
            return {}, {}
        intr = read_feather(intr_path, INTRINSICS_COLUMNS)
        extr = read_feather(extr_path, EXTRINSICS_COLUMNS)
        rotation = np.stack([extr[k].astype(np.float64) for k in ("qw", "qx", "qy", "qz")], axis=1)
        translation = np.stack([extr[k].astype(np.float64) for k in ("tx_m", "ty_m", "tz_m")], axis=1)
        validate_pose_table(rotation, translation, extr_path, extr["sensor_name"])
        row_of = {str(n): i for i, n in enumerate(extr["sensor_name"])}
        calibrations: dict[str, SensorCalibration] = {}
        distortion: dict[str, np.ndarray] = {}
        for i, raw_name in enumerate(intr["sensor_name"]):
            name = str(raw_name)
            if name not in row_of:
                raise LogFormatError(extr_path, f"camera {name!r} of intrinsics.feather has no extrinsics")
            if name in calibrations:
                raise LogFormatError(intr_path, f"camera {name!r} has two rows")
            values = np.array([intr[c][i] for c in ("fx_px", "fy_px", "cx_px", "cy_px", "k1", "k2", "k3")], float)
            width, height = int(intr["width_px"][i]), int(intr["height_px"][i])
            if not np.all(np.isfinite(values)) or values[0] <= 0 or values[1] <= 0 or width <= 0 or height <= 0:
                raise LogFormatError(intr_path, f"camera {name!r}: intrinsics {values.tolist()} / {width}x{height}")
            fx, fy, cx, cy = values[:4]
            j = row_of[name]
            calibrations[name] = SensorCalibration(
                name,
                "camera",
                make_transform(rotation[j], translation[j]),
                np.array([[fx, 0.0, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]], dtype=np.float64),
                width,
                height,
            )
            distortion[name] = values[4:7].copy()
        return calibrations, distortion

    # ------------------------------------------------------------------------------------------ data
    def load_bytes(self, sample: SensorSample) -> bytes:
        """The file's bytes; with ``undistort=True``, a distorted camera's image undistorted (module docstring)."""
        data = super().load_bytes(sample)
        if not (self.undistort and sample.calibration.is_camera):
            return data
        cam = self._camera_of_folder.get(sample.path.parent)
        if cam is None or cam.calibration.intrinsic is None or not cam.distorted:
            return data
        return undistort_jpeg(data, cam.calibration.intrinsic, cam.distortion, sample.path)

    def load_points(self, sample: SensorSample) -> np.ndarray:
        """Sweep [N, 6] float32 in the ego frame: x, y, z, intensity, laser_number, offset_ns (as float32)."""
        cols = read_feather(sample.path)
        missing = [c for c in LIDAR_COLUMNS if c not in cols]
        if missing:
            raise LogFormatError(sample.path, f"LiDAR sweep lacks columns {missing}")
        names = list(LIDAR_COLUMNS) + [c for c in ("laser_number", "offset_ns") if c in cols]
        return require_finite_points(np.stack([cols[c].astype(np.float32) for c in names], axis=1), sample.path)

    def load_annotations(self, frame: Frame) -> Annotations:
        log_id, i = self._frame_rows.get(frame.token, (frame.scene_token, frame.index))
        data = self._log(log_id)
        rows = slice(int(data.frame_start[i]), int(data.frame_start[i + 1]))
        cols = {k: v[rows] for k, v in data.columns.items()}
        rotation = data.rotation_global[rows]
        n = rotation.shape[0]
        category = _str_array([str(c) for c in cols["category"]])
        boxes = Boxes(
            center=data.center_global[rows],
            size_lwh=np.stack([cols["length_m"], cols["width_m"], cols["height_m"]], axis=1),
            yaw=quat_to_yaw(rotation),
            velocity=data.velocity_global[rows],
            label=_str_array([av2_to_detection(c) for c in category]),
            track_id=_str_array([str(t) for t in cols["track_uuid"]]),
            frame="global",
            extras={ROTATION_GLOBAL: rotation},
        )
        return Annotations(
            boxes=boxes,
            category=category,
            token=_str_array([f"{frame.token}_{t}" for t in cols["track_uuid"]]),
            num_lidar_pts=cols["num_interior_pts"].astype(np.int64),
            num_radar_pts=np.zeros(n, dtype=np.int64),
            visibility=np.zeros(n, dtype=np.int64),
            attribute=_str_array([""] * n),
        )


def _str_array(values: list[str]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def open_av2(root: Path, version: str | None = None) -> AV2Reader:
    """The ``av2`` log reader (AV2 logs have no table versions); images as released (already undistorted)."""
    if version is not None:
        raise ConfigError(f"version={version!r} applies to nuScenes logs only")
    return AV2Reader(root)


# What stridegen.logs.detect_format asks of this reader, and names in its error when no reader knows a folder.
open_av2.detect = is_av2_layout  # type: ignore[attr-defined]
open_av2.looks_for = (  # type: ignore[attr-defined]
    "AV2 logs (<root>/annotations.feather or <root>/<log_id>/annotations.feather)"
)


def open_av2_undistorted(root: Path, version: str | None = None) -> AV2Reader:
    """The AV2 reader for logs in the AV2 layout whose images are raw: undistorts them on read
    (``log.format=stridegen.logs.av2:open_av2_undistorted``)."""
    if version is not None:
        raise ConfigError(f"version={version!r} applies to nuScenes logs only")
    return AV2Reader(root, undistort=True)


def _lidar_origin(log_dir: Path) -> np.ndarray | None:
    """[3] the mean position of the log's LiDARs (``*lidar`` rows of ``egovehicle_SE3_sensor.feather``: AV2's
    ``up_lidar`` and ``down_lidar``) in the ego frame, where the merged sweep's points are given; None without
    that file or those rows."""
    path = log_dir / "calibration" / "egovehicle_SE3_sensor.feather"
    if not path.is_file():
        return None
    extr = read_feather(path, EXTRINSICS_COLUMNS)
    rows = [i for i, name in enumerate(extr["sensor_name"]) if str(name).endswith("lidar")]
    if not rows:
        return None
    translation = np.stack([extr[k].astype(np.float64)[rows] for k in ("tx_m", "ty_m", "tz_m")], axis=1)
    if not np.all(np.isfinite(translation)):
        raise LogFormatError(path, f"LiDAR position {translation.tolist()} is not finite")
    return translation.mean(axis=0)
