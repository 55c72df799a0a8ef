"""The ROS reader's vectorised de-skew (stridegen/logs/ros/deskew.py) against the plain per-point formula
``T_sensor(stamp)^-1 T_sensor(stamp + t) p`` with each point's pose from the pose chain's own interpolation (a 4x4
per point): one track, a sweep over many pose segments, static links around the track, two dynamic links, pure
translation; and its Taylor sin / cos against NumPy's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from stridegen.core.errors import InvalidPoseError
from stridegen.core.transforms import invert_transform, make_transform
from stridegen.logs.ros.deskew import deskew, sin_cos
from stridegen.logs.ros.poses import PoseTrack
from stridegen.logs.ros.tf import ChainPoses

STAMP_NS = 1_000_000_000
REACH_NS = 50_000_000


def _track(count: int, period_ns: int, yaw_rate: float, start_ns: int = 0, turn: bool = True) -> PoseTrack:
    """Poses every ``period_ns`` from ``start_ns``: a curving path, rolling and pitching a little."""
    stamps = start_ns + np.arange(count, dtype=np.int64) * period_ns
    poses = []
    for i, s in enumerate(stamps):
        rotvec = [0.01 * i, 0.02, yaw_rate * s * 1e-9] if turn else [0.0, 0.0, 0.4]
        poses.append(make_transform(Rotation.from_rotvec(rotvec).as_matrix(), [i * 1.0, 0.1 * i * i, 0.05 * i]))
    return PoseTrack(Path("poses"), stamps, np.array(poses))


def _sweep(n: int = 5000, seed: int = 0, after: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    points = np.zeros((n, 5), dtype=np.float32)
    points[:, :3] = rng.normal(0.0, 30.0, (n, 3))
    points[:, 3] = rng.uniform(0, 100, n)
    points[:, 4] = rng.integers(0, 32, n)
    times = rng.uniform(0.0, 0.1, n).astype(np.float32).astype(np.float64)  # seconds after the stamp (Livox)
    return points, times if after else -times  # or before it (a spinning LiDAR stamped at the sweep's end)


def _reference(points: np.ndarray, times: np.ndarray, T_ego_from_sensor: np.ndarray, poses: ChainPoses) -> np.ndarray:
    """A 4x4 per point from ``ChainPoses.T_global_from_ego`` (the slerp of the pose table) at its own time."""
    point_ns = STAMP_NS + np.round(times * 1e9).astype(np.int64)
    T_ref = poses.T_global_from_ego(np.array([STAMP_NS]), REACH_NS)[0] @ T_ego_from_sensor
    T_point = poses.T_global_from_ego(point_ns, 10**9) @ T_ego_from_sensor
    M = np.einsum("ij,njk->nik", invert_transform(T_ref), T_point)
    return np.einsum("nij,nj->ni", M[:, :3, :3], points[:, :3].astype(np.float64)) + M[:, :3, 3]


T_EGO_FROM_SENSOR = make_transform(Rotation.from_rotvec([0.1, -0.2, 1.0]).as_matrix(), [1.0, 0.5, 1.8])
STATIC = make_transform(Rotation.from_rotvec([0.0, 0.0, 0.3]).as_matrix(), [5.0, 0.5, 0.0])
CHAINS = {
    "one track, one segment": lambda: [_track(30, 100_000_000, 0.3)],
    "one track, ten segments": lambda: [_track(300, 10_000_000, 0.3)],
    "static, track, static": lambda: [STATIC, _track(30, 100_000_000, 0.3), invert_transform(STATIC)],
    "two tracks": lambda: [_track(30, 100_000_000, 0.5), STATIC, _track(300, 10_000_000, -0.3, 3_000_000)],
    "translation only": lambda: [_track(30, 100_000_000, 0.0, turn=False)],
    "fast turn, three segments": lambda: [_track(60, 50_000_000, 9.0)],  # 0.45 rad a segment: many series terms
}


@pytest.mark.parametrize("after", [False, True], ids=["before-stamp", "after-stamp"])
@pytest.mark.parametrize("chain", list(CHAINS))
def test_deskew_equals_the_per_point_pose_formula(chain: str, after: bool) -> None:
    poses = ChainPoses(Path("poses"), CHAINS[chain](), "test")
    points, times = _sweep(after=after)
    want = _reference(points, times, T_EGO_FROM_SENSOR, poses)
    exact = deskew(points, times, STAMP_NS, T_EGO_FROM_SENSOR, poses, REACH_NS, out=points.astype(np.float64))
    np.testing.assert_allclose(exact[:, :3], want, rtol=0, atol=1e-9)  # float64 throughout: rounding only
    got = deskew(points, times, STAMP_NS, T_EGO_FROM_SENSOR, poses, REACH_NS)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got[:, :3], exact[:, :3].astype(np.float32))
    np.testing.assert_array_equal(got[:, 3:], points[:, 3:])
    # in place, with the ego pose at the stamp given, gives the same
    pose = poses.T_global_from_ego(np.array([STAMP_NS]), REACH_NS)[0]
    inplace = points.copy()
    deskew(inplace, times, STAMP_NS, T_EGO_FROM_SENSOR, poses, REACH_NS, out=inplace, T_global_from_ego=pose)
    np.testing.assert_array_equal(inplace, got)


def test_points_beyond_the_pose_range_are_refused() -> None:
    """Points may reach past the pose stream by the sweep's own span (or ``extrapolate_ns``), not further."""
    points, times = _sweep(100)
    ending = ChainPoses(Path("poses"), [_track(3, 100_000_000, 0.3, start_ns=STAMP_NS - 240_000_000)], "test")
    deskew(points, times, STAMP_NS, T_EGO_FROM_SENSOR, ending, REACH_NS)  # 40 ms past the end: extended
    early = ChainPoses(Path("poses"), [_track(3, 100_000_000, 0.3, start_ns=STAMP_NS - 500_000_000)], "test")
    pose = np.eye(4)  # a caller's pose at the stamp does not lift the check of the points' own times
    with pytest.raises(InvalidPoseError, match="outside the pose range"):
        deskew(points, times, STAMP_NS, T_EGO_FROM_SENSOR, early, REACH_NS, T_global_from_ego=pose)


