"""STRIDE-QA localization evaluation: the item and result arrays, their integer codes, and the JSONL readers.

- ``LsrItems``: one entry per scored value (group, horizon, dimension, truth, prediction), the input of
  ``stridegen.eval.lsr.evaluate``; ``Slots`` and ``LsrResult``: what it returns (see ``algo`` for the metrics).
- Integer keys over items: a (group, horizon) slot key and a (group, horizon, dimension) item key, counted or
  coded without sorting when they are dense.
- Readers of the two JSONL inputs: dataset records (``LsrRecord`` fields, one object per line) and predictions
  (``{"question_id", "pred"}`` or ``{"question_id", "value"[, "unit"]}`` per line).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stridegen.eval.lsr.answer_values import Kind
from stridegen.formats.lsr_record import LsrRecord
from stridegen.formats.textfile import shown

DIMENSIONS: tuple[str, ...] = ("target_distance", "target_direction", "target_velocity", "ego_velocity")
DIMENSION_KIND: dict[str, Kind] = {
    "target_distance": "distance",
    "target_direction": "direction",
    "target_velocity": "velocity",
    "ego_velocity": "velocity",
}
DIMENSION_CODE: dict[str, int] = {name: i for i, name in enumerate(DIMENSIONS)}
# Order of the success-rate tables in reports (the toolkit's order).
REPORT_ORDER: tuple[str, ...] = ("target_distance", "target_direction", "ego_velocity", "target_velocity", "lsr")


@dataclass
class LsrItems:
    """Structure of arrays, one entry per scored value. ``pred`` is NaN where the answer was unparseable."""

    question_id: list[str]
    group: np.ndarray  # int64 codes into group_ids
    group_ids: list[str]
    horizon: np.ndarray  # int64 seconds
    dimension: np.ndarray  # int64 codes into DIMENSIONS
    gt: np.ndarray  # float64
    pred: np.ndarray  # float64
    pred_reason: list[str]  # "" when a value was read, else why not
    out_of_view: np.ndarray  # int8: 1 out of view, 0 in view, -1 unknown
    group_scenario: list[str | None]  # per group
    group_object_class: list[str | None]  # per group
    # per group: its clip ends before some horizon (left out of TLC / MLSR); empty: no group is partial
    group_partial: list[bool] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.question_id)

    def check(self) -> None:
        """Raise ValueError on inconsistent lengths, bad codes, or two items for one (group, horizon, dimension)."""
        n = len(self.question_id)
        for name in ("group", "horizon", "dimension", "gt", "pred", "out_of_view"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"LsrItems.{name} has {len(getattr(self, name))} entries, expected {n}")
        if len(self.pred_reason) != n:
            raise ValueError(f"LsrItems.pred_reason has {len(self.pred_reason)} entries, expected {n}")
        g = len(self.group_ids)
        if len(self.group_scenario) != g or len(self.group_object_class) != g:
            raise ValueError("group label lists must have one entry per group id")
        if self.group_partial and len(self.group_partial) != g:
            raise ValueError("group_partial must be empty or have one entry per group id")
        if n == 0:
            return
        if self.group.min() < 0 or self.group.max() >= g:
            raise ValueError("group codes out of range")
        if self.dimension.min() < 0 or self.dimension.max() >= len(DIMENSIONS):
            raise ValueError("dimension codes out of range")
        if self.horizon.min() < 0:
            raise ValueError("horizons must be >= 0 seconds")
        key = item_key(self.group, self.horizon, self.dimension)
        counts = key_counts(key)
        if counts is None:
            uniq, counts = np.unique(key, return_counts=True)
        else:
            uniq = np.arange(len(counts))
        if counts.max(initial=0) > 1:
            dup = uniq[counts > 1][0]
            i = int(np.flatnonzero(key == dup)[0])
            raise ValueError(
                f"two items for group {self.group_ids[self.group[i]]!r}, horizon {self.horizon[i]} s, "
                f"dimension {DIMENSIONS[self.dimension[i]]} (question {self.question_id[i]!r})"
            )


@dataclass
class Slots:
    """Localization slots: one per (group, horizon) with a target distance or direction item."""

    group: np.ndarray
    horizon: np.ndarray
    success: np.ndarray
    distance_gt: np.ndarray  # NaN when the slot has no distance item
    distance_pred: np.ndarray
    direction_gt: np.ndarray
    direction_pred: np.ndarray
    out_of_view: np.ndarray  # int8, -1 unknown


@dataclass
class LsrResult:
    """Everything the report writers need."""

    profile: str
    parser: str
    item_success: np.ndarray
    slots: Slots
    success_rates: dict[str, list[dict[str, Any]]]
    temporal_consistency: list[dict[str, Any]]
    breakdowns: dict[str, dict[str, dict[str, list[dict[str, Any]]]]]
    counts: dict[str, Any] = field(default_factory=dict)

    def metrics(self) -> dict[str, Any]:
        """JSON-ready metrics: the toolkit's ``metrics_report.json`` keys plus breakdowns and counts."""
        out: dict[str, Any] = {"profile": self.profile, "parser": self.parser}
        for name in REPORT_ORDER:
            if name in self.success_rates:
                out[name] = self.success_rates[name]
        out["temporal_consistency"] = self.temporal_consistency
        out["breakdowns"] = self.breakdowns
        out["counts"] = self.counts
        return out


