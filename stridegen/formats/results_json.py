"""Shared reading and field checks of nuScenes results JSON files (detection and tracking)."""

from __future__ import annotations

import json
import math
from pathlib import Path

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
        raise PredictionFormatError(path, f"duplicate key {exc.args[0]!r} (a JSON object keeps only the last "
                                          "one; merge the lists instead)") from None
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
        raise PredictionFormatError(path, f"{where}: field {name!r} must be a list of {length} numbers; it holds a "
                                          f"non-number: {value!r}")
    if any(math.isinf(v) or (math.isnan(v) and not allow_nan) for v in value):
        raise PredictionFormatError(path, f"{where}: field {name!r} has a non-finite value (not finite): {value!r}")
    return [float(v) for v in value]
