"""`stridegen report --eval` with a model's answers: the spatial scores block, a blind baseline beside its model, and
the worst answers with their Set-of-Mark image.

The inputs are made as a user makes them: predictions (the dataset's own answers with a few made wrong) with the
``predict.json`` that ``stridegen predict`` writes beside them, scored by the evaluators' library functions (``eval
spatial`` and ``eval lsr``), then the report built from their folders.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import cv2
import numpy as np
import pytest

from stridegen.eval.lsr.evaluate import evaluate
from stridegen.eval.lsr.inputs import record_items
from stridegen.eval.lsr.report import write_reports as write_lsr
from stridegen.eval.lsr.tolerance import load_profile
from stridegen.eval.spatial.evaluate import evaluate_files
from stridegen.eval.spatial.report import write_reports as write_spatial
from stridegen.shards.reader import open_dataset
from stridegen.viz.report import write_report
from tests.viz.report.test_report import Element, parse, table_rows

pytestmark = pytest.mark.slow

MODEL = "tiny-vlm"


def _questions(dataset: Path) -> list[dict]:
    """Every question of the dataset: id, category, predicate, answer, in scene and question order."""
    out = []
    with open_dataset(dataset) as ds:
        for scene in ds:
            qa = scene.qa
            for i in range(len(qa)):
                out.append(
                    {
                        "question_id": str(qa.question_id[i]),
                        "category": str(qa.category[i]),
                        "predicate": str(qa.predicate[i]),
                        "answer": str(qa.answer[i]),
                        "gt_label": str(qa.gt_label[i]),
                    }
                )
    return out


def _scale_numbers(text: str, factor: float, shift: float = 0.0) -> str:
    return re.sub(r"\d+(\.\d+)?", lambda m: f"{factor * float(m.group()) + shift:.2f}", text)


def _flip(answer: str, label: str) -> str:
    other = {"yes": "no", "no": "yes", "left": "right", "right": "left"}[label]
    return re.sub(rf"\b{label}\b", other, answer, flags=re.IGNORECASE) if label in answer.lower() else other


def _write_run(folder: Path, answers: dict[str, str], blind: bool) -> Path:
    """predictions.jsonl and a predict.json as ``stridegen predict`` writes them (the fields the report reads)."""
    folder.mkdir(parents=True)
    pred = folder / "predictions.jsonl"
    pred.write_text("".join(json.dumps({"question_id": q, "pred": a}) + "\n" for q, a in answers.items()))
    manifest = {
        "format": "stridegen-predictions",
        "source": {"path": "ds", "kind": "dataset"},
        "predictor": {"name": "openai", "options": {"model": MODEL}},
        "blind": blind,
    }
    (folder / "predict.json").write_text(json.dumps(manifest))
    return pred


def _score(dataset: Path, pred: Path, out: Path) -> tuple[Path, Path]:
    """(spatial folder, lsr folder) of the evaluators' library calls on ``pred``."""
    scores, metrics = evaluate_files(dataset, pred)
    write_spatial(scores, metrics, out / "spatial")
    profile = load_profile("paper")
    items, report = record_items(dataset, None, None, pred, profile, "error", "fail")
    write_lsr(evaluate(items, profile), out / "lsr", report, plots=False, items=items)
    return out / "spatial", out / "lsr"


