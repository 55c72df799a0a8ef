"""The ROS de-skew (stridegen/logs/ros/deskew.py: two matrix products and a 2-D turn per point) against the plain
definition (``oracle``: each point's own interpolated ego pose, one 4 x 4 product chain per point) on chains and
sweeps drawn by hypothesis, and against a closed form.

Stated tolerance: a float64 result within 1e-9 m of the oracle's (rounding plus the turn's series bound, 1e-13 of
the distance from the turn's axis); a float32 result within 1e-6 m (in practice equal: the float32 rounding of two
float64 values 1e-9 m apart differs only at a tie)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from stridegen.core.transforms import make_transform
from stridegen.logs.ros.deskew import deskew
from stridegen.logs.ros.poses import PoseTrack
from stridegen.logs.ros.tf import ChainPoses

STAMP_NS = 1_000_000_000
REACH_NS = 50_000_000


def oracle(
    points: np.ndarray,
    times_s: np.ndarray,
    stamp_ns: int,
    T_ego_from_sensor: np.ndarray,
    poses: ChainPoses,
    extrapolate_ns: int,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """The definition, point by point: x_sensor(stamp) = T_global_from_sensor(stamp)^-1 T_global_from_ego(t_i)
    T_ego_from_sensor x_i, with each point's pose interpolated by the chain itself at its own time (integer ns)."""
    rel_ns = np.rint(np.asarray(times_s, dtype=np.float64) * 1e9).astype(np.int64)
    reach = max(abs(int(rel_ns.min())), abs(int(rel_ns.max())), extrapolate_ns)
    T_global_from_ego_at = poses.T_global_from_ego(stamp_ns + rel_ns, reach)  # [N, 4, 4]
    T_ref = poses.T_global_from_ego(np.array([stamp_ns], dtype=np.int64), reach)[0] @ T_ego_from_sensor
    M = np.linalg.inv(T_ref) @ T_global_from_ego_at @ T_ego_from_sensor  # [N, 4, 4] sensor(t_i) -> sensor(stamp)
    result = np.array(points, dtype=np.float32 if out is None else out.dtype, copy=True)
    result[:, :3] = np.einsum("nij,nj->ni", M[:, :3, :3], np.asarray(points[:, :3], dtype=np.float64)) + M[:, :3, 3]
    return result


def _track(rng: np.random.Generator, period_ns: int, rate: float, shift_ns: int) -> PoseTrack:
    """Poses every ``period_ns`` around the stamp, turning about a random axis at up to ``rate`` rad/s."""
    stamps = shift_ns + np.arange(40, dtype=np.int64) * period_ns
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    wobble = rng.normal(0.0, 0.05, (stamps.size, 3))
    poses = [
        make_transform(Rotation.from_rotvec(axis * rate * s * 1e-9 + w).as_matrix(), rng.normal(0.0, 5.0, 3) + s * 1e-8)
        for s, w in zip(stamps, wobble, strict=True)
    ]
    return PoseTrack(Path("poses"), stamps, np.array(poses))


