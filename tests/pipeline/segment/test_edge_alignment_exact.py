"""``EdgeAlignment.score`` computes only what it reads (issue 35): the outline's weights at its own pixels, the edge
map on the rows the correlation reads, no border warp where the window is inside the image. Each shortcut must
give the whole-grid formulation's numbers bit for bit, so that no mask's score, and no shard, changes.

The reference below is that whole-grid formulation (the measure as the module docstring states it, step by step on
the whole work grid: the code before the shortcuts). The cases are random textured images with random masks
(rectangles, ellipses, slanted polygons, masks cut by the image border), random excluded regions, at full and at
reduced (DCT-scaled) image scale.
"""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest

from stridegen.pipeline.segment.edge_alignment import EdgeAlignment
from stridegen.pipeline.segment.raster import MaskCrop


def _reference_score(ea: EdgeAlignment, image_rgb, mask: MaskCrop, excluded=None, size=None):
    """The measure on the whole work grid (every array at every work pixel)."""
    height, width = (int(image_rgb.shape[0]), int(image_rgb.shape[1])) if size is None else size
    red_h, red_w = int(image_rgb.shape[0]), int(image_rgb.shape[1])
    sy, sx = red_h / height, red_w / width
    if not mask.any():
        return float("nan"), (0.0, 0.0)
    u0, v0, u1, v1 = (float(x) for x in mask.box_xyxy())
    scale = ea.work_side / max(u1 - u0, v1 - v0)
    reach = int(np.ceil(ea.search_frac * ea.work_side))
    pad = reach + ea.exclude_px + 3
    pad_img = pad / scale
    wu0, wv0 = u0 - pad_img, v0 - pad_img
    ws = int(np.ceil((u1 - u0) * scale)) + 2 * pad
    hs = int(np.ceil((v1 - v0) * scale)) + 2 * pad
    c0 = max(int(np.floor(wu0 + 0.5)) - 1, 0)
    r0 = max(int(np.floor(wv0 + 0.5)) - 1, 0)
    c1 = min(int(np.ceil(wu0 + ws / scale + 0.5)) + 1, width)
    r1 = min(int(np.ceil(wv0 + hs / scale + 0.5)) + 1, height)
    m = np.array([[1.0 / scale, 0.0, wu0 + 0.5 / scale - c0], [0.0, 1.0 / scale, wv0 + 0.5 / scale - r0]])
    if (sy, sx) == (1.0, 1.0):
        cr0, cr1, cc0, cc1, m_colour = r0, r1, c0, c1, m
    else:
        cr0, cc0 = int(np.floor(r0 * sy)), int(np.floor(c0 * sx))
        cr1, cc1 = min(int(np.ceil(r1 * sy)), red_h), min(int(np.ceil(c1 * sx)), red_w)
        to_reduced = np.array([[sx, 0.0, (c0 + 0.5) * sx - 0.5 - cc0], [0.0, sy, (r0 + 0.5) * sy - 0.5 - cr0]])
        m_colour = to_reduced @ np.vstack([m, [0, 0, 1.0]])
    colour = np.asarray(image_rgb[cr0:cr1, cc0:cc1], dtype=np.float32)
    shrink = min(1.0, 2.0 * scale / max(sy, sx))
    if shrink < 1.0:
        colour = cv2.resize(colour, None, fx=shrink, fy=shrink, interpolation=cv2.INTER_AREA)
        fy, fx = colour.shape[0] / (cr1 - cr0), colour.shape[1] / (cc1 - cc0)
        m_colour = np.array([[fx, 0.0, 0.5 * fx - 0.5], [0.0, fy, 0.5 * fy - 0.5]]) @ np.vstack([m_colour, [0, 0, 1]])
    grid, inverse = (ws, hs), cv2.WARP_INVERSE_MAP
    work_colour = cv2.warpAffine(
        colour, m_colour, grid, flags=inverse | cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
    )
    ones = np.ones((r1 - r0, c1 - c0), dtype=np.uint8)
    work_inside = cv2.warpAffine(ones, m, grid, flags=inverse | cv2.INTER_NEAREST, borderValue=0).astype(bool)
    mask_win = mask.within((r0, r1, c0, c1)).astype(np.float32)
    work_mask = (cv2.warpAffine(mask_win, m, grid, flags=inverse | cv2.INTER_LINEAR) >= 0.5).astype(np.uint8)
    if not work_mask.any():
        return float("nan"), (0.0, 0.0)
    blurred = cv2.GaussianBlur(work_colour, (0, 0), ea.sigma_px)
    d = np.abs(cv2.Sobel(blurred, cv2.CV_32F, 1, 0, ksize=3))
    gx = np.maximum(np.maximum(d[..., 0], d[..., 1]), d[..., 2]) / 8.0
    gx[~work_inside] = 0.0
    cross = cv2.getStructuringElement(cv2.MORPH_CROSS, (3, 3))
    outline = work_mask.astype(bool) & ~cv2.erode(work_mask, cross, borderValue=0).astype(bool)
    bad = (~work_inside).astype(np.uint8)
    if excluded is not None:
        excl_win = np.asarray(excluded[r0:r1, c0:c1], dtype=np.uint8)
        if excl_win.any():
            bad = np.maximum(bad, cv2.warpAffine(excl_win, m, grid, flags=inverse | cv2.INTER_NEAREST))
    kernel = cv2.getStructuringElement(cv2.MORPH_RECT, (2 * ea.exclude_px + 3, 2 * ea.exclude_px + 3))
    outline &= ~cv2.dilate(bad, kernel).astype(bool)
    if np.count_nonzero(outline) < ea.min_outline_px:
        return float("nan"), (0.0, 0.0)
    soft = cv2.GaussianBlur(work_mask.astype(np.float32), (0, 0), 1.0)
    nx = cv2.Sobel(soft, cv2.CV_32F, 1, 0, ksize=3)
    ny = cv2.Sobel(soft, cv2.CV_32F, 0, 1, ksize=3)
    norm = np.hypot(nx, ny)
    norm[norm == 0] = 1.0
    wx = np.where(outline, (np.abs(nx) / norm) ** 4, 0.0).astype(np.float32)
    total = float(np.count_nonzero(outline))
    sides = [w for w in (np.where(nx > 0, wx, 0.0), np.where(nx < 0, wx, 0.0)) if w.sum() >= ea.min_side_share * total]
    if not sides:
        return float("nan"), (0.0, 0.0)
    rise = int(np.ceil(ea.rise_frac * ea.work_side))
    rows, cols = np.nonzero(outline)
    r0, r1, c0, c1 = rows.min(), rows.max() + 1, cols.min(), cols.max() + 1
    gxp = np.pad(gx, reach)
    search = (slice(r0 + reach - rise, r1 + reach + rise), slice(c0, c1 + 2 * reach))
    side = np.ones((2 * rise + 1, 2 * reach + 1), dtype=np.float64)
    for w in sides:
        template = np.ascontiguousarray(w[r0:r1, c0:c1], dtype=np.float32)
        side *= np.maximum(cv2.matchTemplate(gxp[search], template, cv2.TM_CCORR), 0.0) / float(w.sum())
    side **= 1.0 / len(sides)
    best = float(side.max())
    if best < ea.min_gradient:
        return float("nan"), (0.0, 0.0)
    t = ea.tol_px
    here = float(side[max(rise - t, 0) : rise + t + 1, reach - t : reach + t + 1].max())
    dv, du = np.unravel_index(int(np.argmax(side)), side.shape)
    return here / best, ((du - reach) / scale, (dv - rise) / scale)


