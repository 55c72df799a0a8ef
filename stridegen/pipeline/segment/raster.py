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
    operations on the same numbers for each row, so each crop equals ``polygon_crop`` of its polygon alone).

    Each slanted edge is evaluated on the rows it spans only ((edge, row) pairs: about two per row of a convex
    polygon) and each row's extent gathered with ``np.minimum.at`` / ``np.maximum.at``; min and max are exact, so
    the extent is the one of all the row's crossings and vertices, whatever the order."""
    out = [MaskCrop.empty()] * len(polys_uv)
    polys = [np.asarray(poly_uv, dtype=np.float64).reshape(-1, 2) for poly_uv in polys_uv]
    shaped = [i for i, poly in enumerate(polys) if poly.shape[0] >= 3]
    if not shaped:
        return out
    # each polygon's row range and finiteness, for all of them at once (min and max are exact: each polygon's
    # are the ones of its own vertices)
    starts = np.cumsum([0] + [polys[i].shape[0] for i in shaped[:-1]])
    vertices = np.concatenate([polys[i] for i in shaped])
    finite = np.logical_and.reduceat(np.isfinite(vertices).all(axis=1), starts)
    v_min = np.where(finite, np.minimum.reduceat(vertices[:, 1], starts), 0.0)
    v_max = np.where(finite, np.maximum.reduceat(vertices[:, 1], starts), 0.0)
    first_row = _clamp(np.ceil(v_min), 0, height).astype(np.int64).tolist()  # clipped: int64 holds them
    last_row = _clamp(np.floor(v_max), -1, height - 1).astype(np.int64).tolist()
    taken: list[tuple[int, np.ndarray, int, int]] = []  # (index, polygon, first row, last row)
    for i, ok, r0, r1 in zip(shaped, finite.tolist(), first_row, last_row, strict=True):
        if ok and r1 >= r0 and not polygon_area(polys[i]) <= 0.0:  # (a NaN area, of overflowing products, is kept)
            taken.append((i, polys[i], r0, r1))
    if not taken:
        return out
    # Edge e of a polygon runs from its vertex e to vertex e + 1 (the last back to the first). Row r of polygon j
    # is scan line ``first[j] + r - r0_j`` of the rows of all polygons.
    n_vertices = [poly.shape[0] for _, poly, _, _ in taken]
    a = np.concatenate([poly for _, poly, _, _ in taken])  # [E, 2]: every edge's first vertex
    following = np.arange(1, a.shape[0] + 1)
    following[np.cumsum(n_vertices) - 1] = np.cumsum([0] + n_vertices[:-1])  # a polygon's last vertex: its first
    b = a[following]  # every edge's second vertex
    counts = np.array([r1 - r0 + 1 for _, _, r0, r1 in taken])
    r0_edge = np.repeat([r0 for _, _, r0, _ in taken], n_vertices)
    r1_edge = np.repeat([r1 for _, _, _, r1 in taken], n_vertices)
    shift = np.repeat(np.cumsum(counts) - counts, n_vertices) - r0_edge  # scan line = row + shift
    au, av, bu, bv = a[:, 0], a[:, 1], b[:, 0], b[:, 1]
    dy = bv - av
    slanted = np.flatnonzero(dy != 0)
    # each edge's rows within its polygon's (clipped first, so that far-off edges convert to int64 safely)
    lo = _clamp(np.ceil(np.minimum(av, bv)[slanted]), r0_edge[slanted], r1_edge[slanted] + 1).astype(np.int64)
    hi = _clamp(np.floor(np.maximum(av, bv)[slanted]), r0_edge[slanted] - 1, r1_edge[slanted]).astype(np.int64)
    spans = np.maximum(hi - lo + 1, 0)
    edge = np.repeat(slanted, spans)  # the (edge, row) pairs
    row = np.arange(edge.shape[0]) - np.repeat(np.cumsum(spans) - spans - lo, spans)
    x_edge = au[edge] + (row - av[edge]) / dy[edge] * (bu[edge] - au[edge])
    line = row + shift[edge]
    # a vertex on a scan line bounds that line's extent (it covers the horizontal edges)
    vertex = np.flatnonzero((av == np.floor(av)) & (av >= r0_edge) & (av <= r1_edge))
    line = np.concatenate([line, av[vertex].astype(np.int64) + shift[vertex]])
    x_edge = np.concatenate([x_edge, au[vertex]])
    xl = np.full(int(counts.sum()), np.inf)
    xr = np.full(int(counts.sum()), -np.inf)
    np.minimum.at(xl, line, x_edge)
    np.maximum.at(xr, line, x_edge)
    # int32 columns (an image is far narrower than 2**31 pixels): the crops' comparisons run twice as wide
    c0_all = _clamp(np.ceil(xl), 0, width).astype(np.int32)  # first column of each row's span
    c1_all = _clamp(np.floor(xr) + 1, 0, width).astype(np.int32)  # one past its last column
    # each polygon's window: its first and last rows with a span, and the columns of its spans
    spans = c1_all > c0_all
    filled = np.flatnonzero(spans)
    ends = np.cumsum(counts)
    starts = ends - counts
    first = np.searchsorted(filled, starts)  # into ``filled``: the polygon's first row with a span, if any
    last = np.searchsorted(filled, ends) - 1
    w0 = np.minimum.reduceat(np.where(spans, c0_all, width), starts).tolist()
    w1 = np.maximum.reduceat(np.where(spans, c1_all, 0), starts).tolist()
    has = (last >= first).tolist()
    filled_list = filled.tolist()
    for j, (i, _, r0, _) in enumerate(taken):
        if not has[j]:
            continue
        top, bottom = filled_list[first[j]], filled_list[last[j]] + 1  # scan lines of the window's rows
        c0, c1 = c0_all[top:bottom, None], c1_all[top:bottom, None]
        cols = np.arange(w0[j], w1[j], dtype=np.int32)
        out[i] = MaskCrop(r0 + top - int(starts[j]), w0[j], (cols >= c0) & (cols < c1))
    return out


def _clamp(x: np.ndarray, lo: np.ndarray | int, hi: np.ndarray | int) -> np.ndarray:
    """``np.clip(x, lo, hi)`` (numpy's definition, minimum(maximum(x, lo), hi)) without its dispatch overhead; may
    differ from it in the sign of a zero only, which the int conversions here drop."""
    return np.minimum(np.maximum(x, lo), hi)


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
