"""Reader of nuScenes-format logs (any version folder: v1.0-mini, v1.0-trainval, v1.0-demo, ...).

Layout: ``<root>/<version>/*.json`` tables and ``<root>/samples|sweeps/<CHANNEL>/<file>`` sensor files. The
tables are loaded and indexed once when the reader is opened; point clouds and images are read on demand.
Schema: https://www.nuscenes.org/nuscenes#data-format (and nuscenes-devkit python-sdk/nuscenes/nuscenes.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from stridegen.core import geometry as geo
from stridegen.core.boxes import Boxes
from stridegen.core.errors import (
    DuplicateTokenError,
    InvalidCalibrationError,
    InvalidPoseError,
    LogFormatError,
    MissingFileError,
    PointCloudSizeError,
)
from stridegen.core.vocabulary import detection_class
from stridegen.formats.textfile import load_json
from stridegen.logs._common import ROTATION_GLOBAL, neighbour_velocity, validate_pose
from stridegen.logs.base import Annotations, Frame, LogReader, Scene, SensorCalibration, SensorSample

REQUIRED_TABLES = (
    "scene",
    "sample",
    "sample_data",
    "calibrated_sensor",
    "ego_pose",
    "sensor",
    "sample_annotation",
    "instance",
    "category",
    "visibility",
    "log",
    "attribute",
)
OPTIONAL_TABLES = ("map",)

# 5 float32 per LiDAR point: x, y, z, intensity, ring index (nuscenes-devkit LidarPointCloud.from_file).
LIDAR_VALUES_PER_POINT = 5
LIDAR_POINT_BYTES = 4 * LIDAR_VALUES_PER_POINT


def find_version_dirs(root: Path) -> list[Path]:
    """Sub-folders of ``root`` that hold a nuScenes table set (a ``scene.json``), sorted by name."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / "scene.json").is_file())


