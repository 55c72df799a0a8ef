"""``lidar_watershed``: LiDAR points inside an object's 3D box, depth-tested against the other points, seed a
marker watershed on the object's crop. No GrabCut: a few cheap OpenCV passes per object (``cv2.erode``,
``cv2.distanceTransform``, ``cv2.watershed``), about 14 times faster per mask than ``lidar`` (docs/segmenters.md).

All sizes are image pixels unless named otherwise; depths are the request's camera-frame z (metres).

Scale: a spinning LiDAR's beams are ``beam_gap_deg`` apart, so two neighbouring beams' returns on a surface are
``gap = f * beam_gap_deg`` pixels apart in the image at any range. ``f`` is the request's ``focal_px`` (the
camera's focal length); a request without it uses ``focal_frac * image height`` (nuScenes' front cameras: 1266 px
at 900 px, 1.407). The HDL-32E's 32 beams span 41.3 deg, 1.333 deg apart: gap = 29 px at 1600 x 900. A metric
length ``m`` at depth ``d`` is ``f * m / d`` pixels.

Algorithm, per object i (nearest first, ``segment_in_depth_order``), on the hull's window resampled so that its
longer side is at most ``work_side`` pixels:

1. Points of the window that no nearer hull or mask hides (the occlusion rule). Object i's own points
   (``lidar_object == i``) and the others, each rasterised into a per-pixel nearest-depth z-buffer and spread
   (grey erosion, a disc of ``zbuffer_beams * gap``; 0 by default: each return stands for its own pixel). An own
   point behind a foreign one by more than ``depth_tol_m`` is hidden from this camera (the LiDAR, 0.3 m above
   and behind the cameras, sees over things the camera does not) and is no seed. A foreign point is *evidence
   against* the object (a competitor) when no seed lies within that disc, or when it is nearer than the seeds
   there by more than ``depth_tol_m`` (something in front); one within the disc and not in front lies behind
   the object's surface (hidden from the camera) or on it, and is ignored. Unowned returns within
   ``depth_tol_m`` of the seeds' depth range are ignored too: ``make_request`` leaves the returns of a box's
   bottom ``ground_margin_m`` unowned, and those are mostly the object's own lower body.
   A foreign point *behind* the seeds' depth range needs more: where the request knows the sensor's position
   (``lidar_through``), it is evidence only when the LiDAR measured it through the object's box (its ray
   entered the box and left it before the point: the box is empty there, e.g. under a truck or past a
   pedestrian's legs). A return behind the object whose ray passed beside or over the box says nothing about
   the pixel it projects to: the LiDAR, mounted elsewhere than the camera, saw round the object's silhouette
   (parallax), and the camera may well see the object there.
2. Watershed markers: seeds -> object; competitors, pixels outside the hull, nearer hulls and masks, and pixels
   farther than ``reach`` from every seed -> not object; the rest unknown. ``reach = grow_beams * gap +
   f * base_margin_m / d`` with ``d`` the seeds' median depth: the parts of the object between and beyond its
   beams (3 gaps: objects partly hidden from the LiDAR but not from the camera), plus the bottom slab that has no
   own returns (``base_margin_m`` equals ``make_request``'s ``ground_margin_m``).
3. ``cv2.watershed`` floods the unknown pixels from the markers in order of the colour gradient (Beucher and
   Meyer's marker-controlled watershed, 1993), so the object's border settles on the strongest image edge between
   its seeds and the evidence against it. ``refine: "distance"`` floods a flat image instead (nearest marker,
   no image evidence). Watershed lines next to the object count as object; enclosed holes (windows the LiDAR
   saw through) are filled (``fill_holes``). The mask is kept inside the hull.
4. Fewer than ``min_points`` seeds, or a projected box narrower than ``min_box_px``: the mask is the hull (the
   geometric prior) with the point quality below. No own point at all: the hull with ``fallback_quality`` (0),
   as ``lidar`` does.

Quality, as ``lidar``'s: ``inside_share * (1 - exp(-n_inside / points_scale))`` with ``n_inside`` the object's
projected points whose pixel lies in the final mask and ``inside_share = n_inside / n_projected``.

Pixels (step 3) come from ``request.work_image()``: the build decodes a JPEG at the largest libjpeg DCT reduction
(1/2, 1/4, 1/8) whose shorter side stays at least ``image_min_side`` pixels (450 by default: 1600 x 900 is read
at 800 x 450, 800 x 450 whole; 0: always whole), and each window is resampled from that (docs/scale.md#decoded-scale).
"""

