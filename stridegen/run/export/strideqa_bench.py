"""The ``strideqa-bench`` exporter: the files the official STRIDE-QA-Bench toolkit reads, unchanged.

Layout (turingmotors/STRIDE-QA-Dataset ``benchmarks/STRIDE-QA-Bench``, read for behaviour: its inference reads
``annotation_files/*_t{t}.json``, loads ``images`` from an image folder and draws the Set-of-Mark overlay itself
from ``rle`` and ``region_id``; its evaluator reads ``question_id``, ``qa_category``, ``gt_value``, ``unit`` and the
model's ``pred``, and the annotation sheet)::

    annotation_files/strideqa_bench_t0.json ... _t3.json   question records of horizon t (lists)
    annotation_sheet.csv                                  group_id, object_type, relation, out_of_view
    images/<scene>/<camera>/<frame>.jpg                   the stored camera images, bytes unchanged

One record per spatiotemporal question of the dataset:

- ``question_id`` ``q<8 digits>_g<5 digits>`` and ``group_id`` ``g<5 digits>``, numbered in scene order;
- ``question``, ``gt`` (the templated answer), ``qa_category`` (one of the 13), ``gt_value`` and ``unit``
  ({"distance"|"direction"|"velocity": ...}; a distance question at t > 0 carries distance and direction);
- ``images``: four image paths relative to ``images/``, oldest first (prev_3, prev_2, prev_1, current), and ``rle``:
  {bucket: COCO RLE {"size": [h, w], "counts": str}} of the target in each (an empty mask where it has none);
- ``region_id``, ``object_class``, ``out_of_view``, ``horizon_s``;
- ``token_info``: the link back to the source: scene, camera, keyframe sample token, the tokens of the four frames,
  the track id and stridegen's own question id.

The annotation sheet's ``relation`` is the rule-based scenario relation of the group (stridegen.run.scenarios;
docs/qa-spatiotemporal.md); ``object_type`` is the target's STRIDE-QA class.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.core.vocabulary import QA_CATEGORIES
from stridegen.formats.rle import encode_rle
from stridegen.run.samples import SceneIndex
from stridegen.run.scenarios import scene_relations
from stridegen.shards.reader import SceneView
from stridegen.shards.writer import atomic_write_bytes

BUCKETS = ("prev_3", "prev_2", "prev_1", "current")
HORIZONS = (0, 1, 2, 3)
ANNOTATIONS = "annotation_files"
SHEET = "annotation_sheet.csv"
IMAGES = "images"
# The unit the toolkit's records name per answer kind (informative: its evaluator does not convert gt values).
UNITS = {"distance": "meters", "direction": "degrees", "velocity": "m/s"}


def _gt_value(predicate: str, gt_value: float, gt_extra: dict[str, Any]) -> dict[str, float]:
    """The record's ``gt_value`` from a QA row (stridegen.pipeline.qa.spatiotemporal.lsr_records reads the same)."""
    if "speed" in predicate:
        return {"velocity": float(gt_value)}
    if predicate == "target_bearing_angle_data":
        return {"direction": float(gt_value)}
    out = {"distance": float(gt_value)}
    if "direction" in gt_extra:
        out["direction"] = float(gt_extra["direction"])
    return out


