"""Constant ego poses in a log without annotations (issue 33, deliverable 3): the LiDAR sweeps decide
(``stridegen.logs.check.lidar_motion``). Each case starts from a synthetic log, removes its annotations, replaces
every ego pose by the identity (what a converter without poses writes) and asserts what ``check`` and the build
make of it: the LiDAR scene moves (static scenery) -> an error naming ``stridegen calibrate poses``; the ego truly
stands still (sweeps cast from one pose while the traffic drives on) -> a warning that the car stood still; traffic
alone off the ground -> the warning that the LiDAR cannot tell, with the reason."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from stridegen.logs.base import Scene
from stridegen.logs.check import CheckReport, Finding, check_log
from stridegen.run.config import load_build_config

VERSION = "v1.0-synthetic"
SEED, SECONDS = 5, 6.0  # scene-0000 of seed 5 drives ("flow" profile) at 5.1 m/s and more from its first frame
FAST = ["segmenter.name=projected_box", "keyframes.start_s=2", "keyframes.end_s=4"]


def _load(root: Path, name: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = json.loads((root / VERSION / f"{name}.json").read_text())
    return records


def _save(root: Path, name: str, records: list[dict[str, Any]]) -> None:
    (root / VERSION / f"{name}.json").write_text(json.dumps(records))


def _raw(src: Path, dst: Path) -> Path:
    """A copy of ``src`` without annotations and with every ego pose the identity."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("instance_ids", "maps", ".stridegen-index"))
    _save(dst, "sample_annotation", [])
    _save(dst, "instance", [])
    poses = _load(dst, "ego_pose")
    for p in poses:
        p.update(rotation=[1.0, 0.0, 0.0, 0.0], translation=[0.0, 0.0, 0.0])
    _save(dst, "ego_pose", poses)
    return dst


def _park(root: Path) -> None:
    """Every key LiDAR sweep of scene-0000 cast again from the ego's first pose, against the scenery and the
    agents where they are at the sweep's time: an ego that stands still while the traffic drives past."""
    from stridegen.calibration.rig import load_rig
    from stridegen.logs.synthetic.lidar import BOX_REFLECTIVITY, cast_lidar
    from stridegen.logs.synthetic.scenario import compose_scene
    from stridegen.logs.synthetic.scenery import compose_scenery

    scene = compose_scene(SEED, 0, SECONDS)
    scenery = compose_scenery(SEED, 0)
    lidar = load_rig("nuscenes").lidars[0]
    T_global_from_sensor = scene.ego_pose(scene.sample_times[0]) @ lidar.T_ego_from_sensor
    near = scenery.near(T_global_from_sensor[:2, 3], float(lidar.max_range_m))
    end = scene.timestamp_us(scene.sample_times[-1])
    records = sorted(
        (
            r
            for r in _load(root, "sample_data")
            if "/LIDAR_TOP/" in r["filename"] and scene.start_timestamp_us <= r["timestamp"] <= end
        ),
        key=lambda r: r["timestamp"],
    )
    assert len(records) == len(scene.sample_times)
    for k, record in enumerate(records):
        boxes = scene.agent_states(scene.time_s(record["timestamp"]))
        n = len(boxes.yaw)
        sweep = cast_lidar(
            T_global_from_sensor,
            lidar,
            np.concatenate([boxes.center, scenery.center[near]]),
            np.concatenate([boxes.size_lwh, scenery.size_lwh[near]]),
            np.concatenate([boxes.yaw, scenery.yaw[near]]),
            np.random.default_rng([SEED, 0, 99, k]),  # noise and dropout of its own in every sweep
            reflectivity=np.concatenate([np.full(n, BOX_REFLECTIVITY), scenery.reflectivity[near]]),
        )
        (root / record["filename"]).write_bytes(sweep.points_sensor.astype(np.float32).tobytes())


