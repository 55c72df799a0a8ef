"""Evaluators fed from a built stridegen dataset: `eval lsr --dataset`, `judge run --dataset`, judge items."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stridegen.cli.eval_lsr import eval_lsr
from stridegen.jobs.build import run_build
from stridegen.run.config import load_build_config
from stridegen.shards.reader import open_dataset

pytestmark = pytest.mark.slow  # every test reads a dataset built by the module's fixture
runner = CliRunner()


@pytest.fixture(scope="module")
def dataset(one_scene_log: Path, tmp_path_factory) -> Path:
    """The session's one-scene synthetic log (tests/conftest.py) built with projected-box masks."""
    root = tmp_path_factory.mktemp("dsin")
    config = load_build_config(None, ["segmenter.name=projected_box"])
    result = run_build(one_scene_log, root / "ds", config)
    assert result.ok
    return root / "ds"


def _qa_rows(dataset: Path) -> list[dict]:
    rows = []
    with open_dataset(dataset) as ds:
        for scene in ds:
            qa = scene.qa
            for i in range(len(qa)):
                rows.append(
                    {
                        "question_id": str(qa.question_id[i]),
                        "category": str(qa.category[i]),
                        "answer": str(qa.answer[i]),
                        "group_id": str(qa.group_id[i]),
                    }
                )
    return rows


def _lsr_app():
    import typer

    app = typer.Typer()
    app.command()(eval_lsr)
    app.command("noop")(lambda: None)
    return app


def test_lsr_scores_the_datasets_own_answers_perfectly_and_a_wrong_one_lower(dataset, tmp_path):
    rows = [r for r in _qa_rows(dataset) if r["category"] == "spatiotemporal"]
    assert rows, "the fixture must have spatiotemporal QA"
    pred = tmp_path / "pred.jsonl"
    pred.write_text("".join(json.dumps({"question_id": r["question_id"], "pred": r["answer"]}) + "\n" for r in rows))
    result = runner.invoke(
        _lsr_app(),
        ["eval-lsr", "--dataset", str(dataset), "--pred", str(pred), "--out", str(tmp_path / "lsr"), "--no-plots"],
    )
    assert result.exit_code == 0, result.output
    metrics = json.loads((tmp_path / "lsr" / "metrics.json").read_text())
    for dim in ("target_distance", "target_direction", "target_velocity", "ego_velocity", "lsr"):
        assert [row["success_rate"] for row in metrics[dim]] == [1.0] * 5, dim
    assert metrics["temporal_consistency"][0]["TLC"] == 1.0
    groups = {r["group_id"] for r in rows}
    assert metrics["counts"]["groups"] == len(groups)

    # One group's distance answers become nonsense: that group's TLC drops, LSR falls below 1.
    bad_group = sorted(groups)[0]
    lines = [
        {"question_id": r["question_id"], "pred": "I cannot tell." if r["group_id"] == bad_group else r["answer"]}
        for r in rows
    ]
    pred.write_text("".join(json.dumps(x) + "\n" for x in lines))
    result = runner.invoke(
        _lsr_app(),
        ["eval-lsr", "--dataset", str(dataset), "--pred", str(pred), "--out", str(tmp_path / "lsr2"), "--no-plots"],
    )
    assert result.exit_code == 0, result.output
    metrics = json.loads((tmp_path / "lsr2" / "metrics.json").read_text())
    tlc = metrics["temporal_consistency"][0]["TLC"]
    assert tlc == pytest.approx(1 - 1 / len(groups))


def test_lsr_dataset_rejects_unknown_question_ids(dataset, tmp_path):
    pred = tmp_path / "pred.jsonl"
    pred.write_text(json.dumps({"question_id": "scene-9999/k000/CAM_FRONT/0000", "pred": "3 m"}) + "\n")
    result = runner.invoke(
        _lsr_app(),
        ["eval-lsr", "--dataset", str(dataset), "--pred", str(pred), "--out", str(tmp_path / "lsr"), "--no-plots"],
    )
    assert result.exit_code == 2
    assert "unknown_question_id" in result.output or "scene-9999" in result.output


