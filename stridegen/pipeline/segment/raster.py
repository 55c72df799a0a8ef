"""Per-object pixel arrays in the object's crop: convex polygons rasterised into their bounding window, masks kept
as (window origin, window pixels), and the share of a polygon inside the image.

Pixel convention (shared by every segmenter backend and the visibility filter): pixel (row ``r``, column ``c``)
has its centre at image coordinates (u, v) = (c, r) and covers [c - 0.5, c + 0.5] x [r - 0.5, r + 0.5], as OpenCV
and the pinhole intrinsics assume; the image spans [-0.5, W - 0.5] x [-0.5, H - 0.5]. A polygon's raster holds
exactly the pixels whose centre lies in the closed polygon (boundary included), up to floating-point rounding of
centres that lie on an edge.

An object covers a small part of its image, so its arrays (hull raster, mask, occluder test, mask box, RLE) are
computed on its crop: a ``MaskCrop`` is the window [r0, r1) x [c0, c1) of the image and the mask's pixels there;
every pixel outside the window is False. ``MaskCrop.full`` gives the [H, W] mask where a caller needs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from stridegen.core.polygons import clip_polygon_to_rect, polygon_area

Window = tuple[int, int, int, int]  # (r0, r1, c0, c1): rows [r0, r1), columns [c0, c1) of an image, in pixels


@dataclass(frozen=True)
class MaskCrop:
    """A bool mask of an image held on a window: ``pixels`` [r1 - r0, c1 - c0] are the mask's rows r0..r1-1 and
    columns c0..c1-1 (image pixels); the mask is False everywhere else. Never mutated once built."""

    r0: int
    c0: int
    pixels: np.ndarray  # [h, w] bool

    @classmethod
    def empty(cls) -> MaskCrop:
        """The empty mask (a 0 x 0 window at the origin)."""
        return cls(0, 0, np.zeros((0, 0), dtype=bool))

    @classmethod
    def of_full(cls, mask: np.ndarray) -> MaskCrop:
        """A full-image [H, W] mask as the crop whose window is the whole image."""
        return cls(0, 0, np.asarray(mask, dtype=bool))

    @property
    def r1(self) -> int:
        return self.r0 + int(self.pixels.shape[0])

    @property
    def c1(self) -> int:
        return self.c0 + int(self.pixels.shape[1])

    @property
    def window(self) -> Window:
        return self.r0, self.r1, self.c0, self.c1

    @property
    def slices(self) -> tuple[slice, slice]:
        """Index of the window into a full-image array (``image[crop.slices]``)."""
        return slice(self.r0, self.r1), slice(self.c0, self.c1)

    @property
    def area(self) -> int:
        """Number of True pixels."""
        return int(np.count_nonzero(self.pixels))

    def any(self) -> bool:
        return bool(self.pixels.any())

    def full(self, height: int, width: int) -> np.ndarray:
        """The [height, width] bool mask."""
        out = np.zeros((height, width), dtype=bool)
        out[self.slices] = self.pixels
        return out

    def within(self, window: Window) -> np.ndarray:
        """The mask's pixels on another window ``(r0, r1, c0, c1)`` ([r1 - r0, c1 - c0] bool, False outside this
        crop's window)."""
        r0, r1, c0, c1 = window
        if (r0, r1, c0, c1) == self.window:
            return self.pixels
        out = np.zeros((max(r1 - r0, 0), max(c1 - c0, 0)), dtype=bool)
        ir0, ir1 = max(r0, self.r0), min(r1, self.r1)
        ic0, ic1 = max(c0, self.c0), min(c1, self.c1)
        if ir0 < ir1 and ic0 < ic1:
            out[ir0 - r0 : ir1 - r0, ic0 - c0 : ic1 - c0] = self.pixels[
                ir0 - self.r0 : ir1 - self.r0, ic0 - self.c0 : ic1 - self.c0
            ]
        return out

    def minus(self, full: np.ndarray) -> MaskCrop:
        """This mask without the pixels of a full-image [H, W] bool mask ``full`` (same window)."""
        return MaskCrop(self.r0, self.c0, self.pixels & ~full[self.slices])

    def clip_to(self, other: MaskCrop) -> MaskCrop:
        """This mask ∩ ``other``, on ``other``'s window."""
        return MaskCrop(other.r0, other.c0, self.within(other.window) & other.pixels)

    def overlap(self, other: MaskCrop) -> int:
        """|this mask ∩ other| in pixels."""
        return int(np.count_nonzero(self.within(other.window) & other.pixels))

    def at(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """[P] bool: the mask at image pixels (rows [P], cols [P] int), False outside the window."""
        rows = np.asarray(rows, dtype=np.int64) - self.r0
        cols = np.asarray(cols, dtype=np.int64) - self.c0
        h, w = self.pixels.shape
        inside = (rows >= 0) & (rows < h) & (cols >= 0) & (cols < w)
        out = np.zeros(rows.shape, dtype=bool)
        out[inside] = self.pixels[rows[inside], cols[inside]]
        return out

    def paint(self, canvas: np.ndarray) -> None:
        """OR the mask into a full-image [H, W] bool ``canvas`` (in place)."""
        canvas[self.slices] |= self.pixels

    def box_xyxy(self) -> np.ndarray:
        """[4] pixel-edge bounding box (x0, y0, x1, y1) of the mask in image pixels (pixel (r, c) spans
        [c - 0.5, c + 0.5] x [r - 0.5, r + 0.5]); NaN for an empty mask."""
        rows = np.flatnonzero(self.pixels.any(axis=1))
        if rows.size == 0:
            return np.full(4, np.nan)
        cols = np.flatnonzero(self.pixels.any(axis=0))
        y0, y1 = self.r0 + int(rows[0]), self.r0 + int(rows[-1])
        x0, x1 = self.c0 + int(cols[0]), self.c0 + int(cols[-1])
        return np.array([x0 - 0.5, y0 - 0.5, x1 + 0.5, y1 + 0.5], dtype=np.float64)


def crop_boxes(crops: Sequence[MaskCrop]) -> tuple[np.ndarray, np.ndarray]:
    """([N, 4] pixel-edge bounding boxes, NaN rows for empty masks; [N] int64 pixel counts) of N mask crops."""
    boxes = np.full((len(crops), 4), np.nan)
    area = np.zeros(len(crops), dtype=np.int64)
    for i, crop in enumerate(crops):
        area[i] = crop.area
        if area[i]:
            boxes[i] = crop.box_xyxy()
    return boxes, area


def polygon_crop(poly_uv: np.ndarray, height: int, width: int) -> MaskCrop:
    """Raster of the closed convex polygon ``poly_uv`` [V, 2] (image pixels) in an image of ``height`` x ``width``,
    on the polygon's pixel bounding window (the tightest window holding every pixel of the raster).

    Scan-line rasterisation: for every pixel row v the polygon's x-extent at y = v is the min / max over the
    crossings of its edges with that line (plus its vertices on the line, which covers horizontal edges). Exact for
    convex polygons; a polygon of fewer than three vertices, of zero area or with a non-finite vertex gives the
    empty crop. The window is taken from the computed row spans, so ``polygon_crop(p).full(H, W)`` equals the
    whole-image scan line pixel for pixel. ``polygon_crops`` does many polygons at once.
    """
    return polygon_crops([poly_uv], height, width)[0]


def polygon_crops(polys_uv: Sequence[np.ndarray], height: int, width: int) -> list[MaskCrop]:
    """``polygon_crop`` of each polygon, the scan lines of all of them in one set of numpy operations (the same
    operations on the same numbers for each row, so each crop equals ``polygon_crop`` of its polygon alone)."""
    out = [MaskCrop.empty()] * len(polys_uv)
    taken: list[tuple[int, np.ndarray, int, int]] = []  # (index, polygon, first row, last row)
    for i, poly_uv in enumerate(polys_uv):
        poly = np.asarray(poly_uv, dtype=np.float64).reshape(-1, 2)
        if poly.shape[0] < 3 or not np.isfinite(poly).all() or polygon_area(poly) <= 0.0:
            continue
        r0 = max(int(np.ceil(poly[:, 1].min())), 0)
        r1 = min(int(np.floor(poly[:, 1].max())), height - 1)
        if r1 >= r0:
            taken.append((i, poly, r0, r1))
    if not taken:
        return out
    # Edge e of polygon j: vertex e to vertex e + 1 (the last back to the first); polygons of fewer vertices are
    # padded with edges that take part in nothing (``real``).
    n_edges = max(poly.shape[0] for _, poly, _, _ in taken)
    au, av, bu, bv = (np.zeros((len(taken), n_edges)) for _ in range(4))
    real = np.zeros((len(taken), n_edges), dtype=bool)
    for j, (_, poly, _, _) in enumerate(taken):
        v_count = poly.shape[0]
        au[j, :v_count], av[j, :v_count] = poly[:, 0], poly[:, 1]
        bu[j, : v_count - 1], bv[j, : v_count - 1] = poly[1:, 0], poly[1:, 1]
        bu[j, v_count - 1], bv[j, v_count - 1] = poly[0, 0], poly[0, 1]
        real[j, :v_count] = True
    counts = np.array([r1 - r0 + 1 for _, _, r0, r1 in taken])
    owner = np.repeat(np.arange(len(taken)), counts)  # the polygon of each scan line
    rows = np.concatenate([np.arange(r0, r1 + 1, dtype=np.float64) for _, _, r0, r1 in taken])  # [R]
    # Edges along the first axis, scan lines along the second: the reductions over edges then run over whole rows
    # of the array (numpy reduces a short last axis row by row, several times slower).
    au, av, bu, bv, real = au.T[:, owner], av.T[:, owner], bu.T[:, owner], bv.T[:, owner], real.T[:, owner]
    dy = bv - av
    slanted = real & (dy != 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (rows - av) / np.where(slanted, dy, 1.0)
    x_edge = au + t * (bu - au)  # [E, R]
    on_edge = slanted & (rows >= np.minimum(av, bv)) & (rows <= np.maximum(av, bv))
    on_vertex = real & (rows == av)  # [V, R]
    inf = np.inf
    xl = np.minimum(np.where(on_edge, x_edge, inf).min(axis=0), np.where(on_vertex, au, inf).min(axis=0))
    xr = np.maximum(np.where(on_edge, x_edge, -inf).max(axis=0), np.where(on_vertex, au, -inf).max(axis=0))
    c0_all = np.clip(np.ceil(xl), 0, width).astype(np.int64)  # first column of each row's span
    c1_all = np.clip(np.floor(xr) + 1, 0, width).astype(np.int64)  # one past its last column
    ends = np.cumsum(counts)
    for (i, _, r0, _), stop, count in zip(taken, ends.tolist(), counts.tolist(), strict=True):
        c0, c1 = c0_all[stop - count : stop], c1_all[stop - count : stop]
        filled = np.flatnonzero(c1 > c0)
        if filled.size == 0:
            continue
        first, last = int(filled[0]), int(filled[-1]) + 1
        c0, c1 = c0[first:last], c1[first:last]
        spans = c1 > c0
        w0, w1 = int(c0[spans].min()), int(c1[spans].max())
        cols = np.arange(w0, w1)
        out[i] = MaskCrop(r0 + first, w0, (cols[None, :] >= c0[:, None]) & (cols[None, :] < c1[:, None]))
    return out


def polygon_mask(poly_uv: np.ndarray, height: int, width: int) -> np.ndarray:
    """[H, W] bool: pixels whose centre lies in the closed convex polygon ``poly_uv`` [V, 2] (``polygon_crop``)."""
    return polygon_crop(poly_uv, height, width).full(height, width)


def image_part(hull_uv: np.ndarray, width: int, height: int) -> tuple[np.ndarray, float, float]:
    """(the part of the convex polygon ``hull_uv`` [V, 2] inside the image, that part's area, area(part) /
    area(hull) clipped to [0, 1] and 0 for a hull of no area); the image spans [-0.5, W - 0.5] x [-0.5, H - 0.5].
    A hull inside the image is its own part (no clipping)."""
    hull = np.asarray(hull_uv, dtype=np.float64).reshape(-1, 2)
    if hull.shape[0] < 3:
        return hull, 0.0, 0.0
    total = polygon_area(hull)
    lo, hi = hull.min(axis=0), hull.max(axis=0)
    if lo[0] >= -0.5 and lo[1] >= -0.5 and hi[0] <= width - 0.5 and hi[1] <= height - 0.5:
        return hull, total, 1.0 if total > 0.0 else 0.0
    part = clip_polygon_to_rect(hull, -0.5, -0.5, width - 0.5, height - 0.5)
    area = polygon_area(part)
    return part, area, 0.0 if total <= 0.0 else min(max(area / total, 0.0), 1.0)


def inside_share(hull_uv: np.ndarray, width: int, height: int) -> float:
    """area(hull ∩ image) / area(hull), on the polygons (``image_part``)."""
    return image_part(hull_uv, width, height)[2]
