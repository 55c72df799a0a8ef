"""Hostile inputs to the evaluators (issue 33): a device that never ends, JSON nested 100,000 deep, a repeated key
and a prediction that is not text each give one error line naming the file (and line), exit 2, in bounded time
and memory; none scores a silently different result. The commands run in-process through the CLI app."""

from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from stridegen.cli import app
from stridegen.eval.lsr import bench as sb

LSR_FIXTURE = Path(__file__).parent / "lsr" / "fixtures" / "strideqa_bench_mini"
DEEP = "[" * 100_000 + "]" * 100_000


def _run(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, args)
    return result.exit_code, result.output


def _records(tmp_path: Path) -> Path:
    """An LsrRecord JSONL: question 'a' asks target distance and direction, 'b' the ego speed."""
    rows = [
        {"question_id": "a", "group_id": "g", "horizon_s": 0, "dimension": "target_distance", "gt_value": 12.0},
        {"question_id": "a", "group_id": "g", "horizon_s": 0, "dimension": "target_direction", "gt_value": 0.0},
        {"question_id": "b", "group_id": "g", "horizon_s": 0, "dimension": "ego_velocity", "gt_value": 5.0},
    ]
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _lsr(tmp_path: Path, pred: Path | str, *extra: str) -> tuple[int, str]:
    records = _records(tmp_path)
    return _run(
        ["eval", "lsr", "--records", str(records), "--pred", str(pred), "--out", str(tmp_path / "o")]
        + ["--no-plots", *extra]
    )


def _bounded(run: Any) -> tuple[int, str]:
    """``run()`` with its time and its peak of Python memory: well under a second's worth of a device's bytes."""
    tracemalloc.start()
    t0 = time.monotonic()
    try:
        code, output = run()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.monotonic() - t0 < 30.0
    assert peak < 64 * (1 << 20), f"peak {peak / 2**20:.0f} MiB"
    return code, output


# ------------------------------------------------------------------------------------------- /dev/zero
def test_lsr_pred_dev_zero_is_one_error_in_bounded_memory(tmp_path: Path) -> None:
    code, output = _bounded(lambda: _lsr(tmp_path, "/dev/zero"))
    assert code == 2, output
    assert "error: /dev/zero: line 1: predictions file holds a NUL byte (byte offset 0)" in output


def test_detection_pred_dev_zero_is_one_error_in_bounded_memory(nuscenes_demo: Path) -> None:
    code, output = _bounded(lambda: _run(["eval", "detection", "--gt", str(nuscenes_demo), "--pred", "/dev/zero"]))
    assert code == 2, output
    assert "error: /dev/zero: line 1: results file holds a NUL byte" in output


# ---------------------------------------------------------------------------------------- deep nesting
def test_lsr_deep_prediction_line_names_file_and_line(tmp_path: Path) -> None:
    pred = tmp_path / "deep.jsonl"
    pred.write_text('{"question_id": "b", "pred": "5 m/s"}\n{"question_id": "a", "pred": ' + DEEP + "}\n")
    code, output = _lsr(tmp_path, pred)
    assert code == 2, output
    # 29 characters before the first "[" (depth 2 inside the object): the 64th "[" opens level 65 at column 93
    assert "deep.jsonl: line 2: JSON nested deeper than 64 levels (column 93)" in output
    code, output = _lsr(tmp_path, pred, "--on-invalid", "skip")  # a skip policy drops and counts the line
    assert code == 0, output
    doc = json.loads((tmp_path / "o" / "metrics.json").read_text())
    assert doc["inputs"]["dropped_prediction_lines"] == {"nested_too_deep": 1}


@pytest.mark.parametrize("command", ["detection", "tracking"])
def test_results_nested_deep_is_one_error(command: str, nuscenes_demo: Path, tmp_path: Path) -> None:
    pred = tmp_path / "deep.json"
    pred.write_text('{"meta": {}, "results": ' + DEEP + "}", encoding="utf-8")
    code, output = _run(["eval", command, "--gt", str(nuscenes_demo), "--pred", str(pred)])
    assert code == 2, output
    # 24 characters before the first "[" (depth 2): the 64th "[" opens level 65 at column 88
    assert "deep.json: line 1: JSON nested deeper than 64 levels (column 88)" in output