# ============================================================================================ integer keys


def slot_key(group: np.ndarray, horizon: np.ndarray, n_horizons: int) -> np.ndarray:
    """One integer per (group, horizon): ``group * n_horizons + horizon`` (``n_horizons`` > every horizon)."""
    return group.astype(np.int64) * int(n_horizons) + horizon.astype(np.int64)


def item_key(group: np.ndarray, horizon: np.ndarray, dimension: np.ndarray) -> np.ndarray:
    """One integer per (group, horizon, dimension) of non-empty item columns: the slot key times the number of
    dimensions plus the dimension code."""
    return slot_key(group, horizon, int(horizon.max()) + 1) * len(DIMENSIONS) + dimension


def _is_dense(key: np.ndarray) -> bool:
    """True when ``key`` is non-negative with a range small enough for counting arrays (a few times its size)."""
    return len(key) > 0 and int(key.min()) >= 0 and int(key.max()) < 4 * len(key) + 1024


def key_counts(key: np.ndarray) -> np.ndarray | None:
    """Occurrences of each value 0..max of a dense integer ``key`` (one counting pass), or None if not dense."""
    return np.bincount(key) if _is_dense(key) else None


def unique_inverse(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(key, return_inverse=True)`` for integer keys: the same arrays, found without sorting (a
    presence mask and its running count) when the keys are dense (see ``_is_dense``)."""
    if not _is_dense(key):
        uniq, inverse = np.unique(key, return_inverse=True)
        return uniq, inverse.reshape(-1)
    present = np.zeros(int(key.max()) + 1, dtype=bool)
    present[key] = True
    rank = np.cumsum(present, dtype=np.int64) - 1
    return np.flatnonzero(present).astype(key.dtype, copy=False), rank[key]


def dimension_codes(names: Sequence[str]) -> np.ndarray:
    """Dimension names -> int codes; raises ValueError naming an unknown dimension."""
    try:
        return np.fromiter((DIMENSION_CODE[n] for n in names), dtype=np.int64, count=len(names))
    except KeyError as exc:
        raise ValueError(f"unknown dimension {exc.args[0]!r}; expected one of {DIMENSIONS}") from None


# ============================================================================================ JSONL inputs


def finite_number(x: Any) -> float | None:
    """``x`` as a float if it is a finite JSON number (not a bool), else None."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    try:
        v = float(x)
    except OverflowError:  # an integer beyond float range
        return None
    return v if np.isfinite(v) else None


def question_id_of(value: Any) -> str | None:
    """A question id as read from JSON: a non-empty string, or an integer (written as its decimal text); None for
    anything else (bool, float, null, a list, an empty string)."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _question_id_problem(obj: dict[str, Any]) -> tuple[str, str]:
    """Why a line's ``question_id`` is unusable: (reason key, message)."""
    if "question_id" not in obj:
        return "missing_question_id", "missing question id"
    return (
        "bad_question_id",
        f"question_id must be a non-empty string or an integer, got {shown(obj['question_id'])}",
    )


def read_records_jsonl(path: str) -> list[LsrRecord]:
    """Dataset records, one JSON object per line with the LsrRecord fields. Malformed records raise
    PredictionFormatError naming the line (the dataset itself is wrong: no skip policy)."""
    from stridegen.core.errors import PredictionFormatError
    from stridegen.formats.textfile import iter_jsonl

    required = ("question_id", "group_id", "horizon_s", "dimension", "gt_value")
    optional = ("unit", "scenario", "object_class", "out_of_view")
    out: list[LsrRecord] = []
    for line_no, obj in iter_jsonl(path, "records file", PredictionFormatError):
        if not isinstance(obj, dict):
            raise PredictionFormatError(path, f"line {line_no}: expected an object, got {type(obj).__name__}")
        lacking = [k for k in required if k not in obj]
        if lacking:
            raise PredictionFormatError(path, f"line {line_no}: missing fields {lacking}")
        qid = question_id_of(obj["question_id"])
        if qid is None:
            raise PredictionFormatError(path, f"line {line_no}: {_question_id_problem(obj)[1]}")
        h = obj["horizon_s"]
        if isinstance(h, bool) or not isinstance(h, int | float) or h < 0 or h != int(h):
            raise PredictionFormatError(
                path, f"line {line_no}: horizon_s must be a whole number of seconds >= 0, got {shown(h)}"
            )
        if obj["dimension"] not in DIMENSION_CODE:
            raise PredictionFormatError(
                path, f"line {line_no}: unknown dimension {shown(obj['dimension'])}; expected one of {DIMENSIONS}"
            )
        if not isinstance(obj.get("partial_group", False), bool):
            raise PredictionFormatError(
                path, f"line {line_no}: partial_group must be true or false, got {shown(obj['partial_group'])}"
            )
        if finite_number(obj["gt_value"]) is None:
            raise PredictionFormatError(
                path, f"line {line_no}: gt_value must be a finite number, got {shown(obj['gt_value'])}"
            )
        out.append(
            LsrRecord(
                question_id=qid,
                group_id=str(obj["group_id"]),
                horizon_s=int(h),
                dimension=obj["dimension"],
                gt_value=float(obj["gt_value"]),
                partial_group=bool(obj.get("partial_group", False)),
                **{k: obj.get(k) for k in optional},
            )
        )
    return out


@dataclass
class PredictionFile:
    """A predictions JSONL as read: question id -> prediction, the line each came from, and the lines dropped
    (by reason) under a skip policy."""

    values: dict[str, Any]
    lines: dict[str, int]
    dropped: dict[str, int]


def read_predictions(path: str, on_invalid: str = "error") -> PredictionFile:
    """question_id -> prediction from ``{"question_id", "pred"}`` lines (``pred``: text, number or mapping), or
    ``{"question_id", "value"[, "unit"]}``. A question id is a string or an integer (read as its decimal text).
    A line that is not JSON, nests deeper than the limit, repeats a key in its object (JSON would keep the last
    one), lacks a usable question id or a prediction, or repeats an id follows ``on_invalid`` (``error`` raises
    PredictionFormatError naming the file and line; otherwise the line is dropped and counted). A UTF-8
    byte-order mark is tolerated; an empty file, another encoding, bytes that are not UTF-8, a NUL byte or a file
    over the size limit are errors (stridegen.formats.textfile, stridegen.core.bounded_json)."""
    from stridegen.core.bounded_json import JsonProblem, decode, json_limits
    from stridegen.core.errors import PredictionFormatError
    from stridegen.formats.textfile import iter_jsonl_lines

    out = PredictionFile({}, {}, {})

    def bad(key: str, message: str) -> None:
        """A line that cannot be used: raise, or drop it and count it under ``key``."""
        if on_invalid == "error":
            raise PredictionFormatError(path, message)
        out.dropped[key] = out.dropped.get(key, 0) + 1

    max_depth = json_limits().max_depth
    for line_no, line in iter_jsonl_lines(path, "predictions file", PredictionFormatError):
        try:
            obj = decode(line, line=line_no, max_depth=max_depth)
        except JsonProblem as exc:
            bad(exc.key, exc.reason)
            continue
        if not isinstance(obj, dict):
            bad("not_an_object", f"line {line_no}: expected a JSON object, got {type(obj).__name__}")
            continue
        qid = question_id_of(obj.get("question_id"))
        if qid is None:
            key, message = _question_id_problem(obj)
            bad(key, f"line {line_no}: {message}")
            continue
        if qid in out.values:
            first = out.lines[qid]
            bad("duplicate_question_id", f"line {line_no}: duplicate question id {shown(qid)} (first on line {first})")
            continue
        if "pred" in obj:
            out.values[qid] = obj["pred"]
        elif "value" in obj:
            out.values[qid] = {"value": obj["value"], "unit": obj.get("unit")}
        else:
            bad("missing_pred", f"line {line_no}: no 'pred' (or 'value') field")
            continue
        out.lines[qid] = line_no
    return out


def read_predictions_jsonl(path: str, on_invalid: str = "error") -> tuple[dict[str, Any], dict[str, int]]:
    """``read_predictions`` as (question id -> prediction, dropped lines by reason)."""
    read = read_predictions(path, on_invalid)
    return read.values, read.dropped
