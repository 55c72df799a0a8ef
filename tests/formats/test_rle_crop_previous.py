"""``rle_counts_crop`` (row-major edges, sorted, since issue 35) gives the uncompressed counts of the previous
implementation (a transposed, column-padded copy of the crop), int64 for int64, on random crops, full-height
crops whose runs join across columns included."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings

from stridegen.formats.rle import rle_counts_crop
from tests.formats.test_rle import crops_of_an_image


def _previous(pixels: np.ndarray, r0: int, c0: int, height: int, width: int) -> np.ndarray:
    m = np.asarray(pixels, dtype=bool)
    h, w = m.shape
    total = int(height) * int(width)
    padded = np.zeros((w, h + 2), dtype=bool)
    padded[:, 1:-1] = m.T
    flat = padded.reshape(-1)
    changes = np.flatnonzero(flat[1:] != flat[:-1]) + 1
    if changes.size == 0:
        return np.array([total], dtype=np.int64)
    col, row = np.divmod(changes, h + 2)
    full = (c0 + col) * int(height) + r0 + row - 1
    s, e = full[0::2], full[1::2]
    joined = s[1:] == e[:-1]
    if joined.any():
        s = s[np.concatenate([[True], ~joined])]
        e = e[np.concatenate([~joined, [True]])]
    bounds = np.empty(2 * s.size + 2, dtype=np.int64)
    bounds[0], bounds[-1] = 0, total
    bounds[1:-1:2], bounds[2:-1:2] = s, e
    counts = np.diff(bounds)
    return counts[:-1] if counts[-1] == 0 else counts


@settings(max_examples=300, deadline=None)
@given(crops_of_an_image())
def test_counts_equal_the_previous_implementation(case) -> None:
    height, width, crops = case
    for pixels, r0, c0 in crops:
        got = rle_counts_crop(pixels, r0, c0, height, width)
        want = _previous(pixels, r0, c0, height, width)
        assert got.dtype == want.dtype == np.int64 and np.array_equal(got, want)


def test_full_height_stripes_join_across_columns() -> None:
    pixels = np.zeros((4, 3), dtype=bool)
    pixels[2:, 0] = pixels[:, 1] = pixels[:1, 2] = True  # column 0's run continues into 1 and 2
    # column-major over a 4 x 5 image with the crop at column 1: 4 + 2 zeros, then 2 + 4 + 1 ones, then the rest
    assert rle_counts_crop(pixels, 0, 1, 4, 5).tolist() == [6, 7, 7]
    assert np.array_equal(rle_counts_crop(pixels, 0, 1, 4, 5), _previous(pixels, 0, 1, 4, 5))
