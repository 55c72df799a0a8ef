"""The ``strideqa-bench`` exporter: the files the official STRIDE-QA-Bench toolkit reads, unchanged.

Layout (turingmotors/STRIDE-QA-Dataset ``benchmarks/STRIDE-QA-Bench``, read for behaviour: its inference reads
``annotation_files/*_t{t}.json``, loads ``images`` from an image folder and draws the Set-of-Mark overlay itself
from ``rle`` and ``region_id``; its evaluator reads ``question_id``, ``qa_category``, ``gt_value``, ``unit`` and the
model's ``pred``, and the annotation sheet)::

    annotation_files/strideqa_bench_t0.json ... _t3.json   question records of horizon t (lists)
    annotation_sheet.csv                                  group_id, object_type, relation, out_of_view
    balance.json                                          the groups left out (by reason) and drawn
    images/<scene>/<camera>/<frame>.jpg                   the stored camera images of the drawn groups, unchanged

One record per spatiotemporal question of the dataset:

- ``question_id`` ``q<8 digits>_g<5 digits>`` and ``group_id`` ``g<5 digits>``, numbered in scene order;
- ``question``, ``gt`` (the templated answer), ``qa_category`` (one of the 13), ``gt_value`` and ``unit``
  ({"distance"|"direction"|"velocity": ...}; a distance question at t > 0 carries distance and direction);
- ``images``: four image paths relative to ``images/``, oldest first (prev_3, prev_2, prev_1, current), and ``rle``:
  {bucket: COCO RLE {"size": [h, w], "counts": str}} of the target in each (never empty: see below);
- ``region_id``, ``object_class``, ``out_of_view``, ``horizon_s``;
- ``token_info``: the link back to the source: scene, camera, keyframe sample token, the tokens of the four frames,
  the track id and stridegen's own question id.

The annotation sheet's ``relation`` is the scenario relation of the group over its keyframe window, as the build
stored it (the shard's ``scenarios`` table; labelled on read for shards older than schema v4:
stridegen.shards.scenarios, docs/scenarios.md); ``object_type`` is the target's STRIDE-QA class.

Two kinds of group are left out whole, before any split, and counted by reason in ``balance.json`` and (their
questions) in the manifest's totals:

- ``partial_group`` (``partial_group_questions_left_out``): a clip that ends before some horizon
  (``gt_extra["missing_horizons"]``): the toolkit's ``compute_tlc_mlsr`` fills a group's absent horizons with
  failures, so such a group would lower TLC and MLSR whatever the model answers (and a file without any t = 3
  record would fail its column lookup);
- ``undrawable_group`` (``undrawable_group_questions_left_out``): a context frame where the official inference
  could not draw the target's mark (``mark_drawable``: no mask there, or one that vanishes at the frame size the
  inference resizes to). That loop draws a mark on every image a record names, from the ``rle`` entry of the
  image's position (``images[i]`` with bucket i), with no way to skip one and no error handling, and its mark needs
  the mask's outline; a record can neither leave a frame's mask out nor drop the frame (the buckets would shift),
  so the group cannot be written.

A bench split (options ``balance``, ``balance_seed``, ``exclude_out_of_view``): ``finalize`` keeps whole groups
(all their questions) drawn per relation over every scene, then numbers the kept records as above.
``annotation_files/balance.json`` (written by every export) holds the groups left out by reason and, per
relation: target, available, drawn, shortfall. Within a relation the
groups are ranked by sha256 of (seed, scene, local group id) and the first ``target`` are kept, so the draw
depends only on the seed and the dataset (not on the worker count), and a smaller target draws a subset of a
larger one; the kept groups stay in scene order. Images are written by ``finalize``, only those the drawn groups'
records name (``balance.json``: ``images_written``); a scene's part counts the images of its exportable groups.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.core.canonical import canonical_json
from stridegen.core.errors import ConfigError
from stridegen.core.vocabulary import QA_CATEGORIES
from stridegen.pipeline.qa.spatiotemporal_inputs import MISSING_HORIZONS_KEY
from stridegen.pipeline.scenario import RELATIONS
from stridegen.shards.samples import SceneIndex
from stridegen.shards.scenarios import scene_relations
from stridegen.shards.scene_view import SceneView
from stridegen.shards.writer import atomic_write_bytes

BUCKETS = ("prev_3", "prev_2", "prev_1", "current")
HORIZONS = (0, 1, 2, 3)
ANNOTATIONS = "annotation_files"
SHEET = "annotation_sheet.csv"
BALANCE = "balance.json"
IMAGES = "images"
# The unit the toolkit's records name per answer kind (informative: its evaluator does not convert gt values).
UNITS = {"distance": "meters", "direction": "degrees", "velocity": "m/s"}
# (width, height) the official inference resizes every context frame and its mask to: the defaults of its
# --width / --height, which its published inference scripts also pass.
BENCH_FRAME_SIZE = (532, 336)
# An outline the official mark drawing keeps has at least this many points; a mask without one has no mark box.
MIN_OUTLINE_POINTS = 3
# Why a group is left out of every bench export (module docstring), in the order reported.
PARTIAL_GROUP = "partial_group"
UNDRAWABLE_GROUP = "undrawable_group"
LEFT_OUT_REASONS = (PARTIAL_GROUP, UNDRAWABLE_GROUP)
LEFT_OUT = "left_out"  # the key of a part record that stands for a group left out (its reason)
IMAGE_SOURCE = "image_source"  # a part record's [channel, frame] per image, for finalize (not in the bench files)


def _source_root(out_dir: Path, source: dict[str, Any]) -> Path:
    """The source dataset's folder: ``source["path"]`` is relative to the export folder, which is ``out_dir`` or,
    for a split, its parent (stridegen.jobs.export); the one whose manifest has the source's config hash."""
    for base in (out_dir, out_dir.parent):
        root = (base / str(source.get("path", ""))).resolve()
        manifest = root / "manifest.json"
        if manifest.is_file() and json.loads(manifest.read_text()).get("config_hash", "") == source.get("config_hash"):
            return root
    raise ConfigError(f"strideqa-bench: the source dataset {source.get('path')!r} is not found from {out_dir}")


