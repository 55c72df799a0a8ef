"""Spatial QA scoring inputs: the answer forms, the distance bins, the item arrays, and the reader of a built
dataset's spatial QA rows.

What a question asks, and so how its answer is scored, comes from the dataset's own QA row (docs/format.md, table
``qa``), never from its text: the ``category`` (``object_spatial`` / ``ego_spatial``), the ``predicate`` id of the
generator, and the structured truth. A row with a ``unit`` is quantitative (``m``: a length, ``deg``: a heading
angle, ``o'clock``: a clock hour; ``gt_value`` holds the number the answer states); a row without one is
qualitative and its ``gt_label`` is the truth (``yes`` / ``no``, or ``left`` / ``right``).

Each item also carries the bird's-eye-view distance of the question's first region from the ego vehicle at the
keyframe (the keyframe's ego frame, x forward, y left; metres), computed from the shard's tracks and frame poses
the way the QA generator computes ``ego_distance``; the per-distance breakdown bins it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from stridegen.core.transforms import invert_transform
from stridegen.pipeline.qa.base import (
    CATEGORY_EGO_SPATIAL,
    CATEGORY_OBJECT_SPATIAL,
    UNIT_CLOCK,
    UNIT_DEGREE,
    UNIT_METRE,
)

if TYPE_CHECKING:
    from stridegen.shards.scene_view import SceneView

SPATIAL_CATEGORIES: tuple[str, ...] = (CATEGORY_OBJECT_SPATIAL, CATEGORY_EGO_SPATIAL)

# Answer forms. Qualitative: a word out of a fixed set. Quantitative: a number with a unit.
YES_NO, LEFT_RIGHT, DISTANCE, DIRECTION, CLOCK = "yes_no", "left_right", "distance", "direction", "clock"
FORMS: tuple[str, ...] = (YES_NO, LEFT_RIGHT, DISTANCE, DIRECTION, CLOCK)
QUALITATIVE_FORMS: tuple[str, ...] = (YES_NO, LEFT_RIGHT)
QUANTITATIVE_FORMS: tuple[str, ...] = (DISTANCE, DIRECTION, CLOCK)
FORM_CODE: dict[str, int] = {name: i for i, name in enumerate(FORMS)}
NO_FORM = -1  # a row whose truth this scorer cannot read (scored as a failure, reason "unscorable_truth")

# The labels of each qualitative form, and the form of each unit of a quantitative row.
FORM_LABELS: dict[str, tuple[str, ...]] = {YES_NO: ("yes", "no"), LEFT_RIGHT: ("left", "right")}
UNIT_FORM: dict[str, str] = {UNIT_METRE: DISTANCE, UNIT_DEGREE: DIRECTION, UNIT_CLOCK: CLOCK}

# Upper edges (m) of the distance bins of the first region: [0, 10), [10, 20), [20, 30), [30, 50), [50, inf), plus
# "unknown" where the distance is not finite. Our choice: 10 m steps where most regions are, and 50 m, the largest
# class range of the nuScenes detection benchmark (DetectionConfig.cvpr_2019's class_range), as the last edge.
DISTANCE_BIN_EDGES_M: tuple[float, ...] = (10.0, 20.0, 30.0, 50.0)


def answer_form(unit: str, gt_label: str) -> int:
    """The form code of a QA row from its ``unit`` and ``gt_label`` (``NO_FORM`` where neither names one)."""
    if unit:
        form = UNIT_FORM.get(unit)
        return NO_FORM if form is None else FORM_CODE[form]
    for form, labels in FORM_LABELS.items():
        if gt_label in labels:
            return FORM_CODE[form]
    return NO_FORM


def distance_bin_names(edges: Sequence[float] = DISTANCE_BIN_EDGES_M) -> list[str]:
    """Names of the bins ``distance_bins`` codes: ``0-10 m``, ..., ``>=50 m``, then ``unknown``."""
    lows = [0.0, *edges]
    names = [f"{_metres(lo)}-{_metres(hi)} m" for lo, hi in zip(lows[:-1], edges, strict=True)]
    return [*names, f">={_metres(lows[-1])} m", "unknown"]


def _metres(x: float) -> str:
    return f"{x:g}"


def distance_bins(distance_m: np.ndarray, edges: Sequence[float] = DISTANCE_BIN_EDGES_M) -> np.ndarray:
    """Bin code per distance (indices into ``distance_bin_names(edges)``): bin i holds ``edges[i-1] <= d <
    edges[i]``; non-finite distances get the last code (``unknown``)."""
    d = np.asarray(distance_m, dtype=np.float64)
    codes = np.searchsorted(np.asarray(edges, dtype=np.float64), d, side="right")
    return np.where(np.isfinite(d), codes, len(edges) + 1).astype(np.int64)


@dataclass
class SpatialItems:
    """Structure of arrays, one entry per spatial question of a dataset (in dataset order)."""

    question_id: list[str]
    category: np.ndarray  # [N] str
    predicate: np.ndarray  # [N] str, the generator's predicate id
    object_class: np.ndarray  # [N] str, STRIDE-QA class of the first region
    form: np.ndarray  # [N] int64, index into FORMS, NO_FORM where unreadable
    gt_value: np.ndarray  # [N] float64, the stated number (m, degrees, clock hour); NaN for qualitative rows
    gt_label: np.ndarray  # [N] str, qualitative truth; "" for quantitative rows
    distance_m: np.ndarray  # [N] float64, BEV distance of the first region from the ego at the keyframe; NaN unknown
    answer: list[str]  # the dataset's own answer text

    def __len__(self) -> int:
        return len(self.question_id)

    def check(self) -> None:
        """ValueError on columns of different lengths or repeated question ids."""
        n = len(self.question_id)
        for f in fields(self):
            if len(getattr(self, f.name)) != n:
                raise ValueError(f"SpatialItems.{f.name} has {len(getattr(self, f.name))} entries, expected {n}")
        if len(set(self.question_id)) != n:
            raise ValueError("SpatialItems has repeated question ids")

    @classmethod
    def empty(cls) -> SpatialItems:
        """No items."""
        text = np.zeros(0, dtype=object)
        return cls([], text, text, text, np.zeros(0, np.int64), np.zeros(0), text, np.zeros(0), [])

    @classmethod
    def concat(cls, parts: Sequence[SpatialItems]) -> SpatialItems:
        """The items of ``parts`` one after the other."""
        if not parts:
            return cls.empty()
        columns: dict[str, object] = {}
        for f in fields(cls):
            values = [getattr(p, f.name) for p in parts]
            if isinstance(values[0], list):
                columns[f.name] = [v for part in values for v in part]
            else:
                columns[f.name] = np.concatenate(values)
        return cls(**columns)  # type: ignore[arg-type]


def _strings(values: np.ndarray) -> np.ndarray:
    return np.asarray([str(v) for v in values.tolist()], dtype=object)


def first_region_distance(scene: SceneView, keyframe_index: np.ndarray, track_index: np.ndarray) -> np.ndarray:
    """BEV distance (m) of each (keyframe, track) box centre from the ego origin of the keyframe: the track's
    centre at the keyframe's frame (global frame) brought into that frame's ego frame. NaN for a missing track
    (index -1) or a track without a box there."""
    n = len(keyframe_index)
    out = np.full(n, np.nan)
    ok = np.asarray(track_index) >= 0
    if not ok.any():
        return out
    frame = np.asarray(scene.keyframes.frame_index, dtype=np.int64)[np.asarray(keyframe_index)[ok]]
    center_global = np.asarray(scene.tracks.center_global)[np.asarray(track_index)[ok], frame]  # [n, 3]
    T_ego_from_global = invert_transform(np.asarray(scene.frames.T_global_from_ego)[frame])  # [n, 4, 4]
    center_ego = np.einsum("nij,nj->ni", T_ego_from_global[:, :3, :3], center_global) + T_ego_from_global[:, :3, 3]
    out[ok] = np.hypot(center_ego[:, 0], center_ego[:, 1])
    return out


def scene_items(scene: SceneView) -> tuple[SpatialItems, dict[str, str]]:
    """The spatial items of one scene, and question id -> category of its other questions (spatiotemporal)."""
    qa = scene.qa
    if qa is None:
        return SpatialItems.empty(), {}
    category = _strings(np.asarray(qa.category))
    spatial = np.isin(category, SPATIAL_CATEGORIES)
    question_id = [str(q) for q in np.asarray(qa.question_id).tolist()]
    others = {q: str(c) for q, c, s in zip(question_id, category.tolist(), spatial.tolist(), strict=True) if not s}
    rows = np.flatnonzero(spatial)
    unit = _strings(np.asarray(qa.unit)[rows])
    gt_label = _strings(np.asarray(qa.gt_label)[rows])
    track_index = np.asarray(qa.track_index)[rows]
    keyframe_index = np.asarray(qa.keyframe_index)[rows]
    items = SpatialItems(
        question_id=[question_id[r] for r in rows.tolist()],
        category=category[rows],
        predicate=_strings(np.asarray(qa.predicate)[rows]),
        object_class=_strings(np.asarray(qa.object_class)[rows]),
        form=np.fromiter(map(answer_form, unit.tolist(), gt_label.tolist()), np.int64, len(rows)),
        gt_value=np.asarray(qa.gt_value, dtype=np.float64)[rows],
        gt_label=gt_label,
        distance_m=first_region_distance(scene, keyframe_index, track_index[:, 0] if len(rows) else track_index),
        answer=[str(a) for a in np.asarray(qa.answer)[rows].tolist()],
    )
    return items, others


def read_dataset_items(dataset_dir: str | Path) -> tuple[SpatialItems, dict[str, str]]:
    """Every spatial question of a built dataset (scenes in manifest order, rows in shard order), and question id
    -> category of the dataset's other questions (so that a prediction for one is counted, not taken for an
    unknown id)."""
    from stridegen.shards.reader import open_dataset

    parts: list[SpatialItems] = []
    others: dict[str, str] = {}
    with open_dataset(dataset_dir) as ds:
        for scene in ds:
            items, other = scene_items(scene)
            parts.append(items)
            others.update(other)
    items = SpatialItems.concat(parts)
    items.check()
    return items, others
