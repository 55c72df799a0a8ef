"""The segmenter protocol: one image and the projected 3D boxes of its objects in, one mask and quality each out.

Everything here is in image pixels of one undistorted camera image (x right, y down; pixel centres at integer
coordinates). A backend never reads files and never sees 3D: the build (``stridegen.pipeline.segment.request``)
projects boxes and LiDAR points into the image and hands over a ``SegmentRequest``.

Per-object arrays live in the object's crop (``stridegen.pipeline.segment.raster.MaskCrop``): the request
rasterises each hull once (``SegmentRequest.hull_crop``) for the segmenter and the visibility filter alike, and a
backend may return its masks as crops (``SegmentResult.of_crops``) or as full-image arrays.

The build hands over ``DeferredImageRequest``s: the image is decoded on the first read of ``image_rgb``, so a
backend that never looks at the pixels (``projected_box``, or ``lidar`` on an image whose objects have no points)
costs no decoding.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from stridegen.core.errors import GeometryError
from stridegen.pipeline.segment.raster import MaskCrop, inside_share, polygon_crops


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
    focal_px: float | None = None  # the camera's focal length in pixels (mean of fx and fy), when known
    _hull_crops: dict[int, MaskCrop] = field(default_factory=dict, init=False, repr=False, compare=False)
    _inside: dict[int, float] = field(default_factory=dict, init=False, repr=False, compare=False)
    _through: Sequence[np.ndarray] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def lidar_through(self) -> Sequence[np.ndarray] | None:
        """N arrays of point indices the LiDAR measured through each object's box (its ray entered the box and
        left it before the point); None when the sensor's position is unknown. ``make_request`` defers it
        (``request.LidarThrough``): object i's array is computed when a backend first reads it."""
        return self._through

    @lidar_through.setter
    def lidar_through(self, value: Sequence[np.ndarray] | None) -> None:
        self._through = value

    def know_inside_shares(self, shares: list[float]) -> None:
        """Give ``inside_share`` of every object where the caller computed it on the same polygons and image
        rectangle (``make_request``, which clips the hulls anyway)."""
        if len(shares) != len(self.hull_uv):
            raise GeometryError(f"{len(shares)} inside shares for {len(self.hull_uv)} hulls")
        self._inside.update(enumerate(shares))

    def know_hull_crops(self, crops: Sequence[MaskCrop]) -> None:
        """Give every object's ``hull_crop`` where the caller rasterised the same hulls for this image's size
        (``request.frame_requests``: a frame's images in one ``polygon_crops`` batch, crop for crop the same)."""
        if len(crops) != len(self.hull_uv):
            raise GeometryError(f"{len(crops)} hull crops for {len(self.hull_uv)} hulls")
        self._hull_crops.update(enumerate(crops))

    def hull_crop(self, i: int) -> MaskCrop:
        """Object i's hull rasterised (pixel-centre rule) on its pixel bounding window; computed once per request,
        every object's at the first call (``polygon_crops``: one batch)."""
        crop = self._hull_crops.get(i)
        if crop is None:
            n = len(self.hull_uv)
            self._hull_crops.update(zip(range(n), polygon_crops(self.hull_uv, self.height, self.width), strict=True))
            crop = self._hull_crops[i]
        return crop

    def inside_share(self, i: int) -> float:
        """area(hull_i ∩ image) / area(hull_i) on the polygons (``raster.inside_share``); computed once."""
        share = self._inside.get(i)
        if share is None:
            share = self._inside[i] = inside_share(self.hull_uv[i], self.width, self.height)
        return share

    def work_image(self) -> np.ndarray:
        """The image's pixels at the scale the request's maker chose for backends that read pixels at a reduced
        scale: [h, w, 3] uint8 covering the whole image, ``h / height`` and ``w / width`` its scale (1 here: the
        full image; a ``DeferredImageRequest`` may give a DCT-scaled decode, docs/scale.md#decoded-scale)."""
        return self.image_rgb

    @property
    def height(self) -> int:
        return int(self.image_rgb.shape[0])

    @property
    def width(self) -> int:
        return int(self.image_rgb.shape[1])

    def __len__(self) -> int:
        return int(np.asarray(self.box_xyxy).shape[0])


