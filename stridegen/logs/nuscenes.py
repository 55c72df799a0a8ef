"""Reader of nuScenes-format logs (any version folder: v1.0-mini, v1.0-trainval, v1.0-demo, ...).

Layout: ``<root>/<version>/*.json`` tables and ``<root>/samples|sweeps/<CHANNEL>/<file>`` sensor files. The
tables are indexed once into an on-disk index (``stridegen.logs.nuscenes_tables``: built on the first open, kept in
``<root>/.stridegen-index/`` or the cache folder, rebuilt when a table changes); a reader reads one scene's records
at a time from it, so its memory does not grow with the log. Point clouds and images are read on demand.
Schema: https://www.nuscenes.org/nuscenes#data-format (and nuscenes-devkit python-sdk/nuscenes/nuscenes.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from stridegen.core.boxes import Boxes
from stridegen.core.cache import LruCache
from stridegen.core.errors import (
    InvalidCalibrationError,
    LogFormatError,
    MissingFileError,
    PointCloudSizeError,
)
from stridegen.core.transforms import pose_transform, quat_to_yaw
from stridegen.core.vocabulary import detection_class
from stridegen.logs._common import (
    SCENE_CACHE,
    log_file,
    neighbour_velocity,
    require_finite_points,
    valid_poses,
    validate_pose,
)
from stridegen.logs.base import (
    KNOWN_MODALITIES,
    Annotations,
    Frame,
    LogReader,
    Scene,
    SensorCalibration,
    SensorSample,
)
from stridegen.logs.box_rotation import ROTATION_GLOBAL
from stridegen.logs.nuscenes_table_store import TableStore
from stridegen.logs.nuscenes_tables import open_tables

# (table, token) -> record: the lookups of one load_annotations call (a frame's annotations share a few samples,
# categories and attributes)
_Memo = dict[tuple[str, str], dict[str, Any]]

CALIBRATION_CACHE = 64  # sensor calibrations a reader keeps (a scene of nuScenes uses 12 sensors)

# 5 float32 per LiDAR point: x, y, z, intensity, ring index (nuscenes-devkit LidarPointCloud.from_file).
LIDAR_VALUES_PER_POINT = 5
LIDAR_POINT_BYTES = 4 * LIDAR_VALUES_PER_POINT


def find_version_dirs(root: Path) -> list[Path]:
    """Sub-folders of ``root`` that hold a nuScenes table set (a ``scene.json``), sorted by name."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / "scene.json").is_file())


def is_nuscenes_layout(root: Path) -> bool:
    """Whether ``root`` holds nuScenes tables: version folders (``v1.0-mini``, ... with ``scene.json``), or is one
    such folder itself (the ``nuscenes`` reader's answer to ``stridegen.logs.detect_format``)."""
    return bool(find_version_dirs(root)) or (root / "scene.json").is_file()