@pytest.fixture(scope="module")
def scenery_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One synthetic scene of 6 s with static scenery (buildings, poles, walls), tiny cameras."""
    from stridegen.logs.synthetic.generator import generate_dataset

    root = tmp_path_factory.mktemp("scenery") / "log"
    generate_dataset(
        root, scenes=1, seconds=SECONDS, seed=SEED, width=64, height=36, progress=False, static_scenery=True
    )
    return root


def _check(log: Path, *overrides: str) -> CheckReport:
    return check_log(log, load_build_config(None, [*FAST, *overrides]).check_settings())


def _constant_pose(report: CheckReport) -> list[Finding]:
    return [f for f in report.findings if f.code == "constant_ego_pose"]


def test_a_moving_lidar_scene_with_constant_poses_is_an_error_naming_calibrate_poses(
    scenery_log: Path, tmp_path: Path
) -> None:
    log = _raw(scenery_log, tmp_path / "log")
    [finding] = _constant_pose(_check(log))
    assert finding.severity == "error" and finding.scene == "scene-0000"
    assert "LiDAR sweeps 0.50 s apart" in finding.message and "the ego moved" in finding.message
    # the generator's ego drives 5.11 m/s over the first pair (scenario "flow", seed 5): the speed found is its
    assert "(5.1" in finding.message
    assert "stridegen calibrate poses LOG --out NEW_LOG" in finding.likely_cause
    assert "log.parked_ego=true" in finding.likely_cause


@pytest.mark.slow
def test_the_build_fails_the_scene_and_check_prints_the_error(scenery_log: Path, tmp_path: Path) -> None:
    from stridegen.cli import app
    from stridegen.jobs.build import run_build

    log = _raw(scenery_log, tmp_path / "log")
    result = run_build(log, tmp_path / "ds", load_build_config(None, FAST))  # a recorded failed scene
    [failed] = result.failed
    assert "constant_ego_pose" in failed.reason and "stridegen calibrate poses" in failed.reason
    printed = CliRunner().invoke(app, ["check", str(log)])
    assert printed.exit_code == 1 and "constant_ego_pose" in printed.output
    assert "stridegen calibrate poses" in printed.output


def test_parked_ego_accepts_constant_poses_without_reading_a_sweep(scenery_log: Path, tmp_path: Path) -> None:
    log = _raw(scenery_log, tmp_path / "log")
    for path in (log / "samples" / "LIDAR_TOP").iterdir():
        path.write_bytes(b"")  # a sweep read would be an error of its own; parked_ego reads none
    report = _check(log, "log.parked_ego=true")
    assert not _constant_pose(report)


def test_an_ego_that_stands_still_is_a_warning_that_the_car_stood_still(scenery_log: Path, tmp_path: Path) -> None:
    log = _raw(scenery_log, tmp_path / "log")
    _park(log)
    [finding] = _constant_pose(_check(log))
    assert finding.severity == "warning"
    assert "the LiDAR agrees the car stood still" in finding.message
    assert "log.parked_ego=true" in finding.likely_cause
    assert not _constant_pose(_check(log, "log.parked_ego=true"))


def test_traffic_alone_off_the_ground_cannot_tell(one_scene_log: Path, tmp_path: Path) -> None:
    """No scenery: the only structure off the ground is the traffic, which moves each its own way."""
    log = _raw(one_scene_log, tmp_path / "log")
    [finding] = _constant_pose(_check(log))
    assert finding.severity == "warning"
    assert "the LiDAR cannot tell" in finding.message and "too little structure off the ground" in finding.message
    assert "stridegen calibrate poses" in finding.likely_cause


# ------------------------------------------------------------------------------------------ the pieces
def test_sweep_pairs_take_the_first_and_last_sweep_and_one_half_a_second_away() -> None:
    from stridegen.logs.check.lidar_motion import sweep_pairs

    assert sweep_pairs(np.arange(16) * 0.5) == [(0, 1), (14, 15)]
    assert sweep_pairs(np.arange(40) * 0.1) == [(0, 5), (34, 39)]  # 10 Hz frames: 0.5 s is five frames on
    assert sweep_pairs(np.array([0.0, 0.5])) == [(0, 1)]
    assert sweep_pairs(np.array([0.0, 0.1, 0.2])) == [(0, 2)]


def test_voxel_centroids_and_support_known_answers() -> None:
    from stridegen.logs.check.lidar_motion import SUPPORT_DISTANCE_M, support, voxel_centroids

    xyz = np.array([[0.1, 0.1, 0.1], [0.3, 0.1, 0.1], [1.2, 0.0, 0.0], [-0.2, 0.0, 0.0]])
    out = voxel_centroids(xyz, 0.5)
    # voxels (-1, 0, 0), (0, 0, 0) with two points, (2, 0, 0): in key order
    assert np.allclose(out, [[-0.2, 0.0, 0.0], [0.2, 0.1, 0.1], [1.2, 0.0, 0.0]])
    reference = np.array([[0.0, 0.0, 0.0], [10.0, 0.0, 0.0]])
    moved = np.array([[SUPPORT_DISTANCE_M - 0.01, 0.0, 0.0], [10.0, 0.6, 0.0], [5.0, 0.0, 0.0], [10.0, 0.0, 0.1]])
    assert support(reference, moved) == (2, 0.5)
    assert support(reference, np.zeros((0, 3))) == (0, 0.0)


def test_a_sweep_that_cannot_be_read_cannot_tell_and_names_the_file(scenery_log: Path, tmp_path: Path) -> None:
    log = _raw(scenery_log, tmp_path / "log")
    first = min(_load(log, "sample_data"), key=lambda r: (r["timestamp"], "/LIDAR_TOP/" not in r["filename"]))
    assert "/LIDAR_TOP/" in first["filename"]
    (log / first["filename"]).write_bytes(b"\x00" * 7)  # no whole number of points
    [finding] = _constant_pose(_check(log))
    assert (
        finding.severity == "warning" and "the LiDAR cannot tell: the sweeps could not be compared" in finding.message
    )
    assert Path(first["filename"]).name in finding.message


# ------------------------------------------------------------------------------------------ a real sweep, moved
def _moving_copies(sweep: np.ndarray, speed_mps: float, frames: int = 6) -> Scene:
    """A scene of ``frames`` frames 0.5 s apart whose LiDAR returns are the real ``sweep`` (sensor frame, [N, >=3])
    seen from an ego that drives ``speed_mps`` along its x axis, each with 3 cm of noise of its own; every pose the
    identity. The known answer: the ego's speed."""
    from stridegen.logs.base import Annotations, Frame, LogReader, SensorCalibration, SensorSample

    class Copies(LogReader):
        def scenes(self) -> list[Scene]:
            return [scene]

        def load_points(self, sample: SensorSample) -> np.ndarray:
            k = int(sample.token)
            rng = np.random.default_rng(k)
            out = sweep.astype(np.float64).copy()
            out[:, 0] -= speed_mps * 0.5 * k  # the world seen from k x 0.5 s further on
            out[:, :3] += rng.normal(0.0, 0.03, (len(out), 3))
            return out.astype(np.float32)

        def load_annotations(self, frame: Frame) -> Annotations:
            raise NotImplementedError

    reader = Copies(Path("."))
    calibration = SensorCalibration("LIDAR_TOP", "lidar", np.eye(4))
    rows = []
    for k in range(frames):
        t_us = k * 500_000
        sample = SensorSample(str(k), "LIDAR_TOP", t_us, Path(f"{k}.bin"), np.eye(4), calibration)
        rows.append(Frame(reader, f"f{k}", "s", k, t_us, np.eye(4), {"LIDAR_TOP": sample}))
    scene = Scene(reader, "s", "s", rows)
    return scene  # Copies.scenes returns it


