"""`stridegen eval spatial` on a built dataset (the session's two-scene build, tests/conftest.py): the dataset's own
answers score 1.0 on every predicate, perturbations of known size move exactly the expected answers out of
tolerance, bad and missing answers are counted, and the command writes its three files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from stridegen.cli import app
from stridegen.core.errors import PredictionFormatError
from stridegen.eval.spatial.algo import CLOCK_TOLERANCE_H, HEADING_RULE, LENGTH_RULE
from stridegen.eval.spatial.data import (
    CLOCK,
    DIRECTION,
    DISTANCE,
    FORM_CODE,
    FORMS,
    QUALITATIVE_FORMS,
    SpatialItems,
    read_dataset_items,
)
from stridegen.eval.spatial.evaluate import evaluate_dataset, evaluate_files, metrics, score
from stridegen.jobs.build import run_build
from stridegen.pipeline.qa.spatial_predicates import SPATIAL_PREDICATES
from stridegen.run.config import load_build_config
from stridegen.shards.reader import open_dataset

pytestmark = pytest.mark.slow  # every test reads the session's built dataset


@pytest.fixture(scope="module")
def read(two_scene_dataset: Path) -> tuple[SpatialItems, dict[str, str]]:
    return read_dataset_items(two_scene_dataset)


@pytest.fixture(scope="module")
def items(read: tuple[SpatialItems, dict[str, str]]) -> SpatialItems:
    return read[0]


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_items_are_the_datasets_spatial_rows(two_scene_dataset: Path, read: tuple[SpatialItems, dict]) -> None:
    items, others = read
    categories = []
    with open_dataset(two_scene_dataset) as ds:
        for scene in ds:
            qa = scene.qa
            assert qa is not None
            categories += [str(c) for c in qa.category.tolist()]
    assert len(items) == sum(c in ("object_spatial", "ego_spatial") for c in categories) > 0
    assert set(others.values()) == {"spatiotemporal"} and len(others) + len(items) == len(categories)
    assert (items.form >= 0).all(), "every spatial row of the generator has a form"
    # the qualitative / quantitative split is the row's: a unit and a number, or a label
    quantitative = ~np.isin(items.form, [FORM_CODE[f] for f in QUALITATIVE_FORMS])
    assert np.isfinite(items.gt_value[quantitative]).all() and (items.gt_label[quantitative] == "").all()
    assert np.isnan(items.gt_value[~quantitative]).all()
    # the first region's distance is the one the generator states for ego_distance (to its 2-decimal rounding)
    ego = items.predicate == "ego_distance"
    assert ego.any()
    np.testing.assert_allclose(items.distance_m[ego], items.gt_value[ego], atol=0.005 + 1e-9)
    assert np.isfinite(items.distance_m).all()


def test_the_datasets_own_answers_score_one_on_every_predicate(items: SpatialItems) -> None:
    m = metrics(score(items, dict(zip(items.question_id, items.answer, strict=True))))
    assert set(m["by_predicate"]) == set(items.predicate.tolist())
    assert len(m["by_predicate"]) >= 20  # the default predicates of the spatial generator that this build asks
    for key in ("by_predicate", "by_category", "by_object_class", "by_distance_bin"):
        for name, row in m[key].items():
            assert row["rate"] == 1.0 and row["invalid"] == 0, (key, name, row)
    assert m["overall"]["qualitative"]["accuracy"] == 1.0
    assert m["overall"]["quantitative"]["success_rate"] == 1.0
    assert m["invalid_reasons"] == {}
    forms = {FORMS[c] for c in items.form.tolist()}
    assert forms == set(FORMS), "the fixture has every answer form"


@pytest.fixture(scope="module")
def all_predicates_dataset(one_scene_log: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's one-scene log built with every spatial predicate switched on (region_width and
    region_height are off by default)."""
    out = tmp_path_factory.mktemp("spatial-all") / "ds"
    predicates = "qa.spatial_options.predicates=[" + ",".join(SPATIAL_PREDICATES) + "]"
    config = load_build_config(
        None, ["segmenter.name=projected_box", "keyframes.start_s=2", "keyframes.end_s=5", predicates]
    )
    assert run_build(one_scene_log, out, config).ok
    return out


def test_every_predicate_of_the_generator_scores_one_on_its_own_answers(all_predicates_dataset: Path) -> None:
    items, _ = read_dataset_items(all_predicates_dataset)
    m = metrics(score(items, dict(zip(items.question_id, items.answer, strict=True))))
    assert set(m["by_predicate"]) == set(SPATIAL_PREDICATES)
    assert all(row["rate"] == 1.0 and row["invalid"] == 0 for row in m["by_predicate"].values()), m["by_predicate"]


