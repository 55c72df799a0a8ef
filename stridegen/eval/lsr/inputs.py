"""The LSR items of one run's inputs (``stridegen eval lsr``, stridegen/cli/eval_lsr.py): official STRIDE-QA-Bench
files (responses, or the bench's questions joined with a predictions JSONL), or stridegen records (a dataset folder
or an ``LsrRecord`` JSONL) joined with a predictions JSONL.

Each returns the items and the input report that ``stridegen.eval.lsr.report.write_reports`` writes beside the
metrics (records skipped by cause, questions without a prediction, dropped prediction lines, and with a predictions
JSONL its path and model: ``stridegen.formats.prediction_inputs``). ``on_invalid`` (error
| skip | fail) and ``missing`` (exclude | fail) are the bad-input and missing-prediction policies of
``stridegen.eval.lsr.items.ItemBuilder``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stridegen.eval.lsr.data import LsrItems
    from stridegen.eval.lsr.tolerance import ToleranceProfile


def official_items(
    bench_dir: Path | None,
    responses: Path | None,
    pred: Path | None,
    profile: ToleranceProfile,
    on_invalid: str,
    missing: str,
) -> tuple[LsrItems, dict[str, Any]]:
    """Items of official response files (``responses``, a file or folder of ``*_t*.json``), or of the bench's
    questions (``bench_dir``) answered by a predictions JSONL (``pred``); ``bench_dir``'s annotation_sheet.csv,
    when present, gives the scenario relations. A prediction for a question the bench does not have is an error
    (``on_invalid`` error) or counted as skipped."""
    from stridegen.core.errors import PredictionFormatError
    from stridegen.eval.lsr import bench as sb
    from stridegen.eval.lsr.data import read_predictions
    from stridegen.formats.prediction_inputs import prediction_inputs
    from stridegen.formats.textfile import shown

    sheet = None
    annotations = None
    if bench_dir is not None:
        sheet_path = bench_dir / "annotation_sheet.csv"
        sheet = sb.read_annotation_sheet(sheet_path) if sheet_path.is_file() else None
        annotations = sb.load_annotation_questions(bench_dir)
    if responses is not None:
        loaded = sb.load_responses(responses)
        return sb.build_items(loaded, profile, sheet, annotations, on_invalid, missing)
    # --bench-dir + --pred: join a predictions JSONL onto the bench questions.
    assert annotations is not None and pred is not None
    read = read_predictions(str(pred), on_invalid)
    merged = [dict(annotations[q], pred=p) for q, p in read.values.items() if q in annotations]
    unknown = [q for q in read.values if q not in annotations]
    if unknown and on_invalid == "error":
        raise PredictionFormatError(
            pred,
            f"line {read.lines[unknown[0]]}: question {shown(unknown[0])} is not a question of the bench "
            f"({len(unknown)} such prediction(s))",
        )
    items, report = sb.build_items(
        [(pred, merged)],
        profile,
        sheet,
        annotations,
        on_invalid,
        missing,
        locate=lambda i, rec: f"line {read.lines.get(rec.get('question_id', ''), '?')}",
    )
    report["skipped"]["unknown_question_id"] = len(unknown) + report["skipped"].get("unknown_question_id", 0)
    report["skipped"] = {k: v for k, v in sorted(report["skipped"].items()) if v}
    report["dropped_prediction_lines"] = read.dropped
    report.update(prediction_inputs(pred))
    return items, report


def record_items(
    dataset: Path | None,
    records: Path | None,
    sheet: Path | None,
    pred: Path,
    profile: ToleranceProfile,
    on_invalid: str,
    missing: str,
) -> tuple[LsrItems, dict[str, Any]]:
    """Items of a stridegen dataset's spatiotemporal QA (``dataset``; scenario relations from the annotation
    ``sheet``, else from the rule-based classifier) or of an LsrRecord JSONL (``records``), joined with a
    predictions JSONL (``pred``)."""
    from stridegen.core.errors import DataFormatError
    from stridegen.eval.lsr.data import read_predictions, read_records_jsonl
    from stridegen.eval.lsr.items import items_from_records
    from stridegen.formats.prediction_inputs import prediction_inputs

    read = read_predictions(str(pred), on_invalid)
    others: dict[str, str] = {}
    if dataset is not None:
        from stridegen.eval.lsr.dataset import (
            other_questions,
            records_from_dataset,
            scenarios_from_dataset,
            scenarios_from_sheet,
        )

        # --sheet wins; without it the groups' relations come from the rule-based classifier.
        scen = scenarios_from_sheet(sheet) if sheet is not None else scenarios_from_dataset(dataset)
        recs = records_from_dataset(dataset, scen)
        if not recs:
            raise DataFormatError(dataset, "the dataset has no spatiotemporal QA to score")
        others = other_questions(dataset)
    else:
        assert records is not None
        recs = read_records_jsonl(str(records))
    items, report = items_from_records(recs, read.values, profile, on_invalid, missing, str(pred), read.lines, others)
    report["dropped_prediction_lines"] = read.dropped
    report.update(prediction_inputs(pred))
    return items, report
