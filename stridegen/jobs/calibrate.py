"""``stridegen calibrate poses`` as a job on the scene runner: one task per scene, the worker's odometry of its
scene (``stridegen.logs.calibrate.poses.scene_poses``: poses and report row, kept as a ``poses_record``) is its part
in the work folder ``<out>.parts/``, journaled with its sha256; a rerun resumes from the intact parts, and once every
scene is done ``write_posed_log`` writes the log with the new poses and the report beside it (the same bytes with
any number of workers). Backends (the box-removal detector) are built only in the workers. What the other calibrate
commands measure is ``stridegen.logs.calibrate``'s.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stridegen.calibration.icp import open3d_module
from stridegen.calibration.odometry import OdometryConfig
from stridegen.core.canonical import sha256_canonical
from stridegen.core.errors import StrideGenError
from stridegen.logs.calibrate.poses import BoxRemoval, poses_record, scene_poses, write_posed_log
from stridegen.logs.calibrate.sweeps import DeskewOptions
from stridegen.run import backends
from stridegen.run.config import ExecutorSection, detector_section
from stridegen.run.executors import make_executor
from stridegen.run.runner import (
    JobOutcome,
    JobTarget,
    RunObserver,
    SceneJob,
    SceneResult,
    SceneRunSummary,
    StageCallback,
    read_part,
    run_scene_jobs,
    run_stages,
    work_folder,
    write_part,
)
from stridegen.shards.writer import ShardInfo


@dataclasses.dataclass(frozen=True)
class PosesOptions:
    """What ``calibrate poses`` reads and how: the log's format and version (None: detected), the scenes (names or
    tokens; None: every scene), the LiDAR channel (None: the first), de-skew, odometry settings (None: the
    defaults) and box removal."""

    format_name: str | None = None
    version: str | None = None
    scenes: Sequence[str] | None = None
    channel: str | None = None
    deskew: DeskewOptions = dataclasses.field(default_factory=DeskewOptions)
    config: OdometryConfig | None = None
    removal: BoxRemoval = dataclasses.field(default_factory=BoxRemoval)


@dataclasses.dataclass(frozen=True)
class PosesJob:
    """The task of ``calibrate poses`` (``SceneTask``; picklable: plain data and frozen dataclasses); ``tokens``:
    scene name -> token."""

    log_root: str
    options: PosesOptions
    work: str  # the work folder
    tokens: dict[str, str] = dataclasses.field(default_factory=dict)

    def config_hash(self, scenes: Sequence[str]) -> str:
        """What the parts depend on: the log, the scenes and every option of the odometry."""
        o = self.options
        return sha256_canonical(
            {
                "calibrate": "poses",
                "log": [str(Path(self.log_root).resolve()), o.format_name, o.version],
                "scenes": list(scenes),
                "channel": o.channel,
                "deskew": dataclasses.asdict(o.deskew),
                "odometry": dataclasses.asdict(o.config or OdometryConfig()),
                "removal": dataclasses.asdict(o.removal),
            }
        )

    def run_scene(self, scene_name: str, report: StageCallback, timings: dict[str, float]) -> ShardInfo:
        """One scene's odometry, written as its part: one ``poses_record``."""
        o, token = self.options, self.tokens[scene_name]
        scene = backends.log_reader(self.log_root, o.format_name, o.version).scene(token)
        state: dict[str, Any] = {}

        def odometry() -> None:
            detect = None
            if o.removal.source not in ("auto", "none", "annotations"):  # boxes from a detector backend
                detect = backends.detector(detector_section(o.removal.source, o.removal.detector_options)).detect
            state["poses"] = scene_poses(scene, o.channel, o.deskew, o.config, o.removal, detect)

        run_stages(scene_name, [("odometry", odometry)], timings, report)
        times, poses, row = state["poses"]
        record = poses_record(token, times, poses, row)
        return write_part(self.work, scene_name, [record], {"sweeps": len(times)}, sort_keys=False)


