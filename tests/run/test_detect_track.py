"""`stridegen detect` / `stridegen track`: results files that `stridegen eval detection` / `eval tracking` accept,
with the oracle's perfect figures (as tests/pipeline/test_pipeline_synthetic.py asserts for `validate`)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from stridegen.cli import app
from stridegen.eval.detection.evaluate import evaluate_log as evaluate_detection_log
from stridegen.eval.detection.gt import filter_eval_boxes, load_detection_gt
from stridegen.eval.tracking.evaluate import evaluate_log as evaluate_tracking_log
from stridegen.eval.validate.scoring import tracking_results, validate_log
from stridegen.formats.nuscenes_results import load_results
from stridegen.formats.tracking_results import load_tracking_results
from stridegen.logs import open_log
from stridegen.logs.synthetic.generator import generate_dataset
from stridegen.pipeline.detect import make_detector
from stridegen.pipeline.track import TrackerConfig
from stridegen.run.detect import run_detect, run_track

# The oracle emits what the evaluation keeps: ground truth with at least one LiDAR point (as `validate` runs it).
ORACLE = {"min_lidar_points": 1}


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    root = tmp_path_factory.mktemp("detect_track") / "log"
    generate_dataset(root, progress=False, overwrite=True, scenes=1, seconds=6.0, seed=1, width=320, height=180)
    return root


def test_detect_oracle_scores_perfect_detection(log, tmp_path):
    calls: list[tuple[int, int]] = []
    summary = run_detect(log, tmp_path / "det.json", "oracle", ORACLE, progress=lambda d, t: calls.append((d, t)))
    gt, context = load_detection_gt(log)
    assert summary.n_samples == len(context.sample_tokens) == summary.n_frames
    assert calls[0] == (0, summary.n_frames) and calls[-1] == (summary.n_frames, summary.n_frames)
    loaded = load_results(tmp_path / "det.json", known_sample_tokens=context.sample_tokens)
    assert len(loaded.boxes) == summary.n_boxes > 0 and loaded.nan_velocity == 0

    metrics = evaluate_detection_log(log, tmp_path / "det.json").metrics
    # mAP over the classes with ground truth (the synthetic world lacks some of the 10), as `validate` reports it
    present = sorted(set(filter_eval_boxes(gt, context, metrics.cfg.class_range)[0].detection_name.tolist()))
    assert present
    assert np.mean([metrics.mean_dist_aps[c] for c in present]) == pytest.approx(1.0)
    for c in present:
        assert all(metrics.label_tp_errors[c][m] == pytest.approx(0.0, abs=1e-12) for m in ("trans_err", "scale_err"))
    assert metrics.mean_ap == pytest.approx(len(present) / len(metrics.cfg.class_names))


def test_detect_selected_scene_still_lists_every_sample(log, tmp_path):
    reader = open_log(log)
    scene = reader.scenes()[0]
    summary = run_detect(
        log, tmp_path / "det.json", "simulated", {"profile": "bevfusion"}, seed=3, scenes=[scene.token]
    )
    data = json.loads((tmp_path / "det.json").read_text())
    assert set(data["results"]) == {f.token for s in reader.scenes() for f in s.frames}
    assert summary.n_scenes == 1
    # the seed reaches the simulated detector: the same seed, the same file; another seed, another file
    run_detect(log, tmp_path / "again.json", "simulated", {"profile": "bevfusion"}, seed=3)
    run_detect(log, tmp_path / "other.json", "simulated", {"profile": "bevfusion"}, seed=4)
    assert (tmp_path / "again.json").read_bytes() == (tmp_path / "det.json").read_bytes()
    assert (tmp_path / "other.json").read_bytes() != (tmp_path / "det.json").read_bytes()


def test_track_oracle_scores_like_validate(log, tmp_path):
    summary = run_track(log, tmp_path / "trk.json", "oracle", ORACLE, tracker_options={"max_age": 3})
    reader = open_log(log)
    tokens = [f.token for s in reader.scenes() for f in s.frames]
    results = load_tracking_results(tmp_path / "trk.json", known_sample_tokens=tokens)
    assert results.sample_tokens == tokens and len(results) == summary.n_boxes > 0
    assert set(results.tracking_name.tolist()) <= {
        "car",
        "truck",
        "bus",
        "trailer",
        "pedestrian",
        "motorcycle",
        "bicycle",
    }

    # the same rows as `validate` tracks (one code path)
    oracle = make_detector("oracle", **ORACLE)
    samples = {f.token: oracle.detect(f) for f in reader.scenes()[0].frames}
    expected = tracking_results(reader, samples, TrackerConfig(max_age=3))
    assert json.loads((tmp_path / "trk.json").read_text())["results"] == json.loads(json.dumps(expected))

    label_metrics = evaluate_tracking_log(log, tmp_path / "trk.json").result.label_metrics
    amota = float(np.nanmean(list(label_metrics["amota"].values())))
    recall = float(np.nanmean(list(label_metrics["recall"].values())))
    # perfect detections: only occlusions longer than max_age cost anything (test_pipeline_synthetic's figures)
    assert amota > 0.95 and recall > 0.97
    assert amota == pytest.approx(validate_log(reader, oracle).tracking["AMOTA"])


def test_cli_detect_and_track_write_the_files(log, tmp_path):
    runner = CliRunner()
    det = runner.invoke(app, ["detect", str(log), "--out", str(tmp_path / "d.json"), "--option", "min_lidar_points=1"])
    assert det.exit_code == 0, det.output
    assert "wrote" in det.output and (tmp_path / "d.json").exists()
    trk = runner.invoke(
        app, ["track", str(log), "--out", str(tmp_path / "t.json"), "--max-age", "2", "--matching", "hungarian"]
    )
    assert trk.exit_code == 0, trk.output
    assert (tmp_path / "t.json").exists()
    ev = runner.invoke(app, ["eval", "tracking", "--gt", str(log), "--pred", str(tmp_path / "t.json")])
    assert ev.exit_code == 0, ev.output


@pytest.mark.parametrize(
    ("command", "extra", "message"),
    [
        ("detect", ["--detector", "nosuch"], "unknown detector 'nosuch'"),
        ("detect", ["--detector", "simulated", "--option", "profle=bevfusion"], "unknown option(s) ['profle']"),
        ("detect", ["--detector", "oracle", "--option", "min_lidar_points=many"], "min_lidar_points"),
        ("detect", ["--option", "novalue"], "not of the form key=value"),
        ("detect", ["--scenes", "scene-9999"], "scene-9999"),
        ("track", ["--detector", "nosuch"], "unknown detector 'nosuch'"),
        ("track", ["--tracker", "nosuch"], "unknown tracker 'nosuch'"),
        ("track", ["--tracker-option", "max_ag=2"], "unknown option(s) ['max_ag']"),
        ("track", ["--matching", "best"], "matching"),
    ],
)
def test_cli_errors_are_one_line_with_exit_code_2(log, tmp_path, command, extra, message):
    result = CliRunner().invoke(app, [command, str(log), "--out", str(tmp_path / "x.json"), *extra])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.stderr
    assert not (tmp_path / "x.json").exists()
