"""Read and validate nuScenes tracking-results JSON files.

Format (https://www.nuscenes.org/tracking, "Results format"; the devkit reads it with ``load_prediction`` and
``TrackingBox.deserialize``)::

    {"meta": {...},
     "results": {sample_token: [{"sample_token", "translation": [x, y, z], "size": [w, l, h],
                                 "rotation": [w, x, y, z], "velocity": [vx, vy], "tracking_id",
                                 "tracking_name", "tracking_score"}, ...]}}

Every problem raises ``PredictionFormatError`` naming the file, the sample token, the box index and the field:
missing or mistyped fields, non-finite numbers (a NaN velocity is accepted: velocities play no part in the
tracking metrics, and the devkit accepts them), unknown class names, an entry whose ``sample_token`` differs from
its key, a key given twice (JSON would keep only the last), a tracking id used twice in one sample (the devkit's
interpolation and matching would silently mis-handle it), more than ``max_boxes_per_sample`` boxes.
An optional integer ``num_pts`` is kept: the devkit reads it too and drops boxes where it is 0.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from stridegen.core.errors import PredictionFormatError
from stridegen.core.vocabulary import TRACKING_CLASSES
from stridegen.formats.results_json import is_number, number_vector, read_results_json, results_samples

REQUIRED_FIELDS: tuple[str, ...] = (
    "sample_token",
    "translation",
    "size",
    "rotation",
    "velocity",
    "tracking_id",
    "tracking_name",
    "tracking_score",
)
_VECTOR_FIELDS = {"translation": 3, "size": 3, "rotation": 4, "velocity": 2}


@dataclass
class TrackingResults:
    """A validated results file: one row per box, in file order."""

    path: str
    meta: dict
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

    def __len__(self) -> int:
        return self.translation.shape[0]


def _vector(path: Path, where: str, name: str, value: object, allow_nan: bool) -> list[float]:
    return number_vector(path, where, name, value, _VECTOR_FIELDS[name], allow_nan)


def _check_box(path: Path, key: str, index: int, box: object, class_names: Collection[str]) -> tuple:
    where = f"results[{key!r}][{index}]"
    if not isinstance(box, dict):
        raise PredictionFormatError(path, f"{where}: a box must be an object, got {type(box).__name__}")
    missing = [f for f in REQUIRED_FIELDS if f not in box]
    if missing:
        raise PredictionFormatError(path, f"{where}: missing field(s) {missing}")
    if box["sample_token"] != key:
        raise PredictionFormatError(path, f"{where}: sample_token {box['sample_token']!r} differs from its key")
    translation = _vector(path, where, "translation", box["translation"], allow_nan=False)
    size = _vector(path, where, "size", box["size"], allow_nan=False)
    rotation = _vector(path, where, "rotation", box["rotation"], allow_nan=False)
    velocity = _vector(path, where, "velocity", box["velocity"], allow_nan=True)
    track_id = box["tracking_id"]
    if isinstance(track_id, bool) or not isinstance(track_id, (str, int)) or str(track_id) == "":
        raise PredictionFormatError(
            path, f"{where}: field 'tracking_id' must be a non-empty string or an integer, got {track_id!r}"
        )
    name = box["tracking_name"]
    if name not in class_names:
        raise PredictionFormatError(path, f"{where}: tracking_name {name!r} is not one of {sorted(class_names)}")
    score = box["tracking_score"]
    if not is_number(score) or not math.isfinite(float(score)):
        raise PredictionFormatError(path, f"{where}: field 'tracking_score' must be a finite number, got {score!r}")
    num_pts = box.get("num_pts", -1)  # optional; the devkit drops boxes with num_pts == 0
    if isinstance(num_pts, bool) or not isinstance(num_pts, int):
        raise PredictionFormatError(path, f"{where}: optional field 'num_pts' must be an integer, got {num_pts!r}")
    return key, translation, size, rotation, velocity, str(track_id), str(name), float(score), num_pts


def parse_tracking_results(
    data: object,
    path: str | Path = "<results>",
    class_names: Collection[str] = TRACKING_CLASSES,
    max_boxes_per_sample: int = 500,
    known_sample_tokens: Collection[str] | None = None,
) -> TrackingResults:
    """Validate an already decoded results document (see the module docstring for what is checked).

    ``known_sample_tokens``: the ground-truth samples; a results key outside them is an error (wrong split or
    wrong log).
    """
    path = Path(path)
    meta, samples = results_samples(
        data,
        path,
        meta_required=False,
        max_boxes_per_sample=max_boxes_per_sample,
        known_sample_tokens=known_sample_tokens,
        allow_missing_samples=True,
        label=lambda key: f"results[{key!r}]",
    )
    class_set = set(class_names)
    rows: list[tuple] = []
    for key, boxes in samples:
        seen: dict[str, int] = {}
        for i, box in enumerate(boxes):
            row = _check_box(path, key, i, box, class_set)
            if row[5] in seen:
                raise PredictionFormatError(
                    path,
                    f"results[{key!r}][{i}]: tracking_id {row[5]!r} already used by "
                    f"box {seen[row[5]]} of the same sample",
                )
            seen[row[5]] = i
            rows.append(row)
    return _rows_to_results(path, meta, [key for key, _ in samples], rows)


def _rows_to_results(path: Path, meta: dict, keys: list[str], rows: list[tuple]) -> TrackingResults:
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
    )


def _objects(values) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


def load_tracking_results(
    path: str | Path,
    class_names: Collection[str] = TRACKING_CLASSES,
    max_boxes_per_sample: int = 500,
    known_sample_tokens: Collection[str] | None = None,
) -> TrackingResults:
    """Read and validate a tracking-results JSON file."""
    path = Path(path)
    return parse_tracking_results(read_results_json(path), path, class_names, max_boxes_per_sample, known_sample_tokens)


def write_tracking_results(path: str | Path, results: dict[str, list[dict]], meta: dict | None = None) -> None:
    """Write ``{"meta", "results"}`` (``results``: sample token -> list of box dicts) as the devkit expects."""
    content = {
        "meta": meta
        or {"use_camera": False, "use_lidar": True, "use_radar": False, "use_map": False, "use_external": False},
        "results": results,
    }
    Path(path).write_text(json.dumps(content))
