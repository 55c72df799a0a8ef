"""Attribute extractor: known answers on hand-built tracks (constant velocity / acceleration, turning ego)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stridegen.core.boxes import Boxes
from stridegen.core.transforms import make_transform, yaw_to_quat
from stridegen.pipeline.attributes import dense_tracks, extract_attributes, finite_difference_velocity


def _scene(n_frames=9, dt=0.5, accel=0.0, ego_yaw=0.0, gap_at=None):
    t = dt * np.arange(n_frames)
    # ego at (100, 50), heading ego_yaw, driving forward at 5 m/s along its heading
    head = np.array([np.cos(ego_yaw), np.sin(ego_yaw), 0.0])
    ego_pos = np.array([100.0, 50.0, 0.0]) + 5.0 * t[:, None] * head
    poses = make_transform(np.repeat(yaw_to_quat(ego_yaw)[None], n_frames, 0), ego_pos)
    # object A: 20 m ahead of the ego's start, moving +y global at 3 m/s (+ accel)
    a_pos = np.array([100.0, 50.0, 0.8]) + 20 * head + np.outer(3 * t + 0.5 * accel * t**2, [0, 1, 0])
    frames = []
    for f in range(n_frames):
        rows = [a_pos[f]]
        ids = ["A"]
        if gap_at is None or f != gap_at:
            rows.append([95.0, 50.0, 0.8])  # static object B
            ids.append("B")
        frames.append(
            Boxes(
                np.array(rows),
                np.tile([4.0, 2.0, 1.6], (len(rows), 1)),
                np.full(len(rows), 0.3),
                label=["car"] * len(rows),
                track_id=ids,
            )
        )
    return dense_tracks(frames, t, poses), t, a_pos


def test_positions_distances_and_angles_in_keyframe_frame():
    tracks, t, _ = _scene(ego_yaw=np.pi / 2)  # ego faces global +y
    attrs = extract_attributes(tracks)
    kf = attrs.in_keyframe(0)
    a = list(tracks.track_id).index("A")
    b = list(tracks.track_id).index("B")
    # A starts 20 m straight ahead
    np.testing.assert_allclose(kf.position_ego[a, 0], [20.0, 0.0, 0.8], atol=1e-9)
    assert kf.heading_deg[a, 0] == pytest.approx(0.0) and kf.clock[a, 0] == 12
    # B is 5 m along global -x from the ego start: with the ego facing +y that is to the ego's left
    np.testing.assert_allclose(kf.position_ego[b, 0, :2], [0.0, 5.0], atol=1e-9)
    assert kf.is_left[b, 0] and kf.clock[b, 0] == 9 and kf.heading_deg[b, 0] == pytest.approx(90.0)
    assert kf.distance_m[b, 0] == pytest.approx(5.0) and kf.distance_3d_m[b, 0] == pytest.approx(np.hypot(5, 0.8))
    # box yaw 0.3 global, ego yaw pi/2 -> relative yaw 0.3 - pi/2
    assert kf.yaw_rel_ego[a, 0] == pytest.approx(0.3 - np.pi / 2)
    # each frame seen from its own ego: B falls behind as the ego drives on at 5 m/s
    assert attrs.now.position_ego[b, 4, 0] == pytest.approx(-5.0 * t[4])


def test_velocities_exact_for_constant_acceleration():
    tracks, t, _ = _scene(accel=1.5, ego_yaw=0.0)
    attrs = extract_attributes(tracks)
    a = list(tracks.track_id).index("A")
    v_true = 3.0 + 1.5 * t
    # central differences are exact for constant acceleration; one-sided ends err by h/2 * a = 0.375
    np.testing.assert_allclose(attrs.velocity_global[a, 1:-1, 1], v_true[1:-1], atol=1e-9)
    assert abs(attrs.velocity_global[a, 0, 1] - v_true[0]) == pytest.approx(0.5 * 0.5 * 1.5)
    np.testing.assert_allclose(attrs.ego_velocity_global[:, 0], 5.0, atol=1e-9)
    np.testing.assert_allclose(attrs.ego_speed_mps, 5.0, atol=1e-9)


def test_gaps_use_one_sided_differences_and_absent_is_nan():
    tracks, _, _ = _scene(gap_at=4)
    attrs = extract_attributes(tracks)
    b = list(tracks.track_id).index("B")
    assert not tracks.present[b, 4]
    assert np.isnan(attrs.velocity_global[b, 4]).all()
    np.testing.assert_allclose(attrs.velocity_global[b, [3, 5]], 0.0, atol=1e-12)
    assert attrs.now.clock[b, 4] == 0 and not attrs.now.is_left[b, 4]


def test_single_frame_track_has_nan_velocity():
    v = finite_difference_velocity(np.zeros((1, 3, 3)), np.array([0, 0.5, 1.0]), np.array([[False, True, False]]))
    assert np.isnan(v[0, 1]).all()


@given(st.floats(-np.pi, np.pi), st.floats(-10, 10), st.floats(-10, 10))
@settings(max_examples=30)
def test_velocity_rotates_into_ego_frame(ego_yaw, vx, vy):
    t = 0.5 * np.arange(3)
    poses = make_transform(np.repeat(yaw_to_quat(ego_yaw)[None], 3, 0), np.zeros((3, 3)))
    frames = [Boxes([[vx * s, vy * s, 0]], [[1, 1, 1]], [0.0], label=["car"], track_id=["X"]) for s in t]
    attrs = extract_attributes(dense_tracks(frames, t, poses))
    v_ego = attrs.in_keyframe(1).velocity_ego[0, 1]
    c, s = np.cos(-ego_yaw), np.sin(-ego_yaw)
    np.testing.assert_allclose(v_ego[:2], [c * vx - s * vy, s * vx + c * vy], atol=1e-9)
    assert attrs.now.speed_mps[0, 1] == pytest.approx(np.hypot(vx, vy))
