"""Waiting on other processes without polling (Linux): for a build stopped at its pause point, and for processes to
end, each wait woken by the kernel (``select`` on a FIFO and on process file descriptors) instead of a sleep loop.

- ``pause_marker``: the marker path to give ``$STRIDEGEN_TEST_PAUSE`` (stridegen.run.runner.pause_if_asked), made
  a FIFO, so that the hook's write of ``"<pid> <scene>"`` wakes the test the moment a worker reaches the point;
- ``wait_for_pause``: that text, or None when the process ended (or the time ran out) before any worker got there;
- ``wait_for_exit``: waits until processes (any, not only children) have ended; returns those still running.

A FIFO marker is read once, by ``wait_for_pause``: reading it again would wait for a writer that never comes.
"""

from __future__ import annotations

import os
import select
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path


def pause_marker(path: Path) -> Path:
    """``path`` made a FIFO, to be the pause hook's marker file; made before the process that pauses starts."""
    os.mkfifo(path)
    return path


def wait_for_pause(marker: Path, proc: subprocess.Popen, timeout_s: float) -> str | None:
    """The text a worker of ``proc`` (or ``proc`` itself) wrote into the FIFO ``marker`` on reaching its pause point;
    None when ``proc`` ended first or ``timeout_s`` passed. The hook writes one line, in one write."""
    fifo = os.open(marker, os.O_RDONLY | os.O_NONBLOCK)  # no writer yet: select waits for the hook's write
    try:
        process = os.pidfd_open(proc.pid)
    except ProcessLookupError:  # already ended (and reaped)
        os.close(fifo)
        return None
    deadline = time.monotonic() + timeout_s
    received = b""
    try:
        while not received.endswith(b"\n"):
            ready, _, _ = select.select([fifo, process], [], [], max(0.0, deadline - time.monotonic()))
            if fifo in ready:
                chunk = os.read(fifo, 4096)
                if not chunk:  # the writer closed without a full line
                    return None
                received += chunk
            elif ready or time.monotonic() >= deadline:  # the process ended, or the time is up
                return None
    finally:
        os.close(fifo)
        os.close(process)
    return received.decode()


def wait_for_exit(pids: Iterable[int], timeout_s: float) -> list[int]:
    """Waits until every process of ``pids`` has ended (a zombie counts as ended) or ``timeout_s`` passed; the pids
    still running."""
    running: dict[int, int] = {}  # process file descriptor -> pid
    for pid in pids:
        try:
            running[os.pidfd_open(pid)] = pid
        except ProcessLookupError:  # already gone
            continue
    deadline = time.monotonic() + timeout_s
    try:
        while running:
            ready, _, _ = select.select(list(running), [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            for fd in ready:
                os.close(fd)
                del running[fd]
    finally:
        for fd in running:
            os.close(fd)
    return sorted(running.values())
