"""STRIDE-QA localization metrics over arrays: per-dimension success rates, LSR, MLSR, TLC and TLC@k.

Definitions (paper section 5.2, and the official toolkit turingmotors/STRIDE-QA-Dataset
``benchmarks/STRIDE-QA-Bench/src/strideqa_bench/benchmark.py``, read for behaviour; see docs/metrics-lsr.md):

- An *item* is one scored value: (group, horizon t in seconds, dimension, truth, prediction). Dimensions:
  ``target_distance``, ``target_direction``, ``target_velocity``, ``ego_velocity``. An unparseable answer is a NaN
  prediction and fails.
- Success rate of a dimension at horizon t: successes / items; ``avg`` pools all horizons (successes / items,
  not the mean of the per-horizon rates).
- A *localization slot* is a (group, horizon) with a target distance or a target direction item. It succeeds when
  both exist and both succeed (a missing half fails). LSR at t: successful slots / slots.
- Per group (the target tracked over horizons 0..K), with a missing slot counted as a failure:
  TLC@k = 1 if the slots 0..k all succeed; TLC = TLC@K; MLSR = successful slots / (K + 1); each averaged over the
  groups (overall, and per scenario relation). A *partial* group (a stridegen group whose clip ends before some
  horizon: ``LsrRecord.partial_group``) is scored per horizon but left out of TLC and MLSR: the toolkit would
  count its absent horizons as failures (``fillna(False)`` in ``compute_tlc_mlsr``), which says nothing about the
  model. Official inputs have no such groups, so their numbers are the toolkit's.
- Breakdowns: the same rates restricted to one scenario relation, object class, or out-of-view status.

Everything is computed with numpy on integer codes; no per-record Python loop after the inputs are read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from stridegen.core.gc_pause import gc_paused
from stridegen.eval.lsr.answer_parser import Kind, parse_grouped
from stridegen.eval.lsr.tolerance import ToleranceProfile
from stridegen.formats.lsr_record import LsrRecord
from stridegen.formats.textfile import shown

DIMENSIONS: tuple[str, ...] = ("target_distance", "target_direction", "target_velocity", "ego_velocity")
DIMENSION_KIND: dict[str, Kind] = {
    "target_distance": "distance",
    "target_direction": "direction",
    "target_velocity": "velocity",
    "ego_velocity": "velocity",
}
_DIM_CODE = {name: i for i, name in enumerate(DIMENSIONS)}
_DIST, _DIR = _DIM_CODE["target_distance"], _DIM_CODE["target_direction"]
# Order of the success-rate tables in reports (the toolkit's order).
REPORT_ORDER: tuple[str, ...] = ("target_distance", "target_direction", "ego_velocity", "target_velocity", "lsr")


@dataclass
class LsrItems:
    """Structure of arrays, one entry per scored value. ``pred`` is NaN where the answer was unparseable."""

    question_id: list[str]
    group: np.ndarray  # int64 codes into group_ids
    group_ids: list[str]
    horizon: np.ndarray  # int64 seconds
    dimension: np.ndarray  # int64 codes into DIMENSIONS
    gt: np.ndarray  # float64
    pred: np.ndarray  # float64
    pred_reason: list[str]  # "" when a value was read, else why not
    out_of_view: np.ndarray  # int8: 1 out of view, 0 in view, -1 unknown
    group_scenario: list[str | None]  # per group
    group_object_class: list[str | None]  # per group
    # per group: its clip ends before some horizon (left out of TLC / MLSR); empty: no group is partial
    group_partial: list[bool] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.question_id)

    def check(self) -> None:
        """Raise ValueError on inconsistent lengths, bad codes, or two items for one (group, horizon, dimension)."""
        n = len(self.question_id)
        for name in ("group", "horizon", "dimension", "gt", "pred", "out_of_view"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"LsrItems.{name} has {len(getattr(self, name))} entries, expected {n}")
        if len(self.pred_reason) != n:
            raise ValueError(f"LsrItems.pred_reason has {len(self.pred_reason)} entries, expected {n}")
        g = len(self.group_ids)
        if len(self.group_scenario) != g or len(self.group_object_class) != g:
            raise ValueError("group label lists must have one entry per group id")
        if self.group_partial and len(self.group_partial) != g:
            raise ValueError("group_partial must be empty or have one entry per group id")
        if n == 0:
            return
        if self.group.min() < 0 or self.group.max() >= g:
            raise ValueError("group codes out of range")
        if self.dimension.min() < 0 or self.dimension.max() >= len(DIMENSIONS):
            raise ValueError("dimension codes out of range")
        if self.horizon.min() < 0:
            raise ValueError("horizons must be >= 0 seconds")
        key = _slot_key(self.group, self.horizon, self.horizon.max() + 1) * len(DIMENSIONS) + self.dimension
        counts = _key_counts(key)
        if counts is None:
            uniq, counts = np.unique(key, return_counts=True)
        else:
            uniq = np.arange(len(counts))
        if counts.max(initial=0) > 1:
            dup = uniq[counts > 1][0]
            i = int(np.flatnonzero(key == dup)[0])
            raise ValueError(
                f"two items for group {self.group_ids[self.group[i]]!r}, horizon {self.horizon[i]} s, "
                f"dimension {DIMENSIONS[self.dimension[i]]} (question {self.question_id[i]!r})"
            )


def _slot_key(group: np.ndarray, horizon: np.ndarray, n_horizons: int) -> np.ndarray:
    return group.astype(np.int64) * int(n_horizons) + horizon.astype(np.int64)


def _is_dense(key: np.ndarray) -> bool:
    """True when ``key`` is non-negative with a range small enough for counting arrays (a few times its size)."""
    return len(key) > 0 and int(key.min()) >= 0 and int(key.max()) < 4 * len(key) + 1024


def _key_counts(key: np.ndarray) -> np.ndarray | None:
    """Occurrences of each value 0..max of a dense integer ``key`` (one counting pass), or None if not dense."""
    return np.bincount(key) if _is_dense(key) else None


def unique_inverse(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(key, return_inverse=True)`` for integer keys: the same arrays, found without sorting (a
    presence mask and its running count) when the keys are dense (see ``_is_dense``)."""
    if not _is_dense(key):
        uniq, inverse = np.unique(key, return_inverse=True)
        return uniq, inverse.reshape(-1)
    present = np.zeros(int(key.max()) + 1, dtype=bool)
    present[key] = True
    rank = np.cumsum(present, dtype=np.int64) - 1
    return np.flatnonzero(present).astype(key.dtype, copy=False), rank[key]


