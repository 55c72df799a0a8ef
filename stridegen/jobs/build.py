"""The build: log -> per-scene stages -> one HDF5 shard per scene, resumable, on any executor.

One scene runs the stages of ``stridegen.run.stages.SCENE_STAGES`` in order over one ``SceneState``
(``stridegen.run.state``), then ``write``. Backends (log reader, detector, tracker, segmenter, face detector) come
from ``stridegen.run.backends``, made in the worker that runs the scene.

The scene runner (``stridegen.run.runner``) checks the output folder, keeps the journal and resumes; the executor
(``executor`` in the config, ``local`` by default) runs scenes in-process or on worker processes, each writing its
scene's shard itself (atomic rename). The manifest is written at the end in scene order. Shard bytes depend only
on (log, config), never on the executor or on the order scenes finish in.

A scene that fails (a typed StrideGenError or any unexpected exception) is recorded in the journal and the
summary with its reason; the build goes on with the other scenes, and ``BuildResult.ok`` is False.

Before any stage runs, the log check (``stridegen.logs.check.check_before_build``, metadata only) looks at the
selected scenes: an
error of the whole log raises ``LogCheckError`` before any scene starts; a scene with an error finding (a bad pose
or calibration, a timestamp unit, an unsafe scene name, ...) is recorded as failed with the finding's message and
runs no stage; warnings (no keyframes, constant ego poses, no annotations, ...) are kept in
``BuildResult.warnings``. Where the reader can tell the whole-log errors without building a scene
(``LogReader.unknown_modalities``), each scene is checked in its own worker, just before its stages (it reads the
scene's metadata once for both, and no serial walk over the log delays the start); otherwise every scene is checked
first, in this process. A scene checked in its worker keeps its warnings in the journal with the scene
(``SceneResult.notes``, key ``check_warnings``), so a rerun that resumes it reads them back instead of checking
the scene again (a journal written before they were kept: the scene is checked again, in this process).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stridegen.core.errors import LogCheckError
from stridegen.logs.check import (
    ERROR,
    CheckReport,
    Finding,
    check_before_build,
    check_scene,
    failure_reason,
    scene_warnings,
)
from stridegen.logs.names import select_scenes
from stridegen.run import backends
from stridegen.run.config import BuildConfig, config_hash
from stridegen.run.executors import make_executor
from stridegen.run.lock import folder_lock
from stridegen.run.runner import (
    JobTarget,
    RunObserver,
    SceneJob,
    SceneResult,
    SceneRunSummary,
    StageCallback,
    failed_scene,
    run_scene_jobs,
    run_stages,
)
from stridegen.run.stages import STAGES, build_scene_record
from stridegen.shards.manifest import build_manifest, write_manifest
from stridegen.shards.writer import atomic_write_bytes, write_shard

REPORT_NAME = "build_report.json"


@dataclass
class BuildResult(SceneRunSummary):
    out_dir: Path
    manifest_path: Path
    config_hash: str
    results: list[SceneResult]  # in scene order
    wall_s: float
    warnings: list[Finding] = field(default_factory=list)  # the log check's warnings of the built scenes
    check: CheckReport | None = None

    @property
    def qa(self) -> int:
        """QA rows in the dataset's shards (built and resumed scenes)."""
        return sum(int(r.shard.counts.get("qa", 0)) for r in self.results if r.ok and r.shard is not None)


def process_scene(
    log_root: str | Path,
    config: BuildConfig,
    scene_name: str,
    out_dir: str | Path,
    cfg_hash: str,
    on_stage: StageCallback | None = None,
) -> SceneResult:
    """Build and write one scene. Never raises for a bad scene: the failure comes back in the result."""
    timings: dict[str, float] = {}
    report = on_stage or (lambda scene_name, stage: None)
    try:
        reader = backends.log_reader(log_root, config.log.format, config.log.version)
        scene = reader.scene(scene_name)
        record = build_scene_record(
            scene, config, reader.format_name, str(getattr(reader, "version", "") or ""), report, timings
        )
        info: list[Any] = []

        def write() -> None:
            info.append(
                write_shard(record, out_dir, cfg_hash, config.output.compression, config.output.compression_level)
            )

        run_stages(scene_name, [("write", write)], timings, report)
        return SceneResult(scene_name, "built", info[0], timings_s=timings)
    except Exception as exc:  # any failure of one scene is recorded; the build goes on
        return failed_scene(scene_name, exc, timings)


CHECK_WARNINGS = "check_warnings"  # the key of a scene's log-check warnings in its journal notes


@dataclass(frozen=True)
class BuildTask:
    """The build's task (``SceneTask``; plain data): the log, the config (dumped), the output folder and its
    hash, and ``blocked``: the failure reason of each scene the parent's log check found an error in, or None
    where each scene is checked in its worker (``check_before_build``)."""

    log_root: str
    config: dict[str, Any]
    out_dir: str
    config_hash: str
    blocked: dict[str, str] | None

    def run_scene(self, scene_name: str, report: StageCallback, timings: dict[str, float]) -> SceneResult:
        """One scene: its log check (unless the parent checked it), then ``process_scene``. A scene with an error
        finding runs no stage; an error of the check itself fails this scene alone."""
        config = BuildConfig.model_validate(self.config)
        from stridegen.logs.ros.recording import is_ros_layout

        if config.log.format == "ros" or (config.log.format is None and is_ros_layout(Path(self.log_root))):
            from stridegen.augment.corruptions.base import keep_freed_memory

            keep_freed_memory()  # a ROS worker's sweep and chunk buffers reuse freed pages (docs/ros.md, issue 34)
        warnings: list[Finding] = []
        check_s: dict[str, float] = {}
        check_failure = None if self.blocked is None else self.blocked.get(scene_name, "")
        if check_failure is None:
            t0 = time.perf_counter()
            reader = backends.log_reader(self.log_root, config.log.format, config.log.version)
            findings = check_scene(reader, config.check_settings(), scene_name)
            errors = [f for f in findings if f.severity == ERROR]
            check_failure = failure_reason(errors) if errors else ""
            warnings = scene_warnings(findings)
            check_s["check"] = time.perf_counter() - t0
        if check_failure:  # the log check found an error in this scene: no stage runs
            return SceneResult(scene_name, "failed", reason=check_failure, error_type=LogCheckError.__name__)
        result = process_scene(self.log_root, config, scene_name, self.out_dir, self.config_hash, report)
        result.warnings = warnings
        if self.blocked is None:  # checked here: its warnings kept in the journal for a rerun (resumed_warnings)
            result.notes = {CHECK_WARNINGS: [f.to_json() for f in warnings]}
        result.timings_s = {**check_s, **result.timings_s}
        return result