@pytest.fixture(scope="module")
def runs(two_scene_dataset: Path, tmp_path_factory) -> dict:
    """A model's run (a few wrong answers of each kind) and its blind baseline (every qualitative answer flipped),
    both scored."""
    root = tmp_path_factory.mktemp("model-runs")
    questions = _questions(two_scene_dataset)
    answers = {q["question_id"]: q["answer"] for q in questions}
    qualitative = [q for q in questions if q["gt_label"] in ("yes", "no", "left", "right")]
    quantitative = [
        q
        for q in questions
        if q["category"] != "spatiotemporal" and q not in qualitative and re.search(r"\d", q["answer"])
    ]
    spatiotemporal = [q for q in questions if q["category"] == "spatiotemporal" and re.search(r"[1-9]", q["answer"])]
    assert len(qualitative) >= 2 and quantitative and len(spatiotemporal) >= 3
    wrong_spatial = {}
    for q in qualitative[:2]:
        wrong_spatial[q["question_id"]] = _flip(q["answer"], q["gt_label"])
    wrong_spatial[quantitative[0]["question_id"]] = _scale_numbers(quantitative[0]["answer"], 3.0, 50.0)
    wrong_spatial[quantitative[1]["question_id"]] = "I cannot tell from this image."
    wrong_temporal = {q["question_id"]: _scale_numbers(q["answer"], 3.0, 40.0) for q in spatiotemporal[:3]}
    model = _write_run(root / "model", {**answers, **wrong_spatial, **wrong_temporal}, blind=False)
    blind_answers = {**answers, **{q["question_id"]: _flip(q["answer"], q["gt_label"]) for q in qualitative}}
    blind = _write_run(root / "blind", blind_answers, blind=True)
    return {
        "model": _score(two_scene_dataset, model, root / "eval-model"),
        "blind": _score(two_scene_dataset, blind, root / "eval-blind"),
        "wrong_spatial": set(wrong_spatial),
        "wrong_temporal": set(wrong_temporal),
        "pred": model,
    }


@pytest.fixture(scope="module")
def page(two_scene_dataset: Path, runs: dict, tmp_path_factory) -> Element:
    out = tmp_path_factory.mktemp("model-page") / "report.html"
    evals = [*runs["model"], *runs["blind"]]
    result = write_report(two_scene_dataset, out, evals, samples=0)
    assert result.evaluations == ["lsr", "lsr", "spatial", "spatial"]
    return parse(out.read_text(encoding="utf-8"))


def _blocks(page: Element, kind: str) -> list[Element]:
    return [b for b in page.find_all("div", data_kind=kind) if "eval" in b.attrs.get("class", "").split()]


def _metrics(folder: Path) -> dict:
    return json.loads((folder / "metrics.json").read_text())


def _pct(rate: float | None) -> str:
    return "-" if rate is None else f"{100 * rate:.1f}%"


def test_evaluators_record_the_predictions_and_their_model(runs, tmp_path, two_scene_dataset):
    for folder in runs["model"]:
        inputs = _metrics(folder)["inputs"]
        assert inputs["predictions"] == str(runs["pred"])
        assert inputs["model"] == {"model": MODEL, "blind": False, "predictor": "openai"}
    assert _metrics(runs["blind"][0])["inputs"]["model"]["blind"] is True
    bare = tmp_path / "bare.jsonl"  # predictions written by other means: the path, no model
    bare.write_text(runs["pred"].read_text())
    _, metrics = evaluate_files(two_scene_dataset, bare)
    assert metrics["inputs"] == {"predictions": str(bare)}


def test_lsr_items_hold_each_questions_values_in_order(runs):
    rows = [json.loads(line) for line in (runs["model"][1] / "items.jsonl").read_text().splitlines()]
    ids = [r["question_id"] for r in rows]
    assert len(ids) == len(set(ids))
    assert set(ids) >= runs["wrong_temporal"]
    failed = {r["question_id"] for r in rows if not all(r["success"].values())}
    assert failed and failed <= runs["wrong_temporal"]  # only the perturbed answers fail
    for r in rows:
        assert set(r["gt"]) == set(r["pred"]) == set(r["success"])
        if r["question_id"] not in runs["wrong_temporal"]:
            assert r["pred"] == pytest.approx(r["gt"], rel=0.05, abs=0.05)


