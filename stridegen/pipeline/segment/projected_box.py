"""``projected_box``: the baseline mask is the projected 3D box's convex hull, rasterised in the image.

Algorithm: rasterise each object's hull (pixel-centre rule of ``request.py``), then remove the pixels of nearer
objects' hulls (the occlusion rule). No image evidence is used, so the mask is exact only for box-shaped objects
(the synthetic renderer's cuboids) and over-covers real ones.

Quality: the share of the hull's area that lies inside the image, area(hull ∩ image) / area(hull), computed on
the polygons. The baseline has no evidence of its own about the silhouette; what it does know is how much of the
object's outline the image can show at all, so a truncated object scores low. An empty mask scores 0.
"""

from __future__ import annotations

import numpy as np

from stridegen.pipeline.segment.base import SegmentRequest, SegmentResult
from stridegen.pipeline.segment.raster import MaskCrop
from stridegen.pipeline.segment.request import check_occlusion_mode, segment_in_depth_order


class ProjectedBoxSegmenter:
    """Filled projected hull per object. Options: ``occlusion`` ("hull" | "mask" | "none", default "hull")."""

    name = "projected_box"
    needs_lidar = False
    # Its masks are the boxes' hulls, not the objects' outlines: the visibility filter's image rule, which asks
    # whether a mask's outline sits on the image's edges, has nothing to judge (docs/visibility.md#image-agreement).
    box_shaped_masks = True

    def __init__(self, occlusion: str = "hull") -> None:
        self.occlusion = check_occlusion_mode(occlusion)

    def segment(self, request: SegmentRequest) -> SegmentResult:
        def one(i: int, hull: MaskCrop, occluder: np.ndarray) -> tuple[MaskCrop, float]:
            return hull, request.inside_share(i)

        return segment_in_depth_order(request, one, self.occlusion)
