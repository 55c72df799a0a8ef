"""The scene-job runner of every command that processes scenes: output folders, journal, resume, failures.

A *job* writes one dataset folder (``JobTarget``: its path, config hash and scene names); a run has one job
(``build``) or several (``augment``: one per corruption and severity). For every job the runner locks the folder
(``stridegen.run.lock``: one run per folder), checks it
(``check_output_folder``: same config hash, or ``overwrite``), removes temporaries an interrupted run left, opens the
journal and skips the scenes it records as done. The remaining (job, scene) tasks go to an ``Executor``
(``stridegen.run.executors``), which calls ``worker(payload)`` for each and hands back a ``SceneResult``; the parent
alone writes the journal. A scene that fails is a failed ``SceneResult`` (never an exception), so the run goes on.

Stage events (``StageEvent``: a scene started, or finished a stage) flow from the workers to the ``on_event``
callback of the caller (the CLI's progress bars); the runner itself prints nothing.

A command declares its job as a ``SceneJob``: the folder (``JobTarget``), a picklable ``SceneTask`` whose
``run_scene`` is what a worker does to one scene (``run_scene_task`` times it and turns a failure into a failed
result), and ``finish``, what the caller's process writes from the outcome (a manifest; a file joined from the
parts). ``run_scene_jobs`` runs them; each job module (build, detect/track, augment, export, anonymize,
calibrate) is that declaration plus its command's arguments, the domain work being in the layers below.

A job whose output is one file made from every scene (export, detect, track, calibrate poses) has its workers write
a *part* per scene (``write_part``: the scene's records as JSON lines in ``parts/`` of the job folder, recorded in
the journal with its sha256 like a shard), and its ``finish`` joins the parts in scene order (``read_parts``) once
every scene is done.
"""

from __future__ import annotations

import json
import os
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from stridegen.core.errors import StrideGenError
from stridegen.logs.names import scene_file_stem
from stridegen.run.lock import folder_locks
from stridegen.shards.journal import Journal, check_output_folder
from stridegen.shards.schema import SCHEMA_VERSION
from stridegen.shards.writer import ShardInfo, atomic_write_bytes, remove_stale_temporaries, sha256_file

# Test hook: "<scene>:<stage>:<marker path>" makes the process that runs <scene> ("*": any scene) write the marker
# file once <stage> is finished, then wait until it is killed (a kill -9 test knows exactly where the run stands).
PAUSE_ENV = "STRIDEGEN_TEST_PAUSE"
PARTS = "parts"  # the folder of a job's per-scene parts, inside the job folder
WORK_SUFFIX = ".parts"  # the work folder of a job whose output is one file: <out>.parts/ (journal and parts)


@dataclass
class SceneResult:
    scene: str
    status: str  # "built" | "resumed" (skipped: already done) | "failed"
    shard: ShardInfo | None = None  # when built or resumed
    reason: str = ""
    error_type: str = ""
    timings_s: dict[str, float] = field(default_factory=dict)
    warnings: list[Any] = field(default_factory=list)  # the build's log-check warnings about the scene (Finding)
    # JSON the job's worker asks to keep with the scene: recorded in its journal ``done`` event, handed back with
    # the scene when a rerun resumes it ({} where the event has none: a job that keeps nothing, an older journal)
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status in ("built", "resumed")


class SceneRunSummary:
    """``failed`` and ``ok`` of a run's ``results`` (its SceneResults in scene order), for the result types of build,
    augment splits, export and anonymize."""

    results: list[SceneResult]

    @property
    def failed(self) -> list[SceneResult]:
        return [r for r in self.results if not r.ok]

    @property
    def ok(self) -> bool:
        return not self.failed


@dataclass(frozen=True)
class StageEvent:
    """``stage`` is "start" when the scene begins, else the name of the stage it just finished."""

    job: int
    scene: str
    stage: str


EventCallback = Callable[[StageEvent], None]


