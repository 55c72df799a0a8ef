"""Building blocks of small hand-built shard datasets (scene records with masks, regions and QA) for tests.

Imported as ``tests.shard_fixtures`` (pytest puts the repository root on ``sys.path``). Frames are 0.5 s apart
with identity poses; images and masks are in pixels of the camera's [height, width].
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stridegen.formats.rle import encode_rle
from stridegen.pipeline.visibility import mask_boxes
from stridegen.run.config import BuildConfig, config_hash
from stridegen.shards.manifest import build_manifest, write_manifest
from stridegen.shards.schema import (
    AttributesTable,
    CamerasTable,
    FramesTable,
    ImagesTable,
    KeyframesTable,
    MasksTable,
    SceneRecord,
    SkippedKeyframesTable,
    bytes_array,
    str_array,
)
from stridegen.shards.writer import write_shard

FRAME_STEP_US = 500_000  # frames 0.5 s apart
WINDOW_OFFSETS_S = (-1.5, -1.0, -0.5, 0.0)  # a keyframe's window: itself and the three frames before it
HAND_BUILT_SOURCE = {"root": "/hand-built", "format": "nuscenes", "version": "v-test"}  # the manifest's "source"

MaskRow = tuple[int, int, np.ndarray]  # (image row, track index, [H, W] bool mask)


def rect_mask(height: int, width: int, x0: int, y0: int, x1: int, y1: int) -> np.ndarray:
    """[height, width] bool, True on the pixel rectangle [y0, y1) x [x0, x1)."""
    mask = np.zeros((height, width), dtype=bool)
    mask[y0:y1, x0:x1] = True
    return mask


def frames_table(tokens: list[str]) -> FramesTable:
    """One frame per token, ``FRAME_STEP_US`` apart from t = 0, every ego pose the identity."""
    n = len(tokens)
    return FramesTable(str_array(tokens), np.arange(n, dtype=np.int64) * FRAME_STEP_US, np.tile(np.eye(4), (n, 1, 1)))


def cameras_table(
    channels: list[str] | tuple[str, ...], intrinsic: np.ndarray, width: int, height: int
) -> CamerasTable:
    """Cameras of one size sharing ``intrinsic`` (3x3, pixels), every camera-to-ego transform the identity."""
    n = len(channels)
    return CamerasTable(
        str_array(channels),
        np.tile(intrinsic, (n, 1, 1)),
        np.tile(np.eye(4), (n, 1, 1)),
        np.full(n, width, np.int32),
        np.full(n, height, np.int32),
    )


def images_table(
    rows: list[tuple[int, int]], data: list[bytes], token_prefix: str = "", timestamp_step_us: int = 1
) -> ImagesTable:
    """One image per (frame index, channel index) row with its file bytes ``data``; sample tokens
    ``<token_prefix>sd<i>``, timestamps ``i * timestamp_step_us``, identity sensor poses."""
    n = len(rows)
    return ImagesTable(
        np.array([r[0] for r in rows], np.int32),
        np.array([r[1] for r in rows], np.int32),
        str_array(f"{token_prefix}sd{i}" for i in range(n)),
        np.arange(n, dtype=np.int64) * timestamp_step_us,
        np.tile(np.eye(4), (n, 1, 1)),
        bytes_array(data),
    )


def masks_table(
    mask_rows: list[MaskRow], depth_m: np.ndarray | float, quality: float, box_iou: float, coverage: float
) -> MasksTable:
    """The masks of ``mask_rows`` (RLE, area and box from the mask itself; the projected box is the mask's box),
    the given depth (metres) and scores, every visibility rule passed."""
    all_masks = np.stack([m for _, _, m in mask_rows])
    boxes, area = mask_boxes(all_masks)
    n = len(mask_rows)

    def column(value: np.ndarray | float) -> np.ndarray:
        return np.broadcast_to(np.asarray(value, dtype=np.float64), (n,)).copy()

    return MasksTable(
        np.array([r[0] for r in mask_rows], np.int32),
        np.array([r[1] for r in mask_rows], np.int32),
        str_array(encode_rle(m) for m in all_masks),
        area,
        boxes,
        boxes.copy(),
        column(depth_m),
        column(quality),
        column(box_iou),
        column(coverage),
        *(np.ones(n, bool) for _ in range(4)),
    )


def keyframes_table(frame_index: int) -> KeyframesTable:
    """One keyframe at ``frame_index`` whose window (``WINDOW_OFFSETS_S``) holds it and the three frames before."""
    window = np.arange(frame_index - len(WINDOW_OFFSETS_S) + 1, frame_index + 1, dtype=np.int32)
    return KeyframesTable(
        np.array([frame_index], np.int32),
        np.array([frame_index * FRAME_STEP_US / 1e6]),
        window[None],
        np.array(WINDOW_OFFSETS_S),
    )


def no_skipped_keyframes() -> SkippedKeyframesTable:
    return SkippedKeyframesTable(np.zeros(0), str_array([]))


def still_attributes(n_tracks: int, n_frames: int) -> AttributesTable:
    """Zero track and ego velocities (m/s)."""
    return AttributesTable(np.zeros((n_tracks, n_frames, 3)), np.zeros((n_frames, 3)))


def write_dataset(root: Path, records: list[SceneRecord]) -> Path:
    """Shards of ``records`` under the default build config and their manifest (source ``HAND_BUILT_SOURCE``)."""
    cfg = BuildConfig()
    infos = [write_shard(r, root, config_hash(cfg)) for r in records]
    write_manifest(root, build_manifest(cfg, dict(HAND_BUILT_SOURCE), infos))
    return root
