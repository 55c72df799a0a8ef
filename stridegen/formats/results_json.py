"""Shared reading and validation of nuScenes results JSON files: detection and tracking get the same checks.

The format (https://www.nuscenes.org/object-detection and https://www.nuscenes.org/tracking, "Results format";
nuscenes-devkit python-sdk/nuscenes/eval/{detection,tracking}/README.md)::

    {"meta": {"use_camera": bool, "use_lidar": bool, "use_radar": bool, "use_map": bool, "use_external": bool},
     "results": {sample_token: [box, ...]}}

What every results file must satisfy here (``results_samples``, ``check_meta``, ``check_box``); the devkit's own
loader (nuscenes/eval/common/loaders.py ``load_prediction``, ``EvalBox``, ``DetectionBox``, ``TrackingBox``)
asserts the starred rules, the others are the documented format or guard against a silent mis-evaluation:

* ``meta`` and ``results`` present (*); ``meta`` holds the five flags above as booleans (the devkit's submission
  checkers, e.g. eval/lidarseg/validate_submission.py, demand exactly those); other ``meta`` keys are dropped,
  only their count and names are kept, so a huge key never reaches a summary;
* at most ``max_boxes_per_sample`` (500 in the devkit configs) boxes in a sample (*);
* every box holds ``sample_token``, ``translation``, ``size``, ``rotation``, ``velocity``, its class name and its
  score (plus the format's own fields); ``sample_token`` equals the key it is listed under;
* ``translation`` 3 finite numbers (*), ``size`` 3 finite numbers each > 0, ``rotation`` 4 finite numbers (*) with
  a norm within ``QUATERNION_NORM_TOL`` (0.01) of 1, ``velocity`` 2 numbers (*), each finite or NaN (the devkit
  accepts NaN: it marks an unknown velocity; an infinite one is rejected);
* the class name one of the format's classes (*); the score a number in [0, 1] (the README: "Object prediction
  score between 0 and 1"; the devkit asserts a non-NaN float);
* an optional ``num_pts`` an integer (*; the devkit drops boxes whose ``num_pts`` is 0).

Rotation tolerance: a quaternion whose norm is within 0.01 of 1 is kept as written (every consumer normalises it,
as the devkit's pyquaternion does); a printed quaternion rounded to two decimals is still accepted, while Euler
angles, a zero quaternion or a rotation matrix written as a quaternion are far outside.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stridegen.core.errors import PredictionFormatError
from stridegen.formats.textfile import load_json

# The five flags of the results format's "meta" block (nuScenes detection/tracking README, "Results format").
META_KEYS: tuple[str, ...] = ("use_camera", "use_lidar", "use_radar", "use_map", "use_external")
# What the writers put there when given nothing: a LiDAR-only method.
LIDAR_ONLY_META: dict[str, bool] = {
    "use_camera": False,
    "use_lidar": True,
    "use_radar": False,
    "use_map": False,
    "use_external": False,
}
MAX_DROPPED_META_KEYS = 20  # names of dropped meta keys recorded in a summary
MAX_META_KEY_CHARS = 64  # a dropped key's name is cut to this length
MAX_BOXES_PER_SAMPLE = 500  # devkit configs detection_cvpr_2019.json / tracking_nips_2019.json max_boxes_per_sample
QUATERNION_NORM_TOL = 1e-2  # |norm - 1| beyond this is a bug (Euler angles, zeros), not rounding
SCORE_RANGE = (0.0, 1.0)  # devkit README: "Object prediction score between 0 and 1"
COMMON_FIELDS: tuple[str, ...] = ("sample_token", "translation", "size", "rotation", "velocity")


def read_results_json(path: Path) -> object:
    """Decode a results file; a missing or unreadable file, one over the size limit, invalid JSON, JSON nested
    deeper than the limit or a repeated object key (JSON would keep only the last one silently) raises
    PredictionFormatError naming the file (stridegen.core.bounded_json, the reader of every JSON input)."""
    return load_json(path, "results file", PredictionFormatError, reject_duplicates=True)


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def shown(value: object, limit: int = 120) -> str:
    """``repr(value)`` cut to ``limit`` characters, so that a message never carries a huge value of the file."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def _as_float(value: int | float) -> float:
    try:
        return float(value)
    except OverflowError:  # an integer literal beyond the float range
        return math.inf


