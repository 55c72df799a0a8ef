"""``qa_breakdown`` (distinct rows counted first since issue 35) gives the counts the row-by-row loop gave, and a
hand-counted case."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from stridegen.shards.schema import qa_breakdown


def _row_by_row(qa: Any) -> dict[str, int]:
    """The previous implementation: four keys counted per row."""
    counts: Counter = Counter()
    for cat, cls, pred in zip(qa.category.tolist(), qa.object_class.tolist(), qa.predicate.tolist(), strict=True):
        counts[f"qa_category/{cat}"] += 1
        counts[f"qa_class/{cls}"] += 1
        counts[f"qa_category_class/{cat}/{cls}"] += 1
        counts[f"qa_predicate/{pred}"] += 1
    return dict(sorted(counts.items()))


def _table(rows: list[tuple[str, str, str]]) -> Any:
    cat, cls, pred = (np.array([r[i] for r in rows], dtype=str) for i in range(3))
    return SimpleNamespace(category=cat, object_class=cls, predicate=pred)


NAMES = st.sampled_from(["a", "b", "car", "ped/x", ""])


@given(st.lists(st.tuples(NAMES, NAMES, NAMES), max_size=60))
def test_equals_the_row_by_row_count(rows: list[tuple[str, str, str]]) -> None:
    qa = _table(rows)
    got = qa_breakdown(qa)
    assert got == _row_by_row(qa) and list(got) == sorted(got)


def test_known_counts() -> None:
    qa = _table([("ego", "car", "dist"), ("ego", "car", "dist"), ("obj", "bus", "dist"), ("ego", "bus", "left")])
    assert qa_breakdown(qa) == {
        "qa_category/ego": 3,
        "qa_category/obj": 1,
        "qa_category_class/ego/bus": 1,
        "qa_category_class/ego/car": 2,
        "qa_category_class/obj/bus": 1,
        "qa_class/bus": 2,
        "qa_class/car": 2,
        "qa_predicate/dist": 3,
        "qa_predicate/left": 1,
    }
