"""Image evidence for a mask: does its outline sit on the image's edges where it is, or somewhere close by?

A LiDAR-seeded mask can be shaped perfectly by points that are in the wrong place (a moving object's returns taken
at another time than the image, a calibration or timing error): the segmenter's quality and the box IoU, both
measured against the same points or boxes, then say nothing. This module asks the image alone.

Algorithm (one mask of one image, in image pixels, x right, y down):

1. The window: the mask's bounding box grown by ``search_frac`` of its longer side on every side (the largest
   displacement looked for), resampled so that the mask box's longer side is ``work_side`` pixels (low-passed
   first where that shrinks it); everything below is measured on that grid, so the measure does not depend on
   the object's size in the image.
2. Edge evidence: the horizontal derivative of the colour image, ``|d/dx|`` (Gaussian blur of ``sigma_px``, 3x3
   Sobel, the largest over R, G and B), in colour levels per work pixel; zero beyond the image.
3. The left/right outline: mask pixels with a 4-neighbour outside the mask, weighted by ``cos^4`` of the angle
   of their outward normal (from the Sobel derivatives of the blurred mask) from the horizontal, and split into
   the left side (the mask grows to the right across it) and the right side. Slanted and horizontal outline
   parts hardly count: a straight edge slides along itself, so a barrier's top seen obliquely matches every
   kerb and lane line it is moved onto. Outline pixels that are not the object's own boundary are left out:
   those within ``exclude_px`` of the image border (the mask is cut there) and of ``excluded`` (nearer objects'
   hulls and masks: the occlusion rule cut the mask there, and the edge belongs to the occluder). A side
   carrying less than ``min_side_share`` of the outline's pixels is not used.
4. Agreement of the outline moved by ``(du, dv)`` work pixels, ``|du| <= search_frac * work_side`` and
   ``|dv| <= rise_frac * work_side`` (unmodelled motion happens on the ground: mostly sideways in the image):
   ``A(du, dv)`` = the geometric mean over the sides used of the weighted mean ``|d/dx|`` under that side
   (one ``cv2.matchTemplate`` correlation per side). The mean over both sides means a fit needs both sides on
   edges, not one side on a strong edge nearby.
5. ``score = max_{|du|, |dv| <= tol_px} A / max A`` in (0, 1]: 1 when no displacement fits the image's edges
   better than the mask where it is (``tol_px`` of slack for blur and rounding); near 0 when the outline fits
   much better elsewhere, i.e. the mask sits beside its object. The best offset is returned in image pixels.

No evidence: a mask with fewer than ``min_outline_px`` outline pixels left after step 3, or an image whose best
agreement ``max A`` is below ``min_gradient`` colour levels per work pixel (flat, dark, overexposed), scores NaN:
the image cannot tell, and the visibility filter then keeps the mask (docs/visibility.md).

This is chamfer-style template matching of an outline against an edge map (Barrow et al. 1977, "Parametric
correspondence and chamfer matching"; Borgefors 1988, "Hierarchical chamfer matching"), on oriented gradient
derivatives instead of binary edges so that no edge-detector threshold is needed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from stridegen.pipeline.segment.raster import MaskCrop

_NO_EVIDENCE = (float("nan"), (0.0, 0.0))  # the score and offset of a mask the image cannot tell about


def _rows_read(m: np.ndarray, out_rows: int, rows: int) -> int:
    """How many of the first rows of a ``rows``-row source image a bilinear inverse-map warp by ``m`` (output
    pixel -> source coordinates, no rotation or shear: ``m[1, 0] == 0``) needs for its first ``out_rows`` output
    rows to be those of the whole image, border handling included: every output row reads the two source rows
    around its source row (OpenCV rounds the coordinate to 1/32 pixel, at most one row up), and a source whose
    last row lies two rows beyond that takes the same interior path. All ``rows`` where that reaches the end."""
    if m[1, 0] != 0.0 or m[1, 1] < 0.0 or out_rows <= 0:
        return rows
    last = m[1, 1] * (out_rows - 1) + m[1, 2]  # the last output row's source row
    if not math.isfinite(last):
        return rows
    return min(rows, max(math.floor(last), 0) + 5)


def _filter_rows(sigma: float) -> int:
    """Rows of reach of a Gaussian blur of ``sigma`` followed by a 3x3 Sobel: the Gaussian's radius (OpenCV's
    float kernel size, ``round(8 sigma + 1) | 1``: smoothing.dispatch.cpp ``createGaussianKernels``) with a row to
    spare, plus the Sobel's one row. A row of the filtered image further than this from a band's cut is the
    whole image's."""
    return math.ceil(4 * sigma) + 3


