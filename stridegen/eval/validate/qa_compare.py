"""Compare the questions of two builds of one log (``qa_data.DatasetQuestions``): which answers moved beyond the
bench's tolerance, by how much, and which questions one build asks and the other does not.

The reference build's answer plays the truth and the candidate's the prediction, judged with the rule the bench
applies to a model's answer of that kind (``QATolerances``):

- spatial lengths (``m``: distances, widths, heights, lengths): ``0.75 * ref <= cand <= 1.25 * ref``, the spatial
  evaluator's ``LENGTH_RULE`` (stridegen/eval/spatial/algo.py: SpatialRGPT-Bench's band, STRIDE-QA's distance rule);
- spatial heading angles (``deg``): within 10 degrees, wrapping at +-180 (``HEADING_RULE``, STRIDE-QA direction);
- spatial clock directions: within ``CLOCK_TOLERANCE_H`` = 1 hour the short way round the dial (SpatialRGPT-Bench);
- spatiotemporal distance, direction and speed: the LSR tolerance profile's rules (stridegen/eval/lsr/tolerance.py;
  ``paper`` by default: 25 %, 10 degrees, 20 % or 0.5 m/s below 1 m/s; ``strideqa-bench``: the official toolkit's);
- words (yes/no, left/right): changed when they differ.

A question both builds ask is *matched*; each of its dimensions is *changed* when the candidate's answer fails the
rule. A question only the reference asks is *lost*, one only the candidate asks *gained*, each with the first
reason that holds, looking at the other build's keyframe:

- ``no_track``: an object the question names has no track there (the detector missed it, or its box is 2 m or
  more away; a gained question's false-positive object has none in the oracle build);
- ``not_marked``: every object is tracked there, but one is not a marked region of that image (dropped by the
  visibility filter or the minimum region size);
- ``not_asked``: every object is marked there, but the other build did not ask it (an ambiguity threshold crossed,
  another draw of the per-image pair / QA caps, or a spatiotemporal group skipped there, e.g. because the target's
  track ends or breaks before a horizon).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stridegen.core.vocabulary import QA_CATEGORIES
from stridegen.eval.lsr.tolerance import PAPER, Rule, ToleranceProfile
from stridegen.eval.spatial.algo import (
    CLOCK_TOLERANCE_H,
    HEADING_RULE,
    LENGTH_RULE,
    RELATIVE_ERROR_EPS_M,
    clock_error_h,
    error_stats,
)
from stridegen.eval.validate.qa_data import (
    CLOCK,
    DIRECTION,
    DISTANCE,
    HEADING,
    KIND_UNIT,
    LABEL,
    LENGTH,
    SPEED,
    CanonicalQA,
    DatasetQuestions,
)
from stridegen.pipeline.qa.base import CATEGORIES
from stridegen.pipeline.qa.spatial_predicates import (
    EGO_YES_NO_FAMILIES,
    PAIR_YES_NO_FAMILIES,
    SPATIAL_PREDICATES,
)

REASON_NO_TRACK = "no_track"  # an object the question names has no track at that keyframe in the other build
REASON_NOT_MARKED = "not_marked"  # every object is tracked there, one is not a marked region of that image
REASON_NOT_ASKED = "not_asked"  # every object is marked there, but the other build did not ask it
REASONS: tuple[str, ...] = (REASON_NO_TRACK, REASON_NOT_MARKED, REASON_NOT_ASKED)

_FAMILY_OF = {p: f"{pos}/{neg}" for pos, neg in (*PAIR_YES_NO_FAMILIES, *EGO_YES_NO_FAMILIES) for p in (pos, neg)}
# Row order: the spatial generator's predicate order (a family at its positive predicate), then the bench's.
_PREDICATE_ORDER: dict[str, int] = {}
for _p in (*(_FAMILY_OF.get(p, p) for p in SPATIAL_PREDICATES), *QA_CATEGORIES):
    _PREDICATE_ORDER.setdefault(_p, len(_PREDICATE_ORDER))


@dataclass(frozen=True)
class QATolerances:
    """The rule that judges a candidate answer against the reference's, per dimension kind (module docstring)."""

    length: Rule = LENGTH_RULE
    heading: Rule = HEADING_RULE
    clock_h: float = CLOCK_TOLERANCE_H
    profile: ToleranceProfile = PAPER

    def rule(self, kind: str) -> Rule | None:
        """The ``Rule`` of a numeric kind (None for labels and clock hours, judged apart)."""
        return {
            LENGTH: self.length,
            HEADING: self.heading,
            DISTANCE: self.profile.distance,
            DIRECTION: self.profile.direction,
            SPEED: self.profile.velocity,
        }.get(kind)

    def within(self, kind: str, ref: np.ndarray, cand: np.ndarray) -> np.ndarray:
        """Whether each candidate number counts as the reference's under the bench's rule (NaN fails)."""
        if kind == CLOCK:
            with np.errstate(invalid="ignore"):
                return clock_error_h(ref, cand) <= self.clock_h
        rule = self.rule(kind)
        if rule is None:
            raise ValueError(f"no tolerance rule for kind {kind!r}")
        return rule.judge(ref, cand)

    def describe(self) -> dict[str, str]:
        """Each kind's rule in words (the JSON file and the docs)."""

        def words(rule: Rule, unit: str) -> str:
            if rule.fn == "relative":
                text = f"{1 - rule.range:g} * ref <= cand <= {1 + rule.range:g} * ref"
                if rule.floor_below is not None:
                    text += f"; |cand - ref| <= {rule.floor_abs:g} {unit} when ref < {rule.floor_below:g} {unit}"
                return text
            wrap = ", wrapped at +-180" if rule.fn == "angular_absolute" else ""
            return f"|cand - ref| <= {rule.range:g} {unit}{wrap}"

        out = {LABEL: "the same word", CLOCK: f"within {self.clock_h:g} hour on the 12-hour dial"}
        for kind in (LENGTH, HEADING, DISTANCE, DIRECTION, SPEED):
            rule = self.rule(kind)
            assert rule is not None
            source = "spatial bench" if kind in (LENGTH, HEADING) else f"LSR profile {self.profile.name}"
            out[kind] = f"{words(rule, KIND_UNIT[kind])} ({source})"
        return out


