"""AV2 cameras: a synthetic nuScenes log written in the AV2 layout reads back with the same images, calibration and
poses, builds to the same QA; nearest-image matching; undistortion against OpenCV's projection."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from stridegen.core.angles import wrap_angle
from stridegen.core.errors import LogFormatError
from stridegen.core.transforms import transform_points
from stridegen.formats.images import decode_image, encode_jpeg
from stridegen.logs import open_log
from stridegen.logs.av2 import AV2Reader
from stridegen.logs.av2_cameras import (
    NOMINAL_CAMERA_PERIOD_NS,
    camera_period_ns,
    match_nearest,
    opencv_distortion,
    undistort_image,
    undistort_jpeg,
)
from stridegen.logs.av2_layout import AV2_TO_DETECTION
from stridegen.logs.box_rotation import ROTATION_GLOBAL
from stridegen.logs.synthetic.av2_writer import (
    DETECTION_TO_AV2,
    NUSCENES_TO_AV2_CAMERA,
    AV2LogSummary,
    av2_category,
    write_av2_log,
)
from tests.shared_data import AV2_LOGS, needs_av2

pytestmark = pytest.mark.slow  # the tests read an AV2 copy of a generated log

feather = pytest.importorskip("pyarrow.feather")

# Seed 2 composes a scene whose boxes all have an AV2 category (no barrier / construction vehicle, which AV2 lacks:
# those would be read back with label "" and vanish from the oracle detections, changing the QA).
SYNTH: dict[str, Any] = {"scenes": 1, "seconds": 8.0, "seed": 2, "width": 320, "height": 180}
BUILD = ["segmenter.name=projected_box", "keyframes.start_s=2", "keyframes.end_s=5"]


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> tuple[Path, Path, AV2LogSummary]:
    from stridegen.logs.synthetic.generator import generate_dataset

    root = tmp_path_factory.mktemp("av2-cameras")
    generate_dataset(root / "nuscenes", progress=False, overwrite=True, **SYNTH)
    (summary,) = write_av2_log(open_log(root / "nuscenes"), root / "av2")
    return root / "nuscenes", root / "av2", summary


def _copy_av2(logs, tmp_path: Path) -> Path:
    _, av2, summary = logs
    dst = tmp_path / "av2"
    shutil.copytree(av2, dst)
    return dst / summary.log_dir.name


# ------------------------------------------------------------------------------------------------ reader
def test_av2_frames_equal_nuscenes_frames(logs) -> None:
    nu_root, av2_root, summary = logs
    assert summary.unmapped == {} and summary.dropped_frames == 0
    assert summary.cameras == NUSCENES_TO_AV2_CAMERA  # all six nuScenes cameras, mapped by the table
    nu = open_log(nu_root).scenes()[0]
    reader = open_log(av2_root, format="av2")
    assert isinstance(reader, AV2Reader)
    av2 = reader.scenes()[0]
    assert av2.token == nu.token  # the log id is the source scene token: same per-scene seeds in a build
    assert len(av2.frames) == len(nu.frames) == summary.frames == 16
    assert reader.camera_misses(av2) == dict.fromkeys(summary.cameras.values(), 0)
    for fa, fn in zip(av2.frames, nu.frames, strict=True):
        assert fa.timestamp_us == fn.timestamp_us
        assert np.allclose(fa.T_global_from_ego, fn.T_global_from_ego, rtol=0, atol=1e-9)
        assert fa.camera_channels == [summary.cameras[c] for c in fn.camera_channels]  # source camera order
        for channel in fn.camera_channels:
            a, n = fa.sensor(summary.cameras[channel]), fn.sensor(channel)
            assert a.calibration.intrinsic is not None and n.calibration.intrinsic is not None
            assert fa.image_bytes(a.channel) == fn.image_bytes(channel)
            assert a.timestamp_us == n.timestamp_us
            assert np.allclose(a.calibration.intrinsic, n.calibration.intrinsic, rtol=0, atol=1e-9)
            assert np.allclose(a.calibration.T_ego_from_sensor, n.calibration.T_ego_from_sensor, rtol=0, atol=1e-9)
            assert (a.calibration.width, a.calibration.height) == (n.calibration.width, n.calibration.height)
            assert np.allclose(a.T_global_from_ego, n.T_global_from_ego, rtol=0, atol=1e-9)
        # LiDAR: same points in the global frame (the AV2 sweep is in the ego frame).
        pa_, pn = fa.lidar(), fn.lidar()
        ga = transform_points(fa.sensor("LIDAR").T_global_from_sensor, pa_[:, :3].astype(np.float64))
        gn = transform_points(fn.sensor("LIDAR_TOP").T_global_from_sensor, pn[:, :3].astype(np.float64))
        assert np.allclose(ga, gn, rtol=0, atol=1e-4)  # float32 storage
        # Boxes back in the global frame.
        aa, an = fa.annotations(), fn.annotations()
        assert list(aa.boxes.track_id) == list(an.boxes.track_id)
        assert list(aa.boxes.label) == list(an.boxes.label)
        assert np.allclose(aa.boxes.center, an.boxes.center, rtol=0, atol=1e-9)
        assert np.allclose(aa.boxes.size_lwh, an.boxes.size_lwh, rtol=0, atol=0)
        assert np.allclose(wrap_angle(aa.boxes.yaw - an.boxes.yaw), 0.0, atol=1e-9)
        dots = np.abs(np.sum(aa.boxes.extras[ROTATION_GLOBAL] * an.boxes.extras[ROTATION_GLOBAL], axis=1))
        assert np.allclose(dots, 1.0, atol=1e-12)
        assert np.array_equal(np.isnan(aa.boxes.velocity), np.isnan(an.boxes.velocity))
        assert np.allclose(aa.boxes.velocity, an.boxes.velocity, rtol=0, atol=1e-9, equal_nan=True)


def _build(log: Path, out: Path, extra: list[str]):
    from stridegen.jobs.build import run_build
    from stridegen.run.config import load_build_config
    from stridegen.shards.reader import open_dataset

    result = run_build(log, out, load_build_config(None, BUILD + extra))
    assert result.ok, [r.reason for r in result.failed]
    dataset = open_dataset(out)
    (name,) = dataset.scenes
    return dataset.scene(name)


def test_av2_build_has_the_nuscenes_build_qa(logs, tmp_path: Path) -> None:
    nu_root, av2_root, summary = logs
    nu = _build(nu_root, tmp_path / "nu", [])
    # The AV2 copy of a synthetic log reads as a real log, which a build anonymizes by default: off here, so that
    # the two builds see the same pixels (the reader's equivalence is what this test is about).
    av2 = _build(av2_root, tmp_path / "av2", ["log.format=av2", "anonymize.faces=false", "anonymize.plates=false"])
    assert list(av2.cameras.channel) == [summary.cameras[c] for c in nu.cameras.channel]
    # Images, masks and QA: present, and the same.
    keys = nu.image_keys()
    assert len(keys) > 0
    assert av2.image_keys() == [(summary.cameras[c], f) for c, f in keys]
    assert all(av2.image_bytes(summary.cameras[c], f) == nu.image_bytes(c, f) for c, f in keys)
    assert av2.masks is not None and nu.masks is not None
    assert len(av2.masks.track_index) == len(nu.masks.track_index) > 0
    assert np.array_equal(av2.masks.track_index, nu.masks.track_index)
    assert list(av2.masks.rle_counts) == list(nu.masks.rle_counts)
    assert av2.qa is not None and nu.qa is not None and len(nu.qa.question) > 100

    def key(qid: str, scene: str, channels: dict[str, str]) -> str:
        """A question or group id ``<scene>/k<keyframe>/<channel>/<n>`` without the scene, in AV2 camera names."""
        if not qid:
            return qid  # spatial questions have no group
        prefix, keyframe, channel, n = qid.split("/")
        assert prefix == scene
        return f"{keyframe}/{channels.get(channel, channel)}/{n}"

    nu_rows = {key(q, nu.name, summary.cameras): i for i, q in enumerate(nu.qa.question_id)}
    av2_rows = {key(q, av2.name, {}): i for i, q in enumerate(av2.qa.question_id)}
    assert nu_rows.keys() == av2_rows.keys()
    for k, i in nu_rows.items():
        j = av2_rows[k]
        for column in ("question", "answer", "predicate", "category", "unit", "gt_label", "gt_extra"):
            assert getattr(av2.qa, column)[j] == getattr(nu.qa, column)[i], (k, column)
        assert key(av2.qa.group_id[j], av2.name, {}) == key(nu.qa.group_id[i], nu.name, summary.cameras)
        assert np.array_equal(av2.qa.region_ids[j], nu.qa.region_ids[i])
        assert np.array_equal(av2.qa.track_index[j], nu.qa.track_index[i])
        assert np.array_equal(av2.qa.frame_indices[j], nu.qa.frame_indices[i])
        assert np.allclose(av2.qa.gt_value[j], nu.qa.gt_value[i], rtol=0, atol=1e-9, equal_nan=True)


def test_lidar_rays_start_at_the_lidar_not_the_ego_origin(logs) -> None:
    """AV2 gives the sweep in the ego frame; the rays start at the LiDAR (``up_lidar`` in the calibration), where
    the nuScenes copy's LiDAR is. The real fixture: the mean of ``up_lidar`` and ``down_lidar`` where the log
    has the calibration file, unknown where it has not."""
    nu_root, av2_root, _ = logs
    nu_frame = open_log(nu_root).scenes()[0].frames[0]
    av2_frame = open_log(av2_root, "av2").scenes()[0].frames[0]
    nu_origin = nu_frame.sensor(nu_frame.lidar_channels[0]).ray_origin_global
    av2_lidar = av2_frame.sensor(av2_frame.lidar_channels[0])
    assert np.array_equal(av2_lidar.calibration.T_ego_from_sensor, np.eye(4))
    assert nu_origin is not None and av2_lidar.ray_origin_global is not None
    np.testing.assert_allclose(av2_lidar.ray_origin_global, nu_origin, atol=1e-6)
    assert np.linalg.norm(nu_origin - av2_frame.T_global_from_ego[:3, 3]) > 1.0  # not the ego origin


@needs_av2
def test_real_av2_lidar_origin() -> None:
    import pyarrow.feather as feather

    origins = {}
    for scene in open_log(AV2_LOGS, "av2").scenes():
        frame = next(f for f in scene.frames if f.lidar_channels)
        origins[scene.name] = frame.sensor(frame.lidar_channels[0]).calibration.ray_origin_m
    log_7fab = "7fab2350-7eaf-3b7e-a39d-6937a4c1bede"
    extr = feather.read_table(AV2_LOGS / log_7fab / "calibration" / "egovehicle_SE3_sensor.feather")
    rows = extr.to_pandas().set_index("sensor_name").loc[["up_lidar", "down_lidar"], ["tx_m", "ty_m", "tz_m"]]
    np.testing.assert_allclose(origins[log_7fab], rows.to_numpy().mean(axis=0))
    assert origins["adcf7d18-0510-35b0-a2fa-b4cea13a6d76"] is None  # no calibration folder


# ------------------------------------------------------------------------------------------------ matching
def test_match_nearest_known_answers() -> None:
    images = np.array([990, 1960, 2040, 3051, 4900, 5100])
    frames = np.array([0, 1000, 2000, 3000, 4000, 5000, 5050])
    # 0: 990 away; 1000 -> 990; 2000: tie 1960 / 2040 -> the earlier; 3000: 51 > 50; 4000: 100 away;
    # 5000: tie at 100; 5050 -> 5100 at exactly half the period (inclusive).
    assert match_nearest(frames, images, 100).tolist() == [-1, 0, 1, -1, -1, -1, 5]
    assert match_nearest(frames, np.zeros(0, dtype=np.int64), 100).tolist() == [-1] * 7
    assert camera_period_ns(np.array([0, 50, 100, 200, 250])) == 50  # one dropped image: the median ignores it
    assert camera_period_ns(np.array([7])) == NOMINAL_CAMERA_PERIOD_NS == 50_000_000


def test_missing_and_offset_camera_images(logs, tmp_path: Path) -> None:
    log = _copy_av2(logs, tmp_path)
    base = AV2Reader(log).scenes()[0]
    ts = [f.timestamp_us * 1000 for f in base.frames]
    folder = log / "sensors" / "cameras" / "ring_front_left"
    (folder / f"{ts[5]}.jpg").unlink()  # dropped image: frame 5 has no ring_front_left
    # Frame 7's image taken 20 ms late, frame 9's 300 ms late (beyond half the 500 ms period of this camera).
    (folder / f"{ts[7]}.jpg").rename(folder / f"{ts[7] + 20_000_000}.jpg")
    (folder / f"{ts[9]}.jpg").rename(folder / f"{ts[9] + 300_000_000}.jpg")
    reader = AV2Reader(log)
    scene = reader.scenes()[0]
    assert reader.camera_misses(scene) == {**dict.fromkeys(logs[2].cameras.values(), 0), "ring_front_left": 2}
    assert "ring_front_left" not in scene.frames[5].sensors
    assert "ring_front_left" not in scene.frames[9].sensors
    assert "ring_front_center" in scene.frames[5].sensors and len(scene.frames[5].camera_channels) == 5
    late = scene.frames[7].sensor("ring_front_left")
    assert late.timestamp_us == (ts[7] + 20_000_000) // 1000
    # The pose at the image's own time: 20 ms of the 500 ms between frames 7 and 8 (slerp, lerp).
    p7, p8 = base.frames[7].T_global_from_ego, base.frames[8].T_global_from_ego
    frac = 20 / 500
    expected_t = (1 - frac) * p7[:3, 3] + frac * p8[:3, 3]
    assert np.allclose(late.T_global_from_ego[:3, 3], expected_t, rtol=0, atol=1e-9)
    assert not np.allclose(late.T_global_from_ego[:3, 3], p7[:3, 3], atol=1e-3)  # the ego moved meanwhile
    yaw = np.arctan2(late.T_global_from_ego[1, 0], late.T_global_from_ego[0, 0])
    yaw7, yaw8 = (np.arctan2(p[1, 0], p[0, 0]) for p in (p7, p8))
    assert yaw == pytest.approx(yaw7 + frac * wrap_angle(yaw8 - yaw7), abs=1e-9)  # synthetic poses: yaw only
    # A camera folder that intrinsics.feather does not list is an error, not a silently ignored camera.
    (log / "sensors" / "cameras" / "ring_rear_right").mkdir()
    with pytest.raises(LogFormatError, match=r"intrinsics\.feather.*ring_rear_right.*no intrinsics row"):
        AV2Reader(log).scenes()


def test_log_without_camera_folders_has_no_cameras(logs, tmp_path: Path) -> None:
    log = _copy_av2(logs, tmp_path)
    shutil.rmtree(log / "sensors" / "cameras")
    reader = AV2Reader(log)
    scene = reader.scenes()[0]
    assert all(f.camera_channels == [] for f in scene.frames)
    assert reader.camera_misses(scene) == {}
    assert len(reader.camera_calibrations(scene)) == 6  # the calibration is still read


@needs_av2
def test_real_av2_calibration_with_images(tmp_path: Path) -> None:
    """A real AV2 log (calibration, 2706 poses) with images placed off the sweep times: real K, extrinsics and
    distortion come through, and each image's pose is the logged trajectory interpolated at its own time."""
    Rotation = pytest.importorskip("scipy.spatial.transform").Rotation
    Slerp = pytest.importorskip("scipy.spatial.transform").Slerp
    log_id = "7fab2350-7eaf-3b7e-a39d-6937a4c1bede"
    log = tmp_path / log_id
    shutil.copytree(AV2_LOGS / log_id / "calibration", log / "calibration")
    for name in ("annotations.feather", "city_SE3_egovehicle.feather"):
        shutil.copy(AV2_LOGS / log_id / name, log / name)
    frames_ns = np.unique(feather.read_table(log / "annotations.feather").column("timestamp_ns").to_numpy())
    jpeg = encode_jpeg(np.full((8, 8, 3), 128, np.uint8), 90).tobytes()
    offsets = {"ring_front_center": -9_774_779, "ring_side_left": 12_345_678}  # within 25 ms of each sweep
    for name, offset in offsets.items():
        folder = log / "sensors" / "cameras" / name
        folder.mkdir(parents=True)
        for t in frames_ns[10:20]:
            (folder / f"{int(t) + offset}.jpg").write_bytes(jpeg)
    reader = AV2Reader(log)
    scene = reader.scenes()[0]
    assert reader.camera_misses(scene) == {"ring_front_center": 146, "ring_side_left": 146}
    assert [f.camera_channels for f in scene.frames[10:20]] == [list(offsets)] * 10  # intrinsics.feather order
    k = reader.camera_distortion(scene)["ring_front_center"]
    assert k.tolist() == pytest.approx([-0.240732, -0.212243, 0.325902], abs=1e-6)
    poses = feather.read_table(log / "city_SE3_egovehicle.feather").to_pandas().drop_duplicates("timestamp_ns")
    t0 = int(poses.timestamp_ns.iloc[0])
    rel_s = (poses.timestamp_ns.to_numpy() - t0) * 1e-9  # exact integer difference, then seconds
    slerp = Slerp(rel_s, Rotation.from_quat(poses[["qx", "qy", "qz", "qw"]].to_numpy()))
    calibs = reader.camera_calibrations(scene)
    for frame in scene.frames[10:20]:
        for name, offset in offsets.items():
            sample = frame.sensor(name)
            t = frame.timestamp_us * 1000 + offset
            assert sample.path.name == f"{t}.jpg" and sample.timestamp_us == t // 1000
            assert np.array_equal(np.asarray(sample.calibration.intrinsic), np.asarray(calibs[name].intrinsic))
            assert np.array_equal(sample.calibration.T_ego_from_sensor, calibs[name].T_ego_from_sensor)
            t_s = (t - t0) * 1e-9
            assert np.allclose(sample.T_global_from_ego[:3, :3], slerp([t_s]).as_matrix()[0], rtol=0, atol=1e-9)
            expected_t = [np.interp(t_s, rel_s, poses[c].to_numpy()) for c in ("tx_m", "ty_m", "tz_m")]
            assert np.allclose(sample.T_global_from_ego[:3, 3], expected_t, rtol=0, atol=1e-9)
            assert frame.image_bytes(name) == jpeg