@dataclass(frozen=True)
class EdgeAlignment:
    """Options of the measure (module docstring); the defaults are the visibility filter's."""

    work_side: int = 64  # work pixels along the mask box's longer side
    search_frac: float = 0.5  # largest displacement looked for, as a share of the mask box's longer side
    tol_px: int = 2  # slack (work pixels) counted as "in place"
    sigma_px: float = 1.0  # Gaussian blur before the derivatives (work pixels)
    exclude_px: int = 2  # outline pixels this close to the image border or an excluded pixel are left out
    min_outline_px: int = 12  # fewer outline pixels: no evidence
    rise_frac: float = 0.05  # largest up/down displacement looked for, as a share of the longer side
    min_side_share: float = 0.04  # a side (left, right) of the outline counts where it carries this share of it
    min_gradient: float = 2.0  # best agreement below this (colour levels per work pixel): no evidence

    def score(
        self,
        image_rgb: np.ndarray,
        mask: MaskCrop,
        excluded: np.ndarray | None = None,
        size: tuple[int, int] | None = None,
        box_xyxy: np.ndarray | None = None,
    ) -> tuple[float, tuple]:
        """(score in (0, 1] or NaN, best offset (du, dv) in image pixels) of one mask (a crop of the
        [H, W, 3] uint8 ``image_rgb``); ``excluded`` [H, W] bool marks pixels whose edges are not the object's
        (nearer objects), None for none. ``size`` (H, W), where given and not ``image_rgb``'s, says that
        ``image_rgb`` [h, w, 3] is the whole image at a reduced scale (a DCT-scaled decode): the colour window is
        taken from it by the exact affine map of pixel centres, ``(u + 0.5) * w / W - 0.5``. ``box_xyxy``, where
        given, must be ``mask.box_xyxy()`` (the visibility filter has it already).

        The outline (step 3) is made first: it says which rows of the edge map the correlation reads, and only
        those rows (with the filters' reach) are blurred and differentiated (``_edge_rows``, the same values as
        the whole work grid's)."""
        height, width = (int(image_rgb.shape[0]), int(image_rgb.shape[1])) if size is None else size
        if not mask.any():
            return _NO_EVIDENCE
        u0, v0, u1, v1 = (float(x) for x in (mask.box_xyxy() if box_xyxy is None else box_xyxy))  # pixel edges
        scale = self.work_side / max(u1 - u0, v1 - v0)
        reach = math.ceil(self.search_frac * self.work_side)  # search radius, work pixels
        rise = math.ceil(self.rise_frac * self.work_side)
        pad = reach + self.exclude_px + 3  # image pixels are scaled: pad in work pixels, converted below
        pad_img = pad / scale
        # window in image pixel-edge coordinates, resampled to a grid of work pixels
        wu0, wv0 = u0 - pad_img, v0 - pad_img
        ws = math.ceil((u1 - u0) * scale) + 2 * pad
        hs = math.ceil((v1 - v0) * scale) + 2 * pad
        # the image window the grid covers (whole pixels, clipped to the image), cropped once
        c0 = max(math.floor(wu0 + 0.5) - 1, 0)
        r0 = max(math.floor(wv0 + 0.5) - 1, 0)
        c1 = min(math.ceil(wu0 + ws / scale + 0.5) + 1, width)
        r1 = min(math.ceil(wv0 + hs / scale + 0.5) + 1, height)
        window = (r0, r1, c0, c1)
        # work pixel centre (x, y) -> window coordinates (pixel centres at integers in both grids):
        # image u = wu0 + (x + 0.5) / scale, window column = u - c0
        m = np.array(
            [[1.0 / scale, 0.0, wu0 + 0.5 / scale - c0], [0.0, 1.0 / scale, wv0 + 0.5 / scale - r0]],
            dtype=np.float64,
        )
        grid = (ws, hs)
        inverse = cv2.WARP_INVERSE_MAP
        work_inside = self._inside(m, grid, window, (height, width))
        mask_win = mask.within(window).astype(np.float32)
        work_mask = (cv2.warpAffine(mask_win, m, grid, flags=inverse | cv2.INTER_LINEAR) >= 0.5).astype(np.uint8)
        if not work_mask.any():
            return _NO_EVIDENCE
        # mask pixels with a 4-neighbour outside the mask (0/1 values: the mask and not its erosion)
        outline = work_mask > cv2.erode(work_mask, cv2.getStructuringElement(cv2.MORPH_CROSS, (3, 3)), borderValue=0)
        # not the object's own boundary: near the image border or near an excluded pixel (None: no such pixel)
        bad: np.ndarray | None = None if work_inside is None else (~work_inside).astype(np.uint8)
        if excluded is not None:
            excl_win = np.asarray(excluded[r0:r1, c0:c1])
            excl_win = excl_win.view(np.uint8) if excl_win.dtype == bool else excl_win.astype(np.uint8)
            if excl_win.any():
                work_excl = np.asarray(cv2.warpAffine(excl_win, m, grid, flags=inverse | cv2.INTER_NEAREST))
                bad = work_excl if bad is None else np.maximum(bad, work_excl)
        if bad is not None:
            side_px = 2 * self.exclude_px + 3
            kernel = cv2.getStructuringElement(cv2.MORPH_RECT, (side_px, side_px))
            outline &= cv2.dilate(bad, kernel) == 0
        rows, cols = np.nonzero(outline)  # row-major: rows ascending
        if rows.size < self.min_outline_px:
            return _NO_EVIDENCE
        sides = self._sides(work_mask, rows, cols)
        if not sides:  # hardly any left/right outline left: nothing to tell by
            return _NO_EVIDENCE
        # template: the outline's bounding window; search: that window moved up to `reach` work pixels sideways
        # and `rise` up or down (offsets beyond the work grid see no gradient)
        t0, t1, s0, s1 = int(rows[0]), int(rows[-1]) + 1, int(cols.min()), int(cols.max()) + 1
        # the colour on the grid's rows down to the last one the edge rows read (a warp to fewer rows gives the
        # first rows of the whole grid's: every output row is mapped on its own)
        rows_read = min(t1 + rise + _filter_rows(self.sigma_px), hs)
        colour = self._work_colour(image_rgb, (height, width), window, m, scale, (ws, rows_read))
        search = np.zeros((t1 - t0 + 2 * rise, s1 - s0 + 2 * reach), dtype=np.float32)
        a, b = max(t0 - rise, 0), min(t1 + rise, hs)
        e0, e1 = max(s0 - reach, 0), min(s1 + reach, ws)
        gx = self._edge_rows(colour, work_inside, a, b)
        search[a - (t0 - rise) : b - (t0 - rise), e0 - (s0 - reach) : e1 - (s0 - reach)] = gx[:, e0:e1]
        # A[rise + dv, reach + du]: geometric mean over the sides of the mean |gx| under that side of the outline
        # moved by (du, dv): a fit needs both sides on edges, not one side on a strong edge nearby
        side = np.ones((2 * rise + 1, 2 * reach + 1), dtype=np.float64)
        for w, weight in sides:
            template = np.ascontiguousarray(w[t0:t1, s0:s1], dtype=np.float32)
            side *= np.maximum(cv2.matchTemplate(search, template, cv2.TM_CCORR), 0.0) / float(weight)
        side **= 1.0 / len(sides)
        best = float(side.max())
        if best < self.min_gradient:
            return _NO_EVIDENCE
        t = self.tol_px
        here = float(side[max(rise - t, 0) : rise + t + 1, reach - t : reach + t + 1].max())
        dv, du = np.unravel_index(int(np.argmax(side)), side.shape)
        return here / best, ((du - reach) / scale, (dv - rise) / scale)

    @staticmethod
    def _inside(
        m: np.ndarray, grid: tuple[int, int], window: tuple[int, int, int, int], size: tuple[int, int]
    ) -> np.ndarray | None:
        """[hs, ws] bool: the work pixels whose nearest window pixel (``m``: work pixel -> window coordinates)
        lies in the window, i.e. in the image; None for all of them. That is so where the window is not cut by
        the image's border: the window reaches a pixel and a half beyond the grid on every side (``score``), so
        every work pixel centre maps at least half a pixel inside it (tested against the warp)."""
        r0, r1, c0, c1 = window
        if r0 > 0 and c0 > 0 and r1 < size[0] and c1 < size[1]:
            return None
        ones = np.ones((r1 - r0, c1 - c0), dtype=np.uint8)
        flags = cv2.WARP_INVERSE_MAP | cv2.INTER_NEAREST
        return cv2.warpAffine(ones, m, grid, flags=flags, borderValue=0).astype(bool)

    def _sides(self, work_mask: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> list[tuple[np.ndarray, float]]:
        """The outline's sides used (step 3): (the side's [hs, ws] float32 weights on the work grid, their sum),
        left (the mask grows to the right across it, nx > 0) then right, each kept where it carries at least
        ``min_side_share`` of the outline's ``rows.size`` pixels (at ``rows``, ``cols``).

        The weight ``cos^4`` of the normal's angle from horizontal, so slanted outline parts (a barrier's top and
        bottom seen obliquely), which slide along kerbs and lane lines, hardly count. The normals are the Sobel
        derivatives of the blurred mask, evaluated at the outline pixels only (elementwise: the values a
        whole-grid evaluation has there; every other weight is 0)."""
        # on the outline's rows and the filters' reach beyond them (the whole grid's values there, as in _edge_rows)
        reach = _filter_rows(1.0)
        lo, hi = max(int(rows[0]) - reach, 0), min(int(rows[-1]) + 1 + reach, len(work_mask))
        soft = cv2.GaussianBlur(work_mask[lo:hi].astype(np.float32), (0, 0), 1.0)
        nx = cv2.Sobel(soft, cv2.CV_32F, 1, 0, ksize=3)[rows - lo, cols]
        ny = cv2.Sobel(soft, cv2.CV_32F, 0, 1, ksize=3)[rows - lo, cols]
        norm = np.hypot(nx, ny)
        norm[norm == 0] = 1.0
        wx = (np.abs(nx) / norm) ** 4
        need = self.min_side_share * rows.size
        sides = []
        for on in (nx > 0, nx < 0):
            w = np.zeros(work_mask.shape, dtype=np.float32)
            w[rows[on], cols[on]] = wx[on]
            weight = w.sum()  # over the whole grid, as a whole-grid weight map sums (the same float32 rounding)
            if weight >= need:
                sides.append((w, float(weight)))
        return sides

    def _work_colour(
        self,
        image_rgb: np.ndarray,
        size: tuple[int, int],
        window: tuple[int, int, int, int],
        m: np.ndarray,
        scale: float,
        grid: tuple[int, int],
    ) -> np.ndarray:
        """The colour image resampled on the work grid's first rows ([grid[1], grid[0], 3] float32; ``m``: work
        pixel -> ``window`` coordinates of the full-size image of ``size``), read from ``image_rgb`` at its own
        scale (full or reduced); area-averaged first where it shrinks by more than 2 (no aliasing).

        Only the window's rows down to the last one those grid rows read are converted and resized
        (``_rows_read``): the bilinear warp reads two rows around each output row's source row, and an area
        resize's output row only the source rows it averages, so the rows computed are the whole window's
        (tested)."""
        height, width = size
        red_h, red_w = int(image_rgb.shape[0]), int(image_rgb.shape[1])
        sy, sx = red_h / height, red_w / width  # reduced pixels per image pixel (1: the full image)
        r0, r1, c0, c1 = window
        if (sy, sx) == (1.0, 1.0):
            cr0, cr1, cc0, cc1 = r0, r1, c0, c1
            m_colour = m
        else:  # the same window of the reduced image: window coordinate w -> (w + c0 + 0.5) sx - 0.5 - cc0
            cr0, cc0 = math.floor(r0 * sy), math.floor(c0 * sx)
            cr1, cc1 = min(math.ceil(r1 * sy), red_h), min(math.ceil(c1 * sx), red_w)
            to_reduced = np.array([[sx, 0.0, (c0 + 0.5) * sx - 0.5 - cc0], [0.0, sy, (r0 + 0.5) * sy - 0.5 - cr0]])
            m_colour = to_reduced @ np.vstack([m, [0, 0, 1.0]])
        # shrinking (colour pixels per work pixel above 1/2): area-average first to twice the work grid
        shrink = min(1.0, 2.0 * scale / max(sy, sx))
        colour: np.ndarray
        if shrink < 1.0:
            # the resized size as cv2.resize rounds it for the whole window (cvRound: half to even, as np.rint)
            hs_c, ws_c = int(np.rint((cr1 - cr0) * shrink)), int(np.rint((cc1 - cc0) * shrink))
            fy, fx = hs_c / (cr1 - cr0), ws_c / (cc1 - cc0)  # the exact factors after rounding the size
            # window coordinate w -> resized coordinate (w + 0.5) f - 0.5
            m_colour = np.array([[fx, 0.0, 0.5 * fx - 0.5], [0.0, fy, 0.5 * fy - 0.5]]) @ np.vstack(
                [m_colour, [0, 0, 1.0]]
            )
            rows = _rows_read(m_colour, grid[1], hs_c)
            # the source rows those resized rows average, with two to spare; not where the width stays (cv2.resize
            # copies a source whose size it keeps, which a cut window could be)
            if rows < hs_c and ws_c != cc1 - cc0:
                src = min(math.ceil((rows + 2) / shrink) + 2, cr1 - cr0)
                rows = hs_c if src == cr1 - cr0 else rows
                cr1 = cr0 + src
            colour = np.asarray(image_rgb[cr0:cr1, cc0:cc1], dtype=np.float32)
            colour = cv2.resize(colour, None, fx=shrink, fy=shrink, interpolation=cv2.INTER_AREA)
            if rows == hs_c and colour.shape[:2] != (hs_c, ws_c):
                raise AssertionError(f"resized window {colour.shape[:2]}, expected {(hs_c, ws_c)}")
        else:
            cr1 = cr0 + _rows_read(m_colour, grid[1], cr1 - cr0)
            colour = np.asarray(image_rgb[cr0:cr1, cc0:cc1], dtype=np.float32)
        flags = cv2.WARP_INVERSE_MAP | cv2.INTER_LINEAR
        return cv2.warpAffine(colour, m_colour, grid, flags=flags, borderMode=cv2.BORDER_REPLICATE)

    def _edge_rows(self, work_colour: np.ndarray, work_inside: np.ndarray | None, a: int, b: int) -> np.ndarray:
        """Rows ``a:b`` of the edge evidence (step 2) on the work grid: ``|d/dx|`` of the blurred colour, the
        largest over R, G and B, in colour levels per work pixel, 0 beyond the image ([b - a, ws] float32).
        ``work_colour``: the grid's colour, its rows from the first down to at least ``b + _filter_rows`` or the
        grid's last.

        Only rows ``a:b`` and ``_filter_rows`` more on each side are filtered: a row's value depends on the rows
        within the Gaussian's and the Sobel's reach, and a band cut at the grid's own first or last row has the
        grid's border there, so these rows equal the whole grid's (tested)."""
        hs = work_colour.shape[0]
        reach = _filter_rows(self.sigma_px)
        lo, hi = max(a - reach, 0), min(b + reach, hs)
        blurred = cv2.GaussianBlur(work_colour[lo:hi], (0, 0), self.sigma_px)
        # |d/dx| of the colour image: the largest over R, G, B (a grey barrier on green grass has little luma
        # contrast but much colour contrast); Sobel's 3x3 x-weights sum to 8 per unit of slope
        d = np.abs(cv2.Sobel(blurred, cv2.CV_32F, 1, 0, ksize=3)[a - lo : b - lo])
        gx = np.maximum(np.maximum(d[..., 0], d[..., 1]), d[..., 2]) / 8.0
        if work_inside is not None:
            gx[~work_inside[a:b]] = 0.0  # beyond the image: no gradient
        return gx
