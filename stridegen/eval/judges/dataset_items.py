"""Judge items from a stridegen dataset's QA and a predictions file.

Each prediction ``{question_id, pred}`` becomes a JudgeItem: the dataset's question, its templated answer as the
reference, the model's text as the answer, the QA category as the judge category, and ``meta`` with the
structured truth (``gt_value``, ``unit``, ``gt_label``, ``object_class``) so free-form and tolerance scoring can
be compared. With ``image_dir`` the keyframe image is drawn with its Set-of-Mark regions (what the model was shown)
and the item points at it, for judges that look at images.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stridegen.core.errors import PredictionFormatError
from stridegen.eval.judges.records import JudgeItem


def items_from_dataset(
    dataset_dir: str | Path,
    predictions: dict[str, Any],
    image_dir: str | Path | None = None,
    source: str = "<predictions>",
) -> list[JudgeItem]:
    """JudgeItems for every prediction, in the dataset's QA order; an unknown question id is an error."""
    from stridegen.shards.adapters import items_from_table
    from stridegen.shards.reader import open_dataset

    items: list[JudgeItem] = []
    found: set[str] = set()
    with open_dataset(dataset_dir) as ds:
        for scene in ds:
            if scene.qa is None:
                continue
            for qid, qa in items_from_table(scene.qa):
                if qid not in predictions:
                    continue
                found.add(qid)
                pred = predictions[qid]
                items.append(
                    JudgeItem(
                        id=qid,
                        question=qa.question,
                        reference=qa.answer,
                        answer=pred if isinstance(pred, str) else str(pred),
                        category=qa.category,
                        subcategory=qa.predicate,
                        meta={
                            "scene": scene.name,
                            "gt_value": None if qa.gt_value != qa.gt_value else qa.gt_value,
                            "unit": qa.unit,
                            "gt_label": qa.gt_label,
                            "object_class": qa.object_class,
                        },
                    )
                )
    unknown = sorted(set(predictions) - found)
    if unknown:
        raise PredictionFormatError(
            source, f"{len(unknown)} predictions name question ids the dataset does not have (e.g. {unknown[0]!r})"
        )
    if image_dir is not None:
        from stridegen.viz.render_qa import render_qa

        for item in items:
            written = render_qa(dataset_dir, item.id, image_dir)
            item.image = str(Path(written[-2]).resolve())  # the last image in time order: the keyframe's
    return items
