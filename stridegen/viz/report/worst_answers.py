"""A model's worst answers for the report: the failed answers of a result's per-question file, ranked, with their
question and Set-of-Mark image drawn from the report's dataset.

Per-question files (JSON Lines beside the result's ``metrics.json``; nothing from an evaluator is imported):

- ``eval spatial``'s ``items.jsonl``: ``question_id``, ``pred`` (the answer as given), ``read``, ``gt``, ``correct``,
  ``abs_error``, ``rel_error``, ``reason``, ``form``;
- ``eval lsr``'s ``items.jsonl``: ``question_id``, ``horizon_s`` and per dimension ``gt``, ``pred`` (the value
  read), ``success`` and ``reason``.

Ranking: only failed answers are listed; among them an answer with nothing read comes first, then the largest
error, then file order. Errors are put on one scale: lengths and speeds as relative errors (``|pred - gt| / gt``),
headings as a share of 180 degrees, clock directions as a share of 6 hours, a wrong yes / no or left / right answer
as 1; an LSR question takes its worst dimension. Only ``n`` rows are kept while the file streams, so a file of
millions of answers costs one pass and ``n`` rows of memory.

Images: a spatial question shows its keyframe image with every region marked (as the model was shown it, and as
the gallery draws it); a spatiotemporal question shows its current frame (the last context frame) with its target
marked.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.core.errors import DataFormatError
from stridegen.shards.reader import Dataset
from stridegen.shards.samples import SceneIndex
from stridegen.viz.report.gallery import jpeg_base64, marked_thumbnail
from stridegen.viz.report.results import EvalResult, jsonl_lines

DEFAULT_WORST = 8
ITEMS_FILE = "items.jsonl"
RELATIVE_EPS = 1e-4  # keeps a zero truth's relative error finite
# The error that counts as "entirely wrong" per quantitative answer form of eval spatial (abs_error's unit).
ERROR_SCALE = {"direction": 180.0, "clock": 6.0}
LSR_UNITS = {"target_distance": "m", "target_direction": "deg", "target_velocity": "m/s", "ego_velocity": "m/s"}


@dataclass
class WorstAnswer:
    """One failed answer: what the result file says, and (once found in the dataset) its question and image."""

    question_id: str
    answer: str  # the model's answer as given (spatial) or the values read from it (LSR)
    scored: str  # what was compared: the value read against the truth, or why nothing was read
    error: float  # on the common scale of the module docstring (inf: nothing read)
    question: str = ""
    truth: str = ""  # the dataset's answer
    predicate: str = ""
    scene: str = ""
    camera: str = ""
    frame: int = -1
    image: str = ""  # base64 JPEG
    image_size: tuple[int, int] = (0, 0)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _fmt(value: Any) -> str:
    x = _number(value)
    return "-" if x is None else f"{x:.3g}"


def spatial_failure(row: dict[str, Any]) -> WorstAnswer | None:
    """A failed row of eval spatial's items.jsonl as a WorstAnswer; None for a correct one."""
    if row.get("correct"):
        return None
    pred = row.get("pred")
    answer = "(no prediction)" if pred is None else str(pred)
    reason = row.get("reason") or ""
    if reason:
        return WorstAnswer(str(row["question_id"]), answer, f"nothing read: {reason}", math.inf)
    form = str(row.get("form", ""))
    rel, err = _number(row.get("rel_error")), _number(row.get("abs_error"))
    if rel is not None:
        error = rel
    elif err is not None:
        error = err / ERROR_SCALE.get(form, 1.0)
    else:
        error = 1.0  # a wrong label
    scored = f"read {_fmt(row.get('read')) if _number(row.get('read')) is not None else row.get('read')}"
    scored += f", truth {row.get('gt') if _number(row.get('gt')) is None else _fmt(row.get('gt'))}"
    if err is not None:
        scored += f", error {_fmt(err)}" + (f" ({100 * rel:.0f}%)" if rel is not None else "")
    return WorstAnswer(str(row["question_id"]), answer, scored, error)


def _dimension_error(name: str, gt: float | None, pred: float | None) -> float:
    if pred is None or gt is None:
        return math.inf
    if name == "target_direction":
        return abs((pred - gt + 180.0) % 360.0 - 180.0) / 180.0
    return abs(pred - gt) / (abs(gt) + RELATIVE_EPS)