from __future__ import annotations

from typing import NamedTuple

import cv2
import numpy as np

from stridegen.core.errors import ConfigError
from stridegen.pipeline.segment.base import SegmentRequest, SegmentResult
from stridegen.pipeline.segment.grabcut import Crop
from stridegen.pipeline.segment.lidar import disc_kernel, point_pixels
from stridegen.pipeline.segment.raster import MaskCrop
from stridegen.pipeline.segment.request import LidarThrough, check_occlusion_mode, segment_in_depth_order

UNKNOWN, NOT_OBJECT, OBJECT = 0, 1, 2  # watershed marker labels (OpenCV: 0 = to flood, > 0 = seeds)
REFINE_MODES = ("watershed", "distance")
_SQUARE3 = np.ones((3, 3), np.uint8)  # the 8-neighbourhood


def spread_min(depth: np.ndarray, radius: float) -> np.ndarray:
    """[h, w] float32: the minimum of a sparse depth raster (inf where empty) over a disc of ``radius`` pixels."""
    if radius < 0.5:
        return depth
    return cv2.erode(depth, disc_kernel(radius), borderType=cv2.BORDER_CONSTANT, borderValue=float(np.inf))


def nearest_depth_raster(rows: np.ndarray, cols: np.ndarray, depth: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """[h, w] float32 z-buffer of points at integer pixels (rows, cols): the nearest depth per pixel, inf elsewhere."""
    out = np.full(shape, np.inf, dtype=np.float32)
    np.minimum.at(out, (rows, cols), depth.astype(np.float32))
    return out


def median(values: np.ndarray) -> float:
    """``np.median`` of a non-empty 1-D float array without NaN: the middle value, or the mean of the two middle
    values (the same arithmetic, (a + b) / 2), at a tenth of np.median's cost on the few values of one object."""
    ordered = np.sort(values)
    mid = ordered.shape[0] // 2
    if ordered.shape[0] % 2:
        return float(ordered[mid])
    return float((ordered[mid - 1] + ordered[mid]) / 2.0)


def fill_holes(mask: np.ndarray) -> np.ndarray:
    """[h, w] bool: ``mask`` with every background component that does not touch the border set."""
    h, w = mask.shape
    padded = np.zeros((h + 2, w + 2), dtype=np.uint8)
    padded[1:-1, 1:-1] = mask
    flood = np.zeros((h + 4, w + 4), dtype=np.uint8)
    cv2.floodFill(padded, flood, (0, 0), 1)  # the outside: every 0 reachable from the padding
    return mask | (padded[1:-1, 1:-1] == 0)


def flood(image_rgb: np.ndarray, markers: np.ndarray) -> np.ndarray:
    """[h, w] bool: the pixels ``cv2.watershed`` gives the ``OBJECT`` marker when it floods ``markers`` [h, w]
    int32 (``UNKNOWN`` to flood) over ``image_rgb`` [h, w, 3] uint8; watershed lines next to the object count
    as object.

    OpenCV marks the image's outermost pixels as watershed lines (markers there are lost), so the image is
    flooded with a one-pixel replicated border that is dropped afterwards (``flood_padded``).
    """
    return flood_padded(image_rgb, cv2.copyMakeBorder(markers, 1, 1, 1, 1, cv2.BORDER_CONSTANT, value=UNKNOWN))


def flood_padded(image_rgb: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``flood`` with the markers given already padded: ``labels`` [h + 2, w + 2] int32, ``UNKNOWN`` on its
    one-pixel border (overwritten by the watershed)."""
    # a window of a larger image is taken as it is: OpenCV reads rows at any stride (no contiguous copy first)
    image = cv2.copyMakeBorder(np.asarray(image_rgb, dtype=np.uint8), 1, 1, 1, 1, cv2.BORDER_REPLICATE)
    cv2.watershed(image, labels)
    labels = labels[1:-1, 1:-1]
    obj = labels == OBJECT
    line = labels == -1
    if line.any():  # dilate the 0/1 bytes of the bool mask in place of a uint8 copy
        obj |= line & cv2.dilate(obj.view(np.uint8), _SQUARE3).view(bool)
    return obj


class LidarWatershedSegmenter:
    """Depth-tested LiDAR seeds grown by a marker watershed per object. Options (config keywords) as in
    ``__init__``; the module docstring explains each."""

    name = "lidar_watershed"
    needs_lidar = True  # the build loads each frame's LiDAR sweep only for backends that need it

    def __init__(
        self,
        work_side: int = 128,
        beam_gap_deg: float = 1.333,
        focal_frac: float = 1.407,
        grow_beams: float = 3.0,
        base_margin_m: float = 0.2,
        zbuffer_beams: float = 0.0,
        depth_tol_m: float = 0.5,
        min_points: int = 3,
        min_box_px: float = 6.0,
        points_scale: float = 10.0,
        refine: str = "watershed",
        fill_holes: bool = True,
        occlusion: str = "hull",
        fallback_quality: float = 0.0,
        image_min_side: int = 450,
    ) -> None:
        if refine not in REFINE_MODES:
            raise ConfigError(f"refine must be one of {REFINE_MODES}, got {refine!r}")
        self.work_side = int(work_side)
        self.beam_gap_rad = float(np.deg2rad(beam_gap_deg))
        self.focal_frac = float(focal_frac)
        self.grow_beams = float(grow_beams)
        self.base_margin_m = float(base_margin_m)
        self.zbuffer_beams = float(zbuffer_beams)
        self.depth_tol_m = float(depth_tol_m)
        if int(min_points) < 1:  # the watershed grows the object from its seeds: none is no mask to grow
            raise ConfigError(f"min_points must be >= 1 (seeds the watershed grows from), got {min_points}")
        self.min_points = int(min_points)
        self.min_box_px = float(min_box_px)
        self.points_scale = float(points_scale)
        self.refine = refine
        self.fill_holes = bool(fill_holes)
        self.occlusion = check_occlusion_mode(occlusion)
        self.fallback_quality = float(fallback_quality)
        if int(image_min_side) < 0:
            raise ConfigError(f"image_min_side must be >= 0, got {image_min_side}")
        self.image_min_side = int(image_min_side)  # read by the build's segment stage (decode_factor)

    def segment(self, request: SegmentRequest) -> SegmentResult:
        h = request.height
        points = _Points.of(request)
        focal_px = request.focal_px if request.focal_px else self.focal_frac * h
        gap_px = focal_px * self.beam_gap_rad
        box = np.asarray(request.box_xyxy, dtype=np.float64).reshape(-1, 4)
        tiny = (np.minimum(box[:, 2] - box[:, 0], box[:, 3] - box[:, 1]) < self.min_box_px).tolist()

        def one(i: int, hull: MaskCrop, occluder: np.ndarray) -> tuple[MaskCrop, float]:
            own = (points.owner == i).nonzero()[0]  # np.flatnonzero of a 1-D array, without its wrapper
            n_own = own.shape[0]
            if n_own == 0:
                return hull, self.fallback_quality
            mask = hull
            if not tiny[i] and hull.any():
                grown = self._grow(request, i, hull, occluder, points, focal_px, gap_px)
                mask = hull if grown is None else grown
            n_inside = _count_visible_in(mask, occluder, points, own)
            return mask, n_inside / n_own * (1.0 - np.exp(-n_inside / self.points_scale))

        return segment_in_depth_order(request, one, self.occlusion)

    def _grow(
        self,
        request: SegmentRequest,
        i: int,
        hull: MaskCrop,
        occluder: np.ndarray,
        points: _Points,
        focal_px: float,
        gap_px: float,
    ) -> MaskCrop | None:
        """Object i's mask on its hull's window (steps 1-3 of the module docstring); None with too few seeds.

        The window's points and their crop pixels are held as indices into the crop's array padded by one pixel
        on every side (``key``, flat, C order), the layout of the watershed's labels (``flood_padded``): one index
        serves the depth rasters (the padding ring stays inf, as ``spread_min``'s constant border), the markers
        and the seeds' distance image."""
        r0, r1, c0, c1 = hull.window
        scale = min(1.0, self.work_side / max(r1 - r0, c1 - c0))
        hs, ws = max(1, round((r1 - r0) * scale)), max(1, round((c1 - c0) * scale))
        crop = Crop(r0, r1, c0, c1, hs, ws)
        at, rw, cw = points.in_window(r0, r1, c0, c1, occluder)  # the points of the window no nearer object hides
        if scale == 1.0:  # crop pixel = window pixel (below: the same, as (k + 0.5) * 1.0 truncates to k)
            cr, cc = rw, cw
        else:  # pixel -> crop pixel
            cr = np.minimum(((rw + 0.5) * (hs / (r1 - r0))).astype(np.int64), hs - 1)
            cc = np.minimum(((cw + 0.5) * (ws / (c1 - c0))).astype(np.int64), ws - 1)
        wp = ws + 2  # the padded crop's row length
        key = cr * wp + cc + (wp + 1)  # (cr + 1) * wp + (cc + 1)
        size = (hs + 2) * wp
        d = points.depth[at]
        owner = points.owner[at]
        mine = owner == i
        mine_at = mine.nonzero()[0]
        spread = self.zbuffer_beams * gap_px * scale
        if mine_at.shape[0] < owner.shape[0]:  # an own point behind a foreign one is hidden: no seed
            not_mine = ~mine
            foreign_z = _depth_raster(key[not_mine], d[not_mine], size, hs + 2, wp, spread)
            seed_at = mine_at[d[mine_at] <= foreign_z[key[mine_at]] + self.depth_tol_m]
        else:  # no foreign point: an inf z-buffer hides none
            not_mine = np.zeros(owner.shape[0], dtype=bool)
            seed_at = mine_at
        if seed_at.shape[0] < self.min_points:
            return None
        sk, sd = key[seed_at], d[seed_at]
        near_z = _depth_raster(sk, sd, size, hs + 2, wp, spread)[key]
        lo, hi = sd.min() - self.depth_tol_m, sd.max() + self.depth_tol_m
        on_base = (owner < 0) & (d >= lo) & (d <= hi)
        against = (not_mine > on_base) & (np.isinf(near_z) | (d < near_z - self.depth_tol_m))  # bool a > b: a & ~b
        behind = against & (d > hi)
        through = request.lidar_through
        if through is not None and behind.any():  # behind the object: evidence only where measured through its box
            if isinstance(through, LidarThrough):  # asked about the points behind only
                behind_at = behind.nonzero()[0]
                against[behind_at] = through.among(i, at[behind_at])
            else:
                measured_through = np.zeros(points.owner.shape[0], dtype=bool)
                measured_through[through[i]] = True  # np.isin(idx, through) without its sort
                against &= ~behind | measured_through[at]

        if scale == 1.0:  # the crop is the window: its hull and occluder pixels as they are (read only)
            hull_c, occluder_c = hull.pixels, occluder[r0:r1, c0:c1]
        else:
            hull_c, occluder_c = crop.mask(hull), crop.mask(occluder)
        not_object = hull_c <= occluder_c  # bool a <= b: ~a | b (outside the hull or hidden by a nearer object)
        reach = (self.grow_beams * gap_px + focal_px * self.base_margin_m / median(sd)) * scale
        if reach < _CHAMFER_DIAGONAL * max(hs, ws):  # else no crop pixel is farther than reach from a seed
            not_seed = np.ones(size, dtype=np.uint8)
            not_seed[sk] = 0
            not_seed_c = not_seed.reshape(hs + 2, wp)[1:-1, 1:-1]
            not_object |= cv2.distanceTransform(not_seed_c, cv2.DIST_L2, 3) > reach
        labels = np.zeros(size, dtype=np.int32)  # UNKNOWN, with flood_padded's one-pixel border
        labels.reshape(hs + 2, wp)[1:-1, 1:-1] = not_object  # True -> 1 = NOT_OBJECT, False -> 0 = UNKNOWN
        labels[key[against]] = NOT_OBJECT
        labels[sk] = OBJECT
        if self.refine == "watershed":  # the image is decoded (a deferred request) only when an object needs it
            work = np.asarray(request.work_image(), dtype=np.uint8)  # reduced where image_min_side allows
            if scale == 1.0 and work.shape[:2] == (request.height, request.width):
                pixels = work[r0:r1, c0:c1]  # crop.image_scaled's pixels, as a view (flood_padded copies them)
            else:
                pixels = crop.image_scaled(work, request.height, request.width)
        else:
            pixels = np.zeros((hs, ws, 3), np.uint8)
        obj = flood_padded(pixels, labels.reshape(hs + 2, wp))
        if self.fill_holes:
            obj = _fill_holes_within(obj, hull_c)
        else:
            obj &= hull_c
        if scale == 1.0:  # inside the hull already, on its window (crop.paste(obj).clip_to(hull) without copies)
            return MaskCrop(r0, c0, obj)
        return crop.paste(obj).clip_to(hull)


# The largest value of OpenCV's 3 x 3 L2 distance transform (DIST_L2, mask 3: steps 0.955 along an axis, 1.3693
# diagonally; OpenCV's distransform.cpp) in an h x w image with at least one zero pixel is at most
# 1.3693 * (max(h, w) - 1): the path that goes diagonally, then along an axis. A reach of 1.37 * max(h, w) or more
# leaves no pixel farther than the reach.
_CHAMFER_DIAGONAL = 1.37


def _depth_raster(key: np.ndarray, depth: np.ndarray, size: int, hp: int, wp: int, spread: float) -> np.ndarray:
    """[size] float32 flat z-buffer of the padded crop (``_grow``): the nearest depth of the points at flat
    indices ``key``, inf elsewhere, spread over a disc of ``spread`` pixels (``spread_min``) on the [hp, wp] grid;
    the padding ring is inf, as spread_min's constant border, so the crop's values are spread_min's."""
    out = np.full(size, np.inf, dtype=np.float32)
    np.minimum.at(out, key, depth.astype(np.float32))
    if spread < 0.5:
        return out
    return spread_min(out.reshape(hp, wp), spread).reshape(-1)


def _fill_holes_within(obj: np.ndarray, hull_c: np.ndarray) -> np.ndarray:
    """``fill_holes(obj & hull_c) & hull_c``: the background components of ``obj & hull_c`` that do not touch the
    border filled, inside ``hull_c`` (one padded buffer: the flood from the padding marks the outside 2)."""
    h, w = obj.shape
    padded = np.zeros((h + 2, w + 2), dtype=np.uint8)
    np.logical_and(obj, hull_c, out=padded[1:-1, 1:-1].view(bool))
    cv2.floodFill(padded, None, (0, 0), 2)  # the outside: every 0 reachable from the padding
    return (padded[1:-1, 1:-1] != 2) & hull_c


def _count_visible_in(mask: MaskCrop, occluder: np.ndarray, points: _Points, own: np.ndarray) -> int:
    """Number of the points ``own`` (indices into ``points``) whose pixel lies in ``mask`` and not in the
    full-image ``occluder`` (``mask.minus(occluder).at(rows, cols)``, counted)."""
    h, w = mask.pixels.shape
    r = points.rows[own] - mask.r0
    c = points.cols[own] - mask.c0
    inside = ((r.view(np.uint64) < h) & (c.view(np.uint64) < w)).nonzero()[0]  # negatives wrap to huge
    hit = mask.pixels[r[inside], c[inside]]
    return int(np.count_nonzero(hit > occluder.reshape(-1)[points.flat[own[inside]]]))  # bool a > b: a & ~b


class _Points(NamedTuple):
    """A request's LiDAR points [P]: their pixels (``point_pixels``: rows, cols, and ``flat`` = row * width +
    col, the index into a C-ordered [height, width] array's flat view), owning object (-1 none) and camera-frame
    depth (metres)."""

    rows: np.ndarray
    cols: np.ndarray
    flat: np.ndarray
    owner: np.ndarray
    depth: np.ndarray

    @classmethod
    def of(cls, request: SegmentRequest) -> _Points:
        rows, cols = point_pixels(request.lidar_uv, request.height, request.width)
        owner = np.asarray(request.lidar_object, dtype=np.int64).reshape(-1)
        depth = np.asarray(request.lidar_depth_m, dtype=np.float64).reshape(-1)
        return cls(rows, cols, rows * request.width + cols, owner, depth)

    def in_window(
        self, r0: int, r1: int, c0: int, c1: int, occluder: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(indices of the points in rows [r0, r1) x columns [c0, c1) whose pixel the full-image bool ``occluder``
        does not cover, their rows - r0, their columns - c0). A point above or left of the window has a negative
        offset, which wraps to a huge one as uint64: one comparison per axis."""
        rw, cw = self.rows - r0, self.cols - c0
        at = ((rw.view(np.uint64) < r1 - r0) & (cw.view(np.uint64) < c1 - c0)).nonzero()[0]
        at = at[~occluder.reshape(-1)[self.flat[at]]]
        return at, rw[at], cw[at]
