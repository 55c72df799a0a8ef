"""A scene's detections and tracks as nuScenes results rows: what a worker of ``stridegen detect`` / ``track``
(``stridegen.jobs.detect``) and ``stridegen validate`` do to one scene, and the results file written from every
scene's rows (``write_results_file``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from stridegen.core.boxes import Boxes
from stridegen.formats.detection_boxes import to_detection_boxes
from stridegen.formats.nuscenes_results import MAX_BOXES_PER_SAMPLE, results_dict, write_results_dict
from stridegen.formats.tracking_results import tracking_rows, write_tracking_results
from stridegen.logs.base import Scene
from stridegen.pipeline.detect.base import Detector
from stridegen.pipeline.track_base import DetectingTracker, Tracker, detect_global


def top_boxes(boxes: Boxes, limit: int) -> tuple[Boxes, int]:
    """At most ``limit`` of ``boxes``, the highest scores kept in their order, and how many were dropped."""
    if len(boxes) <= limit:
        return boxes, 0
    keep = np.sort(np.argsort(-boxes.score, kind="stable")[:limit])
    return boxes[keep], len(boxes) - limit


def detect_scene(
    scene: Scene,
    detector: Detector | DetectingTracker,
    name: str = "detector",
    max_boxes_per_sample: int = MAX_BOXES_PER_SAMPLE,
) -> tuple[list[Boxes], int]:
    """``detector`` on every frame of ``scene``: per frame its global-frame boxes (boxes in another frame are an
    error naming the backend ``name``), and how many were dropped: a sample's boxes beyond
    ``max_boxes_per_sample`` (the results format's limit), lowest scores first."""
    out: list[Boxes] = []
    truncated = 0
    for frame in scene.frames:
        boxes, dropped = top_boxes(detect_global(detector, frame, name), max_boxes_per_sample)
        out.append(boxes)
        truncated += dropped
    return out, truncated


def track_scene_rows(scene: Scene, detections: Sequence[Boxes], tracker: Tracker) -> dict[str, list[dict]]:
    """Track one scene's per-frame detections with ``tracker`` (a tracker backend); its frames' results rows."""
    tracked = tracker.track(list(detections), cast("Sequence[float]", scene.timestamps_s))
    return {
        frame.token: tracking_rows(scene.name, frame.token, boxes)
        for frame, boxes in zip(scene.frames, tracked, strict=True)
    }


def detection_rows(scene: Scene, boxes: Sequence[Boxes]) -> dict[str, list[dict]]:
    """One scene's per-frame boxes (``detect_scene``'s) as detection-results rows, per frame token in frame order."""
    tokens = [f.token for f in scene.frames]
    rows: dict[str, list[dict]] = results_dict(to_detection_boxes(list(zip(tokens, boxes, strict=True))), tokens)
    return rows


def scene_records(scene: Scene, rows: dict[str, list[dict]]) -> list[dict[str, Any]]:
    """A scene's rows as the records of its part: per frame ``{"sample_token", "rows"}`` in frame order."""
    return [{"sample_token": f.token, "rows": rows[f.token]} for f in scene.frames]


@dataclass
class ResultsFileCounts:
    """What a results file holds: entries (samples), boxes per class, distinct tracking ids (tracking files)."""

    n_samples: int
    class_counts: dict[str, int]
    n_tracks: int = 0


def _class_counts(labels: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    return dict(sorted(counts.items()))


def write_results_file(
    out: Path, records: Iterable[dict[str, Any]], tracking: bool, log_tokens: Sequence[str]
) -> ResultsFileCounts:
    """The results file ``out`` from the scenes' part records (``scene_records``'s, in log order). Detection: an
    entry for every sample of the log (``log_tokens``), empty where no scene gave rows; tracking: for the samples
    of the records."""
    parts = [(r["sample_token"], r["rows"]) for r in records]
    rows = [row for _, sample in parts for row in sample]
    results: dict[str, list[dict[str, Any]]]
    if not tracking:
        results = {token: [] for token in log_tokens}
        results.update(parts)
        write_results_dict(out, results)
        return ResultsFileCounts(len(results), _class_counts(row["detection_name"] for row in rows))
    results = dict(parts)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_tracking_results(out, results)
    counts = _class_counts(row["tracking_name"] for row in rows)
    return ResultsFileCounts(len(results), counts, len({row["tracking_id"] for row in rows}))