def _write_images(out_dir: Path, source: dict[str, Any], images: dict[str, tuple[str, str, int]]) -> int:
    """Write the images of the drawn groups only (``images``: path under images/ -> (scene, channel, frame)), their
    bytes unchanged from the source's shards. Returns how many."""
    if not images:
        return 0
    from stridegen.shards.reader import open_dataset

    with open_dataset(_source_root(out_dir, source)) as dataset:
        for path, (scene, channel, frame) in sorted(images.items()):
            target = out_dir / IMAGES / path
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(target, dataset.scene(scene).image_bytes(channel, frame))
    return len(images)


def mark_drawable(mask: np.ndarray, frame_size: tuple[int, int] = BENCH_FRAME_SIZE) -> bool:
    """Whether the official inference can draw its Set-of-Mark mark for ``mask`` ([H, W] bool, full image pixels).

    It resizes the mask to ``frame_size`` (width, height) by nearest neighbour (OpenCV), traces the outlines of the
    resized mask, keeps those of at least ``MIN_OUTLINE_POINTS`` points and computes the mark's box from them, which
    fails when none is kept: an empty mask, or one that shrinks to isolated pixels or pixel pairs at that size.
    """
    import cv2

    small = cv2.resize(np.asarray(mask, dtype=np.uint8), frame_size, interpolation=cv2.INTER_NEAREST)
    outlines, _ = cv2.findContours(small, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    return any(len(outline) >= MIN_OUTLINE_POINTS for outline in outlines)


def check_frame_size(value: Any) -> tuple[int, int]:
    """The ``frame_size`` option checked: [width, height] of positive whole numbers. ConfigError otherwise."""
    if (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)
    ):
        return int(value[0]), int(value[1])
    raise ConfigError(f"strideqa-bench frame_size: expected [width, height] of whole numbers > 0, got {value!r}")


def _gt_value(predicate: str, gt_value: float, gt_extra: dict[str, Any]) -> dict[str, float]:
    """The record's ``gt_value`` from a QA row (stridegen.pipeline.qa.spatiotemporal_records.lsr_records reads the
    same)."""
    if "speed" in predicate:
        return {"velocity": float(gt_value)}
    if predicate == "target_bearing_angle_data":
        return {"direction": float(gt_value)}
    out = {"distance": float(gt_value)}
    if "direction" in gt_extra:
        out["direction"] = float(gt_extra["direction"])
    return out