@dataclass(frozen=True)
class LazyImage:
    """An image known by its size before it is decoded: ``load()`` gives its [height, width, 3] uint8 RGB pixels
    (the size e.g. from the file's header: ``stridegen.formats.images.image_size``)."""

    height: int
    width: int
    load: Callable[[], np.ndarray]
    # the pixels reduced (e.g. a JPEG decoded at 1/2 by DCT scaling) for ``SegmentRequest.work_image``; None: full
    load_reduced: Callable[[], np.ndarray] | None = None


class DeferredImageRequest(SegmentRequest):
    """A ``SegmentRequest`` whose image is decoded on the first read of ``image_rgb`` (``image.load()``, once).
    The decoded image must have the announced size (GeometryError otherwise: the request's geometry was made for
    that size)."""

    _image: np.ndarray | None

    def __init__(self, image: LazyImage, **fields) -> None:
        self._size = (int(image.height), int(image.width))
        self._load: Callable[[], np.ndarray] | None = image.load
        self._load_reduced = image.load_reduced
        self._reduced: np.ndarray | None = None
        super().__init__(image_rgb=None, **fields)  # type: ignore[arg-type]  # the setter: not loaded yet

    @property
    def image_rgb(self) -> np.ndarray:  # [H, W, 3] uint8
        image = self._image
        if image is None:
            assert self._load is not None
            image = np.asarray(self._load())
            if tuple(image.shape[:2]) != self._size:
                raise GeometryError(f"decoded image is {image.shape[:2]}, the request was made for {self._size}")
            self._image, self._load = image, None
        return image

    @image_rgb.setter
    def image_rgb(self, value: np.ndarray | None) -> None:
        self._image = value

    def work_image(self) -> np.ndarray:
        """The full image where it is decoded already or no reduced decode was offered; else the reduced decode
        (``LazyImage.load_reduced``, once), which must cover the whole image (GeometryError otherwise)."""
        if self._image is not None or self._load_reduced is None:
            return self.image_rgb
        if self._reduced is None:
            reduced = np.asarray(self._load_reduced())
            h, w = self._size
            if not (0 < reduced.shape[0] <= h and 0 < reduced.shape[1] <= w):
                raise GeometryError(f"reduced image is {reduced.shape[:2]}, the request was made for {self._size}")
            self._reduced = reduced
        return self._reduced

    @property
    def loaded(self) -> bool:
        """Whether the image has been decoded."""
        return self._image is not None

    @property
    def height(self) -> int:
        return self._size[0]

    @property
    def width(self) -> int:
        return self._size[1]


class SegmentResult:
    """Masks and qualities of N objects (request order), given as full-image masks ``SegmentResult(masks,
    quality)`` or as crops ``SegmentResult.of_crops(crops, quality, height, width)``; the other view is built on
    first use (``masks`` [N, H, W] bool, ``crops`` N ``MaskCrop``). ``quality`` [N] float64 in [0, 1] is the
    backend's own confidence (documented per backend)."""

    def __init__(self, masks: np.ndarray, quality: np.ndarray) -> None:
        self._masks: np.ndarray | None = np.asarray(masks, dtype=bool)
        self._crops: list[MaskCrop] | None = None
        self._size = (int(self._masks.shape[1]), int(self._masks.shape[2])) if self._masks.ndim == 3 else (0, 0)
        self.quality = quality

    @classmethod
    def of_crops(cls, crops: Sequence[MaskCrop], quality: np.ndarray, height: int, width: int) -> SegmentResult:
        """A result held as one crop per object of a ``height`` x ``width`` image."""
        result = cls.__new__(cls)
        result._masks, result._crops, result._size = None, list(crops), (int(height), int(width))
        result.quality = quality
        return result

    @property
    def masks(self) -> np.ndarray:
        """[N, H, W] bool full-image masks."""
        if self._masks is None:
            assert self._crops is not None
            out = np.zeros((len(self._crops), *self._size), dtype=bool)
            for i, crop in enumerate(self._crops):
                out[i][crop.slices] = crop.pixels
            self._masks = out
        return self._masks

    @property
    def crops(self) -> list[MaskCrop]:
        """N masks as crops (whole-image windows when the backend gave full masks)."""
        if self._crops is None:
            assert self._masks is not None
            self._crops = [MaskCrop.of_full(m) for m in self._masks]
        return self._crops


class Segmenter(Protocol):
    name: str

    def segment(self, request: SegmentRequest) -> SegmentResult:
        """Masks for every object of the request, in request order (an empty request gives [0, H, W])."""
        ...
