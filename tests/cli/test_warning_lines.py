"""Warnings raised by stridegen's library code print as one ``warning: <message>`` line on stderr under the CLI
(issue 33), like every warning a command prints itself. Before, a lock taken over from a killed run printed in
Python's format: ``.../stridegen/run/lock.py:118: StaleLockWarning: ...`` and the source line below it."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stridegen.cli import app
from stridegen.cli.errors import show_warning
from stridegen.run.lock import LOCK_NAME
from tests.conftest import SMALL_BUILD

REPO = Path(__file__).resolve().parents[2]


def _dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(proc.stdout)


def _stale_lock(folder: Path) -> int:
    """A lock file in ``folder`` naming a run on this host that has ended (as after ``kill -9``); its pid."""
    folder.mkdir(parents=True)
    pid = _dead_pid()
    holder = {"pid": pid, "host": socket.gethostname(), "started": time.time() - 60, "command": "stridegen export"}
    (folder / LOCK_NAME).write_text(json.dumps(holder) + "\n")
    return pid


def test_a_stale_lock_taken_over_prints_one_warning_line(two_scene_dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "answers"
    pid = _stale_lock(out)
    result = CliRunner().invoke(app, ["export", str(two_scene_dataset), "--format", "answers", "--out", str(out)])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if "lock" in line]
    expected = f"warning: {out}: took over the lock of a run that is no longer running (pid {pid} on host "
    assert len(lines) == 1 and lines[0].startswith(expected + f"{socket.gethostname()} since "), result.stderr
    assert "StaleLockWarning" not in result.stderr and "lock.py" not in result.stderr
    assert lines[0].endswith("stridegen export); its unfinished scenes are redone")
    assert not (out / LOCK_NAME).exists()


def test_only_stridegen_warnings_change_format(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from stridegen.cli import errors
    from stridegen.run.lock import StaleLockWarning

    passed_on: list[tuple[object, ...]] = []
    monkeypatch.setattr(errors, "_PYTHON_SHOWWARNING", lambda *a: passed_on.append(a))
    show_warning(StaleLockWarning("a\nb"), StaleLockWarning, "lock.py", 1)
    show_warning(UserWarning("from a library"), UserWarning, "lib.py", 7)
    assert capsys.readouterr().err == "warning: a b\n"  # one line, control characters as spaces
    assert [a[1:4] for a in passed_on] == [(UserWarning, "lib.py", 7)]  # a library's warning: Python's format
    assert warnings.showwarning is not show_warning  # installed only while a command runs


def test_the_installed_console_script_prints_the_same_line(two_scene_dataset: Path, tmp_path: Path) -> None:
    """The real process (no pytest warning capture): exactly one line about the lock, in the project's format."""
    out = tmp_path / "answers"
    pid = _stale_lock(out)
    cmd = [str(Path(sys.executable).parent / "stridegen"), "export", str(two_scene_dataset), "--format", "answers"]
    proc = subprocess.run([*cmd, "--out", str(out)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lock_lines = [line for line in proc.stderr.splitlines() if "lock" in line or "StaleLock" in line]
    assert len(lock_lines) == 1 and lock_lines[0].startswith(f"warning: {out}: took over the lock"), proc.stderr
    assert f"(pid {pid} on host" in lock_lines[0]


def test_the_build_prints_each_log_check_warning_as_one_line(one_scene_log: Path, tmp_path: Path) -> None:
    """A box 4 cm wide is an ``unlikely_value`` warning of the log check: one ``warning:`` line on stderr, whole
    (before, a Rich header and the finding wrapped at the console's 80 columns over several lines)."""
    log = tmp_path / "log"
    shutil.copytree(one_scene_log, log)
    table = log / "v1.0-synthetic" / "sample_annotation.json"
    boxes = json.loads(table.read_text())
    boxes[0]["size"][1] = 0.04
    table.write_text(json.dumps(boxes))
    result = CliRunner().invoke(app, ["build", str(log), *SMALL_BUILD, "--out", str(tmp_path / "ds")])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if "unlikely_value" in line]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("warning: scene-0000: [unlikely_value] 1 box size(s) unlikely for their class")
    assert "likely cause: " in lines[0] and "warning(s) of the log check" not in result.stderr
    assert "unlikely_value" not in result.stdout