def test_spatial_block_shows_the_metrics_with_the_blind_column(page, runs):
    [block] = _blocks(page, "spatial")  # the blind result stands beside the model's, not as its own block
    assert block.attrs["data-model"] == MODEL
    key = block.attrs["id"]
    mine, blind = _metrics(runs["model"][0]), _metrics(runs["blind"][0])
    overall = table_rows(page, f"{key}-overall")["all"]
    o, b = mine["overall"], blind["overall"]
    assert overall[:4] == [f"{o['n']:,}", _pct(o["rate"]), _pct(b["rate"]), f"{100 * (o['rate'] - b['rate']):+.1f}"]
    assert overall[4] == _pct(o["qualitative"]["accuracy"]) and overall[5] == _pct(o["quantitative"]["success_rate"])
    assert overall[-1] == str(o["invalid"]) == "1"
    for field, suffix in (("by_category", "category"), ("by_predicate", "predicate"), ("by_distance_bin", "distance")):
        rows = table_rows(page, f"{key}-{suffix}")
        assert set(rows) == set(mine[field])
        for name, row in mine[field].items():
            assert rows[name][:3] == [f"{row['n']:,}", _pct(row["rate"]), _pct(blind[field][name]["rate"])]
            assert rows[name][-1] == str(row["invalid"])
    headers = [th.text() for th in page.by_id(f"{key}-overall").find_all("th")]
    assert headers[2:4] == ["correct", "blind"]


def test_lsr_block_shows_the_blind_baseline(page, runs):
    [block] = _blocks(page, "lsr")
    key = block.attrs["id"]
    mine, blind = _metrics(runs["model"][1]), _metrics(runs["blind"][1])
    rows = table_rows(page, f"{key}-blind")
    avg_mine = next(r for r in mine["lsr"] if r["time"] == "avg")["success_rate"]
    avg_blind = next(r for r in blind["lsr"] if r["time"] == "avg")["success_rate"]
    assert rows["lsr"] == [_pct(avg_mine), _pct(avg_blind), f"{100 * (avg_mine - avg_blind):+.1f}"]
    for name in mine["breakdowns"]["scenario"]:
        assert f"LSR · {name}" in rows
    per_horizon = table_rows(page, f"{key}-blind-horizon")
    for r in mine["lsr"]:
        if r["time"] != "avg":
            assert per_horizon[f"t={r['time']}s"][0] == _pct(r["success_rate"])


@pytest.mark.parametrize("kind", ["spatial", "lsr"])
def test_worst_answers_are_exactly_the_wrong_ones_with_their_image(page, runs, kind):
    [block] = _blocks(page, kind)
    cards = [d for d in block.find_all("div") if "data-question" in d.attrs]
    listed = [c.attrs["data-question"] for c in cards]
    if kind == "spatial":
        expected = runs["wrong_spatial"]
    else:
        rows = [json.loads(line) for line in (runs["model"][1] / "items.jsonl").read_text().splitlines()]
        expected = {r["question_id"] for r in rows if not all(r["success"].values())}
    assert len(listed) == len(set(listed)) and set(listed) == expected
    for card in cards:
        [img] = card.find_all("img")
        data = base64.b64decode(img.attrs["src"].split(",", 1)[1])
        image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
        assert image is not None and image.shape[1] == int(img.attrs["width"])
        assert card.find_all("dd", **{"class": "q"})[0].text()  # the question, from the dataset
    if kind == "spatial":
        first = cards[0].find_all("dd", **{"class": "pred"})[0].text()
        assert first == "I cannot tell from this image."  # nothing read ranks first


def test_without_a_blind_result_each_block_stands_alone(two_scene_dataset, runs, tmp_path):
    out = tmp_path / "r.html"
    write_report(two_scene_dataset, out, [runs["model"][0]], samples=0, worst=2)
    page = parse(out.read_text(encoding="utf-8"))
    [block] = _blocks(page, "spatial")
    headers = [th.text() for th in page.by_id(f"{block.attrs['id']}-overall").find_all("th")]
    assert "blind" not in headers
    assert len([d for d in block.find_all("div") if "data-question" in d.attrs]) == 2  # --worst caps the list
