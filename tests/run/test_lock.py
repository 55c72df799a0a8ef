"""One run per output folder (issue 33): the runner locks each job's folder (stridegen.run.lock); a second run of any
writing command fails at once naming the folder and the holder; a lock whose holder was killed is taken over with
a warning. Before the lock, two builds into one folder ran side by side (each writing the same shards and journal).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stridegen.cli import app
from stridegen.jobs.build import run_build
from stridegen.run.config import load_build_config
from stridegen.run.lock import LOCK_NAME, FolderLockedError, StaleLockWarning, folder_lock
from stridegen.run.runner import PAUSE_ENV
from tests.conftest import SMALL_BUILD
from tests.processes import pause_marker, wait_for_exit, wait_for_pause

REPO = Path(__file__).resolve().parents[2]
HOLD = "import sys; from stridegen.run.lock import folder_lock; cm = folder_lock(sys.argv[1]); cm.__enter__(); "


def _holder(folder: Path, then: str = "print('locked', flush=True); sys.stdin.read()") -> subprocess.Popen[str]:
    """A process that takes ``folder``'s lock, says so on stdout, and keeps it until its stdin closes."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD + then, str(folder)],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def test_a_second_build_into_a_folder_being_built_fails_at_once(two_scene_log, tmp_path):
    """Two builds at once: the first stopped in the middle of scene-0001 (the runner's pause hook), the second,
    in-process and from the CLI, is refused before it touches anything, naming the folder and the first's pid."""
    out = tmp_path / "ds"
    marker = pause_marker(tmp_path / "paused")
    cmd = [sys.executable, "-m", "stridegen.cli.build", "build", str(two_scene_log), *SMALL_BUILD, "--out", str(out)]
    env = {**os.environ, PAUSE_ENV: f"scene-0001:detect:{marker}"}
    first = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for_pause(marker, first, 120) is not None
        journal = (out / "journal.jsonl").read_bytes()
        t0 = time.perf_counter()
        with pytest.raises(FolderLockedError) as info:
            run_build(two_scene_log, out, load_build_config(None, SMALL_BUILD))
        assert time.perf_counter() - t0 < 10  # at once: no scene ran
        message = str(info.value)
        assert str(out) in message and f"pid {first.pid} on host {socket.gethostname()} since " in message
        assert "stridegen" in message and "build" in message  # the holder's command line
        result = CliRunner().invoke(app, ["build", str(two_scene_log), *SMALL_BUILD, "--out", str(out)])
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith(f"error: {out} is being written by another stridegen run (pid {first.pid}")
        assert (out / "journal.jsonl").read_bytes() == journal  # the refused runs wrote nothing
        # --overwrite is refused too: it would delete the running build's shards
        result = CliRunner().invoke(app, ["build", str(two_scene_log), *SMALL_BUILD, "--out", str(out), "--overwrite"])
        assert result.exit_code == 2 and "is being written by another stridegen run" in result.stderr
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
        wait_for_exit([first.pid], 30)
    # killed with -9: the kernel dropped its lock; the next build takes it over, says so, and finishes the dataset
    with pytest.warns(StaleLockWarning, match=rf"no longer running \(pid {first.pid} on host "):
        result = run_build(two_scene_log, out, load_build_config(None, SMALL_BUILD))
    assert result.ok and [r.status for r in result.results] == ["resumed", "built"]
    assert not (out / LOCK_NAME).exists()  # released: the file goes with the lock


def test_every_writing_command_takes_the_folder_lock(two_scene_dataset, tmp_path):
    """export, augment and anonymize into a folder another run holds: refused at once, naming the holder."""
    out = tmp_path / "busy"
    holder = _holder(out)
    try:
        commands = {
            "export": ["export", str(two_scene_dataset), "--format", "answers", "--out", str(out)],
            "anonymize": ["anonymize", str(two_scene_dataset), "--out", str(out), "--plates"],
            "augment": ["augment", str(two_scene_dataset), "--out", str(out), "--corruptions", "fog"],
        }
        for name, args in commands.items():
            result = CliRunner().invoke(app, args)
            assert result.exit_code == 2, (name, result.output)
            expected = f"is being written by another stridegen run (pid {holder.pid} "
            assert expected in result.stderr, (name, result.stderr)
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait()
    assert not (out / LOCK_NAME).exists()


def test_lock_is_reentrant_in_a_process_and_released(tmp_path):
    folder = tmp_path / "f"
    with folder_lock(folder):
        assert (folder / LOCK_NAME).is_file()
        with folder_lock(folder):  # the same process: held already
            pass
        assert (folder / LOCK_NAME).is_file()
        holder_of_other = subprocess.run(
            [sys.executable, "-c", HOLD, str(folder)], cwd=REPO, capture_output=True, text=True
        )
        assert holder_of_other.returncode != 0 and "FolderLockedError" in holder_of_other.stderr
        assert f"pid {os.getpid()} " in holder_of_other.stderr
    assert not (folder / LOCK_NAME).exists()
    with folder_lock(folder):  # free again
        pass


def test_a_live_holder_on_this_host_is_not_taken_over(tmp_path):
    """A holder alive is never stale; one killed (-9) leaves its record, and the next lock warns and takes it."""
    folder = tmp_path / "f"
    holder = _holder(folder)
    with pytest.raises(FolderLockedError):
        with folder_lock(folder):
            pass
    holder.kill()
    holder.wait()
    assert (folder / LOCK_NAME).is_file()  # the record stays; the kernel dropped the lock
    with pytest.warns(StaleLockWarning, match=f"pid {holder.pid} on host "):
        with folder_lock(folder):
            pass
