"""`stridegen detect` / `stridegen track`: results files that `stridegen eval detection` / `eval tracking` accept,
with the oracle's perfect figures (as tests/pipeline/test_pipeline_synthetic.py asserts for `validate`)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from stridegen.cli import app
from stridegen.core import registry
from stridegen.core.errors import ConfigError, StrideGenError
from stridegen.eval.detection.evaluate import evaluate_log as evaluate_detection_log
from stridegen.eval.detection.gt import filter_eval_boxes, load_detection_gt
from stridegen.eval.tracking.evaluate import evaluate_log as evaluate_tracking_log
from stridegen.eval.validate.scoring import tracking_results, validate_log
from stridegen.formats.nuscenes_results import load_results
from stridegen.formats.tracking_results import load_tracking_results
from stridegen.jobs.detect import run_detect, run_track
from stridegen.logs import open_log
from stridegen.logs.synthetic.generator import generate_dataset
from stridegen.pipeline.detect import make_detector
from stridegen.pipeline.track import TrackerConfig

pytestmark = pytest.mark.slow  # the tests detect and track over a generated log

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
    assert "AMOTA" in ev.stdout and not ev.stdout.lstrip().startswith("{")
    # --json: the summary that --out writes, and nothing else on stdout (issue 31)
    for command, results in (("tracking", "t.json"), ("detection", "d.json")):
        args = ["eval", command, "--gt", str(log), "--pred", str(tmp_path / results), "--json"]
        printed = runner.invoke(app, [*args, "--out", str(tmp_path / f"{command}-summary.json")])
        assert printed.exit_code == 0, printed.output
        assert json.loads(printed.stdout) == json.loads((tmp_path / f"{command}-summary.json").read_text())


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


# ------------------------------------------------------------------------------------------- on the scene runner
@pytest.fixture(scope="module")
def two_scenes(tmp_path_factory):
    root = tmp_path_factory.mktemp("detect_track_runner") / "log"
    generate_dataset(root, progress=False, overwrite=True, scenes=2, seconds=2.0, seed=4, width=160, height=90)
    return root


SIMULATED = {"profile": "bevfusion"}


def test_two_workers_and_a_resumed_run_write_the_same_bytes(two_scenes, tmp_path):
    one = run_track(two_scenes, tmp_path / "one.json", "simulated", SIMULATED, seed=2)
    two = run_track(two_scenes, tmp_path / "two.json", "simulated", SIMULATED, seed=2, workers=2)
    assert one.ok and two.ok and one.n_scenes == 2 and one.n_boxes > 0
    assert (tmp_path / "two.json").read_bytes() == (tmp_path / "one.json").read_bytes()
    assert (one.n_frames, one.n_tracks, one.class_counts) == (two.n_frames, two.n_tracks, two.class_counts)
    det_one = run_detect(two_scenes, tmp_path / "d1.json", "simulated", SIMULATED, seed=2)
    det_two = run_detect(two_scenes, tmp_path / "d2.json", "simulated", SIMULATED, seed=2, workers=2)
    assert det_one.ok and det_two.ok and det_one.class_counts == det_two.class_counts
    assert (tmp_path / "d2.json").read_bytes() == (tmp_path / "d1.json").read_bytes()

    # the parts in <out>.parts/ are reused: one intact part is resumed, a damaged one is made again
    parts = sorted((tmp_path / "one.json.parts" / "parts").glob("*.jsonl"))
    assert [p.stem for p in parts] == [r.scene for r in one.results]
    parts[1].write_bytes(parts[1].read_bytes().replace(b"sample_token", b"sample_tokeN", 1))
    (tmp_path / "one.json").unlink()
    calls: list[tuple[int, int]] = []
    again = run_track(
        two_scenes, tmp_path / "one.json", "simulated", SIMULATED, seed=2, progress=lambda d, t: calls.append((d, t))
    )
    assert [r.status for r in again.results] == ["resumed", "built"]
    assert calls[0][0] == len(open_log(two_scenes).scenes()[0].frames) and calls[-1] == (again.n_frames,) * 2
    assert (tmp_path / "one.json").read_bytes() == (tmp_path / "two.json").read_bytes()
    assert again.n_tracks == one.n_tracks and again.truncated == one.truncated


def test_other_arguments_need_overwrite(two_scenes, tmp_path):
    out = tmp_path / "det.json"
    run_detect(two_scenes, out, "simulated", SIMULATED, seed=1)
    with pytest.raises(ConfigError, match="--overwrite"):
        run_detect(two_scenes, out, "simulated", SIMULATED, seed=2)
    other = run_detect(two_scenes, out, "simulated", SIMULATED, seed=2, overwrite=True)
    assert [r.status for r in other.results] == ["built", "built"]
    run_detect(two_scenes, tmp_path / "fresh.json", "simulated", SIMULATED, seed=2)
    assert out.read_bytes() == (tmp_path / "fresh.json").read_bytes()


FRAMES_OF_SCENE: dict[str, set[str]] = {}  # scene name -> its frame tokens, for _FailingDetector


class _FailingDetector:
    """The oracle, but failing on every frame of the scene named ``fail`` (in this process: ``workers=1``)."""

    def __init__(self, fail: str) -> None:
        self.fail = fail
        self.oracle = make_detector("oracle")

    def detect(self, frame):
        if frame.token in FRAMES_OF_SCENE.get(self.fail, ()):
            raise StrideGenError(f"no boxes for {self.fail}")
        return self.oracle.detect(frame)


def test_a_failed_scene_writes_no_file_and_exits_1(two_scenes, tmp_path):
    scenes = open_log(two_scenes).scenes()
    FRAMES_OF_SCENE.update({s.name: {f.token for f in s.frames} for s in scenes})
    registry.register("detector", "fails_on", _FailingDetector)
    try:
        summary = run_detect(two_scenes, tmp_path / "d.json", "fails_on", {"fail": scenes[1].name})
        assert [r.status for r in summary.failed] == ["failed"] and summary.failed[0].scene == scenes[1].name
        assert "no boxes for" in summary.failed[0].reason and not (tmp_path / "d.json").exists()
        argv = ["detect", str(two_scenes), "--out", str(tmp_path / "c.json"), "-d", "fails_on"]
        result = CliRunner().invoke(app, [*argv, "--option", f"fail={scenes[0].name}", "--workers", "1"])
        assert result.exit_code == 1, result.output
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert errors == [f"error: {scenes[0].name}: no boxes for {scenes[0].name}"], result.stderr
        # other options replace the parts of the failed run (--overwrite)
        result = CliRunner().invoke(app, [*argv, "--option", "fail=none", "--executor", "local", "--overwrite"])
        assert result.exit_code == 0, result.output
        assert json.loads((tmp_path / "c.json").read_text())["results"].keys() == {
            f.token for s in scenes for f in s.frames
        }
    finally:
        registry.unregister("detector", "fails_on")
