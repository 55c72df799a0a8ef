"""Known-answer and property tests of 2D IoU and rotated BEV IoU."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stridegen.core.box_geometry import bev_corners
from stridegen.core.errors import GeometryError
from stridegen.core.iou import bev_iou, iou_2d, iou_2d_rowwise

# ---------------------------------------------------------------------------------------------- IoU


def test_iou_2d_known():
    a = np.array([[0, 0, 2, 2]])
    b = np.array([[1, 1, 3, 3], [5, 5, 6, 6], [0, 0, 2, 2]])
    np.testing.assert_allclose(iou_2d(a, b), [[1 / 7, 0, 1]])


@given(
    st.lists(
        st.tuples(*[st.floats(-50, 50, allow_nan=False)] * 2, *[st.floats(0, 30, allow_nan=False)] * 2),
        min_size=1,
        max_size=12,
    ),
    st.integers(0, 2**32 - 1),
)
def test_iou_2d_rowwise_is_the_diagonal(boxes, seed):
    """Bit for bit the diagonal of the pairwise matrix (zero-size and disjoint boxes included)."""
    a = np.array([[x, y, x + w, y + h] for x, y, w, h in boxes])
    b = a[np.random.default_rng(seed).permutation(len(a))] + np.random.default_rng(seed).choice([0.0, 0.5], (len(a), 4))
    assert iou_2d_rowwise(a, b).tobytes() == iou_2d(a, b).diagonal().tobytes()
    np.testing.assert_allclose(iou_2d_rowwise([[0, 0, 2, 2]] * 2, [[1, 1, 3, 3], [0, 0, 2, 2]]), [1 / 7, 1])
    with pytest.raises(GeometryError, match="as many boxes"):
        iou_2d_rowwise(a, b[:0])


def test_bev_iou_known():
    # identical -> 1; shifted by half its length -> 1/3; rotated square by 45 deg vs itself
    iou = bev_iou([[0, 0]], [[4, 2]], [0.0], [[0, 0], [2, 0], [100, 0]], [[4, 2]] * 3, [0.0] * 3)
    np.testing.assert_allclose(iou, [[1.0, 1 / 3, 0.0]], atol=1e-12)
    sq = bev_iou([[0, 0]], [[2, 2]], [0.0], [[0, 0]], [[2, 2]], [np.pi / 4])
    inter = 8 * (np.sqrt(2) - 1)  # regular octagon from two unit-half squares
    assert sq[0, 0] == pytest.approx(inter / (8 - inter))


@given(
    st.lists(
        st.tuples(st.floats(-5, 5), st.floats(-5, 5), st.floats(0.2, 6), st.floats(0.2, 6), st.floats(-3.2, 3.2)),
        min_size=1,
        max_size=4,
    ),
    st.lists(
        st.tuples(st.floats(-5, 5), st.floats(-5, 5), st.floats(0.2, 6), st.floats(0.2, 6), st.floats(-3.2, 3.2)),
        min_size=1,
        max_size=4,
    ),
)
@settings(max_examples=60, deadline=None)
def test_bev_iou_matches_shapely(a, b):
    shapely = pytest.importorskip("shapely")
    a, b = np.array(a), np.array(b)
    ours = bev_iou(a[:, :2], a[:, 2:4], a[:, 4], b[:, :2], b[:, 2:4], b[:, 4])
    ca = bev_corners(a[:, :2], a[:, 2:4], a[:, 4])
    cb = bev_corners(b[:, :2], b[:, 2:4], b[:, 4])
    for i in range(len(a)):
        for j in range(len(b)):
            pa, pb = shapely.Polygon(ca[i]), shapely.Polygon(cb[j])
            ref = pa.intersection(pb).area / pa.union(pb).area
            assert ours[i, j] == pytest.approx(ref, abs=1e-9)
    # symmetry
    np.testing.assert_allclose(ours, bev_iou(b[:, :2], b[:, 2:4], b[:, 4], a[:, :2], a[:, 2:4], a[:, 4]).T, atol=1e-9)
