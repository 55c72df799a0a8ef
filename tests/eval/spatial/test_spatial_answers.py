"""Reading spatial answers (stridegen.eval.spatial.parse): known answers of every form, every answer template of
the spatial QA generator, and the answers that yield nothing (each with its reason)."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from stridegen.eval.spatial.data import (
    CLOCK,
    DIRECTION,
    DISTANCE,
    FORM_CODE,
    LEFT_RIGHT,
    NO_FORM,
    YES_NO,
    answer_form,
    distance_bin_names,
    distance_bins,
    first_region_distance,
)
from stridegen.eval.spatial.parse import NO_PREDICTION, degrees_to_clock, parse_label, read_answers
from stridegen.pipeline.qa.templates_spatial import SPATIAL_PHRASEBOOK


def _read(pred: Any, form: str) -> tuple[float, str, str]:
    """(value, label, reason) of one prediction read as ``form``."""
    answers = read_answers([pred], np.asarray([FORM_CODE[form]]))
    return float(answers.value[0]), answers.label[0], answers.reason[0]


# ------------------------------------------------------------------------------------------------ known answers
@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("Yes.", "yes"),
        ("yes", "yes"),
        ("NO", "no"),
        ("No, it is not.", "no"),
        ("Correct, Region [0] appears on the left-hand side of Region [1].", "yes"),
        ("Incorrect, Region [1] has a greater volume than Region [0].", "no"),
        ("Indeed, Region [1] is narrower than Region [0].", "yes"),
        ("Not at all.", "no"),
        ("  \u00a0Yes!", "yes"),
        ("\uff39\uff45\uff53", "yes"),  # full-width letters, folded by NFKC
        ("I think the answer is no.", "no"),
        ("Looking at the image, yes: it is bigger.", "yes"),
    ],
)
def test_yes_no_labels(text: str, label: str) -> None:
    assert parse_label(text, YES_NO) == (label, "")


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("Left", "left"),
        ("right.", "right"),
        ("Region [2] lies to the left of our car.", "left"),
        ("It is on the right; Region [0] occupies the ego vehicle's right side.", "right"),
        ("Left: it is on our left-hand side, not the right.", "left"),  # the first word decides
        ("On the RIGHT-hand side.", "right"),
    ],
)
def test_left_right_labels(text: str, label: str) -> None:
    assert parse_label(text, LEFT_RIGHT) == (label, "")


@pytest.mark.parametrize(
    ("text", "form", "reason"),
    [
        ("", YES_NO, "empty"),
        ("   \n", YES_NO, "empty"),
        ("Region [0] is to the left of Region [1].", YES_NO, "no_label"),
        ("12 m", YES_NO, "no_label"),
        ("Maybe yes, maybe no.", YES_NO, "ambiguous_label"),
        ("It is straight ahead.", LEFT_RIGHT, "no_label"),
        ("Neither left nor right.", LEFT_RIGHT, "ambiguous_label"),
        ("", LEFT_RIGHT, "empty"),
    ],
)
def test_labels_that_are_not_there(text: str, form: str, reason: str) -> None:
    assert parse_label(text, form) == ("", reason)


@pytest.mark.parametrize(
    ("text", "form", "value"),
    [
        ("12.34 m", DISTANCE, 12.34),
        ("Region [0] and Region [1] are 3.20 m apart.", DISTANCE, 3.2),
        ("about 5 meters", DISTANCE, 5.0),
        ("10 feet", DISTANCE, 3.048),
        ("35.9 inches wide", DISTANCE, 35.9 * 0.0254),
        ("48.47 centimeters", DISTANCE, 0.4847),
        ("between 4 and 6 m", DISTANCE, 5.0),
        ("twelve meters", DISTANCE, 12.0),
        ("0.00 m", DISTANCE, 0.0),
        ("-35 degrees", DIRECTION, -35.0),
        ("Region [0] is at a heading angle of 17 degrees.", DIRECTION, 17.0),
        ("30 degrees to the right", DIRECTION, -30.0),
        ("270 degrees", DIRECTION, -90.0),
        ("180 degrees", DIRECTION, 180.0),
        ("at 2 o'clock", DIRECTION, -60.0),
        ("straight ahead", DIRECTION, 0.0),
        ("11 o'clock", CLOCK, 11.0),
        ("Region [0] lies in the 3 o'clock direction.", CLOCK, 3.0),
        ("12 o'clock", CLOCK, 12.0),
        ("6 o'clock", CLOCK, 6.0),
        ("-60 degrees", CLOCK, 2.0),
        ("90 degrees", CLOCK, 9.0),
        ("45 degrees to the left", CLOCK, 11.0),  # a half hour rounds up (core.angles.clock_direction)
    ],
)
def test_numbers(text: str, form: str, value: float) -> None:
    got, label, reason = _read(text, form)
    assert reason == "" and label == ""
    assert got == pytest.approx(value, abs=1e-9)


@pytest.mark.parametrize(
    ("text", "form", "reason"),
    [
        ("", DISTANCE, "empty"),
        ("far away", DISTANCE, "no_number"),
        ("12", DISTANCE, "no_unit"),
        ("-3 m", DISTANCE, "negative"),
        ("13 o'clock", CLOCK, "bad_clock"),
        ("", CLOCK, "empty"),
        ("somewhere to the left", DIRECTION, "no_number"),
    ],
)
def test_numbers_that_are_not_there(text: str, form: str, reason: str) -> None:
    value, _, why = _read(text, form)
    assert math.isnan(value) and why == reason


@pytest.mark.parametrize(
    ("pred", "form", "value", "reason"),
    [
        (12.5, DISTANCE, 12.5, ""),
        ({"value": 10, "unit": "ft"}, DISTANCE, 3.048, ""),
        ({"value": 3, "unit": "m/s"}, DISTANCE, math.nan, "bad_prediction_unit"),
        ({"value": -2}, DISTANCE, math.nan, "negative"),
        (-35, DIRECTION, -35.0, ""),
        (270, DIRECTION, -90.0, ""),
        (11, CLOCK, 11.0, ""),
        ({"value": 3, "unit": "o'clock"}, CLOCK, 3.0, ""),
        (0, CLOCK, math.nan, "bad_clock"),
        (2.5, CLOCK, math.nan, "bad_clock"),
        (float("nan"), DISTANCE, math.nan, "bad_prediction_value"),
        (float("inf"), DIRECTION, math.nan, "bad_prediction_value"),
        (True, DISTANCE, math.nan, "bad_prediction_value"),
        ([1, 2], DISTANCE, math.nan, "bad_prediction_value"),
        ({"answer": 3}, DISTANCE, math.nan, "bad_prediction_type"),
        (None, DISTANCE, math.nan, "null_prediction"),
        (NO_PREDICTION, DISTANCE, math.nan, "missing_prediction"),
    ],
)
def test_predictions_that_are_not_text(pred: Any, form: str, value: float, reason: str) -> None:
    got, _, why = _read(pred, form)
    assert why == reason
    if reason:
        assert math.isnan(got)
    else:
        assert got == pytest.approx(value)


@pytest.mark.parametrize(
    ("pred", "reason"),
    [
        (None, "null_prediction"),
        (1, "bad_prediction_type"),
        (True, "bad_prediction_type"),
        (float("nan"), "bad_prediction_type"),
    ],
)
def test_qualitative_predictions_must_be_text(pred: Any, reason: str) -> None:
    assert _read(pred, YES_NO) == (pytest.approx(math.nan, nan_ok=True), "", reason)


def test_a_row_without_a_form_is_unscorable() -> None:
    answers = read_answers(["yes"], np.asarray([NO_FORM]))
    assert answers.reason == ["unscorable_truth"]


# ------------------------------------------------------------------------------------------- the generator's own
def _template_value(predicate: str) -> tuple[str, str, float]:
    """(the form, the ``{value}`` text, its number) for a quantitative predicate of the spatial generator."""
    if predicate == "ego_heading_angle":
        return DIRECTION, "-35 degrees", -35.0
    if predicate == "ego_clock_direction":
        return CLOCK, "11 o'clock", 11.0
    return DISTANCE, "12.34 m", 12.34


@pytest.mark.parametrize("answer_set", sorted(SPATIAL_PHRASEBOOK.answers))
def test_every_answer_template_of_the_generator_reads_back(answer_set: str) -> None:
    """Every phrasing the generator writes is read as the truth it states (regions named 0..11 and 10 so that
    region numbers next to the value are exercised)."""
    predicate, _, label = answer_set.partition(":")
    for template in SPATIAL_PHRASEBOOK.answers[answer_set]:
        for a, b in (("Region [0]", "Region [1]"), ("Region [11]", "Region [10]")):
            if label:
                form = LEFT_RIGHT if predicate == "ego_left_right" else YES_NO
                text = template.format(a=a, b=b)
                assert parse_label(text, form) == (label, ""), text
            else:
                form, value_text, value = _template_value(predicate)
                text = template.format(a=a, b=b, value=value_text)
                got, _, reason = _read(text, form)
                assert reason == "" and got == pytest.approx(value), text


# ------------------------------------------------------------------------------------------------ rows and bins
@pytest.mark.parametrize(
    ("unit", "gt_label", "form"),
    [
        ("m", "", DISTANCE),
        ("deg", "", DIRECTION),
        ("o'clock", "", CLOCK),
        ("", "yes", YES_NO),
        ("", "no", YES_NO),
        ("", "left", LEFT_RIGHT),
        ("", "right", LEFT_RIGHT),
    ],
)
def test_answer_form_comes_from_the_row(unit: str, gt_label: str, form: str) -> None:
    assert answer_form(unit, gt_label) == FORM_CODE[form]


@pytest.mark.parametrize(("unit", "gt_label"), [("m/s", ""), ("", ""), ("", "maybe")])
def test_rows_without_a_form(unit: str, gt_label: str) -> None:
    assert answer_form(unit, gt_label) == NO_FORM


def test_distance_bins_and_their_names() -> None:
    names = distance_bin_names()
    assert names == ["0-10 m", "10-20 m", "20-30 m", "30-50 m", ">=50 m", "unknown"]
    codes = distance_bins(np.asarray([0.0, 9.99, 10.0, 29.9, 30.0, 49.99, 50.0, 500.0, np.nan, np.inf]))
    assert [names[c] for c in codes] == [
        "0-10 m",
        "0-10 m",
        "10-20 m",
        "20-30 m",
        "30-50 m",
        "30-50 m",
        ">=50 m",
        ">=50 m",
        "unknown",
        "unknown",
    ]


def test_clock_hours_of_angles() -> None:
    assert degrees_to_clock(np.asarray([0.0, -90.0, 90.0, 180.0, -180.0, 30.0, np.nan])).tolist()[:6] == [
        12,
        3,
        9,
        6,
        6,
        11,
    ]


def test_first_region_distance_is_the_bev_distance_in_the_keyframes_ego_frame() -> None:
    """Analytic truth: the ego at (100, 50) facing global +y (yaw 90 degrees) at the keyframe's frame 1; a box
    10 m ahead of it (and 1 m up), one 3 m to its left, one absent there, and no track (-1)."""
    pose = np.eye(4)
    pose[:3, :3] = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    pose[:3, 3] = [100.0, 50.0, 0.0]
    center = np.full((3, 2, 3), np.nan)
    center[0, 1] = [100.0, 60.0, 1.0]
    center[1, 1] = [97.0, 50.0, 0.0]
    scene = SimpleNamespace(
        keyframes=SimpleNamespace(frame_index=np.asarray([1])),
        tracks=SimpleNamespace(center_global=center),
        frames=SimpleNamespace(T_global_from_ego=np.stack([np.eye(4), pose])),
    )
    got = first_region_distance(scene, np.zeros(4, dtype=np.int64), np.asarray([0, 1, 2, -1]))  # type: ignore[arg-type]
    np.testing.assert_allclose(got[:2], [10.0, 3.0], atol=1e-12)
    assert np.isnan(got[2:]).all()
