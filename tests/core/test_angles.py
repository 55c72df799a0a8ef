"""Known-answer and property tests of ego-frame angles: wrapping, polar heading, clock direction."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stridegen.core.angles import clock_direction, polar_angle_deg, wrap_angle

angles = st.floats(-10.0, 10.0, allow_nan=False, allow_infinity=False)


# ---------------------------------------------------------------------------------------------- angles


@pytest.mark.parametrize(
    ("x", "y", "deg"),
    [
        (1, 0, 0.0),
        (0, 1, 90.0),
        (0, -1, -90.0),
        (-1, 0, 180.0),
        (-1, -0.0, 180.0),
        (1, 1, 45.0),
        (1, -1, -45.0),
    ],
)
def test_polar_angle_known(x, y, deg):
    assert polar_angle_deg(x, y) == pytest.approx(deg, abs=1e-9)


@pytest.mark.parametrize(
    ("x", "y", "hour"),
    [
        (1, 0, 12),
        (0, -1, 3),
        (-1, 0, 6),
        (0, 1, 9),
        (1, -1, 2),  # 45 deg right = 1.5 h -> rounds up to 2
        (1, -0.5, 1),
        (np.cos(np.radians(-14)), np.sin(np.radians(-14)), 12),
        (1, 1, 11),
        (np.cos(np.radians(-16)), np.sin(np.radians(-16)), 1),
        (-1, 1e-9, 6),
    ],
)
def test_clock_direction_known(x, y, hour):
    assert int(clock_direction(x, y)) == hour


@pytest.mark.parametrize(("boundary_deg", "hour"), [(-45.0, 2), (45.0, 11), (-135.0, 5), (135.0, 8)])
@pytest.mark.parametrize("noise_deg", [-1e-12, 0.0, 1e-12])
def test_half_hour_does_not_depend_on_the_rounding_of_the_angle(boundary_deg, noise_deg, hour):
    """A point on a half hour (x = |y|) comes out of arctan2 a few ulp either side of it, the side depending on the
    build (the point cos/sin(-45 deg) has an exact angle 0.07 ulp from the midpoint of two doubles: a correctly
    rounded arctan2 says 2 o'clock, one ulp less says 1). Here that noise is pinned, 1e-12 degrees (~150 ulp, far
    above any arctan2 error) either side: every point gets the half hour's rounded-up hour. The bare
    ``floor(clockwise / 30 + 0.5)`` gives the hour below for the points on the counter-clockwise side."""
    rad = np.radians(boundary_deg + noise_deg)
    assert int(clock_direction(np.cos(rad), np.sin(rad))) == hour
    # Beyond the tie width (1e-7 degrees) the angle decides again: a microdegree counter-clockwise of the boundary
    # is the hour below.
    rad = np.radians(boundary_deg + 1e-6)
    assert int(clock_direction(np.cos(rad), np.sin(rad))) == (hour - 2) % 12 + 1


@given(angles)
def test_wrap_angle_range_and_equivalence(a):
    w = float(wrap_angle(a))
    assert -np.pi < w <= np.pi
    assert np.isclose(np.cos(w), np.cos(a)) and np.isclose(np.sin(w), np.sin(a))


@given(st.floats(0.1, 100), st.floats(-180, 180))
def test_clock_matches_polar(r, deg):
    x, y = r * np.cos(np.radians(deg)), r * np.sin(np.radians(deg))
    hour = int(clock_direction(x, y))
    assert 1 <= hour <= 12
    clockwise = -float(polar_angle_deg(x, y))
    diff = (clockwise - (hour % 12) * 30.0 + 180) % 360 - 180
    assert -15.0 - 1e-6 <= diff <= 15.0 + 1e-6