def dimension_codes(names: Sequence[str]) -> np.ndarray:
    """Dimension names -> int codes; raises ValueError naming an unknown dimension."""
    try:
        return np.fromiter((_DIM_CODE[n] for n in names), dtype=np.int64, count=len(names))
    except KeyError as exc:
        raise ValueError(f"unknown dimension {exc.args[0]!r}; expected one of {DIMENSIONS}") from None


def parse_predictions(
    texts: Sequence[str], dimension: np.ndarray, profile: ToleranceProfile
) -> tuple[np.ndarray, list[str]]:
    """Read each answer text as its item's dimension kind with the profile's grammar."""
    return parse_grouped(texts, dimension, [DIMENSION_KIND[name] for name in DIMENSIONS], profile.parser)


# ============================================================================================ results


@dataclass
class Slots:
    """Localization slots: one per (group, horizon) with a target distance or direction item."""

    group: np.ndarray
    horizon: np.ndarray
    success: np.ndarray
    distance_gt: np.ndarray  # NaN when the slot has no distance item
    distance_pred: np.ndarray
    direction_gt: np.ndarray
    direction_pred: np.ndarray
    out_of_view: np.ndarray  # int8, -1 unknown


@dataclass
class LsrResult:
    """Everything the report writers need."""

    profile: str
    parser: str
    item_success: np.ndarray
    slots: Slots
    success_rates: dict[str, list[dict[str, Any]]]
    temporal_consistency: list[dict[str, Any]]
    breakdowns: dict[str, dict[str, dict[str, list[dict[str, Any]]]]]
    counts: dict[str, Any] = field(default_factory=dict)

    def metrics(self) -> dict[str, Any]:
        """JSON-ready metrics: the toolkit's ``metrics_report.json`` keys plus breakdowns and counts."""
        out: dict[str, Any] = {"profile": self.profile, "parser": self.parser}
        for name in REPORT_ORDER:
            if name in self.success_rates:
                out[name] = self.success_rates[name]
        out["temporal_consistency"] = self.temporal_consistency
        out["breakdowns"] = self.breakdowns
        out["counts"] = self.counts
        return out


def _rate_table(success: np.ndarray, horizon: np.ndarray) -> list[dict[str, Any]]:
    """[{time, success_rate, sample_size}] per horizon plus the pooled ``avg`` (toolkit format, rounded to 8)."""
    if len(success) == 0:
        return []
    n = np.bincount(horizon)
    k = np.bincount(horizon, weights=success.astype(np.float64)).astype(np.int64)
    rows: list[dict[str, Any]] = []
    for t in np.flatnonzero(n).tolist():
        rows.append({"time": t, "success_rate": round(int(k[t]) / int(n[t]), 8), "sample_size": int(n[t])})
    total, hits = int(n.sum()), int(k.sum())
    rows.append({"time": "avg", "success_rate": round(hits / total, 8), "sample_size": total})
    return rows


