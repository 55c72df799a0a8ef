"""Run a detector (and a tracker) over a log and write nuScenes results files: the inputs of
``stridegen eval detection`` and ``stridegen eval tracking`` (the commands ``stridegen detect`` / ``stridegen track``).

- ``run_detect``: every frame of every (selected) scene through a ``detector`` backend of the registry; a nuScenes
  detection-results file with an entry (possibly empty) for every sample of the log, so the devkit-identical
  evaluator accepts it (it demands the file's samples equal the ground truth's).
- ``run_track``: the same detections, each scene tracked by a fresh ``tracker`` backend; a nuScenes
  tracking-results file (the tracking classes only; tracking_score = the detection's score; tracking ids
  ``scene/track``), with an entry for every sample of the selected scenes (``eval tracking`` scores the scenes a
  file covers). A tracker that provides the detections itself (``precomputed``) is the source, as in the build.

``tracking_rows`` / ``track_scene_rows`` turn tracked boxes into results rows; ``stridegen validate`` uses them too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

import numpy as np
from pydantic import BaseModel, ValidationError

from stridegen.core.boxes import Boxes
from stridegen.core.errors import ConfigError
from stridegen.core.vocabulary import TRACKING_CLASSES
from stridegen.formats.detection_boxes import to_detection_boxes
from stridegen.formats.nuscenes_results import MAX_BOXES_PER_SAMPLE, write_results
from stridegen.formats.tracking_results import write_tracking_results
from stridegen.logs import open_log
from stridegen.logs.base import LogReader, Scene
from stridegen.pipeline.detect.base import Detector
from stridegen.pipeline.track_base import DetectingTracker, Tracker, detect_global, provides_detections
from stridegen.run import backends
from stridegen.run.config import DetectorSection, TrackerSection, validation_message

_S = TypeVar("_S", bound=BaseModel)

# (frames done, frames in all): called after each frame, and once with 0 before the first.
Progress = Callable[[int, int], None]


@dataclass
class DetectionRun:
    """Detections of the selected scenes of a log, and every sample token of the log (in log order)."""

    sample_tokens: list[str]
    scenes: list[Scene]
    samples: dict[str, Boxes]  # sample token -> global-frame boxes (selected scenes only)
    truncated: int = 0  # boxes dropped to keep a sample within the results format's limit

    @property
    def n_frames(self) -> int:
        return len(self.samples)


@dataclass
class ResultsSummary:
    """What ``run_detect`` / ``run_track`` wrote."""

    path: Path
    source: str  # the backend that gave the boxes (the detector, or a tracker that provides them)
    n_scenes: int
    n_frames: int
    n_samples: int  # entries in the file (detection: every sample of the log; tracking: of the selected scenes)
    class_counts: dict[str, int] = field(default_factory=dict)  # boxes written, per class
    n_tracks: int = 0  # distinct tracking ids (tracking files)
    truncated: int = 0

    @property
    def n_boxes(self) -> int:
        return sum(self.class_counts.values())


# ------------------------------------------------------------------------------------------------------ backends
def _section(model: type[_S], where: str, **fields: Any) -> _S:
    """A config section made from command-line values; its validation errors as one ConfigError."""
    try:
        return model(**fields)
    except ValidationError as exc:
        raise ConfigError(f"{where}: {validation_message(exc)}") from None


def detector_section(name: str, options: Mapping[str, Any] | None = None) -> DetectorSection:
    """The ``detector`` section of ``stridegen detect`` / ``track`` (checked as the build config's is)."""
    return _section(DetectorSection, "detector", name=name, options=dict(options or {}))


def tracker_section(name: str = "center", options: Mapping[str, Any] | None = None) -> TrackerSection:
    """The ``tracker`` section of ``stridegen track``: for ``center`` the options are ``TrackerConfig`` fields
    (``max_age``, ``matching``, ``distance_gates_m``), for other backends their factory's options."""
    return _section(TrackerSection, "tracker", name=name, options=dict(options or {}))


# -------------------------------------------------------------------------------------------------------- detect
def select_log_scenes(reader: LogReader, wanted: Sequence[str] | None = None) -> list[Scene]:
    """The log's scenes in its order; with ``wanted`` (names or tokens) only those (ConfigError for unknown)."""
    scenes = reader.scenes()
    if wanted is None:
        return scenes
    known = {s.name for s in scenes} | {s.token for s in scenes}
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise ConfigError(f"scenes {unknown} not in the log (it has {[s.name for s in scenes]})")
    return [s for s in scenes if s.name in wanted or s.token in wanted]


def _top_boxes(boxes: Boxes, limit: int) -> tuple[Boxes, int]:
    if len(boxes) <= limit:
        return boxes, 0
    keep = np.sort(np.argsort(-boxes.score, kind="stable")[:limit])
    return boxes[keep], len(boxes) - limit


def detect_log(
    reader: LogReader,
    detector: Detector | DetectingTracker,
    scenes: Sequence[str] | None = None,
    progress: Progress | None = None,
    name: str = "detector",
    max_boxes_per_sample: int = MAX_BOXES_PER_SAMPLE,
) -> DetectionRun:
    """``detector`` on every frame of the (selected) scenes. A sample's boxes beyond ``max_boxes_per_sample`` (the
    results format's limit) are dropped, lowest scores first; boxes outside the global frame are an error."""
    all_scenes = reader.scenes()
    chosen = select_log_scenes(reader, scenes)
    total = sum(len(s.frames) for s in chosen)
    samples: dict[str, Boxes] = {}
    truncated = 0
    if progress is not None:
        progress(0, total)
    for scene in chosen:
        for frame in scene.frames:
            boxes = detect_global(detector, frame, name)
            samples[frame.token], dropped = _top_boxes(boxes, max_boxes_per_sample)
            truncated += dropped
            if progress is not None:
                progress(len(samples), total)
    tokens = [f.token for s in all_scenes for f in s.frames]
    return DetectionRun(tokens, chosen, samples, truncated)


def _class_counts(labels: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    return dict(sorted(counts.items()))


def run_detect(
    log_root: str | Path,
    out: str | Path,
    detector: str = "oracle",
    options: Mapping[str, Any] | None = None,
    seed: int = 0,
    scenes: Sequence[str] | None = None,
    log_format: str | None = None,
    version: str | None = None,
    progress: Progress | None = None,
) -> ResultsSummary:
    """Detect over a log and write a nuScenes detection-results file to ``out`` (backend errors come before the
    log is read)."""
    backend = backends.detector(detector_section(detector, options), seed)
    reader = open_log(log_root, log_format, version)
    run = detect_log(reader, backend, scenes, progress, f"detector {detector!r}")
    boxes = to_detection_boxes(list(run.samples.items()))
    path = write_results(out, boxes, sample_tokens=run.sample_tokens)
    return ResultsSummary(
        path,
        detector,
        len(run.scenes),
        run.n_frames,
        len(run.sample_tokens),
        _class_counts(boxes.detection_name.tolist()),
        truncated=run.truncated,
    )


# --------------------------------------------------------------------------------------------------------- track
def tracking_rows(scene_name: str, sample_token: str, boxes: Boxes) -> list[dict]:
    """A sample's tracked boxes as nuScenes tracking-results rows: the tracking classes only, tracking id
    ``scene/track``, tracking score = the box's score, velocity from the boxes (NaN -> 0)."""
    quat = boxes.extras.get("rotation_global")
    rows = []
    for i in np.flatnonzero(np.isin(boxes.label, TRACKING_CLASSES)):
        rotation = quat[i] if quat is not None else np.r_[np.cos(boxes.yaw[i] / 2), 0, 0, np.sin(boxes.yaw[i] / 2)]
        rows.append(
            {
                "sample_token": sample_token,
                "translation": boxes.center[i].tolist(),
                "size": boxes.size_lwh[i, [1, 0, 2]].tolist(),
                "rotation": list(map(float, rotation)),
                "velocity": np.nan_to_num(boxes.velocity[i, :2]).tolist(),
                "tracking_id": f"{scene_name}/{boxes.track_id[i]}",
                "tracking_name": str(boxes.label[i]),
                "tracking_score": float(boxes.score[i]),
            }
        )
    return rows


def track_scene_rows(scene: Scene, detections: Sequence[Boxes], tracker: Tracker) -> dict[str, list[dict]]:
    """Track one scene's per-frame detections with ``tracker`` (a tracker backend); its frames' results rows."""
    tracked = tracker.track(list(detections), cast("Sequence[float]", scene.timestamps_s))
    return {
        frame.token: tracking_rows(scene.name, frame.token, boxes)
        for frame, boxes in zip(scene.frames, tracked, strict=True)
    }


def run_track(
    log_root: str | Path,
    out: str | Path,
    detector: str = "oracle",
    options: Mapping[str, Any] | None = None,
    seed: int = 0,
    tracker: str = "center",
    tracker_options: Mapping[str, Any] | None = None,
    scenes: Sequence[str] | None = None,
    log_format: str | None = None,
    version: str | None = None,
    progress: Progress | None = None,
) -> ResultsSummary:
    """Detect over a log, track each scene with a fresh ``tracker`` backend, write a nuScenes tracking-results
    file to ``out``: an entry for every sample of the selected scenes (the tracking evaluator scores the scenes a
    file covers, so the other scenes are left out rather than scored as all missed)."""
    detector_config, tracker_config = detector_section(detector, options), tracker_section(tracker, tracker_options)
    first = backends.tracker(tracker_config)
    provides = provides_detections(first)
    source, name = backends.detection_source(first, detector_config, tracker_config, seed)
    reader = open_log(log_root, log_format, version)
    run = detect_log(reader, source, scenes, progress, name)
    results: dict[str, list[dict]] = {}
    for index, scene in enumerate(run.scenes):
        backend = first if index == 0 else backends.tracker(tracker_config)  # fresh per scene
        results.update(track_scene_rows(scene, [run.samples[f.token] for f in scene.frames], backend))
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    write_tracking_results(out, results)
    rows = [row for sample in results.values() for row in sample]
    return ResultsSummary(
        Path(out),
        tracker if provides else detector,
        len(run.scenes),
        run.n_frames,
        len(results),
        _class_counts(row["tracking_name"] for row in rows),
        n_tracks=len({row["tracking_id"] for row in rows}),
        truncated=run.truncated,
    )
