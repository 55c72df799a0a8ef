"""Read, validate and write nuScenes detection-results JSON files.

Format (https://www.nuscenes.org/object-detection, "Results format"; the devkit reads it in
nuscenes/eval/common/loaders.py ``load_prediction`` and ``DetectionBox.deserialize``)::

    {"meta": {"use_camera", "use_lidar", "use_radar", "use_map", "use_external"},
     "results": {sample_token: [{"sample_token", "translation": [x, y, z], "size": [w, l, h],
                                 "rotation": [w, x, y, z], "velocity": [vx, vy], "detection_name",
                                 "detection_score", "attribute_name"}, ...]}}

The document and every box get the checks shared with tracking results (stridegen/formats/results_json.py:
``meta`` flags, finite numbers, size > 0, unit rotation, score in [0, 1], class name, at most 500 boxes a sample);
this module adds what is detection's own: ``attribute_name`` is "" or an attribute of the box's class (the devkit's
``detection_name_to_rel_attributes``; barrier and traffic_cone have none, so any attribute there is ignored, as the
devkit README says), and two boxes of a sample may not be equal in every field.
Every problem raises ``PredictionFormatError`` naming the file, the sample token, the box index and the field.
The one accepted irregularity is a NaN velocity, which the devkit accepts (the box then counts as unknown in
mAVE); it is counted and reported in ``LoadedResults.nan_velocity``.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from stridegen.core.errors import PredictionFormatError
from stridegen.core.vocabulary import ATTRIBUTE_NAMES, DETECTION_NAMES
from stridegen.formats.detection_boxes import DetectionBoxes
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

__all__ = [
    "CLASS_ATTRIBUTES",
    "DETECTION_SPEC",
    "MAX_BOXES_PER_SAMPLE",  # re-exported from results_json (stridegen/jobs/detect.py imports it from here)
    "REQUIRED_FIELDS",
    "LoadedResults",
    "load_results",
    "results_dict",
    "write_results",
    "write_results_dict",
]

DETECTION_SPEC = BoxSpec("detection_name", "detection_score", frozenset(DETECTION_NAMES), ("attribute_name",))
REQUIRED_FIELDS: tuple[str, ...] = DETECTION_SPEC.required_fields
# nuscenes-devkit eval/detection/utils.py detection_name_to_rel_attributes: the attributes of each class.
_VEHICLE_ATTRIBUTES = ("vehicle.moving", "vehicle.parked", "vehicle.stopped")
CLASS_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("car", "bus", "construction_vehicle", "trailer", "truck"), _VEHICLE_ATTRIBUTES),
    "pedestrian": ("pedestrian.moving", "pedestrian.sitting_lying_down", "pedestrian.standing"),
    **dict.fromkeys(("bicycle", "motorcycle"), ("cycle.with_rider", "cycle.without_rider")),
    "barrier": (),
    "traffic_cone": (),
}


@dataclass
class LoadedResults:
    """A validated results file: boxes in file order, the meta flags and what was noticed on the way."""

    boxes: DetectionBoxes
    meta: dict[str, bool]  # the five flags of the format; other meta keys are only named in meta_dropped
    sample_tokens: list[str]  # the keys of "results", in file order
    nan_velocity: int  # boxes whose velocity is NaN (accepted; they do not count in mAVE)
    path: str
    meta_dropped: DroppedMeta = field(default_factory=DroppedMeta)  # meta keys other than the five flags


def _check_attribute(path: Path, where: str, name: str, attribute: object) -> str:
    if attribute == "":
        return ""
    if not isinstance(attribute, str) or attribute not in ATTRIBUTE_NAMES:
        raise PredictionFormatError(
            path, f"{where}: field 'attribute_name' {shown(attribute)} is not '' or one of {list(ATTRIBUTE_NAMES)}"
        )
    allowed = CLASS_ATTRIBUTES[name]
    if allowed and attribute not in allowed:
        raise PredictionFormatError(
            path,
            f"{where}: field 'attribute_name' {attribute!r} is not '' or an attribute of {name!r}: {list(allowed)}",
        )
    return attribute


def _check_box(path: Path, key: str, index: int, box: object) -> tuple:
    """Validated values of one entry as a tuple (sample token, translation, size, rotation, velocity, name, score,
    attribute, num_pts); velocity may hold NaN."""
    common = check_box(path, key, index, box, DETECTION_SPEC)
    assert isinstance(box, dict)  # check_box raised otherwise
    attribute = _check_attribute(path, box_location(key, index), common.name, box["attribute_name"])
    return (
        key,
        common.translation,
        common.size,
        common.rotation,
        common.velocity,
        common.name,
        common.score,
        attribute,
        common.num_pts,
    )


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
    meta, dropped, samples = results_samples(
        read_results_json(path),
        path,
        max_boxes_per_sample=max_boxes_per_sample,
        known_sample_tokens=known_sample_tokens,
        allow_missing_samples=allow_missing_samples,
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
                    path, f"{box_location(key, i)}: duplicates box {seen[fingerprint]} (every field equal)"
                )
            seen[fingerprint] = i
            rows.append(row)
    detections = _rows_to_boxes(rows)
    nan_velocity = int(np.isnan(detections.velocity).any(axis=1).sum())
    return LoadedResults(detections, meta, [key for key, _ in samples], nan_velocity, str(path), dropped)


def _rows_to_boxes(rows: list[tuple]) -> DetectionBoxes:
    if not rows:
        return DetectionBoxes.empty()
    tokens, translation, size, rotation, velocity, names, scores, attributes, num_pts = zip(*rows, strict=True)
    return DetectionBoxes(
        np.array(tokens, dtype=object),
        np.array(translation),
        np.array(size),
        np.array(rotation),
        np.array(velocity),
        np.array(names, dtype=object),
        np.array(scores),
        np.array(attributes, dtype=object),
        np.array(num_pts, dtype=np.int64),  # optional in the file; -1 where absent, 0 is filtered as in the devkit
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
    """Write a results file the devkit and ``load_results`` read back unchanged (NaN velocities stay NaN);
    ``meta`` defaults to a LiDAR-only method's flags and must hold the five flags (PredictionFormatError)."""
    return write_results_dict(path, results_dict(boxes, sample_tokens), meta)


def write_results_dict(path: str | Path, results: dict[str, list[dict]], meta: dict | None = None) -> Path:
    """``write_results`` of rows made already (``results_dict``'s form: sample token -> box dicts, in order)."""
    path = Path(path)
    meta = meta if meta is not None else dict(LIDAR_ONLY_META)
    check_meta(path, meta)  # never write a file load_results would reject
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"meta": meta, "results": results}))
    return path