def _dimension_rates(
    items: LsrItems, success: np.ndarray, mask: np.ndarray | None = None
) -> dict[str, list[dict[str, Any]]]:
    rates: dict[str, list[dict[str, Any]]] = {}
    for code, name in enumerate(DIMENSIONS):
        sel = items.dimension == code
        if mask is not None:
            sel &= mask
        if sel.any():
            rates[name] = _rate_table(success[sel], items.horizon[sel])
    return rates


def build_slots(items: LsrItems, success: np.ndarray) -> Slots:
    """Pair each (group, horizon)'s target distance and direction items into one localization slot."""
    loc = np.flatnonzero((items.dimension == _DIST) | (items.dimension == _DIR))
    n_h = int(items.horizon.max()) + 1 if len(items) else 1
    key = _slot_key(items.group[loc], items.horizon[loc], n_h)
    uniq, inverse = unique_inverse(key)
    m = len(uniq)
    is_dist = items.dimension[loc] == _DIST
    ok_dist = np.zeros(m, dtype=bool)
    ok_dir = np.zeros(m, dtype=bool)
    ok_dist[inverse[is_dist]] = success[loc[is_dist]]
    ok_dir[inverse[~is_dist]] = success[loc[~is_dist]]
    arrays = {name: np.full(m, np.nan) for name in ("dg", "dp", "ag", "ap")}
    arrays["dg"][inverse[is_dist]] = items.gt[loc[is_dist]]
    arrays["dp"][inverse[is_dist]] = items.pred[loc[is_dist]]
    arrays["ag"][inverse[~is_dist]] = items.gt[loc[~is_dist]]
    arrays["ap"][inverse[~is_dist]] = items.pred[loc[~is_dist]]
    oov = np.full(m, -1, dtype=np.int8)
    np.maximum.at(oov, inverse, items.out_of_view[loc])
    return Slots(
        group=uniq // n_h,
        horizon=uniq % n_h,
        success=ok_dist & ok_dir,
        distance_gt=arrays["dg"],
        distance_pred=arrays["dp"],
        direction_gt=arrays["ag"],
        direction_pred=arrays["ap"],
        out_of_view=oov,
    )


def temporal_consistency(
    slots: Slots,
    group_scenario: Sequence[str | None],
    requires_relation: bool,
    max_horizon: int | None = None,
    group_partial: Sequence[bool] = (),
) -> list[dict[str, Any]]:
    """TLC@k (k = 1..K), TLC and MLSR per group, averaged overall and per scenario relation.

    K is ``max_horizon`` (default: the largest horizon among the slots). Groups flagged in ``group_partial`` (by
    group code; empty: none) are left out.

    Rows: ``{"relation": "Overall" | <relation>, "TLC@1": .., ..., "TLC": .., "MLSR": ..}``, relations sorted by
    TLC (descending, then by name), as in the toolkit. A group's missing horizon counts as a failure.
    """
    if len(slots.group) == 0:
        return []
    scen = np.array([s is not None for s in group_scenario], dtype=bool)
    keep = scen[slots.group] if requires_relation else np.ones(len(slots.group), dtype=bool)
    if len(group_partial):
        keep &= ~np.asarray(group_partial, dtype=bool)[slots.group]
    groups, g_inv = unique_inverse(slots.group[keep])
    if len(groups) == 0:
        return []
    horizon = slots.horizon[keep]
    k_max = int(horizon.max()) if max_horizon is None else int(max_horizon)
    if k_max < int(horizon.max()):
        raise ValueError(f"max_horizon {k_max} is below a slot's horizon {int(horizon.max())}")
    ok = np.zeros((len(groups), k_max + 1), dtype=bool)
    ok[g_inv, horizon] = slots.success[keep]
    # prefix[:, k]: slots 0..k all succeed.
    prefix = np.logical_and.accumulate(ok, axis=1)
    mlsr_per_group = ok.sum(axis=1) / (k_max + 1)
    labels = [group_scenario[g] for g in groups.tolist()]

    def row(name: str, sel: np.ndarray) -> dict[str, Any]:
        n = int(sel.sum())
        r: dict[str, Any] = {"relation": name}
        for k in range(1, k_max + 1):
            r[f"TLC@{k}"] = int(prefix[sel, k].sum()) / n
        r["TLC"] = int(prefix[sel, k_max].sum()) / n
        r["MLSR"] = float(mlsr_per_group[sel].sum()) / n
        return r

    rows = [row("Overall", np.ones(len(groups), dtype=bool))]
    lab = np.array(labels, dtype=object)
    per_relation = [row(rel, lab == rel) for rel in sorted({x for x in labels if x is not None})]
    per_relation.sort(key=lambda r: (-r["TLC"], r["relation"]))
    return rows + per_relation


