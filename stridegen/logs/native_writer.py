"""``write_native_log``: any LogReader's scenes -> a ``stridegen-log`` folder (stridegen/logs/native.py).

Per scene ``<out>/scenes/<scene>/``: ``frames.jsonl``; ``<CHANNEL>/<frame index>.jpg|.png`` (camera bytes copied
unchanged); ``<CHANNEL>/<frame index>.npy`` (the reader's point cloud, float32, unchanged); with ``sweeps``,
``<CHANNEL>/sweeps/<frame index>_<k>.*``; ``boxes/<frame index>.json`` for frames with ground truth. Every value
the native reader reads is written explicitly (tokens, velocities, counts, visibility, attribute), so reading the
copy gives the same scenes, frames, samples and annotations; poses and calibrations go through a quaternion
([w, x, y, z]) and come back to within float64 rounding (~1e-16).

The output is written to a temporary sibling folder, read back (every scene's frames and boxes, so that a value the
format refuses fails the write rather than a later build) and renamed into place: ``out_root`` is either untouched
or complete. JSON is written with Python's shortest float repr, so floats read back exactly.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.core.errors import ConfigError, LogFormatError
from stridegen.core.transforms import rotmat_to_quat, yaw_to_quat
from stridegen.formats.images import check_image_bytes
from stridegen.logs.base import Annotations, Frame, LogReader, Scene, SensorCalibration, SensorSample
from stridegen.logs.box_rotation import ROTATION_GLOBAL
from stridegen.logs.names import is_safe_name
from stridegen.logs.native import NativeReader
from stridegen.logs.native_json import TimestampError, UnknownModalityError, UnsafeNameError
from stridegen.logs.native_records import FORMAT_NAME, FORMAT_VERSION, FRAMES_FILE, MANIFEST, MODALITIES, SCENES_DIR

JPEG_MAGIC = b"\xff\xd8"  # JPEG start-of-image marker (ITU-T T.81, B.1.1.3)
# progress(scene name, frames written, frames of the scene), called after every frame.
Progress = Callable[[str, int, int], None]


@dataclass
class NativeWriteSummary:
    out_root: Path
    scenes: list[str]
    frames: int = 0
    sensor_files: int = 0
    boxes: int = 0
    channels: list[str] = field(default_factory=list)


def pose_json(transform: np.ndarray) -> dict[str, list[float]]:
    """A rigid 4x4 transform as ``{"rotation_wxyz", "translation_m"}`` (quaternion with w >= 0)."""
    t = np.asarray(transform, dtype=np.float64)
    return {
        "rotation_wxyz": [float(x) for x in rotmat_to_quat(t[:3, :3])],
        "translation_m": [float(x) for x in t[:3, 3]],
    }


def sensor_json(calib: SensorCalibration) -> dict[str, Any]:
    """A manifest sensor entry of a calibration."""
    if calib.modality not in MODALITIES:
        raise UnknownModalityError(calib.channel, f"modality {calib.modality!r} is not one of {list(MODALITIES)}")
    out: dict[str, Any] = {
        "channel": calib.channel,
        "modality": calib.modality,
        "T_ego_from_sensor": pose_json(calib.T_ego_from_sensor),
    }
    if calib.is_camera:
        if calib.intrinsic is None or not calib.width or not calib.height:
            raise LogFormatError(calib.channel, "camera calibration lacks the intrinsic matrix, width or height")
        out["camera"] = {
            "K": np.asarray(calib.intrinsic, dtype=np.float64).tolist(),
            "width": int(calib.width),
            "height": int(calib.height),
        }
    return out


def boxes_json(annotations: Annotations) -> list[dict[str, Any]]:
    """A frame's annotations as box objects of the native format (global frame, named keys)."""
    boxes = annotations.boxes
    if boxes.frame != "global":
        raise LogFormatError("annotations", f"boxes must be in the global frame, got {boxes.frame!r}")
    rotation = boxes.extras.get(ROTATION_GLOBAL)
    rotation = yaw_to_quat(boxes.yaw) if rotation is None else np.asarray(rotation, dtype=np.float64)
    out = []
    for i in range(len(boxes)):
        length, width, height = (float(x) for x in boxes.size_lwh[i])
        velocity = boxes.velocity[i]
        out.append(
            {
                "instance_id": str(boxes.track_id[i]),
                "token": str(annotations.token[i]),
                "category": str(annotations.category[i]),
                "label": str(boxes.label[i]),
                "center_m": [float(x) for x in boxes.center[i]],
                "size_m": {"length": length, "width": width, "height": height},
                "rotation_wxyz": [float(x) for x in rotation[i]],
                "velocity_mps": None
                if not np.any(np.isfinite(velocity))
                else [float(x) if np.isfinite(x) else None for x in velocity],
                "num_lidar_pts": int(annotations.num_lidar_pts[i]),
                "num_radar_pts": int(annotations.num_radar_pts[i]),
                "visibility": int(annotations.visibility[i]),
                "attribute": str(annotations.attribute[i]),
            }
        )
    return out


