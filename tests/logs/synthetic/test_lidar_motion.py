"""Synthetic LiDAR sweeps that are not motion-compensated (``SweepTiming``): each azimuth column meets the boxes
where their constant velocity has taken them at the column's firing time. Checked against the analytic answer
(every return lies on the face of its box moved by velocity x firing time) and a brute-force cast per column."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stridegen.calibration.rig import LidarSpec, load_rig
from stridegen.core.transforms import make_transform, transform_points
from stridegen.logs.synthetic.lidar import SweepTiming, azimuth_columns, cast_lidar, lidar_rays_sensor


def _spec() -> LidarSpec:
    return LidarSpec(
        channel="LIDAR_TEST",
        translation_ego=(0.0, 0.0, 0.0),
        beams=8,
        vertical_fov_deg=(-20.0, 5.0),
        azimuth_resolution_deg=1.0,
        rotation_hz=20.0,
        max_range_m=60.0,
    )


def _sensor_pose(height: float = 1.8) -> np.ndarray:
    return make_transform(np.eye(3), np.array([0.0, 0.0, height]))


def test_column_times_end_at_end_s_and_span_one_period():
    times = SweepTiming(period_s=0.05, end_s=-0.1).column_times(1000)
    assert np.isclose(times[-1], -0.1) and np.isclose(times[0], -0.15 + 0.05 / 1000)
    assert np.all(np.diff(times) > 0)
    assert np.isclose(SweepTiming(0.05, -0.1).max_abs_s(), 0.15)


def test_still_boxes_or_no_timing_give_the_instantaneous_sweep_bit_for_bit():
    spec = load_rig("nuscenes").lidars[0]
    center = np.array([[10.0, 2.0, 0.8], [-6.0, -8.0, 0.9]])
    size = np.array([[4.5, 1.9, 1.6], [0.7, 0.7, 1.8]])
    yaw = np.array([0.3, -1.0])
    base = cast_lidar(_sensor_pose(), spec, center, size, yaw, np.random.default_rng(3))
    still = cast_lidar(
        _sensor_pose(),
        spec,
        center,
        size,
        yaw,
        np.random.default_rng(3),
        velocity_global=np.zeros((2, 3)),
        timing=SweepTiming(),
    )
    for sweep in (still,):
        np.testing.assert_array_equal(sweep.points_sensor, base.points_sensor)
        np.testing.assert_array_equal(sweep.hit_box, base.hit_box)


@pytest.mark.slow
@settings(max_examples=6, deadline=None)
@given(
    vx=st.floats(-15.0, 15.0),
    vy=st.floats(-15.0, 15.0),
    end_s=st.floats(-0.2, 0.05),
    x=st.floats(-25.0, 25.0),
    y=st.floats(8.0, 25.0),
    yaw=st.floats(-np.pi, np.pi),
)
def test_each_return_lies_on_its_box_moved_to_the_columns_firing_time(vx, vy, end_s, x, y, yaw):
    spec = _spec()
    timing = SweepTiming(period_s=0.05, end_s=end_s)
    center = np.array([[x, y, 0.8]])
    size = np.array([[4.5, 1.9, 1.6]])
    velocity = np.array([[vx, vy, 0.0]])
    T = _sensor_pose()
    sweep = cast_lidar(
        T,
        spec,
        center,
        size,
        np.array([yaw]),
        np.random.default_rng(0),
        velocity_global=velocity,
        timing=timing,
        range_noise_std_m=0.0,
        dropout=0.0,
    )
    dirs, _ = lidar_rays_sensor(spec)
    n_beams = spec.beams
    times = np.repeat(timing.column_times(azimuth_columns(spec)), n_beams)
    pts = transform_points(T, sweep.points_sensor[:, :3].astype(np.float64))
    # firing time of each point: its ray (the direction of the point from the sensor)
    unit = sweep.points_sensor[:, :3] / np.linalg.norm(sweep.points_sensor[:, :3], axis=1, keepdims=True)
    ray = np.argmax(unit.astype(np.float64) @ dirs.T, axis=1)
    on_box = sweep.hit_box == 0
    moved = center[0] + velocity[0] * times[ray[on_box]][:, None]
    rel = pts[on_box] - moved
    c, s = np.cos(yaw), np.sin(yaw)
    local = np.column_stack([c * rel[:, 0] + s * rel[:, 1], -s * rel[:, 0] + c * rel[:, 1], rel[:, 2]])
    assert np.all(np.abs(local) <= 0.5 * size[0] + 1e-3)
    assert np.all(np.abs(np.abs(local) - 0.5 * size[0]).min(axis=1) < 1e-3)
    # brute force: per column, an instantaneous cast against the box at that column's time gives the same hits
    hit_rays = set(ray[on_box].tolist())
    brute: set[int] = set()
    n_az = azimuth_columns(spec)
    centre_col = int(np.floor(np.degrees(np.arctan2(y, x)) % 360.0))  # 1 degree columns from azimuth 0
    near = np.concatenate([ray[on_box] // n_beams, [centre_col]])[:, None] + np.arange(-25, 26)[None, :]
    for col in np.unique(near % n_az):
        t = timing.column_times(azimuth_columns(spec))[col]
        one = cast_lidar(
            T,
            spec,
            center + velocity * t,
            size,
            np.array([yaw]),
            np.random.default_rng(0),
            range_noise_std_m=0.0,
            dropout=0.0,
        )
        u = one.points_sensor[:, :3] / np.linalg.norm(one.points_sensor[:, :3], axis=1, keepdims=True)
        r = np.argmax(u.astype(np.float64) @ dirs.T, axis=1)
        brute |= {int(k) for k in r[(one.hit_box == 0) & (r // n_beams == col)]}
    assert hit_rays == brute


def test_a_crossing_car_lags_by_speed_times_the_sweeps_delay():
    """A car crossing straight ahead at 10 m/s, sweep ending 0.075 s before the camera time: the columns left of
    azimuth 0 fire last (t = -0.075 s), those right of it first (-0.125 s), so its returns sit on average
    10 m/s x 0.1 s = 1 m behind its camera-time box, each at 10 m/s x its own column's time."""
    spec = load_rig("nuscenes").lidars[0]
    center = np.array([[15.0, 0.0, 0.8]])
    size = np.array([[4.6, 1.9, 1.6]])
    velocity = np.array([[0.0, 10.0, 0.0]])
    timing = SweepTiming(period_s=0.05, end_s=-0.075)
    kwargs = {"range_noise_std_m": 0.0, "dropout": 0.0}
    T = _sensor_pose()
    moving = cast_lidar(
        T,
        spec,
        center,
        size,
        np.array([np.pi / 2]),
        np.random.default_rng(0),
        velocity_global=velocity,
        timing=timing,
        **kwargs,
    )
    still = cast_lidar(T, spec, center, size, np.array([np.pi / 2]), np.random.default_rng(0), **kwargs)
    pts = transform_points(T, moving.points_sensor[moving.hit_box == 0, :3].astype(np.float64))
    still_pts = transform_points(T, still.points_sensor[still.hit_box == 0, :3].astype(np.float64))
    shift = pts[:, 1].mean() - still_pts[:, 1].mean()
    assert -1.1 < shift < -0.9, shift
    # the face seen (x = 15 - 0.95) spans y in [-2.3, 2.3] + 10 m/s x t of each point's column
    n_az = azimuth_columns(spec)
    col = np.round(np.degrees(np.arctan2(pts[:, 1], pts[:, 0])) % 360.0 / (360.0 / n_az)).astype(int) % n_az
    t = timing.column_times(n_az)[col]
    front = np.isclose(pts[:, 0], 15.0 - 0.95, atol=1e-3)
    assert front.sum() > 50
    assert np.all(np.abs(pts[front, 1] - 10.0 * t[front]) <= 2.3 + 1e-3)


