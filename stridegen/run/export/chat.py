"""Conversation exporters for VLM training: ``llava`` (LLaVA conversation JSON) and ``messages`` (OpenAI-style
chat JSONL). Both write the same samples and Set-of-Mark images; only the record syntax differs.

Samples (one per image context, the QA of that context as consecutive turns):

- **spatial**: one sample per keyframe image with spatial QA (object-centric and ego-centric), its questions in
  question order; the image is the keyframe image with every region of that image marked (Set-of-Mark,
  stridegen.pipeline.som: colour by region id, label at the mask's interior maximum);
- **spatiotemporal**: one sample per group (a target tracked over the horizons), its 13 questions in order; the
  images are the four context frames (-1.5, -1, -0.5, 0 s, oldest first), each with the keyframe image's regions
  marked where they have a mask in that frame (labels are the keyframe image's region ids).

Images are rendered once per (keyframe image, frame) and shared by every sample that shows them:
``images/<scene>/<camera>/k<keyframe>_f<frame>.jpg`` (JPEG quality ``jpeg_quality``, OpenCV, deterministic).

Every sample links back to its source (``meta``: scene, camera, keyframe sample token, frame tokens, the regions'
track ids and classes) and carries, turn by turn, the structured truth (``qa_info``: stridegen question id,
category, predicate, gt_value (null when not a number), unit, gt_label, gt_extra).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.formats.images import decode_image, encode_jpeg
from stridegen.pipeline.som import draw_set_of_marks
from stridegen.shards.reader import SceneView
from stridegen.shards.writer import atomic_write_bytes

IMAGES = "images"
IMAGE_TOKEN = "<image>"


def _number(value: float) -> float | None:
    return None if math.isnan(float(value)) else float(value)


class _SceneIndex:
    """Lookups of one scene: image rows by (frame, camera), masks by (image row, track), regions per image."""

    def __init__(self, scene: SceneView) -> None:
        self.scene = scene
        frames = np.asarray(scene.array("images/frame_index"), dtype=np.int64)
        channels = np.asarray(scene.array("images/channel_index"), dtype=np.int64)
        self.image_row = {(int(f), int(c)): i for i, (f, c) in enumerate(zip(frames, channels, strict=True))}
        masks = scene.masks
        self.mask_of: dict[tuple[int, int], int] = {}
        if masks is not None:
            for m, (i, t) in enumerate(zip(masks.image_index, masks.track_index, strict=True)):
                self.mask_of[(int(i), int(t))] = m
        self.regions: dict[tuple[int, int], list[tuple[int, int, int]]] = {}  # (kf, ch) -> (region, track, mask)
        regions = scene.regions
        if regions is not None:
            for k, c, r, t, m in zip(
                regions.keyframe_index,
                regions.channel_index,
                regions.region_id,
                regions.track_index,
                regions.mask_index,
                strict=True,
            ):
                self.regions.setdefault((int(k), int(c)), []).append((int(r), int(t), int(m)))


class ChatExporter:
    """The shared sample building; subclasses write the record syntax (``sample_record``, ``finalize``)."""

    name = "chat"
    file_name = "samples.json"

    def __init__(self, jpeg_quality: int = 92, alpha: float = 0.4) -> None:
        self.jpeg_quality = int(jpeg_quality)
        self.alpha = float(alpha)

    # ------------------------------------------------------------------------------------------ one scene
    def export_scene(self, scene: SceneView, out_dir: Path) -> tuple[list[dict[str, Any]], dict[str, int]]:
        qa = scene.qa
        if qa is None or len(qa) == 0:
            return [], {"samples": 0, "questions": 0, "images": 0}
        index = _SceneIndex(scene)
        rendered: dict[tuple[int, int, int], str] = {}
        samples: dict[tuple[str, ...], dict[str, Any]] = {}
        for q in range(len(qa)):
            k, c = int(qa.keyframe_index[q]), int(qa.channel_index[q])
            spatiotemporal = str(qa.category[q]) == "spatiotemporal"
            key = ("g", str(qa.group_id[q])) if spatiotemporal else ("i", str(k), str(c))
            if key not in samples:
                frames = [int(f) for f in np.asarray(qa.frame_indices[q]).reshape(-1) if f >= 0]
                keyframe_frame = int(scene.keyframes.frame_index[k])
                shown = frames if spatiotemporal else [keyframe_frame]
                images = [self._image(index, out_dir, k, c, f, rendered) for f in shown]
                samples[key] = self._sample(scene, index, q, k, c, keyframe_frame, shown, images, spatiotemporal)
            samples[key]["turns"].append(self._turn(qa, q))
        records = [self.sample_record(s) for s in samples.values()]
        return records, {"samples": len(records), "questions": len(qa), "images": len(rendered)}

    def _image(
        self, index: _SceneIndex, out_dir: Path, k: int, c: int, frame: int, rendered: dict[tuple[int, int, int], str]
    ) -> str:
        """The Set-of-Mark image of keyframe image (k, c) at ``frame`` (written once), relative to images/."""
        if (k, c, frame) in rendered:
            return rendered[(k, c, frame)]
        scene = index.scene
        channel = str(scene.cameras.channel[c])
        rgb = decode_image(scene.image_bytes(channel, frame), f"{scene.name}:{channel}/frame {frame}")
        row = index.image_row[(frame, c)]
        marks = []
        for region, track, mask in index.regions.get((k, c), []):
            m = mask if frame == int(scene.keyframes.frame_index[k]) else index.mask_of.get((row, track))
            if m is not None:
                marks.append((region, scene.mask(m)))
        stack = np.stack([m for _, m in marks]) if marks else np.zeros((0, *rgb.shape[:2]), dtype=bool)
        image = draw_set_of_marks(rgb, stack, [r for r, _ in marks], alpha=self.alpha)
        rel = f"{scene.name}/{channel}/k{k:03d}_f{frame:05d}.jpg"
        path = out_dir / IMAGES / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, encode_jpeg(image, self.jpeg_quality).tobytes())
        rendered[(k, c, frame)] = rel
        return rel

    def _sample(
        self,
        scene: SceneView,
        index: _SceneIndex,
        q: int,
        k: int,
        c: int,
        keyframe_frame: int,
        shown: list[int],
        images: list[str],
        spatiotemporal: bool,
    ) -> dict[str, Any]:
        qa, tracks = scene.qa, scene.tracks
        assert qa is not None
        channel = str(scene.cameras.channel[c])
        sample_id = f"{scene.name}/{qa.group_id[q]}" if spatiotemporal else f"{scene.name}/k{k:03d}/{channel}"
        regions = [
            {"region_id": r, "track_id": str(tracks.track_id[t]), "label": str(tracks.label[t])}
            for r, t, _ in index.regions.get((k, c), [])
        ]
        return {
            "id": sample_id,
            "kind": "spatiotemporal" if spatiotemporal else "spatial",
            "images": images,
            "turns": [],
            "meta": {
                "scene": scene.name,
                "camera": channel,
                "keyframe_index": k,
                "sample_token": str(scene.frames.token[keyframe_frame]),
                "frame_tokens": [str(scene.frames.token[f]) for f in shown],
                "regions": regions,
            },
        }

    @staticmethod
    def _turn(qa: Any, q: int) -> dict[str, Any]:
        return {
            "question": str(qa.question[q]),
            "answer": str(qa.answer[q]),
            "qa_info": {
                "question_id": str(qa.question_id[q]),
                "category": str(qa.category[q]),
                "predicate": str(qa.predicate[q]),
                "gt_value": _number(qa.gt_value[q]),
                "unit": str(qa.unit[q]),
                "gt_label": str(qa.gt_label[q]),
                "gt_extra": json.loads(str(qa.gt_extra[q]) or "{}"),
                "region_ids": [int(r) for r in qa.region_ids[q] if r >= 0],
            },
        }

    # ------------------------------------------------------------------------------------------ syntax
    def sample_record(self, sample: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def finalize(self, out_dir: Path, records: list[list[dict[str, Any]]], source: dict[str, Any]) -> list[str]:
        raise NotImplementedError


class LlavaExporter(ChatExporter):
    """LLaVA conversation JSON: ``samples.json``, a list of {id, image | images, conversations: alternating
    {"from": "human" | "gpt", "value"}, qa_info (one per turn pair), meta}; the first human turn starts with one
    ``<image>`` token per image."""

    name = "llava"
    file_name = "llava.json"

    def sample_record(self, sample: dict[str, Any]) -> dict[str, Any]:
        conversations = []
        prefix = "".join(f"{IMAGE_TOKEN}\n" for _ in sample["images"])
        for n, turn in enumerate(sample["turns"]):
            conversations.append({"from": "human", "value": (prefix if n == 0 else "") + turn["question"]})
            conversations.append({"from": "gpt", "value": turn["answer"]})
        record: dict[str, Any] = {"id": sample["id"], "kind": sample["kind"]}
        if len(sample["images"]) == 1:
            record["image"] = f"{IMAGES}/{sample['images'][0]}"
        else:
            record["images"] = [f"{IMAGES}/{p}" for p in sample["images"]]
        record.update(conversations=conversations, qa_info=[t["qa_info"] for t in sample["turns"]], meta=sample["meta"])
        return record

    def finalize(self, out_dir: Path, records: list[list[dict[str, Any]]], source: dict[str, Any]) -> list[str]:
        flat = [r for scene in records for r in scene]
        atomic_write_bytes(out_dir / self.file_name, json.dumps(flat, indent=1, ensure_ascii=True).encode() + b"\n")
        return [self.file_name]


class MessagesExporter(ChatExporter):
    """OpenAI-style chat JSONL: ``messages.jsonl``, one {id, messages, qa_info, meta} per line; the first user
    message holds the images (``{"type": "image_url", "image_url": {"url": "images/..."}}``) and the question text,
    later user messages the text alone, and each assistant message the answer."""

    name = "messages"
    file_name = "messages.jsonl"

    def sample_record(self, sample: dict[str, Any]) -> dict[str, Any]:
        messages: list[dict[str, Any]] = []
        for n, turn in enumerate(sample["turns"]):
            content: list[dict[str, Any]] = []
            if n == 0:
                content += [{"type": "image_url", "image_url": {"url": f"{IMAGES}/{p}"}} for p in sample["images"]]
            content.append({"type": "text", "text": turn["question"]})
            messages.append({"role": "user", "content": content})
            messages.append({"role": "assistant", "content": turn["answer"]})
        return {
            "id": sample["id"],
            "kind": sample["kind"],
            "messages": messages,
            "qa_info": [t["qa_info"] for t in sample["turns"]],
            "meta": sample["meta"],
        }

    def finalize(self, out_dir: Path, records: list[list[dict[str, Any]]], source: dict[str, Any]) -> list[str]:
        lines = [json.dumps(r, sort_keys=True, ensure_ascii=True) for scene in records for r in scene]
        atomic_write_bytes(out_dir / self.file_name, ("\n".join(lines) + "\n" if lines else "").encode())
        return [self.file_name]
