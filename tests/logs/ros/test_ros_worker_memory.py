"""A build worker that reads a ROS recording sets glibc's trim and mmap thresholds once (``keep_freed_memory``, as
augment workers do: its sweep and chunk buffers then reuse freed pages instead of page-faulting new ones; issue 34);
a worker on another log leaves the allocator alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from stridegen.jobs.build import BuildTask
from stridegen.run.config import BuildConfig
from stridegen.run.runner import SceneResult


@pytest.mark.parametrize(("files", "log_format", "kept"), [(["rec.bag"], None, 1), ([], "ros", 1), ([], None, 0)])
def test_ros_build_worker_keeps_freed_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: list[str], log_format: str | None, kept: int
) -> None:
    calls: list[int] = []
    monkeypatch.setattr("stridegen.augment.corruptions.base.keep_freed_memory", lambda: calls.append(1) or True)
    monkeypatch.setattr("stridegen.jobs.build.process_scene", lambda *a, **k: SceneResult("s", "built"))
    log = tmp_path / "log"
    log.mkdir()
    for name in files:
        (log / name).write_bytes(b"")
    config = BuildConfig().model_dump(mode="json")
    config["log"]["format"] = log_format
    task = BuildTask(str(log), config, str(tmp_path / "out"), "hash", blocked={})
    assert task.run_scene("s", lambda *a, **k: None, {}).status == "built"
    assert len(calls) == kept