def _check_count(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"strideqa-bench {what}: expected a whole number, got {value!r}")
    if value < 0:
        raise ConfigError(f"strideqa-bench {what}: expected a count >= 0, got {value}")
    return value


def check_balance(balance: Any) -> int | dict[str, int] | None:
    """The ``balance`` option checked: None, a count per relation, or {relation: count} over the classifier's
    relation names (stridegen.pipeline.scenario.RELATIONS), returned in that order. ConfigError otherwise."""
    if balance is None:
        return None
    if isinstance(balance, Mapping):
        if not balance:
            raise ConfigError("strideqa-bench balance: the mapping names no relation (it would draw nothing)")
        unknown = [k for k in balance if k not in RELATIONS]
        if unknown:
            raise ConfigError(f"strideqa-bench balance: unknown relation(s) {unknown}; relations: {list(RELATIONS)}")
        return {rel: _check_count(balance[rel], f"balance[{rel!r}]") for rel in RELATIONS if rel in balance}
    if isinstance(balance, bool) or not isinstance(balance, int):
        raise ConfigError(f"strideqa-bench balance: expected a count or a mapping relation -> count, got {balance!r}")
    return _check_count(balance, "balance")


@dataclass(frozen=True)
class BenchGroup:
    """One question group of the export, before numbering."""

    scene: str
    local_group: str
    relation: str
    out_of_view: bool  # any question of the group has out_of_view == 1


def bench_groups(records: list[list[dict[str, Any]]]) -> list[BenchGroup]:
    """The groups of the exported records, in order of first appearance (scene order)."""
    relation: dict[tuple[str, str], str] = {}
    out_of_view: dict[tuple[str, str], bool] = {}
    for scene_records in records:
        for rec in scene_records:
            key = (rec["token_info"]["scene"], rec["local_group"])
            relation.setdefault(key, rec["relation"])
            out_of_view[key] = out_of_view.get(key, False) or int(rec["out_of_view"]) == 1
    return [
        BenchGroup(scene, local, relation[(scene, local)], out_of_view[(scene, local)]) for scene, local in relation
    ]


def draw_key(seed: int, scene: str, local_group: str) -> str:
    """A group's rank within its relation: sha256 of the canonical JSON of [seed, scene, local group id]."""
    return hashlib.sha256(canonical_json([seed, scene, local_group]).encode()).hexdigest()


def draw_groups(
    groups: list[BenchGroup], balance: int | dict[str, int] | None, seed: int, exclude_out_of_view: bool
) -> tuple[set[tuple[str, str]], dict[str, dict[str, Any]]]:
    """The (scene, local group) keys kept and, per relation, target / available / drawn / shortfall.

    Groups out of view are dropped first when ``exclude_out_of_view``; then per relation the ``target`` groups
    of lowest ``draw_key`` are kept (all of them where fewer are available, the difference being the shortfall).
    A mapping ``balance`` leaves the relations it does not name out; None keeps every group.
    """
    present = sorted({g.relation for g in groups} - set(RELATIONS))  # labels outside the classifier's (e.g. "")
    if isinstance(balance, dict):
        targets: dict[str, int | None] = dict(balance)
    else:
        targets = dict.fromkeys((*RELATIONS, *present), balance)
    kept: set[tuple[str, str]] = set()
    report: dict[str, dict[str, Any]] = {}
    for rel, target in targets.items():
        members = [g for g in groups if g.relation == rel]
        pool = [g for g in members if not (exclude_out_of_view and g.out_of_view)]
        ranked = sorted(pool, key=lambda g: (draw_key(seed, g.scene, g.local_group), g.scene, g.local_group))
        chosen = ranked if target is None else ranked[:target]
        kept.update((g.scene, g.local_group) for g in chosen)
        report[rel] = {
            "target": target,
            "available": len(pool),
            "out_of_view_dropped": len(members) - len(pool),
            "drawn": len(chosen),
            "shortfall": 0 if target is None else max(0, target - len(pool)),
        }
    return kept, report