def answer_errors(kind: str, ref: np.ndarray, cand: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(signed, absolute, relative) error of candidate numbers against the reference's, in the kind's unit.

    Signed: ``cand - ref``, wrapped into [-180, 180) for angles, NaN for clock hours (no sign on a dial).
    Absolute: its magnitude; clock hours the short way round the dial. Relative (metres and m/s only, else NaN):
    ``|cand - ref| / (|ref| + 1e-4)``, the spatial evaluator's error rate (``RELATIVE_ERROR_EPS_M``)."""
    ref = np.asarray(ref, dtype=np.float64)
    cand = np.asarray(cand, dtype=np.float64)
    nan = np.full(ref.shape, np.nan)
    if kind == CLOCK:
        return nan, clock_error_h(ref, cand), nan
    signed = cand - ref
    if kind in (HEADING, DIRECTION):
        signed = np.mod(signed + 180.0, 360.0) - 180.0
        return signed, np.abs(signed), nan
    return signed, np.abs(signed), np.abs(signed) / (np.abs(ref) + RELATIVE_ERROR_EPS_M)


@dataclass
class MatchedAnswers:
    """One entry per scored dimension of a question both builds ask (structure of arrays)."""

    category: list[str] = field(default_factory=list)
    predicate: list[str] = field(default_factory=list)
    dimension: list[str] = field(default_factory=list)
    kind: list[str] = field(default_factory=list)
    reference_id: list[str] = field(default_factory=list)  # question ids
    candidate_id: list[str] = field(default_factory=list)
    reference: list[Any] = field(default_factory=list)  # number, or word for labels
    candidate: list[Any] = field(default_factory=list)
    changed: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    signed_error: np.ndarray = field(default_factory=lambda: np.zeros(0))
    abs_error: np.ndarray = field(default_factory=lambda: np.zeros(0))
    rel_error: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __len__(self) -> int:
        return len(self.category)


@dataclass
class Unpaired:
    """Questions only one build asks: their category, predicate, id and reason (``REASONS``)."""

    category: list[str] = field(default_factory=list)
    predicate: list[str] = field(default_factory=list)
    question_id: list[str] = field(default_factory=list)
    reason: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.category)

    def add(self, qa: CanonicalQA, other: DatasetQuestions) -> None:
        objects = set(qa.key[5])
        if not objects <= other.tracked.get((qa.key[0], qa.key[1]), frozenset()):
            reason = REASON_NO_TRACK
        elif not objects <= other.regions.get(qa.image, frozenset()):
            reason = REASON_NOT_MARKED
        else:
            reason = REASON_NOT_ASKED
        self.category.append(qa.category)
        self.predicate.append(qa.predicate)
        self.question_id.append(qa.question_id)
        self.reason.append(reason)


