"""Masks as COCO run-length encoding (pycocotools): the compressed ``counts`` string of a column-major RLE.

This is the ``segmentation`` form of COCO annotation files (``{"size": [h, w], "counts": "..."}``), so masks can
be handed to any COCO tool. The shard stores only ``counts``; the size is the camera's.
"""

from __future__ import annotations

import numpy as np


def encode_rle(mask: np.ndarray) -> str:
    """[H, W] bool -> compressed COCO RLE counts (ASCII)."""
    from pycocotools import mask as mask_utils

    m = np.asfortranarray(np.asarray(mask, dtype=np.uint8))
    if m.ndim != 2:
        raise ValueError(f"a mask must be 2-D [H, W], got shape {m.shape}")
    return mask_utils.encode(m)["counts"].decode("ascii")


def encode_rle_batch(masks: np.ndarray) -> list[str]:
    """[N, H, W] bool -> N compressed counts strings (one pycocotools call)."""
    from pycocotools import mask as mask_utils

    masks = np.asarray(masks, dtype=np.uint8)
    if masks.ndim != 3:
        raise ValueError(f"masks must be 3-D [N, H, W], got shape {masks.shape}")
    if masks.shape[0] == 0:
        return []
    encoded = mask_utils.encode(np.asfortranarray(masks.transpose(1, 2, 0)))
    return [e["counts"].decode("ascii") for e in encoded]


def decode_rle(counts: str, height: int, width: int) -> np.ndarray:
    """Compressed COCO RLE counts and the image size -> [H, W] bool."""
    from pycocotools import mask as mask_utils

    rle = {"size": [int(height), int(width)], "counts": counts.encode("ascii")}
    return mask_utils.decode(rle).astype(bool)


def coco_segmentation(counts: str, height: int, width: int) -> dict[str, object]:
    """The COCO annotation ``segmentation`` object of a stored mask."""
    return {"size": [int(height), int(width)], "counts": counts}
