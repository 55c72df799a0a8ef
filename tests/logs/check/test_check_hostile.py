"""Hostile logs (issue 33): files outside the log, a folder name that is not UTF-8, absurd but finite values,
constant ego poses, damaged sensor data. Each case copies the session's two-scene synthetic log (tests/conftest.py),
damages it, and asserts what ``check`` reports and what the build does with it."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from stridegen.core.errors import LogFormatError
from stridegen.logs.check import CheckReport, check_log
from stridegen.run.config import load_build_config

VERSION = "v1.0-synthetic"
FAST = ["segmenter.name=projected_box", "keyframes.start_s=2", "keyframes.end_s=5"]
ONE = ["log.scenes=[scene-0000]"]


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("instance_ids", "maps", ".stridegen-index"))
    return dst


def _load(root: Path, name: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = json.loads((root / VERSION / f"{name}.json").read_text())
    return records


def _save(root: Path, name: str, records: list[dict[str, Any]]) -> None:
    (root / VERSION / f"{name}.json").write_text(json.dumps(records))


def _edit(root: Path, name: str, edit: Callable[[dict[str, Any]], None]) -> None:
    records = _load(root, name)
    for r in records:
        edit(r)
    _save(root, name, records)


def _check(log: Path, *overrides: str) -> CheckReport:
    return check_log(log, load_build_config(None, [*FAST, *ONE, *overrides]).check_settings())


def _codes(report: CheckReport, severity: str = "error") -> set[str]:
    return {f.code for f in report.findings if f.severity == severity}


def _build(log: Path, out: Path, *overrides: str):  # type: ignore[no-untyped-def]
    from stridegen.jobs.build import run_build

    return run_build(log, out, load_build_config(None, [*FAST, *ONE, *overrides]))


def _scene_files(root: Path, channel: str, scene: str = "scene-0000") -> list[dict[str, Any]]:
    """The key sample_data of one channel of a scene, in time order."""
    [rec] = [s for s in _load(root, "scene") if s["name"] == scene]
    samples = {s["token"]: s for s in _load(root, "sample")}
    order, token = [], rec["first_sample_token"]
    while token:
        order.append(token)
        token = samples[token]["next"]
    data = {sd["sample_token"]: sd for sd in _load(root, "sample_data") if f"/{channel}/" in sd["filename"]}
    return [data[t] for t in order]


# ------------------------------------------------------------------------------------------ files outside the log
def _point_outside(log: Path, other: Path) -> str:
    """The third CAM_FRONT image of scene-0000 named as the other log's (``../other/...``)."""
    token = _scene_files(log, "CAM_FRONT")[2]["token"]
    rel = f"../{other.name}/" + _scene_files(log, "CAM_FRONT")[2]["filename"]
    _edit(log, "sample_data", lambda r: r.__setitem__("filename", rel) if r["token"] == token else None)
    return rel


def test_a_file_outside_the_log_is_an_error_of_check_and_a_failed_scene(two_scene_log: Path, tmp_path: Path) -> None:
    log, other = _copy(two_scene_log, tmp_path / "log"), _copy(two_scene_log, tmp_path / "other")
    rel = _point_outside(log, other)
    report = _check(log)
    [finding] = [f for f in report.errors if f.code == "file_outside_log"]
    assert rel in finding.message and finding.file is not None and finding.file.endswith("sample_data.json")
    assert finding.scene == "scene-0000"
    from stridegen.logs import open_log

    with pytest.raises(LogFormatError, match="outside the log folder"):
        open_log(log).scene("scene-0000")
    result = _build(log, tmp_path / "ds")
    [failed] = result.failed
    assert failed.scene == "scene-0000" and "file_outside_log" in failed.reason and rel in failed.reason


def test_the_option_allows_files_outside_the_log(
    two_scene_log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, other = _copy(two_scene_log, tmp_path / "log"), _copy(two_scene_log, tmp_path / "other")
    _point_outside(log, other)
    monkeypatch.setenv("STRIDEGEN_LOG_FILES_OUTSIDE", "1")
    assert "file_outside_log" not in _codes(_check(log))


@pytest.mark.parametrize(
    ("name", "outside"),
    [
        ("samples/a.jpg", False),
        ("./samples/../samples/a.jpg", False),
        ("samples/../../x/a.jpg", True),
        ("/etc/passwd", True),
        ("..\\x\\a.jpg", True),
        ("a/b/../../c.jpg", False),
    ],
)
def test_the_resolver_is_lexical(name: str, outside: bool, tmp_path: Path) -> None:
    from stridegen.logs._common import FileOutsideLogError, log_file

    if outside:
        with pytest.raises(FileOutsideLogError, match="sample_data t1"):
            log_file(tmp_path, name, "sample_data.json", "sample_data t1")
    else:
        assert log_file(tmp_path, name, "sample_data.json", "sample_data t1").is_relative_to(tmp_path)


# ------------------------------------------------------------------------------------------ a folder name not UTF-8
def test_a_folder_name_that_is_not_utf8_is_one_error_naming_it(two_scene_log: Path, tmp_path: Path) -> None:
    from stridegen.cli import app

    log = Path(os.fsdecode(os.fsencode(tmp_path) + b"/bad\xffname"))
    _copy(two_scene_log, log)
    report = _check(log)
    [finding] = report.errors
    assert finding.code == "log_unreadable" and "bad\\xffname" in finding.message and "not UTF-8" in finding.message
    result = CliRunner().invoke(app, ["check", str(log)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "bad\\xffname" in result.stderr and "UnicodeEncodeError" not in result.output


# ------------------------------------------------------------------------------------------ warnings on stderr
@pytest.mark.slow
def test_build_prints_the_log_checks_warnings_on_stderr(two_scene_log: Path, tmp_path: Path) -> None:
    from stridegen.cli import app

    log = _copy(two_scene_log, tmp_path / "log")
    _save(log, "sample_annotation", [])  # no_annotations: a warning
    result = CliRunner().invoke(app, ["build", str(log), "--out", str(tmp_path / "ds"), *FAST, *ONE, "--allow-empty"])
    assert result.exit_code == 0, result.output
    assert "no_annotations" in result.stderr and "no_annotations" not in result.stdout