_MARGIN = 1e-3


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_perturbations_move_exactly_the_expected_answers_out(items: SpatialItems, seed: int) -> None:
    """Each quantitative answer perturbed by its own known amount (lengths times a factor in [0.3, 2], headings
    plus an offset in [-40, 40] degrees, clock hours plus a shift of 0..11 hours), written as text; qualitative
    answers stay the dataset's. An answer is correct exactly when its perturbation lies inside the band."""
    rng = np.random.default_rng(seed)
    n = len(items)
    factor = rng.uniform(0.3, 2.0, n)
    low, high = 1 - LENGTH_RULE.range, 1 + LENGTH_RULE.range
    factor[(np.abs(factor - low) < _MARGIN) | (np.abs(factor - high) < _MARGIN)] = 1.0
    offset = rng.uniform(-40.0, 40.0, n)
    offset[np.abs(np.abs(offset) - HEADING_RULE.range) < _MARGIN] = 0.0
    shift = rng.integers(0, 12, n)
    preds: dict[str, Any] = {}
    expected = np.ones(n, dtype=bool)
    for i, q in enumerate(items.question_id):
        form, gt = FORMS[int(items.form[i])], float(items.gt_value[i])
        if form == DISTANCE:
            preds[q] = f"It is {gt * factor[i]:.6f} m."
            expected[i] = gt == 0 or low < factor[i] < high
        elif form == DIRECTION:
            preds[q] = f"About {gt + offset[i]:.6f} degrees."
            expected[i] = abs(offset[i]) <= HEADING_RULE.range
        elif form == CLOCK:
            preds[q] = f"At {(int(gt) - 1 + int(shift[i])) % 12 + 1} o'clock."
            expected[i] = min(shift[i], 12 - shift[i]) <= CLOCK_TOLERANCE_H
        else:
            preds[q] = items.answer[i]
    judged = score(items, preds).judged
    assert judged.correct.tolist() == expected.tolist()
    assert 0 < expected.sum() < n  # the draw moves some answers out and keeps others in


def test_bad_answers_are_counted_and_the_files_are_written(
    two_scene_dataset: Path, read: tuple[SpatialItems, dict[str, str]], tmp_path: Path
) -> None:
    items, others = read
    ids = items.question_id
    rows: list[dict[str, Any]] = [{"question_id": q, "pred": a} for q, a in zip(ids, items.answer, strict=True)]
    rows[0]["pred"] = ""
    rows[1]["pred"] = "I cannot tell."
    rows[2]["pred"] = None
    del rows[3]  # no prediction for the fourth question
    rows[3]["pred"] = 12  # a number: fine for a quantitative row, invalid for a qualitative one
    # a prediction for a spatiotemporal question of the dataset: counted, not scored here
    st_id = next(q for q, category in others.items() if category == "spatiotemporal")
    rows.append({"question_id": st_id, "pred": "10 m"})
    pred = _write(tmp_path / "pred.jsonl", rows)
    (tmp_path / "pred_nan.jsonl").write_text(pred.read_text().replace('"pred": null', '"pred": NaN'))
    result = CliRunner().invoke(
        app, ["eval", "spatial", "--dataset", str(two_scene_dataset), "--pred", str(pred), "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "correct (%)" in result.stdout and "questions  " in result.stdout  # a table for a person
    as_json = CliRunner().invoke(
        app,
        ["eval", "spatial", "--dataset", str(two_scene_dataset), "--pred", str(pred), "--out", str(tmp_path / "j")]
        + ["--json"],
    )
    summary = json.loads(as_json.stdout[: as_json.stdout.index("}") + 1])
    assert summary["questions"] == len(items)
    assert f"{summary['correct'] * 100:.1f}" in result.stdout
    assert "1 spatial questions have no prediction" in result.stderr
    out = tmp_path / "o"
    m = json.loads((out / "metrics.json").read_text())
    assert m == json.loads(json.dumps(evaluate_dataset(two_scene_dataset, pred)))
    assert m["overall"]["n"] == len(items)
    assert m["counts"]["missing_predictions"] == 1
    assert m["counts"]["predictions_of_other_categories"] == {"spatiotemporal": 1}
    invalid = m["invalid_reasons"]
    assert invalid["missing_prediction"] == 1 and invalid["empty"] == 1 and invalid["null_prediction"] == 1
    assert m["overall"]["invalid"] == sum(invalid.values()) >= 4
    lines = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]
    assert [r["question_id"] for r in lines] == ids
    assert sum(not r["correct"] for r in lines) == m["overall"]["n"] - m["overall"]["correct"]
    assert {r["reason"] for r in lines} - {""} == set(invalid)
    assert "## By predicate" in (out / "metrics.md").read_text()
    nan_scores, _ = evaluate_files(two_scene_dataset, tmp_path / "pred_nan.jsonl")
    assert nan_scores.answers.reason[2] in ("bad_prediction_value", "bad_prediction_type")


def test_a_prediction_for_a_question_the_dataset_lacks_names_its_line(two_scene_dataset: Path, tmp_path: Path) -> None:
    pred = _write(tmp_path / "pred.jsonl", [{"question_id": "no/such/question", "pred": "yes"}])
    with pytest.raises(PredictionFormatError, match=r"line 1: question 'no/such/question' is not a question"):
        evaluate_dataset(two_scene_dataset, pred)