class RunObserver(Protocol):
    """What a display (the CLI's progress bars) is told of a run: the (job, scene) tasks about to run, each stage
    event, each finished task. Called in the process that runs ``run_jobs``."""

    def planned(self, tasks: Sequence[tuple[int, str]]) -> None: ...

    def event(self, event: StageEvent) -> None: ...

    def finished(self, job: int, result: SceneResult) -> None: ...


StageCallback = Callable[[str, str], None]  # (scene name, finished stage), what a worker reports
Worker = Callable[[Any, StageCallback], SceneResult]  # (payload, report) -> result; must be picklable (top level)


def failed_scene(scene_name: str, exc: BaseException, timings: dict[str, float]) -> SceneResult:
    """The failed SceneResult of a scene that raised ``exc``: a StrideGenError's message as it is, any other
    exception's type and message with the file and line it was raised at."""
    reason = str(exc) if isinstance(exc, StrideGenError) else f"{type(exc).__name__}: {exc}"
    if not isinstance(exc, StrideGenError):
        tb = traceback.extract_tb(exc.__traceback__)
        if tb:
            reason += f" (at {Path(tb[-1].filename).name}:{tb[-1].lineno})"
    return SceneResult(scene_name, "failed", reason=reason, error_type=type(exc).__name__, timings_s=timings)


def run_stages(
    scene_name: str,
    stages: Sequence[tuple[str, Callable[[], None]]],
    timings: dict[str, float],
    report: StageCallback,
    sub_stages: dict[str, Sequence[str]] | None = None,
) -> None:
    """Run ``(name, step)`` pairs in order, timing each into ``timings`` and reporting each as finished. A step may
    record the time of its named parts itself (``sub_stages[name]``, e.g. segment -> visibility): those are taken
    out of its own time and reported after it."""
    sub_stages = sub_stages or {}
    for name, step in stages:
        t0 = time.perf_counter()
        step()
        elapsed = time.perf_counter() - t0
        parts = sub_stages.get(name, ())
        timings[name] = elapsed - sum(timings.get(p, 0.0) for p in parts)
        report(scene_name, name)
        for part in parts:
            timings.setdefault(part, 0.0)
            report(scene_name, part)
        pause_if_asked(scene_name, name)


def pause_if_asked(scene_name: str, stage: str) -> None:
    """The ``STRIDEGEN_TEST_PAUSE`` hook (module docstring)."""
    spec = os.environ.get(PAUSE_ENV)
    if not spec:
        return
    want_scene, want_stage, marker = spec.split(":", 2)
    if want_stage == stage and want_scene in ("*", scene_name):
        Path(marker).write_text(f"{os.getpid()} {scene_name}\n")
        while True:  # until the test kills the process
            time.sleep(0.05)


class Executor(Protocol):
    """Runs scene tasks. ``run`` calls ``finish(task index, result)`` in the calling process for every task, and
    ``on_event`` for the stage events of the workers."""

    def run(
        self,
        worker: Worker,
        tasks: Sequence[tuple[int, str, Any]],
        finish: Callable[[int, SceneResult], None],
        on_event: EventCallback,
    ) -> None: ...


@dataclass
class JobTarget:
    """One output dataset folder of a run."""

    path: Path
    config_hash: str
    scenes: list[str]


@dataclass
class JobOutcome(SceneRunSummary):
    target: JobTarget
    results: list[SceneResult]  # in scene order

    def shards(self) -> list[ShardInfo]:
        """The ShardInfo of every built or resumed scene, in scene order (a manifest's shards)."""
        return [r.shard for r in self.results if r.ok and r.shard is not None]

    def failures(self) -> list[tuple[str, str]]:
        """(scene, reason) of every failed scene, in scene order (a manifest's failed scenes)."""
        return [(r.scene, r.reason) for r in self.results if not r.ok]


def prepare_folder(target: JobTarget, overwrite: bool) -> tuple[Journal, dict[str, ShardInfo]]:
    """Check and tidy ``target.path`` and open its journal; returns it and the scenes already done."""
    target.path.mkdir(parents=True, exist_ok=True)
    check_output_folder(target.path, target.config_hash, overwrite)
    for folder in (target.path / "shards", target.path / PARTS, target.path):
        remove_stale_temporaries(folder)
    journal = Journal(target.path)
    journal.build_started(target.config_hash, SCHEMA_VERSION, list(target.scenes))
    return journal, journal.completed()