@dataclass
class QAComparison:
    matched: MatchedAnswers
    lost: Unpaired  # asked by the reference only
    gained: Unpaired  # asked by the candidate only
    tolerances: QATolerances
    n_reference: int
    n_candidate: int


def compare_questions(
    reference: DatasetQuestions, candidate: DatasetQuestions, tolerances: QATolerances | None = None
) -> QAComparison:
    """Pair the two builds' questions by key and judge every matched dimension (module docstring)."""
    tol = tolerances or QATolerances()
    m = MatchedAnswers()
    lost, gained = Unpaired(), Unpaired()
    for key, ref_qa in reference.questions.items():
        cand_qa = candidate.questions.get(key)
        if cand_qa is None:
            lost.add(ref_qa, candidate)
            continue
        cand_dims = {d.name: d for d in cand_qa.dimensions}
        for d in ref_qa.dimensions:
            c = cand_dims.get(d.name)
            if c is None or c.kind != d.kind:
                raise ValueError(
                    f"questions {ref_qa.question_id!r} and {cand_qa.question_id!r} have the same identity but "
                    f"different answers' shapes ({d.name} {d.kind} against {c.kind if c else 'nothing'})"
                )
            m.category.append(ref_qa.category)
            m.predicate.append(ref_qa.predicate)
            m.dimension.append(d.name)
            m.kind.append(d.kind)
            m.reference_id.append(ref_qa.question_id)
            m.candidate_id.append(cand_qa.question_id)
            m.reference.append(d.label if d.kind == LABEL else d.value)
            m.candidate.append(c.label if d.kind == LABEL else c.value)
    for key, cand_qa in candidate.questions.items():
        if key not in reference.questions:
            gained.add(cand_qa, reference)
    n = len(m)
    m.changed = np.zeros(n, dtype=bool)
    m.signed_error, m.abs_error, m.rel_error = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    kinds = np.asarray(m.kind, dtype=object)
    for kind in sorted(set(m.kind)):
        sel = np.flatnonzero(kinds == kind)
        ref = np.asarray([m.reference[i] for i in sel.tolist()], dtype=object)
        cand = np.asarray([m.candidate[i] for i in sel.tolist()], dtype=object)
        if kind == LABEL:
            m.changed[sel] = ref != cand
            continue
        ref_f, cand_f = ref.astype(np.float64), cand.astype(np.float64)
        m.changed[sel] = ~tol.within(kind, ref_f, cand_f)
        m.signed_error[sel], m.abs_error[sel], m.rel_error[sel] = answer_errors(kind, ref_f, cand_f)
    return QAComparison(m, lost, gained, tol, len(reference.questions), len(candidate.questions))


def _row_order(category: str, predicate: str, dimension: str) -> tuple[int, int, str, int]:
    cat = CATEGORIES.index(category) if category in CATEGORIES else len(CATEGORIES)
    return cat, _PREDICATE_ORDER.get(predicate, len(_PREDICATE_ORDER)), predicate, dimension != "value"


def _reason_counts(unpaired: Unpaired, sel: np.ndarray) -> dict[str, int]:
    reasons = np.asarray(unpaired.reason, dtype=object)
    return {r: int((sel & (reasons == r)).sum()) for r in REASONS}


def _block(comp: QAComparison, sel_m: np.ndarray, sel_lost: np.ndarray, sel_gained: np.ndarray) -> dict[str, Any]:
    """Counts of one table row or total: matched answers, changed, share, lost and gained (with reasons)."""
    n, changed = int(sel_m.sum()), int((comp.matched.changed & sel_m).sum())
    return {
        "matched": n,
        "changed": changed,
        "changed_share": changed / n if n else None,
        "lost": int(sel_lost.sum()),
        "lost_by_reason": _reason_counts(comp.lost, sel_lost),
        "gained": int(sel_gained.sum()),
        "gained_by_reason": _reason_counts(comp.gained, sel_gained),
    }


