"""``stridegen calibrate``: what the commands do with a log (read sweeps and images, run the calibration
algorithms of ``stridegen.calibration``, write the log with new poses, reports, rig files).

- ``calibrate_poses``: LiDAR odometry per scene (``calibration.odometry``), the poses anchored at the log's first
  pose of the scene; the log is written by ``write_native_log`` through ``stridegen.logs.posed.PosedReader``,
  which serves the source log with its frame and sample poses replaced (sample poses interpolated at the sample's
  own time) and each box moved with its frame's ego (a box keeps its place relative to the sensors that saw it); a
  report of the registration quality and of the drift against the log's own poses (when it has any) goes next to it.
  A job on the scene runner (stridegen.run.runner), one task per scene: the worker's odometry of its scene (poses
  and report row) is its part in the work folder ``<out>.parts/``, journaled with its sha256; a rerun resumes from
  the intact parts, and the log and report are written from them once every scene is done (the same bytes with
  any number of workers).
- ``ground_report``: RANSAC ground plane of every key sweep in the ego frame: sensor height, pitch, roll.
- ``align_logs``: Umeyama alignment of one log's ego positions onto another's at the same times.
- ``lidar_camera_report``: edge misalignment of each camera, refined extrinsics, and a rig YAML.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.calibration.deskew import azimuth_times, deskew_points
from stridegen.calibration.edges import EdgeViews, depth_edges, refine_extrinsic
from stridegen.calibration.ground import fit_ground_plane
from stridegen.calibration.icp import open3d_module
from stridegen.calibration.odometry import OdometryConfig, OdometryResult, lidar_odometry, points_outside_boxes
from stridegen.calibration.poses import interpolate_poses, rotation_angle_rad, trajectory_error, yaw_rad
from stridegen.calibration.umeyama import umeyama
from stridegen.core.canonical import sha256_canonical
from stridegen.core.errors import ConfigError, GeometryError, StrideGenError
from stridegen.core.geometry import invert_transform, transform_points
from stridegen.logs import open_log
from stridegen.logs.base import Frame, Scene
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
DESKEW_MODES = ("auto", "none", "times", "azimuth")
TIME_UNITS_S = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


# ---------------------------------------------------------------------------------------------- sweeps


@dataclasses.dataclass(frozen=True)
class DeskewOptions:
    """How sweeps are de-skewed. ``mode``: ``none``; ``times`` (the per-point time column ``time_column``, in
    ``time_unit``, relative to the sweep's timestamp); ``azimuth`` (times from each point's azimuth over one turn
    of ``period_s``); ``auto``: ``times`` when ``time_column`` is given, else ``none`` (a stridegen-log's clouds
    are motion-compensated by definition, docs/log-format.md)."""

    mode: str = "auto"
    time_column: int | None = None
    time_unit: str = "ns"
    period_s: float = 0.1

    def resolved(self) -> str:
        if self.mode not in DESKEW_MODES:
            raise ConfigError(f"deskew mode {self.mode!r} is not one of {list(DESKEW_MODES)}")
        if self.mode == "auto":
            return "times" if self.time_column is not None else "none"
        if self.mode == "times" and self.time_column is None:
            raise ConfigError("deskew mode 'times' needs the per-point time column (--time-column)")
        return self.mode


def lidar_channel(scene: Scene, channel: str | None) -> str:
    """The LiDAR channel to use: ``channel``, or the first LiDAR of the scene's first frame."""
    if channel:
        return channel
    for frame in scene.frames:
        if frame.lidar_channels:
            return frame.lidar_channels[0]
    raise ConfigError(f"scene {scene.name!r} has no LiDAR channel")


def scene_sweeps(
    scene: Scene, channel: str, deskew: DeskewOptions, motion: OdometryResult | None = None
) -> tuple[list[np.ndarray], np.ndarray]:
    """Key sweeps of a scene (its frames that have ``channel``: ``lidar_frames``) as ego-frame points [N_k, 3] and
    their times [F] (s). De-skew needs the motion
    over each interval: ``motion`` (a previous odometry pass: constant velocity from the previous interval) or,
    without it, no correction (the first pass)."""
    mode = deskew.resolved()
    pts: list[np.ndarray] = []
    times: list[float] = []
    for k, frame in enumerate(lidar_frames(scene, channel)):
        sample = frame.sensor(channel)
        raw = np.asarray(frame.reader.load_points(sample))
        xyz = raw[:, :3].astype(np.float64)
        if mode != "none" and motion is not None and k >= 1:
            T_prev = invert_transform(motion.T_world_from_ego[k - 1]) @ motion.T_world_from_ego[k]
            dt = sample.timestamp_us * 1e-6 - times[k - 1]
            T_es = sample.calibration.T_ego_from_sensor
            T_sensor_motion = invert_transform(T_es) @ T_prev @ T_es  # sensor at k-1 <- sensor at k
            tau = (
                raw[:, deskew.time_column].astype(np.float64) * TIME_UNITS_S[deskew.time_unit]
                if mode == "times" and deskew.time_column is not None
                else azimuth_times(xyz, deskew.period_s)
            )
            # A point seen tau (< 0) before the reference time: motion from k to then is the reverse motion.
            xyz = deskew_points(xyz, -tau, invert_transform(T_sensor_motion), dt)
        pts.append(transform_points(sample.calibration.T_ego_from_sensor, xyz))
        times.append(sample.timestamp_us * 1e-6)
    return pts, np.asarray(times)


