"""COCO RLE of masks given on a crop of their image, against pycocotools' encoding of the full mask."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stridegen.formats.rle import decode_rle, encode_rle, encode_rle_batch, encode_rle_crops, rle_counts_crop


@st.composite
def crops_of_an_image(draw: st.DrawFn) -> tuple[int, int, list[tuple[np.ndarray, int, int]]]:
    """An image size and crops inside it: random windows (touching the borders often, full height sometimes)
    holding random, all-False, all-True or one-pixel masks."""
    height = draw(st.integers(1, 12))
    width = draw(st.integers(1, 12))
    crops = []
    for _ in range(draw(st.integers(1, 4))):
        r0 = draw(st.integers(0, height))
        r1 = draw(st.integers(r0, height))
        c0 = draw(st.integers(0, width))
        c1 = draw(st.integers(c0, width))
        shape = (r1 - r0, c1 - c0)
        kind = draw(st.sampled_from(["random", "empty", "full", "pixel"]))
        if kind == "random":
            seed = draw(st.integers(0, 2**32 - 1))
            pixels = np.random.default_rng(seed).random(shape) < draw(st.floats(0.05, 0.95))
        else:
            pixels = np.full(shape, kind == "full")
            if kind == "pixel" and pixels.size:
                pixels[draw(st.integers(0, shape[0] - 1)), draw(st.integers(0, shape[1] - 1))] = True
        crops.append((pixels, r0, c0))
    return height, width, crops


@settings(max_examples=400, deadline=None)
@given(crops_of_an_image())
def test_crop_encoding_is_the_full_frame_coco_rle(case) -> None:
    height, width, crops = case
    full = []
    for pixels, r0, c0 in crops:
        mask = np.zeros((height, width), dtype=bool)
        mask[r0 : r0 + pixels.shape[0], c0 : c0 + pixels.shape[1]] = pixels
        full.append(mask)
    ours = encode_rle_crops(crops, height, width)
    assert ours == [encode_rle(m) for m in full] == encode_rle_batch(np.stack(full))
    for counts, mask in zip(ours, full, strict=True):
        assert np.array_equal(decode_rle(counts, height, width), mask)


def test_crop_counts_known_answer() -> None:
    # 3 x 2 image, column-major: column 0 = [0, 1, 1], column 1 = [1, 0, 0] -> runs 0:1, 1:3 (joined across the
    # column break: the crop is as tall as the image), 0:2
    pixels = np.array([[False, True], [True, False], [True, False]])
    assert rle_counts_crop(pixels, 0, 0, 3, 2).tolist() == [1, 3, 2]
    # the same column 1 alone as a crop at column 1: 3 + 0 zeros, then one 1, then two 0s
    assert rle_counts_crop(pixels[:, 1:], 0, 1, 3, 2).tolist() == [3, 1, 2]
    # a mask ending on a 1 has no trailing run of 0s; an empty mask is one run of 0s
    assert rle_counts_crop(np.ones((1, 1), bool), 2, 1, 3, 2).tolist() == [5, 1]
    assert rle_counts_crop(np.zeros((2, 2), bool), 1, 0, 3, 2).tolist() == [6]
    assert encode_rle_crops([], 3, 2) == []


def test_crop_must_lie_inside_the_image() -> None:
    with pytest.raises(ValueError):
        rle_counts_crop(np.ones((2, 2), bool), 2, 0, 3, 2)
    with pytest.raises(ValueError):
        rle_counts_crop(np.ones(4, bool), 0, 0, 3, 2)