def test_a_nan_point_time_is_refused() -> None:
    poses = ChainPoses(Path("poses"), CHAINS["one track, one segment"](), "test")
    points, times = _sweep(100)
    times[7] = np.nan
    with pytest.raises(ValueError, match="not all finite"):
        deskew(points, times, STAMP_NS, T_EGO_FROM_SENSOR, poses, REACH_NS)


@pytest.mark.parametrize("bound", [1e-6, 0.01, 0.1, 0.5, 1.0, 3.0])
def test_series_sin_cos_match_numpy(bound: float) -> None:
    x = np.linspace(-bound, bound, 10001)
    cos, sin = sin_cos(x)
    np.testing.assert_allclose(sin, np.sin(x), rtol=4e-16, atol=1e-300)
    np.testing.assert_allclose(cos, np.cos(x), rtol=4e-16, atol=0)


def _column_times(columns: int, channels: int, layout: str, after: bool) -> np.ndarray:
    """One time per column (a spinning LiDAR's channels fired together), the points stored column by column
    (``runs``: equal times consecutive) or channel row by channel row (``rows``: an Ouster-style organised cloud)."""
    col = np.linspace(0.0, 0.1, columns, endpoint=False).astype(np.float32).astype(np.float64)
    col = col if after else -col[::-1]
    return np.repeat(col, channels) if layout == "runs" else np.tile(col, channels)


@pytest.mark.parametrize("layout", ["runs", "rows"])
@pytest.mark.parametrize("after", [False, True], ids=["before-stamp", "after-stamp"])
@pytest.mark.parametrize("chain", list(CHAINS))
def test_repeated_times_give_the_per_point_results_bit_for_bit(
    chain: str, after: bool, layout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Times evaluated once per distinct value (deskew's repeated-time path) give exactly the per-point path's
    numbers, and the per-point pose formula's within rounding."""
    import stridegen.logs.ros.deskew as deskew_module

    poses = ChainPoses(Path("poses"), CHAINS[chain](), "test")
    times = _column_times(256, 20, layout, after)
    points, _ = _sweep(times.size)
    assert deskew_module._Repeats.of(times) is not None  # the path under test is taken
    fast = deskew(points, times, STAMP_NS, T_EGO_FROM_SENSOR, poses, REACH_NS, out=points.astype(np.float64))
    np.testing.assert_allclose(fast[:, :3], _reference(points, times, T_EGO_FROM_SENSOR, poses), rtol=0, atol=1e-9)
    monkeypatch.setattr(deskew_module, "REPEAT_RATIO", 10**9)  # every block per point
    assert deskew_module._Repeats.of(times) is None
    slow = deskew(points, times, STAMP_NS, T_EGO_FROM_SENSOR, poses, REACH_NS, out=points.astype(np.float64))
    np.testing.assert_array_equal(fast, slow)


@pytest.mark.parametrize(
    "times",
    [
        np.arange(64, dtype=np.float64),  # distinct
        np.repeat(np.arange(32.0), 2),  # runs of 2: too many distinct times
        np.r_[np.tile(np.arange(8.0), 8)[:-1], 99.0],  # rows but the last differs
        np.tile(np.arange(8.0), 8)[:-3],  # not whole rows
    ],
)
def test_layouts_without_enough_repeats_take_the_per_point_path(times: np.ndarray) -> None:
    from stridegen.logs.ros.deskew import _Repeats

    assert _Repeats.of(times) is None


def test_repeats_spread_back_to_every_point() -> None:
    from stridegen.logs.ros.deskew import _Repeats

    for times in (np.repeat([3.0, 1.0, 3.0, 2.0], [5, 9, 4, 30]), np.tile([0.5, -1.0, 2.0, 7.0], 12)):
        repeats = _Repeats.of(times)
        assert repeats is not None and repeats.values.size == 4
        out = np.empty_like(times)
        repeats.spread(repeats.values, out)
        np.testing.assert_array_equal(out, times)
