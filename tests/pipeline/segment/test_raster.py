"""Crops: polygon rasters on their window, mask-crop operations against their full-image equivalents, the request's
shared hull rasters, both views of a SegmentResult, and the LiDAR backend's windowed morphology."""

from __future__ import annotations

import cv2
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stridegen.core.polygons import convex_hull_2d
from stridegen.pipeline.segment import SegmentRequest, SegmentResult, make_segmenter
from stridegen.pipeline.segment.lidar import LidarSegmenter, disc_kernel, point_discs
from stridegen.pipeline.segment.raster import MaskCrop, crop_boxes, polygon_crop, polygon_crops, polygon_mask

H, W = 24, 30


def _whole_image_scan_line(poly: np.ndarray, height: int, width: int) -> np.ndarray:
    """The whole-image scan line (pixel-centre rule) written out directly, as the reference for the crops."""
    mask = np.zeros((height, width), dtype=bool)
    if poly.shape[0] < 3:
        return mask
    a, b = poly, np.roll(poly, -1, axis=0)
    for r in range(height):
        xs = [p[0] for p in poly if p[1] == r]
        for (ax, ay), (bx, by) in zip(a, b, strict=True):
            if ay != by and min(ay, by) <= r <= max(ay, by):
                xs.append(ax + (r - ay) / (by - ay) * (bx - ax))
        if xs:
            c0, c1 = int(np.clip(np.ceil(min(xs)), 0, width)), int(np.clip(np.floor(max(xs)) + 1, 0, width))
            mask[r, c0:c1] = True
    return mask


points = st.lists(st.tuples(st.floats(-8, W + 8), st.floats(-8, H + 8)), min_size=1, max_size=10)


@settings(max_examples=120, deadline=None)
@given(points)
def test_polygon_crop_is_the_whole_image_raster_on_its_tight_window(pts) -> None:
    hull = convex_hull_2d(np.array(pts))
    crop = polygon_crop(hull, H, W)
    full = crop.full(H, W)
    assert np.array_equal(full, polygon_mask(hull, H, W))
    area2 = abs(np.dot(hull[:, 0], np.roll(hull[:, 1], -1)) - np.dot(hull[:, 1], np.roll(hull[:, 0], -1)))
    if hull.shape[0] >= 3 and area2 > 0:
        assert np.array_equal(full, _whole_image_scan_line(hull, H, W))
    if crop.any():  # tight: every border row and column of the window holds a pixel
        px = crop.pixels
        assert px[0].any() and px[-1].any() and px[:, 0].any() and px[:, -1].any()
    else:
        assert crop.pixels.size == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(points, min_size=0, max_size=6))
def test_polygon_crops_of_many_polygons_equal_each_alone(many) -> None:
    # Polygons of different vertex counts (the batch pads the shorter ones) and degenerate ones in one call.
    hulls = [convex_hull_2d(np.array(pts)) for pts in many]
    crops = polygon_crops(hulls, H, W)
    assert len(crops) == len(hulls)
    for hull, crop in zip(hulls, crops, strict=True):
        area2 = abs(np.dot(hull[:, 0], np.roll(hull[:, 1], -1)) - np.dot(hull[:, 1], np.roll(hull[:, 0], -1)))
        expected = _whole_image_scan_line(hull, H, W) if hull.shape[0] >= 3 and area2 > 0 else np.zeros((H, W), bool)
        assert np.array_equal(crop.full(H, W), expected)
        alone = polygon_crop(hull, H, W)
        assert (crop.r0, crop.c0, crop.pixels.shape) == (alone.r0, alone.c0, alone.pixels.shape)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(-6, 2 * W + 6), st.integers(-6, 2 * H + 6)), min_size=1, max_size=8)))
def test_polygon_crops_with_vertices_on_scan_lines_and_far_off(many) -> None:
    # Half-pixel vertices: vertices on scan lines, horizontal edges, edges through pixel centres; and a polygon
    # reaching 1e12 pixels away (edges far beyond its rows).
    hulls = [convex_hull_2d(np.array(pts, dtype=np.float64) / 2.0) for pts in many]
    hulls.append(np.array([[-1e12, 3.0], [5.0, -1e12], [1e12, 1e12]]))
    for hull, crop in zip(hulls, polygon_crops(hulls, H, W), strict=True):
        area2 = abs(np.dot(hull[:, 0], np.roll(hull[:, 1], -1)) - np.dot(hull[:, 1], np.roll(hull[:, 0], -1)))
        expected = _whole_image_scan_line(hull, H, W) if hull.shape[0] >= 3 and area2 > 0 else np.zeros((H, W), bool)
        assert np.array_equal(crop.full(H, W), expected)


