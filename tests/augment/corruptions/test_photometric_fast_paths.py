"""The fast paths of the photometric corruptions against the plain OpenCV formulas they replace: same bytes for
contrast (and every channel_affine caller), saturation and brightness; grayscale's fixed-point blend pinned by its
integer formula and bounded against the exact blend."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stridegen.augment.corruptions import get_corruption
from stridegen.augment.corruptions.photometric import channel_affine, channel_means, grey_blend_weights

_LEVELS = np.arange(256, dtype=np.float32)
_INV_LEVELS = np.concatenate([[0.0], 1.0 / _LEVELS[1:]]).astype(np.float32)


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


@st.composite
def images(draw: st.DrawFn, max_side: int = 48) -> np.ndarray:
    """Random RGB images, some with greys, blacks, whites and near-grey (low-chroma) pixels mixed in."""
    h = draw(st.integers(2, max_side))
    w = draw(st.integers(2, max_side))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    image = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    kind = draw(st.sampled_from(["uniform", "low_chroma", "specials"]))
    if kind == "low_chroma":  # V close to a R: saturation's clipped / tabled boundary at a = 2
        base = rng.integers(0, 256, (h, w, 1))
        image = np.clip(base + rng.integers(-40, 41, (h, w, 3)), 0, 255).astype(np.uint8)
    elif kind == "specials":
        specials = np.array([[0, 0, 0], [255, 255, 255], [90, 90, 90], [255, 0, 0], [254, 127, 0]], np.uint8)
        mask = rng.random((h, w)) < 0.3
        image[mask] = specials[rng.integers(0, len(specials), int(mask.sum()))]
    return image


# --- contrast / channel_affine: one byte table plus per-channel offsets == convertScaleAbs + cv2.add ---------------
def _two_pass_affine(image: np.ndarray, scale: float, offsets: tuple[float, float, float]) -> np.ndarray:
    """The OpenCV formulation channel_affine documents: convertScaleAbs with the first offset's fractional part,
    then the saturating cv2.add of the integer parts."""
    frac = offsets[0] - np.floor(offsets[0])
    ints = [float(round(o - frac)) for o in offsets]
    scaled = cv2.convertScaleAbs(image, alpha=float(scale), beta=float(frac))
    return cv2.add(scaled, (*ints, 0.0))  # type: ignore[call-overload]  # a Scalar: the stubs lack it


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    image=images(),
    scale=st.floats(0.0, 3.0),
    offsets=st.tuples(*[st.floats(-300.0, 300.0)] * 3),
)
def test_channel_affine_equals_the_two_opencv_passes(image, scale, offsets):
    # any scale and offsets: the wrapping numpy add is taken only when no sum can leave 0..255
    expected = _two_pass_affine(image, scale, offsets)
    np.testing.assert_array_equal(channel_affine(image, scale, offsets), expected)
    in_place = image.copy()
    np.testing.assert_array_equal(channel_affine(in_place, scale, offsets, dst=in_place), expected)
    np.testing.assert_array_equal(in_place, expected)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(image=images(), severity=st.integers(1, 5))
def test_contrast_is_the_two_pass_affine_around_the_channel_means(image, severity):
    c = get_corruption("contrast").level(severity)
    expected = _two_pass_affine(image, c, tuple((1.0 - c) * m for m in channel_means(image)))
    np.testing.assert_array_equal(get_corruption("contrast").apply(image, severity, _rng()), expected)


def test_contrast_of_a_hand_computed_image():
    # channel means 100, 50, 0 (two rows of the same two pixels); c = .4 at severity 1: .4 x + .6 m
    image = np.array([[[150, 0, 0], [50, 100, 0]]] * 2, np.uint8)
    out = get_corruption("contrast").apply(image, 1, _rng())
    np.testing.assert_array_equal(out, [[[120, 30, 0], [80, 70, 0]]] * 2)


# --- saturation: the b = 0 table path == the per-pixel float32 ratio formula ----------------------------------------
def _saturation_float32(image: np.ndarray, a: float, b: float) -> np.ndarray:
    """x' = V - round((V - x) ratio), ratio = min(a + b q, q) in float32 with q = V * (1 / R) (0 for grey): the
    dense formula of the corruption's b > 0 branch, here for any (a, b), without its grey-pixel hue rule."""
    v = image.max(axis=2)
    chroma = v - image.min(axis=2)
    q = _LEVELS[v] * _INV_LEVELS[chroma]
    ratio = np.minimum(q * np.float32(b) + np.float32(a), q) if b > 0 else np.minimum(q, np.float32(a))
    moved = (v[..., None] - image).astype(np.float32) * ratio[..., None]
    scaled = np.clip(np.rint(moved), 0, 255)
    return np.clip(v[..., None] - scaled, 0, 255).astype(np.uint8)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(image=images(), severity=st.sampled_from([1, 2, 3]))
