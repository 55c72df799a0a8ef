"""The questions of a built dataset in a form that two builds of the same log can be compared in: each QA row
becomes a ``CanonicalQA`` whose ``key`` says *what is asked about which objects*, independent of how the build
happened to number its regions, phrase the question or draw its order and polarity.

Question identity (``QAKey``): (scene, keyframe frame row, camera channel, category, canonical predicate, the
objects the question names). Region numbers are per build (a detector build marks other objects, so ``Region [3]``
is another object), so objects are named by the *reference* build's track instead:

- In the reference build (the oracle), an object is its track: ``"r/<track_id>"``.
- In the candidate build, the tracks present at the keyframe's frame are matched one-to-one to the reference tracks
  present there (``match_tracks``: minimum total bird's-eye-view centre distance, global frame, pairs at 2 m or
  more never match, classes ignored, since a question names ``Region [n]``, not a class). A matched track takes
  the reference's name; an unmatched one is ``"c/<track_id>"``, which no reference question names. The matching
  is per keyframe, so a candidate track that switches identity between keyframes is named after the object it
  covers at each one.

Canonical predicates (``canonical_question``), so that the generator's random draws do not count as changes:

- A yes/no pair family (``left_of`` / ``right_of``, ...; ``PAIR_YES_NO_FAMILIES`` of the spatial generator) is
  asked as its positive predicate of the two objects in sorted name order; the label flips once for a negative
  predicate and once for a swapped order (positive(B, A) = not positive(A, B): ambiguous pairs are never asked).
  The family's row is named ``"left_of/right_of"``.
- The ego size families (``bigger_than_ego`` / ``smaller_than_ego``, ...) likewise, with one object.
- The symmetric pair numbers (``direct_distance``, ``horizontal_distance``, ``vertical_distance``) take the
  objects in sorted order; every other predicate keeps its order and name.

Each question has one or two scored dimensions (``Dimension``): its number or label, and the direction of a
spatiotemporal distance-and-direction question (``gt_extra["direction"]``), scored apart as the LSR evaluator does.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from stridegen.core.errors import DataFormatError
from stridegen.pipeline.qa.base import (
    CATEGORY_SPATIOTEMPORAL,
    UNIT_CLOCK,
    UNIT_DEGREE,
    UNIT_METRE,
    UNIT_MPS,
)
from stridegen.pipeline.qa.spatial_predicates import (
    EGO_YES_NO_FAMILIES,
    PAIR_NUMBER_PREDICATES,
    PAIR_YES_NO_FAMILIES,
)

if TYPE_CHECKING:
    from stridegen.shards.scene_view import SceneView

# Candidate and reference tracks match when their BEV centre distance is below this (strictly): the nuScenes
# true-positive threshold of both benchmarks (configs/detection_cvpr_2019.yaml and
# configs/tracking_nips_2019.yaml, ``dist_th_tp: 2.0``), under which mATE and AMOTP are measured.
MATCH_GATE_M = 2.0

REFERENCE_PREFIX = "r/"  # an object named by its reference track
UNMATCHED_PREFIX = "c/"  # a candidate track with no reference track at that keyframe

# Kinds of scored dimensions: what the answer is and so which tolerance judges it (qa_compare.QATolerances).
LABEL = "label"  # a word: yes/no, left/right
LENGTH = "length"  # spatial metres (distances between regions or from the ego, sizes)
HEADING = "heading"  # spatial heading angle, degrees
CLOCK = "clock"  # spatial clock direction, hours
DISTANCE = "distance"  # spatiotemporal distance, metres
DIRECTION = "direction"  # spatiotemporal direction (bearing), degrees
SPEED = "speed"  # spatiotemporal speed, m/s
KINDS: tuple[str, ...] = (LABEL, LENGTH, HEADING, CLOCK, DISTANCE, DIRECTION, SPEED)
KIND_UNIT: dict[str, str] = {LENGTH: "m", HEADING: "deg", CLOCK: "h", DISTANCE: "m", DIRECTION: "deg", SPEED: "m/s"}

_SPATIAL_UNIT_KIND = {UNIT_METRE: LENGTH, UNIT_DEGREE: HEADING, UNIT_CLOCK: CLOCK}
_TEMPORAL_UNIT_KIND = {UNIT_METRE: DISTANCE, UNIT_DEGREE: DIRECTION, UNIT_MPS: SPEED}

# predicate -> (family row name, is the positive predicate)
_FAMILY: dict[str, tuple[str, bool]] = {
    p: (f"{pos}/{neg}", p == pos) for pos, neg in (*PAIR_YES_NO_FAMILIES, *EGO_YES_NO_FAMILIES) for p in (pos, neg)
}
_SYMMETRIC: frozenset[str] = frozenset(PAIR_NUMBER_PREDICATES)

QAKey = tuple[str, int, str, str, str, tuple[str, ...]]  # scene, frame row, channel, category, predicate, objects
ImageKey = tuple[str, int, str]  # scene, keyframe frame row, channel


@dataclass(frozen=True)
class Dimension:
    """One scored part of an answer: ``name`` (``"value"``, or ``"direction"`` for the direction of a
    spatiotemporal distance-and-direction question), its ``kind`` (``KINDS``), and the number (``value``; NaN for
    a label) or word (``label``; ``""`` for a number)."""

    name: str
    kind: str
    value: float = float("nan")
    label: str = ""


@dataclass(frozen=True)
class CanonicalQA:
    """One question, named by what it asks about which objects (module docstring)."""

    key: QAKey
    question_id: str
    dimensions: tuple[Dimension, ...]

    @property
    def category(self) -> str:
        return self.key[3]

    @property
    def predicate(self) -> str:
        return self.key[4]

    @property
    def image(self) -> ImageKey:
        return self.key[0], self.key[1], self.key[2]


def canonical_question(
    category: str,
    predicate: str,
    objects: Sequence[str],
    unit: str,
    gt_value: float,
    gt_label: str,
    gt_extra: str | dict | None = None,
) -> tuple[str, tuple[str, ...], tuple[Dimension, ...]]:
    """(canonical predicate, objects in canonical order, scored dimensions) of one QA row whose objects are
    already named (module docstring). Raises ValueError for a row it cannot read (a unit it does not know, a yes/no
    family row whose label is not yes or no)."""
    objs = tuple(objects)
    if predicate in _FAMILY:
        name, positive = _FAMILY[predicate]
        if gt_label not in ("yes", "no"):
            raise ValueError(f"predicate {predicate!r}: label {gt_label!r} is not yes or no")
        truth = (gt_label == "yes") == positive  # the positive predicate of the objects in the row's order
        ordered = tuple(sorted(objs))
        if ordered != objs:
            truth = not truth  # positive(B, A) = not positive(A, B) for an unambiguous pair
        return name, ordered, (Dimension("value", LABEL, label="yes" if truth else "no"),)
    if predicate in _SYMMETRIC:
        objs = tuple(sorted(objs))
    if not unit:
        return predicate, objs, (Dimension("value", LABEL, label=gt_label),)
    kinds = _TEMPORAL_UNIT_KIND if category == CATEGORY_SPATIOTEMPORAL else _SPATIAL_UNIT_KIND
    if unit not in kinds:
        raise ValueError(f"predicate {predicate!r}: unit {unit!r} is not one of {sorted(kinds)}")
    dims = [Dimension("value", kinds[unit], float(gt_value))]
    extra = json.loads(gt_extra) if isinstance(gt_extra, str) and gt_extra else (gt_extra or {})
    if category == CATEGORY_SPATIOTEMPORAL and isinstance(extra, dict) and "direction" in extra:
        dims.append(Dimension("direction", DIRECTION, float(extra["direction"])))
    return predicate, objs, tuple(dims)


def match_tracks(ref_xy: np.ndarray, cand_xy: np.ndarray, gate_m: float = MATCH_GATE_M) -> np.ndarray:
    """For each candidate centre ([M, 2] BEV, global frame, metres) the row of the reference centre ([N, 2]) it
    matches, or -1: the one-to-one assignment with the most pairs closer than ``gate_m`` and, among those, the
    least total distance (scipy's ``linear_sum_assignment``, through the tracker's ``hungarian_match``)."""
    from stridegen.pipeline.track import hungarian_match

    out = np.full(len(cand_xy), -1, dtype=np.int64)
    if len(ref_xy) == 0 or len(cand_xy) == 0:
        return out
    dist = np.linalg.norm(np.asarray(cand_xy)[:, None, :2] - np.asarray(ref_xy)[None, :, :2], axis=2)  # [M, N]
    pairs = hungarian_match(dist, dist < gate_m)
    out[pairs[:, 0]] = pairs[:, 1]
    return out


@dataclass
class SceneTracks:
    """What naming a scene's objects needs of its reference build: frame tokens, track ids, BEV centres."""

    frame_token: np.ndarray  # [F] str
    track_id: np.ndarray  # [T] str
    present: np.ndarray  # [T, F] bool
    center_xy: np.ndarray  # [T, F, 2] global frame, metres


