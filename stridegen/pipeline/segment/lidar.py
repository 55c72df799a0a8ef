"""``lidar``: LiDAR points inside an object's 3D box, projected into the image, seed a GrabCut refinement.

Algorithm, per object (nearest first):

1. Evidence: the request's points owned by this object (``lidar_object == i``; ``make_request`` gives each point
   to the 3D box holding it, leaving out returns near the box bottom, which are mostly road). Points landing on a
   nearer object's hull or mask (the occlusion rule) are hidden from this camera and are not used as seeds.
2. GrabCut in mask mode on the crop around the projected box (the ``grabcut`` backend's crop, resampled to
   ``work_side`` pixels). Initial labels: outside the hull -> sure background; inside the hull, the *point region*
   (the convex hull of the visible points grown by ``grow_frac * image height`` pixels) -> probable foreground
   and the rest of the hull -> probable background (``hull_prior="probable"``; ``"sure"`` makes it sure
   background, which bounds the mask to the point region); discs of ``bg_radius_px`` around other points inside
   the hull (LiDAR saw something else there: ground, background or an occluder) -> probable background; discs of
   ``seed_radius_px`` around the object's visible points -> sure foreground; nearer hulls and masks -> sure
   background. OpenCV's RNG is seeded with ``seed`` before every call. The mask is kept inside the hull.
   The growth radius is a fraction of the image height because a spinning LiDAR's beams are a fixed angle apart,
   so the gap between two beams' rows is a fixed number of pixels for a given camera whatever the distance
   (32 beams 1.33 deg apart seen by a 1266 px focal length: about 29 px in a 900 px image).
3. Fewer than ``min_points`` visible points: the points cannot shape a mask, the mask is the hull (the geometric
   prior) and the quality below is low. No point at all: the hull with quality ``fallback_quality`` (0).
4. Morphology instead of GrabCut when the projected box is narrower than ``min_box_px`` or the crop has too few
   pixels of a label class for GrabCut's GMMs: the point region closed with the same disc, inside the hull.

Quality: ``inside_share * (1 - exp(-n_inside / points_scale))`` where ``n_inside`` is the number of the object's
projected points whose pixel lies in the final mask and ``inside_share = n_inside / n_projected``. The first
factor falls when the object's own points land on nearer objects or off the mask (occlusion, calibration or
timing errors); the second saturates with the amount of evidence (``points_scale`` = 10: 16 points give 0.80,
30 give 0.95). An empty mask scores 0.
"""

from __future__ import annotations

import cv2
import numpy as np

from stridegen.core.errors import ConfigError
from stridegen.core.polygons import convex_hull_2d
from stridegen.pipeline.segment.base import SegmentRequest, SegmentResult
from stridegen.pipeline.segment.grabcut import Crop, CropGrabCut
from stridegen.pipeline.segment.raster import MaskCrop, polygon_crop
from stridegen.pipeline.segment.request import segment_in_depth_order


