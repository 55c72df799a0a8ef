"""LSR items from the official STRIDE-QA-Bench response records (read by ``stridegen.formats.strideqa_bench``).

Fields used: ``question_id`` (``q00000234_g00018``: the group is the part after ``_g``), ``qa_category`` (gives the
horizon and whether the ego or the target is asked), ``gt_value`` (``{"distance"|"direction"|"velocity": number}``;
one record may hold distance and direction) and ``pred``. The conversion reproduces the toolkit's choices (group id
from the question id, horizon and subject from the category table) so our numbers equal the toolkit's.

The readers of the official files are re-exported here, so that this module is the one a caller needs for
official inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.core.gc_pause import gc_paused
from stridegen.core.vocabulary import QA_CATEGORIES
from stridegen.eval.lsr.data import DIMENSION_CODE, LsrItems, finite_number
from stridegen.eval.lsr.items import ItemBuilder
from stridegen.eval.lsr.tolerance import ToleranceProfile
from stridegen.formats.strideqa_bench import (
    PANDAS_NA_STRINGS,
    extract_group_id,
    load_annotation_questions,
    load_responses,
    read_annotation_sheet,
    response_files,
)

__all__ = [
    "PANDAS_NA_STRINGS",
    "QA_CATEGORIES",
    "build_items",
    "extract_group_id",
    "load_annotation_questions",
    "load_responses",
    "read_annotation_sheet",
    "response_files",
]

# (subject, qa_type) -> our dimension code (index into data.DIMENSIONS).
_DIMENSION_OF: dict[tuple[str, str], int] = {
    ("target", "distance"): DIMENSION_CODE["target_distance"],
    ("target", "direction"): DIMENSION_CODE["target_direction"],
    ("target", "velocity"): DIMENSION_CODE["target_velocity"],
    ("ego", "velocity"): DIMENSION_CODE["ego_velocity"],
}
# Tables for the column-wise fast path: qa_category -> code; per category code its horizon and subject code;
# qa_type -> code; [subject code, qa_type code] -> dimension code (-1: no such dimension).
_SUBJECTS: tuple[str, ...] = ("target", "ego")
_QA_TYPES: tuple[str, ...] = ("distance", "direction", "velocity")
_CATEGORY_CODE: dict[str, int] = {cat: i for i, cat in enumerate(QA_CATEGORIES)}
_CATEGORY_HORIZON = np.array([h for h, _ in QA_CATEGORIES.values()], dtype=np.int64)
_CATEGORY_SUBJECT = np.array([_SUBJECTS.index(s) for _, s in QA_CATEGORIES.values()], dtype=np.int64)
_QA_TYPE_CODE: dict[str, int] = {qa: i for i, qa in enumerate(_QA_TYPES)}
_DIMENSION_TABLE = np.full((len(_SUBJECTS), len(_QA_TYPES)), -1, dtype=np.int64)
for (_subject, _qa_type), _dim in _DIMENSION_OF.items():
    _DIMENSION_TABLE[_SUBJECTS.index(_subject), _QA_TYPE_CODE[_qa_type]] = _dim
_NUL = "\x00"


def build_items(
    responses: Iterable[tuple[Path, list[Any]]],
    profile: ToleranceProfile,
    sheet: dict[str, dict[str, Any]] | None = None,
    annotations: dict[str, dict[str, Any]] | None = None,
    on_invalid: str = "error",
    missing: str = "exclude",
    locate: Callable[[int, dict[str, Any]], str] | None = None,
) -> tuple[LsrItems, dict[str, Any]]:
    """Items from official response records (see module docstring), with the input report.

    ``locate(i, record)`` says where a record came from in messages (default ``record i``: its index in its file;
    predictions joined from a JSONL give their line).

    ``annotations`` (optional): the bench questions; responses for other ids are rejected, a truth that differs
    from the annotation is rejected, and questions without a response are counted (``missing="exclude"``, the
    toolkit's behaviour: they are not scored) or scored as failures (``missing="fail"``).
    """
    if missing not in ("exclude", "fail"):
        raise ValueError(f"missing must be 'exclude' or 'fail', got {missing!r}")
    with gc_paused():
        return _build_items(list(responses), profile, sheet or {}, annotations, on_invalid, missing, locate)


def _build_items(
    files: list[tuple[Path, list[Any]]],
    profile: ToleranceProfile,
    sheet: dict[str, dict[str, Any]],
    annotations: dict[str, dict[str, Any]] | None,
    on_invalid: str,
    missing: str,
    locate: Callable[[int, dict[str, Any]], str] | None = None,
) -> tuple[LsrItems, dict[str, Any]]:
    builder = ItemBuilder(", ".join(str(p) for p, _ in files) or "<responses>", on_invalid)
    seen: set[str] = set()
    n_records = 0
    for path, records in files:
        builder.source = str(path)
        n_records += len(records)
        _add_records(builder, records, sheet, annotations, seen, locate)
    n_missing = 0
    if annotations is not None:
        builder.source = "annotations"
        for qid, rec in annotations.items():
            if qid in seen:
                continue
            n_missing += 1
            if missing == "fail":
                _add_response(builder, rec, "annotation", sheet, None, seen, missing_pred_reason="missing_prediction")
    for gid, v in sheet.items():
        if v.get("out_of_view", -1) != -1 and gid in builder.group_index:
            builder.group_out_of_view[builder.group_index[gid]] = v["out_of_view"]
    labels = {gid: (v["relation"], v["object_type"]) for gid, v in sheet.items()}
    builder.source = "responses"
    items = builder.finish(profile, labels)
    report = builder.report()
    report.update(
        {
            "files": [str(p) for p, _ in files],
            "records": n_records,
            "missing_predictions": n_missing,
            "missing_policy": missing,
        }
    )
    return items, report


def _add_records(
    builder: ItemBuilder,
    records: list[Any],
    sheet: dict[str, dict[str, Any]],
    annotations: dict[str, dict[str, Any]] | None,
    seen: set[str],
    locate: Callable[[int, dict[str, Any]], str] | None = None,
) -> None:
    """Add one file's records: column-wise when every record is well formed (the common case), else record by
    record through ``_add_response``, which applies every check and the bad-input policy. Both add the same
    items in the same order for valid records; repeated (group, horizon, dimension) slots are found for both at
    ``ItemBuilder.finish``."""
    if not _add_columnwise(builder, records, annotations, seen):
        for i, rec in enumerate(records):
            where = locate(i, rec) if locate is not None and isinstance(rec, dict) else f"record {i}"
            _add_response(builder, rec, where, sheet, annotations, seen)


def _add_columnwise(
    builder: ItemBuilder, records: list[Any], annotations: dict[str, dict[str, Any]] | None, seen: set[str]
) -> bool:
    """All-or-nothing fast path: False (nothing added) as soon as any record needs the careful path.

    Every per-record step is a C-level ``map`` over a column (no Python-level loop body per record); the
    dimension of each value comes from a (subject, qa_type) table indexed with numpy."""
    try:
        qids = list(map(itemgetter("question_id"), records))
        categories = list(map(itemgetter("qa_category"), records))
        gt_dicts = list(map(itemgetter("gt_value"), records))
        preds = list(map(itemgetter("pred"), records))
        category_codes = list(map(_CATEGORY_CODE.get, categories))
    except (KeyError, TypeError):  # a missing field, a record that is not an object, an unhashable category
        return False
    if (
        not records
        or set(map(type, qids)) != {str}
        or set(map(type, preds)) != {str}
        or set(map(type, gt_dicts)) != {dict}
        or None in category_codes
    ):
        return False
    unique_qids = set(qids)
    if len(unique_qids) != len(qids) or "" in unique_qids or not unique_qids.isdisjoint(seen):
        return False
    if annotations is not None:
        for qid, gt in zip(qids, gt_dicts, strict=True):
            ann = annotations.get(qid)
            if ann is None or ann.get("gt_value") != gt:
                return False
    sizes = np.fromiter(map(len, gt_dicts), np.int64, len(gt_dicts))
    raw = list(chain.from_iterable(map(dict.values, gt_dicts)))  # every value, in record then key order
    qa_codes = list(map(_QA_TYPE_CODE.get, chain.from_iterable(gt_dicts)))  # their keys, same order
    if not sizes.all() or None in qa_codes or not set(map(type, raw)) <= {float, int}:
        return False
    try:
        gt = np.asarray(raw, dtype=np.float64)
    except OverflowError:  # an integer beyond float range
        return False
    category = np.asarray(category_codes, dtype=np.int64)
    dims = _DIMENSION_TABLE[np.repeat(_CATEGORY_SUBJECT[category], sizes), np.asarray(qa_codes, dtype=np.int64)]
    if not np.isfinite(gt).all() or (dims < 0).any():
        return False
    groups = _group_codes(builder, qids)
    horizons = _CATEGORY_HORIZON[category]
    if len(raw) > len(records):  # records with two values (distance and direction): repeat the per-record columns
        per_item = np.repeat(np.arange(len(records)), sizes)
        qids = np.asarray(qids, dtype=object)[per_item].tolist()
        preds = np.asarray(preds, dtype=object)[per_item].tolist()
        groups, horizons = groups[per_item], horizons[per_item]
    builder.extend(qids, groups, horizons, dims, gt, preds)
    seen.update(unique_qids)
    return True


def _group_codes(builder: ItemBuilder, qids: list[str]) -> np.ndarray:
    """Group code of each question id (``extract_group_id``), new groups coded in order of first appearance."""
    # Common case: exactly one "_g" in every id, so the group id is "g" + the text after it. The texts after
    # "_g" are coded first (one dict), and only the distinct ones become group ids.
    tails = [q.partition("_g")[2] for q in qids]
    if "" in tails or "_g" in _NUL.join(tails):  # an id without "_g", ending in it, or with a second one
        gids = [extract_group_id(q) for q in qids]
        for gid in dict.fromkeys(gids):
            builder.group_code(gid)
        return np.fromiter(map(builder.group_index.__getitem__, gids), np.int64, len(gids))
    code_of_tail = {tail: builder.group_code("g" + tail) for tail in dict.fromkeys(tails)}
    return np.fromiter(map(code_of_tail.__getitem__, tails), np.int64, len(tails))


def _add_response(
    builder: ItemBuilder,
    rec: Any,
    where: str,
    sheet: dict[str, dict[str, Any]],
    annotations: dict[str, dict[str, Any]] | None,
    seen: set[str],
    missing_pred_reason: str | None = None,
) -> None:
    if not isinstance(rec, dict):
        builder.reject("record_not_an_object", where)
        return
    qid = rec.get("question_id")
    if not isinstance(qid, str) or not qid:
        builder.reject("missing_question_id", where)
        return
    where = f"{where} (question {qid!r})"
    if qid in seen:
        builder.reject("duplicate_question_id", where)
        return
    seen.add(qid)  # also when rejected below: a rejected response is not a missing one
    if annotations is not None and qid not in annotations:
        builder.reject("unknown_question_id", where)
        return
    category = QA_CATEGORIES.get(rec.get("qa_category"))  # type: ignore[arg-type]
    if category is None:
        builder.reject("unknown_qa_category", where)
        return
    horizon, subject = category
    gt_values = rec.get("gt_value")
    if not isinstance(gt_values, dict) or not gt_values:
        builder.reject("missing_gt_value", where)
        return
    parsed_gt: list[tuple[int, float]] = []
    for qa_type, raw in gt_values.items():
        dim = _DIMENSION_OF.get((subject, qa_type))
        gt = finite_number(raw)
        if dim is None:
            builder.reject("unknown_qa_type", where)
            return
        if gt is None:
            builder.reject("bad_gt_value", where)
            return
        if annotations is not None and annotations[qid].get("gt_value", {}).get(qa_type) != raw:
            builder.reject("gt_differs_from_annotation", where)
            return
        parsed_gt.append((dim, gt))
    text, reason = _response_text(builder, rec, where, missing_pred_reason)
    if text is None and reason is None:
        return
    group_id = extract_group_id(qid)
    oov = sheet.get(group_id, {}).get("out_of_view", -1)
    for dim, gt in parsed_gt:
        builder.add(
            qid, group_id, horizon, dim, gt, text, out_of_view=oov, where=where, reason=reason or "invalid_prediction"
        )


def _response_text(
    builder: ItemBuilder, rec: dict[str, Any], where: str, missing_pred_reason: str | None
) -> tuple[str | None, str | None]:
    """(text, None) for a usable answer; (None, reason) for a forced failure; (None, None) when rejected."""
    if missing_pred_reason is not None:
        return None, missing_pred_reason
    if "pred" not in rec:
        problem = "missing_pred"
    elif not isinstance(rec["pred"], str):
        problem = "pred_not_text"
    else:
        return rec["pred"], None
    if builder.bad_prediction(problem, where):
        return None, problem
    return None, None