def run_jobs(
    targets: Sequence[JobTarget],
    payload: Callable[[int, str], Any],
    worker: Worker,
    executor: Executor,
    overwrite: bool = False,
    observer: RunObserver | None = None,
) -> list[JobOutcome]:
    """Run every scene of every target that is not done yet (module docstring). ``payload(job, scene)`` is what
    the worker gets for that task; ``observer`` is told what happens (progress display). Each target folder is
    locked for the run (``stridegen.run.lock``: a second run on it fails at once, naming this one)."""
    with folder_locks([target.path for target in targets]):
        return _run_locked(targets, payload, worker, executor, overwrite, observer)


def _run_locked(
    targets: Sequence[JobTarget],
    payload: Callable[[int, str], Any],
    worker: Worker,
    executor: Executor,
    overwrite: bool,
    observer: RunObserver | None,
) -> list[JobOutcome]:
    journals, completed = [], []
    for target in targets:
        journal, done = prepare_folder(target, overwrite)
        journals.append(journal)
        completed.append(done)
    tasks = [
        (k, scene, payload(k, scene))
        for k, target in enumerate(targets)
        for scene in target.scenes
        if scene not in completed[k]
    ]
    built: list[dict[str, SceneResult]] = [{} for _ in targets]
    if observer is not None:
        observer.planned([(job, scene) for job, scene, _ in tasks])

    def event(ev: StageEvent) -> None:
        if ev.stage == "start":
            journals[ev.job].scene_started(ev.scene)
        if observer is not None:
            observer.event(ev)

    def finish(index: int, result: SceneResult) -> None:
        job = tasks[index][0]
        if result.ok:
            assert result.shard is not None
            journals[job].scene_done(result.scene, result.shard, result.notes)
        else:
            journals[job].scene_failed(result.scene, result.reason, result.error_type)
        built[job][result.scene] = result
        if observer is not None:
            observer.finished(job, result)

    executor.run(worker, tasks, finish, event)
    notes = [journal.done_notes() if done else {} for journal, done in zip(journals, completed, strict=True)]
    return [
        JobOutcome(
            target,
            [
                SceneResult(n, "resumed", completed[k][n], notes=notes[k].get(n, {}))
                if n in completed[k]
                else built[k][n]
                for n in target.scenes
            ],
        )
        for k, target in enumerate(targets)
    ]


# ------------------------------------------------------------------------------------------------------- scene jobs
class SceneTask(Protocol):
    """What a job's worker does to one scene, as picklable data (a frozen dataclass), so it travels to any executor.

    ``run_scene`` writes the scene's output itself (a shard, or a part: ``write_part``), timing its stages into
    ``timings`` (``run_stages``), and returns its ShardInfo, or a whole SceneResult (a scene the job refuses, with
    its reason). An exception fails that scene alone (``failed_scene``)."""

    def run_scene(self, scene: str, report: StageCallback, timings: dict[str, float]) -> ShardInfo | SceneResult: ...


def run_scene_task(payload: tuple[SceneTask, str], report: StageCallback) -> SceneResult:
    """The worker of every ``SceneJob``: ``task.run_scene`` for one scene, its failure as a failed result."""
    task, scene = payload
    timings: dict[str, float] = {}
    try:
        done = task.run_scene(scene, report, timings)
    except Exception as exc:  # one scene's failure is recorded; the others go on
        return failed_scene(scene, exc, timings)
    return done if isinstance(done, SceneResult) else SceneResult(scene, "built", done, timings_s=timings)


@dataclass
class SceneJob:
    """One job of a command: its output folder, config hash and scenes (``target``), what a worker does to each
    scene (``task``), and ``finish``: what the caller's process writes from the outcome once the scenes ran, in
    scene order (a manifest of the built and failed scenes; a file joined from the parts, ``read_parts``, which
    a job writes only when ``outcome.ok``)."""

    target: JobTarget
    task: SceneTask
    finish: Callable[[JobOutcome], None] | None = None