def run_build(
    log_root: str | Path,
    out_dir: str | Path,
    config: BuildConfig | None = None,
    overwrite: bool = False,
    observer: RunObserver | None = None,
) -> BuildResult:
    """Build (or resume) a dataset from a log into ``out_dir``. Config errors raise; scene failures do not.
    ``observer`` is told of the run's tasks, stage events and finished scenes (progress display)."""
    start = time.perf_counter()
    config = config or BuildConfig()
    log_root = Path(log_root)
    out = Path(out_dir)
    backends.forget("log_reader")  # a log may have changed since an earlier build in this process
    executor = make_executor(config.executor, config.workers)
    reader = backends.log_reader(log_root, config.log.format, config.log.version)
    source_version = str(getattr(reader, "version", "") or "")
    config = config.for_log(reader.format_name, source_version)
    cfg_hash = config_hash(config)  # with the anonymization resolved for this log
    # scene names and tokens only: a broken scene fails alone, later
    names = [name for name, _ in select_scenes(reader.scene_ids(), config.log.scenes, "log.scenes:")]
    report, blocked = check_before_build(reader, config.check_settings(), names)  # a broken log fails fast
    task = BuildTask(str(log_root), config.model_dump(mode="json"), str(out), cfg_hash, blocked)
    with folder_lock(out):  # the runner's lock (re-entrant), held until the manifest and report are written
        [outcome] = run_scene_jobs([SceneJob(JobTarget(out, cfg_hash, names), task)], executor, overwrite, observer)
        results = outcome.results
        if blocked is None:  # a resumed scene ran in no worker: its check's warnings as its journal kept them
            for r in results:
                if r.status == "resumed":
                    kept = resumed_warnings(r)
                    r.warnings = (
                        kept
                        if kept is not None
                        else scene_warnings(check_scene(reader, config.check_settings(), r.scene))
                    )
        source = {  # the log folder's name only: no path in a file that travels, the same bytes wherever out lies
            "root": log_root.resolve().name,
            "format": reader.format_name,
            "version": source_version,
        }
        manifest_path = write_manifest(out, build_manifest(config, source, outcome.shards(), outcome.failures()))
        if config.anonymize.active():
            from stridegen.shards.anonymization import write_anonymization_sidecar  # the anonymizer: on use only

            write_anonymization_sidecar(out, config.anonymize.model_dump(mode="json"))
        warnings = [f for f in report.warnings if f.scene is None or f.scene not in (blocked or {})]
        warnings += [w for r in results for w in r.warnings]  # the scenes checked in their workers
        result = BuildResult(out, manifest_path, cfg_hash, results, time.perf_counter() - start, warnings, report)
        atomic_write_bytes(out / REPORT_NAME, json.dumps(build_report(result, config), indent=2).encode() + b"\n")
    return result


def resumed_warnings(result: SceneResult) -> list[Finding] | None:
    """The log-check warnings a resumed scene's journal kept (``notes[CHECK_WARNINGS]``, written when its worker
    checked it), None where it kept none (a journal from before they were kept) or they cannot be read: the
    scene is then checked again."""
    kept = result.notes.get(CHECK_WARNINGS)
    if not isinstance(kept, list):
        return None
    try:
        return [Finding.from_json(f) for f in kept]
    except ValueError:
        return None


def build_report(result: BuildResult, config: BuildConfig) -> dict[str, Any]:
    """Timings and statuses (not deterministic, hence not in the manifest)."""
    stage_totals = {s: round(sum(r.timings_s.get(s, 0.0) for r in result.results), 4) for s in STAGES}
    built = [r for r in result.results if r.status == "built" and r.shard is not None]
    keyframes = sum(int(r.shard.counts.get("keyframes", 0)) for r in built if r.shard is not None)
    return {
        "config_hash": result.config_hash,
        "executor": config.executor.name,
        "workers": config.workers,
        "cpu_count": os.cpu_count(),
        "wall_s": round(result.wall_s, 4),
        "scenes": {
            "total": len(result.results),
            "built": len(built),
            "resumed": sum(r.status == "resumed" for r in result.results),
            "failed": len(result.failed),
        },
        "check_s": round(result.check.wall_s, 4) if result.check is not None else None,
        "warnings": [f.to_json() for f in result.warnings],
        "keyframes_built": keyframes,
        "keyframes_per_s": round(keyframes / result.wall_s, 4) if result.wall_s > 0 else None,
        "stage_seconds_total": stage_totals,
        "per_scene": [
            {
                "scene": r.scene,
                "status": r.status,
                "reason": r.reason,
                "timings_s": {k: round(v, 4) for k, v in r.timings_s.items()},
            }
            for r in result.results
        ],
    }
