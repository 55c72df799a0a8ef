"""The segmenter protocol: one image and the projected 3D boxes of its objects in, one mask and quality each out.

Everything here is in image pixels of one undistorted camera image (x right, y down; pixel centres at integer
coordinates). A backend never reads files and never sees 3D: the build (``stridegen.pipeline.segment.request``)
projects boxes and LiDAR points into the image and hands over a ``SegmentRequest``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np


@dataclass
class SegmentRequest:
    """Objects of one image (N of them) and optional LiDAR evidence (P points)."""

    image_rgb: np.ndarray  # [H, W, 3] uint8
    box_xyxy: np.ndarray  # [N, 4] float64, the projected 3D box's 2D bounding box clipped to the image
    hull_uv: list[np.ndarray]  # N arrays [V, 2] float64: convex hull of the projected (near-clipped) box corners;
    # may extend beyond the image
    depth_m: np.ndarray  # [N] float64, camera-frame z of the box centre (nearer objects occlude farther ones)
    lidar_uv: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))  # [P, 2] float64 projected points
    lidar_depth_m: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [P] camera-frame z of the points
    lidar_object: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # [P] object index
    # whose 3D box holds the point, -1 for none

    @property
    def height(self) -> int:
        return int(self.image_rgb.shape[0])

    @property
    def width(self) -> int:
        return int(self.image_rgb.shape[1])

    def __len__(self) -> int:
        return int(np.asarray(self.box_xyxy).shape[0])


@dataclass
class SegmentResult:
    masks: np.ndarray  # [N, H, W] bool
    quality: np.ndarray  # [N] float64 in [0, 1] (the backend's own confidence; documented per backend)


class Segmenter(Protocol):
    name: str

    def segment(self, request: SegmentRequest) -> SegmentResult:
        """Masks for every object of the request, in request order (an empty request gives [0, H, W])."""
        ...
