"""Executors of the scene runner: ``local`` (in-process for one worker, else a spawn-context process pool).

Worker processes get the parent's run-time registry entries (``stridegen.core.registry.snapshot``), so a backend
registered in the parent works with any number of workers, and they end themselves when the parent dies (Linux:
``PR_SET_PDEATHSIG``; elsewhere a watchdog thread that polls the parent's pid), so a ``kill -9`` of the parent
leaves no worker behind for more than about a second.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from stridegen.core import registry
from stridegen.core.errors import ConfigError
from stridegen.run.runner import EventCallback, Executor, SceneResult, StageEvent, Worker

if TYPE_CHECKING:
    from stridegen.run.config import ExecutorSection

_EVENTS: Any = None  # the worker process's queue to the parent (set by the pool initializer)
_CURRENT_JOB = 0  # the job of the task this worker process runs now


def _die_with_parent(parent_pid: int) -> None:
    """End this process when the parent dies: the kernel's parent-death signal where there is one, and a thread
    that checks the parent's pid every 0.5 s in any case (covers a re-parented process on other systems)."""
    import signal

    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        pass

    def watch() -> None:
        while True:
            if os.getppid() != parent_pid:
                os._exit(1)
            time.sleep(0.5)

    threading.Thread(target=watch, name="stridegen-parent-watch", daemon=True).start()
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)


# The native thread pools a worker process may start (OpenMP, OpenBLAS, MKL, numexpr): each worker gets its share
# of the cores, set in the environment the spawned process starts with (the libraries read it once, at import).
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")


def threads_per_worker(workers: int) -> int:
    """This machine's cores divided among ``workers`` processes (at least one each)."""
    return max(1, (os.cpu_count() or 1) // max(1, workers))


def limit_native_threads(threads: int) -> None:
    """Cap OpenCV's thread pool in this process (numpy's BLAS is capped by ``THREAD_ENV`` before it loads). Worker
    processes run side by side: a worker that also spreads one image filter over every core only makes them wait
    for each other (2 workers x 2 OpenCV threads on 2 cores)."""
    import cv2

    cv2.setNumThreads(int(threads))


@contextlib.contextmanager
def worker_thread_env(threads: int) -> Iterator[None]:
    """``THREAD_ENV`` set to ``threads`` (unless the user set them) while worker processes are spawned."""
    saved = {k: os.environ.get(k) for k in THREAD_ENV}
    for key in THREAD_ENV:
        os.environ.setdefault(key, str(threads))
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _init_worker(events: Any, registrations: dict[str, dict[str, Any]], parent_pid: int, threads: int) -> None:
    global _EVENTS
    _die_with_parent(parent_pid)
    limit_native_threads(threads)
    _EVENTS = events
    registry.restore(registrations)


def _forward(on_event: EventCallback, job: int, scene: str, stage: str) -> None:
    on_event(StageEvent(job, scene, stage))


def _report(scene: str, stage: str) -> None:
    if _EVENTS is not None:
        _EVENTS.put((_CURRENT_JOB, scene, stage))


def _call(task: tuple[Worker, int, str, Any]) -> SceneResult:
    global _CURRENT_JOB
    worker, job, scene, payload = task
    _CURRENT_JOB = job
    _report(scene, "start")
    return worker(payload, _report)


class LocalExecutor:
    """Scenes in this process (``workers == 1`` or a single task) or on ``workers`` spawned processes."""

    def __init__(self, workers: int = 1) -> None:
        if int(workers) < 1:
            raise ConfigError(f"workers must be at least 1, got {workers}")
        self.workers = int(workers)

    def run(
        self,
        worker: Worker,
        tasks: Sequence[tuple[int, str, Any]],
        finish: Callable[[int, SceneResult], None],
        on_event: EventCallback,
    ) -> None:
        if self.workers <= 1 or len(tasks) <= 1:
            for index, (job, scene, payload) in enumerate(tasks):
                on_event(StageEvent(job, scene, "start"))
                finish(index, worker(payload, functools.partial(_forward, on_event, job)))
            return
        self._run_pool(worker, tasks, finish, on_event)

    def _run_pool(
        self,
        worker: Worker,
        tasks: Sequence[tuple[int, str, Any]],
        finish: Callable[[int, SceneResult], None],
        on_event: EventCallback,
    ) -> None:
        import multiprocessing as mp
        import queue as queue_mod
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

        context = mp.get_context("spawn")
        events = context.Queue()

        def drain() -> None:
            try:
                while True:
                    on_event(StageEvent(*events.get(timeout=0.0)))
            except queue_mod.Empty:
                return

        # concurrent.futures rather than multiprocessing.Pool: a worker that dies (OOM kill, segfault) breaks the
        # pool and fails its futures instead of leaving the parent waiting forever.
        processes = min(self.workers, len(tasks))
        threads = threads_per_worker(processes)
        with (
            worker_thread_env(threads),
            ProcessPoolExecutor(
                processes,
                mp_context=context,
                initializer=_init_worker,
                initargs=(events, registry.snapshot(), os.getpid(), threads),
            ) as pool,
        ):
            futures = {
                pool.submit(_call, (worker, job, scene, payload)): k for k, (job, scene, payload) in enumerate(tasks)
            }
            pending = set(futures)
            while pending:
                drain()
                done, pending = wait(pending, timeout=0.05, return_when=FIRST_COMPLETED)
                drain()
                for future in sorted(done, key=futures.__getitem__):
                    k = futures[future]
                    try:
                        result = future.result()
                    except Exception as exc:  # the worker process itself failed
                        result = SceneResult(
                            tasks[k][1],
                            "failed",
                            reason=f"worker process failed: {type(exc).__name__}: {exc}",
                            error_type=type(exc).__name__,
                        )
                    finish(k, result)
            drain()


def make_executor(section: ExecutorSection | str, workers: int) -> Executor:
    """The executor of ``section`` (a name, or the config's ``executor`` section), built for ``workers`` workers."""
    from stridegen.run.config import ExecutorSection

    if isinstance(section, str):
        section = ExecutorSection(name=section)
    executor: Executor = registry.make("executor", section.name, section.factory_options(workers))
    return executor
