"""The tracker protocol; trackers are ``tracker`` backends of the registry (stridegen.core.registry).

A tracker is made fresh for every scene (it may keep state from frame to frame). One that also provides the
detections (``provides_detections = True``, e.g. ``precomputed``, which reads a tracking-results file) is the
detect stage's source: its ``detect(frame)`` gives each frame's boxes and the configured detector is not made.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from stridegen.core.boxes import Boxes
from stridegen.core.errors import StrideGenError
from stridegen.logs.base import Frame
from stridegen.pipeline.detect.base import Detector

ROW_EXTRA = "_row"  # the extra a detection carries through the tracker: its row in its frame's detections


class Tracker(Protocol):
    """Tracks one scene: per-frame detections (global frame) -> the active tracks of each frame, ``track_id`` set.

    Optional class attributes (capabilities the build reads from the registered factory, nothing built):
    ``provides_detections`` (absent: False); ``takes_section_config`` (absent: False): the factory takes
    ``config``, the build config's tracker section as a ``TrackerConfig`` (``center``); ``needs_path`` (absent:
    none): the file the factory's ``path`` names, which the tracker section must then give (``precomputed``);
    ``check_inputs`` (optional, a static method taking the factory's options): checks the files they name without
    building the tracker (``stridegen track`` calls it before any scene)."""

    def track(self, detections_per_frame: Sequence[Boxes], timestamps_s: Sequence[float]) -> list[Boxes]: ...


@runtime_checkable
class DetectingTracker(Protocol):
    """A tracker that is its scene's source of detections as well."""

    provides_detections: bool

    def detect(self, frame: Frame) -> Boxes: ...

    def track(self, detections_per_frame: Sequence[Boxes], timestamps_s: Sequence[float]) -> list[Boxes]: ...


def provides_detections(tracker: object) -> bool:
    """The capability flag of a tracker backend or factory (absent: False)."""
    return bool(getattr(tracker, "provides_detections", False))


def detect_global(source: Detector | DetectingTracker, frame: Frame, name: str) -> Boxes:
    """``source.detect(frame)``, which must be in the global frame (StrideGenError naming the backend otherwise)."""
    boxes = source.detect(frame)
    if boxes.frame != "global":
        raise StrideGenError(f"{name} returned boxes in the {boxes.frame!r} frame, expected 'global'")
    return boxes


def with_rows(boxes: Boxes) -> Boxes:
    """``boxes`` tagged with their row (``ROW_EXTRA``), which a tracker keeps on the track it matches them to."""
    return boxes.replace(extras={**boxes.extras, ROW_EXTRA: np.arange(len(boxes))})


def detection_track_ids(detections: Sequence[Boxes], tracked: Sequence[Boxes]) -> list[np.ndarray]:
    """Per frame, the track id of each of ``detections`` (tagged by ``with_rows``) from the tracker's active
    tracks ``tracked`` of that frame; "" for a detection no track holds."""
    out = []
    for det, trk in zip(detections, tracked, strict=True):
        ids = np.full(len(det), "", dtype=object)
        if len(trk):
            ids[np.asarray(trk.extras[ROW_EXTRA], dtype=np.int64)] = trk.track_id
        out.append(ids)
    return out
