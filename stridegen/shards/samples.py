"""QA samples of a built scene: the questions of one image context as consecutive turns, with the frames they
show and their Set-of-Mark marks (shared by the ``llava`` / ``messages`` exporters and ``stridegen.data``).

- **spatial**: one sample per keyframe image with spatial QA (object-centric and ego-centric), its questions in
  question order; it shows the keyframe image with every region of that image marked;
- **spatiotemporal**: one sample per group (a target tracked over the horizons), its questions in order; it shows
  the four context frames (oldest first), each with the keyframe image's regions marked where they have a mask
  in that frame (labels are the keyframe image's region ids).
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from stridegen.formats.images import decode_image
from stridegen.pipeline.som import draw_set_of_marks
from stridegen.shards.scenarios import scene_relations
from stridegen.shards.scene_view import SceneView


def _number(value: float) -> float | None:
    return None if math.isnan(float(value)) else float(value)


class SceneIndex:
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


def frame_region_masks(index: SceneIndex, k: int, c: int, frame: int) -> list[tuple[int, int | None]]:
    """(region id, mask row or None) of keyframe image (k, c)'s regions in ``frame``'s image of that camera, in
    region order: the regions' own masks at the keyframe, their tracks' masks elsewhere (None where a track has no
    mask in that frame)."""
    row = index.image_row[(frame, c)]
    keyframe = frame == int(index.scene.keyframes.frame_index[k])
    return [
        (region, mask if keyframe else index.mask_of.get((row, track)))
        for region, track, mask in index.regions.get((k, c), [])
    ]


def frame_marks(index: SceneIndex, k: int, c: int, frame: int) -> tuple[np.ndarray, list[int]]:
    """The masks ([N, H, W] bool) and region ids of keyframe image (k, c)'s regions in ``frame``'s image of that
    camera (``frame_region_masks``; regions without a mask there are left out)."""
    scene = index.scene
    marks = [(region, scene.mask(m)) for region, m in frame_region_masks(index, k, c, frame) if m is not None]
    c_h, c_w = int(scene.cameras.height[c]), int(scene.cameras.width[c])
    stack = np.stack([m for _, m in marks]) if marks else np.zeros((0, c_h, c_w), dtype=bool)
    return stack, [r for r, _ in marks]


def frame_image(index: SceneIndex, c: int, frame: int) -> np.ndarray:
    """The stored RGB image of camera ``c`` at ``frame``."""
    scene = index.scene
    channel = str(scene.cameras.channel[c])
    return decode_image(scene.image_bytes(channel, frame), f"{scene.name}:{channel}/frame {frame}")


def som_image(index: SceneIndex, k: int, c: int, frame: int, alpha: float = 0.4) -> np.ndarray:
    """``frame``'s image with keyframe image (k, c)'s regions marked (Set-of-Mark)."""
    masks, ids = frame_marks(index, k, c, frame)
    return draw_set_of_marks(frame_image(index, c, frame), masks, ids, alpha=alpha)


def _turn(qa: Any, q: int, scenario: str) -> dict[str, Any]:
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
            "scenario": scenario,
        },
    }


def scene_samples(index: SceneIndex) -> list[dict[str, Any]]:
    """The samples of a scene in question order: {id, kind, keyframe_index, channel_index, frames (shown, oldest
    first), turns: [{question, answer, qa_info}], meta: {scene, camera, keyframe_index, sample_token,
    frame_tokens, regions: [{region_id, track_id, label}], scenario}}. ``scenario`` (in ``meta`` and in each
    turn's ``qa_info``) is the scenario relation of a spatiotemporal group over its keyframe window, as stored by
    the build (stridegen.shards.scenarios; docs/scenarios.md), "" for spatial samples."""
    scene = index.scene
    qa, tracks = scene.qa, scene.tracks
    if qa is None:
        return []
    samples: dict[tuple[str, ...], dict[str, Any]] = {}
    relation = scene_relations(scene)
    for q in range(len(qa)):
        k, c = int(qa.keyframe_index[q]), int(qa.channel_index[q])
        spatiotemporal = str(qa.category[q]) == "spatiotemporal"
        key = ("g", str(qa.group_id[q])) if spatiotemporal else ("i", str(k), str(c))
        if key not in samples:
            keyframe_frame = int(scene.keyframes.frame_index[k])
            frames = [int(f) for f in np.asarray(qa.frame_indices[q]).reshape(-1) if f >= 0]
            shown = frames if spatiotemporal else [keyframe_frame]
            channel = str(scene.cameras.channel[c])
            samples[key] = {
                "id": str(qa.group_id[q]) if spatiotemporal else f"{scene.name}/k{k:03d}/{channel}",
                "kind": "spatiotemporal" if spatiotemporal else "spatial",
                "keyframe_index": k,
                "channel_index": c,
                "frames": shown,
                "turns": [],
                "meta": {
                    "scene": scene.name,
                    "camera": channel,
                    "keyframe_index": k,
                    "sample_token": str(scene.frames.token[keyframe_frame]),
                    "frame_tokens": [str(scene.frames.token[f]) for f in shown],
                    "regions": [
                        {"region_id": r, "track_id": str(tracks.track_id[t]), "label": str(tracks.label[t])}
                        for r, t, _ in index.regions.get((k, c), [])
                    ],
                    "scenario": relation.get(str(qa.group_id[q]), "") if spatiotemporal else "",
                },
            }
        samples[key]["turns"].append(_turn(qa, q, samples[key]["meta"]["scenario"]))
    return list(samples.values())
