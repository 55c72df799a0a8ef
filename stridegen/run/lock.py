"""One writer per output folder: the lock every scene job takes on its folder before touching it.

``folder_lock(path)`` holds an exclusive ``flock`` on ``<path>/.stridegen.lock`` for the run (the runner takes it in
``run_scene_jobs``, before the folder is checked, tidied or overwritten, and keeps it until the jobs' ``finish``
ran). A second run on the same folder, of any command (build, augment, export, anonymize, detect, track, predict,
calibrate poses), fails at once with ``FolderLockedError`` naming the folder and the holder (pid, host, start time,
command line), which the holder writes into the lock file.

``flock`` locks belong to the open file, so the kernel drops the lock when its holder ends in any way (``kill -9``
included): a lock file whose holder died is simply free. When the file still names a holder on this host whose pid
is gone (a run that was killed), taking it over says so with a ``StaleLockWarning`` (one ``warning:`` line under
the CLI: ``stridegen.cli.errors.show_warning``). On release the holder removes the file; a run that locked a file
just removed by its previous holder sees that the path no longer leads to the file it locked and tries again, so
two runs can never both hold the folder. The lock is re-entrant within a process
(a command that runs several jobs into one folder, or a job whose caller already holds it).

``flock`` works on local file systems and, on Linux, on NFS v4 (as a byte-range lock); on file systems without
locking, ``flock`` fails and so does the run, saying so.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from stridegen.core.bounded_json import decode
from stridegen.core.errors import StrideGenError

LOCK_NAME = ".stridegen.lock"
_HELD: dict[Path, list[int]] = {}  # folder (resolved) -> [file descriptor, depth] of the locks this process holds


class FolderLockedError(StrideGenError):
    """Another run is writing the output folder."""

    def __init__(self, folder: Path, holder: dict[str, Any]) -> None:
        super().__init__(
            f"{folder} is being written by another stridegen run ({describe_holder(holder)}); "
            "wait for it to end or choose another output folder"
        )
        self.folder = folder
        self.holder = holder


class StaleLockWarning(UserWarning):
    """The lock of an output folder named a run on this host that is no longer running (killed): taken over."""


def describe_holder(holder: dict[str, Any]) -> str:
    """``pid 123 on host h since 2026-11-27 19:14:03 UTC: stridegen build ...`` (what a lock file records)."""
    if not holder:
        return "holder unknown: the lock file is empty or unreadable"
    started = holder.get("started")
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(started)) if isinstance(started, int | float) else "?"
    text = f"pid {holder.get('pid', '?')} on host {holder.get('host', '?')} since {when}"
    command = holder.get("command")
    return f"{text}: {command}" if command else text


def _read_holder(fd: int) -> dict[str, Any]:
    """What the lock file says of its holder: its first 64 KiB as a JSON object, nested at most 4 deep (a
    holder record is flat); {} for anything else (a file written by something else is never a crash)."""
    try:
        data = os.pread(fd, 1 << 16, 0)
        holder = decode(data.decode(), max_depth=4) if data.strip() else {}
    except (OSError, ValueError):  # JsonProblem and UnicodeDecodeError are ValueErrors
        return {}
    return holder if isinstance(holder, dict) else {}


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def _this_holder() -> dict[str, Any]:
    command = " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])[:300] if sys.argv and sys.argv[0] else ""
    return {"pid": os.getpid(), "host": socket.gethostname(), "started": round(time.time(), 3), "command": command}


def _acquire(folder: Path) -> int:
    """The descriptor of ``folder``'s lock file, locked by this process (FolderLockedError when another holds it)."""
    path = folder / LOCK_NAME
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _read_holder(fd)
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise FolderLockedError(folder, holder) from None
            raise StrideGenError(
                f"{path}: cannot lock the output folder ({exc.strerror}); is locking supported here?"
            ) from None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the previous holder removed the file we locked: lock the one that is there now
    previous = _read_holder(fd)
    pid = previous.get("pid")
    if previous.get("host") == socket.gethostname() and isinstance(pid, int) and pid != os.getpid():
        if not _pid_alive(pid):
            warnings.warn(
                f"{folder}: took over the lock of a run that is no longer running ({describe_holder(previous)}); "
                "its unfinished scenes are redone",
                StaleLockWarning,
                stacklevel=4,
            )
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(_this_holder(), sort_keys=True) + "\n").encode(), 0)
    return fd


def _release(folder: Path, fd: int) -> None:
    try:
        (folder / LOCK_NAME).unlink(missing_ok=True)  # while still locked: no one else holds this file
    except OSError:
        pass
    os.close(fd)


@contextmanager
def folder_lock(folder: str | Path) -> Iterator[Path]:
    """Hold the lock of the output folder ``folder`` (made if missing) for the ``with`` block (module docstring)."""
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    key = path.resolve()
    held = _HELD.get(key)
    if held is not None:
        held[1] += 1
    else:
        _HELD[key] = [_acquire(path), 1]
    try:
        yield path
    finally:
        held = _HELD[key]
        held[1] -= 1
        if held[1] == 0:
            del _HELD[key]
            _release(path, held[0])


@contextmanager
def folder_locks(folders: Sequence[str | Path]) -> Iterator[None]:
    """Hold the locks of several folders (in sorted order); none is held if one cannot be taken."""
    by_key = {Path(f).resolve(): Path(f) for f in folders}
    with ExitStack() as stack:
        for key in sorted(by_key):
            stack.enter_context(folder_lock(by_key[key]))
        yield
