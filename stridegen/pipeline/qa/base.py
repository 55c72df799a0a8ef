"""What every QA generator shares: the QA row, the per-image input, canonical numbers and seeded phrasing.

A generator turns one ``QAContext`` (the visible regions of one keyframe image) into ``QAItem`` rows. Numbers in
answers are canonical (``fmt_*``): metres with 2 decimals, integer degrees, m/s with 2 decimals; ``gt_value`` holds
the number *after* that rounding so an answer and its ``gt_value`` can never disagree. Qualitative answers carry
``gt_label`` ("yes"/"no" or a direction word) and NaN ``gt_value``.

Phrasings: every predicate has >= 8 question templates and >= 4 answer templates (``Phrasebook``); the choice is
drawn from the generator's ``numpy.random.Generator`` (seeded per scene and stage), so output is reproducible.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stridegen.core.vocabulary import NUSCENES_EGO_SIZE_LWH

CATEGORY_OBJECT_SPATIAL = "object_spatial"  # relations between two regions
CATEGORY_EGO_SPATIAL = "ego_spatial"  # a region relative to the ego vehicle
CATEGORY_SPATIOTEMPORAL = "spatiotemporal"  # a target over time (STRIDE-QA-Bench groups)
CATEGORIES = (CATEGORY_OBJECT_SPATIAL, CATEGORY_EGO_SPATIAL, CATEGORY_SPATIOTEMPORAL)

UNIT_METRE = "m"
UNIT_DEGREE = "deg"
UNIT_CLOCK = "o'clock"
UNIT_MPS = "m/s"


def region_name(region_id: int) -> str:
    """How questions name a marked object: ``Region [3]`` (STRIDE-QA / SpatialRGPT convention)."""
    return f"Region [{int(region_id)}]"


def round_metres(x: float) -> float:
    return round(float(x), 2)


def round_degrees(x: float) -> float:
    """Integer degrees in (-180, 180] (180 stays 180; -180 becomes 180)."""
    d = float(round(float(x)))
    return 180.0 if d <= -180.0 else d


def round_mps(x: float) -> float:
    return round(float(x), 2)


def fmt_metres(x: float) -> str:
    return f"{round_metres(x):.2f} m"


def fmt_degrees(x: float) -> str:
    return f"{round_degrees(x):.0f} degrees"


def fmt_mps(x: float) -> str:
    return f"{round_mps(x):.2f} m/s"


def fmt_clock(hour: int) -> str:
    return f"{int(hour)} o'clock"


@dataclass(slots=True)  # not frozen: frozen dataclasses cost ~4x more to construct, and items are made by the 100k
class QAItem:
    """One question-answer pair (one row of the shard's ``qa`` table, see docs/format.md)."""

    category: str  # one of CATEGORIES
    predicate: str  # e.g. "left_of", "distance", "ego_distance_data_4d_t2"
    question: str
    answer: str
    region_ids: tuple[int, ...]  # the regions the question names, in the order it names them (1 or 2)
    track_indices: tuple[int, ...]  # rows of the scene's tracks table, same order
    gt_value: float = math.nan  # canonical rounded number (NaN for qualitative)
    unit: str = ""  # UNIT_* for quantitative items, "" for qualitative
    gt_label: str = ""  # qualitative truth ("yes" / "no" / "left" / ...), "" for quantitative
    gt_extra: dict[str, Any] = field(default_factory=dict)  # further structured truth (e.g. {"direction": 35.0})
    group_id: str = ""  # spatiotemporal group ("" otherwise)
    horizon_s: int = 0  # spatiotemporal horizon in whole seconds (0 for spatial items)
    frame_indices: tuple[int, ...] = ()  # frames whose images the question shows (spatiotemporal context), else ()
    out_of_view: int = -1  # 1: the target is outside the camera's view at the horizon, 0 inside, -1 unknown
    object_class: str = ""  # STRIDE-QA class of the (first) region


@dataclass
class QAContext:
    """The visible regions of one keyframe image, in the keyframe's ego frame (x forward, y left, z up).

    Arrays are indexed by region (N). ``region_id`` are the ids drawn on the image (0..N-1).
    """

    scene: str
    keyframe_index: int
    frame_index: int  # row of the scene's frames table of the keyframe
    channel: str
    region_id: np.ndarray  # [N] int
    track_index: np.ndarray  # [N] int, rows of the scene's tracks table
    object_class: np.ndarray  # [N] str, STRIDE-QA class ("vehicle", "pedestrian", ...)
    center_ego: np.ndarray  # [N, 3] box centres, metres, keyframe ego frame
    size_lwh: np.ndarray  # [N, 3] length, width, height, metres
    yaw_ego: np.ndarray  # [N] box heading in the keyframe ego frame, radians
    center_cam: np.ndarray  # [N, 3] box centres in the camera frame (x right, y down, z forward), metres
    ego_size_lwh: tuple[float, float, float] = NUSCENES_EGO_SIZE_LWH

    def __len__(self) -> int:
        return int(np.asarray(self.region_id).shape[0])


class Phrasebook:
    """Question and answer templates per predicate; ``pick`` draws one of each from the generator."""

    MIN_QUESTIONS = 8
    MIN_ANSWERS = 4

    def __init__(self, questions: Mapping[str, Sequence[str]], answers: Mapping[str, Sequence[str]]) -> None:
        for name, options in questions.items():
            if len(options) < self.MIN_QUESTIONS:
                raise ValueError(f"predicate {name!r}: {len(options)} question phrasings, need {self.MIN_QUESTIONS}")
        for name, options in answers.items():
            if len(options) < self.MIN_ANSWERS:
                raise ValueError(f"answer set {name!r}: {len(options)} phrasings, need {self.MIN_ANSWERS}")
        self.questions = {k: tuple(v) for k, v in questions.items()}
        self.answers = {k: tuple(v) for k, v in answers.items()}

    def question(self, predicate: str, rng: np.random.Generator, **slots: Any) -> str:
        options = self.questions[predicate]
        return options[int(rng.integers(len(options)))].format(**slots)

    def answer(self, answer_set: str, rng: np.random.Generator, **slots: Any) -> str:
        options = self.answers[answer_set]
        return options[int(rng.integers(len(options)))].format(**slots)
