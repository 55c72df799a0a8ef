"""The scene-job runner and the registry across processes: plugins in spawned workers, no orphans after kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from stridegen.core import registry
from stridegen.core.errors import ConfigError
from stridegen.jobs.build import run_build
from stridegen.run.config import load_build_config
from stridegen.run.runner import PAUSE_ENV
from stridegen.shards.reader import open_dataset
from tests.processes import pause_marker, wait_for_exit, wait_for_pause

REPO = Path(__file__).resolve().parents[2]
SYNTH = {"scenes": 2, "seconds": 6.0, "seed": 3, "width": 320, "height": 180}
# A detector from outside the package: the oracle's boxes with every score set to 0.5 (so its output is visible).
PLUGIN = textwrap.dedent("""
    from stridegen.pipeline.detect.oracle import OracleDetector

    class HalfScoreDetector:
        name = "half_score"

        def __init__(self, score: float = 0.5) -> None:
            self.score = score
            self.inner = OracleDetector()

        def detect(self, frame):
            boxes = self.inner.detect(frame)
            return boxes.replace(score=boxes.score * 0 + self.score)


    class CountFamily:
        name = "count"

        def generate(self, image, rng):
            from stridegen.pipeline.qa.base import CATEGORY_EGO_SPATIAL, QAItem

            n = len(image.ctx.region_id)
            item = QAItem(category=CATEGORY_EGO_SPATIAL, predicate="region_count",
                          question="How many regions are marked?", answer=str(n), region_ids=(),
                          track_indices=(), gt_value=float(n), unit="count")
            return [item], {}
""")


@pytest.fixture(scope="module")
def small_log(tmp_path_factory) -> Path:
    from stridegen.logs.synthetic.generator import generate_dataset

    root = tmp_path_factory.mktemp("runner-log") / "log"
    generate_dataset(root, progress=False, overwrite=True, **SYNTH)
    return root


@pytest.fixture()
def plugin_module(tmp_path, monkeypatch) -> str:
    """An importable out-of-tree module (spawned workers inherit sys.path)."""
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "sg_test_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    return "sg_test_plugin:HalfScoreDetector"


def _scores(out: Path) -> set[float]:
    with open_dataset(out) as ds:
        return {float(s) for name in ds.scenes for s in ds.scene(name).record().detections.score}


@pytest.mark.slow
def test_module_string_detector_builds_with_two_workers(small_log, plugin_module, tmp_path):
    cfg = load_build_config(
        None,
        [
            f"detector.name={plugin_module}",
            "workers=2",
            "segmenter.name=projected_box",
            "keyframes.start_s=1",
            "keyframes.end_s=4",
        ],
    )
    result = run_build(small_log, tmp_path / "ds", cfg)
    assert result.ok, [r.reason for r in result.failed]
    assert [r.status for r in result.results] == ["built", "built"]
    assert _scores(tmp_path / "ds") == {0.5}


@pytest.mark.slow
def test_runtime_registration_reaches_spawned_workers(small_log, plugin_module, tmp_path):
    registry.register("detector", "half_score", plugin_module)
    try:
        cfg = load_build_config(
            None,
            [
                "detector.name=half_score",
                "detector.options.score=0.25",
                "workers=2",
                "segmenter.name=none",
                "output.images=none",
            ],
        )
        result = run_build(small_log, tmp_path / "ds", cfg)
    finally:
        registry.unregister("detector", "half_score")
    assert result.ok, [r.reason for r in result.failed]
    assert _scores(tmp_path / "ds") == {0.25}


@pytest.mark.slow
def test_qa_family_plugin_adds_its_items_after_the_built_in_ones(small_log, plugin_module, tmp_path):
    family = plugin_module.replace("HalfScoreDetector", "CountFamily")
    base = ["segmenter.name=projected_box", "keyframes.start_s=1", "keyframes.end_s=4", "workers=2"]
    plain = run_build(small_log, tmp_path / "plain", load_build_config(None, base))
    more = run_build(small_log, tmp_path / "more", load_build_config(None, [*base, f"qa.families=[{family}]"]))
    assert plain.ok and more.ok
    with open_dataset(tmp_path / "plain") as a, open_dataset(tmp_path / "more") as b:
        for scene in a.scenes:
            qa_a, qa_b = a.scene(scene).record().qa, b.scene(scene).record().qa
            counts = qa_b.predicate == "region_count"
            # one count question per image with regions, and the built-in questions unchanged around them
            assert counts.sum() == len({(k, c) for k, c in zip(qa_a.keyframe_index, qa_a.channel_index, strict=True)})
            assert list(qa_b.question[~counts]) == list(qa_a.question)


def test_backend_options_and_names_are_checked_when_the_config_loads(plugin_module):
    with pytest.raises(ConfigError, match="unknown option"):
        load_build_config(None, [f"detector.name={plugin_module}", "detector.options.scroe=0.3"])
    with pytest.raises(ConfigError, match="score"):
        load_build_config(None, [f"detector.name={plugin_module}", "detector.options.score=high"])
    with pytest.raises(ConfigError, match="unknown detector 'nope'"):
        load_build_config(None, ["detector.name=nope"])
    with pytest.raises(ConfigError, match="unknown segmenter"):
        load_build_config(None, ["segmenter.name=sam3"])
    with pytest.raises(ConfigError, match=r"qa\.spatial_options: unknown key"):
        load_build_config(None, ["qa.spatial_options.lateral_min=1"])
    with pytest.raises(ConfigError, match="not offsets of the keyframe window"):
        load_build_config(None, ["qa.temporal_options.context_offsets_s=[-1.25,0.0]"])
    with pytest.raises(ConfigError, match="at most 4 context frames"):
        load_build_config(None, ["qa.temporal_options.context_offsets_s=[-2.0,-1.5,-1.0,-0.5,0.0]"])


def _children(pid: int) -> set[int]:
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.add(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process tables from /proc (Linux)")
def test_kill_9_of_the_parent_leaves_no_worker_behind(small_log, tmp_path):
    marker = pause_marker(tmp_path / "paused")
    env = {**os.environ, PAUSE_ENV: f"scene-0001:read:{marker}"}
    cmd = [
        sys.executable,
        "-m",
        "stridegen.cli.build",
        "build",
        str(small_log),
        "--out",
        str(tmp_path / "ds"),
        "workers=2",
        "segmenter.name=projected_box",
    ]
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        paused = wait_for_pause(marker, proc, 120)  # "<pid> <scene>" of the paused worker
        assert paused is not None, "the worker never reached the pause point"
        workers = _children(proc.pid)
        assert int(paused.split()[0]) in workers
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    wait_for_exit(workers, 5)
    assert not [p for p in workers if _alive(p)], "worker processes outlived their parent"
