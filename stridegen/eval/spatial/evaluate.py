"""Spatial QA scoring, orchestrated: join predictions to a dataset's spatial questions, read the answers, judge
them, and aggregate the metrics dict (overall, by category, predicate, object class and distance bin; the rules
are in ``stridegen.eval.spatial.algo``). ``evaluate_dataset`` is the one call a report needs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.core.gc_pause import gc_paused
from stridegen.eval.spatial.algo import (
    Judged,
    breakdown,
    judge,
    reason_counts,
    summarize,
    tolerance_table,
)
from stridegen.eval.spatial.data import (
    DISTANCE_BIN_EDGES_M,
    SpatialItems,
    distance_bin_names,
    distance_bins,
    read_dataset_items,
)
from stridegen.eval.spatial.parse import NO_PREDICTION, PARSER_MODE, Answers, read_answers


@dataclass
class SpatialScores:
    """Every item with what was read from its prediction and how it was judged, and the input counts."""

    items: SpatialItems
    predictions: list[Any]  # as given (NO_PREDICTION where the file has none)
    answers: Answers
    judged: Judged
    distance_bin: np.ndarray  # [N] int64 codes into bin_names
    bin_names: list[str]
    counts: dict[str, Any] = field(default_factory=dict)

    @property
    def invalid(self) -> np.ndarray:
        """[N] bool: nothing could be read from the answer (it has a reason)."""
        return np.asarray([r != "" for r in self.answers.reason], dtype=bool)


def score(
    items: SpatialItems,
    predictions: Mapping[str, Any],
    distance_edges_m: Sequence[float] = DISTANCE_BIN_EDGES_M,
) -> SpatialScores:
    """Score ``items`` against ``predictions`` (question id -> prediction; ids that are not items are ignored here,
    see ``join_predictions``). A question without a prediction is a failure (``missing_prediction``)."""
    with gc_paused():
        preds = [predictions.get(q, NO_PREDICTION) for q in items.question_id]
        answers = read_answers(preds, items.form)
        judged = judge(items, answers)
    missing = sum(p is NO_PREDICTION for p in preds)
    return SpatialScores(
        items,
        preds,
        answers,
        judged,
        distance_bins(items.distance_m, distance_edges_m),
        distance_bin_names(distance_edges_m),
        {"questions": len(items), "missing_predictions": missing},
    )


def metrics(scores: SpatialScores) -> dict[str, Any]:
    """The JSON-ready metrics: the bands, the overall row, the four breakdowns, invalid answers by reason and the
    input counts (rows: ``stridegen.eval.spatial.algo.summarize``)."""
    items, judged, invalid = scores.items, scores.judged, scores.invalid
    every = np.ones(len(items), dtype=bool)
    return {
        "parser": PARSER_MODE,
        "tolerance": tolerance_table(),
        "overall": summarize(every, items, judged, invalid),
        "by_category": breakdown(items.category, None, items, judged, invalid),
        "by_predicate": breakdown(items.predicate, None, items, judged, invalid),
        "by_object_class": breakdown(items.object_class, None, items, judged, invalid),
        "by_distance_bin": breakdown(scores.distance_bin, scores.bin_names, items, judged, invalid),
        "invalid_reasons": reason_counts(scores.answers.reason),
        "counts": scores.counts,
    }


def join_predictions(
    predictions: Mapping[str, Any],
    items: SpatialItems,
    others: Mapping[str, str],
    source: str,
    lines: Mapping[str, int],
) -> dict[str, int]:
    """Check that every prediction names a question of the dataset: PredictionFormatError naming the first line
    that does not. Returns the predictions for the dataset's other questions, counted by category (they are not
    spatial questions and are not scored here)."""
    from stridegen.core.errors import PredictionFormatError
    from stridegen.formats.textfile import shown

    known = set(items.question_id)
    other: Counter[str] = Counter()
    unknown = []
    for q in predictions:
        if q in known:
            continue
        category = others.get(q)
        if category is None:
            unknown.append(q)
        else:
            other[category] += 1
    if unknown:
        first = min(unknown, key=lambda q: lines.get(q, 0))
        raise PredictionFormatError(
            source,
            f"line {lines.get(first, '?')}: question {shown(first)} is not a question of the dataset "
            f"({len(unknown)} such prediction(s))",
        )
    return dict(sorted(other.items()))


def evaluate_files(
    dataset_dir: str | Path, pred_path: str | Path, distance_edges_m: Sequence[float] = DISTANCE_BIN_EDGES_M
) -> tuple[SpatialScores, dict[str, Any]]:
    """Score a predictions JSONL (``{question_id, pred}`` per line, ``stridegen.eval.lsr.data.read_predictions``)
    against a built dataset's spatial questions: (scores, metrics; the metrics' ``inputs`` name the predictions
    file and its model, ``stridegen.formats.prediction_inputs``). The predictions are read first, so a bad
    predictions file is named before the dataset is opened."""
    from stridegen.core.errors import DataFormatError
    from stridegen.eval.lsr.data import read_predictions
    from stridegen.formats.prediction_inputs import prediction_inputs

    read = read_predictions(str(pred_path))
    items, others = read_dataset_items(dataset_dir)
    if not len(items):
        raise DataFormatError(dataset_dir, "the dataset has no spatial QA (object_spatial / ego_spatial) to score")
    other = join_predictions(read.values, items, others, str(pred_path), read.lines)
    scores = score(items, read.values, distance_edges_m)
    scores.counts.update({"predictions": len(read.values), "predictions_of_other_categories": other})
    return scores, {**metrics(scores), "inputs": prediction_inputs(pred_path)}


def evaluate_dataset(dataset_dir: str | Path, pred_path: str | Path) -> dict[str, Any]:
    """The metrics dict of a predictions JSONL against a built dataset's spatial questions (``evaluate_files``)."""
    return evaluate_files(dataset_dir, pred_path)[1]