def _dumps(value: Any) -> str:
    return json.dumps(value, allow_nan=False, ensure_ascii=False)


def _same_optional(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return bool(np.array_equal(a, b))


def _select(reader: LogReader, scenes: Sequence[str] | None) -> list[Scene]:
    if scenes is None:
        return list(reader.scenes())
    chosen: list[Scene] = []
    for name in scenes:
        scene = reader.scene(name)  # LogFormatError naming the log when there is no such scene
        if scene not in chosen:
            chosen.append(scene)
    return chosen


class _SceneWriter:
    """Writes one scene's folder and returns its manifest sensors."""

    def __init__(self, scene: Scene, folder: Path, sweeps: bool, summary: NativeWriteSummary) -> None:
        self.scene = scene
        self.folder = folder
        self.sweeps = sweeps
        self.summary = summary
        self.calibrations: dict[str, SensorCalibration] = {}

    def write(self, progress: Progress | None) -> list[dict[str, Any]]:
        self.folder.mkdir(parents=True)
        with (self.folder / FRAMES_FILE).open("w", encoding="utf-8") as fh:
            for i, frame in enumerate(self.scene.frames):
                if i and frame.timestamp_us <= self.scene.frames[i - 1].timestamp_us:
                    raise TimestampError(
                        frame.reader.root,
                        f"scene {self.scene.name!r}: frame {frame.token} at {frame.timestamp_us} us is not after "
                        f"frame {self.scene.frames[i - 1].token}; {FORMAT_NAME} frames are strictly increasing in time",
                    )
                fh.write(_dumps(self._frame(i, frame)) + "\n")
                self.summary.frames += 1
                if progress is not None:
                    progress(self.scene.name, i + 1, len(self.scene.frames))
        return [sensor_json(c) for c in self.calibrations.values()]

    def _frame(self, index: int, frame: Frame) -> dict[str, Any]:
        rec: dict[str, Any] = {
            "token": frame.token,
            "timestamp_us": int(frame.timestamp_us),
            "ego_pose": pose_json(frame.T_global_from_ego),
            "sensors": {},
        }
        for channel, sample in frame.sensors.items():
            self._calibration(sample)
            entry: dict[str, Any] = {"file": self._data_file(frame, sample, f"{index:06d}"), "token": sample.token}
            if sample.timestamp_us != frame.timestamp_us:
                entry["timestamp_us"] = int(sample.timestamp_us)
            if not np.array_equal(sample.T_global_from_ego, frame.T_global_from_ego):
                entry["ego_pose"] = pose_json(sample.T_global_from_ego)
            earlier = frame.sweeps.get(channel, []) if self.sweeps else []
            if earlier:
                entry["sweeps"] = [self._sweep(frame, s, f"{index:06d}_{k}") for k, s in enumerate(earlier)]
            rec["sensors"][channel] = entry
        annotations = frame.annotations()
        if len(annotations):
            rel = f"boxes/{index:06d}.json"
            rows = boxes_json(annotations)
            if any(not r["instance_id"] for r in rows):
                raise LogFormatError(frame.reader.root, f"frame {frame.token} has boxes without an instance id")
            path = self.folder / rel
            path.parent.mkdir(exist_ok=True)
            path.write_text("[\n" + ",\n".join(_dumps(r) for r in rows) + "\n]\n", encoding="utf-8")
            rec["boxes"] = rel
            self.summary.boxes += len(rows)
        return rec

    def _sweep(self, frame: Frame, sample: SensorSample, stem: str) -> dict[str, Any]:
        return {
            "file": self._data_file(frame, sample, f"sweeps/{stem}"),
            "timestamp_us": int(sample.timestamp_us),
            "ego_pose": pose_json(sample.T_global_from_ego),
            "token": sample.token,
        }

    def _calibration(self, sample: SensorSample) -> None:
        """One calibration per channel per scene (the format's rule); a change within the scene is refused."""
        calib = sample.calibration
        if not is_safe_name(calib.channel):
            raise UnsafeNameError(sample.path, f"channel {calib.channel!r} is not a safe folder name")
        known = self.calibrations.setdefault(calib.channel, calib)
        if known is calib:
            return
        same = (
            known.modality == calib.modality
            and np.array_equal(known.T_ego_from_sensor, calib.T_ego_from_sensor)
            and _same_optional(known.intrinsic, calib.intrinsic)
            and (known.width, known.height) == (calib.width, calib.height)
        )
        if not same:
            raise LogFormatError(
                sample.path,
                f"calibration of {calib.channel} changes within scene {self.scene.name!r}; "
                f"{FORMAT_NAME} holds one calibration per channel and scene",
            )

    def _data_file(self, frame: Frame, sample: SensorSample, stem: str) -> str:
        """Write a sample's data (image bytes unchanged, or points as float32 .npy); its path in the scene."""
        reader = frame.reader
        if sample.calibration.is_camera:
            data = reader.load_bytes(sample)
            check_image_bytes(data, sample.path)
            suffix = ".jpg" if data.startswith(JPEG_MAGIC) else ".png"  # check_image_bytes: JPEG or PNG
            rel = f"{sample.channel}/{stem}{suffix}"
            path = self.folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        else:
            points = np.ascontiguousarray(reader.load_points(sample), dtype=np.float32)
            rel = f"{sample.channel}/{stem}.npy"
            path = self.folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            np.save(path, points, allow_pickle=False)
        self.summary.sensor_files += 1
        return rel


def write_native_log(
    reader: LogReader,
    out_root: str | Path,
    scenes: Sequence[str] | None = None,
    progress: Progress | None = None,
    *,
    sweeps: bool = False,
    overwrite: bool = False,
    source: dict[str, Any] | None = None,
) -> NativeWriteSummary:
    """Write ``reader``'s scenes (all, or those named by name or token) as a stridegen-log under ``out_root``.

    ``sweeps`` also copies each sample's earlier non-key sweeps. A non-empty ``out_root`` is refused unless
    ``overwrite``; an ``out_root`` that holds the source log is always refused. ``source`` goes to the manifest's
    informational ``source`` object (default: the source format's name).
    """
    from stridegen.logs.synthetic import OutputExistsError  # one "output exists" error for every writer

    out = Path(out_root)
    src = reader.root.resolve()
    if out.resolve() == src or out.resolve() in src.parents:
        raise ConfigError(f"{out} holds the source log {reader.root}; write the copy elsewhere")
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not overwrite:
        raise OutputExistsError(f"{out} exists and is not empty; pass overwrite=True (--overwrite) to replace it")
    selected = _select(reader, scenes)
    if not selected:
        raise ConfigError("no scenes to write (scenes=[] was given)")
    for scene in selected:
        if not is_safe_name(scene.name):
            raise UnsafeNameError(reader.root, f"scene name {scene.name!r} is not a safe folder name")
    summary = NativeWriteSummary(out, [s.name for s in selected])
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    try:
        entries: list[dict[str, Any]] = []
        for scene in selected:
            sensors = _SceneWriter(scene, tmp / SCENES_DIR / scene.name, sweeps, summary).write(progress)
            entries.append(
                {
                    "name": scene.name,
                    "token": scene.token,
                    "description": scene.description,
                    "log_name": scene.log_name,
                    "sensors": sensors,
                }
            )
        summary.channels = list(dict.fromkeys(s["channel"] for e in entries for s in e["sensors"]))
        manifest = _manifest(entries, source if source is not None else {"format": reader.format_name})
        (tmp / MANIFEST).write_text(_manifest_text(manifest), encoding="utf-8")
        _read_back(tmp)
        if out.is_dir():
            shutil.rmtree(out)
        elif out.exists():
            out.unlink()
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return summary


def _read_back(root: Path) -> None:
    """Read the written log as a user will (every scene's frames, every frame's boxes): a value the source reader
    let through but the format refuses fails the write, not a later build."""
    reader = NativeReader(root)
    for scene in reader.scenes():
        for frame in scene.frames:
            reader.load_annotations(frame)


def _manifest(entries: list[dict[str, Any]], source: dict[str, Any]) -> dict[str, Any]:
    """The manifest; the sensors go to the top level when every scene has the same ones."""
    manifest: dict[str, Any] = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "source": source}
    shared = bool(entries) and all(e["sensors"] == entries[0]["sensors"] for e in entries)
    if shared:
        manifest["sensors"] = entries[0]["sensors"]
        for e in entries:
            del e["sensors"]
    manifest["scenes"] = entries
    return manifest


def _manifest_text(manifest: dict[str, Any]) -> str:
    """The manifest as JSON with one line per top-level value, sensor and scene (readable, diffable)."""
    parts = []
    for key, value in manifest.items():
        if isinstance(value, list):
            items = ",\n".join(f"    {_dumps(v)}" for v in value)
            parts.append(f"  {_dumps(key)}: [\n{items}\n  ]")
        else:
            parts.append(f"  {_dumps(key)}: {_dumps(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"
