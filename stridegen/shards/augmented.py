"""A stored scene as a robustness split stores it: its record with corrupted images (``stridegen.augment.scene``)
and the tables that follow from them. Each table is copied from the source except:

- **images**: the corrupted bytes (``corrupt_images``: image corruptions, black JPEGs of dropped cameras).
- **masks** of corruptions that move pixels (``Corruption.moves_pixels``: lens distortion, elastic): each mask of
  an image is decoded, sampled through the very ``PixelMap`` the image went through (``warp_masks``), re-encoded,
  and its ``area_px`` and ``mask_box_xyxy`` recomputed. The other mask columns (projected box, visibility
  measurements and flags) stay those of the clean image: the visibility filter and the QA were decided on it.
- **qa**: of camera-set corruptions, every QA row that shows a dropped image gets ``visual_evidence = False``.
- an extra table ``augmentation`` with ``image_dropped`` ([I] bool) records which images were blacked out.

Everything else (frames, cameras, keyframes, detections, tracks, attributes, ground truth, regions, the QA text and
ground truth) is identical to the source. ``process_split_scene`` reads a scene of the source dataset, corrupts it
and writes its shard into a sub-dataset (what a worker of ``stridegen.jobs.augment`` does).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.augment.scene import SceneCorruption, corrupt_images, draw_dropped, warp_masks
from stridegen.formats.rle import encode_rle
from stridegen.pipeline.visibility import mask_boxes
from stridegen.shards.reader import open_dataset
from stridegen.shards.scenarios import scenarios_table
from stridegen.shards.schema import SceneRecord, ShardError, bytes_array
from stridegen.shards.writer import ShardInfo, write_shard

AUGMENTATION_TABLE = "augmentation"


def dropped_images(record: SceneRecord, spec: SceneCorruption) -> np.ndarray:
    """[I] bool: the images a camera-set corruption removes (all False for image corruptions)."""
    images = record.images
    return draw_dropped(
        spec,
        record.meta.name,
        [str(c) for c in record.cameras.channel],
        np.asarray(images.channel_index, dtype=np.int64),
        np.asarray(images.frame_index, dtype=np.int64),
    )


def qa_visual_evidence(record: SceneRecord, dropped: np.ndarray) -> np.ndarray | None:
    """The QA table's ``visual_evidence`` once ``dropped`` images are gone: False for every question that shows
    at least one dropped image (its ``frame_indices`` of its camera, or its keyframe image when it has none)."""
    qa = record.qa
    if qa is None:
        return None
    evidence = np.asarray(qa.visual_evidence, dtype=bool).copy()
    if not dropped.any():
        return evidence
    gone = {
        (int(f), int(c))
        for f, c, d in zip(record.images.frame_index, record.images.channel_index, dropped, strict=True)
        if d
    }
    keyframe_frames = np.asarray(record.keyframes.frame_index, dtype=np.int64)
    for q in range(len(qa)):
        channel = int(qa.channel_index[q])
        frames = [int(f) for f in np.asarray(qa.frame_indices[q]).reshape(-1) if f >= 0]
        frames = frames or [int(keyframe_frames[int(qa.keyframe_index[q])])]
        if any((f, channel) in gone for f in frames):
            evidence[q] = False
    return evidence


def corrupt_record(record: SceneRecord, spec: SceneCorruption) -> SceneRecord:
    """The scene ``record`` (a SceneRecord with image bytes) as the split stores it (module docstring)."""
    images, masks = record.images, record.masks
    dropped = dropped_images(record, spec)
    moves = spec.moves_pixels
    mask_rows: dict[int, list[int]] = {}
    if moves and masks is not None:
        for m, i in enumerate(np.asarray(masks.image_index, dtype=np.int64)):
            mask_rows.setdefault(int(i), []).append(m)
    columns = (
        {
            "rle_counts": np.array(masks.rle_counts, dtype=object, copy=True),
            "area_px": np.array(masks.area_px, dtype=np.int64, copy=True),
            "mask_box_xyxy": np.array(masks.mask_box_xyxy, dtype=np.float64, copy=True),
        }
        if masks is not None
        else {}
    )
    data = []
    for i, (encoded, pixel_map) in enumerate(corrupt_images(spec, record.meta.name, images.data, dropped)):
        data.append(encoded)
        if masks is not None and pixel_map is not None and i in mask_rows:
            _check_mask_size(record, i, pixel_map.shape)
            rows = mask_rows[i]
            warped = warp_masks([masks.rle_counts[m] for m in rows], pixel_map)
            boxes, area = mask_boxes(warped)
            for k, m in enumerate(rows):
                columns["rle_counts"][m] = encode_rle(warped[k])
                columns["area_px"][m] = area[k]
                columns["mask_box_xyxy"][m] = boxes[k]
    new_images = replace(images, data=bytes_array(data))
    new_masks = replace(masks, **columns) if masks is not None and moves else masks
    evidence = qa_visual_evidence(record, dropped)
    new_qa = replace(record.qa, visual_evidence=evidence) if record.qa is not None and evidence is not None else None
    extra = {k: dict(v) for k, v in record.extra.items()}
    previous = extra.get(AUGMENTATION_TABLE, {}).get("image_dropped")
    if previous is not None and np.shape(previous) == dropped.shape:
        dropped = dropped | np.asarray(previous, dtype=bool)  # a split of a split keeps the earlier drops
    extra[AUGMENTATION_TABLE] = {"image_dropped": dropped}
    # The groups' scenario labels travel with their QA (a v3 source has none: labelled now, as a reader would).
    scenarios = record.scenarios if record.scenarios is not None else scenarios_table(record)
    scenarios = None if new_qa is None else scenarios
    return replace(record, images=new_images, masks=new_masks, qa=new_qa, extra=extra, scenarios=scenarios)


def _check_mask_size(record: SceneRecord, image_row: int, shape_hw: tuple[int, int]) -> None:
    """Masks are stored at the camera's size; refuse to warp them through a map of another size."""
    c = int(record.images.channel_index[image_row])
    h, w = int(record.cameras.height[c]), int(record.cameras.width[c])
    if (h, w) != (0, 0) and (h, w) != tuple(shape_hw):
        raise ShardError(
            record.meta.name,
            f"image {image_row} is {shape_hw[1]}x{shape_hw[0]} but its camera {record.cameras.channel[c]} says {w}x{h}",
        )