def number_vector(path: Path, where: str, name: str, value: object, length: int, allow_nan: bool) -> list[float]:
    """A list of ``length`` finite numbers (NaN allowed with ``allow_nan``), or PredictionFormatError."""
    if not isinstance(value, (list, tuple)) or len(value) != length:
        got = f"{len(value)} values" if isinstance(value, (list, tuple)) else type(value).__name__
        raise PredictionFormatError(path, f"{where}: field {name!r} must be a list of {length} numbers, got {got}")
    if not all(is_number(v) for v in value):
        raise PredictionFormatError(
            path, f"{where}: field {name!r} must be a list of {length} numbers; it holds a non-number: {shown(value)}"
        )
    numbers = [_as_float(v) for v in value]
    if any(math.isinf(v) or (math.isnan(v) and not allow_nan) for v in numbers):
        raise PredictionFormatError(
            path, f"{where}: field {name!r} has a non-finite value (not finite): {shown(value)}"
        )
    return numbers


def results_samples(
    data: object,
    path: Path,
    *,
    max_boxes_per_sample: int,
    known_sample_tokens: Collection[str] | None,
    allow_missing_samples: bool,
) -> tuple[dict[str, bool], DroppedMeta, list[tuple[str, list[Any]]]]:
    """The checks every nuScenes results document gets (detection and tracking alike): an object with ``meta``
    (see ``check_meta``) and ``results`` {sample token: [box, ...]}, every key a ground-truth sample when those
    are given (and every ground-truth sample a key unless ``allow_missing_samples``), every value a list of at
    most ``max_boxes_per_sample`` boxes. Returns the meta flags, the dropped meta keys and the (sample token,
    boxes) pairs in file order; the boxes themselves are checked with ``check_box``."""
    if not isinstance(data, dict):
        raise PredictionFormatError(path, "top level must be an object with 'meta' and 'results'")
    for key in ("meta", "results"):
        if key not in data:
            raise PredictionFormatError(path, f"missing top-level field {key!r}")
    meta, dropped = check_meta(path, data["meta"])
    results = data["results"]
    if not isinstance(results, dict):
        raise PredictionFormatError(path, "field 'results' must be an object {sample_token: [boxes]}")
    if known_sample_tokens is not None:
        _check_sample_keys(path, results, known_sample_tokens, allow_missing_samples)
    samples: list[tuple[str, list[Any]]] = []
    for key, boxes in results.items():
        if not isinstance(boxes, list):
            raise PredictionFormatError(path, f"sample {shown(key)}: value must be a list of boxes")
        if len(boxes) > max_boxes_per_sample:
            raise PredictionFormatError(
                path, f"sample {shown(key)}: {len(boxes)} boxes; at most {max_boxes_per_sample} per sample are allowed"
            )
        samples.append((key, boxes))
    return meta, dropped, samples


def _check_sample_keys(
    path: Path, results: dict, known_sample_tokens: Collection[str], allow_missing_samples: bool
) -> None:
    known = set(known_sample_tokens)
    unknown = [t for t in results if t not in known]
    if unknown:
        raise PredictionFormatError(
            path,
            f"{len(unknown)} sample token(s) are not in the ground truth, e.g. "
            f"{', '.join(shown(t) for t in unknown[:3])} (wrong split or wrong log?)",
        )
    if not allow_missing_samples:
        missing = [t for t in known_sample_tokens if t not in results]
        if missing:
            raise PredictionFormatError(
                path,
                f"{len(missing)} ground-truth sample(s) have no entry in 'results', e.g. {missing[:3]} "
                "(give them an empty list)",
            )


# ------------------------------------------------------------------------------------------------------- meta
@dataclass(frozen=True)
class DroppedMeta:
    """The keys of a results file's ``meta`` other than the five flags: counted and named (capped), never kept,
    so that a huge extra key cannot reach a summary."""

    count: int = 0
    keys: tuple[str, ...] = ()  # at most MAX_DROPPED_META_KEYS names, each cut to MAX_META_KEY_CHARS

    @classmethod
    def of(cls, names: Sequence[object]) -> DroppedMeta:
        return cls(len(names), tuple(_shown_key(str(k)) for k in names[:MAX_DROPPED_META_KEYS]))


def _shown_key(key: str) -> str:
    return key if len(key) <= MAX_META_KEY_CHARS else key[:MAX_META_KEY_CHARS] + "..."


def check_meta(path: Path, meta: object) -> tuple[dict[str, bool], DroppedMeta]:
    """``meta`` must be an object holding the five flags of the nuScenes results format (``META_KEYS``) as JSON
    booleans. Returns the flags (in ``META_KEYS`` order) and what was dropped: other keys are allowed, but only
    their count and (capped) names are kept, never their values."""
    if not isinstance(meta, dict):
        raise PredictionFormatError(path, f"field 'meta' must be an object, got {type(meta).__name__}")
    missing = [k for k in META_KEYS if k not in meta]
    if missing:
        raise PredictionFormatError(
            path, f"field 'meta' lacks {missing}; the results format needs all of {list(META_KEYS)} (true/false)"
        )
    wrong = {k: type(meta[k]).__name__ for k in META_KEYS if not isinstance(meta[k], bool)}
    if wrong:
        raise PredictionFormatError(path, f"field 'meta': {list(wrong)} must be true or false, got types {wrong}")
    return {k: meta[k] for k in META_KEYS}, DroppedMeta.of([k for k in meta if k not in META_KEYS])