def test_lsr_dataset_skips_a_spatial_question_as_such(dataset, tmp_path):
    """A prediction for one of the dataset's spatial questions (a whole dataset's predictions, as `stridegen predict`
    writes them) is counted as "not a spatiotemporal question", not an unknown id, under every --on-invalid."""
    rows = _qa_rows(dataset)
    spatial = next(r for r in rows if r["category"] != "spatiotemporal")
    temporal = [r for r in rows if r["category"] == "spatiotemporal"]
    pred = tmp_path / "pred.jsonl"
    lines = [{"question_id": r["question_id"], "pred": r["answer"]} for r in temporal]
    lines.insert(1, {"question_id": spatial["question_id"], "pred": "3 m"})
    pred.write_text("".join(json.dumps(x) + "\n" for x in lines))
    args = ["eval-lsr", "--dataset", str(dataset), "--pred", str(pred), "--out", str(tmp_path / "lsr"), "--no-plots"]
    for policy in ("error", "skip"):
        result = runner.invoke(_lsr_app(), [*args, "--on-invalid", policy])
        assert result.exit_code == 0, result.output
        report = json.loads((tmp_path / "lsr" / "metrics.json").read_text())["inputs"]
        assert report["skipped"] == {"not_a_spatiotemporal_question": 1} and report["unknown_question_ids"] == 1


def test_judge_items_from_dataset_carry_question_reference_truth_and_marked_image(dataset, tmp_path):
    from stridegen.core.errors import PredictionFormatError
    from stridegen.eval.judges.dataset_items import items_from_dataset

    rows = _qa_rows(dataset)
    spatial = next(r for r in rows if r["category"] == "object_spatial")
    temporal = next(r for r in rows if r["category"] == "spatiotemporal")
    preds = {spatial["question_id"]: "Yes.", temporal["question_id"]: "About 12 m."}
    items = items_from_dataset(dataset, preds, tmp_path / "images")
    by_id = {it.id: it for it in items}
    assert by_id[spatial["question_id"]].reference == spatial["answer"]
    assert by_id[spatial["question_id"]].answer == "Yes."
    assert by_id[temporal["question_id"]].category == "spatiotemporal"
    assert by_id[spatial["question_id"]].meta["gt_label"] in ("yes", "no")
    for it in items:
        import cv2

        img = cv2.imread(it.image)
        assert img is not None and img.shape[:2] == (180, 320)
    with pytest.raises(PredictionFormatError, match="does not have"):
        items_from_dataset(dataset, {"nope": "x"})


def test_judge_run_dry_run_on_a_dataset(dataset, tmp_path):
    pytest.importorskip("openai")
    from stridegen.cli.judge import judge_app

    rows = _qa_rows(dataset)[:3]
    pred = tmp_path / "pred.jsonl"
    pred.write_text("".join(json.dumps({"question_id": r["question_id"], "pred": "no idea"}) + "\n" for r in rows))
    result = runner.invoke(
        judge_app,
        [
            "run",
            "--method",
            "general",
            "--dataset",
            str(dataset),
            "--pred",
            str(pred),
            "--out",
            str(tmp_path / "judge"),
            "--model",
            "gpt-4o-2024-08-06",
            "--dry-run",
            "--show-requests",
            "3",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "dry run of general" in result.output
    assert rows[0]["answer"][:30] in result.output  # the dataset's answer is the reference the judge sees
    bad = runner.invoke(judge_app, ["run", "--method", "general", "--dataset", str(dataset), "--dry-run"])
    assert bad.exit_code != 0 and "--pred" in bad.output


def test_inspect_prints_visibility_and_qa_tables(dataset):
    from stridegen.cli.build import _standalone_app

    result = runner.invoke(_standalone_app(), ["inspect", str(dataset)])
    assert result.exit_code == 0, result.output
    assert "visibility (projected_box)" in result.output
    text = " ".join(result.output.split())  # per-rule counts, named apart from the report's cumulative funnel
    assert "passing each rule on its own: box_iou " in text and "visible (passing all) " in text
    assert "QA per category and class" in result.output
