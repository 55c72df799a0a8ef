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
