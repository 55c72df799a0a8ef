"""The tracker protocol; trackers are ``tracker`` backends of the registry (stridegen.core.registry).

A tracker is made fresh for every scene (it may keep state from frame to frame). One that also provides the
detections (``provides_detections = True``, e.g. ``precomputed``, which reads a tracking-results file) is the
detect stage's source: its ``detect(frame)`` gives each frame's boxes and the configured detector is not made.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from stridegen.core.boxes import Boxes
from stridegen.core.errors import StrideGenError
from stridegen.logs.base import Frame
from stridegen.pipeline.detect.base import Detector


class Tracker(Protocol):
    """Tracks one scene: per-frame detections (global frame) -> the active tracks of each frame, ``track_id`` set.

    Optional class attributes (capabilities the build reads from the registered factory, nothing built):
    ``provides_detections`` (absent: False); ``takes_section_config`` (absent: False): the factory takes
    ``config``, the build config's tracker section as a ``TrackerConfig`` (``center``); ``needs_path`` (absent:
    none): the file the factory's ``path`` names, which the tracker section must then give (``precomputed``)."""

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