def lidar_frames(scene: Scene, channel: str) -> list[Frame]:
    """The frames of ``scene`` that have a sample of ``channel`` (AV2 logs also have camera-only frames)."""
    return [f for f in scene.frames if channel in f.sensors]


# ---------------------------------------------------------------------------------------------- poses


@dataclasses.dataclass(frozen=True)
class BoxRemoval:
    """Which points are dropped before registration: those inside 3D boxes grown by ``margin_m`` on every side.

    ``source``: ``auto`` (the log's annotations when the scene has any, else no removal), ``none``,
    ``annotations``, or a ``detector`` backend name of the registry (boxes from ``detector.detect(frame)``, built
    with ``detector_options``). Boxes whose known speed is below ``static_speed_mps`` are kept as static structure
    (parked cars, cones, barriers: on a flat road often the only structure that fixes x, y and yaw); a box without
    a velocity (NaN) is removed. Moving objects that look static to the ego (a lead car at the ego's speed) would
    otherwise pull the registration to a standstill.
    """

    source: str = "auto"
    margin_m: float = 0.3
    static_speed_mps: float = 0.5
    detector_options: dict[str, Any] = dataclasses.field(default_factory=dict)


def scene_boxes_ego(scene: Scene, channel: str, removal: BoxRemoval) -> tuple[str, list[Any] | None]:
    """The source used (``BoxRemoval.source`` resolved) and per key sweep the boxes to remove in the ego frame of
    the sweep (placed with the log's own poses, which also placed the boxes), or None for no removal."""
    source = removal.source
    if source == "auto":
        source = "annotations" if any(len(f.annotations()) for f in lidar_frames(scene, channel)) else "none"
    if source == "none":
        return source, None
    detector = None
    if source != "annotations":
        from stridegen.pipeline.detect.base import make_detector

        detector = make_detector(source, **removal.detector_options)
    out = []
    for frame in lidar_frames(scene, channel):
        boxes = frame.annotations().boxes if detector is None else detector.detect(frame)
        speed = np.linalg.norm(boxes.velocity[:, :2], axis=1)
        moving = ~(speed < removal.static_speed_mps)  # NaN speed: unknown, removed
        T_ego_from_global = invert_transform(frame.sensor(channel).T_global_from_ego)
        out.append(boxes[np.flatnonzero(moving)].transform(T_ego_from_global, "ego"))
    return source, out


def _has_poses(poses: np.ndarray) -> bool:
    """Whether a scene's poses say anything (not every pose the same, e.g. all identity: a log without poses)."""
    return bool(np.abs(poses - poses[:1]).max() > 1e-9)


