"""The backends of a run, made where they are used (in the worker that runs the scene, never in the driver) and
kept in one bounded cache with one policy.

Cached per process (``BACKENDS``, the ``BACKEND_CACHE`` most recently used, keyed by kind, name and options):
log readers (a worker indexes a log's tables once), detectors and segmenters (a SAM 2 or mmdet3d model loads
once; both are stateless from frame to frame, every random draw being seeded per frame), face detectors. Trackers
are made fresh for every scene: they keep state from frame to frame.

A backend's options were checked when the config was loaded (``stridegen.run.config``); a backend whose
construction fails (a missing checkpoint file) fails the scenes that need it, each with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from stridegen.core import registry
from stridegen.core.cache import LruCache
from stridegen.core.canonical import canonical_json
from stridegen.logs import open_log
from stridegen.logs.base import LogReader
from stridegen.pipeline.anonymize.faces import FaceDetector, make_face_detector
from stridegen.pipeline.detect.base import Detector
from stridegen.pipeline.segment.base import Segmenter
from stridegen.pipeline.track_base import DetectingTracker, Tracker, provides_detections
from stridegen.run.config import AnonymizeSection, BuildConfig, DetectorSection, TrackerSection

BACKEND_CACHE = 8  # backends a process keeps: a build needs at most a reader, a detector, a segmenter, a face detector
BACKENDS: LruCache[tuple[str, str], Any] = LruCache(BACKEND_CACHE)

_T = TypeVar("_T")


def cached(kind: str, key: Any, make: Callable[[], _T]) -> _T:
    """The backend of ``kind`` for ``key`` (plain JSON data), made by ``make`` on first use."""
    value: _T = BACKENDS.get((kind, canonical_json(key)), make)
    return value


def forget(kind: str) -> None:
    """Drop the cached backends of ``kind`` (a build drops the log readers: the log may have changed)."""
    BACKENDS.discard(lambda key: key[0] != kind)


def check_inputs(kind: str, name: str, options: Mapping[str, Any]) -> None:
    """A backend's own check of the files its factory ``options`` name, in the driver before any scene runs:
    the optional capability ``check_inputs`` of the factory (a static method; e.g. ``precomputed``'s results
    file). Nothing is built."""
    check = getattr(registry.resolve(kind, name), "check_inputs", None)
    if check is not None:
        check(**options)


def log_reader(root: str | Path, fmt: str | None, version: str | None) -> LogReader:
    """One reader per (root, format, version)."""
    return cached("log_reader", [str(Path(root).resolve()), fmt, version], lambda: open_log(root, fmt, version))


def detector_options(section: DetectorSection, seed: int | None) -> dict[str, Any]:
    """The section's options, with the build seed when the factory takes a ``seed`` and the options set none."""
    options = dict(section.options)
    if seed is not None and "seed" not in options and registry.accepts("detector", section.name, "seed"):
        options["seed"] = seed
    return options


def detector(section: DetectorSection, seed: int | None = None) -> Detector:
    """The configured detector (cached)."""
    options = detector_options(section, seed)
    made: Detector = cached(
        "detector", [section.name, options], lambda: registry.make("detector", section.name, options)
    )
    return made


def tracker(section: TrackerSection) -> Tracker:
    """A fresh tracker for one scene."""
    made: Tracker = registry.make("tracker", section.name, section.factory_options())
    return made


def detection_source(
    config_tracker: Tracker, detector_section: DetectorSection, tracker_section: TrackerSection, seed: int | None
) -> tuple[Detector | DetectingTracker, str]:
    """Where a scene's detections come from, and its name for messages: the tracker when it provides them
    (``provides_detections``), else the configured detector."""
    if provides_detections(config_tracker):
        assert isinstance(config_tracker, DetectingTracker)
        return config_tracker, f"tracker {tracker_section.name!r}"
    return detector(detector_section, seed), f"detector {detector_section.name!r}"


def segmenter(config: BuildConfig) -> Segmenter | None:
    """The configured segmenter (cached); None for "none"."""
    section = config.segmenter
    if section.name == "none":
        return None
    made: Segmenter = cached(
        "segmenter", [section.name, section.options], lambda: registry.make("segmenter", section.name, section.options)
    )
    return made


def face_detector(section: AnonymizeSection) -> FaceDetector | None:
    """The face detector of the anonymization (cached; None when faces are off or the detector is "none")."""
    if not section.faces:
        return None
    name, threshold = section.face_detector, section.face_threshold
    made: FaceDetector | None = cached("face_detector", [name, threshold], lambda: make_face_detector(name, threshold))
    return made