@pytest.mark.parametrize(("speed", "verdict"), [(0.0, "still"), (0.5, "unknown"), (5.0, "moved"), (24.0, "moved")])
def test_a_real_sweep_moved_by_a_known_speed(nuscenes_demo: Path, speed: float, verdict: str) -> None:
    """nuScenes scene-0061's sweep (a Singapore street: 3,808 voxels of structure off the ground) seen from an ego
    at a known speed: the verdict, and for a moving ego the speed within 0.1 m/s."""
    from stridegen.logs import open_log
    from stridegen.logs.check.lidar_motion import lidar_scene_motion

    frame = open_log(nuscenes_demo).scenes()[0].frames[0]
    motion = lidar_scene_motion(_moving_copies(np.asarray(frame.lidar("LIDAR_TOP")), speed))
    assert motion.verdict == verdict, motion.reason
    if verdict == "moved":
        assert abs(motion.pairs[0].speed_mps - speed) < 0.1 and len(motion.pairs) == 1
    if verdict == "still":
        assert len(motion.pairs) == 2 and "lie 0.0" in motion.reason
    if verdict == "unknown":
        assert "between the 0.2 m/s of a standing car and 1 m/s" in motion.reason


def test_a_corridor_that_fixes_only_y_cannot_tell() -> None:
    """Two long walls parallel to the road (guard rails, noise barriers) seen from an ego driving 10 m/s along them:
    every point-to-plane normal is +-y, so nothing fixes x (odometry's degeneracy test names it weak) and the
    registration would be free to say "still": the LiDAR cannot tell."""
    from stridegen.logs.check.lidar_motion import lidar_scene_motion

    rng = np.random.default_rng(3)
    n = 40_000
    walls = np.stack([rng.uniform(-200, 200, n), rng.choice([-8.0, 8.0], n), rng.uniform(-1.5, 1.5, n)], axis=1)
    ground = np.stack([rng.uniform(-60, 60, n), rng.uniform(-8, 8, n), np.full(n, -1.8)], axis=1)  # sensor 1.8 m up
    motion = lidar_scene_motion(_moving_copies(np.concatenate([walls, ground]), 10.0))
    assert motion.verdict == "unknown", motion.reason
    assert "do not fix the motion along x" in motion.reason