def scene_poses(
    scene: Scene, channel: str | None, deskew: DeskewOptions, config: OdometryConfig | None, removal: BoxRemoval
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """The odometry of one scene: the times [F] (s) of its key sweeps, its poses ``T_global_from_ego`` [F, 4, 4]
    anchored at the log's first pose of the scene, and its report row (``calibrate_poses``)."""
    ch = lidar_channel(scene, channel)
    box_source, boxes = scene_boxes_ego(scene, ch, removal)

    def static(pts: list[np.ndarray]) -> tuple[list[np.ndarray], int]:
        if boxes is None:
            return pts, 0
        keep = [
            points_outside_boxes(p, b.center, b.size_lwh, b.yaw, removal.margin_m)
            for p, b in zip(pts, boxes, strict=True)
        ]
        return [p[m] for p, m in zip(pts, keep, strict=True)], int(sum((~m).sum() for m in keep))

    pts, times = scene_sweeps(scene, ch, deskew)
    pts, removed = static(pts)
    result = lidar_odometry(pts, times, config)
    if deskew.resolved() != "none":  # second pass on sweeps de-skewed with the first pass's motion
        pts, times = scene_sweeps(scene, ch, deskew, result)
        pts, removed = static(pts)
        result = lidar_odometry(pts, times, config)
    old = np.stack([f.sensor(ch).T_global_from_ego for f in lidar_frames(scene, ch)])
    anchored = old[0][None] @ result.T_world_from_ego
    row = _scene_report(result, anchored, old)
    row["box_removal"] = {"source": box_source, "removed_points": removed, "margin_m": removal.margin_m}
    return times, anchored, row


@dataclasses.dataclass(frozen=True)
class PosesOptions:
    """What ``calibrate poses`` reads and how: the log's format and version (None: detected), the scenes (names or
    tokens; None: every scene), the LiDAR channel (None: the first), de-skew, odometry settings (None: the
    defaults) and box removal."""

    format_name: str | None = None
    version: str | None = None
    scenes: Sequence[str] | None = None
    channel: str | None = None
    deskew: DeskewOptions = DeskewOptions()
    config: OdometryConfig | None = None
    removal: BoxRemoval = BoxRemoval()


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
            state["poses"] = scene_poses(scene, o.channel, o.deskew, o.config, o.removal)

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


def _scene_report(result: OdometryResult, new: np.ndarray, old: np.ndarray) -> dict[str, Any]:
    fit, rmse = result.fitness[1:], result.rmse_m[1:]
    out: dict[str, Any] = {
        "sweeps": int(new.shape[0]),
        "distance_m": float(np.linalg.norm(np.diff(new[:, :3, 3], axis=0), axis=1).sum()),
        "fitness_mean": float(np.nanmean(fit)) if fit.size else None,
        "fitness_min": float(np.nanmin(fit)) if fit.size else None,
        "rmse_mean_m": float(np.nanmean(rmse)) if rmse.size else None,
        "start_speed_mps": None if np.isnan(result.start_speed_mps) else result.start_speed_mps,
        # Degeneracy (calibration.odometry, step 3): per sweep the directions taken from the constant-velocity
        # prediction and the smallest eigenvalue of the scaled information matrix.
        "degenerate_sweeps": int(sum(1 for w in result.weak if w)),
        "degeneracy": [
            {"sweep": k, "weak": list(w), "min_eigenvalue": float(result.eigenvalues[k, 0])}
            for k, w in enumerate(result.weak)
            if k > 0
        ],
        "drift_vs_log": None,
    }
    if _has_poses(old):
        err = trajectory_error(new, old)
        out["drift_vs_log"] = {
            "max_translation_m": float(err.translation_m.max()),
            "final_translation_m": float(err.translation_m[-1]),
            "translation_per_distance": err.max_translation_ratio,
            "max_yaw_deg": float(np.abs(err.yaw_deg).max()),
            "max_rotation_deg": float(err.rotation_deg.max()),
        }
    return out


# ---------------------------------------------------------------------------------------------- ground


def ground_report(
    log: str | Path,
    *,
    format_name: str | None = None,
    version: str | None = None,
    scenes: Sequence[str] | None = None,
    channel: str | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Per scene and key sweep: the ground plane under the LiDAR (RANSAC in the LiDAR frame), as the sensor's
    height above it (m), pitch and roll (degrees; docs/calibrate.md for signs); and per scene their mean, standard
    deviation and drift (slope of a straight-line fit over time, per second)."""
    reader = open_log(log, format_name, version)
    chosen = [reader.scene(s) for s in scenes] if scenes else reader.scenes()
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {"log": str(log), "scenes": {}}
    for scene in chosen:
        ch = lidar_channel(scene, channel)
        times = scene.timestamps_s
        rows = []
        for frame in scene.frames:  # in the LiDAR's own frame: its height, pitch and roll above the ground
            p = np.asarray(frame.reader.load_points(frame.sensor(ch)))[:, :3].astype(np.float64)
            plane = fit_ground_plane(p, rng, max_height_m=0.0)
            rows.append((plane.height_m, plane.pitch_deg, plane.roll_deg, float(plane.inliers.mean())))
        arr = np.array(rows)
        stats = {}
        for i, name in enumerate(("height_m", "pitch_deg", "roll_deg")):
            slope = float(np.polyfit(times - times[0], arr[:, i], 1)[0]) if len(times) >= 2 else 0.0
            stats[name] = {"mean": float(arr[:, i].mean()), "std": float(arr[:, i].std()), "drift_per_s": slope}
        out["scenes"][scene.name] = {
            "frames": [
                {
                    "timestamp_us": int(f.timestamp_us),
                    "height_m": r[0],
                    "pitch_deg": r[1],
                    "roll_deg": r[2],
                    "inlier_fraction": r[3],
                }
                for f, r in zip(scene.frames, rows, strict=True)
            ],
            **stats,
        }
    return out


# ---------------------------------------------------------------------------------------------- align


def align_logs(
    log_a: str | Path,
    log_b: str | Path,
    *,
    with_scale: bool = False,
    format_a: str | None = None,
    format_b: str | None = None,
) -> dict[str, Any]:
    """Per scene present in both logs (by token): log A's ego positions aligned onto log B's at A's frame times
    (B interpolated) by Umeyama's method (SE(3), or Sim(3) ``with_scale``); the transform and the residuals."""
    a, b = open_log(log_a, format_a), open_log(log_b, format_b)
    b_scenes = {s.token: s for s in b.scenes()}
    out: dict[str, Any] = {"a": str(log_a), "b": str(log_b), "with_scale": with_scale, "scenes": {}}
    for scene in a.scenes():
        other = b_scenes.get(scene.token)
        if other is None:
            continue
        ta, tb = scene.timestamps_s, other.timestamps_s
        inside = (ta >= tb[0]) & (ta <= tb[-1])
        pa = np.stack([f.T_global_from_ego for f in scene.frames])[inside]
        pb = interpolate_poses(tb, np.stack([f.T_global_from_ego for f in other.frames]), ta[inside])
        try:
            sim = umeyama(pa[:, :3, 3], pb[:, :3, 3], with_scale)
        except GeometryError as exc:
            out["scenes"][scene.name] = {"error": str(exc)}
            continue
        x_axis = pa[:, :3, 0] @ sim.rotation.T  # A's heading direction in B's frame
        heading = np.degrees(np.angle(np.exp(1j * (np.arctan2(x_axis[:, 1], x_axis[:, 0]) - yaw_rad(pb)))))
        out["scenes"][scene.name] = {
            "pairs": int(inside.sum()),
            "rotation": sim.rotation.tolist(),
            "translation_m": sim.translation.tolist(),
            "scale": sim.scale,
            "rmse_m": sim.rmse_m,
            "max_residual_m": float(sim.residuals_m.max()),
            "max_heading_residual_deg": float(np.abs(heading).max()),
        }
    if not out["scenes"]:
        raise ConfigError(f"no scene of {log_a} is in {log_b} (scenes are matched by token)")
    return out


# ---------------------------------------------------------------------------------------------- lidar-camera


def camera_spec_angles(T_ego_from_cam: np.ndarray) -> tuple[float, float, float]:
    """(yaw, pitch, roll) in degrees of a camera mounting in the convention of ``calibration.rig.CameraSpec``:
    ``R = Rz(yaw) R_fwd Rz(roll) Rx(pitch)``, so ``R_fwd^T R = Ry(-yaw) Rz(roll) Rx(pitch)`` (``R_fwd^T Rz R_fwd``
    is a rotation about the camera's -y axis: the ego's z)."""
    from scipy.spatial.transform import Rotation

    from stridegen.calibration.rig import _R_EGO_FROM_CAM_FORWARD

    m = _R_EGO_FROM_CAM_FORWARD.T @ np.asarray(T_ego_from_cam)[:3, :3]
    a, roll, pitch = Rotation.from_matrix(m).as_euler("YZX", degrees=True)
    return float(-a), float(pitch), float(roll)


# The synthetic checks (docs/calibrate.md) used 40 frames; a single real frame left the translation unconstrained.
LIDAR_CAMERA_MIN_FRAMES = 20


def lidar_camera_report(
    log: str | Path,
    *,
    format_name: str | None = None,
    version: str | None = None,
    scene: str | None = None,
    channel: str | None = None,
    cameras: Sequence[str] | None = None,
    frame_step: int = 1,
    perturb_rotation_deg: Sequence[float] | None = None,
    perturb_translation_m: Sequence[float] | None = None,
    rig_out: str | Path | None = None,
    rig_name: str = "calibrated",
) -> dict[str, Any]:
    """Edge misalignment (pixels) of each camera of one scene (the first by default) against its LiDAR, and the
    extrinsics after a small search (``calibration.edges``); every ``frame_step``-th frame is used. The
    ``perturb_*`` options move the log's extrinsic first (``edges.perturb``: a rotation vector in degrees and a
    translation in m, camera frame; a self-test: ``*_from_log`` then says how far the search ended from the log's
    extrinsic). ``rig_out``:
    write the refined cameras as a rig YAML (schema ``calibration.rig.Rig``) there."""
    from stridegen.calibration.edges import perturb
    from stridegen.calibration.rig import CameraSpec, Rig

    reader = open_log(log, format_name, version)
    sc = reader.scene(scene) if scene else reader.scenes()[0]
    lid = lidar_channel(sc, channel)
    frames = sc.frames[:: max(frame_step, 1)]
    cams = list(cameras) if cameras else [c for c in frames[0].camera_channels]
    clouds = [f.reader.load_points(f.sensor(lid)) for f in frames]
    edges = [depth_edges(p, p[:, 4] if p.shape[1] > 4 else None) for p in clouds]
    out: dict[str, Any] = {"log": str(log), "scene": sc.name, "lidar": lid, "frames": len(frames), "cameras": {}}
    out["warnings"] = []
    if len(frames) < LIDAR_CAMERA_MIN_FRAMES:
        out["warnings"].append(
            f"{sc.name}: {len(frames)} frame(s): the refined extrinsics are not reliable below "
            f"{LIDAR_CAMERA_MIN_FRAMES} (one nuScenes keyframe moved them by up to 28 cm; docs/calibrate.md)"
        )
    specs = []
    for cam in cams:
        calib = frames[0].sensor(cam).calibration
        moved = []
        for f, e in zip(frames, edges, strict=True):
            # LiDAR points at the image's time: through the global frame with each sample's own ego pose.
            T_cam_from_lidar_f = (
                invert_transform(f.sensor(cam).T_global_from_sensor) @ f.sensor(lid).T_global_from_sensor
            )
            T_log = invert_transform(calib.T_ego_from_sensor) @ f.sensor(lid).calibration.T_ego_from_sensor
            motion = invert_transform(T_log) @ T_cam_from_lidar_f  # LiDAR moved to the camera's time
            moved.append(dataclasses.replace(e, points=transform_points(motion, e.points)))
        T_log0 = invert_transform(calib.T_ego_from_sensor) @ frames[0].sensor(lid).calibration.T_ego_from_sensor
        T_start = T_log0
        if perturb_rotation_deg is not None or perturb_translation_m is not None:
            T_start = perturb(
                T_start, np.asarray(perturb_rotation_deg or (0, 0, 0)), np.asarray(perturb_translation_m or (0, 0, 0))
            )
        assert calib.intrinsic is not None
        views = EdgeViews.build([f.image(cam) for f in frames], moved, T_start, calib.intrinsic)
        refined = refine_extrinsic(T_start, calib.intrinsic, views)
        T_ego_from_lidar = frames[0].sensor(lid).calibration.T_ego_from_sensor
        T_ego_from_cam = T_ego_from_lidar @ invert_transform(refined.T_cam_from_lidar)
        change = invert_transform(T_start) @ refined.T_cam_from_lidar
        from_log = refined.T_cam_from_lidar @ invert_transform(T_log0)  # camera frame: refined <- log's

        out["cameras"][cam] = {
            "misalignment_before_px": refined.before_px,
            "misalignment_after_px": refined.after_px,
            "score_before": refined.score_before,
            "score_after": refined.score_after,
            "edge_points": int(views.weight.size),
            "rotation_change_deg": float(np.degrees(rotation_angle_rad(change[:3, :3]))),
            "translation_change_m": float(np.linalg.norm(change[:3, 3])),
            "rotation_from_log_deg": float(np.degrees(rotation_angle_rad(from_log[:3, :3]))),
            "translation_from_log_m": float(np.linalg.norm(from_log[:3, 3])),
            "T_ego_from_sensor": T_ego_from_cam.tolist(),
        }
        yaw, pitch, roll = camera_spec_angles(T_ego_from_cam)
        K = calib.intrinsic
        specs.append(
            CameraSpec(
                channel=cam,
                width=int(calib.width or 1),
                height=int(calib.height or 1),
                fx=float(K[0, 0]),
                fy=float(K[1, 1]),
                cx=float(K[0, 2]),
                cy=float(K[1, 2]),
                translation_ego=(float(T_ego_from_cam[0, 3]), float(T_ego_from_cam[1, 3]), float(T_ego_from_cam[2, 3])),
                yaw_deg=yaw,
                pitch_deg=pitch,
                roll_deg=roll,
            )
        )
    if rig_out is not None:
        import yaml

        rig = Rig(name=rig_name, description=f"stridegen calibrate lidar-camera of {log} ({sc.name})", cameras=specs)
        path = Path(rig_out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(rig.model_dump(mode="json"), sort_keys=False), encoding="utf-8")
        out["rig"] = str(path)
    return out
