"""The LSR evaluator's records of spatiotemporal QA items (``stridegen.formats.lsr_record.LsrRecord``): one per
(question, dimension), with the group's scenario relation and whether the group is partial."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from stridegen.core.vocabulary import QA_CATEGORIES
from stridegen.formats.lsr_record import LsrRecord
from stridegen.pipeline.qa.base import CATEGORY_SPATIOTEMPORAL, UNIT_DEGREE, QAItem
from stridegen.pipeline.qa.spatiotemporal_inputs import MISSING_HORIZONS_KEY


def question_id_of(item: QAItem) -> str:
    """A dataset-unique id of a spatiotemporal item: ``<group_id>/<predicate>`` (one predicate per group)."""
    return f"{item.group_id}/{item.predicate}"


def _dimensions(predicate: str) -> tuple[str, ...]:
    if predicate.startswith("ego_distance_data"):
        return ("target_distance", "target_direction")
    if predicate == "target_bearing_angle_data":
        return ("target_direction",)
    if predicate.startswith("target_speed_data"):
        return ("target_velocity",)
    if predicate.startswith("ego_speed_data"):
        return ("ego_velocity",)
    raise ValueError(f"no LSR dimension for predicate {predicate!r}")


def lsr_records(
    items: Iterable[QAItem],
    scenario_of: Callable[[str], str | None] | Mapping[str, str | None] | None = None,
    question_id: Callable[[QAItem], str] = question_id_of,
) -> list[LsrRecord]:
    """The evaluator's records (``stridegen.formats.lsr_record.LsrRecord``) of spatiotemporal items; other items are
    ignored. A distance-and-direction item gives two records with one question id (target distance from
    ``gt_value``, target direction from ``gt_extra["direction"]``); a t = 0 distance item without a direction
    gives one. ``scenario_of`` maps a group id to its scenario relation (callable or mapping; None: unknown). Items
    of a partial group (``gt_extra["missing_horizons"]``) give records with ``partial_group=True``."""
    if scenario_of is None:
        lookup: Callable[[str], str | None] = lambda _gid: None  # noqa: E731
    elif isinstance(scenario_of, Mapping):
        lookup = scenario_of.get
    else:
        lookup = scenario_of
    out: list[LsrRecord] = []
    for it in items:
        if it.category != CATEGORY_SPATIOTEMPORAL:
            continue
        category = QA_CATEGORIES.get(it.predicate)
        if category is None:
            raise ValueError(f"spatiotemporal item with unknown predicate {it.predicate!r}")
        if category[0] != it.horizon_s:
            raise ValueError(
                f"item {it.group_id}/{it.predicate}: horizon_s {it.horizon_s} but the category is at {category[0]} s"
            )
        qid = question_id(it)
        scenario = lookup(it.group_id)
        oov = None if it.out_of_view == -1 else bool(it.out_of_view)
        cls = it.object_class or None
        partial = MISSING_HORIZONS_KEY in it.gt_extra
        unit: str | None
        for dim in _dimensions(it.predicate):
            if dim == "target_direction" and it.predicate != "target_bearing_angle_data":
                if "direction" not in it.gt_extra:
                    continue
                value, unit = float(it.gt_extra["direction"]), UNIT_DEGREE
            else:
                value, unit = float(it.gt_value), it.unit or None
            out.append(
                LsrRecord(
                    question_id=qid,
                    group_id=it.group_id,
                    horizon_s=int(it.horizon_s),
                    dimension=dim,
                    gt_value=value,
                    unit=unit,
                    scenario=scenario,
                    object_class=cls,
                    out_of_view=oov,
                    partial_group=partial,
                )
            )
    return out


__all__ = ["lsr_records", "question_id_of"]
