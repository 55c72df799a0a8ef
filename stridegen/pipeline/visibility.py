"""Visibility filter: which segmented objects are clearly visible in their image (STRIDE-QA sec. 4.2, rules 1-3).

The paper keeps an object in an image when box IoU > 0.3, coverage > 0.8 and mask quality > 0.8 but does not
define the first two. Our definitions (docs/visibility.md), all in pixels of one undistorted image:

- **box IoU**: IoU of the mask's bounding box with the projected 3D box's 2D box clipped to the image
  (``SegmentRequest.box_xyxy``). Low when the mask found something else than what the box outlines (or nothing).
  The mask box spans whole pixels: pixel (i, j) covers [i - 0.5, i + 0.5] x [j - 0.5, j + 0.5] (pixel centres at
  integer coordinates, as OpenCV draws). An empty mask has IoU 0.
- **coverage**: the share of the object's projected silhouette (the convex hull of its projected box, which may
  reach beyond the image) that is inside the image *and* not hidden behind a nearer object's silhouette:
  ``coverage = inside * unoccluded`` with ``inside = area(hull ∩ image) / area(hull)`` computed exactly on
  polygons and ``unoccluded`` the share of the hull's in-image pixels not covered by the hull of any object of the
  request whose box centre is nearer to the camera (smaller camera-frame z). Objects the detector missed cannot
  occlude.
- **mask quality**: the segmenter's own score (``SegmentResult.quality``; SAM 2's predicted IoU, or the offline
  backends' documented scores).
- **image agreement** (stridegen's own rule, not the paper's): whether the mask's outline sits on the image's edges
  where it is rather than somewhere close by (``stridegen.pipeline.segment.edge_alignment``). The three rules above
  measure the mask against the boxes and LiDAR points that made it, so a mask made by points of a moving object
  taken at another time than the image (or any other shift of boxes and points together) passes them all; this
  one asks the image alone. NaN (the image cannot tell: flat, tiny, or no outline left) passes.

Each rule has its own pass flag, so the manifest can report how many candidates each rule removed.

The minimum region size (``VisibilityThresholds.min_region_area_frac``) is applied where regions are assigned
(stridegen.pipeline.segment.stage.assign_regions), not here: it decides which visible objects QA asks about.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from stridegen.core.iou import iou_2d_rowwise
from stridegen.pipeline.segment.base import SegmentRequest, SegmentResult
from stridegen.pipeline.segment.edge_alignment import EdgeAlignment
from stridegen.pipeline.segment.raster import MaskCrop, crop_boxes, inside_share

__all__ = [
    "Visibility",
    "VisibilityThresholds",
    "image_agreement",
    "inside_share",
    "mask_boxes",
    "measure_visibility",
    "min_region_area_px",
    "unoccluded_share",
    "unoccluded_share_crops",
]


class VisibilityThresholds(BaseModel):
    """Strict lower bounds of the three rules (STRIDE-QA sec. 4.2 values by default) and the minimum region size
    (docs/visibility.md). The build config's ``visibility`` section.

    ``min_region_area_frac`` is not a visibility rule: it does not change ``visible``. A visible mask of a keyframe
    image becomes a region only when its area is at least this fraction of the image area (``>=``, see
    ``min_region_area_px``); 0 disables it. The default 1e-4 is 144 px (12 x 12) of a 1600 x 900 image.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    min_box_iou: float = Field(0.3, ge=0.0, le=1.0)
    min_coverage: float = Field(0.8, ge=0.0, le=1.0)
    min_quality: float = Field(0.8, ge=0.0, le=1.0)
    # stridegen's image-evidence rule (docs/visibility.md#image-agreement): a mask passes when its image agreement
    # is at least this (``>=``) or NaN; 0 switches the rule off (and skips its measurement).
    min_image_agreement: float = Field(0.5, ge=0.0, le=1.0)
    min_region_area_frac: float = Field(1e-4, ge=0.0, le=1.0)


def min_region_area_px(width, height, frac: float) -> np.ndarray:
    """The smallest mask area in pixels (int64, per image size) that reaches ``frac`` of a ``width`` x ``height``
    image: ``ceil(frac * width * height)``, so that ``area_px >= min_region_area_px`` is the rule exactly. The
    product is rounded to 1e-9 px first: a fraction such as 1e-4 is not exact in binary and must not turn 144.0
    into 145."""
    area = np.asarray(width, dtype=np.float64) * np.asarray(height, dtype=np.float64)
    return np.ceil(np.round(float(frac) * area, 9)).astype(np.int64)


@dataclass
class Visibility:
    """Per-object measurements and rule outcomes, arrays of length N (request order)."""

    area_px: np.ndarray  # int64
    mask_box_xyxy: np.ndarray  # [N, 4] float64, NaN rows for empty masks
    box_iou: np.ndarray
    coverage: np.ndarray
    quality: np.ndarray
    pass_box_iou: np.ndarray
    pass_coverage: np.ndarray
    pass_quality: np.ndarray
    image_agreement: np.ndarray  # [N] float64 in (0, 1], NaN where the image cannot tell or the rule is off
    pass_image: np.ndarray

    @property
    def visible(self) -> np.ndarray:
        return self.pass_box_iou & self.pass_coverage & self.pass_quality & self.pass_image