@dataclasses.dataclass
class PosesResult(SceneRunSummary):
    """What ``run_calibrate_poses`` did: the report (None until every scene is done, then also written to
    ``out/calibrate_poses_report.json``) and each scene's result, in order."""

    out_dir: Path
    report: dict[str, Any] | None
    results: list[SceneResult] = dataclasses.field(default_factory=list)
    wall_s: float = 0.0


def run_calibrate_poses(
    log: str | Path,
    out: str | Path,
    options: PosesOptions | None = None,
    *,
    overwrite: bool = False,
    workers: int = 1,
    executor: ExecutorSection | str = "local",
    observer: RunObserver | None = None,
) -> PosesResult:
    """``calibrate_poses`` as a scene run: a failed scene is in the result's ``failed`` (the log and the report
    are written once every scene is done). ``overwrite`` also replaces a work folder (``<out>.parts/``) of other
    options; ``workers`` / ``executor`` run the scenes, ``observer`` is told of them."""
    start = time.perf_counter()
    o = options or PosesOptions()
    run_executor = make_executor(executor, workers)
    backends.forget("log_reader")  # the log may have changed since an earlier run in this process
    reader = backends.log_reader(log, o.format_name, o.version)
    chosen = list({s.token: s for s in ([reader.scene(s) for s in o.scenes] if o.scenes else reader.scenes())}.values())
    resolved = o.deskew.resolved()  # a bad mode, an unknown detector, a missing extra fail now, not in every scene
    if o.removal.source not in ("auto", "none", "annotations"):
        detector_section(o.removal.source, o.removal.detector_options)  # checked, not built
    open3d_module()
    names = [s.name for s in chosen]
    job = PosesJob(str(log), o, str(work_folder(out)), {s.name: s.token for s in chosen})
    result = PosesResult(Path(out), None)

    def finish(outcome: JobOutcome) -> None:  # the log and the report from the parts, once every scene is done
        result.results = outcome.results
        if outcome.ok:
            records = {name: read_part(job.work, name)[0] for name in names}
            report = {"log": str(log), "deskew": resolved}
            result.report = write_posed_log(reader, records, out, report, [s.token for s in chosen], overwrite)

    target = JobTarget(Path(job.work), job.config_hash(names), names)
    run_scene_jobs([SceneJob(target, job, finish)], run_executor, overwrite, observer)
    result.wall_s = time.perf_counter() - start
    return result


def calibrate_poses(
    log: str | Path,
    out: str | Path,
    *,
    format_name: str | None = None,
    version: str | None = None,
    scenes: Sequence[str] | None = None,
    channel: str | None = None,
    deskew: DeskewOptions | None = None,
    config: OdometryConfig | None = None,
    removal: BoxRemoval | None = None,
    overwrite: bool = False,
    workers: int = 1,
    executor: ExecutorSection | str = "local",
    observer: RunObserver | None = None,
) -> dict[str, Any]:
    """Ego poses of every scene (or those named) of ``log`` by LiDAR odometry, written with the rest of the log
    as a stridegen-log at ``out``; returns the report (also written to ``out/calibrate_poses_report.json``).
    Points inside the boxes of moving objects are dropped first (``removal``, default ``BoxRemoval()``). A scene
    that fails is a StrideGenError naming each failed scene (``run_calibrate_poses`` returns them instead)."""
    options = PosesOptions(
        format_name, version, scenes, channel, deskew or DeskewOptions(), config, removal or BoxRemoval()
    )
    result = run_calibrate_poses(
        log, out, options, overwrite=overwrite, workers=workers, executor=executor, observer=observer
    )
    if result.report is None:
        reasons = "; ".join(f"{r.scene}: {r.reason}" for r in result.failed)
        raise StrideGenError(f"calibrate poses: {len(result.failed)} scene(s) failed ({reasons}); rerun to retry them")
    return result.report