def lsr_failure(row: dict[str, Any]) -> WorstAnswer | None:
    """A row of eval lsr's items.jsonl with a failed dimension as a WorstAnswer; None when every one succeeded."""
    success: dict[str, bool] = row.get("success", {})
    if all(success.values()):
        return None
    gt, pred, reasons = row.get("gt", {}), row.get("pred", {}), row.get("reason", {})
    answers, scored, errors = [], [], []
    for name, ok in success.items():
        unit = LSR_UNITS.get(name, "")
        g, p = _number(gt.get(name)), _number(pred.get(name))
        label = name.replace("_", " ")
        answers.append(f"{label} {_fmt(p)} {unit}" if p is not None else f"{label}: nothing read")
        why = f" ({reasons[name]})" if name in reasons else ""
        scored.append(f"{label} {'ok' if ok else 'failed'}: {_fmt(p)} vs {_fmt(g)} {unit}{why}")
        if not ok:
            errors.append(_dimension_error(name, g, p))
    horizon = row.get("horizon_s")
    head = f"t={horizon}s: " if horizon is not None else ""
    return WorstAnswer(str(row["question_id"]), head + "; ".join(answers), "; ".join(scored), max(errors))


FAILURES = {"spatial": spatial_failure, "lsr": lsr_failure}


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    for lineno, row in jsonl_lines(path):
        if not isinstance(row, dict) or "question_id" not in row:
            raise DataFormatError(path, f"line {lineno}: not a per-question row (no question_id)")
        yield row


def worst_failures(result: EvalResult, n: int) -> tuple[list[WorstAnswer], int] | None:
    """The ``n`` worst failed answers of ``result``'s per-question file and the number of failed answers; None
    when the result has no such file beside it."""
    failure = FAILURES.get(result.kind)
    path = result.source.parent / ITEMS_FILE
    if failure is None or n <= 0 or not path.is_file():
        return None
    failed = 0
    heap: list[tuple[float, int, WorstAnswer]] = []  # (error, -order) of the n worst kept, the least bad on top
    for order, row in enumerate(_rows(path)):
        answer = failure(row)
        if answer is None:
            continue
        failed += 1
        entry = (answer.error, -order, answer)
        if len(heap) < n:
            heapq.heappush(heap, entry)
        elif entry[:2] > heap[0][:2]:
            heapq.heapreplace(heap, entry)
    ranked = sorted(heap, key=lambda e: (-e[0], -e[1]))
    return [e[2] for e in ranked], failed


def _picture(index: SceneIndex, k: int, c: int, frame: int, targets: list[int] | None, width: int) -> np.ndarray:
    """``frame`` of camera ``c`` with keyframe image (k, c)'s regions marked: all of them, or only ``targets``."""
    return marked_thumbnail(index, k, c, frame, width, targets)


def attach_questions(dataset: Dataset, answers: list[WorstAnswer], width: int) -> None:
    """Fill each answer's question, truth, predicate, place and image from the dataset (scenes are read only until
    every question is found); questions the dataset does not have keep empty fields."""
    wanted: dict[str, list[WorstAnswer]] = {}
    for a in answers:
        wanted.setdefault(a.question_id, []).append(a)
    for name in dataset.scenes:
        if not wanted:
            return
        view = dataset.scene(name)
        try:
            qa = view.qa
            if qa is None:
                continue
            ids = [str(q) for q in qa.question_id.tolist()]
            rows = [i for i, q in enumerate(ids) if q in wanted]
            if not rows:
                continue
            index = SceneIndex(view)
            for q in rows:
                k, c = int(qa.keyframe_index[q]), int(qa.channel_index[q])
                spatiotemporal = str(qa.category[q]) == "spatiotemporal"
                context = [int(f) for f in np.asarray(qa.frame_indices[q]).reshape(-1) if f >= 0]
                frame = context[-1] if spatiotemporal and context else int(view.keyframes.frame_index[k])
                targets = [int(r) for r in qa.region_ids[q] if r >= 0] if spatiotemporal else None
                picture = _picture(index, k, c, frame, targets, width)
                for a in wanted.pop(ids[q]):
                    a.question, a.truth, a.predicate = str(qa.question[q]), str(qa.answer[q]), str(qa.predicate[q])
                    a.scene, a.camera, a.frame = name, str(view.cameras.channel[c]), frame
                    a.image = jpeg_base64(picture)
                    a.image_size = (int(picture.shape[1]), int(picture.shape[0]))
        finally:
            view.close()
