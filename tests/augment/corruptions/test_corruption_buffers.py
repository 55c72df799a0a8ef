"""Tests of the speed machinery of the corruptions: reused work buffers (``base.scratch``), the banded defocus blur
and the shared lens-distortion map. Each one must leave the outputs
as they were: fresh arrays, the same bytes for the same seed, whatever the thread count."""

from __future__ import annotations

import threading

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stridegen.augment.corruptions import CORRUPTIONS
from stridegen.augment.corruptions import base as base_module
from stridegen.augment.corruptions.base import lookup_uint8, scratch
from stridegen.augment.corruptions.blur import disk_kernel
from stridegen.augment.corruptions.geometric import lens_distortion_map
from stridegen.viz.contact_sheet import synthetic_road_scene


@pytest.fixture(scope="module")
def scene() -> np.ndarray:
    return synthetic_road_scene(320, 180)


def test_scratch_reuses_a_buffer_per_site_shape_and_dtype():
    a = scratch("test-site", (4, 5), np.uint8)
    assert a.shape == (4, 5) and a.dtype == np.uint8 and a.flags.c_contiguous
    assert scratch("test-site", (4, 5), np.uint8) is a
    assert scratch("test-site", (4, 5), np.uint16) is not a
    assert scratch("test-site", (5, 4), np.uint8) is not a
    assert scratch("other-site", (4, 5), np.uint8) is not a


def test_scratch_is_per_thread():
    mine = scratch("test-thread", (3, 3), np.float32)
    theirs: list[np.ndarray] = []
    worker = threading.Thread(target=lambda: theirs.append(scratch("test-thread", (3, 3), np.float32)))
    worker.start()
    worker.join()
    assert theirs and theirs[0] is not mine and not np.shares_memory(theirs[0], mine)


def test_scratch_drops_least_recently_used_buffers_beyond_its_budget(monkeypatch):
    monkeypatch.setattr(base_module, "_SCRATCH_BYTES", 3000)
    first = scratch("test-lru-a", (1000,), np.uint8)
    second = scratch("test-lru-b", (1000,), np.uint8)
    assert scratch("test-lru-a", (1000,), np.uint8) is first  # a is now the most recently used
    scratch("test-lru-c", (1500,), np.uint8)  # 3500 bytes: b, the least recently used, goes
    assert scratch("test-lru-a", (1000,), np.uint8) is first
    assert scratch("test-lru-b", (1000,), np.uint8) is not second


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_results_are_fresh_arrays_that_later_calls_leave_alone(name, scene):
    # a corruption returning one of its reused work buffers would see its first result overwritten here
    corruption = CORRUPTIONS[name]
    first = corruption.apply(scene, 3, np.random.default_rng(0))
    kept = first.copy()
    second = corruption.apply(255 - scene, 4, np.random.default_rng(1))
    corruption.apply(scene[::-1].copy(), 3, np.random.default_rng(2))
    np.testing.assert_array_equal(first, kept)
    assert not np.shares_memory(first, second)
    np.testing.assert_array_equal(corruption.apply(scene, 3, np.random.default_rng(0)), kept)  # same seed, same bytes


@pytest.mark.parametrize("severity", [2, 5])
def test_defocus_blur_bytes_do_not_depend_on_the_thread_count(severity):
    image = synthetic_road_scene(400, 300)  # 300 rows: up to 4 bands of at least 64 rows
    previous = cv2.getNumThreads()
    try:
        outputs = []
        for threads in (1, 2, 3, 4):
            cv2.setNumThreads(threads)
            outputs.append(CORRUPTIONS["defocus_blur"].apply(image, severity, np.random.default_rng(0)))
    finally:
        cv2.setNumThreads(previous)
    for out in outputs[1:]:
        np.testing.assert_array_equal(out, outputs[0])
    # and the bands add up to the kernel correlation (within the rounding of float32 sums)
    radius, alias_blur = CORRUPTIONS["defocus_blur"].level(severity)
    expected = cv2.filter2D(image.astype(np.float64), -1, disk_kernel(radius, alias_blur).astype(np.float64))
    assert np.abs(outputs[0] - expected).max() <= 0.5 + 1e-3


@pytest.mark.parametrize("severity", [1, 3, 5])
def test_defocus_blur_cache_bands_give_the_bytes_of_one_band(monkeypatch, severity):
    """One thread cuts the image into cache-sized bands (issue 35): the same bytes as the whole image as one band."""
    import stridegen.augment.corruptions.blur as blur

    image = synthetic_road_scene(200, 330)  # 330 rows: 3 bands of 128 rows at most, the last one shorter
    previous = cv2.getNumThreads()
    try:
        cv2.setNumThreads(1)
        banded = CORRUPTIONS["defocus_blur"].apply(image, severity, np.random.default_rng(0))
        monkeypatch.setattr(blur, "_CACHE_BAND_ROWS", 10**6)
        whole = CORRUPTIONS["defocus_blur"].apply(image, severity, np.random.default_rng(0))
    finally:
        cv2.setNumThreads(previous)
    np.testing.assert_array_equal(banded, whole)


def test_lens_distortion_map_is_built_once_and_read_only():
    first = lens_distortion_map((90, 160), 0.35)
    assert lens_distortion_map((90, 160), 0.35, np.random.default_rng(1)) is first
    assert lens_distortion_map((90, 160), 0.5) is not first
    with pytest.raises(ValueError):
        first.map_x[0, 0] = 1.0
    # the corners stay fixed and the centre is magnified (sampled nearer the centre)
    assert first.map_x[0, 0] == pytest.approx(0.0, abs=1e-3) and first.map_y[-1, -1] == pytest.approx(89.0, abs=1e-3)
    assert abs(first.map_x[45, 100] - 79.5) < abs(100 - 79.5)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 40), st.integers(0, 40), st.booleans())
def test_lookup_uint8_equals_cv2_lut(seed: int, h: int, w: int, strided: bool) -> None:
    """StringZilla's byte translation gives cv2.LUT's result, for any table, shape and memory layout."""
    rng = np.random.default_rng(seed)
    image = rng.integers(0, 256, (h, 2 * w if strided else w, 3), dtype=np.uint8)
    if strided:
        image = image[:, ::2]  # not C-contiguous
    table = rng.integers(0, 256, 256, dtype=np.uint8)
    got = lookup_uint8(image, table)
    assert got.shape == image.shape and got.dtype == np.uint8
    expected = cv2.LUT(np.ascontiguousarray(image), table) if image.size else image
    assert np.array_equal(got, expected)
    assert not np.shares_memory(got, image)