# ------------------------------------------------------------------------------------------------ distortion
K_TEST = np.array([[500.0, 0.0, 320.0], [0.0, 500.0, 240.0], [0.0, 0.0, 1.0]])
K_DIST = np.array([-0.28, 0.09, -0.01])  # barrel, of the size of AV2's coefficients
W, H = 640, 480


def _distorted_render(profile) -> np.ndarray:
    """A float image of the lens with K_TEST / K_DIST: each pixel shows ``profile(u, v)`` at its undistorted
    (pinhole) position, found by OpenCV's iterative inverse of the distortion model."""
    u, v = np.meshgrid(np.arange(W, dtype=np.float64), np.arange(H, dtype=np.float64))
    pts = np.stack([u.ravel(), v.ravel()], axis=1).reshape(-1, 1, 2)
    criteria = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 50, 1e-12)
    ideal = cv2.undistortPointsIter(pts, K_TEST, opencv_distortion(K_DIST), np.eye(3), K_TEST, criteria)
    ideal = np.asarray(ideal).reshape(H, W, 2)
    return profile(ideal[..., 0], ideal[..., 1])


def test_undistortion_maps_known_points_back() -> None:
    """Points projected through the lens (cv2.projectPoints with k1..k3) come back to their pinhole pixels."""
    points = np.array([[x, y, 1.0] for x in (-0.5, -0.1, 0.45) for y in (-0.38, 0.0, 0.33)], dtype=np.float64)
    zero = np.zeros(3)
    lens = cv2.projectPoints(points, zero, zero, K_TEST, opencv_distortion(K_DIST))[0].reshape(-1, 2)
    pinhole = cv2.projectPoints(points, zero, zero, K_TEST, np.zeros(5))[0].reshape(-1, 2)
    # AV2's model is radial only: x_d = x (1 + k1 r^2 + k2 r^4 + k3 r^6) on normalised coordinates.
    xy = points[:, :2] / points[:, 2:]
    r2 = np.sum(xy**2, axis=1, keepdims=True)
    radial = 1 + K_DIST[0] * r2 + K_DIST[1] * r2**2 + K_DIST[2] * r2**3
    assert np.allclose(lens, xy * radial * 500.0 + [320.0, 240.0], rtol=0, atol=1e-6)
    assert np.max(np.linalg.norm(lens - pinhole, axis=1)) > 15.0  # the lens moves the corner points a lot
    u, v = np.meshgrid(np.arange(W, dtype=np.float64), np.arange(H, dtype=np.float64))
    image = sum(np.exp(-((u - pu) ** 2 + (v - pv) ** 2) / (2 * 1.2**2)) for pu, pv in lens)
    image8 = np.round(255 * np.clip(image, 0, 1)).astype(np.uint8)
    out = undistort_image(np.dstack([image8] * 3), K_TEST, K_DIST)[..., 0].astype(np.float64)
    for pu, pv in pinhole:
        u0, v0 = round(pu), round(pv)
        win = out[v0 - 6 : v0 + 7, u0 - 6 : u0 + 7]
        du, dv = np.meshgrid(np.arange(u0 - 6, u0 + 7), np.arange(v0 - 6, v0 + 7))
        centroid = np.array([np.sum(win * du), np.sum(win * dv)]) / np.sum(win)
        assert np.linalg.norm(centroid - [pu, pv]) < 0.2, (pu, pv, centroid)


