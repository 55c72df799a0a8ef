"""LSR items built from inputs: the ``ItemBuilder`` (group codes, the bad-input policy, answer parsing) shared by
every input path, and the join of ``LsrRecord``s (a stridegen dataset or a records JSONL) with predictions keyed
by question id. Official STRIDE-QA-Bench responses are turned into items by ``stridegen.eval.lsr.bench``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from stridegen.core.gc_pause import gc_paused
from stridegen.eval.lsr.answer_parser import parse_grouped
from stridegen.eval.lsr.answer_values import Kind, convert_unit
from stridegen.eval.lsr.data import (
    DIMENSION_CODE,
    DIMENSION_KIND,
    DIMENSIONS,
    LsrItems,
    finite_number,
    item_key,
    key_counts,
)
from stridegen.eval.lsr.tolerance import ToleranceProfile
from stridegen.formats.lsr_record import LsrRecord
from stridegen.formats.textfile import shown


def parse_predictions(
    texts: Sequence[str], dimension: np.ndarray, profile: ToleranceProfile
) -> tuple[np.ndarray, list[str]]:
    """Read each answer text as its item's dimension kind with the profile's grammar."""
    return parse_grouped(texts, dimension, [DIMENSION_KIND[name] for name in DIMENSIONS], profile.parser)


# ============================================================================================ building items

INVALID_POLICIES: tuple[str, ...] = ("error", "skip", "fail")


class ItemBuilder:
    """Collects items column by column, codes groups, and applies the bad-input policy.

    ``on_invalid``: ``error`` raises PredictionFormatError naming the source and the record; ``skip`` drops the
    record and counts it by reason; ``fail`` keeps an item whose *prediction* is bad (missing, null, NaN, not
    text) and scores it as a failure (the toolkit's treatment of a missing ``pred``), and drops records that
    cannot be scored at all (no truth, unknown category, duplicate). Every drop and every forced failure is
    counted in ``report()``; nothing changes a number silently.

    Columns are plain lists (fast to append); rare per-item facts (a structured value, why a value is missing,
    an item-level view flag) are kept in sparse dicts keyed by item index.
    """

    def __init__(self, source: str, on_invalid: str = "error") -> None:
        if on_invalid not in INVALID_POLICIES:
            raise ValueError(f"on_invalid must be one of {INVALID_POLICIES}, got {on_invalid!r}")
        self.source = source
        self.on_invalid = on_invalid
        self.question_id: list[str] = []
        self.group: list[int] = []
        self.horizon: list[int] = []
        self.dimension: list[int] = []
        self.gt: list[float] = []
        self.text: list[str | None] = []  # answer text, or None for a structured prediction
        self.value: dict[int, float] = {}  # structured predictions (items whose text is None)
        self.reason: dict[int, str] = {}  # why a structured prediction is missing
        self.item_out_of_view: dict[int, int] = {}
        self.group_out_of_view: dict[int, int] = {}
        self.where: dict[int, str] = {}  # only filled by the slow path, for messages
        self.group_index: dict[str, int] = {}
        self.group_ids: list[str] = []
        self.skipped: dict[str, int] = {}
        self.forced_failures: dict[str, int] = {}
        self.examples: dict[str, list[str]] = {}
        # Numeric columns of items added earlier: (group, horizon, dimension, gt) array blocks, in item order;
        # the lists above hold only the items added one by one since the last block.
        self._blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def _note(self, table: dict[str, int], reason: str, where: str) -> None:
        table[reason] = table.get(reason, 0) + 1
        ex = self.examples.setdefault(reason, [])
        if len(ex) < 5:
            ex.append(where)

    def reject(self, reason: str, where: str) -> None:
        """A record that cannot be scored: raise (``error``) or count as skipped."""
        if self.on_invalid == "error":
            from stridegen.core.errors import PredictionFormatError

            raise PredictionFormatError(self.source, f"{where}: {reason.replace('_', ' ')}")
        self._note(self.skipped, reason, where)

    def skip(self, reason: str, where: str) -> None:
        """A record LSR does not score although it is valid (whatever ``on_invalid``): counted as skipped."""
        self._note(self.skipped, reason, where)

    def bad_prediction(self, reason: str, where: str) -> bool:
        """A record whose prediction is unusable. Returns True when the item is kept as a forced failure."""
        if self.on_invalid == "fail":
            self._note(self.forced_failures, reason, where)
            return True
        self.reject(reason, where)
        return False

    def group_code(self, group_id: str) -> int:
        code = self.group_index.get(group_id)
        if code is None:
            code = self.group_index[group_id] = len(self.group_ids)
            self.group_ids.append(group_id)
        return code

    def extend(
        self,
        question_id: list[str],
        group: np.ndarray,
        horizon: np.ndarray,
        dimension: np.ndarray,
        gt: np.ndarray,
        text: list[str],
    ) -> None:
        """Add a block of items whose predictions are all answer texts (group codes from ``group_code``)."""
        n = len(question_id)
        if not len(group) == len(horizon) == len(dimension) == len(gt) == len(text) == n:
            raise ValueError("ItemBuilder.extend: columns of different lengths")
        self._flush()
        self.question_id.extend(question_id)
        self.text.extend(text)
        self._blocks.append(
            (
                np.asarray(group, dtype=np.int64),
                np.asarray(horizon, dtype=np.int64),
                np.asarray(dimension, dtype=np.int64),
                np.asarray(gt, dtype=np.float64),
            )
        )

    def _flush(self) -> None:
        """Move the items added one by one into an array block."""
        if self.group:
            self._blocks.append(
                (
                    np.asarray(self.group, dtype=np.int64),
                    np.asarray(self.horizon, dtype=np.int64),
                    np.asarray(self.dimension, dtype=np.int64),
                    np.asarray(self.gt, dtype=np.float64),
                )
            )
            self.group, self.horizon, self.dimension, self.gt = [], [], [], []

    def _columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(group, horizon, dimension, gt) of every item so far."""
        self._flush()
        if not self._blocks:
            return (
                np.zeros(0, dtype=np.int64),
                np.zeros(0, dtype=np.int64),
                np.zeros(0, dtype=np.int64),
                np.zeros(0, dtype=np.float64),
            )
        if len(self._blocks) > 1:
            self._blocks = [tuple(np.concatenate(cols) for cols in zip(*self._blocks, strict=True))]  # type: ignore[list-item]
        return self._blocks[0]

    def add(
        self,
        question_id: str,
        group_id: str,
        horizon: int,
        dimension: int,
        gt: float,
        text: str | None,
        value: float = float("nan"),
        out_of_view: int = -1,
        where: str = "",
        reason: str = "invalid_prediction",
    ) -> None:
        """Add one item: ``text`` to parse, or (``text`` None) a structured ``value``, NaN with ``reason``."""
        i = len(self.question_id)
        self.question_id.append(question_id)
        self.group.append(self.group_code(group_id))
        self.horizon.append(horizon)
        self.dimension.append(dimension)
        self.gt.append(gt)
        self.text.append(text)
        if text is None:
            self.value[i] = value
            self.reason[i] = reason
        if out_of_view != -1:
            self.item_out_of_view[i] = out_of_view
        if where:
            self.where[i] = where

    def _duplicate_mask(self, group: np.ndarray, horizon: np.ndarray, dimension: np.ndarray) -> np.ndarray:
        """Keep-mask dropping later items of a repeated (group, horizon, dimension), per the policy."""
        n = len(group)
        keep = np.ones(n, dtype=bool)
        if n == 0:
            return keep
        key = item_key(group, horizon, dimension)
        counts = key_counts(key)
        if counts is not None and counts.max() <= 1:
            return keep  # no repeated slot (the common case), found with one counting pass
        _, first = np.unique(key, return_index=True)
        if len(first) == n:
            return keep
        keep[:] = False
        keep[first] = True
        for i in np.flatnonzero(~keep).tolist():
            self.reject(
                "duplicate_slot",
                self.where.get(i, f"question {self.question_id[i]!r}")
                + f" ({DIMENSIONS[dimension[i]]} at {horizon[i]} s repeats an earlier question)",
            )
        return keep

    def finish(
        self,
        profile: ToleranceProfile,
        group_labels: dict[str, tuple[str | None, str | None]],
        partial_groups: set[str] | frozenset[str] = frozenset(),
    ) -> LsrItems:
        """Drop repeated slots, parse the answer texts with the profile's grammar, return the items.
        ``partial_groups``: group ids left out of TLC / MLSR (``LsrItems.group_partial``)."""
        n = len(self.question_id)
        qids, all_texts = self.question_id, self.text
        group, horizon, dimension, gt = self._columns()
        keep = self._duplicate_mask(group, horizon, dimension)
        pred = np.full(n, np.nan)
        reasons = [""] * n
        for i, v in self.value.items():
            pred[i] = v
            if not np.isfinite(v):
                reasons[i] = self.reason[i]
        if not self.value:
            text_idx = None
            texts = all_texts
        else:
            text_idx = [i for i, t in enumerate(all_texts) if t is not None]
            texts = [all_texts[i] for i in text_idx]
        if texts:
            # Without forced values every item has a text; otherwise text_idx lists the items that have one.
            values, why = parse_predictions(
                cast("list[str]", texts), dimension if text_idx is None else dimension[text_idx], profile
            )
            if text_idx is None:
                pred, reasons = values, why
            else:
                pred[text_idx] = values
                for j, i in enumerate(text_idx):
                    reasons[i] = why[j]
        group_oov = np.full(len(self.group_ids), -1, dtype=np.int8)
        for g, flag in self.group_out_of_view.items():
            group_oov[g] = flag
        out_of_view = group_oov[group] if n else np.zeros(0, dtype=np.int8)
        for i, flag in self.item_out_of_view.items():
            out_of_view[i] = flag
        question_id = qids
        if not keep.all():
            idx = np.flatnonzero(keep)
            question_id = [question_id[i] for i in idx.tolist()]
            reasons = [reasons[i] for i in idx.tolist()]
            group, horizon, dimension = group[idx], horizon[idx], dimension[idx]
            gt, pred, out_of_view = gt[idx], pred[idx], out_of_view[idx]
        labels = [group_labels.get(g, (None, None)) for g in self.group_ids]
        return LsrItems(
            question_id=question_id,
            group=group,
            group_ids=self.group_ids,
            horizon=horizon,
            dimension=dimension,
            gt=gt,
            pred=pred,
            pred_reason=reasons,
            out_of_view=out_of_view,
            group_scenario=[lab[0] for lab in labels],
            group_object_class=[lab[1] for lab in labels],
            group_partial=[g in partial_groups for g in self.group_ids] if partial_groups else [],
        )

    def report(self) -> dict[str, Any]:
        return {
            "skipped": dict(sorted(self.skipped.items())),
            "forced_failures": dict(sorted(self.forced_failures.items())),
            "examples": {k: v for k, v in sorted(self.examples.items())},
        }


# ============================================================================================ joining predictions


def items_from_records(
    records: Sequence[LsrRecord],
    predictions: dict[str, Any],
    profile: ToleranceProfile,
    on_invalid: str = "error",
    missing: str = "fail",
    source: str = "<predictions>",
    lines: Mapping[str, int] | None = None,
    other_questions: Mapping[str, str] | None = None,
) -> tuple[LsrItems, dict[str, Any]]:
    """Join dataset records with predictions keyed by question id.

    A prediction is free text (parsed with the profile's grammar), a number in the dimension's canonical unit
    (only for a one-dimension question), ``{"value": v, "unit": u}``, or a mapping dimension -> number. Records
    without a prediction are failures (``missing="fail"``) or left out (``missing="exclude"``), and counted.
    A prediction for a question the records do not have is skipped as ``not_a_spatiotemporal_question`` when
    ``other_questions`` (question id -> category: the dataset's questions that LSR does not score) names it (whatever
    ``on_invalid``: a whole dataset's predictions hold them), else it is ``unknown_question_id``. ``lines``
    (question id -> line of the predictions file) puts the line in messages.
    """
    if missing not in ("fail", "exclude"):
        raise ValueError(f"missing must be 'fail' or 'exclude', got {missing!r}")
    join = _Join(source, lines or {}, other_questions or {})
    with gc_paused():
        return _items_from_records(records, predictions, profile, on_invalid, missing, join)


@dataclass(frozen=True)
class _Join:
    """Where the predictions come from, for messages: the file, each id's line, the questions LSR does not score."""

    source: str
    lines: Mapping[str, int]
    other_questions: Mapping[str, str]

    def where(self, question_id: str) -> str:
        line = self.lines.get(question_id)
        return f"{'' if line is None else f'line {line}: '}question {shown(question_id)}"

    def reject_unknown(self, builder: ItemBuilder, question_id: str) -> None:
        category = self.other_questions.get(question_id)
        if category is None:
            builder.reject("unknown_question_id", self.where(question_id))
        else:  # a whole dataset's predictions (stridegen predict) hold them: valid, just not LSR's to score
            builder.skip("not_a_spatiotemporal_question", f"{self.where(question_id)} ({category})")


def _items_from_records(
    records: Sequence[LsrRecord],
    predictions: dict[str, Any],
    profile: ToleranceProfile,
    on_invalid: str,
    missing: str,
    join: _Join,
) -> tuple[LsrItems, dict[str, Any]]:
    builder = ItemBuilder(join.source, on_invalid)
    dims_per_question: dict[str, int] = {}
    for r in records:
        dims_per_question[r.question_id] = dims_per_question.get(r.question_id, 0) + 1
    unknown = [q for q in predictions if q not in dims_per_question]
    for q in unknown:
        join.reject_unknown(builder, q)
    n_missing = 0
    labels: dict[str, tuple[str | None, str | None]] = {}
    partial = {r.group_id for r in records if r.partial_group}
    for r in records:
        where = f"{join.where(r.question_id)} ({r.dimension})"
        if r.dimension not in DIMENSION_CODE:
            builder.reject("unknown_dimension", where)
            continue
        kind = DIMENSION_KIND[r.dimension]
        gt = finite_number(r.gt_value)
        if gt is None:
            builder.reject("bad_gt_value", where)
            continue
        try:
            gt = convert_unit(gt, r.unit, kind)
        except ValueError:
            builder.reject("bad_gt_unit", where)
            continue
        labels.setdefault(r.group_id, (r.scenario, r.object_class))
        oov = -1 if r.out_of_view is None else int(bool(r.out_of_view))
        text, value, reason = None, float("nan"), "missing_prediction"
        if r.question_id not in predictions:
            n_missing += 1
            if missing == "exclude":
                continue
        else:
            text, value, problem = _read_prediction(
                predictions[r.question_id], r.dimension, kind, dims_per_question[r.question_id]
            )
            if problem is not None:
                if not builder.bad_prediction(problem, where):
                    continue
                reason = problem
        builder.add(
            r.question_id,
            r.group_id,
            int(r.horizon_s),
            DIMENSION_CODE[r.dimension],
            gt,
            text,
            value,
            oov,
            where,
            reason,
        )
    items = builder.finish(profile, labels, partial)
    report = builder.report()
    report["missing_predictions"] = n_missing
    report["missing_policy"] = missing
    report["unknown_question_ids"] = len(unknown)
    return items, report


def _read_prediction(pred: Any, dimension: str, kind: Kind, n_dims: int) -> tuple[str | None, float, str | None]:
    """(text, value, problem) for one prediction entry; ``problem`` names what is wrong, else None."""
    nan = float("nan")
    if isinstance(pred, str):
        return pred, nan, None
    if isinstance(pred, dict):
        if dimension in pred or kind in pred:
            entry = pred.get(dimension, pred.get(kind))
            return _read_prediction(entry, dimension, kind, 1)
        if "value" in pred:
            if n_dims > 1:  # one value for a question of two dimensions (distance and direction): which one?
                return None, nan, "ambiguous_numeric_prediction"
            v = finite_number(pred["value"])
            if v is None:
                return None, nan, "bad_prediction_value"
            try:
                return None, convert_unit(v, pred.get("unit"), kind), None
            except ValueError:
                return None, nan, "bad_prediction_unit"
        return None, nan, "prediction_lacks_dimension"
    if pred is None:
        return None, nan, "null_prediction"
    v = finite_number(pred)
    if v is None:
        return None, nan, "bad_prediction_value"
    if n_dims > 1:
        return None, nan, "ambiguous_numeric_prediction"
    return None, v, None
