"""The build runner end to end: determinism across workers, resume after kill -9, failing scenes, the CLI."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from stridegen.cli.build import _split_arguments, _standalone_app
from stridegen.core.errors import ConfigError, LogFormatError
from stridegen.formats.images import check_image_bytes
from stridegen.jobs.build import run_build
from stridegen.logs.synthetic.default import synthetic_cache_dir
from stridegen.pipeline.keyframes import image_frame_indices
from stridegen.run.config import load_build_config
from stridegen.run.runner import PAUSE_ENV
from stridegen.shards.journal import Journal
from stridegen.shards.reader import open_dataset
from stridegen.shards.schema import KeyframesTable
from tests.processes import pause_marker, wait_for_pause
from tests.shared_data import NUSCENES_DEMO as DEMO
from tests.shared_data import needs_nuscenes_demo

REPO = Path(__file__).resolve().parents[2]
SYNTH = {"scenes": 2, "seconds": 8.0, "seed": 0, "width": 320, "height": 180}


@pytest.fixture(scope="session")
def synth_log(tmp_path_factory) -> Path:
    """A small synthetic log, generated once per test run (shared by pytest-xdist workers under a file lock)."""
    import fcntl

    from stridegen.logs.synthetic.generator import generate_dataset

    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    root = base / "stridegen-build-synth-log"
    with open(base / "stridegen-build-synth-log.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "v1.0-synthetic" / "scene.json").is_file():
            generate_dataset(root, progress=False, overwrite=True, **SYNTH)
    return root


@pytest.fixture(scope="session")
def reference_build(synth_log, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ref") / "ds"
    result = run_build(synth_log, out, load_build_config(None))
    assert result.ok, [r.reason for r in result.failed]
    return out


def _tree_bytes(out: Path) -> dict[str, bytes]:
    """The deterministic outputs: every shard and the manifest."""
    files = {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted((out / "shards").iterdir())}
    files["manifest.json"] = (out / "manifest.json").read_bytes()
    return files


# ------------------------------------------------------------------------------------------------------ content
@pytest.mark.slow
def test_reference_build_content(reference_build, synth_log):
    from stridegen.logs import open_log

    ds = open_dataset(reference_build, verify=True)
    assert ds.scenes == ["scene-0000", "scene-0001"]
    log = open_log(synth_log)
    for name in ds.scenes:
        view, scene = ds[name], log.scene(name)
        # Frames and the STRIDE-QA schedule on an 8 s clip at 2 Hz: keyframes at 2, 3, 4 s (4 + 3 <= 7.5).
        assert list(view.frames.token) == [f.token for f in scene.frames]
        np.testing.assert_array_equal(view.keyframes.time_s, [2.0, 3.0, 4.0])
        np.testing.assert_array_equal(view.keyframes.window[0], np.arange(0, 11))
        # Images: the union of the windows (frames 0..14) for all six cameras, bytes unchanged.
        assert len(view.image_keys()) == 15 * 6
        channel, frame = view.image_keys()[7]
        assert view.image_bytes(channel, frame) == scene.frames[frame].image_bytes(channel)
        assert view.image(channel, frame).shape == (180, 320, 3)
        np.testing.assert_array_equal(view.cameras.width, 320)
        # Oracle detections are the ground-truth boxes of detection classes, frame by frame, in order.
        gt, det = view.ground_truth, view.detections
        keep = gt.label != ""
        np.testing.assert_array_equal(det.center_global, gt.center_global[keep])
        np.testing.assert_array_equal(det.frame_index, gt.frame_index[keep])
        # Tracked classes all have ids; on exact ground truth every track follows one instance.
        tracked = np.isin(det.label, ["car", "truck", "bus", "motorcycle", "bicycle", "pedestrian", "trailer"])
        assert np.all(det.track_id[tracked] != "") and np.all(det.track_id[~tracked] == "")
        instances = gt.instance_token[keep]
        for tid in view.tracks.track_id:
            assert len(set(instances[det.track_id == tid])) == 1, tid
        # Dense tracks agree with the detections they came from.
        t = 0
        rows = np.flatnonzero(det.track_id == view.tracks.track_id[t])
        np.testing.assert_array_equal(view.tracks.center_global[t, det.frame_index[rows]], det.center_global[rows])
        assert view.tracks.present[t].sum() == rows.size
        # Attribute velocities: finite differences of centres, close to the annotated velocities.
        vel = view.attributes.velocity_global[t, det.frame_index[rows]]
        ok = np.isfinite(vel[:, 0]) & np.isfinite(det.velocity_global[rows, 0])
        np.testing.assert_allclose(vel[ok, :2], det.velocity_global[rows][ok, :2], atol=0.6)
        assert view.attributes.ego_velocity_global.shape == (16, 3)
    m = ds.manifest
    assert m["totals"]["scenes"] == 2 and m["failed_scenes"] == []
    assert m["source"]["format"] == "nuscenes"


@needs_nuscenes_demo
def test_demo_fixture_with_single_frame_overrides(tmp_path):
    cfg = load_build_config(
        None,
        ["keyframes.start_s=0", "keyframes.require_full_window=false", "cameras.channels=[CAM_FRONT, CAM_BACK]"]
        + ["anonymize.faces=false", "anonymize.plates=false"],  # a real log: stored as read, unblurred, here
    )
    result = run_build(DEMO, tmp_path, cfg)
    assert result.ok
    view = open_dataset(tmp_path)["scene-0061"]
    assert len(view.frames) == 1 and len(view.keyframes) == 1
    assert list(view.cameras.channel) == ["CAM_FRONT", "CAM_BACK"]
    assert len(view.ground_truth) == 68 and len(view.detections) == 68
    front = next(DEMO.glob("samples/CAM_FRONT/*.jpg"))
    assert view.image_bytes("CAM_FRONT", 0) == front.read_bytes()
    assert view.meta["source_version"] == "v1.0-demo"


# ------------------------------------------------------------------------------------------------------ determinism
@pytest.mark.slow
def test_one_and_two_workers_are_byte_identical(reference_build, synth_log, tmp_path):
    result = run_build(synth_log, tmp_path / "w2", load_build_config(None, ["workers=2"]))
    assert result.ok
    assert _tree_bytes(tmp_path / "w2") == _tree_bytes(reference_build)
    report = json.loads((tmp_path / "w2" / "build_report.json").read_text())
    assert report["workers"] == 2 and report["scenes"]["built"] == 2


@pytest.mark.slow
def test_rerun_skips_finished_scenes_and_keeps_bytes(reference_build, synth_log, tmp_path):
    out = tmp_path / "ds"
    shutil.copytree(reference_build, out)
    before = _tree_bytes(out)
    result = run_build(synth_log, out, load_build_config(None))
    assert [r.status for r in result.results] == ["resumed", "resumed"]
    assert _tree_bytes(out) == before
    # A shard changed on disk is rebuilt.
    (out / "shards" / "scene-0001.h5").write_bytes(b"garbage")
    result = run_build(synth_log, out, load_build_config(None))
    assert [r.status for r in result.results] == ["resumed", "built"]
    assert _tree_bytes(out) == before


@pytest.mark.slow
def test_kill_9_then_resume_is_byte_identical(reference_build, synth_log, tmp_path):
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "stridegen.cli.build", "build", str(synth_log), "--out", str(out)]
    # Kill once the first shard is finished and the second scene is under way: the runner's pause hook stops the
    # build right after scene-0001's detect stage and says so in the marker file.
    marker = pause_marker(tmp_path / "paused")
    env = {**os.environ, PAUSE_ENV: f"scene-0001:detect:{marker}"}
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    journal = Journal(out)
    try:
        wait_for_pause(marker, proc, 120)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, "the build ended before it could be killed"
    assert not (out / "manifest.json").exists()
    assert "scene-0001" not in journal.completed()

    result = run_build(synth_log, out, load_build_config(None))
    assert [r.status for r in result.results] == ["resumed", "built"]
    assert _tree_bytes(out) == _tree_bytes(reference_build)
    assert not [p for p in (out / "shards").iterdir() if p.name.startswith(".")]


# ------------------------------------------------------------------------------------------------------ failures
@pytest.mark.slow
def test_a_failing_scene_is_recorded_and_the_others_complete(synth_log, tmp_path):
    log = tmp_path / "log"
    shutil.copytree(synth_log, log, ignore=shutil.ignore_patterns("instance_ids"))
    victim = sorted((log / "samples" / "CAM_FRONT").glob("*scene-0001__CAM_FRONT*.jpg"))[3]
    victim.write_bytes(victim.read_bytes()[:500])  # truncated JPEG
    out = tmp_path / "ds"
    runner = CliRunner()
    res = runner.invoke(_standalone_app(), ["build", str(log), "--out", str(out)])
    assert res.exit_code == 1, res.output
    assert "scene-0001" in res.output and "truncated" in res.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert [s["scenes"] for s in manifest["shards"]] == [["scene-0000"]]
    assert manifest["failed_scenes"][0]["scene"] == "scene-0001"
    assert victim.name in manifest["failed_scenes"][0]["reason"]
    states = Journal(out).states()
    assert states["scene-0001"].event == "failed" and states["scene-0000"].event == "done"
    assert not (out / "shards" / "scene-0001.h5").exists()
    # A rerun keeps the finished scene and tries the failed one again.
    res = runner.invoke(_standalone_app(), ["build", str(log), "--out", str(out)])
    assert res.exit_code == 1
    assert "resumed" in res.output
    # Inspect lists the dataset and its failure.
    res = runner.invoke(_standalone_app(), ["inspect", str(out), "--verify"])
    assert res.exit_code == 0, res.output
    assert "scene-0000" in res.output and "failed" in res.output


def test_config_errors_exit_2(synth_log, tmp_path):
    runner = CliRunner()
    res = runner.invoke(_standalone_app(), ["build", str(synth_log), "--out", str(tmp_path), "nope.key=1"])
    assert res.exit_code == 2 and "unknown config key" in res.output
    res = runner.invoke(_standalone_app(), ["build", str(synth_log), "--out", str(tmp_path), "detector.name=nope"])
    assert res.exit_code == 2 and "unknown detector" in res.output
    with pytest.raises(ConfigError, match="not in the log"):
        run_build(synth_log, tmp_path / "x", load_build_config(None, ["log.scenes=[scene-9]"]))
    res = runner.invoke(_standalone_app(), ["inspect", str(tmp_path / "nothing")])
    assert res.exit_code == 2 and "manifest not found" in res.output


@pytest.mark.slow
def test_config_change_needs_overwrite(reference_build, synth_log, tmp_path):
    out = tmp_path / "ds"
    shutil.copytree(reference_build, out)
    cfg = load_build_config(None, ["log.scenes=[scene-0001]", "seed=3"])
    with pytest.raises(ConfigError, match="another config"):
        run_build(synth_log, out, cfg)
    result = run_build(synth_log, out, cfg, overwrite=True)
    assert [r.scene for r in result.results] == ["scene-0001"]
    assert sorted(p.name for p in (out / "shards").iterdir()) == ["scene-0001.h5"]


# ------------------------------------------------------------------------------------------------------ helpers
def test_image_frame_indices():
    kf = KeyframesTable(
        np.array([4, 6], np.int32),
        np.array([2.0, 3.0]),
        np.array([[2, 3, 4, 5, -1], [4, 5, 6, 7, 8]], np.int32),
        np.arange(5) * 0.5 - 1.0,
    )
    assert image_frame_indices(kf, 10, "windows") == [2, 3, 4, 5, 6, 7, 8]
    assert image_frame_indices(kf, 10, "keyframes") == [4, 6]
    assert image_frame_indices(kf, 3, "all") == [0, 1, 2]
    assert image_frame_indices(kf, 10, "none") == []


def test_check_image_bytes():
    import cv2

    image = np.random.default_rng(0).integers(0, 256, (24, 32, 3), dtype=np.uint8)
    check_image_bytes(cv2.imencode(".jpg", image)[1].tobytes(), "x.jpg")
    check_image_bytes(cv2.imencode(".png", image)[1].tobytes(), "x.png")
    # Issue 33: the bytes are decoded (at 1/8 scale), so a JPEG or PNG that only looks like one is refused too.
    cases = (
        (b"", "empty"),
        (b"\xff\xd8abc", "truncated"),
        (b"\xff\xd8abc\xff\xd9", "corrupt JPEG"),
        (b"\x89PNG\r\n\x1a\nrest", "PNG could not be decoded"),
        (b"GIF89a", "neither"),
    )
    for data, message in cases:
        with pytest.raises(LogFormatError, match=message):
            check_image_bytes(data, "x")


def test_split_arguments(tmp_path):
    assert _split_arguments(Path("workers=2"), ["seed=1"]) == (None, ["workers=2", "seed=1"])
    assert _split_arguments(tmp_path, ["seed=1"]) == (tmp_path, ["seed=1"])
    assert _split_arguments(None, None) == (None, [])


def test_synthetic_cache_dir_depends_on_parameters(monkeypatch, tmp_path):
    monkeypatch.setenv("STRIDEGEN_CACHE", str(tmp_path))
    a = synthetic_cache_dir({"scenes": 1})
    assert a.parent == tmp_path / "synthetic"
    assert a == synthetic_cache_dir({"scenes": 1}) != synthetic_cache_dir({"scenes": 2})


def test_default_log_is_generated_once_and_reused(monkeypatch, tmp_path):
    from stridegen.logs.synthetic import default as build_cli  # the command imports it when it runs

    monkeypatch.setenv("STRIDEGEN_CACHE", str(tmp_path))
    calls = []

    def fake_generate(path, progress, overwrite, **params):
        calls.append(params)
        (Path(path) / "v1.0-synthetic").mkdir(parents=True)
        (Path(path) / "v1.0-synthetic" / "scene.json").write_text("[]")

    monkeypatch.setattr("stridegen.logs.synthetic.generator.generate_dataset", fake_generate)
    first = build_cli.ensure_default_log({"scenes": 1, "seconds": 2.0})
    second = build_cli.ensure_default_log({"scenes": 1, "seconds": 2.0})
    assert first == second and calls == [{"scenes": 1, "seconds": 2.0}]
    assert os.path.commonpath([first, tmp_path]) == str(tmp_path)


def test_build_without_log_root_uses_the_default_log(synth_log, tmp_path, monkeypatch):
    monkeypatch.setattr("stridegen.logs.synthetic.default.ensure_default_log", lambda: synth_log)
    out = tmp_path / "ds"
    res = CliRunner().invoke(
        _standalone_app(), ["build", "log.scenes=[scene-0001]", "--out", str(out), "--workers", "1"]
    )
    assert res.exit_code == 0, res.output
    assert "embedded synthetic default" in res.output
    assert open_dataset(out).scenes == ["scene-0001"]
