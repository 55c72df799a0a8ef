"""Reading a model's answers to spatial questions: the label of a qualitative answer, the number of a
quantitative one.

Numbers come from stridegen's robust answer grammar (``stridegen.eval.lsr.answer_parser``, docs/metrics-lsr.md):
signs, ranges, number words, unit conversion (inch 0.0254 m, foot 0.3048 m, cm 0.01 m: the factors SpatialRGPT-Bench
gives its converter, AnjieCheng/SpatialRGPT ``scripts/srgpt/eval/evaluate_spatial_with_gpt4.py``), clock positions;
a bare number without a unit is not a value. By form:

- ``distance`` rows are read as a length in metres;
- ``direction`` rows as a heading angle in degrees (0 ahead, left positive, (-180, 180]); a clock position in the
  answer is read as its angle;
- ``clock`` rows as a direction too, turned into the nearest clock hour (``core.angles.clock_direction``: 12 ahead,
  3 right), so "2 o'clock" and "-60 degrees" are both hour 2.

Labels (our grammar, no regular expression over the question): the answer is case-folded and Unicode-normalised
(``normalize_answer``) and split into words. Its first word decides when it is one of the form's words (yes / no
and their synonyms such as "correct", "indeed", "incorrect"; left / right); otherwise the answer holds exactly one
label word anywhere ("The answer is no."), or it has no label (``no_label``) or both (``ambiguous_label``).

A prediction that is not text: a finite JSON number is the value in the row's canonical unit (metres, degrees, clock
hour), ``{"value": v, "unit": u}`` converts ``u``; neither means anything for a qualitative row. Every answer that
yields no value or label gets a reason, and is scored as a failure (``stridegen.eval.spatial.algo``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from stridegen.core import angles
from stridegen.eval.lsr.answer_parser import parse_many
from stridegen.eval.lsr.answer_values import Kind, ParserMode, convert_unit
from stridegen.eval.lsr.data import finite_number
from stridegen.eval.lsr.robust_grammar import normalize_answer
from stridegen.eval.spatial.data import (
    CLOCK,
    DIRECTION,
    DISTANCE,
    FORMS,
    LEFT_RIGHT,
    NO_FORM,
    QUALITATIVE_FORMS,
    YES_NO,
)

NO_PREDICTION: Any = object()  # the prediction of a question the predictions file does not answer

# The answer grammar's kind of each quantitative form.
FORM_KIND: dict[str, Kind] = {DISTANCE: "distance", DIRECTION: "direction", CLOCK: "direction"}
PARSER_MODE: ParserMode = "robust"

# First words that answer a qualitative question, by form.
_FIRST_WORD: dict[str, dict[str, str]] = {
    YES_NO: {
        **dict.fromkeys(("yes", "yeah", "yep", "correct", "indeed", "true", "affirmative"), "yes"),
        **dict.fromkeys(("no", "nope", "incorrect", "not", "false", "wrong", "negative"), "no"),
    },
    LEFT_RIGHT: {"left": "left", "right": "right"},
}
# Words that answer it anywhere in the text (when the first word does not).
_ANYWHERE: dict[str, dict[str, str]] = {
    YES_NO: {"yes": "yes", "no": "no"},
    LEFT_RIGHT: {"left": "left", "right": "right"},
}
_WORD = re.compile(r"[^\W\d_]+")
_CLOCK_UNITS = (None, "o'clock", "oclock", "h", "hour", "hours")


@dataclass(frozen=True)
class Answers:
    """What was read from each prediction: ``value`` (quantitative rows: metres, degrees or clock hour; NaN where
    none), ``label`` (qualitative rows; "" where none) and ``reason`` ("" when something was read, else why not)."""

    value: np.ndarray  # [N] float64
    label: list[str]
    reason: list[str]


def parse_label(text: str, form: str) -> tuple[str, str]:
    """(label, "") read from a qualitative answer of ``form`` (``yes_no`` or ``left_right``), or ("", reason):
    ``empty``, ``no_label``, ``ambiguous_label``."""
    words = _WORD.findall(normalize_answer(text))
    if not words:
        return "", "empty" if not text.strip() else "no_label"
    first = _FIRST_WORD[form].get(words[0])
    if first is not None:
        return first, ""
    anywhere = _ANYWHERE[form]
    found = {anywhere[w] for w in words if w in anywhere}
    if len(found) == 1:
        return found.pop(), ""
    return "", "ambiguous_label" if found else "no_label"


def degrees_to_clock(angle_deg: np.ndarray) -> np.ndarray:
    """The nearest clock hour (1..12, 12 ahead, 3 right) of heading angles in degrees (0 ahead, left positive);
    NaN where the angle is not finite."""
    a = np.asarray(angle_deg, dtype=np.float64)
    ok = np.isfinite(a)
    out = np.full(a.shape, np.nan)
    rad = np.radians(a[ok])
    out[ok] = angles.clock_direction(np.cos(rad), np.sin(rad))
    return out


def structured_value(pred: Any, form: str) -> tuple[float, str]:
    """(value, "") of a prediction that is not text, for a quantitative ``form``, or (NaN, reason)."""
    nan = math.nan
    unit: Any = None
    if isinstance(pred, dict):
        if "value" not in pred:
            return nan, "bad_prediction_type"
        pred, unit = pred["value"], pred.get("unit")
    if pred is None:
        return nan, "null_prediction"
    value = finite_number(pred)
    if value is None:
        return nan, "bad_prediction_value"
    if unit is not None and not isinstance(unit, str):
        return nan, "bad_prediction_unit"
    if form == CLOCK:
        if (unit.strip().lower() if unit else None) not in _CLOCK_UNITS:
            return nan, "bad_prediction_unit"
        return (value, "") if value == int(value) and 1 <= value <= 12 else (nan, "bad_clock")
    try:
        value = convert_unit(value, unit, FORM_KIND[form])
    except ValueError:
        return nan, "bad_prediction_unit"
    if form == DISTANCE:
        return (value, "") if value >= 0 else (nan, "negative")
    return float(angles.wrap_angle_deg(value)), ""


def read_answers(predictions: Sequence[Any], form: np.ndarray) -> Answers:
    """Read ``predictions[i]`` (text, a number, ``{"value", "unit"}``, None, or ``NO_PREDICTION``) as an answer
    of form ``form[i]`` (codes into ``FORMS``). Texts of quantitative rows are parsed in one batch, each distinct
    (text, kind) once; each distinct qualitative (text, form) once."""
    n = len(predictions)
    value = np.full(n, np.nan)
    label = [""] * n
    reason = [""] * n
    text_rows: list[int] = []
    labels_seen: dict[tuple[str, str], tuple[str, str]] = {}
    for i, (pred, code) in enumerate(zip(predictions, np.asarray(form).tolist(), strict=True)):
        if code == NO_FORM:
            reason[i] = "unscorable_truth"
            continue
        if pred is NO_PREDICTION:
            reason[i] = "missing_prediction"
            continue
        name = FORMS[code]
        if name in QUALITATIVE_FORMS:
            if isinstance(pred, str):
                key = (pred, name)
                got = labels_seen.get(key)
                if got is None:
                    got = labels_seen[key] = parse_label(pred, name)
                label[i], reason[i] = got
            else:
                reason[i] = "null_prediction" if pred is None else "bad_prediction_type"
        elif isinstance(pred, str):
            text_rows.append(i)
        else:
            value[i], reason[i] = structured_value(pred, name)
    if text_rows:
        names = [FORMS[int(form[i])] for i in text_rows]
        parsed, why = parse_many([predictions[i] for i in text_rows], [FORM_KIND[f] for f in names], PARSER_MODE)
        clock = np.asarray([f == CLOCK for f in names], dtype=bool)
        parsed[clock] = degrees_to_clock(parsed[clock])
        rows = np.asarray(text_rows)
        value[rows] = parsed
        for i, w in zip(text_rows, why, strict=True):
            reason[i] = w
    return Answers(value, label, reason)
