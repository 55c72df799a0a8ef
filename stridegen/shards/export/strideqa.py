"""The ``strideqa`` exporter: a dataset in the STRIDE-QA training layout (stridegen.formats.strideqa_training).

One record per (image context, task), the context's questions of that task as consecutive turns:

- ``object_centric_spatial_qa`` / ``ego_centric_spatial_qa``: per keyframe image, its object-centric (resp.
  ego-centric) spatial questions; ``image`` names the keyframe image;
- ``ego_centric_spatiotemporal_qa``: per group (one target over the horizons), its questions; ``images`` names the
  four context frames, oldest first (current last).

Fields (docs/export.md has the full table): ``id`` (16 hex digits), ``image`` | ``images`` (member names in the
image tars), ``conversations`` (alternating human / gpt; the first human turn starts with one ``<image>`` line per
image), ``qa_info`` (one per turn pair: question id, category, predicate, numeric truth, unit, label, extra,
region ids), ``region`` (the marked region ids of the image), ``category`` (their object classes, same order),
``bbox`` (their mask boxes ``[x0, y0, x1, y1]`` in pixels) and ``rle`` (their COCO RLE masks), ``image_info``
(size, camera, timestamp, frame token), ``token_info`` (scene, camera, keyframe sample token, frame tokens, track ids,
group), ``split``. In spatiotemporal records ``bbox``, ``rle`` and ``image_info`` are lists with one entry per image
(a region without a mask in a frame has ``null``).

Images are the dataset's camera files, bytes unchanged (``images="raw"``, the published layout: the trainer draws
the marks from ``rle``), or Set-of-Mark renders of them (``images="som"``, JPEG, as the ``llava`` exporter writes).
Each scene's images go to ``parts/<scene>.images.tar``; ``finalize`` packs them into ``images-NNNNN.tar`` shards of
``images_per_shard`` members, and the records into ``annotations-NNNNN.jsonl.gz`` shards of ``records_per_shard``.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

from stridegen.core.errors import ConfigError, DataFormatError
from stridegen.formats.images import encode_jpeg
from stridegen.formats.strideqa_training import (
    TASKS,
    annotation_shard_name,
    image_shard_name,
    iter_tar,
    jsonl_gz_bytes,
    tar_bytes,
)
from stridegen.shards.samples import SceneIndex, frame_region_masks, scene_samples, som_image
from stridegen.shards.scene_view import SceneView
from stridegen.shards.writer import atomic_write_bytes, sha256_file

IMAGE_TOKEN = "<image>"
TASK_OF_CATEGORY = {
    "object_spatial": "object_centric_spatial_qa",
    "ego_spatial": "ego_centric_spatial_qa",
    "spatiotemporal": "ego_centric_spatiotemporal_qa",
}
_SCENE_IMAGES = "_scene_images"  # the leading bookkeeping record of a scene's part


def _key(*parts: object) -> str:
    """16 hex digits naming an image or a record (the published shards' key shape), stable for a source."""
    return hashlib.sha256("/".join(str(p) for p in parts).encode()).hexdigest()[:16]


def _box(values: Any) -> list[float] | None:
    box = [float(v) for v in values]
    return None if any(math.isnan(v) for v in box) else [round(v, 2) for v in box]


class StrideQAExporter:
    """STRIDE-QA training annotations and WebDataset image shards (module docstring)."""

    name = "strideqa"
    # Its ``split`` option names the folder a split is written to, so the export's splits share one folder
    # (``<split>/images``, ``<split>/annotations``, the published layout; stridegen.jobs.export).
    splits_in_place = True

    def __init__(
        self,
        split: str = "train",
        images: str = "raw",
        records_per_shard: int = 10000,
        images_per_shard: int = 1000,
        jpeg_quality: int = 92,
        alpha: float = 0.4,
    ) -> None:
        if not split or "/" in split or split.startswith("."):
            raise ConfigError(f"split {split!r}: expected a folder name such as train or val")
        if images not in ("raw", "som"):
            raise ConfigError(f"images={images!r}: expected 'raw' (camera files unchanged) or 'som' (Set-of-Mark)")
        if records_per_shard < 1 or images_per_shard < 1:
            raise ConfigError("records_per_shard and images_per_shard must be at least 1")
        self.split, self.images = split, images
        self.records_per_shard, self.images_per_shard = int(records_per_shard), int(images_per_shard)
        self.jpeg_quality, self.alpha = int(jpeg_quality), float(alpha)

    # ------------------------------------------------------------------------------------------ one scene
    def export_scene(self, scene: SceneView, out_dir: Path) -> tuple[list[dict[str, Any]], dict[str, int]]:
        qa = scene.qa
        counts = {"records": 0, "questions": 0, "images": 0, "questions_other_category": 0}
        if qa is None or len(qa) == 0:
            return [], counts
        index = SceneIndex(scene)
        members: dict[tuple[int, int, int], str] = {}  # (keyframe or -1, camera, frame) -> member name
        blobs: list[tuple[str, bytes]] = []
        records: list[dict[str, Any]] = []
        for sample in scene_samples(index):
            by_task: dict[str, list[dict[str, Any]]] = {}
            for turn in sample["turns"]:
                task = TASK_OF_CATEGORY.get(turn["qa_info"]["category"])
                if task is None:  # a plugin family's category: no task folder of the layout holds it
                    counts["questions_other_category"] += 1
                    continue
                by_task.setdefault(task, []).append(turn)
            if not by_task:
                continue
            names = [self._image(index, sample, frame, members, blobs) for frame in sample["frames"]]
            for task, turns in by_task.items():
                records.append(self._record(index, sample, task, turns, names))
                counts["questions"] += len(turns)
        counts["records"], counts["images"] = len(records), len(blobs)
        tar_path = out_dir / "parts" / f"{scene.name}.images.tar"
        tar_path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(tar_path, tar_bytes(blobs))
        head = {_SCENE_IMAGES: tar_path.relative_to(out_dir).as_posix(), "sha256": sha256_file(tar_path)}
        return [head, *records], counts

    def _image(
        self,
        index: SceneIndex,
        sample: dict[str, Any],
        frame: int,
        members: dict[tuple[int, int, int], str],
        blobs: list[tuple[str, bytes]],
    ) -> str:
        """The member name of ``frame``'s image in this sample (added to the scene's tar once)."""
        scene, c = index.scene, sample["channel_index"]
        k = sample["keyframe_index"] if self.images == "som" else -1  # raw images are shared by every keyframe
        if (k, c, frame) not in members:
            channel = str(scene.cameras.channel[c])
            token = str(scene.frames.token[frame])
            if self.images == "raw":
                data = scene.image_bytes(channel, frame)
                ext = "png" if data[:8] == b"\x89PNG\r\n\x1a\n" else "jpg"
                name = f"{_key(scene.name, channel, token)}.{ext}"
            else:
                data = encode_jpeg(som_image(index, k, c, frame, self.alpha), self.jpeg_quality).tobytes()
                name = f"{_key(scene.name, channel, token, f'som-k{k}')}.jpg"
            members[(k, c, frame)] = name
            blobs.append((name, data))
        return members[(k, c, frame)]

    def _regions_in(self, index: SceneIndex, k: int, c: int, frame: int) -> tuple[list[Any], list[Any]]:
        """bbox and rle of keyframe image (k, c)'s regions in ``frame``'s image (``None`` without a mask)."""
        scene = index.scene
        masks = scene.masks
        size = [int(scene.cameras.height[c]), int(scene.cameras.width[c])]
        boxes: list[Any] = []
        rles: list[Any] = []
        for _region, m in frame_region_masks(index, k, c, frame):
            if masks is None or m is None:
                boxes.append(None)
                rles.append(None)
                continue
            boxes.append(_box(masks.mask_box_xyxy[m]))
            rles.append({"size": size, "counts": str(masks.rle_counts[m])})
        return boxes, rles

    def _image_info(self, index: SceneIndex, c: int, frame: int, name: str) -> dict[str, Any]:
        scene = index.scene
        row = index.image_row[(frame, c)]
        return {
            "file_name": name,
            "width": int(scene.cameras.width[c]),
            "height": int(scene.cameras.height[c]),
            "camera": str(scene.cameras.channel[c]),
            "timestamp_us": int(scene.array("images/timestamp_us")[row]),
            "frame_token": str(scene.frames.token[frame]),
        }

    def _record(
        self, index: SceneIndex, sample: dict[str, Any], task: str, turns: list[dict[str, Any]], names: list[str]
    ) -> dict[str, Any]:
        k, c, frames, meta = sample["keyframe_index"], sample["channel_index"], sample["frames"], sample["meta"]
        conversations = []
        prefix = "".join(f"{IMAGE_TOKEN}\n" for _ in names)
        for n, turn in enumerate(turns):
            conversations.append({"from": "human", "value": (prefix if n == 0 else "") + turn["question"]})
            conversations.append({"from": "gpt", "value": turn["answer"]})
        per_frame = [self._regions_in(index, k, c, f) for f in frames]
        infos = [self._image_info(index, c, f, name) for f, name in zip(frames, names, strict=True)]
        spatial = sample["kind"] == "spatial"
        record: dict[str, Any] = {
            "id": _key(meta["scene"], k, meta["camera"], task, sample["id"]),
            **({"image": names[0]} if spatial else {"images": names}),
            "conversations": conversations,
            "qa_info": [t["qa_info"] for t in turns],
            "region": [r["region_id"] for r in meta["regions"]],
            "category": [r["label"] for r in meta["regions"]],
            "bbox": per_frame[0][0] if spatial else [b for b, _ in per_frame],
            "rle": per_frame[0][1] if spatial else [r for _, r in per_frame],
            "image_info": infos[0] if spatial else infos,
            "token_info": {
                "scene": meta["scene"],
                "camera": meta["camera"],
                "keyframe_index": k,
                "sample_token": meta["sample_token"],
                "frame_tokens": meta["frame_tokens"],
                "track_ids": [r["track_id"] for r in meta["regions"]],
                "group_id": "" if spatial else sample["id"],
            },
            "split": self.split,
            "_task": task,
        }
        return record

    # ------------------------------------------------------------------------------------------ all scenes
    def finalize(self, out_dir: Path, records: list[list[dict[str, Any]]], source: dict[str, Any]) -> list[str]:
        split_dir = out_dir / self.split
        files: list[str] = []
        by_task: dict[str, list[dict[str, Any]]] = {task: [] for task in TASKS}
        tars: list[Path] = []
        for scene_records in records:
            for rec in scene_records:
                if _SCENE_IMAGES in rec:
                    tars.append(self._checked_tar(out_dir, rec))
                else:
                    by_task[rec["_task"]].append({k: v for k, v in rec.items() if k != "_task"})
        for task, recs in by_task.items():
            for n, start in enumerate(range(0, len(recs), self.records_per_shard)):
                rel = annotation_shard_name(task, n)
                path = split_dir / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                atomic_write_bytes(path, jsonl_gz_bytes(recs[start : start + self.records_per_shard]))
                files.append(f"{self.split}/{rel}")
        batch: list[tuple[str, bytes]] = []
        n_shards = 0
        for member in (m for path in tars for m in iter_tar(path)):
            batch.append(member)
            if len(batch) == self.images_per_shard:
                files.append(self._write_image_shard(split_dir, n_shards, batch))
                n_shards, batch = n_shards + 1, []
        if batch:
            files.append(self._write_image_shard(split_dir, n_shards, batch))
        return files

    def _write_image_shard(self, split_dir: Path, n: int, members: list[tuple[str, bytes]]) -> str:
        path = split_dir / image_shard_name(n)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, tar_bytes(members))
        return f"{self.split}/{image_shard_name(n)}"

    @staticmethod
    def _checked_tar(out_dir: Path, head: dict[str, Any]) -> Path:
        path = out_dir / head[_SCENE_IMAGES]
        if not path.is_file() or sha256_file(path) != head["sha256"]:
            part = path.name.removesuffix(".images.tar")
            raise DataFormatError(
                path, f"missing or changed since its scene was exported; delete parts/{part}.jsonl and rerun"
            )
        return path
