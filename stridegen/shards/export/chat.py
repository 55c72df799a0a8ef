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
from pathlib import Path
from typing import Any

from stridegen.formats.images import encode_jpeg
from stridegen.shards.samples import SceneIndex, scene_samples, som_image
from stridegen.shards.scene_view import SceneView
from stridegen.shards.writer import atomic_write_bytes

IMAGES = "images"
IMAGE_TOKEN = "<image>"


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
        index = SceneIndex(scene)
        rendered: dict[tuple[int, int, int], str] = {}
        records = []
        for sample in scene_samples(index):
            k, c = sample["keyframe_index"], sample["channel_index"]
            images = [self._image(index, out_dir, k, c, f, rendered) for f in sample["frames"]]
            records.append(self.sample_record({**sample, "images": images}))
        return records, {"samples": len(records), "questions": len(qa), "images": len(rendered)}

    def _image(
        self, index: SceneIndex, out_dir: Path, k: int, c: int, frame: int, rendered: dict[tuple[int, int, int], str]
    ) -> str:
        """The Set-of-Mark image of keyframe image (k, c) at ``frame`` (written once), relative to images/."""
        if (k, c, frame) not in rendered:
            scene = index.scene
            rel = f"{scene.name}/{scene.cameras.channel[c]}/k{k:03d}_f{frame:05d}.jpg"
            path = out_dir / IMAGES / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            image = som_image(index, k, c, frame, self.alpha)
            atomic_write_bytes(path, encode_jpeg(image, self.jpeg_quality).tobytes())
            rendered[(k, c, frame)] = rel
        return rendered[(k, c, frame)]

    # ------------------------------------------------------------------------------------------ syntax
    def sample_record(self, sample: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def finalize(self, out_dir: Path, records: list[list[dict[str, Any]]], source: dict[str, Any]) -> list[str]:
        raise NotImplementedError


def image_paths(sample: dict[str, Any]) -> list[str]:
    """The sample's image paths relative to the export folder (``images/...``), in sample order."""
    return [f"{IMAGES}/{p}" for p in sample["images"]]


def sharegpt_turns(sample: dict[str, Any]) -> list[dict[str, str]]:
    """The turns of a sample (stridegen.shards.samples.scene_samples) as alternating {"from": "human" | "gpt",
    "value"}; the first human turn starts with one ``<image>\n`` per image (one per frame: the count LLaVA and
    LLaMA-Factory match against the record's images)."""
    conversations = []
    prefix = f"{IMAGE_TOKEN}\n" * len(sample["frames"])
    for n, turn in enumerate(sample["turns"]):
        conversations.append({"from": "human", "value": (prefix if n == 0 else "") + turn["question"]})
        conversations.append({"from": "gpt", "value": turn["answer"]})
    return conversations


class LlavaExporter(ChatExporter):
    """LLaVA conversation JSON: ``llava.json``, a list of {id, kind, image, conversations: alternating
    {"from": "human" | "gpt", "value"}, qa_info (one per turn pair), meta}; the first human turn starts with one
    ``<image>`` token per image. ``image`` is read as LLaVA's LazySupervisedDataset reads it: one path (a string)
    for one image, a list of paths for several (as LLaVA-NeXT / OneVision accept), relative to the export folder
    (the trainers' ``image_folder``)."""

    name = "llava"
    file_name = "llava.json"

    def sample_record(self, sample: dict[str, Any]) -> dict[str, Any]:
        paths = image_paths(sample)
        return {
            "id": sample["id"],
            "kind": sample["kind"],
            "image": paths[0] if len(paths) == 1 else paths,
            "conversations": sharegpt_turns(sample),
            "qa_info": [t["qa_info"] for t in sample["turns"]],
            "meta": sample["meta"],
        }

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
