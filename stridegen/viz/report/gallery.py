"""The report's sample gallery: a seeded sample of QA samples drawn with their Set-of-Mark marks.

Samples are those of ``stridegen.shards.samples`` (one per keyframe image for spatial QA, one per group for
spatiotemporal QA). Only a few scenes are read: ``ceil(n / 2)`` of them (all when the dataset has fewer), chosen
with the report's seed; their samples are shuffled per scene and taken round-robin across the scenes, half
spatial and half spatiotemporal (a kind that runs short leaves its places to the other). Only the chosen samples'
images are decoded and drawn, so the gallery costs the same for a dataset of three scenes or of thousands.

Images are downscaled to ``width`` pixels (spatiotemporal strips: four frames at ``width / 2`` each) and
stored as base64 JPEG, so the page carries them inline. The marks are drawn on the downscaled image
(``marked_thumbnail``), not drawn at full size and shrunk: a label's box keeps its one-pixel outline in the
contrasting text colour, so a label stays readable on a fill of its own colour (the exports' images are unchanged).
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np

from stridegen.core.seeding import rng_for
from stridegen.formats.images import encode_jpeg
from stridegen.pipeline.som import draw_set_of_marks
from stridegen.shards.reader import Dataset
from stridegen.shards.samples import SceneIndex, frame_image, frame_marks, scene_samples

JPEG_QUALITY = 80
MARK_ALPHA = 0.4  # the fill weight of the exports' Set-of-Mark images
KINDS = ("spatial", "spatiotemporal")


@dataclass
class GalleryTurn:
    question_id: str
    question: str
    answer: str
    category: str
    predicate: str
    object_class: str


@dataclass
class GalleryCard:
    """One sample: its images (base64 JPEG, oldest first), the frames they show and its turns."""

    id: str
    kind: str
    scene: str
    camera: str
    keyframe_index: int
    frames: list[int]
    images: list[str]
    image_size: tuple[int, int]  # (width, height) of each image
    turns: list[GalleryTurn]
    regions: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Gallery:
    cards: list[GalleryCard]
    scenes_read: int
    samples_seen: int  # samples of the scenes read (the population the cards were drawn from)


def downscale(image: np.ndarray, width: int) -> np.ndarray:
    """Resize to ``width`` pixels wide (aspect kept; area interpolation); smaller images are left as they are."""
    h, w = image.shape[:2]
    if w <= width:
        return image
    height = max(1, round(h * width / w))
    return cv2.resize(image, (width, height), interpolation=cv2.INTER_AREA)


def marked_thumbnail(
    index: SceneIndex, k: int, c: int, frame: int, width: int, targets: list[int] | None = None
) -> np.ndarray:
    """``frame`` of camera ``c`` downscaled to ``width`` pixels (``downscale``) with keyframe image (k, c)'s regions
    marked at that size: all of them, or only the region ids in ``targets``. A mask is resized by area and keeps the
    pixels at least half covered; a region too small for that keeps every pixel it touches, so no mark is lost."""
    image = downscale(frame_image(index, c, frame), width)
    masks, ids = frame_marks(index, k, c, frame)
    keep = [i for i, r in enumerate(ids) if targets is None or r in targets]
    h, w = image.shape[:2]
    small = np.zeros((len(keep), h, w), dtype=bool)
    for row, i in enumerate(keep):
        cover = cv2.resize(masks[i].astype(np.float32), (w, h), interpolation=cv2.INTER_AREA)
        small[row] = cover >= 0.5 if (cover >= 0.5).any() else cover > 0
    return draw_set_of_marks(image, small, [ids[i] for i in keep], alpha=MARK_ALPHA)


def jpeg_base64(image: np.ndarray) -> str:
    return base64.b64encode(encode_jpeg(image, JPEG_QUALITY).tobytes()).decode("ascii")


def _choose_scenes(dataset: Dataset, n_samples: int, seed: int) -> list[str]:
    names = dataset.scenes
    k = min(len(names), max(1, math.ceil(n_samples / 2)))
    picked = rng_for(seed, "report", "gallery-scenes").choice(len(names), size=k, replace=False)
    return [names[i] for i in sorted(picked.tolist())]


def _round_robin(pools: list[list[dict[str, Any]]], n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    depth = 0
    while len(out) < n and any(depth < len(p) for p in pools):
        for pool in pools:
            if depth < len(pool) and len(out) < n:
                out.append(pool[depth])
        depth += 1
    return out


def _pick(per_scene: dict[str, dict[str, list[dict[str, Any]]]], n_samples: int) -> list[dict[str, Any]]:
    """Half spatial, half spatiotemporal (a short kind's places go to the other), round-robin over scenes."""
    pools = {kind: [per_scene[s][kind] for s in per_scene] for kind in KINDS}
    available = {kind: sum(len(p) for p in pools[kind]) for kind in KINDS}
    want = {"spatial": math.ceil(n_samples / 2), "spatiotemporal": n_samples // 2}
    for kind, other in (("spatial", "spatiotemporal"), ("spatiotemporal", "spatial")):
        spare = max(0, want[kind] - available[kind])
        want[kind] -= spare
        want[other] += spare
    return [s for kind in KINDS for s in _round_robin(pools[kind], want[kind])]


def _card(index: SceneIndex, sample: dict[str, Any], classes: dict[str, str], width: int) -> GalleryCard:
    k, c = int(sample["keyframe_index"]), int(sample["channel_index"])
    frames = list(sample["frames"])
    frame_width = width if len(frames) == 1 else round(width / 2)
    pictures = [marked_thumbnail(index, k, c, f, frame_width) for f in frames]
    turns = [
        GalleryTurn(
            t["qa_info"]["question_id"],
            t["question"],
            t["answer"],
            t["qa_info"]["category"],
            t["qa_info"]["predicate"],
            classes.get(t["qa_info"]["question_id"], ""),
        )
        for t in sample["turns"]
    ]
    meta = sample["meta"]
    return GalleryCard(
        id=sample["id"],
        kind=sample["kind"],
        scene=meta["scene"],
        camera=meta["camera"],
        keyframe_index=k,
        frames=frames,
        images=[jpeg_base64(p) for p in pictures],
        image_size=(int(pictures[0].shape[1]), int(pictures[0].shape[0])),
        turns=turns,
        regions=list(meta["regions"]),
    )


def build_gallery(dataset: Dataset, n_samples: int, seed: int = 0, width: int = 480) -> Gallery:
    """Draw ``n_samples`` samples (fewer when the dataset has fewer) and render their images."""
    if n_samples <= 0:
        return Gallery([], 0, 0)
    scenes = _choose_scenes(dataset, n_samples, seed)
    per_scene: dict[str, dict[str, list[dict[str, Any]]]] = {}
    seen = 0
    for name in scenes:
        view = dataset.scene(name)
        try:
            samples = scene_samples(SceneIndex(view))
        finally:
            view.close()
        seen += len(samples)
        per_scene[name] = {}
        for kind in KINDS:
            pool = [s for s in samples if s["kind"] == kind]
            order = rng_for(seed, "report", "gallery", name, kind).permutation(len(pool))
            per_scene[name][kind] = [pool[i] for i in order]
    picked = _pick(per_scene, n_samples)
    cards: list[GalleryCard] = []
    for name in scenes:
        mine = [s for s in picked if s["meta"]["scene"] == name]
        if not mine:
            continue
        view = dataset.scene(name)
        try:
            qa = view.qa
            classes = {} if qa is None else dict(zip(qa.question_id.tolist(), qa.object_class.tolist(), strict=True))
            index = SceneIndex(view)
            cards += [_card(index, s, classes, width) for s in mine]
        finally:
            view.close()
    by_id = {c.id: c for c in cards}
    return Gallery([by_id[s["id"]] for s in picked], len(scenes), seen)  # spatial first, then spatiotemporal