def summarize(comp: QAComparison) -> dict[str, Any]:
    """The comparison as JSON-ready data: ``rows`` per (category, predicate, dimension) with the matched answers,
    the changed ones and their share, the error distribution (``abs_error``, ``rel_error`` for metres and m/s,
    ``signed_error``: n, mean, p50, p75, p90, max), and the questions lost and gained (on the ``value`` row of
    each predicate); ``categories`` and ``total`` sum them; ``tolerances`` says each kind's rule."""
    m = comp.matched
    cat_m, pred_m, dim_m = (np.asarray(x, dtype=object) for x in (m.category, m.predicate, m.dimension))
    cat_l, pred_l = np.asarray(comp.lost.category, dtype=object), np.asarray(comp.lost.predicate, dtype=object)
    cat_g, pred_g = np.asarray(comp.gained.category, dtype=object), np.asarray(comp.gained.predicate, dtype=object)
    keys: set[tuple[str, str, str]] = set(zip(m.category, m.predicate, m.dimension, strict=True))
    keys |= {(c, p, "value") for c, p in zip(comp.lost.category, comp.lost.predicate, strict=True)}
    keys |= {(c, p, "value") for c, p in zip(comp.gained.category, comp.gained.predicate, strict=True)}
    kind_of = dict(zip(zip(m.category, m.predicate, m.dimension, strict=True), m.kind, strict=True))
    rows = []
    for cat, pred, dim in sorted(keys, key=lambda k: _row_order(*k)):
        sel = (cat_m == cat) & (pred_m == pred) & (dim_m == dim)
        is_value = dim == "value"
        row: dict[str, Any] = {"category": cat, "predicate": pred, "dimension": dim}
        kind = kind_of.get((cat, pred, dim), "")
        row["kind"] = kind
        row["unit"] = KIND_UNIT.get(kind, "")
        row.update(
            _block(
                comp,
                sel,
                (cat_l == cat) & (pred_l == pred) & is_value,
                (cat_g == cat) & (pred_g == pred) & is_value,
            )
        )
        if kind and kind != LABEL:
            row["abs_error"] = error_stats(m.abs_error[sel])
            row["signed_error"] = error_stats(m.signed_error[sel])
            if kind in (LENGTH, DISTANCE, SPEED):
                row["rel_error"] = error_stats(m.rel_error[sel])
        rows.append(row)
    categories = {
        cat: _block(comp, cat_m == cat, cat_l == cat, cat_g == cat)
        for cat in sorted({r["category"] for r in rows}, key=lambda c: _row_order(c, "", "value"))
    }
    total = _block(comp, np.ones(len(m), bool), np.ones(len(comp.lost), bool), np.ones(len(comp.gained), bool))
    total.update({"reference_questions": comp.n_reference, "candidate_questions": comp.n_candidate})
    return {
        "tolerances": comp.tolerances.describe(),
        "tolerance_profile": comp.tolerances.profile.name,
        "total": total,
        "categories": categories,
        "rows": rows,
    }


def changed_examples(comp: QAComparison, limit: int = 20) -> list[dict[str, Any]]:
    """Up to ``limit`` changed answers, where to look first: numbers by kind (``KIND_UNIT`` order), largest
    absolute error first, then words; with both question ids and both answers."""
    m = comp.matched
    idx = np.flatnonzero(m.changed)
    kind_rank = np.asarray(
        [list(KIND_UNIT).index(m.kind[i]) if m.kind[i] in KIND_UNIT else len(KIND_UNIT) for i in idx]
    )
    error = np.where(np.isfinite(m.abs_error[idx]), m.abs_error[idx], 0.0)
    order = idx[np.lexsort((-error, kind_rank))][:limit] if idx.size else idx
    return [
        {
            "category": m.category[i],
            "predicate": m.predicate[i],
            "dimension": m.dimension[i],
            "reference_question": m.reference_id[i],
            "candidate_question": m.candidate_id[i],
            "reference": m.reference[i],
            "candidate": m.candidate[i],
        }
        for i in order.tolist()
    ]


def kinds_present(comp: QAComparison, exclude: Sequence[str] = (LABEL,)) -> list[str]:
    """The numeric kinds of the matched answers, in ``KIND_UNIT`` order."""
    return [k for k in KIND_UNIT if k in set(comp.matched.kind) and k not in exclude]