def mask_boxes(masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """([N, 4] pixel-edge bounding boxes, NaN for empty masks; [N] pixel counts) of [N, H, W] bool masks."""
    return crop_boxes([MaskCrop.of_full(m) for m in np.asarray(masks, dtype=bool)])


def unoccluded_share_crops(hulls: list[MaskCrop], depth_m: np.ndarray, height: int, width: int) -> np.ndarray:
    """[N] share of each hull's in-image pixels (raster crops of a ``height`` x ``width`` image) not inside a
    nearer object's hull (smaller ``depth_m``; ties by index, the lower counting as nearer); 0 for an empty hull."""
    n = len(hulls)
    out = np.zeros(n)
    drawn = [h for h in hulls if h.pixels.size]
    if not drawn:
        return out
    # the union of the hulls seen so far (nearest first), on the window that holds every hull (within the image)
    r0, c0 = min(h.r0 for h in drawn), min(h.c0 for h in drawn)
    nearer = np.zeros((max(h.r1 for h in drawn) - r0, max(h.c1 for h in drawn) - c0), dtype=bool)
    for i in np.argsort(np.asarray(depth_m, dtype=np.float64), kind="stable").tolist():
        own = hulls[i]
        count = own.area
        if count:
            on = (slice(own.r0 - r0, own.r1 - r0), slice(own.c0 - c0, own.c1 - c0))
            out[i] = 1.0 - np.count_nonzero(own.pixels & nearer[on]) / count
            nearer[on] |= own.pixels
    return out


def unoccluded_share(hull_pixels: np.ndarray, depth_m: np.ndarray) -> np.ndarray:
    """[N] share of each hull's in-image pixels not inside a nearer object's hull (``hull_pixels`` [N, H, W])."""
    hull_pixels = np.asarray(hull_pixels, dtype=bool)
    if hull_pixels.shape[0] == 0:
        return np.zeros(0)
    crops = [MaskCrop.of_full(h) for h in hull_pixels]
    return unoccluded_share_crops(crops, depth_m, hull_pixels.shape[1], hull_pixels.shape[2])


def measure_visibility(
    request: SegmentRequest,
    result: SegmentResult,
    thresholds: VisibilityThresholds | None = None,
    image_rule: bool = True,
) -> Visibility:
    """Measure the rules for every object of one segmented image (on the masks' and hulls' crops; the hull
    rasters are the request's, shared with the segmenter). ``image_rule=False`` (a backend whose masks are box
    hulls, ``box_shaped_masks``) leaves the image rule unmeasured (NaN, passing)."""
    t = thresholds or VisibilityThresholds()
    n = len(request)
    quality = np.asarray(result.quality, dtype=np.float64).reshape(n)
    box, area = crop_boxes(result.crops)
    projected = np.asarray(request.box_xyxy, dtype=np.float64).reshape(n, 4)
    box_iou = np.zeros(n)
    nonempty = area > 0
    if nonempty.any():
        box_iou[nonempty] = iou_2d_rowwise(box[nonempty], projected[nonempty])
    inside = np.array([request.inside_share(i) for i in range(n)], dtype=np.float64)
    hulls = [request.hull_crop(i) for i in range(n)]
    coverage = inside * unoccluded_share_crops(hulls, request.depth_m, request.height, request.width)
    agreement = np.full(n, np.nan)
    passes = (box_iou > t.min_box_iou) & (coverage > t.min_coverage) & (quality > t.min_quality)
    if image_rule and t.min_image_agreement > 0 and passes.any():  # a mask failing another rule is not visible anyway
        agreement = image_agreement(request, result, only=passes, boxes=box)
    return Visibility(
        area_px=area,
        mask_box_xyxy=box,
        box_iou=box_iou,
        coverage=coverage,
        quality=quality,
        pass_box_iou=box_iou > t.min_box_iou,  # (the same comparisons as ``passes`` above)
        pass_coverage=coverage > t.min_coverage,
        pass_quality=quality > t.min_quality,
        image_agreement=agreement,
        pass_image=~(agreement < t.min_image_agreement),  # NaN: no evidence either way, kept
    )


def image_agreement(
    request: SegmentRequest,
    result: SegmentResult,
    alignment: EdgeAlignment | None = None,
    only: np.ndarray | None = None,
    boxes: np.ndarray | None = None,
) -> np.ndarray:
    """[N] image agreement of each mask (``EdgeAlignment.score``, NaN for an empty mask or where the image cannot
    tell), of the masks ``only`` [N] bool selects (NaN for the others; None: all). Outline pixels on nearer
    objects (their hulls and masks: nearer by ``depth_m``, ties by index as in the occlusion rule) are left out:
    the mask was cut there, and the edge there is the occluder's. Reads the request's ``work_image`` (decoding a
    deferred one; at the reduced scale the segmenter read, docs/scale.md#decoded-scale). ``boxes`` [N, 4], where
    given, must be the masks' boxes as ``crop_boxes`` gives them (``measure_visibility`` has them already)."""
    alignment = alignment or EdgeAlignment()
    n = len(request)
    out = np.full(n, np.nan)
    crops = result.crops
    wanted = np.ones(n, dtype=bool) if only is None else np.asarray(only, dtype=bool).reshape(n)
    wanted &= np.array([c.any() for c in crops], dtype=bool)
    if not wanted.any():
        return out
    image = np.asarray(request.work_image(), dtype=np.uint8)  # reduced where the segmenter read it reduced
    size = (request.height, request.width)
    nearer = np.zeros(size, dtype=bool)
    order = np.argsort(np.asarray(request.depth_m, dtype=np.float64), kind="stable").tolist()
    last = max(k for k, i in enumerate(order) if wanted[i])  # nothing is measured behind the farthest wanted mask
    for i in order[: last + 1]:
        if wanted[i]:
            out[i] = alignment.score(image, crops[i], nearer, size, None if boxes is None else boxes[i])[0]
        request.hull_crop(i).paint(nearer)
        crops[i].paint(nearer)
    return out