class StrideQABenchExporter:
    """STRIDE-QA-Bench annotation files, sheet and images (module docstring).

    ``balance``: None (every group), N (up to N groups per relation) or {relation: N} (only those relations);
    ``balance_seed`` picks the draw; ``exclude_out_of_view`` drops every group with an out-of-view question first;
    ``frame_size`` is the (width, height) the official inference is run with (its ``--width`` / ``--height``), at
    which every exported mark must be drawable.
    """

    name = "strideqa-bench"

    def __init__(
        self,
        balance: int | Mapping[str, int] | None = None,
        balance_seed: int = 0,
        exclude_out_of_view: bool = False,
        frame_size: tuple[int, int] | list[int] = BENCH_FRAME_SIZE,
    ) -> None:
        self.balance = check_balance(balance)
        self.frame_size = check_frame_size(frame_size)
        if isinstance(balance_seed, bool) or not isinstance(balance_seed, int):
            raise ConfigError(f"strideqa-bench balance_seed: expected an integer, got {balance_seed!r}")
        if not isinstance(exclude_out_of_view, bool):
            raise ConfigError(
                f"strideqa-bench exclude_out_of_view: expected true or false, got {exclude_out_of_view!r}"
            )
        self.balance_seed = balance_seed
        self.exclude_out_of_view = exclude_out_of_view

    def _context_masks(self, scene: SceneView, index: SceneIndex, q: int) -> list[tuple[int, int | None]]:
        """(frame, mask row or None) of question ``q``'s context frames, oldest first: the target's mask in each."""
        qa = scene.qa
        assert qa is not None
        channel_index, track = int(qa.channel_index[q]), int(qa.track_index[q][0])
        context = [int(f) for f in np.asarray(qa.frame_indices[q]).reshape(-1) if f >= 0]
        return [(f, index.mask_of.get((index.image_row[(f, channel_index)], track))) for f in context]

    def _left_out_groups(
        self, scene: SceneView, rows: list[int], contexts: dict[int, list[tuple[int, int | None]]]
    ) -> dict[str, str]:
        """Local group id -> why the group is left out (``LEFT_OUT_REASONS``; module docstring), for the groups of
        ``rows`` that are: partial first, then undrawable (a context frame without a mark ``mark_drawable`` accepts).
        """
        qa = scene.qa
        assert qa is not None
        drawable: dict[int, bool] = {}  # mask row -> mark_drawable, each mask decoded once
        reasons: dict[str, str] = {}
        for q in rows:
            group = str(qa.group_id[q])
            if MISSING_HORIZONS_KEY in json.loads(str(qa.gt_extra[q])):
                reasons[group] = PARTIAL_GROUP
            if group in reasons:
                continue
            for _, mask_index in contexts[q]:
                if mask_index is not None and mask_index not in drawable:
                    drawable[mask_index] = mark_drawable(scene.mask(mask_index), self.frame_size)
                if mask_index is None or not drawable[mask_index]:
                    reasons[group] = UNDRAWABLE_GROUP
                    break
        return reasons

    def export_scene(self, scene: SceneView, out_dir: Path) -> tuple[list[dict[str, Any]], dict[str, int]]:
        qa = scene.qa
        if qa is None or len(qa) == 0:
            return [], {"questions": 0, "images": 0}
        rows = np.flatnonzero(np.asarray(qa.category, dtype=object) == "spatiotemporal").tolist()
        index = SceneIndex(scene)
        contexts = {q: self._context_masks(scene, index, q) for q in rows}
        reasons = self._left_out_groups(scene, rows, contexts)
        left_out = Counter(str(qa.group_id[q]) for q in rows if str(qa.group_id[q]) in reasons)
        cameras, frames, keyframes, tracks = scene.cameras, scene.frames, scene.keyframes, scene.tracks
        masks = scene.masks
        written: dict[tuple[int, int], str] = {}  # (frame, camera) -> path under images/, each image written once
        relation = scene_relations(scene)
        records: list[dict[str, Any]] = []
        for q in rows:
            if str(qa.group_id[q]) in reasons:
                continue
            channel_index = int(qa.channel_index[q])
            channel = str(cameras.channel[channel_index])
            height, width = int(cameras.height[channel_index]), int(cameras.width[channel_index])
            track = int(qa.track_index[q][0])
            context = [frame for frame, _ in contexts[q]]
            images, rle = [], {}
            for bucket, (frame, mask_index) in zip(BUCKETS[-len(context) :], contexts[q], strict=True):
                if (frame, channel_index) not in written:  # the file is written by finalize, if the group is drawn
                    ext = "png" if scene.image_bytes(channel, frame)[:8] == b"\x89PNG\r\n\x1a\n" else "jpg"
                    written[(frame, channel_index)] = f"{scene.name}/{channel}/{frame:05d}.{ext}"
                images.append(written[(frame, channel_index)])
                assert masks is not None and mask_index is not None  # else the group is undrawable
                rle[bucket] = {"size": [height, width], "counts": str(masks.rle_counts[mask_index])}
            predicate = str(qa.predicate[q])
            keyframe_frame = int(keyframes.frame_index[int(qa.keyframe_index[q])])
            records.append(
                {
                    "local_group": str(qa.group_id[q]),
                    "relation": relation.get(str(qa.group_id[q]), ""),
                    IMAGE_SOURCE: [[channel, frame] for frame in context],
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
        stats = {"questions": len(records), "images": len(written)}
        for reason in LEFT_OUT_REASONS:
            questions = sum(n for group, n in left_out.items() if reasons[group] == reason)
            if questions:
                stats[f"{reason}_questions_left_out"] = questions
        # One stand-in per group left out, for balance.json (finalize counts them and writes nothing else of them).
        records += [{LEFT_OUT: reasons[group], "local_group": group, "questions": n} for group, n in left_out.items()]
        return records, stats

    def _balance_report(
        self,
        groups: list[BenchGroup],
        kept: set[tuple[str, str]],
        per_relation: dict[str, dict[str, Any]],
        left_out: dict[str, dict[str, int]],
    ) -> dict[str, Any]:
        named = set(per_relation)
        return {
            "balance": self.balance,
            "seed": self.balance_seed,
            "exclude_out_of_view": self.exclude_out_of_view,
            "frame_size": list(self.frame_size),
            "not_exportable": left_out,
            "groups": {
                "total": len(groups),
                "out_of_view_dropped": sum(r["out_of_view_dropped"] for r in per_relation.values()),
                "left_out": sum(1 for g in groups if g.relation not in named),  # relations the mapping omits
                "drawn": len(kept),
            },
            "relations": per_relation,
        }

    def finalize(self, out_dir: Path, records: list[list[dict[str, Any]]], source: dict[str, Any]) -> list[str]:
        by_horizon: dict[int, list[dict[str, Any]]] = {t: [] for t in HORIZONS}
        groups: dict[tuple[str, str], str] = {}
        sheet: dict[str, dict[str, Any]] = {}
        left_out = {reason: {"groups": 0, "questions": 0} for reason in LEFT_OUT_REASONS}
        for scene_records in records:
            for rec in scene_records:
                if LEFT_OUT in rec:
                    left_out[rec[LEFT_OUT]]["groups"] += 1
                    left_out[rec[LEFT_OUT]]["questions"] += int(rec["questions"])
        records = [[rec for rec in scene_records if LEFT_OUT not in rec] for scene_records in records]
        all_groups = bench_groups(records)
        kept, per_relation = draw_groups(all_groups, self.balance, self.balance_seed, self.exclude_out_of_view)
        report = self._balance_report(all_groups, kept, per_relation, left_out)
        n = 0
        drawn_images: dict[str, tuple[str, str, int]] = {}  # path under images/ -> (scene, channel, frame)
        for scene_records in records:
            for rec in scene_records:
                key = (rec["token_info"]["scene"], rec["local_group"])
                if key not in kept:
                    continue
                if key not in groups:
                    groups[key] = f"g{len(groups) + 1:05d}"
                group = groups[key]
                n += 1
                out = {k: v for k, v in rec.items() if k not in ("local_group", "relation", IMAGE_SOURCE)}
                for path, (channel, frame) in zip(rec["images"], rec[IMAGE_SOURCE], strict=True):
                    drawn_images.setdefault(path, (rec["token_info"]["scene"], channel, int(frame)))
                out = {"question_id": f"q{n:08d}_{group}", "group_id": group, **out}
                by_horizon[QA_CATEGORIES[rec["qa_category"]][0]].append(out)
                entry = sheet.setdefault(
                    group, {"object_type": rec["object_class"], "relation": rec["relation"], "out_of_view": 0}
                )
                entry["out_of_view"] = max(entry["out_of_view"], int(rec["out_of_view"] == 1))
        report["images_written"] = _write_images(out_dir, source, drawn_images)
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
        report["questions_drawn"] = n
        atomic_write_bytes(out_dir / ANNOTATIONS / BALANCE, json.dumps(report, indent=1).encode() + b"\n")
        files.append(f"{ANNOTATIONS}/{BALANCE}")
        return files
