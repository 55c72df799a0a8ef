"""A scene's detections and tracks as nuScenes results rows: what a worker of ``stridegen detect`` / ``track``
(``stridegen.run.detect``) and ``stridegen validate`` do to one scene."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np

from stridegen.core.boxes import Boxes
from stridegen.formats.nuscenes_results import MAX_BOXES_PER_SAMPLE
from stridegen.formats.tracking_results import tracking_rows
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
