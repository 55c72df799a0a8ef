"""``require_finite_points``: its one-reduction fast path (issue 35) accepts exactly the arrays whose x, y, z are all
finite, and the error names the first bad point, as before; sums that overflow although every term is finite
go to the exact test."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from stridegen.core.errors import LogFormatError
from stridegen.logs._common import require_finite_points


@given(
    st.sampled_from([np.float32, np.float64]).flatmap(
        lambda dt: arrays(
            dt,
            st.tuples(st.integers(0, 40), st.integers(3, 5)),
            elements=st.floats(allow_nan=True, allow_infinity=True, width=32)
            | st.sampled_from([0.0, 1.0, -2.5, 3e38, -3e38]),
        )
    )
)
def test_accepts_exactly_finite_xyz(points: np.ndarray) -> None:
    bad = np.flatnonzero(~np.isfinite(points[:, :3]).all(axis=1))  # the previous implementation's test
    if bad.size == 0:
        assert require_finite_points(points, "sweep.bin") is points
    else:
        with pytest.raises(LogFormatError, match=f"{bad.size} of {len(points)} points .*point {bad[0]}:"):
            require_finite_points(points, "sweep.bin")


def test_an_overflowing_sum_of_finite_points_is_accepted() -> None:
    points = np.full((4, 4), np.finfo(np.float32).max, dtype=np.float32)  # the sum is inf, every point finite
    assert require_finite_points(points, "sweep.bin") is points
    points[2, 3] = np.nan  # the fourth column (intensity) is not checked
    assert require_finite_points(points, "sweep.bin") is points
    points[3, 1] = np.inf
    with pytest.raises(LogFormatError, match=r"1 of 4 points .*point 3: \[3\.40"):
        require_finite_points(points, "sweep.bin")
