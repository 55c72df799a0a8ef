"""Reader of ``stridegen-log``: a small native log layout that a converter can write in a few lines.

Layout of format version 1 (full specification and a minimal converter: docs/log-format.md)::

    <root>/stridegen-log.json              manifest: {"format": "stridegen-log", "version": 1, "sensors", "scenes"}
    <root>/scenes/<scene>/frames.jsonl     one JSON object per frame, in strictly increasing time order
    <root>/scenes/<scene>/...              images, point clouds and box files named by frames.jsonl (relative paths)

Conventions:

- Frames: ego x forward, y left, z up; camera x right, y down, z forward (optical axis); global: any fixed,
  right-handed, z-up (ENU-like) frame of the log. Poses are ``{"rotation_wxyz", "translation_m"}`` objects: a
  frame's and a sensor sample's ``ego_pose`` is ``T_global_from_ego`` at that moment; a sensor's
  ``T_ego_from_sensor`` is its extrinsic calibration.
- Units: metres, metres per second, integer microseconds (``timestamp_us``). Quaternions ``[w, x, y, z]``, unit
  norm within 1e-3 (the check every reader makes, stridegen.logs._common.validate_pose).
- Images are undistorted (pinhole ``K`` of the stored ``width`` x ``height`` image), JPEG or PNG, kept as bytes.
- Point clouds (``.npy`` float [N, C >= 3]; ``.bin`` float32 x, y, z, intensity; ``.pcd``) are in the sensor frame
  at the sample's own ``timestamp_us`` and ``ego_pose`` (motion-compensated sweeps).
- Boxes are in the global frame: ``center_m``, ``size_m`` {"length", "width", "height"} (length along the
  heading), ``rotation_wxyz``. Named keys make the order mistakes of conversions (w-last quaternions, [w, l, h]
  sizes) fail loudly instead of silently: unknown keys are refused (keys starting with ``x_`` are free for the
  converter's own use).

Every malformed value raises a LogFormatError subclass naming the file, the row (``line N`` of frames.jsonl,
``sensors[i]`` / ``scenes[i]`` of the manifest, ``box i`` of a box file) and the reason. The manifest is checked
when the reader opens; a scene's frames.jsonl, and the existence of every file it names, when the scene is first
asked for (one broken scene does not stop the others); boxes and sensor data when they are read.

Versioning: ``version`` is an integer. A reader of version N reads N and refuses a newer one with
UnsupportedVersionError; any change an older reader could misread raises the version.
"""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from stridegen.core import geometry as geo
from stridegen.core.boxes import Boxes
from stridegen.core.errors import (
    ConfigError,
    GeometryError,
    InvalidPoseError,
    LogFormatError,
    MissingFileError,
    PointCloudSizeError,
    UnknownChannelError,
)
from stridegen.core.vocabulary import DETECTION_CLASSES, detection_class
from stridegen.formats.textfile import read_text
from stridegen.logs._common import ROTATION_GLOBAL, SCENE_CACHE, LruCache, neighbour_velocity
from stridegen.logs.base import Annotations, Frame, LogReader, Scene, SensorCalibration, SensorSample
from stridegen.logs.names import SAFE_NAME_RULE, is_safe_name

FORMAT_NAME = "stridegen-log"
FORMAT_VERSION = 1
MANIFEST = "stridegen-log.json"
SCENES_DIR = "scenes"
FRAMES_FILE = "frames.jsonl"
MODALITIES = ("camera", "lidar", "radar")
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
POINT_SUFFIXES = (".npy", ".bin", ".pcd")
BIN_VALUES_PER_POINT = 4  # .bin: float32 x, y, z, intensity (the KITTI velodyne layout)
# 1e17 us is the year 5138: a larger timestamp_us is a nanosecond (or picosecond) timestamp by mistake.
MAX_TIMESTAMP_US = 10**17
# A sensor sample more than 10 s from its frame is a unit or offset mistake (nuScenes cameras of one sample are
# tens of milliseconds apart, LiDAR sweeps 50 ms).
MAX_SENSOR_OFFSET_US = 10_000_000
QUATERNION_ATOL = 1e-3  # as stridegen.logs._common.validate_pose
VISIBILITY_BINS = 4  # nuScenes visibility bins 1..4 (0-40, 40-60, 60-80, 80-100 %), 0 = unknown
_ANNOTATION_CACHE_SCENES = 2

_SENSOR_KEYS = (("channel", "modality", "T_ego_from_sensor"), ("camera",))
_CAMERA_KEYS = (("K", "width", "height"), ())
_POSE_KEYS = (("rotation_wxyz", "translation_m"), ())
_SCENE_KEYS = (("name",), ("token", "description", "log_name", "sensors"))
_FRAME_KEYS = (("timestamp_us", "ego_pose", "sensors"), ("token", "boxes"))
_SAMPLE_KEYS = (("file",), ("timestamp_us", "ego_pose", "token", "sweeps"))
_SWEEP_KEYS = (("file", "timestamp_us", "ego_pose"), ("token",))
_BOX_KEYS = (
    ("instance_id", "category", "center_m", "size_m", "rotation_wxyz"),
    ("label", "token", "velocity_mps", "num_lidar_pts", "num_radar_pts", "visibility", "attribute"),
)
_SIZE_KEYS = (("length", "width", "height"), ())


