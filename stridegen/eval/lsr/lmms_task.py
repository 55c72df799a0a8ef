"""What an lmms-eval task exported by stridegen runs (``stridegen export --format lmms-eval``, docs/export.md).

The task folder's generated ``utils.py`` makes one ``LmmsEvalTask`` bound to its own folder and hands its methods to
the task YAML (``!function utils.<name>``); nothing here imports lmms-eval. A document (one line of the task's
JSON-lines data) is one spatiotemporal question of the dataset:

- ``question_id`` (stridegen's), ``question``, ``answer`` (the templated answer), ``predicate``, ``horizon_s``,
  ``group_id``, ``group_size`` (the number of questions of the group);
- ``images``: the Set-of-Mark context frames the question shows, oldest first, as paths relative to the task folder;
- ``lsr``: the question's LSR records (``stridegen.formats.lsr_record.LsrRecord`` fields) as a JSON string, the
  truth the evaluator scores against (a distance-and-direction question has two).

lmms-eval asks ``doc_to_visual`` and ``doc_to_text`` for the model's input, ``process_results`` for each answer (it
keeps the question id, the answer text and the records), and each metric's aggregation for the answers of a run,
which scores them all with stridegen's LSR evaluator (``stridegen.eval.lsr``: the tolerance profile's rules and
answer parser; an answer is a failure unless read within tolerance): ``lsr``, the localization success rate (the
target's distance and direction both within tolerance, over every horizon), ``lsr_<dimension>`` the success rate
of each dimension, and ``tlc`` / ``mlsr``. A group of which a run asked only some questions (lmms-eval's
``--limit``) is scored per horizon and left out of ``tlc`` and ``mlsr``, as a partial group of the dataset is.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from stridegen.core.bounded_json import JsonProblem, decode
from stridegen.core.errors import DataFormatError
from stridegen.formats.lmms_task import DEFAULT_PROFILE, METRICS, POST_PROMPT, PRE_PROMPT
from stridegen.formats.lsr_record import LsrRecord


def _metric_key(metric: str) -> str:
    """The evaluator's metrics key a task metric reads: ``lsr`` and ``lsr_<dimension>`` a rate table, ``tlc`` and
    ``mlsr`` a column of the temporal-consistency table."""
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; metrics: {list(METRICS)}")
    if metric in ("tlc", "mlsr"):
        return metric.upper()
    return metric.removeprefix("lsr_")


def _average_rate(rows: Sequence[dict[str, Any]] | None) -> float:
    """The success rate of a rate table's average row (NaN when the table is absent or the rate is undefined)."""
    for row in rows or ():
        if row.get("time") == "avg" and row.get("success_rate") is not None:
            return float(row["success_rate"])
    return math.nan


def _overall(rows: Sequence[dict[str, Any]], key: str) -> float:
    """``key`` (TLC, MLSR) of the temporal-consistency row of every relation together (NaN when undefined)."""
    for row in rows:
        if row.get("relation") == "Overall" and row.get(key) is not None:
            return float(row[key])
    return math.nan


class LmmsEvalTask:
    """The task functions over the documents of the task folder ``task_dir`` (module docstring), scored with the
    LSR tolerance profile ``profile`` (a name or a YAML path, ``stridegen.eval.lsr.tolerance.load_profile``)."""

    def __init__(self, task_dir: str | Path, profile: str = DEFAULT_PROFILE) -> None:
        self.task_dir = Path(task_dir)
        self.profile = profile

    # ------------------------------------------------------------------------------------------ model input
    def doc_to_visual(self, doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> list[Any]:
        """The question's images as RGB PIL images, oldest first."""
        from PIL import Image

        images = []
        for rel in doc["images"]:
            with Image.open(self.task_dir / rel) as image:
                images.append(image.convert("RGB"))
        return images

    def doc_to_text(self, doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
        """The question between the task's pre- and post-prompt (``lmms_eval_specific_kwargs``, else the defaults)."""
        kwargs = lmms_eval_specific_kwargs or {}
        return f"{kwargs.get('pre_prompt', PRE_PROMPT)}{doc['question']}{kwargs.get('post_prompt', POST_PROMPT)}"

    def doc_to_target(self, doc: dict[str, Any]) -> str:
        """The dataset's own answer (shown in lmms-eval's logs; scoring reads the LSR records)."""
        return str(doc["answer"])

    # ------------------------------------------------------------------------------------------ scoring
    def process_results(self, doc: dict[str, Any], results: Sequence[str]) -> dict[str, dict[str, Any]]:
        """One answer: for every metric, what its aggregation needs (the question id, the answer, the records)."""
        answer = {
            "question_id": doc["question_id"],
            "pred": results[0] if results else "",
            "lsr": doc["lsr"],
            "group_id": doc["group_id"],
            "group_size": doc["group_size"],
        }
        return dict.fromkeys(METRICS, answer)

    def evaluate(self, answers: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """stridegen's LSR metrics dict (``LsrResult.metrics``) of ``answers`` (``process_results`` values)."""
        from stridegen.eval.lsr.evaluate import evaluate
        from stridegen.eval.lsr.items import items_from_records
        from stridegen.eval.lsr.tolerance import load_profile

        profile = load_profile(self.profile)
        records: list[LsrRecord] = []
        predictions: dict[str, Any] = {}
        asked: Counter[str] = Counter()  # group id -> questions answered in this run
        for answer in answers:
            if answer["question_id"] in predictions:  # the same question twice (repeats): the first answer counts
                continue
            predictions[answer["question_id"]] = answer["pred"]
            records += [LsrRecord(**r) for r in self._records(answer)]
            asked[answer["group_id"]] += 1
        size = {a["group_id"]: int(a["group_size"]) for a in answers}
        cut = {g for g, n in asked.items() if n < size[g]}  # groups the run asked in part
        records = [replace(r, partial_group=True) if r.group_id in cut else r for r in records]
        items, _ = items_from_records(records, predictions, profile, on_invalid="fail", missing="fail")
        return evaluate(items, profile).metrics()

    def _records(self, answer: dict[str, Any]) -> list[dict[str, Any]]:
        """The LSR records of an answer's document (its ``lsr`` JSON text), within the limits on inputs (nesting
        depth, no repeated key: core.bounded_json); DataFormatError naming the task folder and the question."""
        where = f"question {answer['question_id']!r}: its 'lsr' field"
        try:
            rows = decode(str(answer["lsr"]))
        except JsonProblem as exc:
            raise DataFormatError(self.task_dir, f"{where}: {exc.reason}") from None
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise DataFormatError(self.task_dir, f"{where} is not a JSON list of LSR records")
        return rows

    def score(self, metric: str, answers: Sequence[dict[str, Any]]) -> float:
        """The value of ``metric`` (a ``METRICS`` name) over ``answers``; NaN where it is undefined."""
        key = _metric_key(metric)
        metrics = self.evaluate(answers)
        if key in ("TLC", "MLSR"):
            return _overall(metrics["temporal_consistency"], key)
        return _average_rate(metrics.get(key))

    def aggregation(self, metric: str) -> Callable[[Sequence[dict[str, Any]]], float]:
        """The aggregation function lmms-eval calls with every answer of a run for ``metric``."""
        _metric_key(metric)  # an unknown metric fails now

        def aggregate(answers: Sequence[dict[str, Any]]) -> float:
            return self.score(metric, answers)

        aggregate.__name__ = f"aggregate_{metric}"
        return aggregate