class StrideQABenchExporter:
    """STRIDE-QA-Bench annotation files, sheet and images (module docstring)."""

    name = "strideqa-bench"

    def export_scene(self, scene: SceneView, out_dir: Path) -> tuple[list[dict[str, Any]], dict[str, int]]:
        qa = scene.qa
        if qa is None or len(qa) == 0:
            return [], {"questions": 0, "images": 0}
        rows = np.flatnonzero(np.asarray(qa.category, dtype=object) == "spatiotemporal")
        cameras, frames, keyframes, tracks = scene.cameras, scene.frames, scene.keyframes, scene.tracks
        masks = scene.masks
        index = SceneIndex(scene)
        written: set[tuple[int, int]] = set()
        relation = scene_relations(scene)
        records: list[dict[str, Any]] = []
        for q in rows.tolist():
            channel_index = int(qa.channel_index[q])
            channel = str(cameras.channel[channel_index])
            height, width = int(cameras.height[channel_index]), int(cameras.width[channel_index])
            track = int(qa.track_index[q][0])
            context = [int(f) for f in np.asarray(qa.frame_indices[q]).reshape(-1) if f >= 0]
            images, rle = [], {}
            for bucket, frame in zip(BUCKETS[-len(context) :], context, strict=True):
                row = index.image_row[(frame, channel_index)]
                data = scene.image_bytes(channel, frame)
                ext = "png" if data[:8] == b"\x89PNG\r\n\x1a\n" else "jpg"
                rel = f"{scene.name}/{channel}/{frame:05d}.{ext}"
                if (frame, channel_index) not in written:
                    path = out_dir / IMAGES / rel
                    path.parent.mkdir(parents=True, exist_ok=True)
                    atomic_write_bytes(path, data)
                    written.add((frame, channel_index))
                images.append(rel)
                mask_index = index.mask_of.get((row, track))
                counts = (
                    str(masks.rle_counts[mask_index])
                    if masks is not None and mask_index is not None
                    else encode_rle(np.zeros((height, width), dtype=bool))
                )
                rle[bucket] = {"size": [height, width], "counts": counts}
            predicate = str(qa.predicate[q])
            keyframe_frame = int(keyframes.frame_index[int(qa.keyframe_index[q])])
            records.append(
                {
                    "local_group": str(qa.group_id[q]),
                    "relation": relation.get(str(qa.group_id[q]), ""),
                    "question": str(qa.question[q]),
                    "gt": str(qa.answer[q]),
                    "qa_category": predicate,
                    "gt_value": (gt := _gt_value(predicate, float(qa.gt_value[q]), json.loads(str(qa.gt_extra[q])))),
                    "unit": {k: UNITS[k] for k in gt},
                    "images": images,
                    "rle": rle,
                    "region_id": int(qa.region_ids[q][0]),
                    "object_class": str(qa.object_class[q]),
                    "out_of_view": int(qa.out_of_view[q]),
                    "horizon_s": int(qa.horizon_s[q]),
                    "token_info": {
                        "scene": scene.name,
                        "camera": channel,
                        "sample_token": str(frames.token[keyframe_frame]),
                        "frame_tokens": [str(frames.token[f]) for f in context],
                        "track_id": str(tracks.track_id[track]),
                        "stridegen_question_id": str(qa.question_id[q]),
                    },
                }
            )
        return records, {"questions": len(records), "images": len(written)}

    def finalize(self, out_dir: Path, records: list[list[dict[str, Any]]], source: dict[str, Any]) -> list[str]:
        by_horizon: dict[int, list[dict[str, Any]]] = {t: [] for t in HORIZONS}
        groups: dict[tuple[str, str], str] = {}
        sheet: dict[str, dict[str, Any]] = {}
        n = 0
        for scene_records in records:
            for rec in scene_records:
                key = (rec["token_info"]["scene"], rec["local_group"])
                if key not in groups:
                    groups[key] = f"g{len(groups) + 1:05d}"
                group = groups[key]
                n += 1
                out = {k: v for k, v in rec.items() if k not in ("local_group", "relation")}
                out = {"question_id": f"q{n:08d}_{group}", "group_id": group, **out}
                by_horizon[QA_CATEGORIES[rec["qa_category"]][0]].append(out)
                entry = sheet.setdefault(
                    group, {"object_type": rec["object_class"], "relation": rec["relation"], "out_of_view": 0}
                )
                entry["out_of_view"] = max(entry["out_of_view"], int(rec["out_of_view"] == 1))
        files = []
        for t, recs in by_horizon.items():
            rel = f"{ANNOTATIONS}/strideqa_bench_t{t}.json"
            path = out_dir / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(path, json.dumps(recs, indent=1, ensure_ascii=True).encode() + b"\n")
            files.append(rel)
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        writer.writerow(["group_id", "object_type", "relation", "out_of_view"])
        for group, entry in sheet.items():
            writer.writerow([group, entry["object_type"], entry["relation"], entry["out_of_view"]])
        atomic_write_bytes(out_dir / ANNOTATIONS / SHEET, text.getvalue().encode())
        files.append(f"{ANNOTATIONS}/{SHEET}")
        return files