def scene_tracks(scene: SceneView) -> SceneTracks:
    tr = scene.tracks
    return SceneTracks(
        np.asarray(scene.frames.token).astype(str),
        np.asarray(tr.track_id).astype(str),
        np.asarray(tr.present, dtype=bool),
        np.asarray(tr.center_global, dtype=np.float64)[..., :2],
    )


def object_names(own: SceneTracks, reference: SceneTracks | None, frame: int) -> list[str]:
    """The name of each of ``own``'s tracks at frame row ``frame`` (module docstring); ``reference`` None: ``own``
    is the reference. A track absent at the frame keeps an unmatched name (no question names one)."""
    if reference is None:
        return [REFERENCE_PREFIX + t for t in own.track_id.tolist()]
    names = [UNMATCHED_PREFIX + t for t in own.track_id.tolist()]
    cand = np.flatnonzero(own.present[:, frame]) if own.present.shape[0] else np.zeros(0, np.int64)
    ref = np.flatnonzero(reference.present[:, frame]) if reference.present.shape[0] else np.zeros(0, np.int64)
    match = match_tracks(reference.center_xy[ref, frame], own.center_xy[cand, frame])
    for c, r in zip(cand.tolist(), match.tolist(), strict=True):
        if r >= 0:
            names[c] = REFERENCE_PREFIX + str(reference.track_id[ref[r]])
    return names