def _label_breakdown(
    items: LsrItems, success: np.ndarray, slots: Slots, group_label: Sequence[str | None]
) -> dict[str, dict[str, list[dict[str, Any]]]]:
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    values = sorted({x for x in group_label if x is not None})
    if not values:
        return out
    # integer label codes per group (-1: no label), so the per-value masks are integer compares
    code_of = {value: i for i, value in enumerate(values)}
    group_code = np.fromiter((-1 if x is None else code_of[x] for x in group_label), np.int64, len(group_label))
    item_label = group_code[items.group]
    slot_label = group_code[slots.group]
    for code, value in enumerate(values):
        rates = _dimension_rates(items, success, item_label == code)
        sel = slot_label == code
        if sel.any():
            rates["lsr"] = _rate_table(slots.success[sel], slots.horizon[sel])
        out[value] = rates
    return out


def _view_breakdown(items: LsrItems, success: np.ndarray, slots: Slots) -> dict[str, dict[str, list[dict[str, Any]]]]:
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for flag, name in ((0, "in_view"), (1, "out_of_view")):
        rates = _dimension_rates(items, success, items.out_of_view == flag)
        sel = slots.out_of_view == flag
        if sel.any():
            rates["lsr"] = _rate_table(slots.success[sel], slots.horizon[sel])
        if rates:
            out[name] = rates
    return out


def evaluate(items: LsrItems, profile: ToleranceProfile) -> LsrResult:
    """Score every item with the profile's rules and aggregate (see module docstring)."""
    with gc_paused():
        return _evaluate(items, profile)


def _evaluate(items: LsrItems, profile: ToleranceProfile) -> LsrResult:
    items.check()
    success = np.zeros(len(items), dtype=bool)
    for code, name in enumerate(DIMENSIONS):
        sel = items.dimension == code
        if sel.any():
            success[sel] = profile.rule(DIMENSION_KIND[name]).judge(items.gt[sel], items.pred[sel])
    slots = build_slots(items, success)
    rates = _dimension_rates(items, success)
    if len(slots.group):
        rates["lsr"] = _rate_table(slots.success, slots.horizon)
    temporal = temporal_consistency(
        slots,
        items.group_scenario,
        profile.consistency_requires_relation,
        int(items.horizon.max()) if len(items) else None,
        items.group_partial,
    )
    breakdowns = {
        "scenario": _label_breakdown(items, success, slots, items.group_scenario),
        "object_class": _label_breakdown(items, success, slots, items.group_object_class),
        "out_of_view": _view_breakdown(items, success, slots),
    }
    unparsed = Counter(items.pred_reason)  # counted in C; "" (a value was read) is not a reason
    unparsed.pop("", None)
    slot_groups = unique_inverse(slots.group)[0].tolist()
    if profile.consistency_requires_relation:
        slot_groups = [g for g in slot_groups if items.group_scenario[g] is not None]
    partial = sum(items.group_partial)
    if partial:
        slot_groups = [g for g in slot_groups if not items.group_partial[g]]
    counts = {
        "items": len(items),
        "groups": len(items.group_ids),
        "localization_slots": len(slots.group),
        "consistency_groups": len(slot_groups),  # groups in TLC / MLSR (see the profile's relation rule)
        "unparsed": dict(sorted(unparsed.items())),
    }
    if partial:
        counts["partial_groups"] = partial  # scored per horizon, left out of TLC / MLSR
    return LsrResult(
        profile=profile.name,
        parser=profile.parser,
        item_success=success,
        slots=slots,
        success_rates=rates,
        temporal_consistency=temporal,
        breakdowns=breakdowns,
        counts=counts,
    )


# ============================================================================================ building items

INVALID_POLICIES: tuple[str, ...] = ("error", "skip", "fail")