class UnsupportedVersionError(LogFormatError):
    """The manifest is not a stridegen-log, or of a format version this reader does not read."""


class InvalidValueError(LogFormatError):
    """A value has the wrong type, shape or range (NaN, a non-positive size or focal length, an unknown key)."""


class TimestampError(LogFormatError):
    """Timestamps out of order, duplicated, or not in microseconds."""


class UnknownModalityError(LogFormatError):
    """A sensor's modality is not camera, lidar or radar."""


class UnsafeNameError(LogFormatError):
    """A scene or channel name is not a safe folder name."""


# ---------------------------------------------------------------------------------------------- value checks


@dataclass(frozen=True)
class _At:
    """Where a value is: the file, the row in it and the key path inside the row (for error messages)."""

    path: Path
    row: str
    key: str = ""

    def __getitem__(self, key: str | int) -> _At:
        if isinstance(key, int):
            return _At(self.path, self.row, f"{self.key}[{key}]")
        return _At(self.path, self.row, f"{self.key}.{key}" if self.key else key)

    def row_of(self, index: int) -> _At:
        """Item ``index`` of the list here, as a row of its own ("sensors[1]")."""
        return _At(self.path, f"{self.where}[{index}]")

    @property
    def where(self) -> str:
        return f"{self.row}, {self.key}" if self.key else self.row

    def fail(self, cls: type[LogFormatError], reason: str) -> LogFormatError:
        return cls(self.path, f"{self.where}: {reason}")


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _object(value: Any, at: _At, keys: tuple[tuple[str, ...], tuple[str, ...]]) -> dict[str, Any]:
    required, optional = keys
    if not isinstance(value, dict):
        raise at.fail(InvalidValueError, f"must be a JSON object, got {_kind(value)}")
    unknown = [k for k in value if k not in required and k not in optional and not str(k).startswith("x_")]
    if unknown:
        raise at.fail(
            InvalidValueError,
            f"unknown key(s) {unknown}; allowed: {list(required) + list(optional)} (x_... keys are free)",
        )
    missing = [k for k in required if k not in value]
    if missing:
        raise at.fail(InvalidValueError, f"missing key(s) {missing}")
    return value


def _string(value: Any, at: _At, empty: bool = False) -> str:
    if not isinstance(value, str):
        raise at.fail(InvalidValueError, f"must be a string, got {_kind(value)}")
    if not value and not empty:
        raise at.fail(InvalidValueError, "must not be empty")
    return value


