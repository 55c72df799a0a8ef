"""Shared reading and field checks of nuScenes results JSON files (detection and tracking)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from stridegen.core.errors import PredictionFormatError


class _DuplicateKeyError(ValueError):
    pass


def _reject_duplicate_keys(pairs: list[tuple[str, object]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKeyError(key)
        out[key] = value
    return out


def read_results_json(path: Path) -> object:
    """Decode a results file; a missing or unreadable file, invalid JSON or a repeated object key (JSON would keep
    only the last one silently) raises PredictionFormatError naming the file."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise PredictionFormatError(path, "results file does not exist") from None
    except OSError as exc:
        raise PredictionFormatError(path, f"cannot read results file: {exc}") from exc
    try:
        return json.loads(text, object_pairs_hook=_reject_duplicate_keys)
    except _DuplicateKeyError as exc:
        raise PredictionFormatError(
            path, f"duplicate key {exc.args[0]!r} (a JSON object keeps only the last one; merge the lists instead)"
        ) from None
    except json.JSONDecodeError as exc:
        raise PredictionFormatError(path, f"not valid JSON: {exc}") from None


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def number_vector(path: Path, where: str, name: str, value: object, length: int, allow_nan: bool) -> list[float]:
    """A list of ``length`` finite numbers (NaN allowed with ``allow_nan``), or PredictionFormatError."""
    if not isinstance(value, (list, tuple)) or len(value) != length:
        got = f"{len(value)} values" if isinstance(value, (list, tuple)) else type(value).__name__
        raise PredictionFormatError(path, f"{where}: field {name!r} must be a list of {length} numbers, got {got}")
    if not all(is_number(v) for v in value):
        raise PredictionFormatError(
            path, f"{where}: field {name!r} must be a list of {length} numbers; it holds a non-number: {value!r}"
        )
    if any(math.isinf(v) or (math.isnan(v) and not allow_nan) for v in value):
        raise PredictionFormatError(path, f"{where}: field {name!r} has a non-finite value (not finite): {value!r}")
    return [float(v) for v in value]


def results_samples(
    data: object,
    path: Path,
    *,
    meta_required: bool,
    max_boxes_per_sample: int,
    known_sample_tokens: Collection[str] | None,
    allow_missing_samples: bool,
    label: Callable[[str], str],
) -> tuple[dict[str, Any], list[tuple[str, list[Any]]]]:
    """The checks every nuScenes results document gets (detection and tracking alike): an object with ``meta``
    (required or optional) and ``results`` {sample token: [box, ...]}, every key a ground-truth sample when those
    are given (and every ground-truth sample a key unless ``allow_missing_samples``), every value a list of at
    most ``max_boxes_per_sample`` boxes. Returns the meta block and the (sample token, boxes) pairs in file order;
    ``label(token)`` names a sample in messages. The boxes themselves are checked by the format's own reader."""
    if not isinstance(data, dict):
        raise PredictionFormatError(path, "top level must be an object with 'meta' and 'results'")
    for key in ("meta", "results") if meta_required else ("results",):
        if key not in data:
            raise PredictionFormatError(path, f"missing top-level field {key!r}")
    meta = data.get("meta", {})
    if not isinstance(meta, dict):
        raise PredictionFormatError(path, "field 'meta' must be an object")
    results = data["results"]
    if not isinstance(results, dict):
        raise PredictionFormatError(path, "field 'results' must be an object {sample_token: [boxes]}")
    if known_sample_tokens is not None:
        known = set(known_sample_tokens)
        unknown = [t for t in results if t not in known]
        if unknown:
            raise PredictionFormatError(
                path,
                f"{len(unknown)} sample token(s) are not in the ground truth, e.g. "
                f"{unknown[:3]} (wrong split or wrong log?)",
            )
        if not allow_missing_samples:
            missing = [t for t in known_sample_tokens if t not in results]
            if missing:
                raise PredictionFormatError(
                    path,
                    f"{len(missing)} ground-truth sample(s) have no entry in "
                    f"'results', e.g. {missing[:3]} (give them an empty list)",
                )
    samples: list[tuple[str, list[Any]]] = []
    for key, boxes in results.items():
        if not isinstance(boxes, list):
            raise PredictionFormatError(path, f"{label(key)}: value must be a list of boxes")
        if len(boxes) > max_boxes_per_sample:
            raise PredictionFormatError(
                path, f"{label(key)}: {len(boxes)} boxes; at most {max_boxes_per_sample} per sample are allowed"
            )
        samples.append((key, boxes))
    return meta, samples