@dataclass
class DatasetQuestions:
    """The canonical questions of a dataset (by key), the named objects marked as regions in each keyframe image,
    the named objects its tracks cover at each keyframe's frame (``tracked``: by (scene, frame row)), and the
    scenes read."""

    questions: dict[QAKey, CanonicalQA] = field(default_factory=dict)
    regions: dict[ImageKey, frozenset[str]] = field(default_factory=dict)
    tracked: dict[tuple[str, int], frozenset[str]] = field(default_factory=dict)
    scenes: list[str] = field(default_factory=list)

    def add(self, qa: CanonicalQA, where: str) -> None:
        """Add one question; DataFormatError when another has the same identity (two rows asking the same thing of
        the same objects would make the comparison ambiguous)."""
        other = self.questions.get(qa.key)
        if other is not None:
            raise DataFormatError(
                where,
                f"questions {other.question_id!r} and {qa.question_id!r} ask the same thing "
                f"({qa.predicate} of {', '.join(qa.key[5])}) in one image",
            )
        self.questions[qa.key] = qa


def scene_questions(
    scene: SceneView, out: DatasetQuestions, where: str, names: Callable[[int], list[str]] | None = None
) -> None:
    """Add one scene's canonical questions, named regions and tracked objects to ``out``. ``names(frame)`` names
    the scene's tracks at a keyframe's frame row (default: the scene is the reference)."""
    own = scene_tracks(scene)
    name_at = names or (lambda frame: object_names(own, None, frame))
    out.scenes.append(scene.name)
    kf_frame = np.asarray(scene.keyframes.frame_index, dtype=np.int64)
    channels = np.asarray(scene.cameras.channel).astype(str)
    cache: dict[int, list[str]] = {}

    def named(frame: int) -> list[str]:
        if frame not in cache:
            cache[frame] = name_at(frame)
        return cache[frame]

    for frame in sorted(set(kf_frame.tolist())):
        here = own.present[:, frame] if own.present.shape[0] else np.zeros(0, dtype=bool)
        out.tracked[(scene.name, frame)] = frozenset(n for n, p in zip(named(frame), here.tolist(), strict=True) if p)
    regions = scene.regions
    if regions is not None:
        sets: dict[ImageKey, set[str]] = {}
        for k, c, t in zip(
            np.asarray(regions.keyframe_index).tolist(),
            np.asarray(regions.channel_index).tolist(),
            np.asarray(regions.track_index).tolist(),
            strict=True,
        ):
            frame = int(kf_frame[k])
            sets.setdefault((scene.name, frame, str(channels[c])), set()).add(named(frame)[t])
        out.regions.update({key: frozenset(v) for key, v in sets.items()})
    qa = scene.qa
    if qa is None:
        return
    rows = zip(
        np.asarray(qa.question_id).astype(str).tolist(),
        np.asarray(qa.category).astype(str).tolist(),
        np.asarray(qa.predicate).astype(str).tolist(),
        np.asarray(qa.keyframe_index).tolist(),
        np.asarray(qa.channel_index).tolist(),
        np.asarray(qa.track_index).tolist(),
        np.asarray(qa.unit).astype(str).tolist(),
        np.asarray(qa.gt_value, dtype=np.float64).tolist(),
        np.asarray(qa.gt_label).astype(str).tolist(),
        np.asarray(qa.gt_extra).astype(str).tolist(),
        strict=True,
    )
    for qid, category, predicate, k, c, tracks, unit, value, label, extra in rows:
        frame = int(kf_frame[k])
        objs = [named(frame)[t] for t in tracks if t >= 0]
        try:
            pred, objects, dims = canonical_question(category, predicate, objs, unit, value, label, extra)
        except ValueError as exc:
            raise DataFormatError(where, f"question {qid!r}: {exc}") from None
        key: QAKey = (scene.name, frame, str(channels[c]), category, pred, objects)
        out.add(CanonicalQA(key, qid, dims), where)


