"""Spatial QA scores over arrays: when an answer is correct, its error, and the aggregate tables.

- Qualitative rows (yes/no, left/right): correct when the label read equals ``gt_label`` (accuracy).
- Quantitative rows: correct when the value read lies in the tolerance band around ``gt_value`` (success rate);
  the error of every value read is kept for the error distribution. The bands and their sources are the
  constants below.
- An answer with nothing read (a reason, ``stridegen.eval.spatial.parse``) is a failure and counted as invalid
  with its reason; it has no error (the error distribution is over the values read, as SpatialRGPT-Bench's).

Everything is computed with numpy over item arrays; a table row is one boolean mask.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from stridegen.eval.lsr.tolerance import PAPER, Rule
from stridegen.eval.spatial.data import (
    CLOCK,
    DIRECTION,
    DISTANCE,
    FORM_CODE,
    FORMS,
    QUALITATIVE_FORMS,
    QUANTITATIVE_FORMS,
    SpatialItems,
)
from stridegen.eval.spatial.parse import Answers

# Lengths (distances between regions or from the ego, widths, heights, lengths): correct when
# 0.75 * gt <= pred <= 1.25 * gt, both ends included. SpatialRGPT-Bench counts a distance / width / height answer
# as a success in exactly this band (AnjieCheng/SpatialRGPT, scripts/srgpt/eval/evaluate_spatial_with_gpt4.py,
# ``evaluate_quan_dist_question`` and the loop that calls it); STRIDE-QA's distance rule (arXiv 2508.10427,
# section 5.2) is the same band, and this is that rule of our LSR tolerance table (tolerance.PAPER.distance).
LENGTH_RULE: Rule = PAPER.distance
# Heading angles: correct within 10 degrees, wrapping at +-180: STRIDE-QA's direction rule (section 5.2;
# tolerance.PAPER.direction). SpatialRGPT-Bench asks directions only as clock hours.
HEADING_RULE: Rule = PAPER.direction
# Clock directions: correct within one hour on the 12-hour dial, error = min(|dh|, 12 - |dh|) hours
# (SpatialRGPT-Bench, same file: ``error_rate = min(diff, 12 - diff)``, ``success = error_rate <= 1``).
CLOCK_TOLERANCE_H = 1
HOURS_ON_DIAL = 12
# Relative error of a length: |pred - gt| / (gt + 1e-4 m), SpatialRGPT-Bench's error rate (same file); the 1e-4 keeps
# a zero truth (a vertical distance of 0.00 m) finite.
RELATIVE_ERROR_EPS_M = 1e-4
# Quantiles of the error distributions.
ERROR_QUANTILES: tuple[float, ...] = (0.5, 0.75, 0.9)

_QUALITATIVE = np.asarray([FORM_CODE[f] for f in QUALITATIVE_FORMS])
_QUANTITATIVE = np.asarray([FORM_CODE[f] for f in QUANTITATIVE_FORMS])
# The unit of each quantitative form's absolute error.
ERROR_UNIT: dict[str, str] = {DISTANCE: "m", DIRECTION: "deg", CLOCK: "h"}


def tolerance_table() -> dict[str, str]:
    """The band of each quantitative form, in words (metrics.json and metrics.md)."""
    low, high = 1 - LENGTH_RULE.range, 1 + LENGTH_RULE.range
    return {
        DISTANCE: f"{low:g} * gt <= pred <= {high:g} * gt (SpatialRGPT-Bench; STRIDE-QA distance)",
        DIRECTION: f"|pred - gt| <= {HEADING_RULE.range:g} degrees, wrapped at +-180 (STRIDE-QA direction)",
        CLOCK: f"min(|dh|, 12 - |dh|) <= {CLOCK_TOLERANCE_H} hour (SpatialRGPT-Bench direction)",
    }


@dataclass(frozen=True)
class Judged:
    """Per item: ``correct``; ``abs_error`` (m, degrees or hours by form; NaN for qualitative rows and answers
    with no value); ``rel_error`` (lengths only, else NaN)."""

    correct: np.ndarray  # [N] bool
    abs_error: np.ndarray  # [N] float64
    rel_error: np.ndarray  # [N] float64


def clock_error_h(gt_hour: np.ndarray, pred_hour: np.ndarray) -> np.ndarray:
    """Hours between two clock hours the short way round the dial (0..6); NaN where either is NaN."""
    diff = np.abs(np.asarray(pred_hour, dtype=np.float64) - np.asarray(gt_hour, dtype=np.float64)) % HOURS_ON_DIAL
    return np.minimum(diff, HOURS_ON_DIAL - diff)


def judge(items: SpatialItems, answers: Answers) -> Judged:
    """Correctness and error of every item (see the module docstring for the rules)."""
    n = len(items)
    correct = np.zeros(n, dtype=bool)
    abs_error = np.full(n, np.nan)
    rel_error = np.full(n, np.nan)
    read = np.asarray([r == "" for r in answers.reason], dtype=bool)
    qualitative = np.isin(items.form, _QUALITATIVE) & read
    correct[qualitative] = np.asarray(answers.label, dtype=object)[qualitative] == items.gt_label[qualitative]
    gt, pred = items.gt_value, answers.value
    with np.errstate(invalid="ignore"):
        sel = (items.form == FORM_CODE[DISTANCE]) & read
        correct[sel] = LENGTH_RULE.judge(gt[sel], pred[sel])
        abs_error[sel] = np.abs(pred[sel] - gt[sel])
        rel_error[sel] = abs_error[sel] / (gt[sel] + RELATIVE_ERROR_EPS_M)
        sel = (items.form == FORM_CODE[DIRECTION]) & read
        correct[sel] = HEADING_RULE.judge(gt[sel], pred[sel])
        abs_error[sel] = np.abs(np.mod(pred[sel] - gt[sel] + 180.0, 360.0) - 180.0)
        sel = (items.form == FORM_CODE[CLOCK]) & read
        abs_error[sel] = clock_error_h(gt[sel], pred[sel])
        correct[sel] = abs_error[sel] <= CLOCK_TOLERANCE_H
    return Judged(correct, abs_error, rel_error)


def error_stats(errors: np.ndarray) -> dict[str, Any]:
    """``{n, mean, p50, p75, p90, max}`` of the finite errors (``{n: 0}`` when none)."""
    e = np.asarray(errors, dtype=np.float64)
    e = e[np.isfinite(e)]
    if e.size == 0:
        return {"n": 0}
    out: dict[str, Any] = {"n": int(e.size), "mean": float(e.mean())}
    for q, v in zip(ERROR_QUANTILES, np.quantile(e, ERROR_QUANTILES).tolist(), strict=True):
        out[f"p{round(q * 100)}"] = float(v)
    out["max"] = float(e.max())
    return out


def _rate(hits: int, n: int) -> float | None:
    return hits / n if n else None


def summarize(sel: np.ndarray, items: SpatialItems, judged: Judged, invalid: np.ndarray) -> dict[str, Any]:
    """One table row over the items in ``sel``: counts, the rate over all, accuracy of the qualitative rows,
    success rate and error distribution (per form) of the quantitative rows, and the invalid answers."""
    n, hits = int(sel.sum()), int((judged.correct & sel).sum())
    row: dict[str, Any] = {"n": n, "correct": hits, "rate": _rate(hits, n), "invalid": int((invalid & sel).sum())}
    qual = sel & np.isin(items.form, _QUALITATIVE)
    if qual.any():
        k = int((judged.correct & qual).sum())
        row["qualitative"] = {
            "n": int(qual.sum()),
            "correct": k,
            "accuracy": _rate(k, int(qual.sum())),
            "invalid": int((invalid & qual).sum()),
        }
    quant = sel & np.isin(items.form, _QUANTITATIVE)
    if quant.any():
        k = int((judged.correct & quant).sum())
        errors: dict[str, Any] = {}
        for form in QUANTITATIVE_FORMS:
            of_form = quant & (items.form == FORM_CODE[form])
            if of_form.any():
                errors[form] = {f"abs_error_{ERROR_UNIT[form]}": error_stats(judged.abs_error[of_form])}
                if form == DISTANCE:
                    errors[form]["rel_error"] = error_stats(judged.rel_error[of_form])
        row["quantitative"] = {
            "n": int(quant.sum()),
            "success": k,
            "success_rate": _rate(k, int(quant.sum())),
            "invalid": int((invalid & quant).sum()),
            "error": errors,
        }
    return row


def breakdown(
    keys: np.ndarray, names: Sequence[str] | None, items: SpatialItems, judged: Judged, invalid: np.ndarray
) -> dict[str, dict[str, Any]]:
    """``summarize`` per key value: ``keys`` are strings (rows in sorted order) or, with ``names``, integer codes
    into ``names`` (rows in code order). Values without items are left out."""
    if names is None:
        uniq, inverse = np.unique(np.asarray(keys, dtype=str), return_inverse=True)
        labels, codes = [str(u) for u in uniq.tolist()], inverse.reshape(-1)
    else:
        labels, codes = list(names), np.asarray(keys)
    return {
        label: summarize(codes == c, items, judged, invalid) for c, label in enumerate(labels) if (codes == c).any()
    }


def reason_counts(reasons: Sequence[str]) -> dict[str, int]:
    """Invalid answers by reason, in name order ("" -- something was read -- is not a reason)."""
    uniq, counts = np.unique(np.asarray(reasons, dtype=str), return_counts=True)
    return {str(r): int(c) for r, c in zip(uniq.tolist(), counts.tolist(), strict=True) if r}


def form_names(form: np.ndarray) -> list[str]:
    """The name of each form code ("" for a row without one)."""
    return [FORMS[c] if c >= 0 else "" for c in np.asarray(form).tolist()]
