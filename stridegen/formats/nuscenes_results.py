"""Read, validate and write nuScenes detection-results JSON files.

Format (https://www.nuscenes.org/object-detection, "Results format"; the devkit reads it in
nuscenes/eval/common/loaders.py ``load_prediction`` and ``DetectionBox.deserialize``)::

    {"meta": {...},
     "results": {sample_token: [{"sample_token", "translation": [x, y, z], "size": [w, l, h],
                                 "rotation": [w, x, y, z], "velocity": [vx, vy], "detection_name",
                                 "detection_score", "attribute_name"}, ...]}}

Every problem raises ``PredictionFormatError`` naming the file, the sample token, the box index and the field.
The devkit would either crash with an assertion or silently evaluate something else for most of these: an entry
whose ``sample_token`` differs from its key, duplicated keys (JSON keeps the last one), duplicated boxes.
The one accepted irregularity is a NaN velocity, which the devkit accepts (the box then counts as unknown in
mAVE); it is counted and reported in ``LoadedResults.nan_velocity``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from stridegen.core.errors import PredictionFormatError
from stridegen.core.vocabulary import ATTRIBUTE_NAMES, DETECTION_NAMES
from stridegen.formats.detection_boxes import DetectionBoxes
from stridegen.formats.results_json import is_number, number_vector, read_results_json, results_samples

REQUIRED_FIELDS: tuple[str, ...] = (
    "sample_token",
    "translation",
    "size",
    "rotation",
    "velocity",
    "detection_name",
    "detection_score",
    "attribute_name",
)
MAX_BOXES_PER_SAMPLE = 500  # devkit detection_cvpr_2019.json max_boxes_per_sample
_VECTOR_FIELDS = {"translation": 3, "size": 3, "rotation": 4, "velocity": 2}
_QUATERNION_NORM_TOL = 1e-2  # a results quaternion farther than this from unit norm is a bug, not rounding


@dataclass
class LoadedResults:
    """A validated results file: boxes in file order, the meta block and what was noticed on the way."""

    boxes: DetectionBoxes
    meta: dict
    sample_tokens: list[str]  # the keys of "results", in file order
    nan_velocity: int  # boxes whose velocity is NaN (accepted; they do not count in mAVE)
    path: str


def _vector(path: Path, where: str, name: str, value: object, allow_nan: bool) -> list[float]:
    return number_vector(path, where, name, value, _VECTOR_FIELDS[name], allow_nan)


def _check_box(path: Path, key: str, index: int, box: object) -> tuple:
    """Validated values of one entry as a tuple in REQUIRED_FIELDS order (velocity may hold NaN)."""
    where = f"sample {key!r}, box {index}"
    if not isinstance(box, dict):
        raise PredictionFormatError(path, f"{where}: each box must be an object, got {type(box).__name__}")
    missing = [f for f in REQUIRED_FIELDS if f not in box]
    if missing:
        raise PredictionFormatError(path, f"{where}: missing field(s) {missing}")
    if box["sample_token"] != key:
        raise PredictionFormatError(
            path, f"{where}: field 'sample_token' is {box['sample_token']!r}, but the box is listed under {key!r}"
        )
    translation = _vector(path, where, "translation", box["translation"], allow_nan=False)
    size = _vector(path, where, "size", box["size"], allow_nan=False)
    if min(size) <= 0:
        raise PredictionFormatError(path, f"{where}: field 'size' must be > 0, got {size}")
    rotation = _vector(path, where, "rotation", box["rotation"], allow_nan=False)
    norm = math.sqrt(sum(v * v for v in rotation))
    if abs(norm - 1.0) > _QUATERNION_NORM_TOL:
        raise PredictionFormatError(
            path, f"{where}: field 'rotation' is not a unit quaternion [w, x, y, z] (norm {norm:.4f})"
        )
    velocity = _vector(path, where, "velocity", box["velocity"], allow_nan=True)
    name = box["detection_name"]
    if name not in DETECTION_NAMES:
        raise PredictionFormatError(
            path, f"{where}: field 'detection_name' {name!r} is not one of {list(DETECTION_NAMES)}"
        )
    score = box["detection_score"]
    if not is_number(score) or not math.isfinite(score) or score < 0:
        raise PredictionFormatError(
            path, f"{where}: field 'detection_score' must be a finite number >= 0, got {score!r}"
        )
    attribute = box["attribute_name"]
    if attribute != "" and attribute not in ATTRIBUTE_NAMES:
        raise PredictionFormatError(
            path, f"{where}: field 'attribute_name' {attribute!r} is not '' or one of {list(ATTRIBUTE_NAMES)}"
        )
    return key, translation, size, rotation, velocity, name, float(score), attribute


def load_results(
    path: str | Path,
    known_sample_tokens: Collection[str] | None = None,
    max_boxes_per_sample: int = MAX_BOXES_PER_SAMPLE,
    allow_missing_samples: bool = False,
) -> LoadedResults:
    """Read and validate a results file.

    ``known_sample_tokens``: the samples of the ground truth. A results key outside it is an error; a known
    sample without a key is an error too (the devkit asserts both sets are equal) unless
    ``allow_missing_samples``, in which case it simply has no predictions.
    """
    path = Path(path)
    meta, samples = results_samples(
        read_results_json(path),
        path,
        meta_required=True,
        max_boxes_per_sample=max_boxes_per_sample,
        known_sample_tokens=known_sample_tokens,
        allow_missing_samples=allow_missing_samples,
        label=lambda key: f"sample {key!r}",
    )
    rows: list[tuple] = []
    for key, boxes in samples:
        seen: dict[tuple, int] = {}
        for i, box in enumerate(boxes):
            row = _check_box(path, key, i, box)
            # repr() so that NaN velocities compare equal to each other.
            fingerprint = tuple(repr(v) for v in row[1:])
            if fingerprint in seen:
                raise PredictionFormatError(
                    path, f"sample {key!r}: box {i} duplicates box {seen[fingerprint]} (every field equal)"
                )
            seen[fingerprint] = i
            rows.append(row)
    detections = _rows_to_boxes(rows)
    nan_velocity = int(np.isnan(detections.velocity).any(axis=1).sum())
    return LoadedResults(detections, meta, [key for key, _ in samples], nan_velocity, str(path))


def _rows_to_boxes(rows: list[tuple]) -> DetectionBoxes:
    if not rows:
        return DetectionBoxes.empty()
    tokens, translation, size, rotation, velocity, names, scores, attributes = zip(*rows, strict=True)
    return DetectionBoxes(
        np.array(tokens, dtype=object),
        np.array(translation),
        np.array(size),
        np.array(rotation),
        np.array(velocity),
        np.array(names, dtype=object),
        np.array(scores),
        np.array(attributes, dtype=object),
    )


def results_dict(boxes: DetectionBoxes, sample_tokens: Sequence[str] | None = None) -> dict:
    """``{sample_token: [box, ...]}`` for every token of ``sample_tokens`` (default: the boxes' own, in order of
    first appearance); samples without boxes get an empty list."""
    order = boxes.canonical_order()
    tokens = list(dict.fromkeys(boxes.sample_token[order])) if sample_tokens is None else list(sample_tokens)
    results: dict[str, list[dict]] = {t: [] for t in tokens}
    for i in order:
        token = str(boxes.sample_token[i])
        if token not in results:
            raise PredictionFormatError(
                "<results>", f"box {i} belongs to sample {token!r}, which is not among the sample tokens to write"
            )
        results[token].append(
            {
                "sample_token": token,
                "translation": boxes.translation[i].tolist(),
                "size": boxes.size[i].tolist(),
                "rotation": boxes.rotation[i].tolist(),
                "velocity": boxes.velocity[i].tolist(),
                "detection_name": str(boxes.detection_name[i]),
                "detection_score": float(boxes.detection_score[i]),
                "attribute_name": str(boxes.attribute_name[i]),
            }
        )
    return results


def write_results(
    path: str | Path, boxes: DetectionBoxes, meta: dict | None = None, sample_tokens: Sequence[str] | None = None
) -> Path:
    """Write a results file the devkit and ``load_results`` read back unchanged (NaN velocities stay NaN)."""
    path = Path(path)
    meta = (
        meta
        if meta is not None
        else {"use_camera": False, "use_lidar": True, "use_radar": False, "use_map": False, "use_external": False}
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"meta": meta, "results": results_dict(boxes, sample_tokens)}))
    return path
