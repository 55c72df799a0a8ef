"""Property tests of convex hulls (sequential and lockstep)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stridegen.core.polygons import convex_hull_2d, convex_hulls_2d

# ---------------------------------------------------------------------------------------------- convex hulls


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-6, 6), st.integers(-6, 6)), min_size=1, max_size=25))
def test_convex_hull_2d_is_the_exact_hull_of_integer_points(pts):
    # Small integers: every cross product is exact, so the hull is decided exactly and can be checked exactly.
    points = np.array(pts, dtype=np.float64)
    hull = convex_hull_2d(points)
    distinct = {tuple(p) for p in pts}
    assert {tuple(p) for p in hull} <= distinct and len({tuple(p) for p in hull}) == hull.shape[0]
    if len(distinct) < 3 or hull.shape[0] < 3:  # all points collinear: no area
        xy = np.array(sorted(distinct), dtype=np.float64)
        d = xy - xy[0]
        assert np.all(d[:, 0] * d[-1, 1] - d[:, 1] * d[-1, 0] == 0)
        return
    assert tuple(hull[0]) == min(distinct)  # starts at the smallest (u, v)
    a, b, c = hull, np.roll(hull, -1, axis=0), np.roll(hull, -2, axis=0)
    turn = (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])
    assert np.all(turn > 0)  # strictly convex, counter-clockwise: no collinear vertex
    du, dv = points[None, :, 0] - a[:, None, 0], points[None, :, 1] - a[:, None, 1]
    side = (b - a)[:, None, 0] * dv - (b - a)[:, None, 1] * du
    assert np.all(side >= 0)  # every point inside or on the hull


coords = st.floats(-1e4, 1e4, allow_nan=False)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.lists(st.tuples(coords, coords, st.booleans()), min_size=1, max_size=14), min_size=1, max_size=6),
    st.booleans(),
)
def test_convex_hulls_2d_lockstep_equals_the_sequential_chain(sets, snap):
    # Ragged sets padded into one [N, P, 2] array, with duplicates and (snapped to a coarse grid) collinear runs.
    p = max(len(s) for s in sets)
    pts = np.full((len(sets), p, 2), np.nan)
    valid = np.zeros((len(sets), p), dtype=bool)
    for i, s in enumerate(sets):
        for j, (u, v, keep) in enumerate(s):
            pts[i, j] = (round(u / 2000) * 2000.0, round(v / 2000) * 2000.0) if snap else (u, v)
            valid[i, j] = keep
    pts[1::2, 0] = pts[1::2, -1]  # a repeated point in every other set
    batch = convex_hulls_2d(pts, valid)
    assert len(batch) == len(sets)
    for i in range(len(sets)):
        expected = convex_hull_2d(pts[i][valid[i]])
        assert batch[i].shape == expected.shape and np.array_equal(batch[i], expected)
    assert convex_hulls_2d(np.zeros((0, 4, 2))) == []
