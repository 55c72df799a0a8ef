"""STRIDE-QA localization evaluation, orchestrated: check the items, judge each with the profile's rules, pair
them into localization slots, and aggregate success rates, temporal consistency, breakdowns and counts into an
``LsrResult`` (the metrics are defined in ``stridegen.eval.lsr.algo``)."""

from __future__ import annotations

from collections import Counter

from stridegen.core.gc_pause import gc_paused
from stridegen.eval.lsr.algo import (
    build_slots,
    dimension_rates,
    item_success,
    label_breakdown,
    rate_table,
    temporal_consistency,
    view_breakdown,
)
from stridegen.eval.lsr.data import LsrItems, LsrResult, unique_inverse
from stridegen.eval.lsr.tolerance import ToleranceProfile


def evaluate(items: LsrItems, profile: ToleranceProfile) -> LsrResult:
    """Score every item with the profile's rules and aggregate (definitions: ``stridegen.eval.lsr.algo``)."""
    with gc_paused():
        return _evaluate(items, profile)


def _evaluate(items: LsrItems, profile: ToleranceProfile) -> LsrResult:
    items.check()
    success = item_success(items, profile)
    slots = build_slots(items, success)
    rates = dimension_rates(items, success)
    if len(slots.group):
        rates["lsr"] = rate_table(slots.success, slots.horizon)
    temporal = temporal_consistency(
        slots,
        items.group_scenario,
        profile.consistency_requires_relation,
        int(items.horizon.max()) if len(items) else None,
        items.group_partial,
    )
    breakdowns = {
        "scenario": label_breakdown(items, success, slots, items.group_scenario),
        "object_class": label_breakdown(items, success, slots, items.group_object_class),
        "out_of_view": view_breakdown(items, success, slots),
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
