"""Answer parser: a corpus of real-looking model answers, read with both grammars.

Each row: answer text, then the expected (distance m, direction deg, speed m/s) for the ``robust`` grammar and for
the ``official`` grammar (the STRIDE-QA-Bench toolkit's behaviour). ``F`` = unparseable (scores as a failure).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stridegen.eval.lsr.answer_parser import parse_answer, parse_many
from stridegen.eval.lsr.answer_values import KINDS, Failure, Parsed, convert_unit
from stridegen.eval.lsr.official_grammar import parse_official
from stridegen.eval.lsr.robust_grammar import normalize_answer, parse_robust

F = None
KMH = 1 / 3.6
MPH_OFFICIAL = 1609.34 / 3600
MPH = 1609.344 / 3600

CORPUS: list[tuple[str, tuple, tuple]] = [
    # --- distances
    ("Region [0] is 20.12 meters away.", (20.12, F, F), (20.12, F, F)),
    ("It is approximately 15.5 m ahead.", (15.5, F, F), (15.5, F, F)),
    ("Roughly 30 feet.", (30 * 0.3048, F, F), (30 * 0.3048, F, F)),
    ("The distance is 850 cm.", (8.5, F, F), (8.5, F, F)),
    ("0.5 km away", (500.0, F, F), (500.0, F, F)),
    ("It's about 40 inches from the ego.", (40 * 0.0254, F, F), (40 * 0.0254, F, F)),
    ("twelve meters", (12.0, F, F), (F, F, F)),
    ("twenty-five metres to the left", (25.0, F, F), (F, F, F)),
    ("between 10 and 12 meters", (11.0, F, F), (12.0, F, F)),
    ("10-12 m", (11.0, F, F), (12.0, F, F)),
    ("around 8 to 10 meters", (9.0, F, F), (10.0, F, F)),
    ("1,250 m", (1250.0, F, F), (250.0, F, F)),
    ("12,5 m", (12.5, F, F), (5.0, F, F)),
    ("-5 meters", (F, F, F), (5.0, F, F)),
    ("The target is 12.5", (F, F, F), (F, F, F)),
    ("12.5", (F, F, F), (F, F, F)),
    ("About 3.0 metres.", (3.0, F, F), (3.0, F, F)),
    ("Region [1] is 7 meters away", (7.0, F, F), (7.0, F, F)),
    ("5 in.", (0.127, F, F), (0.127, F, F)),
    ("5 in front", (F, F, F), (0.127, F, F)),  # the toolkit reads "in" as inches here
    ("100 ft (30 m)", (30.48, F, F), (30.48, F, F)),
    ("30 m (100 ft)", (30.0, F, F), (30.48, F, F)),  # the toolkit tries feet before metres
    ("12 mins away", (F, F, F), (F, F, F)),
    ("\uff11\uff12 m", (12.0, F, F), (12.0, F, F)),  # full-width digits
    ("10 km/h", (F, F, 10 * KMH), (F, F, 10 * KMH)),
    # --- refusals and empty answers
    ("I'm sorry, but I can't determine the distance from these images.", (F, F, F), (F, F, F)),
    ("", (F, F, F), (F, F, F)),
    ("N/A", (F, F, F), (F, F, F)),
    ("The answer is 42.", (F, F, F), (F, F, F)),
    ("Unable to estimate; the object is occluded.", (F, F, F), (F, F, F)),
    # --- directions
    ("It is located at 45 degrees.", (F, 45.0, F), (F, 45.0, F)),
    ("at an angle of -24 degrees", (F, -24.0, F), (F, -24.0, F)),
    ("79-degree angle", (F, 79.0, F), (F, 79.0, F)),
    ("79° direction", (F, 79.0, F), (F, 79.0, F)),
    ("bearing angle is -18 ° relative to ego", (F, -18.0, F), (F, -18.0, F)),
    ("30 degrees to the right", (F, -30.0, F), (F, 30.0, F)),
    ("15 degrees left", (F, 15.0, F), (F, 15.0, F)),
    ("at 3 o'clock", (F, -90.0, F), (F, F, F)),
    ("9 o'clock", (F, 90.0, F), (F, F, F)),
    ("6 o\u2019clock", (F, 180.0, F), (F, F, F)),
    ("at the 12 o'clock position", (F, 0.0, F), (F, F, F)),
    ("11 o'clock", (F, 30.0, F), (F, F, F)),
    ("270 degrees", (F, -90.0, F), (F, -90.0, F)),
    ("-190°", (F, 170.0, F), (F, 170.0, F)),
    ("directly ahead", (F, 0.0, F), (F, F, F)),
    ("directly behind", (F, 180.0, F), (F, F, F)),
    ("approximately -45 degrees", (F, -45.0, F), (F, -45.0, F)),
    ("+20 degrees", (F, 20.0, F), (F, 20.0, F)),
    ("It is at 13 o'clock", (F, F, F), (F, F, F)),
    # --- speeds
    ("Ego speed after 2 seconds is 11.77 m/s.", (F, F, 11.77), (F, F, 11.77)),
    ("10 m/s", (F, F, 10.0), (F, F, 10.0)),
    ("36 km/h", (F, F, 36 * KMH), (F, F, 36 * KMH)),
    ("about 20 mph", (F, F, 20 * MPH), (F, F, 20 * MPH_OFFICIAL)),
    ("5 meters per second", (F, F, 5.0), (5.0, F, 5.0)),  # the toolkit also reads "5 meters" as a distance
    ("5m/s", (F, F, 5.0), (F, F, F)),  # the toolkit needs a word boundary before the unit
    ("72 kph", (F, F, 20.0), (F, F, 72 * KMH)),
    ("3 mps", (F, F, 3.0), (F, F, 3.0)),
    ("The vehicle is stationary.", (F, F, 0.0), (F, F, F)),
    ("It is not moving (0 m/s).", (F, F, 0.0), (F, F, 0.0)),
    ("speed: 4.2 m s-1", (F, F, 4.2), (4.2, F, 4.2)),
    ("30 km per hour", (F, F, 30 * KMH), (30000.0, F, F)),
    ("Sixty kilometers per hour", (F, F, 60 * KMH), (F, F, F)),
    ("It moves at about 1.2 m/s, roughly 4 km/h.", (F, F, 1.2), (F, F, 1.2)),
    # --- several quantities in one answer
    ("about 12 meters away at roughly 2 o'clock", (12.0, -60.0, F), (12.0, F, F)),
    ("In 1 second they are 23.54 meters at -24 degrees.", (23.54, -24.0, F), (23.54, -24.0, F)),
    ("straight ahead, about 20 m", (20.0, 0.0, F), (20.0, F, F)),
    ("12 meters away at 30 degrees, moving at 5 m/s", (12.0, 30.0, 5.0), (12.0, 30.0, 5.0)),
    ("The car is 3 m in front, at 0°.", (3.0, 0.0, F), (3.0, 0.0, F)),
    ("2 o'clock, 14 meters", (14.0, -60.0, F), (14.0, F, F)),
    ("It is 20 m away and 5 m/s", (20.0, F, 5.0), (20.0, F, 5.0)),
    ("The pedestrian is 4.5 meters away at -90 degrees moving at 1.4 m/s.", (4.5, -90.0, 1.4), (4.5, -90.0, 1.4)),
    ("14 meters at 2:30 o'clock", (14.0, -75.0, F), (14.0, F, F)),
    ("Maybe 10 or 15 meters, at 20 degrees to the left", (15.0, 20.0, F), (15.0, 20.0, F)),
]


def _check(outcome: Parsed | Failure, expected: float | None, text: str, kind: str) -> None:
    if expected is None:
        assert isinstance(outcome, Failure), (text, kind, outcome)
    else:
        assert isinstance(outcome, Parsed), (text, kind, outcome)
        assert outcome.value == pytest.approx(expected, rel=1e-12, abs=1e-12), (text, kind, outcome)


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 60
    assert sum(all(v is None for v in robust) for _, robust, _ in CORPUS) >= 6  # unparseable answers included


@pytest.mark.parametrize(("text", "robust", "official"), CORPUS, ids=[c[0][:40] for c in CORPUS])
def test_corpus(text: str, robust: tuple, official: tuple) -> None:
    for kind, r, o in zip(KINDS, robust, official, strict=True):
        _check(parse_robust(text, kind), r, text, kind)
        _check(parse_official(text, kind), o, text, kind)


@pytest.mark.parametrize(
    ("text", "kind", "reason"),
    [
        ("", "distance", "empty"),
        ("   ", "velocity", "empty"),
        ("I cannot tell.", "distance", "no_number"),
        ("12.5", "distance", "no_unit"),
        ("12 m/s", "distance", "no_unit"),
        ("-5 meters", "distance", "negative"),
        ("-3 m/s", "velocity", "negative"),
        ("It is at 13 o'clock", "direction", "bad_clock"),
    ],
)
def test_failure_reasons(text: str, kind: str, reason: str) -> None:
    outcome = parse_robust(text, kind)  # type: ignore[arg-type]
    assert outcome == Failure(reason)


def test_how_values_were_read() -> None:
    assert parse_robust("10-12 m", "distance").how == "range"  # type: ignore[union-attr]
    assert parse_robust("2 o'clock", "direction").how == "clock"  # type: ignore[union-attr]
    assert parse_robust("stationary", "velocity").how == "word"  # type: ignore[union-attr]


def test_normalize() -> None:
    assert normalize_answer("Twenty\u2212Five METERS") == "25 meters"
    assert normalize_answer("1,234.5 m") == "1234.5 m"
    assert normalize_answer("12\u00ba") == "12°"


def test_parse_many_matches_single_parses_and_caches() -> None:
    texts = [c[0] for c in CORPUS] * 2
    for mode in ("official", "robust"):
        for kind in KINDS:
            values, reasons = parse_many(texts, [kind] * len(texts), mode)  # type: ignore[arg-type]
            for text, v, why in zip(texts, values, reasons, strict=True):
                single = parse_answer(text, kind, mode)  # type: ignore[arg-type]
                if isinstance(single, Parsed):
                    assert v == single.value and why == ""
                else:
                    assert np.isnan(v) and why == single.reason
    with pytest.raises(ValueError, match="parser mode"):
        parse_answer("1 m", "distance", "fuzzy")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("hour", "angle"), [(12, 0.0), (1, -30.0), (3, -90.0), (5, -150.0), (6, 180.0), (7, 150.0), (9, 90.0), (11, 30.0)]
)
def test_clock_positions_follow_the_ego_convention(hour: int, angle: float) -> None:
    # 12 = ahead, 3 = right (negative, clockwise), 9 = left (positive): docs/metrics-lsr.md, DESIGN.md
    assert parse_robust(f"{hour} o'clock", "direction").value == angle  # type: ignore[union-attr]


@settings(max_examples=300, deadline=None)
@given(
    st.floats(0, 5000, allow_nan=False).map(lambda x: round(x, 2)),
    st.sampled_from([("m", 1.0), (" meters", 1.0), (" cm", 0.01), (" km", 1000.0), (" ft", 0.3048), (" feet", 0.3048)]),
    st.sampled_from(["", "about ", "Region [2] is ", "It will be roughly "]),
    st.sampled_from(["", ".", " away.", " ahead of the ego vehicle."]),
)
def test_robust_distance_round_trip(value: float, unit: tuple[str, float], prefix: str, suffix: str) -> None:
    text = f"{prefix}{value}{unit[0]}{suffix}"
    assert parse_robust(text, "distance").value == pytest.approx(value * unit[1])  # type: ignore[union-attr]


@settings(max_examples=300, deadline=None)
@given(
    st.floats(-720, 720, allow_nan=False).map(lambda x: round(x, 1)),
    st.sampled_from([" degrees", "°", " deg", "-degree"]),
)
def test_robust_direction_round_trip_wraps(angle: float, unit: str) -> None:
    out = parse_robust(f"at {angle}{unit}", "direction").value  # type: ignore[union-attr]
    assert -180 < out <= 180
    assert (out - angle) % 360 == pytest.approx(0, abs=1e-9) or (out - angle) % 360 == pytest.approx(360)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_parsers_never_crash_and_return_finite(text: str) -> None:
    for kind in KINDS:
        for outcome in (parse_robust(text, kind), parse_official(text, kind)):
            assert isinstance(outcome, Failure) or np.isfinite(outcome.value)


def test_convert_unit() -> None:
    assert convert_unit(36, "km/h", "velocity") == pytest.approx(10.0)
    assert convert_unit(3, None, "distance") == 3.0
    with pytest.raises(ValueError, match="distance unit"):
        convert_unit(3, "m", "velocity")
    with pytest.raises(ValueError, match="unknown unit"):
        convert_unit(3, "furlong", "distance")
