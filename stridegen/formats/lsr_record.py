"""The record the STRIDE-QA localization evaluator scores: one question-dimension of a dataset, with its truth.

Written by the QA generator (``stridegen.pipeline.qa.spatiotemporal_records.lsr_records``) and read by the evaluator
(``stridegen.eval.lsr``); it lives here, below both, so neither imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LsrRecord:
    """One scored question-dimension of a dataset (what the evaluator needs from a stridegen dataset).

    ``horizon_s`` is the prediction horizon in whole seconds (0 = the current frame). ``gt_value`` is in the
    canonical unit of the dimension (m, degrees ego-frame counter-clockwise, m/s) unless ``unit`` says otherwise.
    A question that asks two dimensions (distance and direction) is two records with the same ``question_id``.
    ``partial_group``: the group lacks horizons its clip has no frame for (the generator's
    ``gt_extra["missing_horizons"]``); its questions are scored per horizon, and the group is left out of TLC and
    MLSR, which need every horizon.
    """

    question_id: str
    group_id: str
    horizon_s: int
    dimension: str
    gt_value: float
    unit: str | None = None
    scenario: str | None = None
    object_class: str | None = None
    out_of_view: bool | None = None
    partial_group: bool = False
