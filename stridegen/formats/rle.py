"""Masks as COCO run-length encoding (pycocotools): the compressed ``counts`` string of a column-major RLE.

This is the ``segmentation`` form of COCO annotation files (``{"size": [h, w], "counts": "..."}``), so masks can
be handed to any COCO tool. The shard stores only ``counts``; the size is the camera's.

A mask known on a window of its image (a crop: rows r0.., columns c0.., False elsewhere) is encoded without
building the [H, W] array (``encode_rle_crops``): the runs are found in the crop and moved to full-image
column-major positions, and pycocotools compresses them, so the string is the one ``encode_rle`` gives the full
mask.
"""

from __future__ import annotations

from collections.abc import Sequence

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


def rle_counts_crop(pixels: np.ndarray, r0: int, c0: int, height: int, width: int) -> np.ndarray:
    """Uncompressed COCO RLE counts (int64) of the [height, width] mask that is ``pixels`` [h, w] bool at rows
    r0..r0+h-1, columns c0..c0+w-1 and False elsewhere.

    COCO runs alternate 0s and 1s over the image in column-major order, starting with a (possibly empty) run of 0s
    and ending with the last run, whichever value it has (pycocotools ``rleEncode``). The crop is padded with a
    row of 0s above and below, so a run of 1s starts and ends within its column; the vertical value changes are
    found row by row (contiguous memory: no transposed copy of the crop), moved to full-image column-major
    positions and sorted, which puts them in column-major order: each column's run starts and ends alternate.
    Runs of adjacent columns that meet in the full image (a crop as tall as the image) are joined.
    """
    m = np.asarray(pixels, dtype=bool)
    if m.ndim != 2:
        raise ValueError(f"a crop must be 2-D [h, w], got shape {m.shape}")
    h, w = m.shape
    if not (0 <= r0 and r0 + h <= height and 0 <= c0 and c0 + w <= width):
        raise ValueError(f"crop [{r0}:{r0 + h}, {c0}:{c0 + w}] is not inside a {height} x {width} image")
    height = int(height)
    total = height * int(width)
    padded = np.zeros((h + 2, w), dtype=bool)  # the crop between a row of 0s above and one below
    padded[1:-1] = m
    # (row, col) where crop pixel (row, col) differs from the one above it (row h: below the crop's last row)
    edges = np.flatnonzero(padded[1:] != padded[:-1])
    if edges.size == 0:
        return np.array([total], dtype=np.int64)
    row, col = np.divmod(edges, w)
    full = (c0 + col) * height + (r0 + row)  # column-major index in the full image: the first 1, the first 0 after
    full.sort()  # distinct but for a column's end at the image's bottom and the next one's start at the top
    s, e = full[0::2], full[1::2]
    joined = s[1:] == e[:-1]  # a run ending at the bottom of a column that the next column's run continues
    if joined.any():
        s = s[np.concatenate([[True], ~joined])]
        e = e[np.concatenate([~joined, [True]])]
    bounds = np.empty(2 * s.size + 2, dtype=np.int64)  # 0, s0, e0, s1, e1, ..., total
    bounds[0], bounds[-1] = 0, total
    bounds[1:-1:2], bounds[2:-1:2] = s, e
    counts = np.diff(bounds)
    return counts[:-1] if counts[-1] == 0 else counts  # no trailing empty run of 0s


def encode_rle_crops(crops: Sequence[tuple[np.ndarray, int, int]], height: int, width: int) -> list[str]:
    """Compressed COCO RLE counts of N masks of a [height, width] image, each given as (pixels [h, w] bool, r0,
    c0) (``rle_counts_crop``); the same strings as ``encode_rle`` of the full masks (one pycocotools call)."""
    from pycocotools import mask as mask_utils

    if not crops:
        return []
    size = [int(height), int(width)]
    objs = [{"size": size, "counts": rle_counts_crop(px, r0, c0, height, width)} for px, r0, c0 in crops]
    return [e["counts"].decode("ascii") for e in mask_utils.frPyObjects(objs, size[0], size[1])]


def decode_rle(counts: str, height: int, width: int) -> np.ndarray:
    """Compressed COCO RLE counts and the image size -> [H, W] bool."""
    from pycocotools import mask as mask_utils

    rle = {"size": [int(height), int(width)], "counts": counts.encode("ascii")}
    return mask_utils.decode(rle).astype(bool)


def coco_segmentation(counts: str, height: int, width: int) -> dict[str, object]:
    """The COCO annotation ``segmentation`` object of a stored mask."""
    return {"size": [int(height), int(width)], "counts": counts}
