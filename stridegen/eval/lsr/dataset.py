"""LSR records of a stridegen dataset: the spatiotemporal QA rows of every shard, as ``LsrRecord``s.

The question ids are the dataset's own (``<scene>/k<keyframe>/<channel>/<n>``), so a predictions JSONL
``{question_id, pred}`` written against the dataset joins directly. Scenario relations are not stored in a built
dataset: ``scenarios_from_dataset`` labels every spatiotemporal group with the rule-based classifier
(``stridegen.pipeline.scenario``) from the shard tables, or an annotation sheet (``group_id, object_type,
relation[, out_of_view]`` CSV, the official STRIDE-QA-Bench layout) gives them by hand.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from stridegen.formats.lsr_record import LsrRecord


def records_from_dataset(
    dataset_dir: str | Path, scenario_of: Mapping[str, str | None] | None = None
) -> list[LsrRecord]:
    """Every spatiotemporal QA of the dataset as LSR records (scenes in manifest order)."""
    from stridegen.pipeline.qa.base import CATEGORY_SPATIOTEMPORAL, QAItem
    from stridegen.pipeline.qa.spatiotemporal_records import lsr_records
    from stridegen.shards.adapters import items_from_table
    from stridegen.shards.reader import open_dataset

    records: list[LsrRecord] = []
    with open_dataset(dataset_dir) as ds:
        for scene in ds:
            table = scene.qa
            if table is None:
                continue
            rows = [(qid, item) for qid, item in items_from_table(table) if item.category == CATEGORY_SPATIOTEMPORAL]
            ids = {id(item): qid for qid, item in rows}

            def question_id(item: QAItem, ids: dict[int, str] = ids) -> str:
                return ids[id(item)]

            records += lsr_records([item for _, item in rows], scenario_of, question_id=question_id)
    return records


def scenarios_from_sheet(path: str | Path) -> dict[str, str | None]:
    """group_id -> scenario relation from an annotation sheet CSV (missing cells -> None)."""
    from stridegen.formats.strideqa_bench import read_annotation_sheet

    return {gid: row.get("relation") for gid, row in read_annotation_sheet(path).items()}


def scenarios_from_dataset(dataset_dir: str | Path) -> dict[str, str | None]:
    """group_id -> scenario relation of every spatiotemporal group of a dataset (``scene_relations``)."""
    from stridegen.shards.reader import open_dataset
    from stridegen.shards.scenarios import scene_relations

    out: dict[str, str | None] = {}
    with open_dataset(dataset_dir) as ds:
        for scene in ds:
            out.update(scene_relations(scene))
    return out


def other_questions(dataset_dir: str | Path) -> dict[str, str]:
    """question_id -> category of every question of a dataset that LSR does not score (every category but
    spatiotemporal), so that a prediction for one is reported as such rather than as an unknown id."""
    from stridegen.pipeline.qa.base import CATEGORY_SPATIOTEMPORAL
    from stridegen.shards.reader import open_dataset

    out: dict[str, str] = {}
    with open_dataset(dataset_dir) as ds:
        for scene in ds:
            table = scene.qa
            if table is None:
                continue
            for qid, category in zip(table.question_id.tolist(), table.category.tolist(), strict=True):
                if str(category) != CATEGORY_SPATIOTEMPORAL:
                    out[str(qid)] = str(category)
    return out