def point_pixels(uv: np.ndarray, height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of the pixels holding image points [P, 2] (nearest pixel centre, clipped to the image)."""
    uv = np.asarray(uv, dtype=np.float64).reshape(-1, 2)
    # np.clip's arithmetic (numpy: minimum(maximum(x, lo), hi)) without its dispatch overhead; the int conversion
    # drops the one difference it could make, the sign of a zero
    cols = np.minimum(np.maximum(np.floor(uv[:, 0] + 0.5), 0), width - 1).astype(np.int64)
    rows = np.minimum(np.maximum(np.floor(uv[:, 1] + 0.5), 0), height - 1).astype(np.int64)
    return rows, cols


def disc_kernel(radius: float) -> np.ndarray:
    r = max(int(np.rint(radius)), 0)
    return cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * r + 1, 2 * r + 1))


def point_discs(uv: np.ndarray, radius: float, height: int, width: int) -> np.ndarray:
    """[H, W] bool: discs of ``radius`` pixels around image points [P, 2]."""
    marks: np.ndarray = np.zeros((height, width), dtype=np.uint8)
    if len(uv):
        rows, cols = point_pixels(uv, height, width)
        marks[rows, cols] = 1
    if radius >= 0.5:
        marks = cv2.dilate(marks, disc_kernel(radius))
    return marks.astype(bool)


class LidarSegmenter(CropGrabCut):
    """LiDAR-seeded GrabCut per object. Options (config keywords) as in ``__init__``."""

    name = "lidar"
    needs_lidar = True  # the build loads each frame's LiDAR sweep only for backends that need it

    def __init__(
        self,
        iterations: int = 3,
        work_side: int = 96,
        pad_frac: float = 0.15,
        pad_px: float = 4.0,
        seed_radius_px: float = 2.0,
        bg_radius_px: float = 1.0,
        min_points: int = 3,
        min_box_px: float = 6.0,
        grow_frac: float = 0.02,
        points_scale: float = 10.0,
        seed: int = 0,
        occlusion: str = "hull",
        fallback_quality: float = 0.0,
        hull_prior: str = "probable",
    ) -> None:
        if hull_prior not in ("probable", "sure"):
            raise ConfigError(f"hull_prior must be 'probable' or 'sure', got {hull_prior!r}")
        super().__init__(iterations, work_side, pad_frac, pad_px, seed, occlusion, fallback_quality)
        self.hull_prior = hull_prior
        self.seed_radius_px = float(seed_radius_px)
        self.bg_radius_px = float(bg_radius_px)
        self.min_points = int(min_points)
        self.min_box_px = float(min_box_px)
        self.grow_frac = float(grow_frac)
        self.points_scale = float(points_scale)

    def segment(self, request: SegmentRequest) -> SegmentResult:
        image = np.asarray(request.image_rgb, dtype=np.uint8)
        h, w = request.height, request.width
        uv = np.asarray(request.lidar_uv, dtype=np.float64).reshape(-1, 2)
        owner = np.asarray(request.lidar_object, dtype=np.int64).reshape(-1)
        rows, cols = point_pixels(uv, h, w)

        def one(i: int, hull: MaskCrop, occluder: np.ndarray) -> tuple[MaskCrop, float]:
            own = owner == i
            if not own.any():
                return hull, self.fallback_quality
            visible = own & ~occluder[rows, cols]
            box = np.asarray(request.box_xyxy[i], dtype=np.float64)
            tiny = min(box[2] - box[0], box[3] - box[1]) < self.min_box_px
            mask: MaskCrop | None = hull  # too few points to shape a mask: the geometric prior (low quality)
            if np.count_nonzero(visible) >= self.min_points:
                mask = None
                if not tiny:
                    others = (owner != i) & hull.at(rows, cols)
                    mask = self._grabcut(image, box, hull, occluder, uv[visible], uv[others])
                if mask is None:
                    mask = self._morphology(hull, uv[visible], h, w)
            assert mask is not None
            mask = mask.minus(occluder)
            n_inside = int(np.count_nonzero(mask.at(rows[own], cols[own])))
            share = n_inside / int(np.count_nonzero(own))
            return mask, share * (1.0 - np.exp(-n_inside / self.points_scale))

        return segment_in_depth_order(request, one, self.occlusion)

    def _grabcut(
        self,
        image: np.ndarray,
        box: np.ndarray,
        hull: MaskCrop,
        occluder: np.ndarray,
        seeds_uv: np.ndarray,
        others_uv: np.ndarray,
    ) -> MaskCrop | None:
        """GrabCut of one object seeded by its points; the mask on the hull's window, inside the hull."""

        def paint(crop: Crop, labels: np.ndarray) -> None:
            scale = crop.ws / (crop.c1 - crop.c0)
            hull_c = crop.mask(hull)
            labels[hull_c] = cv2.GC_PR_BGD if self.hull_prior == "probable" else cv2.GC_BGD
            labels[self._point_region(crop, seeds_uv, self._grow_px(occluder.shape[0]), scale) & hull_c] = cv2.GC_PR_FGD
            if len(others_uv):
                labels[point_discs(crop.to_crop(others_uv), self.bg_radius_px * scale, crop.hs, crop.ws) & hull_c] = (
                    cv2.GC_PR_BGD
                )
            labels[point_discs(crop.to_crop(seeds_uv), self.seed_radius_px * scale, crop.hs, crop.ws) & hull_c] = (
                cv2.GC_FGD
            )

        result = self._cut(image, box, occluder, paint)
        return None if result is None else result[0].clip_to(hull)

    def _grow_px(self, image_height: int) -> float:
        return max(self.seed_radius_px, self.grow_frac * image_height)

    def _point_region(self, crop: Crop, seeds_uv: np.ndarray, grow_px: float, scale: float) -> np.ndarray:
        """[hs, ws] crop raster of the seeds' convex hull grown by ``grow_px`` image pixels (the likely object)."""
        radius = grow_px * scale
        region = crop.polygon(convex_hull_2d(seeds_uv)).astype(np.uint8)
        region[point_discs(crop.to_crop(seeds_uv), 0.0, crop.hs, crop.ws)] = 1
        return cv2.dilate(region, disc_kernel(radius)).astype(bool)

    def _morphology(self, hull: MaskCrop, seeds_uv: np.ndarray, height: int, width: int) -> MaskCrop:
        """The point region (seeds' convex hull grown by the growth radius), closed, inside the hull.

        Computed on the hull's window grown by three kernel radii (the dilation, then the closing's dilation and
        erosion, each reach one radius) and clipped to the image, so every pixel of the hull's window gets the
        value a whole-image computation gives it (the image border is the window's border where they meet).
        """
        if len(seeds_uv) == 0:
            return MaskCrop(hull.r0, hull.c0, np.zeros_like(hull.pixels))
        kernel = disc_kernel(self._grow_px(height))
        reach = 3 * (kernel.shape[0] // 2) + 1
        r0, r1 = max(hull.r0 - reach, 0), min(hull.r1 + reach, height)
        c0, c1 = max(hull.c0 - reach, 0), min(hull.c1 + reach, width)
        region = polygon_crop(convex_hull_2d(seeds_uv), height, width).within((r0, r1, c0, c1)).astype(np.uint8)
        rows, cols = point_pixels(seeds_uv, height, width)
        inside = (rows >= r0) & (rows < r1) & (cols >= c0) & (cols < c1)
        region[rows[inside] - r0, cols[inside] - c0] = 1
        grown = cv2.dilate(region, kernel)
        closed = cv2.morphologyEx(grown, cv2.MORPH_CLOSE, kernel).astype(bool)
        return MaskCrop(r0, c0, closed).clip_to(hull)
