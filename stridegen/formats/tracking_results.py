"""Read and validate nuScenes tracking-results JSON files.

Format (https://www.nuscenes.org/tracking, "Results format"; the devkit reads it with ``load_prediction`` and
``TrackingBox.deserialize``)::

    {"meta": {"use_camera", "use_lidar", "use_radar", "use_map", "use_external"},
     "results": {sample_token: [{"sample_token", "translation": [x, y, z], "size": [w, l, h],
                                 "rotation": [w, x, y, z], "velocity": [vx, vy], "tracking_id",
                                 "tracking_name", "tracking_score"}, ...]}}

The document and every box get the checks shared with detection results (stridegen/formats/results_json.py:
``meta`` flags, finite numbers, size > 0, unit rotation, score in [0, 1], class name, at most 500 boxes a sample;
a NaN velocity is accepted and counted, velocities play no part in the tracking metrics). This module adds what is
tracking's own: ``tracking_id`` a non-empty string or an integer, used at most once in a sample (the devkit's
interpolation and matching would silently mis-handle a repeat). An optional integer ``num_pts`` is kept: the
devkit reads it too and drops boxes where it is 0. Every problem raises ``PredictionFormatError`` naming the file,
the sample token, the box index and the field.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from stridegen.core.boxes import Boxes
from stridegen.core.errors import PredictionFormatError
from stridegen.core.vocabulary import TRACKING_CLASSES
from stridegen.formats.results_json import (
    LIDAR_ONLY_META,
    MAX_BOXES_PER_SAMPLE,
    BoxSpec,
    DroppedMeta,
    box_location,
    check_box,
    check_meta,
    read_results_json,
    results_samples,
    shown,
)


def tracking_spec(class_names: Collection[str] = TRACKING_CLASSES) -> BoxSpec:
    """The tracking box: ``tracking_name`` one of ``class_names``, ``tracking_score``, and ``tracking_id``."""
    return BoxSpec("tracking_name", "tracking_score", frozenset(class_names), ("tracking_id",))


REQUIRED_FIELDS: tuple[str, ...] = tracking_spec().required_fields


@dataclass
class TrackingResults:
    """A validated results file: one row per box, in file order."""

    path: str
    meta: dict[str, bool]  # the five flags of the format; other meta keys are only named in meta_dropped
    sample_tokens: list[str]  # keys of "results", in file order
    sample_token: np.ndarray  # [N] object
    translation: np.ndarray  # [N, 3] global frame
    size_wlh: np.ndarray  # [N, 3]
    rotation: np.ndarray  # [N, 4] [w, x, y, z]
    velocity: np.ndarray  # [N, 2]
    tracking_id: np.ndarray  # [N] object (str)
    tracking_name: np.ndarray  # [N] object (str)
    tracking_score: np.ndarray  # [N]
    num_pts: np.ndarray  # [N] optional "num_pts" of the file, -1 where absent (0 is filtered, as in the devkit)
    nan_velocity: int  # boxes with a NaN velocity (accepted, unused by the metrics)
    meta_dropped: DroppedMeta = field(default_factory=DroppedMeta)  # meta keys other than the five flags

    def __len__(self) -> int:
        return self.translation.shape[0]


def _check_box(path: Path, key: str, index: int, box: object, spec: BoxSpec) -> tuple:
    """Validated values of one entry as a tuple (sample token, translation, size, rotation, velocity, tracking id,
    name, score, num_pts); velocity may hold NaN."""
    common = check_box(path, key, index, box, spec)
    assert isinstance(box, dict)  # check_box raised otherwise
    track_id = box["tracking_id"]
    if isinstance(track_id, bool) or not isinstance(track_id, (str, int)) or str(track_id) == "":
        raise PredictionFormatError(
            path,
            f"{box_location(key, index)}: field 'tracking_id' must be a non-empty string or an integer, "
            f"got {shown(track_id)}",
        )
    return (
        key,
        common.translation,
        common.size,
        common.rotation,
        common.velocity,
        str(track_id),
        common.name,
        common.score,
        common.num_pts,
    )


def parse_tracking_results(
    data: object,
    path: str | Path = "<results>",
    class_names: Collection[str] = TRACKING_CLASSES,
    max_boxes_per_sample: int = MAX_BOXES_PER_SAMPLE,
    known_sample_tokens: Collection[str] | None = None,
) -> TrackingResults:
    """Validate an already decoded results document (see the module docstring for what is checked).

    ``known_sample_tokens``: the ground-truth samples; a results key outside them is an error (wrong split or
    wrong log).
    """
    path = Path(path)
    meta, dropped, samples = results_samples(
        data,
        path,
        max_boxes_per_sample=max_boxes_per_sample,
        known_sample_tokens=known_sample_tokens,
        allow_missing_samples=True,
    )
    spec = tracking_spec(class_names)
    rows: list[tuple] = []
    for key, boxes in samples:
        seen: dict[str, int] = {}
        for i, box in enumerate(boxes):
            row = _check_box(path, key, i, box, spec)
            if row[5] in seen:
                raise PredictionFormatError(
                    path,
                    f"{box_location(key, i)}: tracking_id {shown(row[5])} already used by box {seen[row[5]]} "
                    "of the same sample",
                )
            seen[row[5]] = i
            rows.append(row)
    return _rows_to_results(path, meta, dropped, [key for key, _ in samples], rows)


def _rows_to_results(
    path: Path, meta: dict[str, bool], dropped: DroppedMeta, keys: list[str], rows: list[tuple]
) -> TrackingResults:
    if rows:
        tokens, translation, size, rotation, velocity, ids, names, scores, num_pts = zip(*rows, strict=True)
    else:
        # empty tuples: the reshapes below give the (0, 3) / (0, 4) / (0, 2) float arrays
        tokens = translation = size = rotation = velocity = ids = names = scores = num_pts = ()
    velocity_arr = np.array(velocity, dtype=np.float64).reshape(-1, 2)
    return TrackingResults(
        path=str(path),
        meta=meta,
        sample_tokens=keys,
        sample_token=_objects(tokens),
        translation=np.array(translation, dtype=np.float64).reshape(-1, 3),
        size_wlh=np.array(size, dtype=np.float64).reshape(-1, 3),
        rotation=np.array(rotation, dtype=np.float64).reshape(-1, 4),
        velocity=velocity_arr,
        tracking_id=_objects(ids),
        tracking_name=_objects(names),
        tracking_score=np.array(scores, dtype=np.float64).reshape(-1),
        num_pts=np.array(num_pts, dtype=np.int64).reshape(-1),
        nan_velocity=int(np.isnan(velocity_arr).any(axis=1).sum()),
        meta_dropped=dropped,
    )


def _objects(values) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


def load_tracking_results(
    path: str | Path,
    class_names: Collection[str] = TRACKING_CLASSES,
    max_boxes_per_sample: int = MAX_BOXES_PER_SAMPLE,
    known_sample_tokens: Collection[str] | None = None,
) -> TrackingResults:
    """Read and validate a tracking-results JSON file."""
    path = Path(path)
    return parse_tracking_results(read_results_json(path), path, class_names, max_boxes_per_sample, known_sample_tokens)


def write_tracking_results(path: str | Path, results: dict[str, list[dict]], meta: dict | None = None) -> None:
    """Write ``{"meta", "results"}`` (``results``: sample token -> list of box dicts) as the devkit expects;
    ``meta`` defaults to a LiDAR-only method's flags and must hold the five flags (PredictionFormatError)."""
    meta = dict(LIDAR_ONLY_META) if meta is None else meta
    check_meta(Path(path), meta)
    Path(path).write_text(json.dumps({"meta": meta, "results": results}))


def tracking_rows(scene_name: str, sample_token: str, boxes: Boxes) -> list[dict]:
    """A sample's tracked boxes as nuScenes tracking-results rows: the tracking classes only, tracking id
    ``scene/track``, tracking score = the box's score, velocity from the boxes (NaN -> 0)."""
    quat = boxes.extras.get("rotation_global")  # the full rotation a log reader kept (logs.box_rotation)
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
