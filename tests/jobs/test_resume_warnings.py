"""A resumed scene's log-check warnings come from its journal entry, not from checking the scene again (issue 35).

The worker that checks a scene keeps its warnings in the journal's ``done`` event (``notes.check_warnings``); a
rerun reads them back. A journal written before the notes existed (a ``done`` event without them), or one whose
notes cannot be read, makes the rerun check the scene again, as before. Either way the rerun reports the same
warnings in ``BuildResult``, ``build_report.json`` and on stderr as the first build.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import stridegen.jobs.build as build_module
from stridegen.cli.build import print_warnings
from stridegen.jobs.build import BuildResult, run_build
from stridegen.run.config import load_build_config
from stridegen.shards.journal import JOURNAL_NAME, Journal
from stridegen.shards.writer import ShardInfo

# The 4 s clips of the log below are shorter than the default keyframe schedule (2 s + a 3 s window): each scene is
# built with the warning ``no_keyframes``, cheaply (projected-box masks, no keyframe).
OVERRIDES = ["segmenter.name=projected_box"]


@pytest.fixture(scope="module")
def short_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from stridegen.logs.synthetic.generator import generate_dataset

    root = tmp_path_factory.mktemp("resume-warnings") / "log"
    generate_dataset(root, progress=False, overwrite=True, scenes=2, seconds=4.0, seed=5, width=160, height=90)
    return root


def _counting_check(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replace the build's ``check_scene`` by one that records the scenes it is asked about."""
    calls: list[str] = []
    real = build_module.check_scene

    def counted(reader: Any, settings: Any, scene: str) -> Any:
        calls.append(scene)
        return real(reader, settings, scene)

    monkeypatch.setattr(build_module, "check_scene", counted)
    return calls


def _report_warnings(result: BuildResult) -> list[dict[str, Any]]:
    return json.loads((result.out_dir / "build_report.json").read_text())["warnings"]


def _stderr(result: BuildResult, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    print_warnings(result)
    return capsys.readouterr().err


def _rewrite_done_events(out: Path, edit: Any) -> None:
    path = out / JOURNAL_NAME
    lines = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record["event"] == "done":
            edit(record)
        lines.append(json.dumps(record, sort_keys=True))
    path.write_text("\n".join(lines) + "\n")


def test_a_rerun_reads_the_warnings_back_without_checking(
    short_log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = load_build_config(None, OVERRIDES)
    calls = _counting_check(monkeypatch)
    first = run_build(short_log, tmp_path / "ds", config)
    assert [r.status for r in first.results] == ["built", "built"]
    assert [(w.scene, w.code) for w in first.warnings] == [
        ("scene-0000", "no_keyframes"),
        ("scene-0001", "no_keyframes"),
    ]
    assert calls == ["scene-0000", "scene-0001"]  # each checked once, in its worker
    kept = Journal(tmp_path / "ds").done_notes()
    assert {s: [w["code"] for w in n["check_warnings"]] for s, n in kept.items()} == {
        "scene-0000": ["no_keyframes"],
        "scene-0001": ["no_keyframes"],
    }
    first_report, first_err = _report_warnings(first), _stderr(first, capsys)
    assert first_err.count("no_keyframes") == 2

    calls.clear()
    again = run_build(short_log, tmp_path / "ds", config)
    assert [r.status for r in again.results] == ["resumed", "resumed"]
    assert calls == []  # nothing checked again
    assert again.warnings == first.warnings
    assert _report_warnings(again) == first_report
    assert _stderr(again, capsys) == first_err


def test_a_partly_finished_build_checks_only_the_scenes_it_builds(
    short_log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = load_build_config(None, OVERRIDES)
    first = run_build(short_log, tmp_path / "ds", config)
    (tmp_path / "ds" / "shards" / "scene-0001.h5").unlink()  # the second scene is built again
    calls = _counting_check(monkeypatch)
    again = run_build(short_log, tmp_path / "ds", config)
    assert [r.status for r in again.results] == ["resumed", "built"]
    assert calls == ["scene-0001"]
    assert again.warnings == first.warnings


@pytest.mark.parametrize(
    "edit",
    [
        lambda record: record.pop("notes"),  # a journal written before the notes existed
        lambda record: record.__setitem__("notes", {"check_warnings": [{"code": 1}]}),  # unreadable: not a Finding
        lambda record: record.__setitem__("notes", {"check_warnings": "no_keyframes"}),  # not a list
        lambda record: record.__setitem__("notes", ["check_warnings"]),  # not an object
    ],
    ids=["old-format", "bad-finding", "not-a-list", "not-an-object"],
)
def test_a_done_event_without_readable_notes_falls_back_to_the_check(
    short_log: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    edit: Any,
) -> None:
    config = load_build_config(None, OVERRIDES)
    first = run_build(short_log, tmp_path / "ds", config)
    first_report, first_err = _report_warnings(first), _stderr(first, capsys)
    _rewrite_done_events(tmp_path / "ds", edit)
    calls = _counting_check(monkeypatch)
    again = run_build(short_log, tmp_path / "ds", config)
    assert [r.status for r in again.results] == ["resumed", "resumed"]  # the shard entries are still good
    assert calls == ["scene-0000", "scene-0001"]  # checked again, in this process
    assert again.warnings == first.warnings
    assert _report_warnings(again) == first_report
    assert _stderr(again, capsys) == first_err


def test_journal_notes_are_optional_in_the_done_event(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    info = ShardInfo("shards/a.h5", ["a"], {"qa": 1}, "0" * 64, 1)
    journal.scene_done("a", info)
    journal.scene_done("b", ShardInfo("shards/b.h5", ["b"], {}, "1" * 64, 1), {"check_warnings": []})
    journal.scene_done("c", ShardInfo("shards/c.h5", ["c"], {}, "2" * 64, 1), {"k": [1]})
    journal.scene_failed("c", "broken", "ValueError")  # the latest event of c is no longer done
    events = journal.events()
    assert "notes" not in events[0] and events[1]["notes"] == {"check_warnings": []}
    assert journal.done_notes() == {"b": {"check_warnings": []}}
