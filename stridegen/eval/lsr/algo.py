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

from collections.abc import Sequence
from typing import Any

import numpy as np

from stridegen.eval.lsr.data import (
    DIMENSION_CODE,
    DIMENSION_KIND,
    DIMENSIONS,
    LsrItems,
    Slots,
    slot_key,
    unique_inverse,
)
from stridegen.eval.lsr.tolerance import ToleranceProfile

_DIST, _DIR = DIMENSION_CODE["target_distance"], DIMENSION_CODE["target_direction"]


def item_success(items: LsrItems, profile: ToleranceProfile) -> np.ndarray:
    """Boolean success per item: its dimension kind's rule of the profile over (truth, prediction)."""
    success = np.zeros(len(items), dtype=bool)
    for code, name in enumerate(DIMENSIONS):
        sel = items.dimension == code
        if sel.any():
            success[sel] = profile.rule(DIMENSION_KIND[name]).judge(items.gt[sel], items.pred[sel])
    return success


def rate_table(success: np.ndarray, horizon: np.ndarray) -> list[dict[str, Any]]:
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


def dimension_rates(
    items: LsrItems, success: np.ndarray, mask: np.ndarray | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Dimension name -> ``rate_table`` of its items (those in ``mask`` when given); dimensions without items are
    left out."""
    rates: dict[str, list[dict[str, Any]]] = {}
    for code, name in enumerate(DIMENSIONS):
        sel = items.dimension == code
        if mask is not None:
            sel &= mask
        if sel.any():
            rates[name] = rate_table(success[sel], items.horizon[sel])
    return rates


def build_slots(items: LsrItems, success: np.ndarray) -> Slots:
    """Pair each (group, horizon)'s target distance and direction items into one localization slot."""
    loc = np.flatnonzero((items.dimension == _DIST) | (items.dimension == _DIR))
    n_h = int(items.horizon.max()) + 1 if len(items) else 1
    key = slot_key(items.group[loc], items.horizon[loc], n_h)
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


def label_breakdown(
    items: LsrItems, success: np.ndarray, slots: Slots, group_label: Sequence[str | None]
) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Label value -> the dimension rates and LSR of the items and slots of the groups with that label
    (``group_label``: one entry per group code, None: unlabelled, left out)."""
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
        rates = dimension_rates(items, success, item_label == code)
        sel = slot_label == code
        if sel.any():
            rates["lsr"] = rate_table(slots.success[sel], slots.horizon[sel])
        out[value] = rates
    return out


def view_breakdown(items: LsrItems, success: np.ndarray, slots: Slots) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """``in_view`` / ``out_of_view`` -> the dimension rates and LSR of the items and slots with that view flag
    (unknown flags are left out)."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for flag, name in ((0, "in_view"), (1, "out_of_view")):
        rates = dimension_rates(items, success, items.out_of_view == flag)
        sel = slots.out_of_view == flag
        if sel.any():
            rates["lsr"] = rate_table(slots.success[sel], slots.horizon[sel])
        if rates:
            out[name] = rates
    return out