def _rigid(rng: np.random.Generator) -> np.ndarray:
    return make_transform(Rotation.from_rotvec(rng.normal(0.0, 1.0, 3)).as_matrix(), rng.normal(0.0, 3.0, 3))


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 600),
    layout=st.sampled_from(["points", "runs", "rows"]),
    chain=st.sampled_from(["track", "static-track-static", "two tracks", "still"]),
    period_ns=st.sampled_from([100_000_000, 30_000_000, 7_000_000]),
    rate=st.sampled_from([0.0, 0.2, 1.0, 12.0]),
    after=st.booleans(),
)
def test_deskew_equals_each_points_own_pose_chain(
    seed: int, n: int, layout: str, chain: str, period_ns: int, rate: float, after: bool
) -> None:
    rng = np.random.default_rng(seed)
    shift = int(STAMP_NS - 20 * period_ns + rng.integers(-period_ns // 2, period_ns // 2))
    if chain == "track":
        parts: list = [_track(rng, period_ns, rate, shift)]
    elif chain == "static-track-static":
        parts = [_rigid(rng), _track(rng, period_ns, rate, shift), _rigid(rng)]
    elif chain == "two tracks":
        parts = [_track(rng, period_ns, rate, shift), _rigid(rng), _track(rng, 2 * period_ns, -rate, shift + 3)]
    else:  # translation only: a track of one orientation
        track = _track(rng, period_ns, 0.0, shift)
        rotation = np.broadcast_to(track.table.rotation[:1], track.table.rotation.shape)
        parts = [PoseTrack(Path("poses"), track.timestamp_ns, make_poses(rotation, track.table.translation))]
    poses = ChainPoses(Path("poses"), parts, "test")
    points = np.zeros((n, 5), dtype=np.float32)
    points[:, :3] = rng.normal(0.0, 40.0, (n, 3))
    points[:, 3:] = rng.uniform(0.0, 100.0, (n, 2))
    if layout == "points":
        times = rng.uniform(0.0, 0.1, n)
    else:  # few distinct times: runs of equal consecutive times, or rows repeating the column times
        columns = max(1, n // 8)
        column_times = np.sort(rng.uniform(0.0, 0.1, columns)).astype(np.float32).astype(np.float64)
        times = np.repeat(column_times, -(-n // columns))[:n] if layout == "runs" else np.resize(column_times, n)
    times = times if after else -times[::-1].copy()
    T_ego_from_sensor = _rigid(rng)
    want = oracle(points, times, STAMP_NS, T_ego_from_sensor, poses, REACH_NS, out=points.astype(np.float64))
    got = deskew(points, times, STAMP_NS, T_ego_from_sensor, poses, REACH_NS, out=points.astype(np.float64))
    np.testing.assert_allclose(got[:, :3], want[:, :3], rtol=0, atol=1e-9)
    np.testing.assert_array_equal(got[:, 3:], want[:, 3:])
    got32 = deskew(points, times, STAMP_NS, T_ego_from_sensor, poses, REACH_NS)
    want32 = oracle(points, times, STAMP_NS, T_ego_from_sensor, poses, REACH_NS)
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32[:, :3], want32[:, :3], rtol=0, atol=1e-6)
    np.testing.assert_array_equal(got32[:, 3:], points[:, 3:])


def make_poses(rotation_wxyz: np.ndarray, translation: np.ndarray) -> np.ndarray:
    """[P, 4, 4] from quaternions [w, x, y, z] and translations."""
    xyzw = np.concatenate([rotation_wxyz[:, 1:], rotation_wxyz[:, :1]], axis=1)
    return np.array(
        [make_transform(R, t) for R, t in zip(Rotation.from_quat(xyzw).as_matrix(), translation, strict=True)]
    )


def test_a_yawing_sensor_turns_each_point_by_its_own_angle() -> None:
    """Known answer: the ego (= the sensor) at the origin turning about +z at omega rad/s, the stamp at a pose: a
    point seen t s before the stamp is, in the sensor frame at the stamp, the point turned by -omega t about z
    (T_sensor(stamp)^-1 T_sensor(stamp - t) = Rz(-omega t))."""
    omega = 0.7
    stamps = STAMP_NS + np.arange(-3, 3, dtype=np.int64) * 100_000_000
    poses = [
        make_transform(Rotation.from_rotvec([0, 0, omega * (s - STAMP_NS) * 1e-9]).as_matrix(), np.zeros(3))
        for s in stamps
    ]
    chain = ChainPoses(Path("poses"), [PoseTrack(Path("poses"), stamps, np.array(poses))], "test")
    rng = np.random.default_rng(3)
    points = np.zeros((1000, 5), dtype=np.float32)
    points[:, :3] = rng.normal(0.0, 30.0, (1000, 3))
    before = -rng.uniform(0.0, 0.2, 1000)  # two pose segments
    got = deskew(points, before, STAMP_NS, np.eye(4), chain, REACH_NS, out=points.astype(np.float64))
    angle = omega * np.rint(before * 1e9) * 1e-9
    xyz = points[:, :3].astype(np.float64)
    want = np.stack(
        [
            np.cos(angle) * xyz[:, 0] - np.sin(angle) * xyz[:, 1],
            np.sin(angle) * xyz[:, 0] + np.cos(angle) * xyz[:, 1],
            xyz[:, 2],
        ],
        axis=1,
    )
    np.testing.assert_allclose(got[:, :3], want, rtol=0, atol=1e-9)