def test_undistortion_straightens_lines() -> None:
    rows, cols = (70.0, 240.0, 410.0), (60.0, 580.0)

    def grid(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        lines = [np.exp(-((v - r) ** 2) / (2 * 1.5**2)) for r in rows] + [
            np.exp(-((u - c) ** 2) / (2 * 1.5**2)) for c in cols
        ]
        return np.clip(sum(lines), 0, 1)

    distorted = np.round(255 * _distorted_render(grid)).astype(np.uint8)
    out = undistort_image(np.dstack([distorted] * 3), K_TEST, K_DIST)[..., 0].astype(np.float64)

    # Centroids across each line, away from the crossing lines.
    free_cols = np.arange(100, 541)
    free_rows = np.array([r for r in range(80, 401) if min(abs(r - x) for x in rows) > 8])

    def row_centroids(image: np.ndarray, lo: int, hi: int) -> np.ndarray:
        band = image[lo:hi][:, free_cols]
        return np.sum(band * np.arange(lo, hi)[:, None], axis=0) / np.sum(band, axis=0)

    def col_centroids(image: np.ndarray, lo: int, hi: int) -> np.ndarray:
        band = image[free_rows][:, lo:hi]
        return np.sum(band * np.arange(lo, hi)[None, :], axis=1) / np.sum(band, axis=1)

    top_in = row_centroids(distorted.astype(np.float64), 70, 100)  # the lens bends the top line towards the centre
    assert np.ptp(top_in) > 5.0
    for r in rows:
        assert np.max(np.abs(row_centroids(out, int(r) - 9, int(r) + 10) - r)) < 0.3
    for c in cols:
        assert np.max(np.abs(col_centroids(out, int(c) - 9, int(c) + 10) - c)) < 0.3


def test_undistort_jpeg_and_reader_option(logs, tmp_path: Path) -> None:
    original = encode_jpeg(np.full((4, 4, 3), 7, np.uint8), 90).tobytes()
    assert undistort_jpeg(original, K_TEST, np.zeros(3), "x.jpg") is original  # all k zero: the same bytes
    log = _copy_av2(logs, tmp_path)
    table = feather.read_table(log / "calibration" / "intrinsics.feather").to_pandas()
    table.loc[table.sensor_name == "ring_front_center", ["k1", "k2", "k3"]] = [-0.2, 0.05, 0.0]
    feather.write_feather(table, log / "calibration" / "intrinsics.feather")
    raw = open_log(log.parent, format="av2")
    fixed = open_log(log.parent, format="stridegen.logs.av2:open_av2_undistorted")
    assert isinstance(fixed, AV2Reader) and isinstance(raw, AV2Reader)
    assert fixed.undistort and not raw.undistort
    frame_raw, frame_fixed = raw.scenes()[0].frames[4], fixed.scenes()[0].frames[4]
    source = frame_raw.sensor("ring_front_center").path.read_bytes()
    assert frame_raw.image_bytes("ring_front_center") == source  # default: as released
    assert frame_fixed.image_bytes("ring_front_left") == frame_raw.image_bytes("ring_front_left")  # k = 0
    data = frame_fixed.image_bytes("ring_front_center")
    assert data != source and data == frame_fixed.image_bytes("ring_front_center")  # deterministic re-encode
    K = frame_fixed.sensor("ring_front_center").calibration.intrinsic
    assert K is not None
    expected = undistort_image(decode_image(source, "src"), K, np.array([-0.2, 0.05, 0.0]))
    diff = np.abs(decode_image(data, "out").astype(np.int16) - expected.astype(np.int16))
    assert diff.mean() < 2.0  # JPEG quality 95 re-encode of the same pixels
    assert fixed.camera_distortion(log.name)["ring_front_center"].tolist() == [-0.2, 0.05, 0.0]


# ------------------------------------------------------------------------------------------------ categories
def test_category_inverse() -> None:
    for label, category in DETECTION_TO_AV2.items():
        assert AV2_TO_DETECTION[category] == label
    assert set(DETECTION_TO_AV2) == set(AV2_TO_DETECTION.values())
    assert av2_category("vehicle.truck", "truck") == "TRUCK"
    assert av2_category("BOX_TRUCK", "truck") == "BOX_TRUCK"  # already AV2: kept
    assert av2_category("movable_object.barrier", "barrier") is None  # no AV2 class: written verbatim
    assert av2_category("BICYCLIST", "") is None
