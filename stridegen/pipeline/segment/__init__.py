"""Segmenter stage: one mask and one quality score per object and camera image.

Backends register under a name (``projected_box``, ``grabcut``, ``lidar``, ``sam2``; docs/segmenters.md) and are
made with ``make_segmenter(name, **options)``; heavy dependencies (torch, sam2) are imported only by the backend
that needs them. ``make_request`` turns 3D boxes (global frame) into the image-space ``SegmentRequest`` every
backend takes; masks are stored as COCO RLE (``encode_rle``).
"""

from stridegen.formats.rle import coco_segmentation, decode_rle, encode_rle, encode_rle_batch
from stridegen.pipeline.segment.base import Segmenter, SegmentRequest, SegmentResult
from stridegen.pipeline.segment.registry import SEGMENTERS, make_segmenter, register_segmenter
from stridegen.pipeline.segment.request import hull_masks, make_request

__all__ = [
    "SEGMENTERS",
    "SegmentRequest",
    "SegmentResult",
    "Segmenter",
    "coco_segmentation",
    "decode_rle",
    "encode_rle",
    "encode_rle_batch",
    "hull_masks",
    "make_request",
    "make_segmenter",
    "register_segmenter",
]