def _integer(value: Any, at: _At, low: int | None = None, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise at.fail(InvalidValueError, f"must be an integer, got {_kind(value)} {value!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise at.fail(InvalidValueError, f"{value} is outside [{low}, {'inf' if high is None else high}]")
    return value


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _numbers(value: Any, at: _At, n: int, cls: type[LogFormatError] = InvalidValueError) -> np.ndarray:
    """A list of ``n`` finite numbers as float64."""
    if not isinstance(value, list) or len(value) != n or not all(_is_number(x) for x in value):
        raise at.fail(cls, f"must be a list of {n} numbers, got {value!r}")
    out = np.array(value, dtype=np.float64)
    if not np.all(np.isfinite(out)):
        raise at.fail(cls, f"{value!r} has non-finite values")
    return out


def _quaternion(value: Any, at: _At) -> np.ndarray:
    if not isinstance(value, list) or len(value) != 4 or not all(_is_number(x) for x in value):
        raise at.fail(InvalidPoseError, f"must be a list of 4 numbers [w, x, y, z], got {value!r}")
    q = np.array(value, dtype=np.float64)
    try:
        geo.check_unit_quaternion(q, atol=QUATERNION_ATOL)
    except GeometryError as exc:
        raise at.fail(InvalidPoseError, f"{value!r} is not a rotation [w, x, y, z]: {exc}") from None
    return q


def _pose(value: Any, at: _At) -> np.ndarray:
    """``{"rotation_wxyz": [w, x, y, z], "translation_m": [x, y, z]}`` -> 4x4 transform."""
    rec = _object(value, at, _POSE_KEYS)
    q = _quaternion(rec["rotation_wxyz"], at["rotation_wxyz"])
    t = _numbers(rec["translation_m"], at["translation_m"], 3, InvalidPoseError)
    return geo.make_transform(q, t)


def _name(value: Any, at: _At, what: str) -> str:
    text = _string(value, at)
    if not is_safe_name(text):
        raise at.fail(UnsafeNameError, f"{what} {text!r} is not a safe folder name ({SAFE_NAME_RULE})")
    return text


def _timestamp(value: Any, at: _At) -> int:
    ts = _integer(value, at, low=0)
    if ts >= MAX_TIMESTAMP_US:
        raise at.fail(
            TimestampError,
            f"{ts} looks like nanoseconds (>= 1e17 us, the year 5138); timestamp_us is in microseconds",
        )
    return ts


def _relative_file(value: Any, at: _At, base: Path, suffixes: tuple[str, ...], what: str) -> Path:
    """A file named relative to ``base``: no absolute path, no '..', one of ``suffixes``, and existing."""
    text = _string(value, at)
    rel = PurePosixPath(text)
    if rel.is_absolute() or ".." in rel.parts or "\\" in text:
        raise at.fail(InvalidValueError, f"{text!r} must be a relative path with '/' separators and no '..'")
    if text.lower().endswith(".pcd.bin"):
        raise at.fail(
            InvalidValueError,
            f"{text!r}: nuScenes .pcd.bin files hold 5 values per point; .bin here means 4 (x, y, z, intensity): "
            "write the points as .npy",
        )
    if rel.suffix.lower() not in suffixes:
        raise at.fail(InvalidValueError, f"{text!r}: a {what} file must end in one of {list(suffixes)}")
    path = base / rel
    if not path.is_file():
        raise MissingFileError(path, f"file is missing (named by {at.path}, {at.where})")
    return path


def _read_json(path: Path, what: str) -> Any:
    if not path.exists():
        raise MissingFileError(path, f"{what} is missing")
    text = read_text(path, what, InvalidValueError)  # UTF-8, a byte-order mark tolerated (formats.textfile)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidValueError(path, f"line {exc.lineno}: not valid JSON ({exc.msg})") from None


# ---------------------------------------------------------------------------------------------- manifest


def is_native_log(path: str | Path) -> bool:
    """True when ``path`` is a stridegen-log root (it holds ``stridegen-log.json``) or that manifest file."""
    p = Path(path)
    return (p / MANIFEST).is_file() or (p.name == MANIFEST and p.is_file())


def _check_format(manifest: Any, path: Path) -> int:
    at = _At(path, "manifest")
    if not isinstance(manifest, dict):
        raise at.fail(UnsupportedVersionError, f"must be a JSON object, got {_kind(manifest)}")
    if manifest.get("format") != FORMAT_NAME:
        raise at["format"].fail(UnsupportedVersionError, f"is {manifest.get('format')!r}, expected {FORMAT_NAME!r}")
    version = _integer(manifest.get("version"), at["version"], low=1)
    if version > FORMAT_VERSION:
        raise at["version"].fail(
            UnsupportedVersionError,
            f"stridegen-log version {version} is newer than this reader, which reads version {FORMAT_VERSION}: "
            "upgrade stridegen",
        )
    return version


def _sensor(value: Any, at: _At) -> SensorCalibration:
    rec = _object(value, at, _SENSOR_KEYS)
    channel = _name(rec["channel"], at["channel"], "channel")
    modality = rec["modality"]
    if modality not in MODALITIES:
        raise at["modality"].fail(UnknownModalityError, f"{modality!r} is not one of {list(MODALITIES)}")
    transform = _pose(rec["T_ego_from_sensor"], at["T_ego_from_sensor"])
    if modality != "camera":
        if "camera" in rec:
            raise at["camera"].fail(InvalidValueError, f"a {modality} sensor has no camera block")
        return SensorCalibration(channel, modality, transform)
    if "camera" not in rec:
        raise at.fail(InvalidValueError, "a camera needs a camera block {K, width, height}")
    cam_at = at["camera"]
    cam = _object(rec["camera"], cam_at, _CAMERA_KEYS)
    return SensorCalibration(
        channel,
        modality,
        transform,
        _intrinsic(cam["K"], cam_at["K"]),
        _integer(cam["width"], cam_at["width"], low=1),
        _integer(cam["height"], cam_at["height"], low=1),
    )


def _intrinsic(value: Any, at: _At) -> np.ndarray:
    """A pinhole matrix [[fx, s, cx], [0, fy, cy], [0, 0, 1]] with finite values and fx, fy > 0."""
    if not isinstance(value, list) or len(value) != 3:
        raise at.fail(InvalidValueError, f"must be 3 rows of 3 numbers, got {value!r}")
    k = np.stack([_numbers(row, at[i], 3) for i, row in enumerate(value)])
    if not (k[0, 0] > 0 and k[1, 1] > 0):
        raise at.fail(InvalidValueError, f"focal lengths fx={k[0, 0]}, fy={k[1, 1]} must be positive")
    if k[1, 0] != 0 or not np.array_equal(k[2], [0.0, 0.0, 1.0]):
        raise at.fail(InvalidValueError, f"{value!r} is not a pinhole matrix [[fx, s, cx], [0, fy, cy], [0, 0, 1]]")
    return k


def _sensors(value: Any, at: _At) -> dict[str, SensorCalibration]:
    if not isinstance(value, list):
        raise at.fail(InvalidValueError, f"must be a list of sensors, got {_kind(value)}")
    out: dict[str, SensorCalibration] = {}
    for i, item in enumerate(value):
        calib = _sensor(item, at.row_of(i))
        if calib.channel in out:
            raise at.row_of(i)["channel"].fail(InvalidValueError, f"channel {calib.channel!r} is listed twice")
        out[calib.channel] = calib
    return out


# ---------------------------------------------------------------------------------------------- boxes


@dataclass
class _FrameBoxes:
    """One frame's parsed boxes; ``velocity`` NaN and ``has_velocity`` False where ``velocity_mps`` was left out."""

    annotations: Annotations
    has_velocity: np.ndarray


def _box_velocity(value: Any, at: _At) -> np.ndarray:
    """null -> unknown (NaN); [vx, vy] (vz = 0) or [vx, vy, vz] with numbers or null (unknown) entries."""
    if value is None:
        return np.full(3, np.nan)
    if not isinstance(value, list) or len(value) not in (2, 3) or not all(x is None or _is_number(x) for x in value):
        raise at.fail(InvalidValueError, f"must be null or [vx, vy] / [vx, vy, vz] (numbers or null), got {value!r}")
    if not all(x is None or np.isfinite(x) for x in value):
        raise at.fail(InvalidValueError, f"{value!r} has non-finite values (write null where unknown)")
    return np.array([np.nan if x is None else x for x in value] + [0.0] * (3 - len(value)), dtype=np.float64)


def _box_label(rec: dict[str, Any], category: str, at: _At) -> str:
    if "label" not in rec:
        return detection_class(category) or (category if category in DETECTION_CLASSES else "")
    label = _string(rec["label"], at["label"], empty=True)
    if label and label not in DETECTION_CLASSES:
        raise at["label"].fail(InvalidValueError, f"{label!r} is not '' or a detection class {list(DETECTION_CLASSES)}")
    return label


@dataclass
class _BoxColumns:
    """The values of one frame's boxes, column by column, before they become Annotations."""

    instance: list[str] = field(default_factory=list)
    category: list[str] = field(default_factory=list)
    label: list[str] = field(default_factory=list)
    token: list[str] = field(default_factory=list)
    center: list[Any] = field(default_factory=list)
    size: list[Any] = field(default_factory=list)
    rotation: list[Any] = field(default_factory=list)
    velocity: list[Any] = field(default_factory=list)
    has_velocity: list[bool] = field(default_factory=list)
    lidar: list[int] = field(default_factory=list)
    radar: list[int] = field(default_factory=list)
    visibility: list[int] = field(default_factory=list)
    attribute: list[str] = field(default_factory=list)


def _parse_boxes(items: Any, at: _At, frame_token: str) -> _FrameBoxes:
    """The boxes of one frame: a JSON list of box objects (``at`` names the list).

    A fast pass checks every box with plain type tests and the numbers vectorised; only when it finds something
    wrong does the checked pass run, box by box, to raise the error with its row, key and reason.
    """
    if not isinstance(items, list):
        raise at.fail(InvalidValueError, f"boxes must be a JSON list of box objects, got {_kind(items)}")
    cols = _box_columns_fast(items, frame_token)
    if cols is None:
        cols = _box_columns_checked(items, at, frame_token)
    rotation = np.array(cols.rotation, dtype=np.float64).reshape(-1, 4)
    boxes = Boxes(
        center=np.array(cols.center, dtype=np.float64).reshape(-1, 3),
        size_lwh=np.array(cols.size, dtype=np.float64).reshape(-1, 3),
        yaw=geo.quat_to_yaw(rotation),
        velocity=np.array(cols.velocity, dtype=np.float64).reshape(-1, 3),
        label=_str_array(cols.label),
        track_id=_str_array(cols.instance),
        frame="global",
        extras={ROTATION_GLOBAL: rotation},
    )
    annotations = Annotations(
        boxes=boxes,
        category=_str_array(cols.category),
        token=_str_array(cols.token),
        num_lidar_pts=np.array(cols.lidar, dtype=np.int64),
        num_radar_pts=np.array(cols.radar, dtype=np.int64),
        visibility=np.array(cols.visibility, dtype=np.int64),
        attribute=_str_array(cols.attribute),
    )
    return _FrameBoxes(annotations, np.array(cols.has_velocity, dtype=bool))


def _box_columns_checked(items: list[Any], at: _At, frame_token: str) -> _BoxColumns:
    """Box by box, raising the first error with its row (``box i`` of a box file, ``boxes[i]`` inline)."""
    cols = _BoxColumns()
    for i, item in enumerate(items):
        row = at[i] if at.key else _At(at.path, f"box {i}")
        rec = _object(item, row, _BOX_KEYS)
        instance = _string(rec["instance_id"], row["instance_id"])
        if instance in cols.instance:
            raise row["instance_id"].fail(InvalidValueError, f"instance {instance!r} has two boxes in this frame")
        category = _string(rec["category"], row["category"])
        cols.instance.append(instance)
        cols.category.append(category)
        cols.label.append(_box_label(rec, category, row))
        cols.token.append(_string(rec.get("token", f"{frame_token}_{instance}"), row["token"]))
        cols.center.append(_numbers(rec["center_m"], row["center_m"], 3))
        cols.size.append(_box_size(rec["size_m"], row["size_m"]))
        cols.rotation.append(_quaternion(rec["rotation_wxyz"], row["rotation_wxyz"]))
        cols.has_velocity.append("velocity_mps" in rec)
        cols.velocity.append(_box_velocity(rec.get("velocity_mps"), row["velocity_mps"]))
        cols.lidar.append(_integer(rec.get("num_lidar_pts", 0), row["num_lidar_pts"], low=0))
        cols.radar.append(_integer(rec.get("num_radar_pts", 0), row["num_radar_pts"], low=0))
        cols.visibility.append(_integer(rec.get("visibility", 0), row["visibility"], low=0, high=VISIBILITY_BINS))
        cols.attribute.append(_string(rec.get("attribute", ""), row["attribute"], empty=True))
    return cols


_BOX_REQUIRED = frozenset(_BOX_KEYS[0])
_BOX_ALLOWED = frozenset(_BOX_KEYS[0] + _BOX_KEYS[1])
_SIZE_ORDER = ("length", "width", "height")
_NAN3 = (math.nan, math.nan, math.nan)


def _plain_numbers(value: Any, n: int) -> bool:
    return type(value) is list and len(value) == n and all(type(x) is float or type(x) is int for x in value)


def _count(value: Any, high: int | None = None) -> bool:
    return type(value) is int and value >= 0 and (high is None or value <= high)


def _fast_velocity(value: Any) -> tuple[float, ...] | None:
    if value is None:
        return _NAN3
    if type(value) is not list or len(value) not in (2, 3):
        return None
    out = []
    for x in value:
        if x is None:
            out.append(math.nan)
        elif (type(x) is float or type(x) is int) and math.isfinite(x):
            out.append(float(x))
        else:
            return None
    return (*out, 0.0) if len(out) == 2 else tuple(out)


def _box_columns_fast(items: list[Any], frame_token: str) -> _BoxColumns | None:
    """The columns of valid boxes, or None at the first doubt (the checked pass then names the error)."""
    cols = _BoxColumns()
    seen: set[str] = set()
    for item in items:
        if type(item) is not dict or not _BOX_REQUIRED <= item.keys():
            return None
        if not _BOX_ALLOWED.issuperset(item) and any(k not in _BOX_ALLOWED and not k.startswith("x_") for k in item):
            return None
        instance, category = item["instance_id"], item["category"]
        if type(instance) is not str or not instance or instance in seen or type(category) is not str or not category:
            return None
        seen.add(instance)
        label = item.get("label")
        if label is None:
            if "label" in item:
                return None
            label = detection_class(category) or (category if category in DETECTION_CLASSES else "")
        elif type(label) is not str or (label and label not in DETECTION_CLASSES):
            return None
        token = item.get("token", f"{frame_token}_{instance}")
        size = item["size_m"]
        if type(token) is not str or not token or type(size) is not dict or size.keys() != set(_SIZE_ORDER):
            return None
        lwh = [size[k] for k in _SIZE_ORDER]
        center, rotation = item["center_m"], item["rotation_wxyz"]
        if not (_plain_numbers(center, 3) and _plain_numbers(lwh, 3) and _plain_numbers(rotation, 4)):
            return None
        velocity = _fast_velocity(item.get("velocity_mps"))
        lidar, radar = item.get("num_lidar_pts", 0), item.get("num_radar_pts", 0)
        visibility, attribute = item.get("visibility", 0), item.get("attribute", "")
        if velocity is None or not (_count(lidar) and _count(radar) and _count(visibility, VISIBILITY_BINS)):
            return None
        if type(attribute) is not str:
            return None
        cols.instance.append(instance)
        cols.category.append(category)
        cols.label.append(label)
        cols.token.append(token)
        cols.center.append(center)
        cols.size.append(lwh)
        cols.rotation.append(rotation)
        cols.velocity.append(velocity)
        cols.has_velocity.append("velocity_mps" in item)
        cols.lidar.append(lidar)
        cols.radar.append(radar)
        cols.visibility.append(visibility)
        cols.attribute.append(attribute)
    center = np.array(cols.center, dtype=np.float64)
    size = np.array(cols.size, dtype=np.float64)
    rotation = np.array(cols.rotation, dtype=np.float64)
    finite = np.isfinite(center).all() and np.isfinite(size).all() and np.isfinite(rotation).all()
    if not finite or (size <= 0).any() or (np.abs(np.linalg.norm(rotation, axis=-1) - 1.0) > QUATERNION_ATOL).any():
        return None
    return cols


def _box_size(value: Any, at: _At) -> list[float]:
    """``{"length", "width", "height"}`` -> [l, w, h], each finite and positive."""
    rec = _object(value, at, _SIZE_KEYS)
    out = []
    for key in ("length", "width", "height"):
        x = rec[key]
        if not _is_number(x) or not np.isfinite(x) or x <= 0:
            raise at[key].fail(InvalidValueError, f"must be a positive finite number of metres, got {x!r}")
        out.append(float(x))
    return out


def _derive_velocities(frames: list[_FrameBoxes], time_s: np.ndarray) -> None:
    """Fill the velocity of boxes that left ``velocity_mps`` out from their instance's neighbouring boxes, with
    the nuscenes-devkit ``box_velocity`` rule (stridegen.logs._common.neighbour_velocity, docs/log-formats.md)."""
    if all(f.has_velocity.all() for f in frames):
        return
    frame_of = np.concatenate([np.full(len(f.annotations), i, dtype=np.int64) for i, f in enumerate(frames)])
    track = np.concatenate([f.annotations.boxes.track_id.astype(str) for f in frames])
    center = np.concatenate([f.annotations.boxes.center for f in frames]).reshape(-1, 3)
    order = np.lexsort((frame_of, track))  # by instance, then time
    same = np.zeros(order.size, dtype=bool)
    same[1:] = track[order[1:]] == track[order[:-1]]
    prev_idx = np.full(order.size, -1, dtype=np.int64)
    next_idx = np.full(order.size, -1, dtype=np.int64)
    prev_idx[order[1:][same[1:]]] = order[:-1][same[1:]]
    next_idx[order[:-1][same[1:]]] = order[1:][same[1:]]
    derived = neighbour_velocity(center, time_s[frame_of], prev_idx, next_idx)
    start = 0
    for f in frames:
        n = len(f.annotations)
        missing = ~f.has_velocity
        f.annotations.boxes.velocity[missing] = derived[start : start + n][missing]
        start += n


def _str_array(values: list[str]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


# ---------------------------------------------------------------------------------------------- reader


@dataclass
class _Scan:
    """What reading one frames.jsonl has seen so far: the last timestamp of frames ("") and of every channel, with
    its place, and the frame tokens."""

    last: dict[str, tuple[int, _At]] = field(default_factory=dict)
    tokens: dict[str, _At] = field(default_factory=dict)

    def check_order(self, channel: str, ts: int, at: _At, strict: bool) -> None:
        """Frames strictly increasing in time; each channel's own samples never going back in time."""
        if channel in self.last:
            prev, prev_at = self.last[channel]
            what = "frame" if not channel else f"{channel} sample"
            if ts == prev and strict:
                raise at.fail(TimestampError, f"{ts} duplicates the {what} timestamp of {prev_at.row}")
            if ts < prev:
                raise at.fail(
                    TimestampError,
                    f"{ts} is earlier than the {what} timestamp {prev} of {prev_at.row}: not in time order",
                )
        self.last[channel] = (ts, at)


@dataclass(frozen=True)
class _SceneEntry:
    """A scene of the manifest; its frames are read when the scene is first asked for."""

    name: str
    token: str
    description: str
    log_name: str
    sensors: dict[str, SensorCalibration]


@dataclass(frozen=True)
class _BoxSource:
    """Where a frame's boxes are: a box file, or a list inline in frames.jsonl (``at`` names it)."""

    at: _At
    inline: list[Any] | None = None


class NativeReader(LogReader):
    """A ``stridegen-log`` folder -> Scene / Frame objects (module docstring, docs/log-format.md)."""

    format_name = FORMAT_NAME

    def __init__(self, root: str | Path) -> None:
        root = Path(root)
        if root.name == MANIFEST and root.is_file():
            root = root.parent
        super().__init__(root)
        self.manifest_path = self.root / MANIFEST
        manifest = _read_json(self.manifest_path, "stridegen-log manifest")
        self.version = _check_format(manifest, self.manifest_path)
        rec = _object(
            manifest, _At(self.manifest_path, "manifest"), (("format", "version", "scenes"), ("sensors", "source"))
        )
        self.source: dict[str, Any] = rec.get("source", {})
        if not isinstance(self.source, dict):
            raise _At(self.manifest_path, "manifest", "source").fail(
                InvalidValueError, f"must be a JSON object, got {_kind(self.source)}"
            )
        default_sensors = _sensors(rec["sensors"], _At(self.manifest_path, "sensors")) if "sensors" in rec else None
        self._box_sources: dict[str, list[_BoxSource | None]] = {}
        self._annotations: OrderedDict[str, list[Annotations]] = OrderedDict()
        self._frame_tokens: dict[str, tuple[str, str]] = {}  # frame token -> (scene token, where)
        self._scene_cache: LruCache[str, Scene] = LruCache(SCENE_CACHE)
        self._entries = self._read_scenes(rec["scenes"], default_sensors)

    # ------------------------------------------------------------------------------------------ scenes
    def _read_scenes(self, value: Any, default_sensors: dict[str, SensorCalibration] | None) -> list[_SceneEntry]:
        at = _At(self.manifest_path, "scenes")
        if not isinstance(value, list) or not value:
            raise at.fail(InvalidValueError, f"must be a non-empty list of scenes, got {_kind(value)} {value!r:.80}")
        entries: list[_SceneEntry] = []
        names: set[str] = set()
        tokens: set[str] = set()
        for i, item in enumerate(value):
            row = _At(self.manifest_path, f"scenes[{i}]")
            rec = _object(item, row, _SCENE_KEYS)
            name = _name(rec["name"], row["name"], "scene name")
            token = _string(rec.get("token", name), row["token"])
            if name in names or token in tokens:
                raise row.fail(InvalidValueError, f"scene name {name!r} or token {token!r} is used twice")
            names.add(name)
            tokens.add(token)
            if "sensors" in rec:
                sensors = _sensors(rec["sensors"], row["sensors"])
            elif default_sensors is not None:
                sensors = default_sensors
            else:
                raise row.fail(InvalidValueError, "no sensors: give the manifest (or this scene) a sensors list")
            description = _string(rec.get("description", ""), row["description"], empty=True)
            log_name = _string(rec.get("log_name", ""), row["log_name"], empty=True)
            entries.append(_SceneEntry(name, token, description, log_name, sensors))
        return entries

    def scenes(self) -> list[Scene]:
        """Every scene, its frames read (and cached) one scene at a time: the first broken scene raises."""
        return [self._scene(e) for e in self._entries]

    def scene_ids(self) -> list[tuple[str, str]]:
        """(name, token) of every scene from the manifest, without reading any frames."""
        return [(e.name, e.token) for e in self._entries]

    def scene(self, name_or_token: str) -> Scene:
        """One scene by name or token; only its own frames.jsonl is read."""
        for e in self._entries:
            if name_or_token in (e.name, e.token):
                return self._scene(e)
        raise LogFormatError(self.manifest_path, f"no scene named {name_or_token!r}")

    def _scene(self, entry: _SceneEntry) -> Scene:
        return self._scene_cache.get(entry.token, lambda: self._make_scene(entry))

    def _make_scene(self, entry: _SceneEntry) -> Scene:
        scene = Scene(self, entry.token, entry.name, [], entry.description, entry.log_name)
        scene.frames = self._read_frames(scene, entry.sensors)
        return scene

    def unknown_modalities(self) -> dict[str, list[str]]:
        """{}: the manifest's sensor lists are read when the log is opened, and a modality other than camera,
        lidar or radar makes opening fail (``UnknownModalityError``)."""
        return {}

    def scene_dir(self, name: str) -> Path:
        return self.root / SCENES_DIR / name

    def _read_frames(self, scene: Scene, sensors: dict[str, SensorCalibration]) -> list[Frame]:
        scene_dir = self.scene_dir(scene.name)
        path = scene_dir / FRAMES_FILE
        if not path.exists():
            raise MissingFileError(path, f"frames of scene {scene.name!r} are missing")
        lines = read_text(path, f"frames of scene {scene.name!r}", InvalidValueError).split("\n")
        frames: list[Frame] = []
        sources: list[_BoxSource | None] = []
        scan = _Scan()
        for lineno, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            at = _At(path, f"line {lineno}")
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise at.fail(InvalidValueError, f"not valid JSON ({exc.msg} at column {exc.colno})") from None
            frame, source = self._frame(value, at, scene, len(frames), sensors, scan)
            frames.append(frame)
            sources.append(source)
        if not frames:
            raise InvalidValueError(path, f"scene {scene.name!r} has no frames")
        for token, where in scan.tokens.items():  # frame tokens are unique in the whole log
            other = self._frame_tokens.get(token)
            if other is not None and other[0] != scene.token:
                raise where.fail(InvalidValueError, f"frame token {token!r} is also used in {other[1]}")
        self._frame_tokens.update({t: (scene.token, f"{w.path}, {w.row}") for t, w in scan.tokens.items()})
        self._box_sources[scene.token] = sources
        return frames

    def _frame(
        self,
        value: Any,
        at: _At,
        scene: Scene,
        index: int,
        sensors: dict[str, SensorCalibration],
        scan: _Scan,
    ) -> tuple[Frame, _BoxSource | None]:
        rec = _object(value, at, _FRAME_KEYS)
        timestamp = _timestamp(rec["timestamp_us"], at["timestamp_us"])
        scan.check_order("", timestamp, at["timestamp_us"], strict=True)
        pose = _pose(rec["ego_pose"], at["ego_pose"])
        token = _string(rec.get("token", f"{scene.token}_{timestamp}"), at["token"])
        if token in scan.tokens:
            raise at["token"].fail(InvalidValueError, f"frame token {token!r} is also used on {scan.tokens[token].row}")
        scan.tokens[token] = at["token"]
        entries = rec["sensors"]
        if not isinstance(entries, dict):
            raise at["sensors"].fail(InvalidValueError, f"must be an object channel -> sample, got {_kind(entries)}")
        frame = Frame(self, token, scene.token, index, timestamp, pose, {}, {})
        scene_dir = self.scene_dir(scene.name)
        for channel, entry in entries.items():
            sat = at["sensors"][channel]
            if channel not in sensors:
                raise sat.fail(UnknownChannelError, f"channel {channel!r} is not among the sensors {list(sensors)}")
            calib = sensors[channel]
            sample, sweeps = self._sample(entry, sat, frame, calib, scene_dir)
            scan.check_order(channel, sample.timestamp_us, sat["timestamp_us"], strict=False)
            frame.sensors[channel] = sample
            frame.sweeps[channel] = sweeps
        source = None
        if "boxes" in rec:
            source = self._box_source(rec["boxes"], at["boxes"], scene_dir)
        return frame, source

    def _sample(
        self, value: Any, at: _At, frame: Frame, calib: SensorCalibration, scene_dir: Path
    ) -> tuple[SensorSample, list[SensorSample]]:
        rec = _object(value, at, _SAMPLE_KEYS)
        suffixes = IMAGE_SUFFIXES if calib.is_camera else POINT_SUFFIXES
        path = _relative_file(rec["file"], at["file"], scene_dir, suffixes, calib.modality)
        timestamp = _timestamp(rec["timestamp_us"], at["timestamp_us"]) if "timestamp_us" in rec else frame.timestamp_us
        if abs(timestamp - frame.timestamp_us) > MAX_SENSOR_OFFSET_US:
            raise at["timestamp_us"].fail(
                TimestampError,
                f"{timestamp} is {abs(timestamp - frame.timestamp_us) / 1e6:.1f} s from the frame's "
                f"{frame.timestamp_us} (more than {MAX_SENSOR_OFFSET_US / 1e6:.0f} s: a unit or offset mistake?)",
            )
        pose = _pose(rec["ego_pose"], at["ego_pose"]) if "ego_pose" in rec else frame.T_global_from_ego
        token = _string(rec.get("token", f"{frame.token}_{calib.channel}"), at["token"])
        sample = SensorSample(token, calib.channel, timestamp, path, pose, calib, True)
        sweeps = self._sweeps(rec.get("sweeps", []), at["sweeps"], sample, scene_dir, suffixes)
        return sample, sweeps

    def _sweeps(
        self, value: Any, at: _At, key: SensorSample, scene_dir: Path, suffixes: tuple[str, ...]
    ) -> list[SensorSample]:
        """Earlier non-key samples of a channel, newest first, each with its own time and pose."""
        if not isinstance(value, list):
            raise at.fail(InvalidValueError, f"must be a list of sweeps (newest first), got {_kind(value)}")
        out: list[SensorSample] = []
        newer = key.timestamp_us
        for i, item in enumerate(value):
            sat = at[i]
            rec = _object(item, sat, _SWEEP_KEYS)
            timestamp = _timestamp(rec["timestamp_us"], sat["timestamp_us"])
            if timestamp >= newer:
                raise sat["timestamp_us"].fail(
                    TimestampError, f"{timestamp} is not before {newer}: sweeps are earlier samples, newest first"
                )
            if key.timestamp_us - timestamp > MAX_SENSOR_OFFSET_US:
                raise sat["timestamp_us"].fail(TimestampError, f"{timestamp} is more than 10 s before its key sample")
            newer = timestamp
            path = _relative_file(rec["file"], sat["file"], scene_dir, suffixes, key.calibration.modality)
            token = _string(rec.get("token", f"{key.token}_sweep_{timestamp}"), sat["token"])
            pose = _pose(rec["ego_pose"], sat["ego_pose"])
            out.append(SensorSample(token, key.channel, timestamp, path, pose, key.calibration, False))
        return out

    @staticmethod
    def _box_source(value: Any, at: _At, scene_dir: Path) -> _BoxSource:
        if isinstance(value, list):
            return _BoxSource(at, value)
        path = _relative_file(value, at, scene_dir, (".json",), "boxes")
        return _BoxSource(_At(path, "boxes"))

    # ------------------------------------------------------------------------------------------ data
    def load_points(self, sample: SensorSample) -> np.ndarray:
        """Points [N, C] float32 in the sensor frame (x, y, z, then the file's further columns)."""
        if sample.calibration.modality not in ("lidar", "radar"):
            raise LogFormatError(sample.path, f"{sample.channel} is a {sample.calibration.modality}, not a point cloud")
        suffix = sample.path.suffix.lower()
        if suffix == ".npy":
            points = _read_npy(sample.path)
        elif suffix == ".bin":
            points = _read_bin(sample.path)
        else:
            from stridegen.logs.nuscenes import read_pcd

            points = read_pcd(sample.path)
        if points.ndim != 2 or points.shape[1] < 3:
            raise InvalidValueError(sample.path, f"points must be an [N, C >= 3] array, got shape {points.shape}")
        bad = np.flatnonzero(~np.all(np.isfinite(points[:, :3]), axis=1))
        if bad.size:
            raise InvalidValueError(
                sample.path, f"point {int(bad[0])}: x, y, z {points[bad[0], :3].tolist()} not finite"
            )
        return points

    def load_annotations(self, frame: Frame) -> Annotations:
        per_frame = self._scene_annotations(frame.scene_token)
        if not 0 <= frame.index < len(per_frame):
            raise LogFormatError(self.root, f"frame {frame.token} (index {frame.index}) is not in its scene")
        ann = per_frame[frame.index]
        return ann.select(np.ones(len(ann), dtype=bool))  # a copy: callers may change arrays in place

    def _scene_annotations(self, scene_token: str) -> list[Annotations]:
        """Every frame's boxes of a scene, parsed once (the left-out velocities need the instance's neighbours)."""
        if scene_token in self._annotations:
            self._annotations.move_to_end(scene_token)
            return self._annotations[scene_token]
        if scene_token not in self._box_sources:
            raise LogFormatError(self.root, f"no scene with token {scene_token!r}")
        scene = self.scene(scene_token)
        parsed = [
            self._frame_boxes(src, frame)
            for src, frame in zip(self._box_sources[scene_token], scene.frames, strict=True)
        ]
        _derive_velocities(parsed, scene.timestamps_s)
        self._annotations[scene_token] = [p.annotations for p in parsed]
        while len(self._annotations) > _ANNOTATION_CACHE_SCENES:
            self._annotations.popitem(last=False)
        return self._annotations[scene_token]

    @staticmethod
    def _frame_boxes(source: _BoxSource | None, frame: Frame) -> _FrameBoxes:
        if source is None:
            return _parse_boxes([], _At(Path(), "boxes"), frame.token)
        if source.inline is not None:
            return _parse_boxes(source.inline, source.at, frame.token)
        return _parse_boxes(_read_json(source.at.path, "box file"), source.at, frame.token)


def _read_npy(path: Path) -> np.ndarray:
    try:
        points = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise LogFormatError(path, f"not a readable .npy array ({type(exc).__name__}: {exc})") from None
    if not np.issubdtype(points.dtype, np.floating):
        raise InvalidValueError(path, f"points must be floats (float32), got {points.dtype}")
    return np.ascontiguousarray(points, dtype=np.float32)


def _read_bin(path: Path) -> np.ndarray:
    size = path.stat().st_size if path.is_file() else -1
    if size < 0:
        raise MissingFileError(path, "point-cloud file is missing")
    if size % (4 * BIN_VALUES_PER_POINT):
        raise PointCloudSizeError(
            path, f"size {size} bytes is not a multiple of {4 * BIN_VALUES_PER_POINT} (float32 x, y, z, intensity)"
        )
    return np.fromfile(path, dtype="<f4").reshape(-1, BIN_VALUES_PER_POINT)


def open_native(root: Path, version: str | None = None) -> NativeReader:
    """The ``stridegen-log`` log reader. ``version``, when given, is the format version the log must have ("1")."""
    reader = NativeReader(root)
    if version is not None and version.strip().lstrip("v") != str(reader.version):
        raise ConfigError(
            f"version={version!r} asked for, but {reader.manifest_path} is {FORMAT_NAME} version {reader.version}"
        )
    return reader