def _scene(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """A textured image: smooth noise, a few filled shapes of random colours, sensor noise."""
    noise = cv2.resize(rng.uniform(0, 255, (h // 16 + 2, w // 16 + 2, 3)).astype(np.float32), (w, h))
    img = noise.astype(np.uint8)
    for _ in range(int(rng.integers(2, 7))):
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        centre = (int(rng.integers(0, w)), int(rng.integers(0, h)))
        axes = (int(rng.integers(5, w // 3)), int(rng.integers(5, h // 3)))
        cv2.ellipse(img, centre, axes, float(rng.uniform(0, 180)), 0, 360, colour, -1)
    return np.clip(img.astype(np.int16) + rng.integers(-6, 7, img.shape), 0, 255).astype(np.uint8)


def _mask(rng: np.random.Generator, h: int, w: int) -> MaskCrop:
    """A random filled shape (rectangle, ellipse or slanted quadrilateral), possibly cut by the image border,
    as the crop of its bounding window."""
    full = np.zeros((h, w), dtype=np.uint8)
    cu, cv = rng.uniform(-0.1 * w, 1.1 * w), rng.uniform(-0.1 * h, 1.1 * h)
    a, b = rng.uniform(3, 0.4 * w), rng.uniform(3, 0.4 * h)
    kind = int(rng.integers(0, 3))
    if kind == 0:
        cv2.rectangle(full, (int(cu - a), int(cv - b)), (int(cu + a), int(cv + b)), 1, -1)
    elif kind == 1:
        cv2.ellipse(full, (int(cu), int(cv)), (int(a), int(b)), float(rng.uniform(0, 180)), 0, 360, 1, -1)
    else:
        quad = np.array([[cu - a, cv], [cu, cv - b], [cu + a, cv + rng.uniform(-b, b)], [cu, cv + b]])
        cv2.fillConvexPoly(full, np.round(quad).astype(np.int32), 1)
    rows, cols = np.nonzero(full)
    if rows.size == 0:
        return MaskCrop.empty()
    r0, r1, c0, c1 = rows.min(), rows.max() + 1, cols.min(), cols.max() + 1
    return MaskCrop(int(r0), int(c0), full[r0:r1, c0:c1].astype(bool))


@pytest.mark.parametrize("seed", range(24))
def test_score_equals_the_whole_grid_measure_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    h, w = (int(rng.integers(90, 260)), int(rng.integers(120, 420)))
    image = _scene(rng, h, w)
    half = cv2.resize(image, (math.ceil(w / 2), math.ceil(h / 2)), interpolation=cv2.INTER_AREA)
    ea = EdgeAlignment()
    checked = 0
    for _ in range(6):
        mask = _mask(rng, h, w)
        excluded = None
        if rng.uniform() < 0.7:
            excluded = np.zeros((h, w), dtype=bool)
            other = _mask(rng, h, w)
            excluded[other.slices] = other.pixels
        for img, size in ((image, None), (half, (h, w))):
            got = ea.score(img, mask, excluded, size)
            want = _reference_score(ea, img, mask, excluded, size)
            assert repr(got) == repr(want)
            checked += not math.isnan(want[0])
    assert checked > 0  # not every case is "no evidence"


def test_no_border_warp_only_where_the_warp_finds_every_work_pixel_inside():
    """``_inside`` answers None (all inside) only where the nearest-pixel warp of the window is all True."""
    rng = np.random.default_rng(1)
    ea, h, w = EdgeAlignment(), 450, 800
    nones = 0
    for _ in range(400):
        mask = _mask(rng, h, w)
        if not mask.any():
            continue
        seen: list[tuple] = []
        original = EdgeAlignment._inside

        def spy(m, grid, window, size, seen=seen, original=original):
            seen.append((m, grid, window, size))
            return original(m, grid, window, size)

        EdgeAlignment._inside = staticmethod(spy)  # type: ignore[method-assign]
        try:
            ea.score(np.full((h, w, 3), 90, dtype=np.uint8), mask)
        finally:
            EdgeAlignment._inside = staticmethod(original)  # type: ignore[method-assign]
        m, grid, (r0, r1, c0, c1), size = seen[0]
        ones = np.ones((r1 - r0, c1 - c0), dtype=np.uint8)
        warped = cv2.warpAffine(ones, m, grid, flags=cv2.WARP_INVERSE_MAP | cv2.INTER_NEAREST, borderValue=0)
        got = EdgeAlignment._inside(m, grid, (r0, r1, c0, c1), size)
        if got is None:
            nones += 1
            assert warped.all()
        else:
            assert np.array_equal(got, warped.astype(bool))
    assert nones > 0


def _whole_window_colour(image_rgb, size, window, m, scale, grid):
    """``_work_colour`` as it was before it cut the window's rows: the whole window converted (and area-resized),
    then warped to the grid's first rows."""
    height, width = size
    red_h, red_w = int(image_rgb.shape[0]), int(image_rgb.shape[1])
    sy, sx = red_h / height, red_w / width
    r0, r1, c0, c1 = window
    if (sy, sx) == (1.0, 1.0):
        cr0, cr1, cc0, cc1, m_colour = r0, r1, c0, c1, m
    else:
        cr0, cc0 = math.floor(r0 * sy), math.floor(c0 * sx)
        cr1, cc1 = min(math.ceil(r1 * sy), red_h), min(math.ceil(c1 * sx), red_w)
        to_reduced = np.array([[sx, 0.0, (c0 + 0.5) * sx - 0.5 - cc0], [0.0, sy, (r0 + 0.5) * sy - 0.5 - cr0]])
        m_colour = to_reduced @ np.vstack([m, [0, 0, 1.0]])
    colour = np.asarray(image_rgb[cr0:cr1, cc0:cc1], dtype=np.float32)
    shrink = min(1.0, 2.0 * scale / max(sy, sx))
    if shrink < 1.0:
        colour = cv2.resize(colour, None, fx=shrink, fy=shrink, interpolation=cv2.INTER_AREA)
        fy, fx = colour.shape[0] / (cr1 - cr0), colour.shape[1] / (cc1 - cc0)
        m_colour = np.array([[fx, 0.0, 0.5 * fx - 0.5], [0.0, fy, 0.5 * fy - 0.5]]) @ np.vstack([m_colour, [0, 0, 1]])
    flags = cv2.WARP_INVERSE_MAP | cv2.INTER_LINEAR
    return cv2.warpAffine(colour, m_colour, grid, flags=flags, borderMode=cv2.BORDER_REPLICATE)


@pytest.mark.parametrize("seed", range(12))
def test_work_colour_of_the_rows_read_equals_the_whole_window_bit_for_bit(seed):
    """The colour grid converts and area-resizes the window's rows down to the last one the grid rows read only
    (issue 35): the rows it gives are the whole window's, bit for bit, shrunk or not, at full and reduced scale,
    for grids of every height down to one row and windows cut by the image's bottom edge."""
    rng = np.random.default_rng(100 + seed)
    h, w = int(rng.integers(200, 700)), int(rng.integers(200, 900))
    image = _scene(rng, h, w)
    reduced = {f: cv2.resize(image, (math.ceil(w / f), math.ceil(h / f)), interpolation=cv2.INTER_AREA) for f in (2, 4)}
    ea = EdgeAlignment()
    for _ in range(40):
        side = float(rng.uniform(4, 0.8 * min(h, w)))  # the mask box's longer side, image pixels
        scale = ea.work_side / side
        wu0, wv0 = float(rng.uniform(-20, w - 10)), float(rng.uniform(-20, h - 10))
        ws, hs = int(rng.integers(20, 220)), int(rng.integers(20, 220))
        c0, r0 = max(math.floor(wu0 + 0.5) - 1, 0), max(math.floor(wv0 + 0.5) - 1, 0)
        c1, r1 = min(math.ceil(wu0 + ws / scale + 0.5) + 1, w), min(math.ceil(wv0 + hs / scale + 0.5) + 1, h)
        if r1 - r0 < 2 or c1 - c0 < 2:
            continue
        m = np.array([[1.0 / scale, 0.0, wu0 + 0.5 / scale - c0], [0.0, 1.0 / scale, wv0 + 0.5 / scale - r0]])
        for rows in sorted({1, int(rng.integers(1, hs + 1)), hs}):
            for img in (image, reduced[2], reduced[4]):
                args = (img, (h, w), (r0, r1, c0, c1), m, scale, (ws, rows))
                got, want = ea._work_colour(*args), _whole_window_colour(*args)
                assert got.shape == want.shape
                assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_resized_size_is_cv2_resize_rounding():
    """``_work_colour`` computes the area-resized window's size as ``cv2.resize`` with ``fx``/``fy`` rounds it
    (``np.rint``, half to even), ties included."""
    for n in range(1, 400):
        for shrink in (0.5, 0.25, 0.125, 0.3, 0.37, 0.999, 1 / 3, 0.0625, 0.75, 0.1):
            if np.rint(n * shrink) == 0:  # cv2.resize refuses an empty size; the window is never that small
                continue
            want = cv2.resize(np.zeros((n, 1, 3), np.float32), None, fx=1.0, fy=shrink, interpolation=cv2.INTER_AREA)
            assert want.shape[0] == int(np.rint(n * shrink)), (n, shrink)
