"""Property tests of convex hulls: exact hulls of integer points, and the batch equal to the numpy lockstep chain
it replaced (issue 35) and to each set alone."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stridegen.core.polygons import _cross, _sorted_unique, convex_hull_2d, convex_hulls_2d

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
def test_convex_hulls_2d_equals_the_lockstep_chain_and_each_set_alone(sets, snap):
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
    lockstep = _lockstep_hulls(pts, valid)
    assert len(batch) == len(sets)
    for i in range(len(sets)):
        expected = convex_hull_2d(pts[i][valid[i]])
        assert batch[i].shape == expected.shape and np.array_equal(batch[i], expected)
        assert batch[i].shape == lockstep[i].shape and np.array_equal(batch[i], lockstep[i])
    assert convex_hulls_2d(np.zeros((0, 4, 2))) == []


def _lockstep_hulls(pts: np.ndarray, valid: np.ndarray) -> list[np.ndarray]:
    """``convex_hulls_2d`` as it ran before issue 35: the monotone chains of all sets in lockstep as numpy arrays
    (step t offers every set its t-th sorted point; the sets whose last turn is not a strict left turn pop their
    chain's top until none does)."""
    su, sv, count = _sorted_unique(pts, valid)
    n = su.shape[0]

    def chain(su: np.ndarray, sv: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        cu, cv = np.zeros(su.shape), np.zeros(su.shape)
        length = np.zeros(n, dtype=np.int64)
        rows = np.arange(n)
        for t in range(int(count.max(initial=0))):
            offered = t < count
            b = (su[:, t], sv[:, t])
            while True:
                check = offered & (length >= 2)
                if not check.any():
                    break
                i1, i2 = np.maximum(length - 1, 0), np.maximum(length - 2, 0)
                turn = _cross((cu[rows, i2], cv[rows, i2]), (cu[rows, i1], cv[rows, i1]), b)
                pop = check & (turn <= 0)
                if not pop.any():
                    break
                length -= pop
            at = rows[offered]
            cu[at, length[at]] = b[0][at]
            cv[at, length[at]] = b[1][at]
            length += offered
        return cu, cv, length

    lu, lv, nl = chain(su, sv)
    rev = np.clip(count[:, None] - 1 - np.arange(su.shape[1])[None, :], 0, None)
    rows = np.arange(n)[:, None]
    uu, uv, nu = chain(su[rows, rev], sv[rows, rev])
    out = []
    for i in range(n):
        m = int(count[i])
        if m < 3:
            out.append(np.stack([su[i, :m], sv[i, :m]], axis=1))
            continue
        a, b = int(nl[i]) - 1, int(nu[i]) - 1
        out.append(np.stack([np.concatenate([lu[i, :a], uu[i, :b]]), np.concatenate([lv[i, :a], uv[i, :b]])], axis=1))
    return out
