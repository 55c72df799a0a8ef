"""``lidar_watershed`` gives the same masks and qualities, bit for bit, as its straightforward form (the code of
caac907, kept below as the reference): the per-object work was restructured for speed (issue 35), not changed."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import cv2
import numpy as np
import pytest

from stridegen.pipeline.segment import make_segmenter
from stridegen.pipeline.segment.base import SegmentRequest, SegmentResult
from stridegen.pipeline.segment.grabcut import Crop
from stridegen.pipeline.segment.lidar_watershed import LidarWatershedSegmenter
from stridegen.pipeline.segment.raster import MaskCrop
from stridegen.pipeline.segment.request import LidarThrough, segment_in_depth_order

# ---- the reference: lidar_watershed's per-object code as of caac907 (one NumPy pass after another) ----

_OBJECT, _NOT_OBJECT = 2, 1
_SQUARE3 = np.ones((3, 3), np.uint8)


def _point_pixels(uv: np.ndarray, height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    uv = np.asarray(uv, dtype=np.float64).reshape(-1, 2)
    cols = np.clip(np.floor(uv[:, 0] + 0.5), 0, width - 1).astype(np.int64)
    rows = np.clip(np.floor(uv[:, 1] + 0.5), 0, height - 1).astype(np.int64)
    return rows, cols


def _spread_min(depth: np.ndarray, radius: float) -> np.ndarray:
    if radius < 0.5:
        return depth
    r = max(int(np.rint(radius)), 0)
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * r + 1, 2 * r + 1))
    return cv2.erode(depth, kernel, borderType=cv2.BORDER_CONSTANT, borderValue=float(np.inf))


def _nearest_depth_raster(rows: np.ndarray, cols: np.ndarray, depth: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    out = np.full(shape, np.inf, dtype=np.float32)
    np.minimum.at(out, (rows, cols), depth.astype(np.float32))
    return out


def _fill_holes(mask: np.ndarray) -> np.ndarray:
    h, w = mask.shape
    padded = np.zeros((h + 2, w + 2), dtype=np.uint8)
    padded[1:-1, 1:-1] = mask
    flood = np.zeros((h + 4, w + 4), dtype=np.uint8)
    cv2.floodFill(padded, flood, (0, 0), 1)
    return mask | (padded[1:-1, 1:-1] == 0)


def _flood_padded(image_rgb: np.ndarray, labels: np.ndarray) -> np.ndarray:
    image = cv2.copyMakeBorder(np.ascontiguousarray(image_rgb, dtype=np.uint8), 1, 1, 1, 1, cv2.BORDER_REPLICATE)
    cv2.watershed(image, labels)
    labels = labels[1:-1, 1:-1]
    obj = labels == _OBJECT
    line = labels == -1
    if line.any():
        obj |= line & cv2.dilate(obj.view(np.uint8), _SQUARE3).view(bool)
    return obj


class _RefPoints(NamedTuple):
    rows: np.ndarray
    cols: np.ndarray
    flat: np.ndarray
    owner: np.ndarray
    depth: np.ndarray


class ReferenceWatershed(LidarWatershedSegmenter):
    """``lidar_watershed`` with caac907's ``segment`` and ``_grow`` (the options and the helpers of the module
    frozen above)."""

    def segment(self, request: SegmentRequest) -> SegmentResult:
        h = request.height
        rows, cols = _point_pixels(request.lidar_uv, request.height, request.width)
        owner_all = np.asarray(request.lidar_object, dtype=np.int64).reshape(-1)
        depth = np.asarray(request.lidar_depth_m, dtype=np.float64).reshape(-1)
        points = _RefPoints(rows, cols, rows * request.width + cols, owner_all, depth)
        focal_px = request.focal_px if request.focal_px else self.focal_frac * h
        gap_px = focal_px * self.beam_gap_rad
        box = np.asarray(request.box_xyxy, dtype=np.float64).reshape(-1, 4)
        tiny = np.minimum(box[:, 2] - box[:, 0], box[:, 3] - box[:, 1]) < self.min_box_px

        def one(i: int, hull: MaskCrop, occluder: np.ndarray) -> tuple[MaskCrop, float]:
            own = np.flatnonzero(points.owner == i)
            n_own = own.shape[0]
            if n_own == 0:
                return hull, self.fallback_quality
            mask = hull
            if not tiny[i] and hull.any():
                grown = self._ref_grow(request, i, hull, occluder, points, focal_px, gap_px)
                mask = hull if grown is None else grown
            n_inside = int(np.count_nonzero(mask.minus(occluder).at(points.rows[own], points.cols[own])))
            return mask, n_inside / n_own * (1.0 - np.exp(-n_inside / self.points_scale))

        return segment_in_depth_order(request, one, self.occlusion)

    def _ref_grow(
        self,
        request: SegmentRequest,
        i: int,
        hull: MaskCrop,
        occluder: np.ndarray,
        points: _RefPoints,
        focal_px: float,
        gap_px: float,
    ) -> MaskCrop | None:
        r0, r1, c0, c1 = hull.window
        scale = min(1.0, self.work_side / max(r1 - r0, c1 - c0))
        hs, ws = max(1, round((r1 - r0) * scale)), max(1, round((c1 - c0) * scale))
        crop = Crop(r0, r1, c0, c1, hs, ws)
        sy, sx = hs / (r1 - r0), ws / (c1 - c0)
        rows, cols = points.rows, points.cols
        idx = np.flatnonzero((rows >= r0) & (rows < r1) & (cols >= c0) & (cols < c1))
        idx = idx[~occluder.reshape(-1)[points.flat[idx]]]
        if scale == 1.0:
            cr, cc = rows[idx] - r0, cols[idx] - c0
        else:
            cr = np.minimum(((rows[idx] - r0 + 0.5) * sy).astype(np.int64), hs - 1)
            cc = np.minimum(((cols[idx] - c0 + 0.5) * sx).astype(np.int64), ws - 1)
        d = points.depth[idx]
        owner = points.owner[idx]
        mine = owner == i
        not_mine = ~mine
        spread = self.zbuffer_beams * gap_px * scale
        foreign_z = _spread_min(_nearest_depth_raster(cr[not_mine], cc[not_mine], d[not_mine], (hs, ws)), spread)
        seed = mine.copy()
        seed[mine] = d[mine] <= foreign_z[cr[mine], cc[mine]] + self.depth_tol_m
        seed_at = np.flatnonzero(seed)
        if seed_at.shape[0] < self.min_points:
            return None
        sr, sc, sd = cr[seed_at], cc[seed_at], d[seed_at]
        seed_z = _spread_min(_nearest_depth_raster(sr, sc, sd, (hs, ws)), spread)
        near_z = seed_z[cr, cc]
        lo, hi = sd.min() - self.depth_tol_m, sd.max() + self.depth_tol_m
        on_base = (owner < 0) & (d >= lo) & (d <= hi)
        against = not_mine & ~on_base & (np.isinf(near_z) | (d < near_z - self.depth_tol_m))
        behind = against & (d > hi)
        through = request.lidar_through
        if through is not None and behind.any():
            if isinstance(through, LidarThrough):
                behind_at = np.flatnonzero(behind)
                against[behind_at] = through.among(i, idx[behind_at])
            else:
                measured_through = np.zeros(points.owner.shape[0], dtype=bool)
                measured_through[through[i]] = True
                against &= ~behind | measured_through[idx]
        labels = np.zeros((hs + 2, ws + 2), dtype=np.int32)
        markers = labels[1:-1, 1:-1]
        not_seed = np.ones((hs, ws), dtype=np.uint8)
        not_seed[sr, sc] = 0
        ordered = np.sort(sd)
        mid = ordered.shape[0] // 2
        med = float(ordered[mid]) if ordered.shape[0] % 2 else float((ordered[mid - 1] + ordered[mid]) / 2.0)
        reach = (self.grow_beams * gap_px + focal_px * self.base_margin_m / med) * scale
        hull_c = crop.mask(hull)
        markers[(cv2.distanceTransform(not_seed, cv2.DIST_L2, 3) > reach) | ~hull_c | crop.mask(occluder)] = _NOT_OBJECT
        markers[cr[against], cc[against]] = _NOT_OBJECT
        markers[sr, sc] = _OBJECT
        if self.refine == "watershed":
            work = np.asarray(request.work_image(), dtype=np.uint8)
            pixels = crop.image_scaled(work, request.height, request.width)
        else:
            pixels = np.zeros((hs, ws, 3), np.uint8)
        obj = _flood_padded(pixels, labels) & hull_c
        if self.fill_holes:
            obj = _fill_holes(obj) & hull_c
        return crop.paste(obj).clip_to(hull)


# ---- the comparison ----

OPTION_SETS = [
    {},  # the defaults (the build's)
    {"work_side": 24},  # most windows resampled
    {"zbuffer_beams": 0.5, "depth_tol_m": 0.2},  # spread z-buffers
    {"refine": "distance", "fill_holes": False},
    {"min_points": 1, "min_box_px": 0.0, "grow_beams": 0.5},  # one seed is enough; tiny boxes grown; small reach
    {"occlusion": "mask", "base_margin_m": 2.0},
    {"occlusion": "none", "grow_beams": 30.0},  # the reach covers every window
]


def _requests(root: Path) -> list[SegmentRequest]:
    from stridegen.logs import open_log
    from stridegen.pipeline.segment.request import camera_view, frame_lidar, frame_requests

    out = []
    for scene in open_log(root).scenes():
        for frame in scene.frames[::2]:
            boxes = frame.annotations().boxes
            views = [camera_view(frame, channel) for channel in frame.camera_channels]
            out += [r for r, _ in frame_requests(views, boxes, frame_lidar(frame)) if len(r)]
    return out


def _same(a: SegmentResult, b: SegmentResult) -> None:
    assert np.array_equal(a.quality, b.quality)
    for ca, cb in zip(a.crops, b.crops, strict=True):
        assert (ca.r0, ca.c0) == (cb.r0, cb.c0)
        assert np.array_equal(ca.pixels, cb.pixels)


@pytest.mark.parametrize("options", OPTION_SETS, ids=[",".join(o) or "defaults" for o in OPTION_SETS])
def test_same_masks_as_the_reference(segment_synth_log, options) -> None:
    """Every image of the 320 x 180 synthetic scene with its LiDAR sweep (the sensor position known, so
    ``lidar_through`` is the build's deferred ``LidarThrough``): masks and qualities equal the reference's."""
    requests = _requests(segment_synth_log)
    assert sum(len(r) for r in requests) >= 50
    new, ref = make_segmenter("lidar_watershed", **options), ReferenceWatershed(**options)
    for request in requests:
        _same(new.segment(request), ref.segment(request))


def test_same_masks_with_listed_through_and_a_reduced_work_image(segment_synth_log) -> None:
    """``lidar_through`` given as plain arrays, and the pixels read from a half-scale work image (as a DCT-reduced
    decode gives them): the other branches of the per-object code."""
    checked = 0
    for request in _requests(segment_synth_log):
        through = request.lidar_through
        if through is None:
            continue
        request.lidar_through = [np.asarray(through[i]) for i in range(len(request))]
        half = cv2.resize(request.image_rgb, (request.width // 2, request.height // 2), interpolation=cv2.INTER_AREA)
        request.work_image = lambda half=half: half  # type: ignore[method-assign]
        for options in ({}, {"work_side": 24}):
            _same(
                make_segmenter("lidar_watershed", **options).segment(request),
                ReferenceWatershed(**options).segment(request),
            )
        checked += len(request)
    assert checked >= 50


def test_crop_pixels_equal_a_resize_of_a_contiguous_copy() -> None:
    """``Crop.image`` and ``Crop.image_scaled`` resize the window where it lies in the image (no contiguous copy
    first): the same pixels as resizing a copy (INTER_AREA down, bilinear up), windows at the borders included."""
    rng = np.random.default_rng(7)
    image = rng.integers(0, 256, (90, 160, 3), dtype=np.uint8)
    half = cv2.resize(image, (80, 45), interpolation=cv2.INTER_AREA)
    for _ in range(200):
        r0, c0 = int(rng.integers(0, 89)), int(rng.integers(0, 159))
        r1, c1 = int(rng.integers(r0 + 1, 91)), int(rng.integers(c0 + 1, 161))
        hs, ws = int(rng.integers(1, 60)), int(rng.integers(1, 60))
        crop = Crop(r0, r1, c0, c1, hs, ws)
        window = np.ascontiguousarray(image[r0:r1, c0:c1])
        if crop.scaled:
            shrink = ws < c1 - c0
            want = cv2.resize(window, (ws, hs), interpolation=cv2.INTER_AREA if shrink else cv2.INTER_LINEAR)
        else:
            want = window
        got = crop.image(image)
        assert got.flags["C_CONTIGUOUS"] and np.array_equal(got, want)
        assert np.array_equal(crop.image_scaled(image, 90, 160), want)
        scaled = crop.image_scaled(half, 90, 160)  # through a half-scale work image: the mapped window, resized
        hr0, hc0 = min(int(np.floor(r0 / 2 + 0.5)), 44), min(int(np.floor(c0 / 2 + 0.5)), 79)
        hr1, hc1 = (
            max(hr0 + 1, min(int(np.floor(r1 / 2 + 0.5)), 45)),
            max(hc0 + 1, min(int(np.floor(c1 / 2 + 0.5)), 80)),
        )
        part = np.ascontiguousarray(half[hr0:hr1, hc0:hc1])
        if part.shape[:2] != (hs, ws):
            shrink = ws < hc1 - hc0
            part = cv2.resize(part, (ws, hs), interpolation=cv2.INTER_AREA if shrink else cv2.INTER_LINEAR)
        assert np.array_equal(scaled, part)