@pytest.mark.slow  # generates a log: 15-35 s on a shared 2-core machine
def test_the_generator_writes_sweeps_that_lag_the_annotated_boxes(tmp_path):
    """``generate_dataset(lidar_timing=...)``: each moving agent's key-frame returns lie on its annotated
    (camera-time) box moved by its velocity times their column's firing time, not on the box itself; the truth
    file records the option. Without it (every other test) the sweeps are instantaneous."""
    import json

    from stridegen.core.box_geometry import points_in_boxes
    from stridegen.logs import open_log
    from stridegen.logs.synthetic.generator import generate_dataset

    timing = {"period_s": 0.05, "end_s": -0.075}
    root = tmp_path / "log"
    generate_dataset(root, scenes=1, seconds=1.0, width=160, height=90, progress=False, lidar_timing=timing)
    truth = json.loads(next(root.rglob("*truth*.json")).read_text())
    assert truth["options"]["lidar_timing"] == timing
    frame = open_log(root).scenes()[0].frames[1]
    boxes = frame.annotations().boxes
    channel = frame.lidar_channels[0]
    sample = frame.sensor(channel)
    pts = transform_points(sample.T_global_from_sensor, frame.lidar(channel)[:, :3].astype(np.float64))
    speed = np.linalg.norm(np.nan_to_num(boxes.velocity[:, :2]), axis=1)
    moving = np.flatnonzero(speed > 3.0)
    assert moving.size, "the scene has moving agents"
    # the firing time of each point's column, from its azimuth in the sensor frame
    spec = load_rig("nuscenes").lidars[0]
    n_az = azimuth_columns(spec)
    local = frame.lidar(channel)[:, :3].astype(np.float64)
    col = np.round(np.degrees(np.arctan2(local[:, 1], local[:, 0])) % 360.0 / (360.0 / n_az)).astype(int) % n_az
    t = SweepTiming(**timing).column_times(n_az)[col]
    checked = 0
    for i in moving.tolist():
        grown = boxes.size_lwh[i] + 0.1
        # points on the agent: inside its box moved back by up to 0.15 s of its motion
        reach = grown + np.array([2.0, 2.0, 0.0]) * speed[i] * 0.15
        near = points_in_boxes(pts, boxes.center[i], reach, boxes.yaw[i])[0] & (pts[:, 2] > 0.1)  # not the road
        if near.sum() < 10:
            continue
        moved = boxes.center[i][None, :] + np.nan_to_num(boxes.velocity[i])[None, :] * t[near][:, None]
        rel = pts[near] - moved
        c, s = np.cos(boxes.yaw[i]), np.sin(boxes.yaw[i])
        lx, ly = c * rel[:, 0] + s * rel[:, 1], -s * rel[:, 0] + c * rel[:, 1]
        on_moved = (np.abs(lx) <= grown[0] / 2) & (np.abs(ly) <= grown[1] / 2) & (np.abs(rel[:, 2]) <= grown[2] / 2)
        on_annotated = points_in_boxes(pts[near], boxes.center[i], grown, boxes.yaw[i])[0]
        assert on_moved.mean() > 0.95, (i, on_moved.mean())
        assert on_annotated.mean() < on_moved.mean()
        checked += 1
    assert checked >= 1