class ItemBuilder:
    """Collects items column by column, codes groups, and applies the bad-input policy.

    ``on_invalid``: ``error`` raises PredictionFormatError naming the source and the record; ``skip`` drops the
    record and counts it by reason; ``fail`` keeps an item whose *prediction* is bad (missing, null, NaN, not
    text) and scores it as a failure (the toolkit's treatment of a missing ``pred``), and drops records that
    cannot be scored at all (no truth, unknown category, duplicate). Every drop and every forced failure is
    counted in ``report()``; nothing changes a number silently.

    Columns are plain lists (fast to append); rare per-item facts (a structured value, why a value is missing,
    an item-level view flag) are kept in sparse dicts keyed by item index.
    """

    def __init__(self, source: str, on_invalid: str = "error") -> None:
        if on_invalid not in INVALID_POLICIES:
            raise ValueError(f"on_invalid must be one of {INVALID_POLICIES}, got {on_invalid!r}")
        self.source = source
        self.on_invalid = on_invalid
        self.question_id: list[str] = []
        self.group: list[int] = []
        self.horizon: list[int] = []
        self.dimension: list[int] = []
        self.gt: list[float] = []
        self.text: list[str | None] = []  # answer text, or None for a structured prediction
        self.value: dict[int, float] = {}  # structured predictions (items whose text is None)
        self.reason: dict[int, str] = {}  # why a structured prediction is missing
        self.item_out_of_view: dict[int, int] = {}
        self.group_out_of_view: dict[int, int] = {}
        self.where: dict[int, str] = {}  # only filled by the slow path, for messages
        self.group_index: dict[str, int] = {}
        self.group_ids: list[str] = []
        self.skipped: dict[str, int] = {}
        self.forced_failures: dict[str, int] = {}
        self.examples: dict[str, list[str]] = {}
        # Numeric columns of items added earlier: (group, horizon, dimension, gt) array blocks, in item order;
        # the lists above hold only the items added one by one since the last block.
        self._blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def _note(self, table: dict[str, int], reason: str, where: str) -> None:
        table[reason] = table.get(reason, 0) + 1
        ex = self.examples.setdefault(reason, [])
        if len(ex) < 5:
            ex.append(where)

    def reject(self, reason: str, where: str) -> None:
        """A record that cannot be scored: raise (``error``) or count as skipped."""
        if self.on_invalid == "error":
            from stridegen.core.errors import PredictionFormatError

            raise PredictionFormatError(self.source, f"{where}: {reason.replace('_', ' ')}")
        self._note(self.skipped, reason, where)

    def bad_prediction(self, reason: str, where: str) -> bool:
        """A record whose prediction is unusable. Returns True when the item is kept as a forced failure."""
        if self.on_invalid == "fail":
            self._note(self.forced_failures, reason, where)
            return True
        self.reject(reason, where)
        return False

    def group_code(self, group_id: str) -> int:
        code = self.group_index.get(group_id)
        if code is None:
            code = self.group_index[group_id] = len(self.group_ids)
            self.group_ids.append(group_id)
        return code

    def extend(
        self,
        question_id: list[str],
        group: np.ndarray,
        horizon: np.ndarray,
        dimension: np.ndarray,
        gt: np.ndarray,
        text: list[str],
    ) -> None:
        """Add a block of items whose predictions are all answer texts (group codes from ``group_code``)."""
        n = len(question_id)
        if not len(group) == len(horizon) == len(dimension) == len(gt) == len(text) == n:
            raise ValueError("ItemBuilder.extend: columns of different lengths")
        self._flush()
        self.question_id.extend(question_id)
        self.text.extend(text)
        self._blocks.append(
            (
                np.asarray(group, dtype=np.int64),
                np.asarray(horizon, dtype=np.int64),
                np.asarray(dimension, dtype=np.int64),
                np.asarray(gt, dtype=np.float64),
            )
        )

    def _flush(self) -> None:
        """Move the items added one by one into an array block."""
        if self.group:
            self._blocks.append(
                (
                    np.asarray(self.group, dtype=np.int64),
                    np.asarray(self.horizon, dtype=np.int64),
                    np.asarray(self.dimension, dtype=np.int64),
                    np.asarray(self.gt, dtype=np.float64),
                )
            )
            self.group, self.horizon, self.dimension, self.gt = [], [], [], []

    def _columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(group, horizon, dimension, gt) of every item so far."""
        self._flush()
        if not self._blocks:
            return (
                np.zeros(0, dtype=np.int64),
                np.zeros(0, dtype=np.int64),
                np.zeros(0, dtype=np.int64),
                np.zeros(0, dtype=np.float64),
            )
        if len(self._blocks) > 1:
            self._blocks = [tuple(np.concatenate(cols) for cols in zip(*self._blocks, strict=True))]  # type: ignore[list-item]
        return self._blocks[0]

    def add(
        self,
        question_id: str,
        group_id: str,
        horizon: int,
        dimension: int,
        gt: float,
        text: str | None,
        value: float = float("nan"),
        out_of_view: int = -1,
        where: str = "",
        reason: str = "invalid_prediction",
    ) -> None:
        """Add one item: ``text`` to parse, or (``text`` None) a structured ``value``, NaN with ``reason``."""
        i = len(self.question_id)
        self.question_id.append(question_id)
        self.group.append(self.group_code(group_id))
        self.horizon.append(horizon)
        self.dimension.append(dimension)
        self.gt.append(gt)
        self.text.append(text)
        if text is None:
            self.value[i] = value
            self.reason[i] = reason
        if out_of_view != -1:
            self.item_out_of_view[i] = out_of_view
        if where:
            self.where[i] = where

    def _duplicate_mask(self, group: np.ndarray, horizon: np.ndarray, dimension: np.ndarray) -> np.ndarray:
        """Keep-mask dropping later items of a repeated (group, horizon, dimension), per the policy."""
        n = len(group)
        keep = np.ones(n, dtype=bool)
        if n == 0:
            return keep
        key = (group * (int(horizon.max()) + 1) + horizon) * len(DIMENSIONS) + dimension
        counts = _key_counts(key)
        if counts is not None and counts.max() <= 1:
            return keep  # no repeated slot (the common case), found with one counting pass
        _, first = np.unique(key, return_index=True)
        if len(first) == n:
            return keep
        keep[:] = False
        keep[first] = True
        for i in np.flatnonzero(~keep).tolist():
            self.reject(
                "duplicate_slot",
                self.where.get(i, f"question {self.question_id[i]!r}")
                + f" ({DIMENSIONS[dimension[i]]} at {horizon[i]} s repeats an earlier question)",
            )
        return keep

    def finish(
        self,
        profile: ToleranceProfile,
        group_labels: dict[str, tuple[str | None, str | None]],
        partial_groups: set[str] | frozenset[str] = frozenset(),
    ) -> LsrItems:
        """Drop repeated slots, parse the answer texts with the profile's grammar, return the items.
        ``partial_groups``: group ids left out of TLC / MLSR (``LsrItems.group_partial``)."""
        n = len(self.question_id)
        qids, all_texts = self.question_id, self.text
        group, horizon, dimension, gt = self._columns()
        keep = self._duplicate_mask(group, horizon, dimension)
        pred = np.full(n, np.nan)
        reasons = [""] * n
        for i, v in self.value.items():
            pred[i] = v
            if not np.isfinite(v):
                reasons[i] = self.reason[i]
        if not self.value:
            text_idx = None
            texts = all_texts
        else:
            text_idx = [i for i, t in enumerate(all_texts) if t is not None]
            texts = [all_texts[i] for i in text_idx]
        if texts:
            # Without forced values every item has a text; otherwise text_idx lists the items that have one.
            values, why = parse_predictions(
                cast("list[str]", texts), dimension if text_idx is None else dimension[text_idx], profile
            )
            if text_idx is None:
                pred, reasons = values, why
            else:
                pred[text_idx] = values
                for j, i in enumerate(text_idx):
                    reasons[i] = why[j]
        group_oov = np.full(len(self.group_ids), -1, dtype=np.int8)
        for g, flag in self.group_out_of_view.items():
            group_oov[g] = flag
        out_of_view = group_oov[group] if n else np.zeros(0, dtype=np.int8)
        for i, flag in self.item_out_of_view.items():
            out_of_view[i] = flag
        question_id = qids
        if not keep.all():
            idx = np.flatnonzero(keep)
            question_id = [question_id[i] for i in idx.tolist()]
            reasons = [reasons[i] for i in idx.tolist()]
            group, horizon, dimension = group[idx], horizon[idx], dimension[idx]
            gt, pred, out_of_view = gt[idx], pred[idx], out_of_view[idx]
        labels = [group_labels.get(g, (None, None)) for g in self.group_ids]
        return LsrItems(
            question_id=question_id,
            group=group,
            group_ids=self.group_ids,
            horizon=horizon,
            dimension=dimension,
            gt=gt,
            pred=pred,
            pred_reason=reasons,
            out_of_view=out_of_view,
            group_scenario=[lab[0] for lab in labels],
            group_object_class=[lab[1] for lab in labels],
            group_partial=[g in partial_groups for g in self.group_ids] if partial_groups else [],
        )

    def report(self) -> dict[str, Any]:
        return {
            "skipped": dict(sorted(self.skipped.items())),
            "forced_failures": dict(sorted(self.forced_failures.items())),
            "examples": {k: v for k, v in sorted(self.examples.items())},
        }


def finite_number(x: Any) -> float | None:
    """``x`` as a float if it is a finite JSON number (not a bool), else None."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    try:
        v = float(x)
    except OverflowError:  # an integer beyond float range
        return None
    return v if np.isfinite(v) else None


