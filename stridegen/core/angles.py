"""Angles in the ego frame: wrapping to one turn, the polar heading of a point and its clock direction.

Conventions (see docs/conventions.md): the ego frame has x forward, y to the left, z up; angles are radians unless
the name ends in ``_deg``.
"""

from __future__ import annotations

import numpy as np


def wrap_angle(angle: np.ndarray | float) -> np.ndarray:
    """Wrap radians to (-pi, pi]."""
    a = np.asarray(angle, dtype=np.float64)
    wrapped = np.mod(a + np.pi, 2.0 * np.pi) - np.pi  # [-pi, pi)
    return np.where(wrapped <= -np.pi, wrapped + 2.0 * np.pi, wrapped)


def wrap_angle_deg(angle_deg: np.ndarray | float) -> np.ndarray:
    """Wrap degrees to (-180, 180]."""
    a = np.asarray(angle_deg, dtype=np.float64)
    wrapped = np.mod(a + 180.0, 360.0) - 180.0
    return np.where(wrapped <= -180.0, wrapped + 360.0, wrapped)


def polar_angle_deg(x_ego: np.ndarray | float, y_ego: np.ndarray | float) -> np.ndarray:
    """Heading angle of a point in the ego frame: 0 = straight ahead, counter-clockwise positive, (-180, 180]."""
    return wrap_angle_deg(np.degrees(np.arctan2(y_ego, x_ego)))


# A heading within this of a half hour (clockwise 15 + 30 k degrees) is on it. A point on such a boundary (x = |y|:
# 45 degrees) comes out of arctan2 a few ulp (~1e-14 degrees) either side of it, and on which side depends on the
# build (numpy's AVX-512 arctan2 is not correctly rounded); without the tie width that noise would pick the hour.
# 1e-7 degrees (1.7e-9 rad, 0.2 um at 100 m) lies far above the noise of ego-frame coordinates (1e-12 m from global
# coordinates of 1e4 m) and far below anything a heading is measured to.
CLOCK_TIE_DEG = 1e-7


def clock_direction(x_ego: np.ndarray | float, y_ego: np.ndarray | float) -> np.ndarray:
    """Clock direction of a point in the ego frame: 12 = ahead, 3 = right, 9 = left, nearest hour.

    Half hours round up (e.g. 45 degrees to the right, 1.5 h, becomes 2 o'clock; 45 degrees to the left, 10.5 h,
    becomes 11), so the rule is ``floor(clockwise_hours + 0.5)`` rather than numpy's round-half-to-even; a heading
    within ``CLOCK_TIE_DEG`` below a half hour counts as the half hour, so that the rounding of arctan2 does not
    decide the hour of a point on the boundary.
    """
    clockwise_deg = -polar_angle_deg(x_ego, y_ego)  # clockwise from ahead, [-180, 180)
    hours = np.floor((clockwise_deg + CLOCK_TIE_DEG) / 30.0 + 0.5).astype(np.int64) % 12
    return np.where(hours == 0, 12, hours)
