"""AV2 reader against the two real Argoverse 2 log excerpts, read independently with pandas / scipy."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stridegen.core.angles import wrap_angle
from stridegen.core.errors import InvalidPoseError
from stridegen.core.transforms import invert_transform, quat_multiply, quat_to_rotmat, quat_to_yaw, rotmat_to_quat
from stridegen.logs import detect_format, open_log
from stridegen.logs.av2 import AV2Reader, slerp
from stridegen.logs.av2_layout import AV2_TO_DETECTION
from stridegen.logs.box_rotation import ROTATION_GLOBAL
from tests.shared_data import AV2_LOGS, needs_av2

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
Rotation = pytest.importorskip("scipy.spatial.transform").Rotation
Slerp = pytest.importorskip("scipy.spatial.transform").Slerp

LOG_A = "7fab2350-7eaf-3b7e-a39d-6937a4c1bede"
LOG_B = "adcf7d18-0510-35b0-a2fa-b4cea13a6d76"


@pytest.fixture(scope="module")
def reader(av2_logs: Path) -> AV2Reader:  # skips where ../shared/data/av2 is absent
    r = open_log(AV2_LOGS)
    assert isinstance(r, AV2Reader)
    return r


def _annotations_df(log_id: str):
    return pd.read_feather(AV2_LOGS / log_id / "annotations.feather")


def _poses_df(log_id: str):
    return pd.read_feather(AV2_LOGS / log_id / "city_SE3_egovehicle.feather").set_index("timestamp_ns")


def _T_city_from_ego_scipy(pose_row) -> np.ndarray:
    t = np.eye(4)
    t[:3, :3] = Rotation.from_quat([pose_row.qx, pose_row.qy, pose_row.qz, pose_row.qw]).as_matrix()
    t[:3, 3] = [pose_row.tx_m, pose_row.ty_m, pose_row.tz_m]
    return t


def test_logs_frames_and_tracks(reader: AV2Reader) -> None:
    assert detect_format(AV2_LOGS) == "av2"
    scenes = reader.scenes()
    assert [s.name for s in scenes] == [LOG_A, LOG_B]
    for scene, n_tracks in zip(scenes, (114, 146), strict=True):
        df = _annotations_df(scene.name)
        assert len(scene) == 156
        stamps_ns = np.unique(df.timestamp_ns.to_numpy())
        assert [f.timestamp_us for f in scene.frames] == list(stamps_ns // 1000)
        assert [f.index for f in scene.frames] == list(range(156))
        tracks = set()
        rows = 0
        for frame in scene.frames:
            ann = frame.annotations()
            tracks |= set(ann.boxes.track_id)
            rows += len(ann)
        assert len(tracks) == n_tracks == df.track_uuid.nunique()
        assert rows == len(df)
    # A single log folder opens as one scene.
    single = open_log(AV2_LOGS / LOG_B)
    assert [s.name for s in single.scenes()] == [LOG_B]


def test_ego_pose_is_the_logged_pose(reader: AV2Reader) -> None:
    for scene in reader.scenes():
        poses = _poses_df(scene.name)
        for frame in scene.frames[::15]:
            row = poses.loc[frame.timestamp_us * 1000]
            assert np.allclose(frame.T_global_from_ego, _T_city_from_ego_scipy(row), atol=1e-12)


def test_boxes_back_to_ego_equal_feather(reader: AV2Reader) -> None:
    for scene in reader.scenes():
        df = _annotations_df(scene.name)
        for frame in scene.frames[::7]:
            ann = frame.annotations()
            rows = df[df.timestamp_ns == frame.timestamp_us * 1000]
            assert list(ann.boxes.track_id) == list(rows.track_uuid)
            assert list(ann.category) == list(rows.category)
            assert np.array_equal(ann.num_lidar_pts, rows.num_interior_pts.to_numpy())
            assert np.allclose(ann.boxes.size_lwh, rows[["length_m", "width_m", "height_m"]].to_numpy())
            T_ego_from_global = invert_transform(frame.T_global_from_ego)
            ego = ann.boxes.transform(T_ego_from_global, "ego")
            assert np.allclose(ego.center, rows[["tx_m", "ty_m", "tz_m"]].to_numpy(), atol=1e-6)
            yaw_feather = quat_to_yaw(rows[["qw", "qx", "qy", "qz"]].to_numpy())
            # Boxes.transform keeps yaw-only boxes: the ego pose's ~1.6 deg pitch costs up to ~1e-3 rad.
            assert np.max(np.abs(wrap_angle(ego.yaw - yaw_feather))) < 2e-3
            # The full rotation kept by the reader goes back exactly.
            q_pose = rotmat_to_quat(frame.T_global_from_ego[:3, :3])
            q_pose_inv = q_pose * np.array([1, -1, -1, -1])
            q_ego = quat_multiply(q_pose_inv[None], ann.boxes.extras[ROTATION_GLOBAL])
            q_feather = rows[["qw", "qx", "qy", "qz"]].to_numpy()
            assert np.allclose(np.abs(np.sum(q_ego * q_feather, axis=1)), 1.0, atol=1e-9)


def test_velocity_is_central_difference(reader: AV2Reader) -> None:
    scene = reader.scene(LOG_A)
    df = _annotations_df(LOG_A)
    poses = _poses_df(LOG_A)
    track = df.track_uuid.value_counts().index[0]  # the longest track
    rows = df[df.track_uuid == track].sort_values("timestamp_ns")
    assert len(rows) >= 3
    center_global = np.array(
        [
            (_T_city_from_ego_scipy(poses.loc[r.timestamp_ns]) @ [r.tx_m, r.ty_m, r.tz_m, 1.0])[:3]
            for r in rows.itertuples()
        ]
    )
    t_s = rows.timestamp_ns.to_numpy() * 1e-9
    frame_of = {f.timestamp_us * 1000: f for f in scene.frames}
    for k in (0, 1, len(rows) // 2, len(rows) - 1):
        lo, hi = max(k - 1, 0), min(k + 1, len(rows) - 1)
        expected = (center_global[hi] - center_global[lo]) / (t_s[hi] - t_s[lo])
        ann = frame_of[rows.timestamp_ns.iloc[k]].annotations()
        got = ann.boxes.velocity[list(ann.boxes.track_id).index(track)]
        assert np.allclose(got, expected, atol=1e-6)


def test_lidar_frames(reader: AV2Reader) -> None:
    counts = []
    for scene in reader.scenes():
        with_lidar = [f for f in scene.frames if f.lidar_channels]
        counts.append(len(with_lidar))
        for frame in with_lidar:
            sample = frame.sensor("LIDAR")
            assert np.array_equal(sample.calibration.T_ego_from_sensor, np.eye(4))
            points = frame.lidar()
            df = pd.read_feather(sample.path)
            assert points.dtype == np.float32 and points.shape == (len(df), 6)
            assert np.array_equal(points[:, 0], df.x.to_numpy().astype(np.float32))
            assert np.array_equal(points[:, 3], df.intensity.to_numpy().astype(np.float32))
    assert counts == [2, 1]


def test_camera_calibrations(reader: AV2Reader) -> None:
    calibs = reader.camera_calibrations(LOG_A)
    assert len(calibs) == 9
    front = calibs["ring_front_center"]
    assert front.is_camera and (front.width, front.height) == (1550, 2048)
    assert front.intrinsic[0, 0] == pytest.approx(1776.041484, abs=1e-5)
    assert front.intrinsic[1, 2] == pytest.approx(1013.524325, abs=1e-5)
    # The front camera's optical axis (camera z) points along ego +x, and it sits 1.6 m ahead of the origin.
    assert np.allclose(front.T_ego_from_sensor[:3, 2], [1, 0, 0], atol=0.02)
    assert front.T_ego_from_sensor[0, 3] == pytest.approx(1.635018, abs=1e-5)
    assert reader.camera_calibrations(LOG_B) == {}
    assert all(not f.camera_channels for f in reader.scene(LOG_A).frames)


def test_labels_mapping(reader: AV2Reader) -> None:
    ann = reader.scene(LOG_A).frames[0].annotations()
    for category, label in zip(ann.category, ann.boxes.label, strict=True):
        assert label == AV2_TO_DETECTION.get(category, "")
    assert AV2_TO_DETECTION["REGULAR_VEHICLE"] == "car"
    assert "BICYCLIST" not in AV2_TO_DETECTION
    assert set(AV2_TO_DETECTION.values()) <= {
        "car",
        "truck",
        "bus",
        "trailer",
        "construction_vehicle",
        "pedestrian",
        "motorcycle",
        "bicycle",
        "traffic_cone",
        "barrier",
    }


def _copy_log_with_poses(tmp_path: Path, log_id: str, keep) -> Path:
    import pyarrow.feather as feather

    dst = tmp_path / log_id
    dst.mkdir()
    shutil.copy(AV2_LOGS / log_id / "annotations.feather", dst / "annotations.feather")
    poses = pd.read_feather(AV2_LOGS / log_id / "city_SE3_egovehicle.feather")
    feather.write_feather(poses[keep(poses)].reset_index(drop=True), dst / "city_SE3_egovehicle.feather")
    return dst


@needs_av2
def test_pose_interpolation_when_no_exact_match(tmp_path: Path) -> None:
    ann = _annotations_df(LOG_A)
    stamps = np.unique(ann.timestamp_ns.to_numpy())
    target = int(stamps[40])
    log = _copy_log_with_poses(tmp_path, LOG_A, lambda p: p.timestamp_ns != target)
    frame = open_log(log).scenes()[0].frames[40]
    poses = _poses_df(LOG_A)
    before = poses[poses.index < target].iloc[-1]
    after = poses[poses.index > target].iloc[0]
    frac = (target - before.name) / (after.name - before.name)
    rot = Slerp([0.0, 1.0], Rotation.from_quat([[r.qx, r.qy, r.qz, r.qw] for r in (before, after)]))([frac])
    assert np.allclose(frame.T_global_from_ego[:3, :3], rot.as_matrix()[0], atol=1e-9)
    expected_t = (1 - frac) * before[["tx_m", "ty_m", "tz_m"]].to_numpy() + frac * after[
        ["tx_m", "ty_m", "tz_m"]
    ].to_numpy()
    assert np.allclose(frame.T_global_from_ego[:3, 3], expected_t.astype(float), atol=1e-9)
    # And close to the dropped logged pose (10 ms apart, smooth motion).
    assert np.allclose(frame.T_global_from_ego, _T_city_from_ego_scipy(poses.loc[target]), atol=1e-3)


@needs_av2
def test_pose_outside_range_raises(tmp_path: Path) -> None:
    first = int(_annotations_df(LOG_B).timestamp_ns.min())
    log = _copy_log_with_poses(tmp_path, LOG_B, lambda p: p.timestamp_ns > first)
    with pytest.raises(InvalidPoseError, match=r"city_SE3_egovehicle\.feather.*outside the pose range"):
        open_log(log).scenes()


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(0.0, 1.0))
def test_slerp_matches_scipy(seed: int, frac: float) -> None:
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(2, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    ours = quat_to_rotmat(slerp(q[0], q[1], frac))
    ref = Slerp([0.0, 1.0], Rotation.from_quat(q[:, [1, 2, 3, 0]]))([frac]).as_matrix()[0]
    assert np.allclose(ours, ref, atol=1e-9)