def run_scene_jobs(
    jobs: Sequence[SceneJob], executor: Executor, overwrite: bool = False, observer: RunObserver | None = None
) -> list[JobOutcome]:
    """``run_jobs`` over ``jobs``, then each job's ``finish``; the outcomes in job order. The jobs' folders stay
    locked until every ``finish`` ran."""
    with folder_locks([job.target.path for job in jobs]):
        outcomes = run_jobs(
            [job.target for job in jobs],
            lambda k, scene: (jobs[k].task, scene),
            run_scene_task,
            executor,
            overwrite,
            observer,
        )
        for job, outcome in zip(jobs, outcomes, strict=True):
            if job.finish is not None:
                job.finish(outcome)
    return outcomes


UnitCallback = Callable[[int, int], None]  # (units done, units in all), e.g. the frames of the finished scenes


class UnitProgress:
    """A run observer that also reports units (a scene's frames) to ``progress``: once before the first scene
    (the units of resumed scenes count as done), then after each finished scene; everything is passed on to
    ``inner``."""

    def __init__(self, progress: UnitCallback, units: Mapping[str, int], inner: RunObserver | None) -> None:
        self.progress, self.units, self.inner = progress, units, inner
        self.total = sum(units.values())
        self.done = 0

    def planned(self, tasks: Sequence[tuple[int, str]]) -> None:
        self.done = self.total - sum(self.units[scene] for _, scene in tasks)
        self.progress(self.done, self.total)
        if self.inner is not None:
            self.inner.planned(tasks)

    def event(self, event: StageEvent) -> None:
        if self.inner is not None:
            self.inner.event(event)

    def finished(self, job: int, result: SceneResult) -> None:
        if result.ok:
            self.done += self.units[result.scene]
            self.progress(self.done, self.total)
        if self.inner is not None:
            self.inner.finished(job, result)


# ------------------------------------------------------------------------------------------------------------ parts
def work_folder(out: str | Path) -> Path:
    """The work folder (journal and parts) of a job whose output is the one file or folder ``out``:
    ``<out>.parts/`` beside it."""
    out = Path(out)
    return out.with_name(out.name + WORK_SUFFIX)


def part_path(root: str | Path, scene: str) -> Path:
    """Where the part of ``scene`` lies in the job folder ``root``: ``parts/<scene>.jsonl``, or for a scene name
    that is no safe file name (``stridegen.logs.names``) ``parts/scene-<sha256 of the name, 16 hex>.jsonl``."""
    name = scene_file_stem(scene)
    return Path(root) / PARTS / f"{name}.jsonl"


def write_part(
    root: str | Path,
    scene: str,
    records: Iterable[Any],
    counts: Mapping[str, int] | None = None,
    *,
    sort_keys: bool = True,
) -> ShardInfo:
    """Write the part of ``scene`` (``part_path``): ``records`` as JSON lines (ASCII; keys sorted unless
    ``sort_keys`` is False, for records whose key order is their output's), atomically. Returns its ShardInfo
    (path relative to ``root``, ``counts``, sha256) for the journal: a rerun skips the scene while the part is
    intact."""
    path = part_path(root, scene)
    data = b"".join(json.dumps(r, sort_keys=sort_keys, ensure_ascii=True).encode() + b"\n" for r in records)
    atomic_write_bytes(path, data)
    relative = path.relative_to(Path(root)).as_posix()
    return ShardInfo(relative, [scene], dict(counts or {}), sha256_file(path), len(data))


def read_part(root: str | Path, scene: str) -> list[Any]:
    """The records of the part of ``scene`` in the job folder ``root``, in the order written."""
    return [json.loads(line) for line in part_path(root, scene).read_bytes().splitlines() if line.strip()]


def read_parts(root: str | Path, scenes: Sequence[str]) -> list[list[Any]]:
    """The records of the parts of ``scenes`` in the job folder ``root``: one list per scene, in that order."""
    return [read_part(root, scene) for scene in scenes]