def augmentation_totals(dataset_dir: Path, shards: Iterable[ShardInfo]) -> dict[str, int]:
    """Images blacked out and QA rows without visual evidence, read back from the written ``shards`` of the split
    in ``dataset_dir``."""
    import h5py

    dropped = no_evidence = 0
    for shard in shards:
        with h5py.File(dataset_dir / shard.file, "r") as f:
            for name in shard.scenes:
                group = f["scenes"][name]
                if AUGMENTATION_TABLE in group:
                    dropped += int(np.count_nonzero(group[AUGMENTATION_TABLE]["image_dropped"][()]))
                if "qa" in group:
                    no_evidence += int(np.count_nonzero(~group["qa"]["visual_evidence"][()].astype(bool)))
    return {"images_dropped": dropped, "qa_without_visual_evidence": no_evidence}


def _compression(source_manifest: dict[str, Any]) -> tuple[str, int]:
    output = source_manifest.get("config", {}).get("output", {})
    return str(output.get("compression", "gzip")), int(output.get("compression_level", 4))


def process_split_scene(
    src_dir: str | Path,
    spec: SceneCorruption,
    scene_name: str,
    sub_dir: str | Path,
    split_hash: str,
    timings: dict[str, float],
) -> ShardInfo:
    """One scene of the dataset ``src_dir`` corrupted (``corrupt_record``) and written as a shard of the
    sub-dataset ``sub_dir`` (config hash ``split_hash``, the source's compression); its read, corrupt and write
    times go into ``timings``. A source shard that no longer matches its manifest is refused, never degraded."""
    t0 = time.perf_counter()
    with open_dataset(src_dir) as source:
        source.verify([scene_name])
        record = source.scene(scene_name).record()
        compression, level = _compression(source.manifest)
    timings["read"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = corrupt_record(record, spec)
    timings["corrupt"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    info = write_shard(out, sub_dir, split_hash, compression, level)
    timings["write"] = time.perf_counter() - t0
    return info
