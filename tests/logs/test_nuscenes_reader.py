"""nuScenes reader against the real demo keyframe and the nuscenes-devkit, plus a tiny hand-written log."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stridegen.core.projection import project_boxes_2d, project_points
from stridegen.core.transforms import yaw_to_quat
from stridegen.core.vocabulary import CATEGORY_TO_DETECTION
from stridegen.logs import detect_format, open_log
from stridegen.logs._common import neighbour_velocity
from stridegen.logs.nuscenes import NuScenesReader
from stridegen.logs.nuscenes_table_store import TABLES
from stridegen.viz.boxes3d import boxes_in_image, corners_in_camera, render_annotations, save_rgb
from tests.shared_data import NUSCENES_DEMO as DEMO

REPO = Path(__file__).resolve().parents[2]
CAMERAS = ("CAM_FRONT", "CAM_FRONT_RIGHT", "CAM_FRONT_LEFT", "CAM_BACK", "CAM_BACK_LEFT", "CAM_BACK_RIGHT")


@pytest.fixture(scope="module")
def demo_reader(nuscenes_demo: Path) -> NuScenesReader:  # skips where ../shared/data/nuscenes-demo is absent
    reader = open_log(DEMO)
    assert isinstance(reader, NuScenesReader)
    return reader


@pytest.fixture(scope="module")
def devkit(nuscenes_demo: Path):
    nuscenes = pytest.importorskip("nuscenes.nuscenes")
    return nuscenes.NuScenes("v1.0-demo", str(DEMO), verbose=False)


# ---------------------------------------------------------------------------------------------- demo log


def test_demo_structure(demo_reader: NuScenesReader) -> None:
    assert detect_format(DEMO) == "nuscenes"
    assert demo_reader.version == "v1.0-demo"
    scenes = demo_reader.scenes()
    assert [s.name for s in scenes] == ["scene-0061"]
    assert scenes[0].log_name == "n015-2018-07-24-11-22-45+0800"
    (frame,) = scenes[0].frames
    assert frame.token == "ca9a282c9e77460f8360f564131a8af5"
    assert frame.timestamp_us == 1532402927647951
    assert sorted(frame.camera_channels) == sorted(CAMERAS)
    assert frame.lidar_channels == ["LIDAR_TOP"]
    assert all(s.is_key_frame for s in frame.sensors.values())
    assert frame.sweeps == {c: [] for c in frame.sensors}
    assert np.array_equal(frame.T_global_from_ego, frame.sensor("LIDAR_TOP").T_global_from_ego)
    cam = frame.sensor("CAM_FRONT")
    assert (cam.calibration.width, cam.calibration.height) == (1600, 900)
    assert cam.calibration.intrinsic is not None and cam.calibration.intrinsic.shape == (3, 3)
    assert cam.timestamp_us == 1532402927612460
    assert frame.image("CAM_FRONT").shape == (900, 1600, 3)
    # The same reader when given the version folder itself or an explicit version.
    assert len(open_log(DEMO / "v1.0-demo").scenes()[0].frames) == 1
    explicit = open_log(DEMO, format="nuscenes", version="v1.0-demo")
    assert isinstance(explicit, NuScenesReader) and explicit.version == "v1.0-demo"


def test_demo_points(demo_reader: NuScenesReader) -> None:
    frame = demo_reader.scenes()[0].frames[0]
    points = frame.lidar()
    assert points.shape == (34688, 5)
    assert points.dtype == np.float32
    raw = np.fromfile(frame.sensor("LIDAR_TOP").path, dtype=np.float32)
    assert np.array_equal(points.reshape(-1), raw)
    # Ring indices of a 32-beam LiDAR.
    assert set(np.unique(points[:, 4]).astype(int)) <= set(range(32))
    (only,) = frame.lidar_sweeps(10)
    assert only[1].channel == "LIDAR_TOP"


def test_demo_annotations_match_devkit(demo_reader: NuScenesReader, devkit) -> None:
    from nuscenes.eval.common.utils import quaternion_yaw
    from nuscenes.eval.detection.utils import category_to_detection_name

    frame = demo_reader.scenes()[0].frames[0]
    ann = frame.annotations()
    assert len(ann) == 68
    assert ann.boxes.frame == "global"
    for i, token in enumerate(ann.token):
        box = devkit.get_box(token)
        record = devkit.get("sample_annotation", token)
        assert np.allclose(ann.boxes.center[i], box.center, atol=1e-12)
        assert np.allclose(ann.boxes.size_lwh[i], box.wlh[[1, 0, 2]], atol=1e-12)
        assert ann.boxes.yaw[i] == pytest.approx(quaternion_yaw(box.orientation), abs=1e-12)
        assert ann.category[i] == record["category_name"]
        assert ann.boxes.label[i] == (category_to_detection_name(record["category_name"]) or "")
        assert ann.boxes.track_id[i] == record["instance_token"]
        assert ann.visibility[i] == int(record["visibility_token"])
        assert ann.num_lidar_pts[i] == record["num_lidar_pts"]
        # Single-frame log: every instance has one annotation, so no velocity (devkit: NaN).
        assert np.all(np.isnan(ann.boxes.velocity[i])) and np.all(np.isnan(devkit.box_velocity(token)))
    assert set(ann.boxes.label) <= set(CATEGORY_TO_DETECTION.values())


def test_mapping_table_equals_devkit() -> None:
    utils = pytest.importorskip("nuscenes.eval.detection.utils")
    categories = [
        *CATEGORY_TO_DETECTION,
        "animal",
        "human.pedestrian.stroller",
        "vehicle.emergency.police",
        "movable_object.debris",
        "human.pedestrian.personal_mobility",
        "static_object.bicycle_rack",
    ]
    for category in categories:
        assert CATEGORY_TO_DETECTION.get(category, "") == (utils.category_to_detection_name(category) or "")


@pytest.mark.parametrize("channel", CAMERAS)
def test_projection_matches_devkit(demo_reader: NuScenesReader, devkit, channel: str) -> None:
    from nuscenes.utils.geometry_utils import BoxVisibility, view_points

    frame = demo_reader.scenes()[0].frames[0]
    sample = frame.sensor(channel)
    calib = sample.calibration
    assert calib.intrinsic is not None and calib.width is not None and calib.height is not None
    ann = frame.annotations()
    corners_cam = corners_in_camera(ann, sample)  # global -> ego (its own pose) -> camera
    ours_visible = boxes_in_image(corners_cam, calib.intrinsic, (calib.width, calib.height), "any")
    xyxy, valid = project_boxes_2d(corners_cam, calib.intrinsic, (calib.width, calib.height))

    _, dk_boxes, dk_k = devkit.get_sample_data(sample.token, box_vis_level=BoxVisibility.ANY)
    assert np.allclose(dk_k, calib.intrinsic)
    assert int(ours_visible.sum()) == len(dk_boxes) > 0
    row = {t: i for i, t in enumerate(ann.token)}
    assert {ann.token[i] for i in np.flatnonzero(ours_visible)} == {b.token for b in dk_boxes}
    for box in dk_boxes:
        i = row[box.token]
        dk_corners_cam = box.corners()  # [3, 8]
        assert np.allclose(corners_cam[i], dk_corners_cam.T, atol=1e-9)
        in_front = dk_corners_cam[2] > 0.1
        dk_uv = view_points(dk_corners_cam, dk_k, normalize=True)[:2].T
        uv, _, _ = project_points(corners_cam[i], calib.intrinsic)
        assert np.max(np.abs(uv[in_front] - dk_uv[in_front])) < 1e-6
        # All corners are in front for ANY-visible boxes: the 2D box is the clipped extent of the corners.
        assert valid[i]
        expected = [
            np.clip(dk_uv[:, 0].min(), 0, calib.width),
            np.clip(dk_uv[:, 1].min(), 0, calib.height),
            np.clip(dk_uv[:, 0].max(), 0, calib.width),
            np.clip(dk_uv[:, 1].max(), 0, calib.height),
        ]
        assert np.allclose(xyxy[i], expected, atol=1e-6)


def test_wireframe_picture(demo_reader: NuScenesReader) -> None:
    frame = demo_reader.scenes()[0].frames[0]
    image = frame.image("CAM_FRONT")
    drawn = render_annotations(frame, "CAM_FRONT")
    assert drawn.shape == image.shape and not np.array_equal(drawn, image)
    out = REPO / "test-output"
    out.mkdir(exist_ok=True)
    save_rgb(str(out / "nuscenes_demo_CAM_FRONT_boxes.png"), drawn)
    written = cv2.imread(str(out / "nuscenes_demo_CAM_FRONT_boxes.png"))
    assert written is not None and written.shape == (900, 1600, 3)


# ---------------------------------------------------------------------------------------------- tiny log

SAMPLE_TIMES_US = [1_000_000, 1_500_000, 2_000_000, 4_100_000]  # the last gap (2.1 s) exceeds 1.5 s
# instance -> [(sample index, translation)]
TRACKS = {
    "inst_car": [(0, [10.0, 0.0, 1.0]), (1, [12.0, 0.5, 1.0]), (2, [14.5, 1.0, 1.1]), (3, [20.0, 1.0, 1.1])],
    "inst_ped": [(1, [5.0, 5.0, 0.9]), (2, [5.6, 5.8, 0.9])],
    "inst_cone": [(2, [3.0, -2.0, 0.3])],
}
IDENTITY = [1.0, 0.0, 0.0, 0.0]
RADAR_FIELDS = (
    "x y z dyn_prop id rcs vx vy vx_comp vy_comp is_quality_valid ambig_state x_rms y_rms "
    "invalid_state pdh0 vx_rms vy_rms"
).split()
RADAR_SIZES = [4, 4, 4, 1, 2, 4, 4, 4, 4, 4, 1, 1, 1, 1, 1, 1, 1, 1]
RADAR_TYPES = "F F F I I F F F F F I I I I I I I I".split()


def _write_radar_pcd(path: Path, n: int, rng: np.random.Generator) -> np.ndarray:
    """A binary PCD file with the nuScenes radar header (nuscenes-devkit RadarPointCloud.from_file docstring)."""
    kinds = {"F": "f", "I": "i"}
    dtype = np.dtype([(f, f"<{kinds[t]}{s}") for f, s, t in zip(RADAR_FIELDS, RADAR_SIZES, RADAR_TYPES, strict=True)])
    data = np.zeros(n, dtype=dtype)
    for name in RADAR_FIELDS:
        data[name] = rng.uniform(0, 5, n) if dtype[name].kind == "f" else rng.integers(0, 4, n)
    header = (
        f"# .PCD v0.7 - Point Cloud Data file format\nVERSION 0.7\nFIELDS {' '.join(RADAR_FIELDS)}\n"
        f"SIZE {' '.join(map(str, RADAR_SIZES))}\nTYPE {' '.join(RADAR_TYPES)}\n"
        f"COUNT {' '.join(['1'] * len(RADAR_FIELDS))}\nWIDTH {n}\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\n"
        f"POINTS {n}\nDATA binary\n"
    )
    # One trailing byte: the devkit's reader asserts that data continues past the last field (strict <).
    path.write_bytes(header.encode("ascii") + data.tobytes() + b"\n")
    return data


def _write_tiny_log(root: Path) -> dict[str, str]:
    """A 4-sample nuScenes-format log with moving instances and LiDAR sweeps between key frames."""
    rng = np.random.default_rng(7)
    tables: dict[str, list[dict]] = {k: [] for k in TABLES}
    tables["log"].append(
        {"token": "log0", "logfile": "tiny-log", "vehicle": "v", "date_captured": "2026-01-01", "location": "nowhere"}
    )
    tables["map"].append({"token": "map0", "log_tokens": ["log0"], "category": "semantic_prior", "filename": ""})
    tables["sensor"].append({"token": "sens_lidar", "channel": "LIDAR_TOP", "modality": "lidar"})
    tables["sensor"].append({"token": "sens_radar", "channel": "RADAR_FRONT", "modality": "radar"})
    tables["calibrated_sensor"].append(
        {
            "token": "cs_radar",
            "sensor_token": "sens_radar",
            "translation": [3.4, 0.0, 0.5],
            "rotation": IDENTITY,
            "camera_intrinsic": [],
        }
    )
    tables["calibrated_sensor"].append(
        {
            "token": "cs_lidar",
            "sensor_token": "sens_lidar",
            "translation": [0.9, 0.0, 1.8],
            "rotation": IDENTITY,
            "camera_intrinsic": [],
        }
    )
    tables["category"] += [
        {"token": "cat_car", "name": "vehicle.car", "description": ""},
        {"token": "cat_ped", "name": "human.pedestrian.adult", "description": ""},
        {"token": "cat_cone", "name": "movable_object.trafficcone", "description": ""},
    ]
    tables["attribute"].append({"token": "att_moving", "name": "vehicle.moving", "description": ""})
    tables["visibility"] += [{"token": str(i), "level": f"v{i}", "description": ""} for i in range(1, 5)]
    n = len(SAMPLE_TIMES_US)
    tables["scene"].append(
        {
            "token": "scene0",
            "log_token": "log0",
            "nbr_samples": n,
            "name": "scene-tiny",
            "description": "tiny",
            "first_sample_token": "s0",
            "last_sample_token": f"s{n - 1}",
        }
    )
    (root / "samples" / "LIDAR_TOP").mkdir(parents=True)
    (root / "sweeps" / "LIDAR_TOP").mkdir(parents=True)
    (root / "samples" / "RADAR_FRONT").mkdir(parents=True)
    sd_chain: list[dict] = []
    radar_chain: list[dict] = []
    for i, t in enumerate(SAMPLE_TIMES_US):
        tables["sample"].append(
            {
                "token": f"s{i}",
                "timestamp": t,
                "scene_token": "scene0",
                "prev": f"s{i - 1}" if i else "",
                "next": f"s{i + 1}" if i < n - 1 else "",
            }
        )
        # two non-key sweeps before every key frame but the first
        times = ([t - 300_000, t - 150_000] if i else []) + [t]
        for k, ts in enumerate(times):
            key = k == len(times) - 1
            token = f"sd{i}_{k}"
            folder = "samples" if key else "sweeps"
            filename = f"{folder}/LIDAR_TOP/tiny__LIDAR_TOP__{ts}.pcd.bin"
            rng.normal(size=(50 + k, 5)).astype(np.float32).tofile(root / filename)
            tables["ego_pose"].append(
                {
                    "token": f"ep_{token}",
                    "timestamp": ts,
                    "rotation": list(yaw_to_quat(0.01 * i + 0.001 * k)),
                    "translation": [0.5 * i, 0.1 * k, 0.0],
                }
            )
            sd_chain.append(
                {
                    "token": token,
                    "sample_token": f"s{i}",
                    "ego_pose_token": f"ep_{token}",
                    "calibrated_sensor_token": "cs_lidar",
                    "timestamp": ts,
                    "fileformat": "pcd",
                    "is_key_frame": key,
                    "height": 0,
                    "width": 0,
                    "filename": filename,
                }
            )
        filename = f"samples/RADAR_FRONT/tiny__RADAR_FRONT__{t + 10}.pcd"
        _write_radar_pcd(root / filename, 20 + i, rng)
        radar_chain.append(
            {
                "token": f"rd{i}",
                "sample_token": f"s{i}",
                "ego_pose_token": f"ep_sd{i}_0",
                "calibrated_sensor_token": "cs_radar",
                "timestamp": t + 10,
                "fileformat": "pcd",
                "is_key_frame": True,
                "height": 0,
                "width": 0,
                "filename": filename,
            }
        )
    for chain in (sd_chain, radar_chain):
        for j, sd in enumerate(chain):
            sd["prev"] = chain[j - 1]["token"] if j else ""
            sd["next"] = chain[j + 1]["token"] if j < len(chain) - 1 else ""
    tables["sample_data"] = sd_chain + radar_chain
    category_of = {"inst_car": "cat_car", "inst_ped": "cat_ped", "inst_cone": "cat_cone"}
    for inst, track in TRACKS.items():
        tokens = [f"{inst}_{s}" for s, _ in track]
        tables["instance"].append(
            {
                "token": inst,
                "category_token": category_of[inst],
                "nbr_annotations": len(track),
                "first_annotation_token": tokens[0],
                "last_annotation_token": tokens[-1],
            }
        )
        for k, (s, xyz) in enumerate(track):
            tables["sample_annotation"].append(
                {
                    "token": tokens[k],
                    "sample_token": f"s{s}",
                    "instance_token": inst,
                    "visibility_token": "3",
                    "attribute_tokens": ["att_moving"] if inst == "inst_car" else [],
                    "translation": xyz,
                    "size": [1.9, 4.5, 1.6],
                    "rotation": list(yaw_to_quat(0.2 * k)),
                    "prev": tokens[k - 1] if k else "",
                    "next": tokens[k + 1] if k < len(track) - 1 else "",
                    "num_lidar_pts": 10 * k,
                    "num_radar_pts": k,
                }
            )
    version = root / "v1.0-tiny"
    version.mkdir()
    for name, records in tables.items():
        (version / f"{name}.json").write_text(json.dumps(records))
    return {"version": "v1.0-tiny"}


@pytest.fixture()
def tiny_root(tmp_path: Path) -> Path:
    _write_tiny_log(tmp_path)
    return tmp_path


def test_tiny_log_velocity_matches_devkit(tiny_root: Path) -> None:
    nuscenes = pytest.importorskip("nuscenes.nuscenes")
    devkit = nuscenes.NuScenes("v1.0-tiny", str(tiny_root), verbose=False)
    reader = open_log(tiny_root)
    frames = reader.scenes()[0].frames
    assert [f.token for f in frames] == ["s0", "s1", "s2", "s3"]
    compared = 0
    for frame in frames:
        ann = frame.annotations()
        for i, token in enumerate(ann.token):
            expected = devkit.box_velocity(token)
            assert np.allclose(ann.boxes.velocity[i], expected, equal_nan=True, atol=1e-12), token
            compared += 1
    assert compared == sum(len(t) for t in TRACKS.values())
    # Hand values: centred difference over 1 s for the car at s1; one-sided at s0; NaN at s3 (gap 2.1 s > 1.5 s).
    car = {f.token: f.annotations() for f in frames}
    v_s1 = car["s1"].boxes.velocity[list(car["s1"].token).index("inst_car_1")]
    assert np.allclose(v_s1, [4.5, 1.0, 0.1])
    v_s0 = car["s0"].boxes.velocity[0]
    assert np.allclose(v_s0, [4.0, 1.0, 0.0])
    assert np.all(np.isnan(car["s3"].boxes.velocity[0]))
    # Centred difference over s1..s3 spans 2.6 s <= 3 s: finite.
    v_s2 = car["s2"].boxes.velocity[list(car["s2"].token).index("inst_car_2")]
    assert np.allclose(v_s2, np.array([8.0, 0.5, 0.1]) / 2.6)


def test_tiny_log_frames_sweeps_and_fields(tiny_root: Path) -> None:
    reader = open_log(tiny_root, version="v1.0-tiny")
    scene = reader.scene("scene-tiny")
    assert scene.log_name == "tiny-log"
    assert np.allclose(scene.timestamps_s, np.array(SAMPLE_TIMES_US) * 1e-6)
    frame = scene.frames[1]
    assert frame.sweeps["LIDAR_TOP"] and [s.token for s in frame.sweeps["LIDAR_TOP"]] == ["sd1_1", "sd1_0"]
    assert [s.timestamp_us for s in frame.sweeps["LIDAR_TOP"]] == [1_350_000, 1_200_000]
    assert not any(s.is_key_frame for s in frame.sweeps["LIDAR_TOP"])
    assert scene.frames[0].sweeps["LIDAR_TOP"] == []
    # Each sweep has its own ego pose.
    sweep = frame.sweeps["LIDAR_TOP"][0]
    assert np.allclose(sweep.T_global_from_ego[:3, 3], [0.5, 0.1, 0.0])
    assert np.allclose(frame.T_global_from_ego[:3, 3], [0.5, 0.2, 0.0])
    assert np.allclose(frame.sensor("LIDAR_TOP").calibration.T_ego_from_sensor[:3, 3], [0.9, 0.0, 1.8])
    assert frame.lidar_channels == ["LIDAR_TOP"]
    assert frame.sensor("RADAR_FRONT").calibration.modality == "radar"
    assert frame.sweeps["RADAR_FRONT"] == []
    clouds = frame.lidar_sweeps(3)
    assert [c.shape for c, _ in clouds] == [(52, 5), (51, 5), (50, 5)]
    ann = scene.frames[2].annotations()
    assert list(ann.boxes.track_id) == ["inst_car", "inst_ped", "inst_cone"]
    assert list(ann.boxes.label) == ["car", "pedestrian", "traffic_cone"]
    assert list(ann.attribute) == ["vehicle.moving", "", ""]
    assert np.array_equal(ann.visibility, [3, 3, 3])
    assert np.allclose(ann.boxes.size_lwh, [[4.5, 1.9, 1.6]] * 3)
    assert np.allclose(ann.boxes.yaw, [0.4, 0.2, 0.0])


def test_radar_points_match_devkit(tiny_root: Path) -> None:
    data_classes = pytest.importorskip("nuscenes.utils.data_classes")
    frame = open_log(tiny_root).scenes()[0].frames[2]
    sample = frame.sensor("RADAR_FRONT")
    points = frame.reader.load_points(sample)
    assert points.shape == (22, 18) and points.dtype == np.float32
    keep_all = dict(invalid_states=list(range(18)), dynprop_states=list(range(8)), ambig_states=list(range(5)))
    reference = data_classes.RadarPointCloud.from_file(str(sample.path), **keep_all).points.T
    assert np.array_equal(points, reference.astype(np.float32))


# ---------------------------------------------------------------------------------------------- velocity rule


def _velocity_loop(position, time_s, prev_idx, next_idx, max_time_diff=1.5):
    """Row-by-row transcription of the devkit's box_velocity rule, as an independent reference."""
    out = []
    for i in range(len(position)):
        has_prev, has_next = prev_idx[i] >= 0, next_idx[i] >= 0
        if not (has_prev or has_next):
            out.append([np.nan] * 3)
            continue
        first = prev_idx[i] if has_prev else i
        last = next_idx[i] if has_next else i
        dt = time_s[last] - time_s[first]
        limit = 2 * max_time_diff if (has_prev and has_next) else max_time_diff
        out.append([np.nan] * 3 if dt > limit else list((position[last] - position[first]) / dt))
    return np.array(out).reshape(-1, 3)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=5), st.integers(0, 2**32 - 1))
def test_neighbour_velocity_matches_rowwise_rule(track_lengths: list[int], seed: int) -> None:
    rng = np.random.default_rng(seed)
    position: list[np.ndarray] = []
    time_s: list[float] = []
    prev_idx: list[int] = []
    next_idx: list[int] = []
    for length in track_lengths:
        start = len(position)
        t = np.cumsum(rng.uniform(0.05, 2.0, size=length))  # gaps both below and above 1.5 s
        for k in range(length):
            position.append(rng.normal(size=3) * 10)
            time_s.append(t[k])
            prev_idx.append(start + k - 1 if k else -1)
            next_idx.append(start + k + 1 if k < length - 1 else -1)
    args = (np.array(position), np.array(time_s), np.array(prev_idx), np.array(next_idx))
    assert np.allclose(neighbour_velocity(*args), _velocity_loop(*args), equal_nan=True, rtol=1e-12)
