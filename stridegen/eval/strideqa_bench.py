"""Read the official STRIDE-QA-Bench formats: annotation folder and model response files.

Formats (turingmotors/STRIDE-QA-Dataset, ``benchmarks/STRIDE-QA-Bench``, read for behaviour):

- annotation folder: ``strideqa_bench*_t{0..3}.json`` (lists of question records) and ``annotation_sheet.csv``
  (columns ``group_id, object_type, relation``; we also read an optional ``out_of_view`` column).
- response files ``*_t*.json``: the question records with the model's answer added as ``pred``. Fields used:
  ``question_id`` (``q00000234_g00018``: the group is the part after ``_g``), ``qa_category`` (gives the horizon
  and whether the ego or the target is asked), ``gt_value`` (``{"distance"|"direction"|"velocity": number}``; one
  record may hold distance and direction), ``unit`` and ``pred``.

The conversion reproduces the toolkit's choices (group id from the question id, horizon and subject from the
category table, annotation-sheet missing values as pandas reads them) so our numbers equal the toolkit's.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.core.errors import MissingFileError, PredictionFormatError
from stridegen.core.vocabulary import QA_CATEGORIES
from stridegen.eval.lsr import ItemBuilder, LsrItems, finite_number, gc_paused
from stridegen.eval.tolerance import ToleranceProfile

# (subject, qa_type) -> our dimension code (index into lsr.DIMENSIONS).
_DIMENSION_OF: dict[tuple[str, str], int] = {
    ("target", "distance"): 0,
    ("target", "direction"): 1,
    ("target", "velocity"): 2,
    ("ego", "velocity"): 3,
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
# Strings pandas.read_csv reads as missing by default (pandas docs, ``na_values``): the toolkit reads the sheet
# with pandas and drops groups whose relation is missing from TLC / MLSR, so the same cells must count as missing.
PANDAS_NA_STRINGS = frozenset({
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>", "N/A",
    "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
})
_NUL = "\x00"
_TRUE = {"1", "true", "yes", "y", "t"}
_FALSE = {"0", "false", "no", "n", "f"}


def extract_group_id(question_id: str) -> str:
    """``q00000234_g00018`` -> ``g00018``; an id without ``_g`` is its own group (the toolkit's rule: the text
    between the first and the second ``_g``)."""
    if "_g" in question_id:
        return "g" + question_id.split("_g")[1]
    return question_id


def read_annotation_sheet(path: str | Path) -> dict[str, dict[str, Any]]:
    """group_id -> {object_type, relation, out_of_view}; missing cells (pandas' NA strings) become None."""
    path = Path(path)
    if not path.is_file():
        raise MissingFileError(path, "annotation sheet not found")
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        fields = reader.fieldnames or []
        if "group_id" not in fields:
            raise PredictionFormatError(path, f"no 'group_id' column (columns: {fields})")
        sheet: dict[str, dict[str, Any]] = {}
        for line, row in enumerate(reader, start=2):
            gid = row["group_id"]
            if gid is None or gid in PANDAS_NA_STRINGS:
                raise PredictionFormatError(path, f"line {line}: empty group_id")
            entry = {
                "object_type": _cell(row.get("object_type")),
                "relation": _cell(row.get("relation")),
                "out_of_view": _flag(path, line, _cell(row.get("out_of_view"))),
            }
            if gid in sheet and sheet[gid] != entry:
                raise PredictionFormatError(path, f"line {line}: group {gid!r} listed twice with different labels")
            sheet[gid] = entry
    return sheet


def _cell(value: str | None) -> str | None:
    return None if value is None or value in PANDAS_NA_STRINGS else value


def _flag(path: Path, line: int, value: str | None) -> int:
    if value is None:
        return -1
    v = value.strip().lower()
    if v in _TRUE:
        return 1
    if v in _FALSE:
        return 0
    raise PredictionFormatError(path, f"line {line}: out_of_view must be true/false, got {value!r}")


def _load_json_list(path: Path) -> list[Any]:
    try:
        with path.open(encoding="utf-8") as f:
            data = json.load(f)
    except json.JSONDecodeError as exc:
        raise PredictionFormatError(path, f"not valid JSON: {exc}") from exc
    if not isinstance(data, list):
        raise PredictionFormatError(path, f"expected a JSON list of records, got {type(data).__name__}")
    return data


def response_files(responses: str | Path) -> list[Path]:
    """A response file, or the toolkit's selection in a folder: sorted ``*_t*.json``."""
    responses = Path(responses)
    if responses.is_file():
        return [responses]
    if not responses.is_dir():
        raise MissingFileError(responses, "responses path does not exist")
    files = sorted(responses.glob("*_t*.json"))
    if not files:
        raise MissingFileError(responses, "no response files (*_t*.json)")
    return files


def load_responses(responses: str | Path) -> list[tuple[Path, list[Any]]]:
    """(file, records) for each response file (see ``response_files``)."""
    with gc_paused():  # json builds many small dicts and no cycles
        return [(p, _load_json_list(p)) for p in response_files(responses)]


def load_annotation_questions(bench_dir: str | Path) -> dict[str, dict[str, Any]]:
    """question_id -> annotation record from ``strideqa_bench*.json`` in the bench folder."""
    bench_dir = Path(bench_dir)
    files = sorted(bench_dir.glob("strideqa_bench*.json"))
    if not files:
        raise MissingFileError(bench_dir, "no strideqa_bench*.json annotation files")
    questions: dict[str, dict[str, Any]] = {}
    for path in files:
        for i, rec in enumerate(_load_json_list(path)):
            qid = rec.get("question_id") if isinstance(rec, dict) else None
            if not isinstance(qid, str):
                raise PredictionFormatError(path, f"record {i}: no question_id")
            if qid in questions:
                raise PredictionFormatError(path, f"record {i}: duplicate question_id {qid!r}")
            questions[qid] = rec
    return questions


def build_items(
    responses: Iterable[tuple[Path, list[Any]]],
    profile: ToleranceProfile,
    sheet: dict[str, dict[str, Any]] | None = None,
    annotations: dict[str, dict[str, Any]] | None = None,
    on_invalid: str = "error",
    missing: str = "exclude",
) -> tuple[LsrItems, dict[str, Any]]:
    """Items from official response records (see module docstring), with the input report.

    ``annotations`` (optional): the bench questions; responses for other ids are rejected, a truth that differs
    from the annotation is rejected, and questions without a response are counted (``missing="exclude"``, the
    toolkit's behaviour: they are not scored) or scored as failures (``missing="fail"``).
    """
    if missing not in ("exclude", "fail"):
        raise ValueError(f"missing must be 'exclude' or 'fail', got {missing!r}")
    with gc_paused():
        return _build_items(list(responses), profile, sheet or {}, annotations, on_invalid, missing)


def _build_items(files: list[tuple[Path, list[Any]]], profile: ToleranceProfile, sheet: dict[str, dict[str, Any]],
                 annotations: dict[str, dict[str, Any]] | None, on_invalid: str, missing: str
                 ) -> tuple[LsrItems, dict[str, Any]]:
    builder = ItemBuilder(", ".join(str(p) for p, _ in files) or "<responses>", on_invalid)
    seen: set[str] = set()
    n_records = 0
    for path, records in files:
        builder.source = str(path)
        n_records += len(records)
        _add_records(builder, records, sheet, annotations, seen)
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
    report.update({"files": [str(p) for p, _ in files], "records": n_records,
                   "missing_predictions": n_missing, "missing_policy": missing})
    return items, report


def _add_records(builder: ItemBuilder, records: list[Any], sheet: dict[str, dict[str, Any]],
                 annotations: dict[str, dict[str, Any]] | None, seen: set[str]) -> None:
    """Add one file's records: column-wise when every record is well formed (the common case), else record by
    record through ``_add_response``, which applies every check and the bad-input policy. Both add the same
    items in the same order for valid records; repeated (group, horizon, dimension) slots are found for both at
    ``ItemBuilder.finish``."""
    if not _add_columnwise(builder, records, annotations, seen):
        for i, rec in enumerate(records):
            _add_response(builder, rec, f"record {i}", sheet, annotations, seen)


def _add_columnwise(builder: ItemBuilder, records: list[Any], annotations: dict[str, dict[str, Any]] | None,
                    seen: set[str]) -> bool:
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
    if not records or set(map(type, qids)) != {str} or set(map(type, preds)) != {str} \
            or set(map(type, gt_dicts)) != {dict} or None in category_codes:
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
    dims = _DIMENSION_TABLE[np.repeat(_CATEGORY_SUBJECT[category], sizes), qa_codes]
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


def _add_response(builder: ItemBuilder, rec: Any, where: str, sheet: dict[str, dict[str, Any]],
                  annotations: dict[str, dict[str, Any]] | None, seen: set[str],
                  missing_pred_reason: str | None = None) -> None:
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
        builder.add(qid, group_id, horizon, dim, gt, text, out_of_view=oov, where=where,
                    reason=reason or "invalid_prediction")


def _response_text(builder: ItemBuilder, rec: dict[str, Any], where: str, missing_pred_reason: str | None
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
