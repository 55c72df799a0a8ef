"""The privacy pass over one scene's stored camera images and times (STRIDE-QA appendix A.4: faces and licence plates
blurred, identifying timestamps removed, frame order kept). The build's ``anonymize`` stage and
``stridegen anonymize`` both run it; ``stridegen.shards.adapters.anonymized_tables`` turns its result into tables.

Per image: faces from the face detector; plates from the plate bands of the scene's vehicle boxes at the image's
time (the boxes of its frame, moved by their velocity to the camera sample's timestamp) projected with the image's
ego pose and camera calibration, plus the image plate detector; regions blurred, metadata removed
(``image.anonymize_image_bytes``). Times become microseconds since the scene's first frame, and date-times in the
log name (``2018-07-24-11-22-45`` in nuScenes log names) are replaced by ``REDACTED``.

The inputs are read by attribute (``ImageRows``, ``CameraRows``, ``BoxRows`` of ``stridegen.pipeline.tables``): the
stored tables have them, and this layer does not know the storage.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from stridegen.pipeline.anonymize.faces import FaceDetector
from stridegen.pipeline.anonymize.image import AnonymizeOptions, Region, anonymize_image_bytes
from stridegen.pipeline.anonymize.plates import plate_regions_2d
from stridegen.pipeline.tables import BoxRows, CameraRows, ImageRows

REDACTED = "REDACTED"
_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[-_T ]\d{2}[-:]\d{2}[-:]\d{2}")


@dataclass
class SceneAnonymization:
    """What the pass made of one scene: per image its new bytes and measurements, every region with its image
    index, times relative to the scene's first frame, the redacted log name."""

    data: list[bytes] = field(default_factory=list)
    regions: list[tuple[int, Region]] = field(default_factory=list)
    blurred_px: list[int] = field(default_factory=list)
    region_counts: list[int] = field(default_factory=list)
    metadata_removed: list[bool] = field(default_factory=list)
    reencoded: list[bool] = field(default_factory=list)
    frame_timestamp_us: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    image_timestamp_us: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    log_name: str = ""


def redact_date_times(text: str) -> str:
    """``text`` with every date-time (``YYYY-MM-DD-hh-mm-ss`` and its ``T`` / ``_`` / ``:`` spellings) replaced."""
    return _DATE_TIME.sub(REDACTED, text)


def boxes_at(tables: Sequence[BoxRows | None], frame: int, dt_s: float) -> tuple[np.ndarray, ...]:
    """(center, size_lwh, yaw, label) of the boxes of ``frame`` in ``tables``, centres moved by their velocity
    (where known) over ``dt_s``; global frame."""
    parts: list[tuple[np.ndarray, ...]] = []
    for table in tables:
        if table is None or len(table) == 0:
            continue
        rows = np.flatnonzero(np.asarray(table.frame_index) == frame)
        velocity = np.nan_to_num(np.asarray(table.velocity_global, dtype=np.float64)[rows])
        parts.append(
            (
                np.asarray(table.center_global, dtype=np.float64)[rows] + velocity * dt_s,
                np.asarray(table.size_lwh, dtype=np.float64)[rows],
                np.asarray(table.yaw_global, dtype=np.float64)[rows],
                np.asarray(table.label, dtype=object)[rows],
            )
        )
    if not parts:
        return np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros(0, dtype=object)
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(4))


def anonymize_scene(
    scene_name: str,
    log_name: str,
    frame_timestamp_us: np.ndarray,
    cameras: CameraRows,
    images: ImageRows,
    box_tables: Sequence[BoxRows | None],
    options: AnonymizeOptions,
    face_detector: FaceDetector | None,
) -> SceneAnonymization:
    """The pass over one scene (module docstring). ``face_detector`` is used when ``options.faces``."""
    frame_ts = np.asarray(frame_timestamp_us, dtype=np.int64)
    out = SceneAnonymization()
    for i in range(len(images)):
        f, c = int(images.frame_index[i]), int(images.channel_index[i])
        plates = np.zeros((0, 4))
        if options.plates:
            dt_s = float(int(images.timestamp_us[i]) - int(frame_ts[f])) * 1e-6
            center, size, yaw, label = boxes_at(box_tables, f, dt_s)
            T_global_from_cam = np.asarray(images.T_global_from_ego[i]) @ np.asarray(cameras.T_ego_from_sensor[c])
            wh = (int(cameras.width[c]), int(cameras.height[c]))
            plates = plate_regions_2d(center, size, yaw, label, T_global_from_cam, cameras.intrinsic[c], wh)
        result = anonymize_image_bytes(
            np.asarray(images.data[i], dtype=np.uint8).tobytes(),
            plates,
            face_detector if options.faces else None,
            options,
            f"{scene_name}:{cameras.channel[c]}/frame {f}",
        )
        out.data.append(result.data)
        out.regions += [(i, r) for r in result.regions]
        out.blurred_px.append(result.blurred_px)
        out.region_counts.append(len(result.regions))
        out.metadata_removed.append(result.metadata_removed)
        out.reencoded.append(result.reencoded)
    t0 = int(frame_ts[0]) if len(frame_ts) else 0
    out.frame_timestamp_us = frame_ts - t0
    out.image_timestamp_us = np.asarray(images.timestamp_us, dtype=np.int64) - t0
    out.log_name = redact_date_times(log_name)
    return out