class NuScenesReader(LogReader):
    """nuScenes tables -> Scene / Frame objects.

    ``version`` names the table folder (e.g. ``"v1.0-mini"``); it may be left out when ``root`` holds exactly one.

    Problems of single records are found when the reader opens but raised where the record is used, so that they
    fail the scenes that use it and only those, the same way whichever table they sit in: an ego pose or a sensor
    calibration with a NaN or non-unit rotation (``InvalidPoseError``), two records of a table with one token and
    different contents (``DuplicateTokenError``). Camera intrinsics (``InvalidCalibrationError``) and annotation
    rotations are checked when a scene or a frame's annotations are read.
    """

    format_name = "nuscenes"

    def __init__(self, root: str | Path, version: str | None = None) -> None:
        super().__init__(root)
        self.table_dir = self._resolve_version(version)
        self.version = self.table_dir.name
        self.tables: dict[str, list[dict[str, Any]]] = {}
        self.index: dict[str, dict[str, dict[str, Any]]] = {}
        # (table, token) -> the error of a record that must not be used; raised by ``get`` (module docstring).
        self.bad_records: dict[tuple[str, str], LogFormatError] = {}
        for name in REQUIRED_TABLES:
            self._load_table(name, required=True)
        for name in OPTIONAL_TABLES:
            self._load_table(name, required=False)
        self._check_poses()
        self._build_indexes()
        self._scene_cache: dict[str, Scene] = {}
        self._velocity: np.ndarray | None = None

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
        return self.table_dir / f"{name}.json"

    def _load_table(self, name: str, required: bool) -> None:
        path = self.table_path(name)
        if not path.is_file():
            if required:
                raise MissingFileError(path, f"required nuScenes table {name!r} is missing")
            self.tables[name], self.index[name] = [], {}
            return
        # UTF-8, a byte-order mark tolerated; other encodings and bad JSON name the line (formats.textfile).
        records = load_json(path, f"table {name!r}", LogFormatError)
        if not isinstance(records, list) or not all(isinstance(r, dict) and "token" in r for r in records):
            raise LogFormatError(path, f"table {name!r} must be a JSON list of records that each have a token")
        self.tables[name] = records
        index: dict[str, dict[str, Any]] = {}
        first: dict[str, int] = {}
        rows: dict[str, list[int]] = {}  # token -> rows, for tokens whose records differ
        for i, r in enumerate(records):
            token = r["token"]
            if token not in index:
                index[token], first[token] = r, i
            elif index[token] != r:
                rows.setdefault(token, [first[token]]).append(i)
        self.index[name] = index
        for token, where in rows.items():
            self.bad_records[(name, token)] = DuplicateTokenError(
                path,
                f"token {token!r} is used by {len(where)} different {name} records (rows {where}): every "
                "reference to it is ambiguous",
            )

    def _check_poses(self) -> None:
        """Every ego_pose / calibrated_sensor rotation finite and unit (1e-3), every translation finite; the bad
        records go to ``bad_records`` (an InvalidPoseError naming the file and token), raised where one is used."""
        for name in ("ego_pose", "calibrated_sensor"):
            path = self.table_path(name)
            records = self.tables[name]
            try:
                rotation = np.array([r["rotation"] for r in records], dtype=np.float64).reshape(-1, 4)
                translation = np.array([r["translation"] for r in records], dtype=np.float64).reshape(-1, 3)
                bad = np.flatnonzero(~_valid_poses(rotation, translation)).tolist()
            except (KeyError, TypeError, ValueError):  # a malformed record: look at each
                bad = list(range(len(records)))
            for i in bad:
                rec = records[i]
                try:
                    validate_pose(rec.get("rotation"), rec.get("translation"), path, f"{name} {rec['token']}")
                except InvalidPoseError as exc:
                    self.bad_records.setdefault((name, rec["token"]), exc)

    def get(self, table: str, token: str) -> dict[str, Any]:
        """The record of ``table`` with ``token``; LogFormatError naming the table file if there is none, and the
        record's own error if it is a bad one (``bad_records``)."""
        bad = self.bad_records.get((table, token))
        if bad is not None:
            raise bad
        try:
            return self.index[table][token]
        except KeyError:
            raise LogFormatError(self.table_path(table), f"no {table} record with token {token!r}") from None

    def metadata_path(self, table: str) -> Path | None:
        return self.table_path(table)

    def _build_indexes(self) -> None:
        self._annotations_by_sample: dict[str, list[int]] = {}
        for i, ann in enumerate(self.tables["sample_annotation"]):
            self._annotations_by_sample.setdefault(ann["sample_token"], []).append(i)
        self._key_data_by_sample: dict[str, list[dict[str, Any]]] = {}
        for sd in self.tables["sample_data"]:
            if sd.get("is_key_frame", False):
                self._key_data_by_sample.setdefault(sd["sample_token"], []).append(sd)
        self._pose_cache: dict[str, np.ndarray] = {}
        self._calib_cache: dict[tuple[str, int, int], SensorCalibration] = {}

    # ------------------------------------------------------------------------------------------ poses
    def ego_pose(self, token: str) -> np.ndarray:
        """``T_global_from_ego`` of an ego_pose record."""
        if token not in self._pose_cache:
            rec = self.get("ego_pose", token)
            self._pose_cache[token] = geo.make_transform(rec["rotation"], rec["translation"])
        return self._pose_cache[token]

    def calibration(self, sample_data: dict[str, Any]) -> SensorCalibration:
        """Calibration of the sensor that recorded a sample_data record (image size from the record)."""
        width, height = int(sample_data.get("width") or 0), int(sample_data.get("height") or 0)
        key = (sample_data["calibrated_sensor_token"], width, height)
        if key not in self._calib_cache:
            cs = self.get("calibrated_sensor", key[0])
            sensor = self.get("sensor", cs["sensor_token"])
            intrinsic = self._intrinsic(cs, sensor)
            self._calib_cache[key] = SensorCalibration(
                channel=sensor["channel"],
                modality=sensor["modality"],
                T_ego_from_sensor=geo.make_transform(cs["rotation"], cs["translation"]),
                intrinsic=intrinsic if intrinsic.size else None,
                width=width or None,
                height=height or None,
            )
        return self._calib_cache[key]

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
        return SensorSample(
            token=sample_data["token"],
            channel=self.calibration(sample_data).channel,
            timestamp_us=int(sample_data["timestamp"]),
            path=self.root / sample_data["filename"],
            T_global_from_ego=self.ego_pose(sample_data["ego_pose_token"]),
            calibration=self.calibration(sample_data),
            is_key_frame=bool(sample_data.get("is_key_frame", False)),
        )

    # ------------------------------------------------------------------------------------------ scenes
    def scenes(self) -> list[Scene]:
        """Every scene, built (and cached) one by one: the first broken scene raises its error."""
        return [self._cached_scene(rec) for rec in self.tables["scene"]]

    def scene_ids(self) -> list[tuple[str, str]]:
        return [(str(rec.get("name", rec["token"])), str(rec["token"])) for rec in self.tables["scene"]]

    def scene(self, name_or_token: str) -> Scene:
        """One scene by name or token, built alone: an error in another scene's records does not concern it."""
        for rec in self.tables["scene"]:
            if name_or_token in (rec.get("name", rec["token"]), rec["token"]):
                return self._cached_scene(rec)
        raise LogFormatError(self.table_path("scene"), f"no scene named {name_or_token!r}")

    def _cached_scene(self, rec: dict[str, Any]) -> Scene:
        token = rec["token"]
        if token not in self._scene_cache:
            self._scene_cache[token] = self._make_scene(rec)
        return self._scene_cache[token]

    def _make_scene(self, rec: dict[str, Any]) -> Scene:
        log = self.index["log"].get(rec.get("log_token", ""), {})
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
        for sd in self._key_data_by_sample.get(sample["token"], []):
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
        if size % LIDAR_POINT_BYTES:
            raise PointCloudSizeError(
                sample.path,
                f"size {size} bytes is not a multiple of {LIDAR_POINT_BYTES} "
                f"({LIDAR_VALUES_PER_POINT} float32 per point)",
            )
        return np.fromfile(sample.path, dtype="<f4").reshape(-1, LIDAR_VALUES_PER_POINT)

    def load_annotations(self, frame: Frame) -> Annotations:
        rows = self._annotations_by_sample.get(frame.token, [])
        records = [self.tables["sample_annotation"][i] for i in rows]
        ann_path = self.table_path("sample_annotation")
        for r in records:
            bad = self.bad_records.get(("sample_annotation", r["token"]))
            if bad is not None:
                raise bad
        try:
            center = np.array([r["translation"] for r in records], dtype=np.float64).reshape(-1, 3)
            size_wlh = np.array([r["size"] for r in records], dtype=np.float64).reshape(-1, 3)
            rotation = np.array([r["rotation"] for r in records], dtype=np.float64).reshape(-1, 4)
        except (KeyError, ValueError) as exc:
            raise LogFormatError(ann_path, f"sample_annotation of sample {frame.token} malformed ({exc})") from None
        for i in np.flatnonzero(~_valid_poses(rotation, center)):  # vectorised; the first bad row raises
            validate_pose(rotation[i], center[i], ann_path, f"sample_annotation {records[i]['token']}")
        category = [self._category_name(r) for r in records]
        boxes = Boxes(
            center=center,
            size_lwh=size_wlh[:, [1, 0, 2]],  # tables store [w, l, h]
            yaw=geo.quat_to_yaw(rotation),  # devkit eval/common/utils.py quaternion_yaw
            velocity=self.annotation_velocities()[rows] if rows else np.zeros((0, 3)),
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
            attribute=_str_array([self._first_attribute(r) for r in records]),
        )

    def _category_name(self, ann: dict[str, Any]) -> str:
        if "category_name" in ann:
            return str(ann["category_name"])
        instance = self.get("instance", ann["instance_token"])
        return str(self.get("category", instance["category_token"])["name"])

    def _first_attribute(self, ann: dict[str, Any]) -> str:
        tokens = ann.get("attribute_tokens") or []
        return str(self.get("attribute", tokens[0])["name"]) if tokens else ""

    def annotation_velocities(self) -> np.ndarray:
        """Velocity [N, 3] (global frame, m/s) of every sample_annotation row, computed once for the table."""
        if self._velocity is None:
            table = self.tables["sample_annotation"]
            row_of = {r["token"]: i for i, r in enumerate(table)}
            position = np.array([r["translation"] for r in table], dtype=np.float64).reshape(-1, 3)
            time_s = 1e-6 * np.array(
                [int(self.get("sample", r["sample_token"])["timestamp"]) for r in table], dtype=np.float64
            )
            prev_idx = np.array([self._row(row_of, r, "prev") for r in table], dtype=np.int64)
            next_idx = np.array([self._row(row_of, r, "next") for r in table], dtype=np.int64)
            self._velocity = neighbour_velocity(position, time_s, prev_idx, next_idx)
        return self._velocity

    def _row(self, row_of: dict[str, int], ann: dict[str, Any], key: str) -> int:
        token = ann.get(key, "")
        if not token:
            return -1
        if token not in row_of:
            raise LogFormatError(
                self.table_path("sample_annotation"),
                f"sample_annotation {ann['token']} has {key} {token!r} that does not exist",
            )
        return row_of[token]


def _valid_poses(rotation: np.ndarray, translation: np.ndarray) -> np.ndarray:
    """[N] bool: rotation finite and of unit norm within 1e-3 (``validate_pose``'s rule), translation finite."""
    finite_q = np.all(np.isfinite(rotation), axis=1)
    unit_q = np.abs(np.linalg.norm(np.where(finite_q[:, None], rotation, 0.0), axis=1) - 1.0) <= 1e-3
    return np.asarray(finite_q & unit_q & np.all(np.isfinite(translation), axis=1))


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
