"""Spatial QA scores on hand-made items (stridegen.eval.spatial.algo / evaluate): the bands at their edges, a
perturbation of known size moves exactly the answers it should out of tolerance (property test), invalid answers
are failures counted by reason, and the tables add up."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stridegen.eval.spatial.algo import CLOCK_TOLERANCE_H, HEADING_RULE, LENGTH_RULE, clock_error_h
from stridegen.eval.spatial.data import CLOCK, DIRECTION, DISTANCE, FORM_CODE, LEFT_RIGHT, YES_NO, SpatialItems
from stridegen.eval.spatial.evaluate import metrics, score
from stridegen.eval.spatial.report import markdown_report


def make_items(rows: list[tuple[str, float, str]], predicate: str = "p", distance_m: float = 5.0) -> SpatialItems:
    """Items from (form, gt_value, gt_label) rows, ids q0, q1, ..."""
    n = len(rows)
    text = np.asarray([""] * n, dtype=object)
    return SpatialItems(
        question_id=[f"q{i}" for i in range(n)],
        category=np.asarray(["ego_spatial"] * n, dtype=object),
        predicate=np.asarray([predicate] * n, dtype=object),
        object_class=np.asarray(["vehicle"] * n, dtype=object),
        form=np.asarray([FORM_CODE[f] for f, _, _ in rows], dtype=np.int64),
        gt_value=np.asarray([v for _, v, _ in rows], dtype=np.float64),
        gt_label=np.asarray([lab for _, _, lab in rows], dtype=object),
        distance_m=np.full(n, distance_m),
        answer=list(text),
    )


def correct_of(rows: list[tuple[str, float, str]], preds: list[Any]) -> list[bool]:
    items = make_items(rows)
    return score(items, {f"q{i}": p for i, p in enumerate(preds)}).judged.correct.tolist()


# ------------------------------------------------------------------------------------------------ the bands
def test_the_bands_are_the_cited_ones() -> None:
    assert (LENGTH_RULE.fn, LENGTH_RULE.range) == ("relative", 0.25)
    assert (HEADING_RULE.fn, HEADING_RULE.range) == ("angular_absolute", 10)
    assert CLOCK_TOLERANCE_H == 1


def test_length_band_edges_are_inside() -> None:
    rows = [(DISTANCE, 4.0, "")] * 6
    assert correct_of(rows, ["3.0 m", "5.0 m", "2.99 m", "5.01 m", "4 m", "0.5 m"]) == [
        True,
        True,
        False,
        False,
        True,
        False,
    ]


def test_a_zero_length_is_matched_only_by_zero() -> None:
    assert correct_of([(DISTANCE, 0.0, "")] * 3, ["0 m", "0.00 m", "0.01 m"]) == [True, True, False]


def test_heading_band_wraps_at_180() -> None:
    rows = [(DIRECTION, 175.0, "")] * 4 + [(DIRECTION, -5.0, "")] * 2
    preds = ["-175 degrees", "-174 degrees", "165 degrees", "185 degrees", "5 degrees", "5.5 degrees"]
    assert correct_of(rows, preds) == [True, False, True, True, True, False]


def test_clock_band_wraps_round_the_dial() -> None:
    rows = [(CLOCK, 12.0, "")] * 4 + [(CLOCK, 1.0, "")] * 2
    preds = ["1 o'clock", "11 o'clock", "2 o'clock", "10 o'clock", "12 o'clock", "3 o'clock"]
    assert correct_of(rows, preds) == [True, True, False, False, True, False]
    assert clock_error_h(np.asarray([12, 1, 6]), np.asarray([1, 11, 12])).tolist() == [1, 2, 6]


def test_labels_must_match() -> None:
    rows = [(YES_NO, math.nan, "yes"), (YES_NO, math.nan, "no"), (LEFT_RIGHT, math.nan, "left")] * 2
    preds = ["Yes.", "No.", "left", "No.", "Yes, it is.", "It is on the right."]
    assert correct_of(rows, preds) == [True, True, True, False, False, False]


# --------------------------------------------------------------------------------- perturbation property test
_EDGES = (1 - LENGTH_RULE.range, 1 + LENGTH_RULE.range)
_MARGIN = 1e-3  # factors / offsets this close to an edge are not drawn: printing the value to 6 decimals moves it


def _away_from(x: float, edges: tuple[float, ...]) -> bool:
    return all(abs(abs(x) - e) > _MARGIN for e in edges)


def _near(edge: float, width: float) -> st.SearchStrategy[float]:
    """Values within ``width`` of ``edge``, on either side (where a band that is off by a little would show)."""
    return st.floats(edge - width, edge + width)


# Per length a factor anywhere or near one of the band's edges; per heading an offset likewise; per clock answer a
# shift of 0..11 hours.
_FACTORS = st.one_of(st.floats(0.2, 3.0), _near(_EDGES[0], 0.05), _near(_EDGES[1], 0.05)).filter(
    lambda f: _away_from(f, _EDGES)
)
_OFFSETS = st.one_of(st.floats(-90.0, 90.0), _near(HEADING_RULE.range, 3.0), _near(-HEADING_RULE.range, 3.0)).filter(
    lambda d: _away_from(d, (HEADING_RULE.range,))
)


@settings(max_examples=80, deadline=None)
@given(
    lengths=st.lists(st.tuples(st.integers(0, 20000).map(lambda c: c / 100), _FACTORS), min_size=1, max_size=8),
    headings=st.lists(st.tuples(st.integers(-179, 180), _OFFSETS), min_size=1, max_size=8),
    hours=st.lists(st.tuples(st.integers(1, 12), st.integers(0, 11)), min_size=1, max_size=8),
    clock_as_degrees=st.booleans(),
)
def test_a_perturbation_of_known_size_moves_exactly_the_expected_answers_out(
    lengths: list[tuple[float, float]],
    headings: list[tuple[int, float]],
    hours: list[tuple[int, int]],
    clock_as_degrees: bool,
) -> None:
    """Lengths times a factor, headings plus an offset in degrees, clock hours plus a shift: an answer stays
    correct exactly when its perturbation lies inside its band (a zero length stays zero, so stays correct)."""
    rows = [(DISTANCE, g, "") for g, _ in lengths] + [(DIRECTION, float(h), "") for h, _ in headings]
    rows += [(CLOCK, float(h), "") for h, _ in hours]
    preds = [f"{g * f:.6f} m" for g, f in lengths] + [f"{h + d:.6f} degrees" for h, d in headings]
    shifted = [(h - 1 + k) % 12 + 1 for h, k in hours]
    # a clock hour as an angle: 12 ahead, 3 right (-90 degrees)
    preds += [f"{-30 * (s % 12)} degrees" if clock_as_degrees else f"{s} o'clock" for s in shifted]
    expected = [g == 0 or _EDGES[0] < f < _EDGES[1] for g, f in lengths]
    expected += [abs(d) <= HEADING_RULE.range for _, d in headings]
    expected += [min(k, 12 - k) <= CLOCK_TOLERANCE_H for _, k in hours]
    assert correct_of(rows, preds) == expected


# ------------------------------------------------------------------------------------------- invalid answers
def test_invalid_answers_are_failures_counted_by_reason_never_dropped() -> None:
    rows = [(DISTANCE, 4.0, "")] * 5 + [(YES_NO, math.nan, "yes")] * 4 + [(CLOCK, 3.0, "")]
    preds = {
        "q0": "4 m",
        "q1": "",
        "q2": float("nan"),
        "q3": "around four",
        "q4": None,
        "q5": "Yes",
        "q6": "   ",
        "q7": 1,
        # q8: no prediction
        "q9": "25 o'clock",
    }
    scores = score(make_items(rows), preds)
    m = metrics(scores)
    assert m["overall"]["n"] == 10 and m["overall"]["correct"] == 2 and m["overall"]["invalid"] == 8
    assert m["invalid_reasons"] == {
        "bad_clock": 1,
        "bad_prediction_type": 1,
        "bad_prediction_value": 1,
        "empty": 2,
        "missing_prediction": 1,
        "no_unit": 1,  # "four" is read as a number, with no unit
        "null_prediction": 1,
    }
    assert m["counts"]["missing_predictions"] == 1
    quantitative = m["overall"]["quantitative"]
    assert (quantitative["n"], quantitative["success"], quantitative["invalid"]) == (6, 1, 5)
    # the error distribution is over the values read: here only the one correct length
    assert quantitative["error"]["distance"]["abs_error_m"]["n"] == 1
    assert quantitative["error"]["clock"]["abs_error_h"] == {"n": 0}
    json.dumps(m, allow_nan=False)  # strict JSON
    assert "missing_prediction: 1" in markdown_report(m)


def test_breakdown_rows_add_up() -> None:
    rng = np.random.default_rng(3)
    n = 200
    forms = rng.choice([DISTANCE, YES_NO, CLOCK], n).tolist()
    rows = [
        (f, 10.0 if f == DISTANCE else 3.0 if f == CLOCK else math.nan, "yes" if f == YES_NO else "") for f in forms
    ]
    items = make_items(rows)
    items.predicate = rng.choice(["a", "b", "c"], n).astype(object)
    items.category = rng.choice(["object_spatial", "ego_spatial"], n).astype(object)
    items.object_class = rng.choice(["vehicle", "pedestrian"], n).astype(object)
    items.distance_m = rng.choice([3.0, 15.0, 70.0, np.nan], n)
    answers = ["10 m", "12.6 m", "yes", "no", "3 o'clock", "5 o'clock", "", None]
    preds = {q: answers[int(rng.integers(len(answers)))] for q in items.question_id}
    m = metrics(score(items, preds))
    for key in ("by_category", "by_predicate", "by_object_class", "by_distance_bin"):
        rows_of = m[key].values()
        for field in ("n", "correct", "invalid"):
            assert sum(r[field] for r in rows_of) == m["overall"][field], (key, field)
    assert set(m["by_distance_bin"]) == {"0-10 m", "10-20 m", ">=50 m", "unknown"}


def test_scoring_nothing_gives_empty_tables() -> None:
    m = metrics(score(make_items([]), {}))
    assert m["overall"] == {"n": 0, "correct": 0, "rate": None, "invalid": 0}
    assert m["by_predicate"] == {} and m["invalid_reasons"] == {}


@pytest.mark.parametrize("scale", [0.5, 1.0, 2.0])
def test_relative_error_is_the_spatialrgpt_error_rate(scale: float) -> None:
    items = make_items([(DISTANCE, 8.0, "")])
    judged = score(items, {"q0": f"{8.0 * scale} m"}).judged
    assert judged.rel_error[0] == pytest.approx(abs(8.0 * scale - 8.0) / (8.0 + 1e-4))
    assert judged.abs_error[0] == pytest.approx(abs(8.0 * scale - 8.0))
