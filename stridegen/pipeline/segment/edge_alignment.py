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

from dataclasses import dataclass

import cv2
import numpy as np

from stridegen.pipeline.segment.raster import MaskCrop


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
    ) -> tuple[float, tuple]:
        """(score in (0, 1] or NaN, best offset (du, dv) in image pixels) of one mask (a crop of the
        [H, W, 3] uint8 ``image_rgb``); ``excluded`` [H, W] bool marks pixels whose edges are not the object's
        (nearer objects), None for none. ``size`` (H, W), where given and not ``image_rgb``'s, says that
        ``image_rgb`` [h, w, 3] is the whole image at a reduced scale (a DCT-scaled decode): the colour window is
        taken from it by the exact affine map of pixel centres, ``(u + 0.5) * w / W - 0.5``."""
        height, width = (int(image_rgb.shape[0]), int(image_rgb.shape[1])) if size is None else size
        red_h, red_w = int(image_rgb.shape[0]), int(image_rgb.shape[1])
        sy, sx = red_h / height, red_w / width  # reduced pixels per image pixel (1: the full image)
        if not mask.any():
            return float("nan"), (0.0, 0.0)
        u0, v0, u1, v1 = (float(x) for x in mask.box_xyxy())  # pixel edges
        scale = self.work_side / max(u1 - u0, v1 - v0)
        reach = int(np.ceil(self.search_frac * self.work_side))  # search radius, work pixels
        pad = reach + self.exclude_px + 3  # image pixels are scaled: pad in work pixels, converted below
        pad_img = pad / scale
        # window in image pixel-edge coordinates, resampled to a grid of work pixels
        wu0, wv0 = u0 - pad_img, v0 - pad_img
        ws = int(np.ceil((u1 - u0) * scale)) + 2 * pad
        hs = int(np.ceil((v1 - v0) * scale)) + 2 * pad
        # the image window the grid covers (whole pixels, clipped to the image), cropped once
        c0 = max(int(np.floor(wu0 + 0.5)) - 1, 0)
        r0 = max(int(np.floor(wv0 + 0.5)) - 1, 0)
        c1 = min(int(np.ceil(wu0 + ws / scale + 0.5)) + 1, width)
        r1 = min(int(np.ceil(wv0 + hs / scale + 0.5)) + 1, height)
        window = (r0, r1, c0, c1)
        # work pixel centre (x, y) -> window coordinates (pixel centres at integers in both grids):
        # image u = wu0 + (x + 0.5) / scale, window column = u - c0
        m = np.array(
            [[1.0 / scale, 0.0, wu0 + 0.5 / scale - c0], [0.0, 1.0 / scale, wv0 + 0.5 / scale - r0]],
            dtype=np.float64,
        )
        if (sy, sx) == (1.0, 1.0):
            cr0, cr1, cc0, cc1 = r0, r1, c0, c1
            m_colour = m
        else:  # the same window of the reduced image: window coordinate w -> (w + c0 + 0.5) sx - 0.5 - cc0
            cr0, cc0 = int(np.floor(r0 * sy)), int(np.floor(c0 * sx))
            cr1, cc1 = min(int(np.ceil(r1 * sy)), red_h), min(int(np.ceil(c1 * sx)), red_w)
            to_reduced = np.array([[sx, 0.0, (c0 + 0.5) * sx - 0.5 - cc0], [0.0, sy, (r0 + 0.5) * sy - 0.5 - cr0]])
            m_colour = to_reduced @ np.vstack([m, [0, 0, 1.0]])
        colour: np.ndarray = np.asarray(image_rgb[cr0:cr1, cc0:cc1], dtype=np.float32)
        # shrinking (colour pixels per work pixel above 1/2): area-average first to twice the work grid (no aliasing)
        shrink = min(1.0, 2.0 * scale / max(sy, sx))
        if shrink < 1.0:
            colour = cv2.resize(colour, None, fx=shrink, fy=shrink, interpolation=cv2.INTER_AREA)
            hs_c, ws_c = colour.shape[:2]
            fy, fx = hs_c / (cr1 - cr0), ws_c / (cc1 - cc0)  # the exact factors after rounding the size
            # window coordinate w -> resized coordinate (w + 0.5) f - 0.5
            m_colour = np.array([[fx, 0.0, 0.5 * fx - 0.5], [0.0, fy, 0.5 * fy - 0.5]]) @ np.vstack(
                [m_colour, [0, 0, 1.0]]
            )
        size = (ws, hs)
        inverse = cv2.WARP_INVERSE_MAP
        work_colour = cv2.warpAffine(
            colour, m_colour, size, flags=inverse | cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
        )
        ones = np.ones((r1 - r0, c1 - c0), dtype=np.uint8)
        work_inside = cv2.warpAffine(ones, m, size, flags=inverse | cv2.INTER_NEAREST, borderValue=0).astype(bool)
        mask_win = mask.within(window).astype(np.float32)
        work_mask = (cv2.warpAffine(mask_win, m, size, flags=inverse | cv2.INTER_LINEAR) >= 0.5).astype(np.uint8)
        if not work_mask.any():
            return float("nan"), (0.0, 0.0)
        blurred = cv2.GaussianBlur(work_colour, (0, 0), self.sigma_px)
        # |d/dx| of the colour image: the largest over R, G, B (a grey barrier on green grass has little luma
        # contrast but much colour contrast); Sobel's 3x3 x-weights sum to 8 per unit of slope
        d = np.abs(cv2.Sobel(blurred, cv2.CV_32F, 1, 0, ksize=3))
        gx = np.maximum(np.maximum(d[..., 0], d[..., 1]), d[..., 2]) / 8.0
        gx[~work_inside] = 0.0  # beyond the image: no gradient
        outline = work_mask.astype(bool) & ~cv2.erode(
            work_mask, cv2.getStructuringElement(cv2.MORPH_CROSS, (3, 3)), borderValue=0
        ).astype(bool)
        # not the object's own boundary: near the image border or near an excluded pixel
        bad = (~work_inside).astype(np.uint8)
        if excluded is not None:
            excl_win = np.asarray(excluded[r0:r1, c0:c1], dtype=np.uint8)
            if excl_win.any():
                work_excl = cv2.warpAffine(excl_win, m, size, flags=inverse | cv2.INTER_NEAREST)
                bad = np.maximum(bad, np.asarray(work_excl, dtype=np.uint8))
        kernel = cv2.getStructuringElement(cv2.MORPH_RECT, (2 * self.exclude_px + 3, 2 * self.exclude_px + 3))
        outline &= ~cv2.dilate(bad, kernel).astype(bool)
        if np.count_nonzero(outline) < self.min_outline_px:
            return float("nan"), (0.0, 0.0)
        soft = cv2.GaussianBlur(work_mask.astype(np.float32), (0, 0), 1.0)
        nx = cv2.Sobel(soft, cv2.CV_32F, 1, 0, ksize=3)
        ny = cv2.Sobel(soft, cv2.CV_32F, 0, 1, ksize=3)
        norm = np.hypot(nx, ny)
        norm[norm == 0] = 1.0
        # the left/right outline: weight cos^4 of the normal's angle from horizontal, so slanted outline parts
        # (a barrier's top and bottom seen obliquely), which slide along kerbs and lane lines, hardly count
        wx = np.where(outline, (np.abs(nx) / norm) ** 4, 0.0).astype(np.float32)
        total = float(np.count_nonzero(outline))
        # the mask grows to the right across its left outline (nx > 0) and shrinks across its right one
        sides = [
            w for w in (np.where(nx > 0, wx, 0.0), np.where(nx < 0, wx, 0.0)) if w.sum() >= self.min_side_share * total
        ]
        if not sides:  # hardly any left/right outline left: nothing to tell by
            return float("nan"), (0.0, 0.0)
        # template: the outline's bounding window; search: that window moved up to `reach` work pixels sideways
        # and `rise` up or down
        rise = int(np.ceil(self.rise_frac * self.work_side))
        rows, cols = np.nonzero(outline)
        r0, r1, c0, c1 = rows.min(), rows.max() + 1, cols.min(), cols.max() + 1
        gxp = np.pad(gx, reach)  # offsets beyond the window see no gradient
        search = (slice(r0 + reach - rise, r1 + reach + rise), slice(c0, c1 + 2 * reach))
        # A[rise + dv, reach + du]: geometric mean over the sides of the mean |gx| under that side of the outline
        # moved by (du, dv): a fit needs both sides on edges, not one side on a strong edge nearby
        side = np.ones((2 * rise + 1, 2 * reach + 1), dtype=np.float64)
        for w in sides:
            template = np.ascontiguousarray(w[r0:r1, c0:c1], dtype=np.float32)
            side *= np.maximum(cv2.matchTemplate(gxp[search], template, cv2.TM_CCORR), 0.0) / float(w.sum())
        side **= 1.0 / len(sides)
        best = float(side.max())
        if best < self.min_gradient:
            return float("nan"), (0.0, 0.0)
        t = self.tol_px
        here = float(side[max(rise - t, 0) : rise + t + 1, reach - t : reach + t + 1].max())
        dv, du = np.unravel_index(int(np.argmax(side)), side.shape)
        return here / best, ((du - reach) / scale, (dv - rise) / scale)