class NuScenesReader(LogReader):
    """nuScenes tables -> Scene / Frame objects.

    ``version`` names the table folder (e.g. ``"v1.0-mini"``); it may be left out when ``root`` holds exactly one.
    ``index=False`` loads the tables whole instead of indexing them (``stridegen.logs.nuscenes_tables``).

    Problems of single records are found when the tables are indexed but raised where the record is used, so that
    they fail the scenes that use it and only those, the same way whichever table they sit in: an ego pose or a
    sensor calibration with a NaN or non-unit rotation (``InvalidPoseError``), two records of a table with one token
    and different contents (``DuplicateTokenError``). Camera intrinsics (``InvalidCalibrationError``), annotation
    rotations and the annotations' prev / next links are checked when a scene or a frame's annotations are read.

    The reader keeps the last ``SCENE_CACHE`` scenes it built and the ego poses of the last one.
    """

    format_name = "nuscenes"

    def __init__(self, root: str | Path, version: str | None = None, index: bool = True) -> None:
        super().__init__(root)
        self.table_dir = self._resolve_version(version)
        self.version = self.table_dir.name
        self._table_paths: dict[str, Path] = {}
        self.store: TableStore = open_tables(self.root, self.table_dir, index)
        self._scene_cache: LruCache[str, Scene] = LruCache(SCENE_CACHE)
        self._pose_cache: dict[str, np.ndarray] = {}
        self._calib_cache: LruCache[tuple[str, int, int], SensorCalibration] = LruCache(CALIBRATION_CACHE)

    # ------------------------------------------------------------------------------------------ loading
    def _resolve_version(self, version: str | None) -> Path:
        if version is not None:
            table_dir = self.root / version
            if not (table_dir / "scene.json").is_file():
                raise MissingFileError(table_dir, f"nuScenes version folder {version!r} with scene.json not found")
            return table_dir
        found = find_version_dirs(self.root)
        if not found:
            raise LogFormatError(self.root, "no nuScenes version folder (a sub-folder holding scene.json) found")
        if len(found) > 1:
            raise LogFormatError(self.root, f"several nuScenes versions {[p.name for p in found]}: pass version=")
        return found[0]

    def table_path(self, name: str) -> Path:
        if name not in self._table_paths:  # made once: the annotations of every frame name theirs
            self._table_paths[name] = self.table_dir / f"{name}.json"
        return self._table_paths[name]

    def get(self, table: str, token: str) -> dict[str, Any]:
        """The record of ``table`` with ``token``; LogFormatError naming the table file if there is none, and the
        record's own error if it is a bad one (module docstring of ``stridegen.logs.nuscenes_tables``)."""
        return self.store.get(table, token)

    def metadata_path(self, table: str) -> Path | None:
        return self.table_path(table)

    def unknown_modalities(self) -> dict[str, list[str]]:
        """From the sensor table, which lists every sensor a calibration can refer to (a record without a
        modality is left to the scenes that use it: their sensor records fail them)."""
        out: dict[str, list[str]] = {}
        for rec in self.store.small_table("sensor"):
            modality = rec.get("modality")
            if isinstance(modality, str) and modality not in KNOWN_MODALITIES:
                out.setdefault(modality, []).append(str(rec.get("channel", rec["token"])))
        return out

    # ------------------------------------------------------------------------------------------ poses
    def ego_pose(self, token: str) -> np.ndarray:
        """``T_global_from_ego`` of an ego_pose record."""
        if token not in self._pose_cache:
            rec = self.get("ego_pose", token)
            self._pose_cache[token] = pose_transform(rec["rotation"], rec["translation"])
        return self._pose_cache[token]

    def calibration(self, sample_data: dict[str, Any]) -> SensorCalibration:
        """Calibration of the sensor that recorded a sample_data record (image size from the record)."""
        width, height = int(sample_data.get("width") or 0), int(sample_data.get("height") or 0)
        key = (sample_data["calibrated_sensor_token"], width, height)
        return self._calib_cache.get(key, lambda: self._make_calibration(key[0], width, height))

    def _make_calibration(self, calibrated_sensor_token: str, width: int, height: int) -> SensorCalibration:
        cs = self.get("calibrated_sensor", calibrated_sensor_token)
        sensor = self.get("sensor", cs["sensor_token"])
        intrinsic = self._intrinsic(cs, sensor)
        return SensorCalibration(
            channel=sensor["channel"],
            modality=sensor["modality"],
            T_ego_from_sensor=pose_transform(cs["rotation"], cs["translation"]),
            intrinsic=intrinsic if intrinsic.size else None,
            width=width or None,
            height=height or None,
        )

    def _intrinsic(self, cs: dict[str, Any], sensor: dict[str, Any]) -> np.ndarray:
        """The 3x3 ``camera_intrinsic`` of a calibrated_sensor ([] for non-cameras): finite, focal lengths > 0."""
        path, what = self.table_path("calibrated_sensor"), f"calibrated_sensor {cs['token']} ({sensor['channel']})"
        try:
            intrinsic = np.asarray(cs.get("camera_intrinsic") or [], dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidCalibrationError(path, f"{what}: camera_intrinsic is not numbers") from None
        if not intrinsic.size:
            if sensor.get("modality") == "camera":
                raise InvalidCalibrationError(path, f"{what}: a camera without camera_intrinsic")
            return intrinsic
        if intrinsic.shape != (3, 3):
            raise InvalidCalibrationError(path, f"{what}: camera_intrinsic must be 3x3, got shape {intrinsic.shape}")
        if not np.all(np.isfinite(intrinsic)):
            raise InvalidCalibrationError(path, f"{what}: camera_intrinsic {intrinsic.tolist()} is not finite")
        if not (intrinsic[0, 0] > 0 and intrinsic[1, 1] > 0):
            raise InvalidCalibrationError(
                path, f"{what}: focal lengths fx={intrinsic[0, 0]:g}, fy={intrinsic[1, 1]:g} must be positive"
            )
        return intrinsic

    def sensor_sample(self, sample_data: dict[str, Any]) -> SensorSample:
        calibration = self.calibration(sample_data)
        token = sample_data["token"]
        return SensorSample(
            token=token,
            channel=calibration.channel,
            timestamp_us=int(sample_data["timestamp"]),
            path=log_file(
                self.root,
                sample_data["filename"],
                self.table_path("sample_data"),
                f"sample_data {sample_data['token']}",
            ),
            T_global_from_ego=self.ego_pose(sample_data["ego_pose_token"]),
            calibration=calibration,
            is_key_frame=bool(sample_data.get("is_key_frame", False)),
        )

    # ------------------------------------------------------------------------------------------ scenes
    def scenes(self) -> list[Scene]:
        """Every scene, built (and cached) one by one: the first broken scene raises its error."""
        return [self._cached_scene(rec) for rec in self.store.scene_records()]

    def scene_ids(self) -> list[tuple[str, str]]:
        return self.store.scene_ids()

    def scene(self, name_or_token: str) -> Scene:
        """One scene by name or token, built alone: an error in another scene's records does not concern it."""
        rec = self.store.find_scene(name_or_token)
        if rec is None:
            raise LogFormatError(self.table_path("scene"), f"no scene named {name_or_token!r}")
        return self._cached_scene(rec)

    def _cached_scene(self, rec: dict[str, Any]) -> Scene:
        return self._scene_cache.get(rec["token"], lambda: self._make_scene(rec))

    def _make_scene(self, rec: dict[str, Any]) -> Scene:
        self.store.focus(rec["token"])
        self._pose_cache.clear()  # the poses of one scene at a time
        log = self.store.first("log", rec.get("log_token", "")) or {}
        scene = Scene(
            self, rec["token"], rec.get("name", rec["token"]), [], rec.get("description", ""), log.get("logfile", "")
        )
        scene.frames = [self._make_frame(sample, rec["token"], i) for i, sample in enumerate(self._scene_samples(rec))]
        return scene

    def _scene_samples(self, scene: dict[str, Any]) -> list[dict[str, Any]]:
        samples: list[dict[str, Any]] = []
        seen: set[str] = set()
        token = scene.get("first_sample_token", "")
        path = self.table_path("sample")
        while token:
            if token in seen:
                raise LogFormatError(path, f"sample {token} is visited twice walking scene {scene['token']}")
            seen.add(token)
            sample = self.get("sample", token)
            if sample.get("scene_token", scene["token"]) != scene["token"]:
                raise LogFormatError(
                    path, f"sample {token} reached from scene {scene['token']} belongs to scene {sample['scene_token']}"
                )
            if samples and int(sample["timestamp"]) < int(samples[-1]["timestamp"]):
                raise LogFormatError(path, f"sample {token} is earlier than its prev sample")
            samples.append(sample)
            token = sample.get("next", "")
        return samples

    def _make_frame(self, sample: dict[str, Any], scene_token: str, index: int) -> Frame:
        sensors: dict[str, SensorSample] = {}
        sweeps: dict[str, list[SensorSample]] = {}
        for sd in self.store.key_sample_data(sample["token"]):
            s = self.sensor_sample(sd)
            if s.channel in sensors:
                raise LogFormatError(
                    self.table_path("sample_data"), f"sample {sample['token']} has two key sample_data of {s.channel}"
                )
            sensors[s.channel] = s
            sweeps[s.channel] = self._sweeps_before(sd)
        return Frame(
            self,
            sample["token"],
            scene_token,
            index,
            int(sample["timestamp"]),
            self._reference_pose(sensors),
            sensors,
            sweeps,
        )

    def _sweeps_before(self, key_sd: dict[str, Any]) -> list[SensorSample]:
        """Non-key sample_data before a key one, walking ``prev`` back to the previous key frame, newest first."""
        out: list[SensorSample] = []
        token = key_sd.get("prev", "")
        while token:
            sd = self.get("sample_data", token)
            if sd.get("is_key_frame", False) or len(out) > 10_000:
                break
            out.append(self.sensor_sample(sd))
            token = sd.get("prev", "")
        return out

    @staticmethod
    def _reference_pose(sensors: dict[str, SensorSample]) -> np.ndarray:
        if "LIDAR_TOP" in sensors:
            return sensors["LIDAR_TOP"].T_global_from_ego
        lidars = sorted(c for c, s in sensors.items() if s.calibration.modality == "lidar")
        if lidars:
            return sensors[lidars[0]].T_global_from_ego
        if sensors:
            return next(iter(sensors.values())).T_global_from_ego
        return np.eye(4)

    # ------------------------------------------------------------------------------------------ data
    def point_file_problem(self, sample: SensorSample, size: int) -> str | None:
        """A LiDAR ``.pcd.bin`` holds 5 float32 per point: its size must be a multiple of 20 bytes."""
        if sample.calibration.modality != "lidar" or not size or size % LIDAR_POINT_BYTES == 0:
            return None
        per_point = f"{LIDAR_VALUES_PER_POINT} float32 per point"
        return f"size {size} bytes is not a multiple of {LIDAR_POINT_BYTES} ({per_point})"

    def load_points(self, sample: SensorSample) -> np.ndarray:
        """Point cloud in the sensor frame, float32.

        LiDAR (``.pcd.bin``): [N, 5] x, y, z, intensity, ring. Radar (``.pcd``): [N, F] with the file's fields in
        order (x, y, z, dyn_prop, id, rcs, vx, vy, ...; see ``read_pcd``), unfiltered.
        """
        modality = sample.calibration.modality
        if modality == "radar":
            return read_pcd(sample.path)
        if modality != "lidar":
            raise LogFormatError(sample.path, f"{sample.channel} is a {modality} channel, not a point cloud")
        try:
            size = sample.path.stat().st_size
        except FileNotFoundError:
            raise MissingFileError(sample.path, f"LiDAR file of sample_data {sample.token} is missing") from None
        if size == 0:
            raise PointCloudSizeError(sample.path, "LiDAR file is empty (0 bytes): a sweep without a single point")
        problem = self.point_file_problem(sample, size)
        if problem:
            raise PointCloudSizeError(sample.path, problem)
        points = np.fromfile(sample.path, dtype="<f4").reshape(-1, LIDAR_VALUES_PER_POINT)
        return require_finite_points(points, sample.path)

    def load_annotations(self, frame: Frame) -> Annotations:
        self.store.focus(frame.scene_token)
        records = self.store.sample_annotations(frame.token)
        ann_path = self.table_path("sample_annotation")
        for r in records:
            bad = self.store.bad("sample_annotation", r["token"])
            if bad is not None:
                raise bad
        try:
            center = np.array([r["translation"] for r in records], dtype=np.float64).reshape(-1, 3)
            size_wlh = np.array([r["size"] for r in records], dtype=np.float64).reshape(-1, 3)
            rotation = np.array([r["rotation"] for r in records], dtype=np.float64).reshape(-1, 4)
        except (KeyError, ValueError) as exc:
            raise LogFormatError(ann_path, f"sample_annotation of sample {frame.token} malformed ({exc})") from None
        for i in np.flatnonzero(~valid_poses(rotation, center)):  # vectorised; the first bad row raises
            validate_pose(rotation[i], center[i], ann_path, f"sample_annotation {records[i]['token']}")
        memo: _Memo = {}
        category = [self._category_name(r, memo) for r in records]
        boxes = Boxes(
            center=center,
            size_lwh=size_wlh[:, [1, 0, 2]],  # tables store [w, l, h]
            yaw=quat_to_yaw(rotation),  # devkit eval/common/utils.py quaternion_yaw
            velocity=self._velocities(records, center, frame.token, memo) if records else np.zeros((0, 3)),
            label=[detection_class(c) for c in category],
            track_id=[r.get("instance_token", "") for r in records],
            frame="global",
            extras={ROTATION_GLOBAL: rotation},
        )
        return Annotations(
            boxes=boxes,
            category=_str_array(category),
            token=_str_array([r["token"] for r in records]),
            num_lidar_pts=np.array([int(r.get("num_lidar_pts", 0)) for r in records], dtype=np.int64),
            num_radar_pts=np.array([int(r.get("num_radar_pts", 0)) for r in records], dtype=np.int64),
            visibility=np.array([_visibility_bin(r.get("visibility_token", "")) for r in records], dtype=np.int64),
            attribute=_str_array([self._first_attribute(r, memo) for r in records]),
        )

    def _get_memo(self, memo: _Memo, table: str, token: Any) -> dict[str, Any]:
        """``get`` through ``memo`` (string tokens): the same record or error, each token looked up once per memo."""
        if type(token) is not str:
            return self.get(table, token)
        key = (table, token)
        if key not in memo:
            memo[key] = self.get(table, token)
        return memo[key]

    def _category_name(self, ann: dict[str, Any], memo: _Memo) -> str:
        if "category_name" in ann:
            return str(ann["category_name"])
        instance = self._get_memo(memo, "instance", ann["instance_token"])
        return str(self._get_memo(memo, "category", instance["category_token"])["name"])

    def _first_attribute(self, ann: dict[str, Any], memo: _Memo) -> str:
        tokens = ann.get("attribute_tokens") or []
        return str(self._get_memo(memo, "attribute", tokens[0])["name"]) if tokens else ""

    def _velocities(
        self, records: list[dict[str, Any]], center: np.ndarray, sample_token: str, memo: _Memo
    ) -> np.ndarray:
        """Velocity [N, 3] (global frame, m/s) of a frame's annotations (``center`` their translations) from their
        prev / next annotations (``neighbour_velocity``, the devkit's rule), which are read where not among them."""
        path = self.table_path("sample_annotation")
        at = {r["token"]: i for i, r in enumerate(records)}  # token -> row of ``rows``
        rows = list(records)

        def neighbour(ann: dict[str, Any], key: str) -> int:
            token = ann.get(key, "")
            if not token:
                return -1
            if token not in at:
                found = self.store.first("sample_annotation", token)
                if found is None:
                    raise LogFormatError(
                        path, f"sample_annotation {ann['token']} has {key} {token!r} that does not exist"
                    )
                at[token] = len(rows)
                rows.append(found)
            return at[token]

        prev_idx = np.array([neighbour(r, "prev") for r in records], dtype=np.int64)
        next_idx = np.array([neighbour(r, "next") for r in records], dtype=np.int64)
        try:
            others = np.array([r["translation"] for r in rows[len(records) :]], dtype=np.float64).reshape(-1, 3)
        except (KeyError, ValueError) as exc:
            raise LogFormatError(
                path, f"a neighbour annotation of sample {sample_token} is malformed ({exc})"
            ) from None
        position = np.concatenate([center, others])
        time_s = 1e-6 * np.array(
            [int(self._get_memo(memo, "sample", r["sample_token"])["timestamp"]) for r in rows], dtype=np.float64
        )
        extra = np.full(len(rows) - len(records), -1, dtype=np.int64)  # the neighbours' own velocities are not asked
        prev_all, next_all = np.concatenate([prev_idx, extra]), np.concatenate([next_idx, extra])
        return neighbour_velocity(position, time_s, prev_all, next_all)[: len(records)]


_PCD_KINDS = {"F": "f", "I": "i", "U": "u"}


def read_pcd(path: Path) -> np.ndarray:
    """Points [N, F] float32 of a PCD file with ``DATA binary`` or ``DATA ascii`` (nuScenes radar files).

    Header keys per the PCL file-format spec (https://pointclouds.org/documentation/tutorials/pcd_file_format.html):
    FIELDS, SIZE, TYPE (F float, I signed, U unsigned), COUNT, POINTS, DATA. No point is filtered out (the
    devkit's RadarPointCloud.from_file drops some invalid / ambiguous states by default; this reader does not).
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise MissingFileError(path, "point-cloud file is missing") from None
    header: dict[str, list[str]] = {}
    offset = 0
    while "DATA" not in header:
        end = raw.find(b"\n", offset)
        if end < 0:
            raise LogFormatError(path, "PCD header has no DATA line")
        line = raw[offset:end].decode("ascii", errors="replace").strip()
        offset = end + 1
        if line and not line.startswith("#"):
            key, *values = line.split()
            header[key.upper()] = values
    try:
        fields = header["FIELDS"]
        counts = [int(c) for c in header.get("COUNT", ["1"] * len(fields))]
        dtype = np.dtype(
            [
                (f"{name}_{k}", f"<{_PCD_KINDS[kind]}{size}")
                for name, size, kind, count in zip(fields, header["SIZE"], header["TYPE"], counts, strict=True)
                for k in range(count)
            ]
        )
        n = int(header["POINTS"][0])
    except (KeyError, ValueError, IndexError, TypeError) as exc:
        raise LogFormatError(path, f"PCD header is malformed ({type(exc).__name__}: {exc})") from None
    names: tuple[str, ...] = dtype.names or ()  # a structured dtype: never None
    mode = header["DATA"][0].lower()
    if mode == "binary":
        if len(raw) - offset < n * dtype.itemsize:
            raise PointCloudSizeError(path, f"{len(raw) - offset} data bytes for {n} points of {dtype.itemsize} bytes")
        data = np.frombuffer(raw, dtype=dtype, count=n, offset=offset)
        return np.stack([data[name].astype(np.float32) for name in names], axis=1).reshape(n, -1)
    if mode == "ascii":
        numbers = np.array(raw[offset:].split(), dtype=np.float64)
        if numbers.size != n * len(names):
            raise PointCloudSizeError(path, f"{numbers.size} values for {n} points of {len(names)} fields")
        return numbers.reshape(n, -1).astype(np.float32)
    raise LogFormatError(path, f"PCD DATA {mode!r} is not supported (binary and ascii are)")


def _visibility_bin(token: str) -> int:
    """nuScenes visibility tokens are "1".."4" (0-40, 40-60, 60-80, 80-100 %); 0 where unknown."""
    return int(token) if isinstance(token, str) and token.isdigit() else 0


def _str_array(values: list[str]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def open_nuscenes(root: Path, version: str | None = None) -> NuScenesReader:
    """The ``nuscenes`` log reader: ``root`` holds version folders, or is one (then ``version`` is its name)."""
    if version is None and (root / "scene.json").is_file():  # the version folder itself
        return NuScenesReader(root.parent, version=root.name)
    return NuScenesReader(root, version=version)


# What stridegen.logs.detect_format asks of this reader, and names in its error when no reader knows a folder.
open_nuscenes.detect = is_nuscenes_layout  # type: ignore[attr-defined]
open_nuscenes.looks_for = "a nuScenes version folder (<root>/<version>/scene.json)"  # type: ignore[attr-defined]