def test_saturation_table_path_equals_the_float32_formula(image, severity):
    a, b = get_corruption("saturation").level(severity)
    assert b == 0  # levels 1-3 take the table (a = .3, .1: every pixel; a = 2: the unclipped ones)
    got = get_corruption("saturation").apply(image, severity, _rng())
    np.testing.assert_array_equal(got, _saturation_float32(image, a, b))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(image=images(), a=st.sampled_from([1.0, 1.7, 3.3, 5.0, 20.0, 0.999]))
def test_saturation_table_path_equals_the_float32_formula_off_the_table(image, a):
    # gains the severity table does not use: non-integer ones put V = a R between integers (the margin's case)
    got = get_corruption("saturation").fn(image, (a, 0.0), _rng())
    np.testing.assert_array_equal(got, _saturation_float32(image, a, 0.0))


def test_saturation_level_3_tables_unclipped_pixels_and_computes_clipped_ones():
    # a = 2: (200, 150, 100) has S = 1/2, V = a R exactly (clipped branch, ratio = V / R = 2 either way);
    # (200, 190, 180) S = .1 -> .2: V - 2 (V - x); (200, 100, 0) S = 1 -> 1: unchanged; (200, 140, 90) S = .55:
    # clipped, x' = V (x - min) / R = 200 * 50 / 110 = 90.9 -> 91, min -> 0
    image = np.array([[[200, 150, 100], [200, 190, 180], [200, 100, 0], [200, 140, 90]]] * 2, np.uint8)
    out = get_corruption("saturation").apply(image, 3, _rng())
    np.testing.assert_array_equal(out, [[[200, 100, 0], [200, 180, 160], [200, 100, 0], [200, 91, 0]]] * 2)


# --- brightness: channel planes from one cv2.split -------------------------------------------------------------------
@settings(max_examples=40, deadline=None, derandomize=True)
@given(image=images(), severity=st.integers(1, 5))
def test_brightness_is_the_closed_form_with_v_the_channel_maximum(image, severity):
    # out = min(x + round(k x / V), round(255 x / V)), k = 255 c, by cv2.divide; V = 0 (black) becomes round(k)
    k = 255.0 * get_corruption("brightness").level(severity)
    v3 = np.repeat(image.max(axis=2, keepdims=True), 3, axis=2)
    expected = np.minimum(cv2.add(image, cv2.divide(image, v3, scale=k)), cv2.divide(image, v3, scale=255.0))
    expected[v3 == 0] = round(k)
    np.testing.assert_array_equal(get_corruption("brightness").apply(image, severity, _rng()), expected)


# --- grayscale: 10-bit fixed-point blend (cv2.transform) ------------------------------------------------------------
@pytest.mark.parametrize("alpha", [0.2, 0.4, 0.6, 0.8])
def test_grey_blend_weights_are_the_rounded_matrix_with_rows_of_1024(alpha):
    weights = grey_blend_weights(alpha)
    exact = ((1.0 - alpha) * np.eye(3) + alpha * np.array([0.299, 0.587, 0.114])) * 1024.0
    assert weights.dtype.kind == "i" and np.all(weights.sum(axis=1) == 1024)
    assert np.abs(weights - exact).max() < 1.0


@settings(max_examples=40, deadline=None, derandomize=True)
@given(image=images(), severity=st.integers(1, 4))
def test_grayscale_blend_is_the_fixed_point_formula(image, severity):
    alpha = get_corruption("grayscale").level(severity)
    weights = grey_blend_weights(alpha)
    got = get_corruption("grayscale").apply(image, severity, _rng())
    known = (image.astype(np.int64) @ weights.T + 512) >> 10  # rows sum to 1024: never above 255
    np.testing.assert_array_equal(got, known)
    # within one level of the exactly rounded blend with the unrounded luma
    luma = image.astype(np.float64) @ np.array([0.299, 0.587, 0.114])
    exact = np.rint((1.0 - alpha) * image + alpha * luma[..., None])
    assert np.abs(got - exact).max() <= 1


def test_grayscale_keeps_grey_pixels_grey():
    grey = np.repeat(np.arange(256, dtype=np.uint8).reshape(16, 16, 1), 3, axis=2)
    for severity in range(1, 6):
        np.testing.assert_array_equal(get_corruption("grayscale").apply(grey, severity, _rng()), grey)


# --- jpeg_compression: OpenCV's encode, then simplejpeg's decode == OpenCV's round trip ---------------------------
@settings(max_examples=40, deadline=None, derandomize=True)
@given(image=images(max_side=96), severity=st.integers(1, 5))
def test_jpeg_compression_is_opencvs_round_trip(image, severity):
    from stridegen.formats.images import encode_jpeg

    corruption = get_corruption("jpeg_compression")
    quality = corruption.params[severity - 1]
    reference = cv2.imdecode(encode_jpeg(image, quality), cv2.IMREAD_COLOR_RGB)
    assert np.array_equal(corruption.apply(image, severity, _rng()), reference)
