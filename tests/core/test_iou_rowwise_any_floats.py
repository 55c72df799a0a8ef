"""``iou_2d_rowwise`` (its own short path since issue 35) against ``iou_2d``'s diagonal, bit for bit, on any float
boxes: inverted, zero-size, NaN and infinite coordinates included (the pairwise matrix's operations are the
previous implementation of the rowwise IoU)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from stridegen.core.iou import iou_2d, iou_2d_rowwise

ANY = st.floats(allow_nan=True, allow_infinity=True, width=64)
SMALL = st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 3.0])


@given(st.integers(0, 6).flatmap(lambda n: st.tuples(*[arrays(np.float64, (n, 4), elements=ANY | SMALL)] * 2)))
def test_rowwise_equals_the_diagonal_bit_for_bit(pair: tuple[np.ndarray, np.ndarray]) -> None:
    a, b = pair
    with np.errstate(all="ignore"):
        want = iou_2d(a, b).diagonal()
        got = iou_2d_rowwise(a, b)
    assert got.shape == (len(a),) and got.dtype == np.float64
    assert got.tobytes() == want.tobytes()


def test_rowwise_known_answers() -> None:
    a = [[0, 0, 2, 2], [0, 0, 2, 2], [0, 0, 1, 1], [0, 0, 0, 0], [2, 2, 0, 0]]
    b = [[1, 1, 3, 3], [0, 0, 2, 2], [5, 5, 6, 6], [0, 0, 0, 0], [0, 0, 2, 2]]
    # overlap 1 of union 7; identical; disjoint; both empty (union 0 -> 0); inverted box (area 0, no overlap)
    assert iou_2d_rowwise(a, b).tolist() == [1 / 7, 1.0, 0.0, 0.0, 0.0]
    assert iou_2d_rowwise(np.zeros((0, 4)), np.zeros((0, 4))).shape == (0,)
