"""The ROS reader (stridegen/logs/ros) on synthetic recordings written by stridegen/logs/synthetic/ros_writer.py in
all three containers: the same scenes, samples, poses, images, sweeps and boxes as the source log, the same QA as
its nuScenes build, de-skewed sweeps equal to the generator's, and one error, failure or warning per bad
recording."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stridegen.core.errors import InvalidPoseError, LogFormatError
from stridegen.logs import detect_format, open_log

pytest.importorskip("rosbags")

from stridegen.logs.ros.images import UnknownEncodingError
from stridegen.logs.ros.reader import RosReader
from stridegen.logs.synthetic.ros_writer import (
    CONTAINERS,
    scene_messages,
    write_recording,
    write_ros_log,
)

POSE_ATOL = 1e-12  # quaternion round trip and the chain product: a few ulps


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two synthetic scenes of 2 s (4 frames each), tiny cameras."""
    from stridegen.logs.synthetic.generator import generate_dataset

    root = tmp_path_factory.mktemp("ros-source") / "log"
    generate_dataset(root, scenes=2, seconds=2.0, seed=3, width=48, height=27, progress=False)
    return root


@pytest.fixture(scope="module")
def recordings(source: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("ros-recordings")
    reader = open_log(source)
    roots = {}
    for container in CONTAINERS:
        summary = write_ros_log(reader, out / container, container)
        assert [p.name for p in summary.recordings] == (
            ["scene-0000.bag", "scene-0001.bag"] if container == "ros1" else ["scene-0000", "scene-0001"]
        )
        roots[container] = out / container
    return roots


def _same_annotations(a, b) -> None:
    oa, ob = np.argsort(a.boxes.track_id.astype(str)), np.argsort(b.boxes.track_id.astype(str))
    assert a.boxes.track_id[oa].tolist() == b.boxes.track_id[ob].tolist()
    np.testing.assert_allclose(b.boxes.center[ob], a.boxes.center[oa], atol=1e-9)
    np.testing.assert_allclose(b.boxes.size_lwh[ob], a.boxes.size_lwh[oa], atol=1e-12)
    np.testing.assert_allclose(np.cos(b.boxes.yaw[ob] - a.boxes.yaw[oa]), 1.0, atol=1e-12)
    np.testing.assert_allclose(b.boxes.velocity[ob], a.boxes.velocity[oa], atol=1e-9)  # NaN where both are
    assert b.boxes.label[ob].tolist() == a.boxes.label[oa].tolist()
    assert b.category[ob].tolist() == a.category[oa].tolist()
    # Counted from the sweep (points within 1 cm of the box), not the generator's ray hits: a box hit by rays
    # has points, mostly.
    assert np.mean((b.num_lidar_pts[ob] > 0) == (a.num_lidar_pts[oa] > 0)) > 0.9


@pytest.mark.parametrize("container", CONTAINERS)
def test_reads_back_the_source_log(source: Path, recordings: dict[str, Path], container: str) -> None:
    root = recordings[container]
    assert detect_format(root) == "ros"
    reader = open_log(root)
    src = open_log(source)
    assert [n for n, _ in reader.scene_ids()] == ["scene-0000", "scene-0001"]
    boxes = 0
    for sa in src.scenes():
        sb = reader.scene(sa.name)
        assert [f.timestamp_us for f in sb] == [f.timestamp_us for f in sa]
        for fa, fb in zip(sa.frames, sb.frames, strict=True):
            assert list(fb.sensors) == list(fa.sensors)  # cameras clockwise from the front: nuScenes' order
            np.testing.assert_allclose(fb.T_global_from_ego, fa.T_global_from_ego, atol=POSE_ATOL)
            for channel, a in fa.sensors.items():
                b = fb.sensors[channel]
                assert b.timestamp_us == a.timestamp_us
                np.testing.assert_allclose(b.T_global_from_ego, a.T_global_from_ego, atol=POSE_ATOL)
                np.testing.assert_allclose(
                    b.calibration.T_ego_from_sensor, a.calibration.T_ego_from_sensor, atol=POSE_ATOL
                )
                if a.calibration.is_camera:
                    assert fb.image_bytes(channel) == fa.image_bytes(channel)
                    np.testing.assert_array_equal(b.calibration.intrinsic, a.calibration.intrinsic)
                    assert (b.calibration.width, b.calibration.height) == (a.calibration.width, a.calibration.height)
                else:
                    np.testing.assert_array_equal(fb.lidar(channel), fa.lidar(channel))
            _same_annotations(fa.annotations(), fb.annotations())
            boxes += len(fb.annotations())
    assert boxes > 20


def test_a_single_recording_is_a_log(recordings: dict[str, Path]) -> None:
    for container, name in (
        ("ros1", "scene-0001.bag"),
        ("ros2-mcap", "scene-0001"),
        ("ros2-mcap", "scene-0001/scene-0001.mcap"),
    ):
        path = recordings[container] / name
        assert detect_format(path) == "ros", path
        reader = open_log(path)
        assert [n for n, _ in reader.scene_ids()] == ["scene-0001"]
        assert len(reader.scene("scene-0001").frames) == 4


def _qa_rows(dataset: Path, names: dict[str, str]) -> list[tuple[str, ...]]:
    from stridegen.shards.reader import Dataset

    rows = []
    ds = Dataset(dataset)
    try:
        for view in ds:
            qa = view.qa
            assert qa is not None
            name = names.get(view.name, view.name)
            rows += [
                (name, str(i).replace(view.name, name), str(q), str(a), repr(float(v)))
                for i, q, a, v in zip(qa.question_id, qa.question, qa.answer, qa.gt_value, strict=True)
            ]
    finally:
        ds.close()
    return sorted(rows)


@pytest.mark.slow
def test_each_container_builds_the_nuscenes_build_qa(two_scene_log: Path, tmp_path: Path) -> None:
    """Recordings named by scene token (a build seeds its draws from the token) give the QA table of the source's
    nuScenes build, row for row, with the boxes from the Detection3DArray topic."""
    from stridegen.jobs.build import run_build
    from stridegen.run.config import load_build_config

    src = open_log(two_scene_log)
    names = {s.token: s.name for s in src.scenes()}
    overrides = [
        "segmenter.name=projected_box",
        "keyframes.start_s=2",
        "keyframes.end_s=5",
        "anonymize.faces=false",
        "anonymize.plates=false",
    ]
    built = {}
    for name in ("nuscenes", *CONTAINERS):
        log = two_scene_log
        if name != "nuscenes":
            log = tmp_path / f"rec-{name}"
            write_ros_log(src, log, name, name_by_token=True)
        cfg = load_build_config(None, [*overrides, f"log.format={'nuscenes' if name == 'nuscenes' else 'ros'}"])
        result = run_build(log, tmp_path / name, cfg)
        assert result.ok, [r.reason for r in result.failed]
        built[name] = _qa_rows(tmp_path / name, names)
    assert len(built["nuscenes"]) > 500
    for container in CONTAINERS:
        assert built[container] == built["nuscenes"], container


@pytest.mark.parametrize("columns", [None, 64], ids=["per-point-times", "column-stamped"])
def test_deskewed_sweeps_equal_the_generator_sweeps(source: Path, tmp_path: Path, columns: int | None) -> None:
    """Sweeps written as a 10 Hz spinning LiDAR on the moving ego sees them (each point at its azimuth time, or
    at its azimuth column's: the de-skew's repeated-time path) come back de-skewed to the generator's
    instantaneous sweep; read raw they are smeared by the ego motion."""
    from stridegen.logs.ros.deskew import _Repeats
    from stridegen.logs.ros.pointcloud2 import decode_pointcloud2
    from stridegen.logs.synthetic.ros_writer import column_times

    src = open_log(source)
    write_ros_log(src, tmp_path / "skewed", "ros2-mcap", scenes=["scene-0000"], skew_period_s=0.1, skew_columns=columns)
    reader = RosReader(tmp_path / "skewed")
    worst = smear = 0.0
    for fa, fb in zip(src.scene("scene-0000").frames, reader.scene("scene-0000").frames, strict=True):
        truth = fa.lidar("LIDAR_TOP")
        if columns:  # stored column after column
            truth = truth[column_times(truth[:, :3].astype(np.float64), 0.1, columns)[1]]
        got = fb.lidar("LIDAR_TOP")
        worst = max(worst, float(np.abs(got[:, :3] - truth[:, :3]).max()))
        np.testing.assert_array_equal(got[:, 3:], truth[:, 3:])
        ref = reader._ref(fb.sensors["LIDAR_TOP"])
        raw = decode_pointcloud2(ref.recording.read(ref.topic, ref.receive_ns, ref.header_ns), "t")
        assert raw.times_s is not None and raw.times_s.min() < -0.09
        assert (_Repeats.of(raw.times_s) is not None) == bool(columns)
        smear = max(smear, float(np.abs(raw.points[:, :3] - truth[:, :3]).max()))
    assert worst < 1e-4  # float32 storage of the skewed points
    assert smear > 0.1  # the ego moves several m/s: the raw sweep is visibly skewed


# ---------------------------------------------------------------------------------------------- bad recordings


def _one_scene(source: Path):
    return open_log(source).scene("scene-0000")


def _write(tmp_path: Path, messages, container: str = "ros2-mcap", empty=()) -> Path:
    root = tmp_path / "log"
    root.mkdir(exist_ok=True)
    name = "rec.bag" if container == "ros1" else "rec"
    write_recording(root / name, container, messages, empty)
    return root


def _check(root: Path, **extra):
    from stridegen.logs.check import check_log
    from stridegen.run.config import load_build_config

    cfg = load_build_config(None, ["segmenter.name=projected_box", "log.format=ros"])
    return check_log(root, cfg.check_settings(), **extra)


def _codes(report, severity: str = "warning") -> set[str]:
    return {f.code for f in report.findings if f.severity == severity}


def test_camera_without_camera_info(source: Path, tmp_path: Path, capsys) -> None:
    messages = [m for m in scene_messages(_one_scene(source), "tf", None, True) if m[0] != "/CAM_FRONT/camera_info"]
    root = _write(tmp_path, messages)
    reader = RosReader(root)
    assert "/CAM_FRONT/image/compressed: camera without CameraInfo (left out" in capsys.readouterr().err
    assert "CAM_FRONT" not in reader.scene("rec").frames[0].sensors
    assert "ros_camera_without_info" in _codes(_check(root))
    named = RosReader(root, {"cameras": {"/CAM_FRONT/image/compressed": "CAM_FRONT"}})
    with pytest.raises(LogFormatError, match="camera /CAM_FRONT/image/compressed has no CameraInfo topic"):
        named.scene("rec")


def test_broken_tf_chain_fails_the_scene(source: Path, tmp_path: Path) -> None:
    from stridegen.logs.ros.types import make

    messages = scene_messages(_one_scene(source), "tf", None, True)
    static = next(m for m in messages if m[0] == "/tf_static")

    def without_lidar(store):
        msg = static[3](store)
        return make(
            store, "tf2_msgs/msg/TFMessage", transforms=[t for t in msg.transforms if t.child_frame_id != "LIDAR_TOP"]
        )

    messages = [(*static[:3], without_lidar) if m is static else m for m in messages]
    root = _write(tmp_path, messages)
    with pytest.raises(LogFormatError, match="broken tf chain: no static link joins 'LIDAR_TOP'"):
        RosReader(root).scene("rec")
    report = _check(root)
    assert "ros_broken_tf" in _codes(report)
    assert report.scene_errors("rec"), report.findings  # the scene is a recorded failure, the check goes on


def test_unknown_image_encoding(source: Path, tmp_path: Path) -> None:
    from stridegen.logs.ros.types import make

    messages = scene_messages(_one_scene(source), "tf", None, True)

    def qoi(build):
        def edited(store):
            msg = build(store)
            return make(
                store,
                "sensor_msgs/msg/CompressedImage",
                header=msg.header,
                format="qoi",
                data=np.frombuffer(b"qoif" + bytes(60), np.uint8),
            )

        return edited

    messages = [(*m[:3], qoi(m[3])) if m[0] == "/CAM_BACK/image/compressed" else m for m in messages]
    root = _write(tmp_path, messages)
    frame = RosReader(root).scene("rec").frames[0]
    with pytest.raises(UnknownEncodingError, match="CompressedImage of format 'qoi' is neither JPEG nor PNG"):
        frame.image_bytes("CAM_BACK")
    assert "ros_unknown_encoding" in _codes(_check(root, deep=False))


@pytest.mark.parametrize("container", ["ros1", "ros2-sqlite3"])
def test_unsorted_stamps_are_sorted_and_reported(source: Path, tmp_path: Path, container: str) -> None:
    """LiDAR messages received in reverse stamp order: frames come in stamp order, the check says so."""
    scene = _one_scene(source)
    messages = scene_messages(scene, "tf", None, True)
    lidar = [m for m in messages if m[0] == "/LIDAR_TOP/points"]
    receive = [m[2] for m in lidar][::-1]
    swapped = {id(m): (*m[:2], r, m[3]) for m, r in zip(lidar, receive, strict=True)}
    root = _write(tmp_path, [swapped.get(id(m), m) for m in messages], container)
    frames = RosReader(root).scene("rec").frames
    assert [f.timestamp_us for f in frames] == [f.timestamp_us for f in scene.frames]
    np.testing.assert_array_equal(frames[0].lidar(), scene.frames[0].lidar())
    assert "ros_stamps_not_monotonic" in _codes(_check(root))


def test_dropped_frames_cut_the_scene(two_scene_log: Path, tmp_path: Path) -> None:
    """One LiDAR sweep missing from 16 (2 Hz): a 1 s gap, above 1.5 periods, cuts the scene in two."""
    scene = open_log(two_scene_log).scene("scene-0000")
    dropped = scene.frames[8].timestamp_us * 1000
    messages = [
        m
        for m in scene_messages(scene, "tf", None, False)
        if m[0] in ("/tf", "/tf_static") or (m[0] == "/LIDAR_TOP/points" and m[2] != dropped)
    ]
    root = _write(tmp_path, messages)
    reader = RosReader(root)
    assert [n for n, _ in reader.scene_ids()] == ["rec-000", "rec-001"]
    assert [len(reader.scene(n).frames) for n in ("rec-000", "rec-001")] == [8, 7]
    assert "ros_gap" in _codes(_check(root, deep=False))
    longer = RosReader(root, {"max_gap_periods": 2.5})
    assert [n for n, _ in longer.scene_ids()] == ["rec"]


def test_empty_topic_is_reported(source: Path, tmp_path: Path) -> None:
    messages = scene_messages(_one_scene(source), "tf", None, True)
    root = _write(tmp_path, messages, "ros1", empty=[("/radar/points", "sensor_msgs/msg/PointCloud2")])
    reader = RosReader(root)
    assert list(reader.mappings["rec"].lidars) == ["/LIDAR_TOP/points"]
    assert len(reader.scene("rec").frames) == 4
    assert "ros_empty_topic" in _codes(_check(root))


def test_poses_from_odometry_and_none(source: Path, tmp_path: Path) -> None:
    scene = _one_scene(source)
    root = _write(tmp_path, scene_messages(scene, "odometry", None, True))
    frames = RosReader(root).scene("rec").frames
    for fa, fb in zip(scene.frames, frames, strict=True):
        np.testing.assert_allclose(fb.T_global_from_ego, fa.T_global_from_ego, atol=POSE_ATOL)
    bare = tmp_path / "bare"
    bare.mkdir()
    write_recording(bare / "rec", "ros2-mcap", scene_messages(scene, "none", None, True))
    with pytest.raises(InvalidPoseError, match="stridegen calibrate poses"):
        RosReader(bare).scene("rec")
    assert "ros_no_poses" in _codes(_check(bare))
    identity = RosReader(bare, {"poses": "none"}).scene("rec")
    np.testing.assert_array_equal(identity.frames[1].T_global_from_ego, np.eye(4))