def test_spatial_deep_prediction_is_one_error(tmp_path: Path) -> None:
    pred = tmp_path / "deep.jsonl"
    pred.write_text('{"question_id": "q", "pred": ' + DEEP + "}\n", encoding="utf-8")
    code, output = _run(
        ["eval", "spatial", "--dataset", str(tmp_path), "--pred", str(pred), "--out", str(tmp_path / "o")]
    )
    assert code == 2, output
    assert "deep.jsonl: line 1: JSON nested deeper than 64 levels" in output


# ------------------------------------------------------------------------------------------ repeated key
def test_lsr_repeated_key_in_a_prediction_is_rejected(tmp_path: Path) -> None:
    pred = tmp_path / "pred.jsonl"
    pred.write_text('{"question_id": "b", "pred": "1 m/s", "pred": "5 m/s"}\n', encoding="utf-8")
    code, output = _lsr(tmp_path, pred)
    assert code == 2, output  # before: the last "pred" won and scored a success
    assert "pred.jsonl: line 1: duplicate key 'pred' in one object" in output


def test_lsr_repeated_key_in_a_response_file_is_rejected(tmp_path: Path) -> None:
    records = [r for _, recs in sb.load_responses(LSR_FIXTURE / "responses") for r in recs]
    text = json.dumps(records)
    text = text.replace('"pred": ', '"pred": "nothing", "pred": ', 1)
    (tmp_path / "run_t0.json").write_text(text, encoding="utf-8")
    code, output = _run(["eval", "lsr", "--responses", str(tmp_path), "--out", str(tmp_path / "o"), "--no-plots"])
    assert code == 2, output
    assert "run_t0.json: duplicate key 'pred' in one object" in output


# --------------------------------------------------------------------------------------- non-text pred
@pytest.mark.parametrize("pred", [True, ["12 m"], {"unknown": 1}, None])
def test_lsr_non_text_pred_is_an_error_naming_file_and_line(tmp_path: Path, pred: Any) -> None:
    path = tmp_path / "pred.jsonl"
    path.write_text(
        json.dumps({"question_id": "b", "pred": "5 m/s"})
        + "\n"
        + json.dumps({"question_id": "a", "pred": pred})
        + "\n",
        encoding="utf-8",
    )
    code, output = _lsr(tmp_path, path)
    assert code == 2, output
    assert "pred.jsonl: line 2: question 'a' (target_distance):" in output
    code, output = _lsr(tmp_path, path, "--on-invalid", "fail")  # documented: kept as a counted failure
    assert code == 0, output
    doc = json.loads((tmp_path / "o" / "metrics.json").read_text())
    assert sum(doc["inputs"]["forced_failures"].values()) == 2  # both dimensions of 'a'


def test_lsr_one_value_for_a_two_dimension_question_is_ambiguous(tmp_path: Path) -> None:
    path = tmp_path / "pred.jsonl"
    path.write_text('{"question_id": "a", "value": 12}\n', encoding="utf-8")
    code, output = _lsr(tmp_path, path, "--missing", "fail")
    assert code == 2, output  # before: 12 was read as the distance and as the direction, scoring distance right
    assert "pred.jsonl: line 1: question 'a' (target_distance): ambiguous numeric prediction" in output


def test_lsr_non_text_pred_with_official_questions_is_an_error(tmp_path: Path) -> None:
    qid = next(iter(sb.load_annotation_questions(LSR_FIXTURE)))
    path = tmp_path / "pred.jsonl"
    path.write_text(json.dumps({"question_id": qid, "pred": 12.5}) + "\n", encoding="utf-8")
    code, output = _run(
        [
            "eval",
            "lsr",
            "--bench-dir",
            str(LSR_FIXTURE),
            "--pred",
            str(path),
            "--out",
            str(tmp_path / "o"),
            "--no-plots",
        ]
    )
    assert code == 2, output
    assert f"pred.jsonl: line 1 (question '{qid}'): pred not text" in output  # was 'record 0'