def _crop(draw: st.DrawFn) -> MaskCrop:
    r0, c0 = draw(st.integers(0, H)), draw(st.integers(0, W))
    h, w = draw(st.integers(0, H - r0)), draw(st.integers(0, W - c0))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return MaskCrop(r0, c0, rng.random((h, w)) < 0.5)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_mask_crop_operations_match_full_images(data) -> None:
    a, b = _crop(data.draw), _crop(data.draw)
    fa, fb = a.full(H, W), b.full(H, W)
    assert np.array_equal(a.clip_to(b).full(H, W), fa & fb)
    assert a.clip_to(b).window == b.window
    assert a.overlap(b) == np.count_nonzero(fa & fb)
    assert np.array_equal(a.minus(fb).full(H, W), fa & ~fb)
    assert a.area == np.count_nonzero(fa)
    window = (data.draw(st.integers(0, H)), H, data.draw(st.integers(0, W)), W)
    assert np.array_equal(a.within(window), fa[window[0] :, window[2] :])
    rows = np.random.default_rng(0).integers(0, H, 50)
    cols = np.random.default_rng(1).integers(0, W, 50)
    assert np.array_equal(a.at(rows, cols), fa[rows, cols])
    canvas = fb.copy()
    a.paint(canvas)
    assert np.array_equal(canvas, fa | fb)
    boxes, area = crop_boxes([a])
    if fa.any():
        ys, xs = np.nonzero(fa)
        assert boxes[0].tolist() == [xs.min() - 0.5, ys.min() - 0.5, xs.max() + 0.5, ys.max() + 0.5]
    else:
        assert np.isnan(boxes[0]).all()
    assert area.tolist() == [np.count_nonzero(fa)]


def test_segment_result_views_agree() -> None:
    crops = [MaskCrop(2, 3, np.array([[True, False], [True, True]])), MaskCrop.empty()]
    from_crops = SegmentResult.of_crops(crops, np.array([0.5, 0.0]), 5, 6)
    assert from_crops.masks.shape == (2, 5, 6) and from_crops.masks.sum() == 3 and from_crops.masks[0, 3, 4]
    from_masks = SegmentResult(from_crops.masks, from_crops.quality)
    assert np.array_equal(np.stack([c.full(5, 6) for c in from_masks.crops]), from_crops.masks)


def test_request_rasterises_each_hull_once_and_backends_share_it() -> None:
    hull = np.array([[3.0, 2.0], [20.0, 4.0], [15.0, 18.0]])
    request = SegmentRequest(
        image_rgb=np.zeros((H, W, 3), np.uint8),
        box_xyxy=np.array([[3.0, 2.0, 20.0, 18.0]]),
        hull_uv=[hull],
        depth_m=np.array([5.0]),
    )
    first = request.hull_crop(0)
    assert request.hull_crop(0) is first
    assert np.array_equal(first.full(H, W), polygon_mask(hull, H, W))
    result = make_segmenter("projected_box").segment(request)
    assert result.crops[0].window == first.window and np.array_equal(result.masks[0], polygon_mask(hull, H, W))


def _whole_image_morphology(seg: LidarSegmenter, hull: np.ndarray, seeds_uv: np.ndarray) -> np.ndarray:
    """The LiDAR backend's morphology fallback computed on the whole image (the reference for the crop version)."""
    h, w = hull.shape
    kernel = disc_kernel(seg._grow_px(h))
    region = polygon_mask(convex_hull_2d(seeds_uv), h, w).astype(np.uint8)
    region[point_discs(seeds_uv, 0.0, h, w)] = 1
    region = cv2.dilate(region, kernel)
    return cv2.morphologyEx(region, cv2.MORPH_CLOSE, kernel).astype(bool) & hull


@settings(max_examples=60, deadline=None)
@given(points, st.lists(st.tuples(st.floats(-3, W + 3), st.floats(-3, H + 3)), min_size=1, max_size=12))
def test_lidar_morphology_on_the_crop_equals_the_whole_image(hull_pts, seed_pts) -> None:
    seg = LidarSegmenter(grow_frac=0.12)  # a 3-pixel growth radius on a 24-pixel-high image
    hull = polygon_crop(convex_hull_2d(np.array(hull_pts)), H, W)
    seeds = np.array(seed_pts)
    ours = seg._morphology(hull, seeds, H, W)
    assert ours.window == hull.window
    assert np.array_equal(ours.full(H, W), _whole_image_morphology(seg, hull.full(H, W), seeds))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 300), st.integers(1, 300), st.integers(1, 128), st.sampled_from(["none", "all", "random"]))
def test_crop_mask_shortcuts_equal_the_area_resample(h: int, w: int, side: int, fill: str) -> None:
    """A window with no pixel set, or every pixel set, skips the area resample: the same crop mask."""
    from stridegen.pipeline.segment.grabcut import Crop

    scale = side / max(h, w)
    crop = Crop(2, 2 + h, 3, 3 + w, max(1, round(h * scale)), max(1, round(w * scale)))
    rng = np.random.default_rng(h * 1000 + w)
    full = np.zeros((h + 5, w + 7), dtype=bool)
    full[2 : 2 + h, 3 : 3 + w] = {"none": False, "all": True, "random": rng.random((h, w)) < 0.5}[fill]
    window = full[2 : 2 + h, 3 : 3 + w].astype(np.float32)
    resampled = (
        cv2.resize(window, (crop.ws, crop.hs), interpolation=cv2.INTER_AREA) > 0.5 if crop.scaled else window > 0.5
    )
    assert np.array_equal(crop.mask(full), resampled)
    assert np.array_equal(crop.mask(MaskCrop(2, 3, full[2 : 2 + h, 3 : 3 + w])), resampled)