def summary_meta(meta: Mapping[str, object], dropped: DroppedMeta | None = None) -> dict:
    """``{"meta": {flag: value}, "meta_dropped": {"count", "keys"}}`` for an evaluation summary: only the five
    flags of ``meta`` are copied (when booleans); any other key is added to what ``dropped`` says was dropped."""
    dropped = dropped or DroppedMeta()
    flags = {k: meta[k] for k in META_KEYS if isinstance(meta.get(k), bool)}
    extra = DroppedMeta.of([k for k in meta if k not in flags])
    return {
        "meta": flags,
        "meta_dropped": {
            "count": dropped.count + extra.count,
            "keys": [*dropped.keys, *extra.keys][:MAX_DROPPED_META_KEYS],
        },
    }


# ------------------------------------------------------------------------------------------------------ boxes
@dataclass(frozen=True)
class BoxSpec:
    """What differs between a detection box and a tracking box: the class-name and score fields, the classes
    accepted, and the format's own required fields (checked for presence here, for value by the format)."""

    name_field: str
    score_field: str
    class_names: frozenset[str]
    own_fields: tuple[str, ...]

    @property
    def required_fields(self) -> tuple[str, ...]:
        return (*COMMON_FIELDS, self.name_field, self.score_field, *self.own_fields)


@dataclass(frozen=True)
class CheckedBox:
    """The fields every results box has, validated (``velocity`` may hold NaN)."""

    sample_token: str
    translation: list[float]
    size: list[float]
    rotation: list[float]
    velocity: list[float]
    name: str
    score: float
    num_pts: int  # optional in the file; -1 when absent (the devkit drops boxes whose num_pts is 0)


def box_location(key: str, index: int) -> str:
    """How every message names one box."""
    return f"sample {shown(key)}, box {index}"


def check_box(path: Path, key: str, index: int, box: object, spec: BoxSpec) -> CheckedBox:
    """The checks every results box gets, detection and tracking alike (the rules are listed in the module
    docstring). Errors are PredictionFormatError naming the file, the sample, the box index and the field."""
    where = box_location(key, index)
    if not isinstance(box, dict):
        raise PredictionFormatError(path, f"{where}: a box must be an object, got {type(box).__name__}")
    missing = [f for f in spec.required_fields if f not in box]
    if missing:
        raise PredictionFormatError(path, f"{where}: missing field(s) {missing}")
    if box["sample_token"] != key:
        raise PredictionFormatError(
            path,
            f"{where}: field 'sample_token' is {shown(box['sample_token'])}, but the box is listed under {shown(key)}",
        )
    translation = number_vector(path, where, "translation", box["translation"], 3, allow_nan=False)
    size = number_vector(path, where, "size", box["size"], 3, allow_nan=False)
    if min(size) <= 0:
        raise PredictionFormatError(path, f"{where}: field 'size' must be > 0 in every dimension, got {size}")
    rotation = number_vector(path, where, "rotation", box["rotation"], 4, allow_nan=False)
    norm = math.sqrt(sum(v * v for v in rotation))
    if abs(norm - 1.0) > QUATERNION_NORM_TOL:
        raise PredictionFormatError(
            path,
            f"{where}: field 'rotation' is not a unit quaternion [w, x, y, z]: norm {norm:.6g}, "
            f"more than {QUATERNION_NORM_TOL:g} from 1",
        )
    velocity = number_vector(path, where, "velocity", box["velocity"], 2, allow_nan=True)
    name = box[spec.name_field]
    if not isinstance(name, str) or name not in spec.class_names:
        raise PredictionFormatError(
            path, f"{where}: field {spec.name_field!r} {shown(name)} is not one of {sorted(spec.class_names)}"
        )
    score = box[spec.score_field]
    if not is_number(score) or not SCORE_RANGE[0] <= score <= SCORE_RANGE[1]:  # NaN fails both comparisons
        raise PredictionFormatError(
            path, f"{where}: field {spec.score_field!r} must be a number in [0, 1], got {shown(score)}"
        )
    num_pts = box.get("num_pts", -1)
    if isinstance(num_pts, bool) or not isinstance(num_pts, int):
        raise PredictionFormatError(path, f"{where}: optional field 'num_pts' must be an integer, got {shown(num_pts)}")
    return CheckedBox(key, translation, size, rotation, velocity, name, float(score), num_pts)
