"""Every JSON a user or a server hands to stridegen is read within the limits on inputs (issue 33, deliverable 6;
docs/cli.md "Limits on inputs"): nested 100,000 deep it is one error naming the file (and the line) and the limit
to raise, never a RecursionError (exit 4). Each case below raised RecursionError before it was routed through
``stridegen.core.bounded_json``: the report's result and verdict files, a dataset's manifest, the nuScenes-layout
log tables (streamed into the log index), the native log's JSON files and frame lines, the synthetic log's truth
file and an lmms-eval task's records; and (YAML) a build config or override nested past the YAML parser's recursion."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stridegen.cli import app
from stridegen.core.errors import DataFormatError, LogFormatError, ShardError
from stridegen.eval.lsr.lmms_task import LmmsEvalTask
from stridegen.logs.native import open_native
from stridegen.logs.synthetic.generator import read_truth_metadata
from stridegen.shards.manifest import read_manifest
from stridegen.viz.report.results import jsonl_lines, load_results
from tests.logs.test_native_log import write_tiny_log

DEEP = "[" * 100_000 + "]" * 100_000
DEPTH = "JSON nested deeper than 64 levels"
RAISE = "STRIDEGEN_JSON_MAX_DEPTH"


def _deep_object(key: str = "x") -> str:
    return '{"' + key + '": ' + DEEP + "}"


def test_report_result_and_verdict_files(tmp_path: Path) -> None:
    result = tmp_path / "metrics.json"
    result.write_text(_deep_object("lsr"))
    with pytest.raises(DataFormatError, match=rf"metrics\.json: line 1: {DEPTH}.*{RAISE}"):
        load_results([result])
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text('{"status": "ok", "score_100": 50}\n' + _deep_object() + "\n")
    with pytest.raises(DataFormatError, match=rf"verdicts\.jsonl: line 2: {DEPTH}"):
        list(jsonl_lines(verdicts))


def test_report_command_names_the_result_file(tmp_path: Path) -> None:
    result = tmp_path / "metrics.json"
    result.write_text(_deep_object("lsr"))
    out = CliRunner().invoke(app, ["report", str(tmp_path / "no-dataset"), "--eval", str(result), "--out", "r.html"])
    assert out.exit_code == 2 and "internal error" not in out.stderr, out.output
    assert out.stderr.strip().startswith(f"error: {result}: line 1: {DEPTH}"), out.stderr


def test_dataset_manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "manifest.json").write_text(_deep_object("format"))
    with pytest.raises(ShardError, match=rf"manifest\.json: manifest is unreadable or corrupt: line 1: {DEPTH}"):
        read_manifest(tmp_path)
    (tmp_path / "manifest.json").write_text('{"format": "' + "x" * (2 << 20) + '"}')
    monkeypatch.setenv("STRIDEGEN_JSON_MAX_MB", "1")
    with pytest.raises(ShardError, match=r"manifest is 2\.0 MiB; the limit is 1 MiB \(raise it with STRIDEGEN_JSON"):
        read_manifest(tmp_path)
    with pytest.raises(ShardError, match="manifest not found"):
        read_manifest(tmp_path / "elsewhere")


def test_nuscenes_log_table_streamed_into_the_index(one_scene_log: Path, tmp_path: Path) -> None:
    log = tmp_path / "log"
    shutil.copytree(one_scene_log, log)
    (log / "v1.0-synthetic" / "scene.json").write_text(DEEP)
    result = CliRunner().invoke(app, ["check", str(log)])
    assert result.exit_code == 1, result.output
    assert "internal error" not in result.output and "RecursionError" not in result.output
    assert f"scene.json: line 1: {DEPTH} (column 65); raise the limit with {RAISE}" in " ".join(result.output.split())
    # One record nested 100 deep: within the parser's recursion, past the limit every JSON reader keeps.
    records = json.loads((one_scene_log / "v1.0-synthetic" / "scene.json").read_text())
    records[0]["description"] = json.loads("[" * 100 + "]" * 100)
    (log / "v1.0-synthetic" / "scene.json").write_text(json.dumps(records))
    result = CliRunner().invoke(app, ["check", str(log)])
    assert result.exit_code == 1, result.output
    assert f"scene.json: line 1: {DEPTH} (column " in "".join(result.output.split("\n")), result.output


def test_native_log_json_file_and_frame_line(tmp_path: Path) -> None:
    log = write_tiny_log(tmp_path / "native")
    (log / "stridegen-log.json").write_text(_deep_object("format"))
    with pytest.raises(LogFormatError, match=rf"stridegen-log\.json: line 1: {DEPTH}"):
        open_native(log)
    log = write_tiny_log(tmp_path / "native2")
    frames = log / "scenes" / "drive-1" / "frames.jsonl"
    lines = frames.read_text().splitlines()
    frames.write_text("\n".join([lines[0], _deep_object("timestamp_us"), lines[2]]) + "\n")
    with pytest.raises(LogFormatError, match=rf"frames\.jsonl: line 2: {DEPTH}"):
        open_native(log).scenes()


def test_synthetic_truth_file(one_scene_log: Path, tmp_path: Path) -> None:
    log = tmp_path / "log"
    shutil.copytree(one_scene_log, log)
    truth_files = [p for p in (log / "v1.0-synthetic").iterdir() if "truth" in p.name]
    assert len(truth_files) == 1
    truth_files[0].write_text(_deep_object("seed"))
    with pytest.raises(LogFormatError, match=rf"{truth_files[0].name}: line 1: {DEPTH}"):
        read_truth_metadata(log)


def test_lmms_task_records(tmp_path: Path) -> None:
    answer = {"question_id": "q1", "pred": "5 m", "lsr": DEEP, "group_id": "g", "group_size": 1}
    with pytest.raises(DataFormatError, match=rf"question 'q1': its 'lsr' field: line 1: {DEPTH}"):
        LmmsEvalTask(tmp_path).evaluate([answer])
    answer["lsr"] = json.dumps({"not": "a list"})
    with pytest.raises(DataFormatError, match="is not a JSON list of LSR records"):
        LmmsEvalTask(tmp_path).evaluate([answer])


def test_yaml_config_and_override_nested_too_deep(one_scene_log: Path, tmp_path: Path) -> None:
    """YAML has no depth limit of its own, but PyYAML composes collections recursively: a build config or a
    ``key=value`` override nested 100,000 (20,000) deep is one error naming it, not a RecursionError (exit 4)."""
    config = tmp_path / "deep.yaml"
    config.write_text("qa: " + DEEP + "\n")
    build = ["build", str(one_scene_log), "--out", str(tmp_path / "ds")]
    result = CliRunner().invoke(app, [*build, "--config", str(config)])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == f"error: {config}: build config nests its YAML collections too deep to parse"
    result = CliRunner().invoke(app, [*build, "qa.families=" + "[" * 20_000 + "]" * 20_000])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == "error: override 'qa.families': value nests its YAML collections too deep to parse"


def test_files_of_the_output_folder_nested_too_deep_are_garbled_not_a_crash(tmp_path: Path) -> None:
    """The journal and the split index are stridegen's own files, read back on a rerun without limits (docs/cli.md):
    a line nested too deep for the parser is skipped or refused like a garbled one, not a RecursionError."""
    from stridegen.core.errors import ConfigError
    from stridegen.shards.journal import Journal
    from stridegen.shards.splits import INDEX_NAME, check_index

    journal = Journal(tmp_path)
    journal.append("build", config_hash="abc")
    with journal.path.open("a") as f:
        f.write(_deep_object("event") + "\n")
    journal.append("failed", scene="scene-0000", reason="r", error_type="E")
    assert [e["event"] for e in journal.events()] == ["build", "failed"]
    (tmp_path / INDEX_NAME).write_text(_deep_object("source"))
    with pytest.raises(ConfigError, match="is unreadable; pass --overwrite"):
        check_index(tmp_path, None, overwrite=False)  # type: ignore[arg-type]
    assert check_index(tmp_path, None, overwrite=True) == []  # type: ignore[arg-type]


def test_simulated_detector_profiles_nested_too_deep(tmp_path: Path) -> None:
    from stridegen.core.errors import ConfigError
    from stridegen.pipeline.detect.simulated import SimulatedDetector

    profiles = tmp_path / "profiles.yaml"
    profiles.write_text("profiles: " + DEEP + "\n")
    with pytest.raises(
        ConfigError, match=r"profiles\.yaml: simulated-detector profiles nests its YAML collections too"
    ):
        SimulatedDetector(profiles_path=profiles)
