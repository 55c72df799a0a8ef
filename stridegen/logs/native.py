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

This module is the reader (files, caches, sensor data); the typed JSON readers and the format's errors are in
stridegen.logs.native_json, the manifest and frame records in stridegen.logs.native_records, the box rule in
stridegen.logs.native_boxes.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import numpy as np

from stridegen.core.bounded_json import json_limits, loads
from stridegen.core.cache import LruCache
from stridegen.core.errors import ConfigError, LogFormatError, MissingFileError, PointCloudSizeError
from stridegen.formats.textfile import read_text
from stridegen.logs._common import SCENE_CACHE, require_finite_points
from stridegen.logs.base import Annotations, Frame, LogReader, Scene, SensorCalibration, SensorSample
from stridegen.logs.native_boxes import BoxSource, derive_velocities, read_frame_boxes
from stridegen.logs.native_json import At, InvalidValueError
from stridegen.logs.native_records import (
    FORMAT_NAME,
    FRAMES_FILE,
    MANIFEST,
    SCENES_DIR,
    FrameScan,
    SceneEntry,
    read_frame,
    read_manifest,
)

BIN_VALUES_PER_POINT = 4  # .bin: float32 x, y, z, intensity (the KITTI velodyne layout)
_ANNOTATION_CACHE_SCENES = 2


def is_native_log(path: str | Path) -> bool:
    """True when ``path`` is a stridegen-log root (it holds ``stridegen-log.json``) or that manifest file."""
    p = Path(path)
    return (p / MANIFEST).is_file() or (p.name == MANIFEST and p.is_file())


class NativeReader(LogReader):
    """A ``stridegen-log`` folder -> Scene / Frame objects (module docstring, docs/log-format.md)."""

    format_name = FORMAT_NAME

    def __init__(self, root: str | Path) -> None:
        root = Path(root)
        if root.name == MANIFEST and root.is_file():
            root = root.parent
        super().__init__(root)
        self.manifest_path = self.root / MANIFEST
        manifest = read_manifest(self.manifest_path)
        self.version = manifest.version
        self.source = manifest.source
        self._box_sources: dict[str, list[BoxSource | None]] = {}
        self._annotations: OrderedDict[str, list[Annotations]] = OrderedDict()
        self._frame_tokens: dict[str, tuple[str, str]] = {}  # frame token -> (scene token, where)
        self._scene_cache: LruCache[str, Scene] = LruCache(SCENE_CACHE)
        self._entries = manifest.scenes

    # ------------------------------------------------------------------------------------------ scenes
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

    def _scene(self, entry: SceneEntry) -> Scene:
        return self._scene_cache.get(entry.token, lambda: self._make_scene(entry))

    def _make_scene(self, entry: SceneEntry) -> Scene:
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
        sources: list[BoxSource | None] = []
        scan = FrameScan()
        max_depth = json_limits().max_depth  # a line nested deeper is one error, not a RecursionError (issue 33)
        for lineno, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            at = At(path, f"line {lineno}")
            value = loads(line, path, InvalidValueError, line=lineno, max_depth=max_depth, reject_duplicates=False)
            frame, source = read_frame(value, at, scene, len(frames), sensors, scan, scene_dir)
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
        return require_finite_points(points, sample.path, InvalidValueError)

    def point_file_problem(self, sample: SensorSample, size: int) -> str | None:
        """``.bin``: 4 float32 per point; ``.npy``: the size its header promises (``np.lib.format``)."""
        suffix = sample.path.suffix.lower()
        if suffix == ".bin" and size % (4 * BIN_VALUES_PER_POINT):
            return f"size {size} bytes is not a multiple of {4 * BIN_VALUES_PER_POINT} (float32 x, y, z, intensity)"
        if suffix == ".npy" and size:
            return _npy_size_problem(sample.path, size)
        return None

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
            read_frame_boxes(src, frame.token)
            for src, frame in zip(self._box_sources[scene_token], scene.frames, strict=True)
        ]
        derive_velocities(parsed, scene.timestamps_s)
        self._annotations[scene_token] = [p.annotations for p in parsed]
        while len(self._annotations) > _ANNOTATION_CACHE_SCENES:
            self._annotations.popitem(last=False)
        return self._annotations[scene_token]


def _read_npy(path: Path) -> np.ndarray:
    try:
        points = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise LogFormatError(path, f"not a readable .npy array ({type(exc).__name__}: {exc})") from None
    if not np.issubdtype(points.dtype, np.floating):
        raise InvalidValueError(path, f"points must be floats (float32), got {points.dtype}")
    return np.ascontiguousarray(points, dtype=np.float32)


def _npy_size_problem(path: Path, size: int) -> str | None:
    """Whether a ``.npy`` file is as long as its header says (header, then shape x item size bytes)."""
    try:
        with open(path, "rb") as fh:
            major, _ = np.lib.format.read_magic(fh)
            read = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
            shape, _, dtype = read(fh)
            data_start = fh.tell()
    except (ValueError, OSError, EOFError) as exc:
        return f"not a readable .npy header ({type(exc).__name__}: {exc})"
    expected = data_start + int(np.prod(shape)) * dtype.itemsize
    if size != expected:
        return f"size {size} bytes, but its header promises {expected} ({list(shape)} {dtype})"
    return None


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


# What stridegen.logs.detect_format asks of this reader, and names in its error when no reader knows a folder.
open_native.detect = is_native_log  # type: ignore[attr-defined]
open_native.looks_for = "stridegen-log.json (docs/log-format.md)"  # type: ignore[attr-defined]