def unmatched_names(own: SceneTracks, frame: int) -> list[str]:
    """Every track of a candidate scene the reference does not have: unmatched names at every frame."""
    return [UNMATCHED_PREFIX + t for t in own.track_id.tolist()]


def read_pair(reference_dir: str | Path, candidate_dir: str | Path) -> tuple[DatasetQuestions, DatasetQuestions]:
    """The canonical questions of a reference build and of a candidate build of the same log, the candidate's
    objects named after the reference's tracks. Scenes only one of them has (failed in the other) are read too:
    their questions are lost or gained. DataFormatError (exit code 2 on the command line) when a scene of both has
    other frames or no scene is in both (not the same log), or a question cannot be read."""
    from stridegen.shards.reader import open_dataset

    ref_dir, cand_dir = Path(reference_dir), Path(candidate_dir)
    reference, candidate = DatasetQuestions(), DatasetQuestions()
    tracks: dict[str, SceneTracks] = {}
    with open_dataset(ref_dir) as ds:
        for scene in ds:
            tracks[scene.name] = scene_tracks(scene)
            scene_questions(scene, reference, f"{ref_dir}: {scene.name}")
    with open_dataset(cand_dir) as ds:
        for scene in ds:
            where = f"{cand_dir}: {scene.name}"
            own = scene_tracks(scene)
            ref = tracks.get(scene.name)
            if ref is not None and not np.array_equal(ref.frame_token, own.frame_token):
                raise DataFormatError(
                    where,
                    f"its frames differ from those of {ref_dir}'s scene {scene.name}: "
                    "the two datasets are not builds of the same log",
                )
            names = partial(unmatched_names, own) if ref is None else partial(object_names, own, ref)
            scene_questions(scene, candidate, where, names)
    if reference.scenes and candidate.scenes and not set(reference.scenes) & set(candidate.scenes):
        raise DataFormatError(cand_dir, f"no scene in common with {ref_dir}: the two are not builds of the same log")
    return reference, candidate