def items_from_records(
    records: Sequence[LsrRecord],
    predictions: dict[str, Any],
    profile: ToleranceProfile,
    on_invalid: str = "error",
    missing: str = "fail",
    source: str = "<predictions>",
    lines: Mapping[str, int] | None = None,
    other_questions: Mapping[str, str] | None = None,
) -> tuple[LsrItems, dict[str, Any]]:
    """Join dataset records with predictions keyed by question id.

    A prediction is free text (parsed with the profile's grammar), a number in the dimension's canonical unit
    (only for a one-dimension question), ``{"value": v, "unit": u}``, or a mapping dimension -> number. Records
    without a prediction are failures (``missing="fail"``) or left out (``missing="exclude"``), and counted.
    A prediction for a question the records do not have is ``not_a_spatiotemporal_question`` when
    ``other_questions`` (question id -> category: the dataset's questions that LSR does not score) names it, else
    ``unknown_question_id``. ``lines`` (question id -> line of the predictions file) puts the line in messages.
    """
    from stridegen.eval.lsr.answer_parser import convert_unit

    if missing not in ("fail", "exclude"):
        raise ValueError(f"missing must be 'fail' or 'exclude', got {missing!r}")
    join = _Join(source, lines or {}, other_questions or {})
    with gc_paused():
        return _items_from_records(records, predictions, profile, on_invalid, missing, join, convert_unit)


