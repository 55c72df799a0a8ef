"""`judge run --dataset --dry-run` on the session's two-scene dataset: each distinct Set-of-Mark image is drawn once
and shared by the questions that show it, and the printed summary matches the requests file it writes."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import cv2
import numpy as np
import pytest
from typer.testing import CliRunner

import stridegen.viz.render_qa as render_qa_module
from stridegen.cli.judge import judge_app
from stridegen.shards.reader import open_dataset

pytestmark = pytest.mark.slow

runner = CliRunner()


def _question_ids(dataset: Path) -> list[str]:
    with open_dataset(dataset) as ds:
        return [str(q) for scene in ds if scene.qa is not None for q in scene.qa.question_id]


def _marks_keys(dataset: Path) -> dict[str, tuple[object, ...]]:
    """Question id -> (scene, camera, frame, regions marked) of the image its judge item shows."""
    keys = {}
    with open_dataset(dataset) as ds:
        for scene in ds:
            for row, qid in enumerate(scene.qa.question_id if scene.qa is not None else []):
                keyframe_frame, frames = render_qa_module.question_frames(scene, row)
                marks = render_qa_module.question_frame_marks(scene, row, frames[-1], keyframe_frame)
                keys[str(qid)] = (scene.name, *marks.key)
    return keys


@pytest.fixture(scope="module")
def dry_run(two_scene_dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A dry run of ``general`` over every question of the dataset, the draw function counting its calls."""
    tmp = tmp_path_factory.mktemp("judge-dry-run")
    qids = _question_ids(two_scene_dataset)
    pred = tmp / "pred.jsonl"
    pred.write_text("".join(json.dumps({"question_id": q, "pred": "no idea"}) + "\n" for q in qids))
    drawn: list[tuple[object, ...]] = []
    draw = render_qa_module.draw_frame_marks

    def counting_draw(view, marks, alpha):
        drawn.append((view.name, *marks.key))
        return draw(view, marks, alpha)

    out = tmp / "judge"
    args = ["run", "--method", "general", "--dataset", str(two_scene_dataset), "--pred", str(pred)]
    args += ["--out", str(out), "--model", "gpt-4o-2024-08-06", "--dry-run"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(render_qa_module, "draw_frame_marks", counting_draw)
        result = runner.invoke(judge_app, args)
    assert result.exit_code == 0, result.output
    return {"qids": qids, "drawn": drawn, "out": out, "stdout": result.stdout}


def _request_lines(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "dry_run_requests.jsonl").read_text().splitlines()]


def _image_paths(lines: list[dict]) -> list[str]:
    return [
        part["image_url"]["path"]
        for line in lines
        for message in line.get("messages", [])
        if isinstance(message["content"], list)
        for part in message["content"]
        if part["type"] == "image_url"
    ]


def test_each_distinct_image_is_drawn_once(dry_run: dict, two_scene_dataset: Path) -> None:
    keys = _marks_keys(two_scene_dataset)
    drawn = dry_run["drawn"]
    assert len(dry_run["qids"]) > len(set(keys.values())) > 1  # questions do share images
    assert Counter(drawn).most_common(1)[0][1] == 1  # no image drawn twice
    assert set(drawn) == set(keys.values())  # and every image a question shows is drawn
    files = sorted((dry_run["out"] / "images").iterdir())
    assert all(f.suffix == ".jpg" for f in files) and 1 < len(files) <= len(drawn)
    paths = _image_paths(_request_lines(dry_run["out"]))
    assert len(paths) == len(dry_run["qids"])  # one image per request of `general`
    assert {dry_run["out"] / p for p in paths} == set(files)


def test_summary_matches_the_requests_file(dry_run: dict) -> None:
    out = dry_run["out"]
    lines = _request_lines(out)
    requests = [line for line in lines if "messages" in line]
    summary = json.loads((out / "dry_run_summary.json").read_text())
    assert summary["items"] == len(dry_run["qids"])
    assert summary["requests"] == len(requests) and summary["not_sendable"] == len(lines) - len(requests) == 0
    assert summary["cached"] == 0
    assert summary["distinct_images"] == len(set(_image_paths(requests)))
    assert summary["est_prompt_tokens"] == sum(line["est_prompt_tokens"] for line in requests)
    assert summary["max_output_tokens"] == sum(line["max_output_tokens"] for line in requests)
    assert len({line["key"] for line in requests}) == len(requests)
    stdout = dry_run["stdout"]
    assert not any(line.startswith("{") for line in stdout.splitlines())  # no request printed by default
    for figure in ("items", "requests", "distinct_images", "est_prompt_tokens", "max_output_tokens"):
        assert f"{summary[figure]:,}" in stdout, figure
    assert f"${summary['est_cost_usd_upper']:.4f}" in stdout and "dry_run_requests.jsonl" in stdout


def test_the_judge_sees_what_render_shows(dry_run: dict, two_scene_dataset: Path, tmp_path: Path) -> None:
    """The shared JPEG of a spatial question is the image ``stridegen render`` draws for it, up to JPEG loss."""
    lines = [line for line in _request_lines(dry_run["out"]) if "messages" in line]
    by_item = dict(zip((line["item"] for line in lines), _image_paths(lines), strict=True))
    with open_dataset(two_scene_dataset) as ds:
        qa = next(scene.qa for scene in ds if scene.qa is not None)
        qid = next(str(q) for q, c in zip(qa.question_id, qa.category, strict=True) if c != "spatiotemporal")
    png = render_qa_module.render_qa(two_scene_dataset, qid, tmp_path)[0]
    rendered = cv2.imread(str(png)).astype(np.int16)
    shared = cv2.imread(str(dry_run["out"] / by_item[qid])).astype(np.int16)
    assert shared.shape == rendered.shape and float(np.abs(shared - rendered).mean()) < 2.0
