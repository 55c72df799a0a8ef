"""``stridegen calibrate poses`` as a job on the scene runner: one task per scene, the worker's odometry of its
scene (``stridegen.logs.calibrate.poses.scene_poses``: poses and report row) is its part in the work folder
``<out>.parts/``, journaled with its sha256; a rerun resumes from the intact parts, and once every scene is done the
log is written by ``write_native_log`` through ``stridegen.logs.posed.PosedReader`` (the source log with its frame
and sample poses replaced, each box moved with its frame's ego) and the report beside it (the same bytes with any
number of workers). What the other calibrate commands measure is ``stridegen.logs.calibrate``'s.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.calibration.icp import open3d_module
from stridegen.calibration.odometry import OdometryConfig
from stridegen.core.canonical import sha256_canonical
from stridegen.core.errors import StrideGenError
from stridegen.logs.calibrate.poses import BoxRemoval, scene_poses
from stridegen.logs.calibrate.sweeps import DeskewOptions
from stridegen.logs.posed import PosedReader
from stridegen.run import backends
from stridegen.run.config import ExecutorSection
from stridegen.run.detect import detector_section, work_folder
from stridegen.run.executors import make_executor
from stridegen.run.runner import (
    JobTarget,
    RunObserver,
    SceneResult,
    SceneRunSummary,
    StageCallback,
    failed_scene,
    read_part,
    run_jobs,
    run_stages,
    write_part,
)

REPORT_FILE = "calibrate_poses_report.json"


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
    """What a worker of ``calibrate_poses`` needs (picklable: plain data and frozen dataclasses)."""

    log_root: str
    options: PosesOptions
    work: str  # the work folder

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


def _poses_worker(payload: tuple[PosesJob, str, str], report: StageCallback) -> SceneResult:
    """One scene's odometry, written as its part: one record ``{"token", "times_s", "T_global_from_ego",
    "report"}`` (JSON floats read back exactly)."""
    job, scene_name, scene_token = payload
    o = job.options
    timings: dict[str, float] = {}
    state: dict[str, Any] = {}
    try:
        scene = backends.log_reader(job.log_root, o.format_name, o.version).scene(scene_token)

        def odometry() -> None:
            detect = None
            if o.removal.source not in ("auto", "none", "annotations"):  # boxes from a detector backend
                detect = backends.detector(detector_section(o.removal.source, o.removal.detector_options)).detect
            state["poses"] = scene_poses(scene, o.channel, o.deskew, o.config, o.removal, detect)

        run_stages(scene_name, [("odometry", odometry)], timings, report)
        times, poses, row = state["poses"]
        record = {"token": scene_token, "times_s": times.tolist(), "T_global_from_ego": poses.tolist(), "report": row}
        info = write_part(job.work, scene_name, [record], {"sweeps": len(times)}, sort_keys=False)
        return SceneResult(scene_name, "built", info, timings_s=timings)
    except Exception as exc:  # one scene's failure is recorded; the others go on
        return failed_scene(scene_name, exc, timings)


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
    from stridegen.logs.native_writer import write_native_log

    start = time.perf_counter()
    o = options or PosesOptions()
    run_executor = make_executor(executor, workers)
    backends.forget("log_reader")  # the log may have changed since an earlier run in this process
    reader = backends.log_reader(log, o.format_name, o.version)
    chosen = list({s.token: s for s in ([reader.scene(s) for s in o.scenes] if o.scenes else reader.scenes())}.values())
    resolved = o.deskew.resolved()  # a bad mode, an unknown detector, a missing extra fail now, not in every scene
    if o.removal.source not in ("auto", "none", "annotations"):
        detector_section(o.removal.source, o.removal.detector_options)
    open3d_module()
    names, tokens = [s.name for s in chosen], {s.name: s.token for s in chosen}
    job = PosesJob(str(log), o, str(work_folder(out)))
    [outcome] = run_jobs(
        [JobTarget(Path(job.work), job.config_hash(names), names)],
        lambda _, scene: (job, scene, tokens[scene]),
        _poses_worker,
        run_executor,
        overwrite,
        observer,
    )
    result = PosesResult(Path(out), None, outcome.results)
    if result.ok:
        parts = {name: read_part(job.work, name)[0] for name in names}
        poses = {p["token"]: (np.asarray(p["times_s"]), np.asarray(p["T_global_from_ego"])) for p in parts.values()}
        report: dict[str, Any] = {
            "log": str(log),
            "deskew": resolved,
            "scenes": {n: p["report"] for n, p in parts.items()},
        }
        summary = write_native_log(
            PosedReader(reader, poses),
            out,
            scenes=[s.token for s in chosen],
            overwrite=overwrite,
            source={"format": reader.format_name, "poses": "stridegen calibrate poses (LiDAR odometry)"},
        )
        report["out"] = str(summary.out_root)
        (Path(out) / REPORT_FILE).write_text(json.dumps(report, indent=1, allow_nan=True) + "\n", encoding="utf-8")
        result.report = report
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