@dataclass(frozen=True)
class _Join:
    """Where the predictions come from, for messages: the file, each id's line, the questions LSR does not score."""

    source: str
    lines: Mapping[str, int]
    other_questions: Mapping[str, str]

    def where(self, question_id: str) -> str:
        line = self.lines.get(question_id)
        return f"{'' if line is None else f'line {line}: '}question {shown(question_id)}"

    def reject_unknown(self, builder: ItemBuilder, question_id: str) -> None:
        category = self.other_questions.get(question_id)
        if category is None:
            builder.reject("unknown_question_id", self.where(question_id))
        else:
            builder.reject("not_a_spatiotemporal_question", f"{self.where(question_id)} ({category})")


def _items_from_records(
    records: Sequence[LsrRecord],
    predictions: dict[str, Any],
    profile: ToleranceProfile,
    on_invalid: str,
    missing: str,
    join: _Join,
    convert_unit: Any,
) -> tuple[LsrItems, dict[str, Any]]:
    builder = ItemBuilder(join.source, on_invalid)
    dims_per_question: dict[str, int] = {}
    for r in records:
        dims_per_question[r.question_id] = dims_per_question.get(r.question_id, 0) + 1
    unknown = [q for q in predictions if q not in dims_per_question]
    for q in unknown:
        join.reject_unknown(builder, q)
    n_missing = 0
    labels: dict[str, tuple[str | None, str | None]] = {}
    partial = {r.group_id for r in records if r.partial_group}
    for r in records:
        where = f"{join.where(r.question_id)} ({r.dimension})"
        if r.dimension not in _DIM_CODE:
            builder.reject("unknown_dimension", where)
            continue
        kind = DIMENSION_KIND[r.dimension]
        gt = finite_number(r.gt_value)
        if gt is None:
            builder.reject("bad_gt_value", where)
            continue
        try:
            gt = convert_unit(gt, r.unit, kind)
        except ValueError:
            builder.reject("bad_gt_unit", where)
            continue
        labels.setdefault(r.group_id, (r.scenario, r.object_class))
        oov = -1 if r.out_of_view is None else int(bool(r.out_of_view))
        text, value, reason = None, float("nan"), "missing_prediction"
        if r.question_id not in predictions:
            n_missing += 1
            if missing == "exclude":
                continue
        else:
            text, value, problem = _read_prediction(
                predictions[r.question_id], r.dimension, kind, dims_per_question[r.question_id], convert_unit
            )
            if problem is not None:
                if not builder.bad_prediction(problem, where):
                    continue
                reason = problem
        builder.add(
            r.question_id, r.group_id, int(r.horizon_s), _DIM_CODE[r.dimension], gt, text, value, oov, where, reason
        )
    items = builder.finish(profile, labels, partial)
    report = builder.report()
    report["missing_predictions"] = n_missing
    report["missing_policy"] = missing
    report["unknown_question_ids"] = len(unknown)
    return items, report


def _read_prediction(
    pred: Any, dimension: str, kind: Kind, n_dims: int, convert_unit: Any
) -> tuple[str | None, float, str | None]:
    """(text, value, problem) for one prediction entry; ``problem`` names what is wrong, else None."""
    nan = float("nan")
    if isinstance(pred, str):
        return pred, nan, None
    if isinstance(pred, dict):
        if dimension in pred or kind in pred:
            entry = pred.get(dimension, pred.get(kind))
            return _read_prediction(entry, dimension, kind, 1, convert_unit)
        if "value" in pred:
            v = finite_number(pred["value"])
            if v is None:
                return None, nan, "bad_prediction_value"
            try:
                return None, convert_unit(v, pred.get("unit"), kind), None
            except ValueError:
                return None, nan, "bad_prediction_unit"
        return None, nan, "prediction_lacks_dimension"
    if pred is None:
        return None, nan, "null_prediction"
    v = finite_number(pred)
    if v is None:
        return None, nan, "bad_prediction_value"
    if n_dims > 1:
        return None, nan, "ambiguous_numeric_prediction"
    return None, v, None


# ============================================================================================ JSONL inputs


def question_id_of(value: Any) -> str | None:
    """A question id as read from JSON: a non-empty string, or an integer (written as its decimal text); None for
    anything else (bool, float, null, a list, an empty string)."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _question_id_problem(obj: dict[str, Any]) -> tuple[str, str]:
    """Why a line's ``question_id`` is unusable: (reason key, message)."""
    if "question_id" not in obj:
        return "missing_question_id", "missing question id"
    return (
        "bad_question_id",
        f"question_id must be a non-empty string or an integer, got {shown(obj['question_id'])}",
    )


