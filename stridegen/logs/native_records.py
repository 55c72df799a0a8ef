"""The records of a stridegen-log (format: stridegen/logs/native.py, docs/log-format.md): the manifest with its
sensors and scenes, and the frames of frames.jsonl with their sensor samples and sweeps, read into the readers'
types (SensorCalibration, Frame, SensorSample). Poses are 4x4 ``T_global_from_ego`` / ``T_ego_from_sensor``
transforms; timestamps integer microseconds. The boxes of a frame: stridegen.logs.native_boxes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.core.errors import UnknownChannelError
from stridegen.logs.base import Frame, Scene, SensorCalibration, SensorSample
from stridegen.logs.native_boxes import BoxSource, read_box_source
from stridegen.logs.native_json import (
    At,
    InvalidValueError,
    Keys,
    TimestampError,
    UnknownModalityError,
    UnsupportedVersionError,
    kind_of,
    read_integer,
    read_json_file,
    read_name,
    read_numbers,
    read_object,
    read_pose,
    read_relative_file,
    read_string,
    read_timestamp,
)

FORMAT_NAME = "stridegen-log"
FORMAT_VERSION = 1
MANIFEST = "stridegen-log.json"
SCENES_DIR = "scenes"
FRAMES_FILE = "frames.jsonl"
MODALITIES = ("camera", "lidar", "radar")
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
POINT_SUFFIXES = (".npy", ".bin", ".pcd")
# A sensor sample more than 10 s from its frame is a unit or offset mistake (nuScenes cameras of one sample are
# tens of milliseconds apart, LiDAR sweeps 50 ms).
MAX_SENSOR_OFFSET_US = 10_000_000

_MANIFEST_KEYS = Keys(("format", "version", "scenes"), ("sensors", "source"))
_SENSOR_KEYS = Keys(("channel", "modality", "T_ego_from_sensor"), ("camera",))
_CAMERA_KEYS = Keys(("K", "width", "height"))
_SCENE_KEYS = Keys(("name",), ("token", "description", "log_name", "sensors"))
_FRAME_KEYS = Keys(("timestamp_us", "ego_pose", "sensors"), ("token", "boxes"))
_SAMPLE_KEYS = Keys(("file",), ("timestamp_us", "ego_pose", "token", "sweeps"))
_SWEEP_KEYS = Keys(("file", "timestamp_us", "ego_pose"), ("token",))


# ---------------------------------------------------------------------------------------------- manifest


@dataclass(frozen=True)
class SceneEntry:
    """A scene of the manifest; its frames are read when the scene is first asked for."""

    name: str
    token: str
    description: str
    log_name: str
    sensors: dict[str, SensorCalibration]


@dataclass(frozen=True)
class Manifest:
    """``stridegen-log.json``: the format version, the informational ``source`` object and the scenes."""

    version: int
    source: dict[str, Any]
    scenes: list[SceneEntry]


def read_manifest(path: Path) -> Manifest:
    """The manifest at ``path``, checked: the format and version first, then every sensor and scene entry."""
    manifest = read_json_file(path, "stridegen-log manifest")
    version = _read_format_version(manifest, path)
    rec = read_object(manifest, At(path, "manifest"), _MANIFEST_KEYS)
    source = rec.get("source", {})
    if not isinstance(source, dict):
        raise At(path, "manifest", "source").fail(InvalidValueError, f"must be a JSON object, got {kind_of(source)}")
    default_sensors = read_sensors(rec["sensors"], At(path, "sensors")) if "sensors" in rec else None
    return Manifest(version, source, _read_scene_entries(rec["scenes"], At(path, "scenes"), default_sensors))


def _read_format_version(manifest: Any, path: Path) -> int:
    at = At(path, "manifest")
    if not isinstance(manifest, dict):
        raise at.fail(UnsupportedVersionError, f"must be a JSON object, got {kind_of(manifest)}")
    if manifest.get("format") != FORMAT_NAME:
        raise at["format"].fail(UnsupportedVersionError, f"is {manifest.get('format')!r}, expected {FORMAT_NAME!r}")
    version = read_integer(manifest.get("version"), at["version"], low=1)
    if version > FORMAT_VERSION:
        raise at["version"].fail(
            UnsupportedVersionError,
            f"stridegen-log version {version} is newer than this reader, which reads version {FORMAT_VERSION}: "
            "upgrade stridegen",
        )
    return version


def _read_scene_entries(value: Any, at: At, default_sensors: dict[str, SensorCalibration] | None) -> list[SceneEntry]:
    """The manifest's ``scenes``: unique names and tokens, each scene with its own sensors or the manifest's."""
    if not isinstance(value, list) or not value:
        raise at.fail(InvalidValueError, f"must be a non-empty list of scenes, got {kind_of(value)} {value!r:.80}")
    entries: list[SceneEntry] = []
    names: set[str] = set()
    tokens: set[str] = set()
    for i, item in enumerate(value):
        row = at.row_of(i)
        rec = read_object(item, row, _SCENE_KEYS)
        name = read_name(rec["name"], row["name"], "scene name")
        token = read_string(rec.get("token", name), row["token"])
        if name in names or token in tokens:
            raise row.fail(InvalidValueError, f"scene name {name!r} or token {token!r} is used twice")
        names.add(name)
        tokens.add(token)
        if "sensors" in rec:
            sensors = read_sensors(rec["sensors"], row["sensors"])
        elif default_sensors is not None:
            sensors = default_sensors
        else:
            raise row.fail(InvalidValueError, "no sensors: give the manifest (or this scene) a sensors list")
        description = read_string(rec.get("description", ""), row["description"], empty=True)
        log_name = read_string(rec.get("log_name", ""), row["log_name"], empty=True)
        entries.append(SceneEntry(name, token, description, log_name, sensors))
    return entries


def read_sensors(value: Any, at: At) -> dict[str, SensorCalibration]:
    """A ``sensors`` list: channel -> calibration, each channel once."""
    if not isinstance(value, list):
        raise at.fail(InvalidValueError, f"must be a list of sensors, got {kind_of(value)}")
    out: dict[str, SensorCalibration] = {}
    for i, item in enumerate(value):
        calib = _read_sensor(item, at.row_of(i))
        if calib.channel in out:
            raise at.row_of(i)["channel"].fail(InvalidValueError, f"channel {calib.channel!r} is listed twice")
        out[calib.channel] = calib
    return out


def _read_sensor(value: Any, at: At) -> SensorCalibration:
    """A sensor entry: channel, modality, ``T_ego_from_sensor``, and for a camera its pinhole block."""
    rec = read_object(value, at, _SENSOR_KEYS)
    channel = read_name(rec["channel"], at["channel"], "channel")
    modality = rec["modality"]
    if modality not in MODALITIES:
        raise at["modality"].fail(UnknownModalityError, f"{modality!r} is not one of {list(MODALITIES)}")
    transform = read_pose(rec["T_ego_from_sensor"], at["T_ego_from_sensor"])
    if modality != "camera":
        if "camera" in rec:
            raise at["camera"].fail(InvalidValueError, f"a {modality} sensor has no camera block")
        return SensorCalibration(channel, modality, transform)
    if "camera" not in rec:
        raise at.fail(InvalidValueError, "a camera needs a camera block {K, width, height}")
    cam_at = at["camera"]
    cam = read_object(rec["camera"], cam_at, _CAMERA_KEYS)
    return SensorCalibration(
        channel,
        modality,
        transform,
        _read_intrinsic(cam["K"], cam_at["K"]),
        read_integer(cam["width"], cam_at["width"], low=1),
        read_integer(cam["height"], cam_at["height"], low=1),
    )


def _read_intrinsic(value: Any, at: At) -> np.ndarray:
    """A pinhole matrix [[fx, s, cx], [0, fy, cy], [0, 0, 1]] with finite values and fx, fy > 0."""
    if not isinstance(value, list) or len(value) != 3:
        raise at.fail(InvalidValueError, f"must be 3 rows of 3 numbers, got {value!r}")
    k = np.stack([read_numbers(row, at[i], 3) for i, row in enumerate(value)])
    if not (k[0, 0] > 0 and k[1, 1] > 0):
        raise at.fail(InvalidValueError, f"focal lengths fx={k[0, 0]}, fy={k[1, 1]} must be positive")
    if k[1, 0] != 0 or not np.array_equal(k[2], [0.0, 0.0, 1.0]):
        raise at.fail(InvalidValueError, f"{value!r} is not a pinhole matrix [[fx, s, cx], [0, fy, cy], [0, 0, 1]]")
    return k


# ---------------------------------------------------------------------------------------------- frames


@dataclass
class FrameScan:
    """What reading one frames.jsonl has seen so far: the last timestamp of frames ("") and of every channel, with
    its place, and the frame tokens."""

    last: dict[str, tuple[int, At]] = field(default_factory=dict)
    tokens: dict[str, At] = field(default_factory=dict)

    def check_order(self, channel: str, ts: int, at: At, strict: bool) -> None:
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


def read_frame(
    value: Any,
    at: At,
    scene: Scene,
    index: int,
    sensors: dict[str, SensorCalibration],
    scan: FrameScan,
    scene_dir: Path,
) -> tuple[Frame, BoxSource | None]:
    """Frame ``index`` of ``scene`` (one line of frames.jsonl, files relative to ``scene_dir``) and where its boxes
    are; ``scan`` checks the time order and the frame tokens against the lines before."""
    rec = read_object(value, at, _FRAME_KEYS)
    timestamp = read_timestamp(rec["timestamp_us"], at["timestamp_us"])
    scan.check_order("", timestamp, at["timestamp_us"], strict=True)
    pose = read_pose(rec["ego_pose"], at["ego_pose"])
    token = read_string(rec.get("token", f"{scene.token}_{timestamp}"), at["token"])
    if token in scan.tokens:
        raise at["token"].fail(InvalidValueError, f"frame token {token!r} is also used on {scan.tokens[token].row}")
    scan.tokens[token] = at["token"]
    entries = rec["sensors"]
    if not isinstance(entries, dict):
        raise at["sensors"].fail(InvalidValueError, f"must be an object channel -> sample, got {kind_of(entries)}")
    frame = Frame(scene.reader, token, scene.token, index, timestamp, pose, {}, {})
    for channel, entry in entries.items():
        sat = at["sensors"][channel]
        if channel not in sensors:
            raise sat.fail(UnknownChannelError, f"channel {channel!r} is not among the sensors {list(sensors)}")
        sample, sweeps = _read_sample(entry, sat, frame, sensors[channel], scene_dir)
        scan.check_order(channel, sample.timestamp_us, sat["timestamp_us"], strict=False)
        frame.sensors[channel] = sample
        frame.sweeps[channel] = sweeps
    source = None
    if "boxes" in rec:
        source = read_box_source(rec["boxes"], at["boxes"], scene_dir)
    return frame, source


def _read_sample(
    value: Any, at: At, frame: Frame, calib: SensorCalibration, scene_dir: Path
) -> tuple[SensorSample, list[SensorSample]]:
    """A frame's sample of one channel: its file, time and pose (the frame's unless given), and its sweeps."""
    rec = read_object(value, at, _SAMPLE_KEYS)
    suffixes = IMAGE_SUFFIXES if calib.is_camera else POINT_SUFFIXES
    path = read_relative_file(rec["file"], at["file"], scene_dir, suffixes, calib.modality)
    timestamp = read_timestamp(rec["timestamp_us"], at["timestamp_us"]) if "timestamp_us" in rec else frame.timestamp_us
    if abs(timestamp - frame.timestamp_us) > MAX_SENSOR_OFFSET_US:
        raise at["timestamp_us"].fail(
            TimestampError,
            f"{timestamp} is {abs(timestamp - frame.timestamp_us) / 1e6:.1f} s from the frame's "
            f"{frame.timestamp_us} (more than {MAX_SENSOR_OFFSET_US / 1e6:.0f} s: a unit or offset mistake?)",
        )
    pose = read_pose(rec["ego_pose"], at["ego_pose"]) if "ego_pose" in rec else frame.T_global_from_ego
    token = read_string(rec.get("token", f"{frame.token}_{calib.channel}"), at["token"])
    sample = SensorSample(token, calib.channel, timestamp, path, pose, calib, True)
    sweeps = _read_sweeps(rec.get("sweeps", []), at["sweeps"], sample, scene_dir, suffixes)
    return sample, sweeps


def _read_sweeps(
    value: Any, at: At, key: SensorSample, scene_dir: Path, suffixes: tuple[str, ...]
) -> list[SensorSample]:
    """Earlier non-key samples of a channel, newest first, each with its own time and pose."""
    if not isinstance(value, list):
        raise at.fail(InvalidValueError, f"must be a list of sweeps (newest first), got {kind_of(value)}")
    out: list[SensorSample] = []
    newer = key.timestamp_us
    for i, item in enumerate(value):
        sat = at[i]
        rec = read_object(item, sat, _SWEEP_KEYS)
        timestamp = read_timestamp(rec["timestamp_us"], sat["timestamp_us"])
        if timestamp >= newer:
            raise sat["timestamp_us"].fail(
                TimestampError, f"{timestamp} is not before {newer}: sweeps are earlier samples, newest first"
            )
        if key.timestamp_us - timestamp > MAX_SENSOR_OFFSET_US:
            raise sat["timestamp_us"].fail(TimestampError, f"{timestamp} is more than 10 s before its key sample")
        newer = timestamp
        path = read_relative_file(rec["file"], sat["file"], scene_dir, suffixes, key.calibration.modality)
        token = read_string(rec.get("token", f"{key.token}_sweep_{timestamp}"), sat["token"])
        pose = read_pose(rec["ego_pose"], sat["ego_pose"])
        out.append(SensorSample(token, key.channel, timestamp, path, pose, key.calibration, False))
    return out
