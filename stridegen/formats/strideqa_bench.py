"""Read the official STRIDE-QA-Bench file formats: annotation folder, annotation sheet and model response files.

Formats (turingmotors/STRIDE-QA-Dataset, ``benchmarks/STRIDE-QA-Bench``, read for behaviour):

- annotation folder: ``strideqa_bench*_t{0..3}.json`` (lists of question records) and ``annotation_sheet.csv``
  (columns ``group_id, object_type, relation``; we also read an optional ``out_of_view`` column).
- response files ``*_t*.json``: the question records with the model's answer added as ``pred``. Fields used:
  ``question_id`` (``q00000234_g00018``: the group is the part after ``_g``), ``qa_category`` (gives the horizon
  and whether the ego or the target is asked), ``gt_value`` (``{"distance"|"direction"|"velocity": number}``; one
  record may hold distance and direction), ``unit`` and ``pred``.

The readers reproduce the toolkit's choices (group id from the question id, annotation-sheet missing values as
pandas reads them); turning the records into LSR items is ``stridegen.eval.lsr.bench``.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from stridegen.core.errors import MissingFileError, PredictionFormatError
from stridegen.core.gc_pause import gc_paused
from stridegen.formats.textfile import load_json, read_text, shown

# Strings pandas.read_csv reads as missing by default (pandas docs, ``na_values``): the toolkit reads the sheet
# with pandas and drops groups whose relation is missing from TLC / MLSR, so the same cells must count as missing.
PANDAS_NA_STRINGS = frozenset(
    {
        "",
        "#N/A",
        "#N/A N/A",
        "#NA",
        "-1.#IND",
        "-1.#QNAN",
        "-NaN",
        "-nan",
        "1.#IND",
        "1.#QNAN",
        "<NA>",
        "N/A",
        "NA",
        "NULL",
        "NaN",
        "None",
        "n/a",
        "nan",
        "null",
    }
)
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
    if not path.exists():
        raise MissingFileError(path, "annotation sheet not found")
    # UTF-8 with or without a byte-order mark (pandas.read_csv, the toolkit's reader, drops it too).
    reader = csv.DictReader(io.StringIO(read_text(path, "annotation sheet", PredictionFormatError), newline=""))
    try:
        return _read_sheet_rows(path, reader)
    except csv.Error as exc:
        raise PredictionFormatError(path, f"line {reader.line_num}: not valid CSV ({exc})") from None


def _read_sheet_rows(path: Path, reader: csv.DictReader) -> dict[str, dict[str, Any]]:
    fields = reader.fieldnames or []
    if "group_id" not in fields:
        raise PredictionFormatError(path, f"line 1: no 'group_id' column (columns: {shown(fields)})")
    sheet: dict[str, dict[str, Any]] = {}
    for row in reader:
        line = reader.line_num  # the row's last physical line (a quoted cell may span several)
        gid = row["group_id"]
        if gid is None or gid in PANDAS_NA_STRINGS:
            raise PredictionFormatError(path, f"line {line}: empty group_id")
        entry = {
            "object_type": _cell(row.get("object_type")),
            "relation": _cell(row.get("relation")),
            "out_of_view": _flag(path, line, _cell(row.get("out_of_view"))),
        }
        if gid in sheet and sheet[gid] != entry:
            raise PredictionFormatError(path, f"line {line}: group {shown(gid)} listed twice with different labels")
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
    raise PredictionFormatError(path, f"line {line}: out_of_view must be true/false, got {shown(value)}")


def _load_json_list(path: Path) -> list[Any]:
    data = load_json(path, "file", PredictionFormatError, reject_duplicates=True)  # a repeated key is an error
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
                raise PredictionFormatError(path, f"record {i}: no question_id (a string)")
            if qid in questions:
                raise PredictionFormatError(path, f"record {i}: duplicate question_id {shown(qid)}")
            questions[qid] = rec
    return questions