def read_records_jsonl(path: str) -> list[LsrRecord]:
    """Dataset records, one JSON object per line with the LsrRecord fields. Malformed records raise
    PredictionFormatError naming the line (the dataset itself is wrong: no skip policy)."""
    from stridegen.core.errors import PredictionFormatError
    from stridegen.formats.textfile import iter_jsonl

    required = ("question_id", "group_id", "horizon_s", "dimension", "gt_value")
    optional = ("unit", "scenario", "object_class", "out_of_view")
    out: list[LsrRecord] = []
    for line_no, obj in iter_jsonl(path, "records file", PredictionFormatError):
        if not isinstance(obj, dict):
            raise PredictionFormatError(path, f"line {line_no}: expected an object, got {type(obj).__name__}")
        lacking = [k for k in required if k not in obj]
        if lacking:
            raise PredictionFormatError(path, f"line {line_no}: missing fields {lacking}")
        qid = question_id_of(obj["question_id"])
        if qid is None:
            raise PredictionFormatError(path, f"line {line_no}: {_question_id_problem(obj)[1]}")
        h = obj["horizon_s"]
        if isinstance(h, bool) or not isinstance(h, int | float) or h < 0 or h != int(h):
            raise PredictionFormatError(
                path, f"line {line_no}: horizon_s must be a whole number of seconds >= 0, got {shown(h)}"
            )
        if obj["dimension"] not in _DIM_CODE:
            raise PredictionFormatError(
                path, f"line {line_no}: unknown dimension {shown(obj['dimension'])}; expected one of {DIMENSIONS}"
            )
        if not isinstance(obj.get("partial_group", False), bool):
            raise PredictionFormatError(
                path, f"line {line_no}: partial_group must be true or false, got {shown(obj['partial_group'])}"
            )
        if finite_number(obj["gt_value"]) is None:
            raise PredictionFormatError(
                path, f"line {line_no}: gt_value must be a finite number, got {shown(obj['gt_value'])}"
            )
        out.append(
            LsrRecord(
                question_id=qid,
                group_id=str(obj["group_id"]),
                horizon_s=int(h),
                dimension=obj["dimension"],
                gt_value=float(obj["gt_value"]),
                partial_group=bool(obj.get("partial_group", False)),
                **{k: obj.get(k) for k in optional},
            )
        )
    return out


@dataclass
class PredictionFile:
    """A predictions JSONL as read: question id -> prediction, the line each came from, and the lines dropped
    (by reason) under a skip policy."""

    values: dict[str, Any]
    lines: dict[str, int]
    dropped: dict[str, int]


def read_predictions(path: str, on_invalid: str = "error") -> PredictionFile:
    """question_id -> prediction from ``{"question_id", "pred"}`` lines (``pred``: text, number or mapping), or
    ``{"question_id", "value"[, "unit"]}``. A question id is a string or an integer (read as its decimal text).
    A line that is not JSON, lacks a usable question id or a prediction, or repeats an id follows ``on_invalid``
    (``error`` raises PredictionFormatError naming the file and line; otherwise the line is dropped and counted).
    A UTF-8 byte-order mark is tolerated; an empty file, another encoding or bytes that are not UTF-8 are errors
    (stridegen.formats.textfile)."""
    import json

    from stridegen.core.errors import PredictionFormatError
    from stridegen.formats.textfile import iter_jsonl_lines, json_error_reason

    out = PredictionFile({}, {}, {})

    def bad(key: str, message: str) -> None:
        """A line that cannot be used: raise, or drop it and count it under ``key``."""
        if on_invalid == "error":
            raise PredictionFormatError(path, message)
        out.dropped[key] = out.dropped.get(key, 0) + 1

    for line_no, line in iter_jsonl_lines(path, "predictions file", PredictionFormatError):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            bad("not_valid_json", json_error_reason(exc, line_no))
            continue
        if not isinstance(obj, dict):
            bad("not_an_object", f"line {line_no}: expected a JSON object, got {type(obj).__name__}")
            continue
        qid = question_id_of(obj.get("question_id"))
        if qid is None:
            key, message = _question_id_problem(obj)
            bad(key, f"line {line_no}: {message}")
            continue
        if qid in out.values:
            first = out.lines[qid]
            bad("duplicate_question_id", f"line {line_no}: duplicate question id {shown(qid)} (first on line {first})")
            continue
        if "pred" in obj:
            out.values[qid] = obj["pred"]
        elif "value" in obj:
            out.values[qid] = {"value": obj["value"], "unit": obj.get("unit")}
        else:
            bad("missing_pred", f"line {line_no}: no 'pred' (or 'value') field")
            continue
        out.lines[qid] = line_no
    return out


def read_predictions_jsonl(path: str, on_invalid: str = "error") -> tuple[dict[str, Any], dict[str, int]]:
    """``read_predictions`` as (question id -> prediction, dropped lines by reason)."""
    read = read_predictions(path, on_invalid)
    return read.values, read.dropped
