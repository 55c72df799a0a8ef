"""stridegen export: the strideqa-bench format read back (our reader of the official files), scored, resumed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from stridegen.cli import app
from stridegen.core.errors import ConfigError
from stridegen.formats.rle import decode_rle
from stridegen.formats.strideqa_bench import extract_group_id, load_annotation_questions, read_annotation_sheet
from stridegen.run.export import EXPORT_MANIFEST, run_export
from stridegen.shards.reader import open_dataset


@pytest.fixture(scope="module")
def bench(dataset, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bench") / "out"
    result = run_export(dataset, out, "strideqa-bench")
    assert result.ok, [r.reason for r in result.failed]
    return out


def _tree(out: Path) -> dict[str, bytes]:
    return {
        p.relative_to(out).as_posix(): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.name != "journal.jsonl"
    }


def test_every_spatiotemporal_question_round_trips(dataset, bench):
    records = load_annotation_questions(bench / "annotation_files")
    by_source = {r["token_info"]["stridegen_question_id"]: r for r in records.values()}
    seen = 0
    with open_dataset(dataset) as ds:
        for name in ds.scenes:
            view = ds.scene(name)
            qa = view.qa
            masks = view.masks
            for q in np.flatnonzero(np.asarray(qa.category, dtype=object) == "spatiotemporal").tolist():
                rec = by_source.pop(str(qa.question_id[q]))
                seen += 1
                assert rec["question"] == qa.question[q] and rec["gt"] == qa.answer[q]
                assert rec["qa_category"] == qa.predicate[q] and rec["region_id"] == int(qa.region_ids[q][0])
                extra = json.loads(str(qa.gt_extra[q]))
                main = (
                    "direction"
                    if qa.predicate[q] == "target_bearing_angle_data"
                    else "velocity"
                    if "speed" in str(qa.predicate[q])
                    else "distance"
                )
                expected_value = {main: float(qa.gt_value[q])}
                if main == "distance" and "direction" in extra:
                    expected_value["direction"] = float(extra["direction"])
                assert rec["gt_value"] == expected_value
                assert extract_group_id(rec["question_id"]) == rec["group_id"]
                channel = str(view.cameras.channel[int(qa.channel_index[q])])
                frames = [int(f) for f in qa.frame_indices[q] if f >= 0]
                assert [rec["token_info"]["frame_tokens"][i] for i in range(4)] == [
                    str(view.frames.token[f]) for f in frames
                ]
                track = int(qa.track_index[q][0])
                assert rec["token_info"]["track_id"] == view.tracks.track_id[track]
                image_rows = {
                    (int(f), int(c)): i
                    for i, (f, c) in enumerate(
                        zip(view.array("images/frame_index"), view.array("images/channel_index"), strict=True)
                    )
                }
                for bucket, rel, frame in zip(
                    ("prev_3", "prev_2", "prev_1", "current"), rec["images"], frames, strict=True
                ):
                    assert (bench / "images" / rel).read_bytes() == view.image_bytes(channel, frame)
                    row = image_rows[(frame, int(qa.channel_index[q]))]
                    hit = np.flatnonzero((masks.image_index == row) & (masks.track_index == track))
                    h, w = rec["rle"][bucket]["size"]
                    mask = decode_rle(rec["rle"][bucket]["counts"], h, w)
                    expected = view.mask(int(hit[0])) if hit.size else np.zeros((h, w), dtype=bool)
                    assert np.array_equal(mask, expected)
    assert seen > 0 and not by_source  # nothing missing, nothing extra
    sheet = read_annotation_sheet(bench / "annotation_files" / "annotation_sheet.csv")
    assert set(sheet) == {r["group_id"] for r in records.values()}


def test_scoring_the_datasets_own_answers_gives_one_everywhere(bench, tmp_path):
    records = load_annotation_questions(bench / "annotation_files")
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"question_id": q, "pred": r["gt"]}) + "\n" for q, r in records.items()))
    res = CliRunner().invoke(
        app,
        [
            "eval",
            "lsr",
            "--bench-dir",
            str(bench / "annotation_files"),
            "--pred",
            str(preds),
            "--out",
            str(tmp_path / "lsr"),
            "--no-plots",
        ],
    )
    assert res.exit_code == 0, res.output
    metrics = json.loads((tmp_path / "lsr" / "metrics.json").read_text())
    for dim in ("target_distance", "target_direction", "target_velocity", "ego_velocity", "lsr"):
        assert {row["success_rate"] for row in metrics[dim]} == {1.0}, dim
    # every group has a scenario relation in the sheet, so the toolkit's TLC / MLSR are computed, and perfect
    tlc = metrics["temporal_consistency"]
    assert tlc and tlc[0]["relation"] == "Overall"
    assert {row[k] for row in tlc for k in ("TLC@1", "TLC@2", "TLC@3", "TLC", "MLSR")} == {1.0}
    # one wrong distance answer fails exactly that one item
    first = next(q for q, r in records.items() if r["qa_category"] == "ego_distance_data")
    wrong = {**records[first], "gt": "It is 999 meters away."}
    preds.write_text(
        "".join(
            json.dumps({"question_id": q, "pred": (wrong if q == first else r)["gt"]}) + "\n"
            for q, r in records.items()
        )
    )
    res = CliRunner().invoke(
        app,
        [
            "eval",
            "lsr",
            "--bench-dir",
            str(bench / "annotation_files"),
            "--pred",
            str(preds),
            "--out",
            str(tmp_path / "lsr2"),
            "--no-plots",
        ],
    )
    assert res.exit_code == 0, res.output
    rows = json.loads((tmp_path / "lsr2" / "metrics.json").read_text())["target_distance"]
    t0 = next(r for r in rows if r["time"] == 0)
    assert t0["success_rate"] == pytest.approx(1 - 1 / t0["sample_size"])


def test_rerun_resumes_and_two_workers_give_the_same_bytes(dataset, bench, tmp_path):
    again = run_export(dataset, bench, "strideqa-bench")
    assert [r.status for r in again.results] == ["resumed", "resumed"]
    two = run_export(dataset, tmp_path / "two", "strideqa-bench", workers=2)
    assert two.ok and _tree(tmp_path / "two") == _tree(bench)
    manifest = json.loads((bench / EXPORT_MANIFEST).read_text())
    assert manifest["exporter"] == "strideqa-bench" and manifest["totals"]["questions"] > 0


def test_unknown_format_and_output_inside_the_source_are_errors(dataset, tmp_path):
    with pytest.raises(ConfigError, match="unknown exporter 'nope'"):
        run_export(dataset, tmp_path / "x", "nope")
    with pytest.raises(ConfigError, match="outside the source"):
        run_export(dataset, dataset / "export", "strideqa-bench")
    res = CliRunner().invoke(app, ["export", str(dataset), "--format", "nope", "--out", str(tmp_path / "y")])
    assert res.exit_code == 2 and "unknown exporter 'nope'" in res.output


def test_answers_export_scores_one_with_eval_lsr_dataset(dataset, tmp_path):
    assert run_export(dataset, tmp_path / "answers", "answers").ok
    lines = (tmp_path / "answers" / "answers.jsonl").read_text().splitlines()
    with open_dataset(dataset) as ds:
        n_qa = sum(len(ds.scene(name).qa) for name in ds.scenes)
    assert len(lines) == n_qa
    spatiotemporal = tmp_path / "answers" / "answers_spatiotemporal.jsonl"
    res = CliRunner().invoke(
        app,
        [
            "eval",
            "lsr",
            "--dataset",
            str(dataset),
            "--pred",
            str(spatiotemporal),
            "--out",
            str(tmp_path / "lsr"),
            "--no-plots",
        ],
    )
    assert res.exit_code == 0, res.output
    metrics = json.loads((tmp_path / "lsr" / "metrics.json").read_text())
    assert {row["success_rate"] for row in metrics["lsr"]} == {1.0}
