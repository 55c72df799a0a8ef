"""Set-of-Mark overlays (stridegen.pipeline.som)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stridegen.core.errors import ConfigError
from stridegen.pipeline.som import (
    PALETTE,
    PALETTE_SIZE,
    draw_set_of_marks,
    font_scale_for,
    label_anchor,
    region_color,
    relative_luminance,
    text_color_on,
)


def _grey(h: int = 200, w: int = 300, value: int = 100) -> np.ndarray:
    return np.full((h, w, 3), value, dtype=np.uint8)


def _rect_mask(h: int, w: int, x0: int, y0: int, x1: int, y1: int) -> np.ndarray:
    mask = np.zeros((h, w), dtype=bool)
    mask[y0:y1, x0:x1] = True
    return mask


def test_palette_is_fixed_and_distinct():
    assert len(PALETTE) == PALETTE_SIZE and len(set(PALETTE)) == PALETTE_SIZE
    assert region_color(2) == PALETTE[2] == region_color(2 + PALETTE_SIZE)
    # neighbouring ids are far apart in colour (at least 60 grey levels on some channel)
    for i in range(PALETTE_SIZE - 1):
        assert max(abs(a - b) for a, b in zip(PALETTE[i], PALETTE[i + 1], strict=True)) >= 60
    with pytest.raises(ConfigError):
        region_color(-1)


def test_contrast_colours():
    assert text_color_on((255, 255, 0)) == (0, 0, 0)  # yellow box: black text
    assert text_color_on((0, 0, 128)) == (255, 255, 255)  # navy box: white text
    assert relative_luminance((255, 255, 255)) == pytest.approx(1.0)
    assert relative_luminance((0, 0, 0)) == 0.0
    # WCAG: (255, 0, 0) has luminance 0.2126
    assert relative_luminance((255, 0, 0)) == pytest.approx(0.2126)


def test_font_scale_follows_the_image():
    assert font_scale_for(900, 1600) == pytest.approx(1.2)
    assert font_scale_for(1800, 3200) == pytest.approx(2.4)
    assert font_scale_for(50, 80) == pytest.approx(0.4)


def test_fill_is_the_alpha_blend_and_outside_is_untouched():
    image = _grey()
    mask = _rect_mask(200, 300, 40, 50, 200, 170)
    out = draw_set_of_marks(image, mask[None], [3], alpha=0.4)
    colour = np.array(region_color(3), dtype=np.float64)
    expected = np.rint(100 * 0.6 + colour * 0.4).astype(np.uint8)
    # inside the mask, away from the contour (edge) and from the label (at the centre)
    np.testing.assert_array_equal(out[60, 50], expected)
    np.testing.assert_array_equal(out[160, 190], expected)
    # outside the mask and beyond the contour's width: the image as it was
    far = np.ones((200, 300), dtype=bool)
    far[44:177, 34:207] = False
    np.testing.assert_array_equal(out[far], image[far])
    # the contour is drawn opaque in the region's colour on the mask's edge
    np.testing.assert_array_equal(out[110, 40], np.array(region_color(3), np.uint8))
    assert not np.shares_memory(out, image) and (image == 100).all()


def test_label_sits_at_the_interior_maximum_on_a_box_of_the_region_colour():
    image = _grey(300, 400)
    mask = _rect_mask(300, 400, 100, 80, 301, 221)  # centre (200, 150)
    assert label_anchor(mask) == (200, 150)
    out = draw_set_of_marks(image, mask[None], [7], alpha=0.0, contour_thickness=1)
    colour = np.array(region_color(7), np.uint8)
    text = np.array(text_color_on(region_color(7)), np.uint8)
    patch = out[135:166, 185:216].reshape(-1, 3)
    assert (patch == colour).all(axis=1).sum() > 100  # the box
    assert (np.abs(patch.astype(int) - text.astype(int)).sum(axis=1) < 30).sum() > 10  # the digit
    # with alpha 0 and the label elsewhere, the mask's inside keeps the image
    np.testing.assert_array_equal(out[100, 120], image[100, 120])


def test_label_format_and_size_scale_with_the_image():
    mask_small = _rect_mask(90, 160, 20, 20, 140, 80)
    mask_big = _rect_mask(900, 1600, 200, 200, 1400, 800)

    def label_area(image: np.ndarray, mask: np.ndarray, fmt: str) -> int:
        out = draw_set_of_marks(image, mask[None], [1], alpha=0.0, label_format=fmt)
        return int((out != image).any(axis=2).sum())

    small, big = label_area(_grey(90, 160), mask_small, "{id}"), label_area(_grey(900, 1600), mask_big, "{id}")
    assert big > 20 * small  # roughly the square of the 10x scale, less the contour
    assert label_area(_grey(900, 1600), mask_big, "[{id}]") > label_area(_grey(900, 1600), mask_big, "{id}")


def test_empty_mask_and_no_masks_leave_the_image():
    image = _grey(60, 80)
    out = draw_set_of_marks(image, np.zeros((1, 60, 80), bool), [0])
    np.testing.assert_array_equal(out, image)
    np.testing.assert_array_equal(draw_set_of_marks(image, np.zeros((0, 60, 80), bool), []), image)
    assert label_anchor(np.zeros((5, 5), bool)) is None


def test_label_of_a_mask_cut_by_the_image_edge_stays_away_from_the_edge():
    mask = _rect_mask(100, 200, 0, 0, 60, 100)  # the left strip, cut by three image edges
    x, y = label_anchor(mask)
    assert abs(x - 29.5) <= 1 and abs(y - 49.5) <= 1  # the middle of the strip's ridge of maxima


def test_labels_are_drawn_over_every_fill():
    image = _grey(120, 200)
    a = _rect_mask(120, 200, 10, 10, 110, 110)
    b = _rect_mask(120, 200, 40, 40, 190, 110)  # overlaps a's centre, drawn after it
    out = draw_set_of_marks(image, np.stack([a, b]), [0, 1], alpha=0.6)
    ax, ay = label_anchor(a)
    # a's label box keeps its pure colour although b's fill covers that spot
    assert (
        (out[ay - 3 : ay + 4, ax - 3 : ax + 4].reshape(-1, 3) == np.array(region_color(0), np.uint8)).all(axis=1).any()
    )


def test_bad_inputs_raise_config_error():
    image = _grey(20, 30)
    with pytest.raises(ConfigError, match="masks"):
        draw_set_of_marks(image, np.zeros((1, 20, 31), bool), [0])
    with pytest.raises(ConfigError, match="region ids"):
        draw_set_of_marks(image, np.zeros((2, 20, 30), bool), [0])
    with pytest.raises(ConfigError, match="RGB"):
        draw_set_of_marks(image[..., 0], np.zeros((1, 20, 30), bool), [0])
    with pytest.raises(ConfigError, match="alpha"):
        draw_set_of_marks(image, np.zeros((1, 20, 30), bool), [0], alpha=1.5)


@settings(max_examples=40, deadline=None)
@given(
    rects=st.lists(
        st.tuples(st.integers(0, 70), st.integers(0, 50), st.integers(1, 40), st.integers(1, 30)),
        min_size=1,
        max_size=4,
    )
)
def test_anchor_is_inside_the_mask_and_farthest_from_its_boundary(rects):
    mask = np.zeros((60, 90), dtype=bool)
    for x, y, w, h in rects:
        mask[y : y + h, x : x + w] = True
    x, y = label_anchor(mask)
    assert mask[y, x]
    # independent check: brute-force distance from (x, y) to the nearest non-mask pixel (the padded border counts)
    padded = np.pad(mask, 1)
    ys, xs = np.nonzero(~padded)
    dist = cv2.distanceTransform(padded.astype(np.uint8), cv2.DIST_L2, cv2.DIST_MASK_PRECISE)[1:-1, 1:-1]
    nearest = np.min(np.hypot(xs - (x + 1), ys - (y + 1)))
    assert nearest == pytest.approx(dist.max(), abs=1e-3)


@pytest.mark.parametrize("size", [3, 8, 14, 20, 30])
def test_a_label_never_hides_its_own_small_region(size):
    """On a 1600x900 image (label boxes about 36x48 px) a small region's label goes beside it, covering none of its
    pixels, and a leader line joins the label to the region."""
    from stridegen.pipeline.som import MAX_LABEL_COVER, _label_box, _label_origin, _region

    image = _grey(900, 1600)
    mask = _rect_mask(900, 1600, 800, 400, 800 + size, 400 + size)
    box_w, box_h = _label_box("3", 1.2)[:2]
    anchor = label_anchor(mask)
    x0, y0, outside = _label_origin(_region(mask), anchor, box_w, box_h)
    covered = mask[y0 : y0 + box_h, x0 : x0 + box_w].sum()
    assert outside and covered == 0
    out = draw_set_of_marks(image, mask[None], [3], alpha=0.5)
    # the leader line crosses the gap between the box (above the region) and the region
    assert y0 + box_h <= 400
    gap = out[y0 + box_h : 400, anchor[0] - 1 : anchor[0] + 2]
    assert (gap != 100).any(axis=2).any(axis=1).all()
    assert MAX_LABEL_COVER < 1


def test_a_large_region_keeps_its_label_centred_inside():
    from stridegen.pipeline.som import _label_box, _label_origin, _region

    mask = _rect_mask(900, 1600, 700, 300, 900, 500)
    box_w, box_h = _label_box("3", 1.2)[:2]
    ax, ay = label_anchor(mask)
    assert _label_origin(_region(mask), (ax, ay), box_w, box_h) == (ax - box_w // 2, ay - box_h // 2, False)


def test_a_region_at_the_image_corner_gets_its_label_inside_the_image_and_off_the_region():
    from stridegen.pipeline.som import _label_box, _label_origin, _region

    mask = _rect_mask(450, 800, 0, 0, 6, 6)  # above and left of it are off the image
    box_w, box_h = _label_box("1", 0.6)[:2]
    x0, y0, outside = _label_origin(_region(mask), label_anchor(mask), box_w, box_h)
    assert outside and 0 <= x0 <= 800 - box_w and 0 <= y0 <= 450 - box_h
    assert mask[y0 : y0 + box_h, x0 : x0 + box_w].sum() == 0


@st.composite
def _image_and_mask(draw):
    h, w = draw(st.integers(4, 60)), draw(st.integers(4, 80))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    mask = np.zeros((h, w), np.uint8)
    for _ in range(draw(st.integers(1, 3))):  # ellipses anywhere, some cut by the image edge, plus speckle
        centre = (int(rng.integers(-5, w + 5)), int(rng.integers(-5, h + 5)))
        cv2.ellipse(mask, centre, (int(rng.integers(1, 30)), int(rng.integers(1, 20))), 0, 0, 360, 1, -1)
    mask |= (rng.random((h, w)) < draw(st.sampled_from([0.0, 0.03]))).astype(np.uint8)
    image = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    return image, mask.astype(bool), draw(st.floats(0.0, 1.0))


@settings(max_examples=150, deadline=None)
@given(_image_and_mask())
def test_each_region_step_on_its_box_equals_the_whole_image_computation(case):
    """The per-region steps work on the mask's bounding box; each must give what the plain whole-image computation
    gives: the float32 blend of every masked pixel, OpenCV's contours of the whole mask, and the distance-transform
    maximum of the whole mask padded with one background pixel (the label anchor's definition)."""
    from stridegen.pipeline.som import _Region

    image, mask, alpha = case
    region = _Region.of(mask)
    if not mask.any():
        assert region is None
        return
    colour = (250, 13, 128)
    blended = image.copy()
    region.blend(blended, colour, alpha)
    expected = image.copy()
    mixed = image[mask].astype(np.float32) * (1.0 - alpha) + np.asarray(colour, np.float32) * alpha
    expected[mask] = np.clip(np.rint(mixed), 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(blended, expected)

    whole, _ = cv2.findContours(mask.astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    boxed = region.contours()
    assert len(boxed) == len(whole)
    assert all(np.array_equal(a, b) for a, b in zip(boxed, whole, strict=True))

    padded = cv2.copyMakeBorder(mask.astype(np.uint8), 1, 1, 1, 1, cv2.BORDER_CONSTANT, value=0)
    dist = cv2.distanceTransform(padded, cv2.DIST_L2, cv2.DIST_MASK_PRECISE)[1:-1, 1:-1]
    ys, xs = np.nonzero(dist >= float(dist.max()) - 1e-3)
    k = int(np.argmin((xs - xs.mean()) ** 2 + (ys - ys.mean()) ** 2))
    assert region.anchor() == (int(xs[k]), int(ys[k]))
    assert region.area() == int(mask.sum())
