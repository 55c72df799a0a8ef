"""Boxes of ROS recordings (stridegen/logs/ros/boxes.py): the simple box topic (visualization_msgs/MarkerArray of
CUBE markers) reads as the same boxes as vision_msgs/Detection3DArray, matched by the markers' own stamps; its
automatic choice and mapping key; and ``num_lidar_pts`` counted from the sweep, against a hand-built case and the
generator's truth."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stridegen.core.errors import ConfigError, LogFormatError
from stridegen.logs import open_log

pytest.importorskip("rosbags")

from stridegen.core.transforms import make_transform, quat_to_rotmat, rotmat_to_quat
from stridegen.logs.ros.boxes import BOX_MARGIN_M, SceneBoxes, frame_annotations
from stridegen.logs.ros.reader import RosReader
from stridegen.logs.ros.types import make
from stridegen.logs.synthetic.ros_writer import scene_messages, write_recording, write_ros_log
from stridegen.logs.synthetic.ros_writer_boxes import MARKERS_TOPIC

MARKERS = "visualization_msgs/msg/MarkerArray"


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two synthetic scenes of 2 s (4 frames each at 2 Hz), tiny cameras."""
    from stridegen.logs.synthetic.generator import generate_dataset

    root = tmp_path_factory.mktemp("ros-boxes-source") / "log"
    generate_dataset(root, scenes=2, seconds=2.0, seed=3, width=48, height=27, progress=False)
    return root


def _annotations(reader, scene: str) -> list:
    return [f.annotations() for f in reader.scene(scene).frames]


def _assert_same(a, b) -> None:
    """Two frames' annotations equal: same boxes, in the same order, bit for bit."""
    assert a.boxes.track_id.tolist() == b.boxes.track_id.tolist()
    for name in ("center", "size_lwh", "yaw", "velocity"):
        np.testing.assert_array_equal(getattr(b.boxes, name), getattr(a.boxes, name), err_msg=name)
    assert b.boxes.label.tolist() == a.boxes.label.tolist()
    assert b.category.tolist() == a.category.tolist()
    np.testing.assert_array_equal(b.num_lidar_pts, a.num_lidar_pts)


@pytest.mark.parametrize("container", ["ros2-mcap", "ros1"])
def test_marker_boxes_read_as_the_detection3d_boxes(source: Path, tmp_path: Path, container: str, capsys) -> None:
    """The same log written with its boxes as Detection3DArray and as MarkerArray: the same annotations (ROS 1 and
    ROS 2 spell Marker differently), and the markers' topic is found without a mapping, with a warning."""
    src = open_log(source)
    write_ros_log(src, tmp_path / "det", container)
    write_ros_log(src, tmp_path / "mk", container, box_format="markers")
    det, mk = RosReader(tmp_path / "det"), RosReader(tmp_path / "mk")
    assert "/boxes/markers: boxes read from its CUBE markers" in capsys.readouterr().err
    boxes = 0
    for scene in ("scene-0000", "scene-0001"):
        assert mk.mappings[scene].boxes == MARKERS_TOPIC
        for a, b in zip(_annotations(det, scene), _annotations(mk, scene), strict=True):
            _assert_same(a, b)
            boxes += len(b)
    assert boxes > 20
    assert (
        RosReader(tmp_path / "mk", {"boxes": "none"}).scene("scene-0000").frames[0].annotations().boxes.center.size == 0
    )


def _marker(store, stamp_ns: int, frame_id: str, T: np.ndarray, scale, ns: str, id_: int, text: str = "", **kw):
    q = rotmat_to_quat(T[:3, :3])
    fields = {
        "header": make(
            store,
            "std_msgs/msg/Header",
            stamp=make(store, "builtin_interfaces/msg/Time", sec=stamp_ns // 10**9, nanosec=stamp_ns % 10**9),
            frame_id=frame_id,
        ),
        "ns": ns,
        "id": id_,
        "type": kw.get("type", 1),
        "action": kw.get("action", 0),
        "pose": make(
            store,
            "geometry_msgs/msg/Pose",
            position=make(store, "geometry_msgs/msg/Point", x=T[0, 3], y=T[1, 3], z=T[2, 3]),
            orientation=make(store, "geometry_msgs/msg/Quaternion", x=q[1], y=q[2], z=q[3], w=q[0]),
        ),
        "scale": make(store, "geometry_msgs/msg/Vector3", x=scale[0], y=scale[1], z=scale[2]),
        "color": make(store, "std_msgs/msg/ColorRGBA", r=1.0, g=0.0, b=0.0, a=1.0),
        "lifetime": make(store, "builtin_interfaces/msg/Duration", sec=0, nanosec=0),
        "frame_locked": False,
        "points": [],
        "colors": [],
        "texture_resource": "",
        "texture": make(
            store,
            "sensor_msgs/msg/CompressedImage",
            header=make(
                store,
                "std_msgs/msg/Header",
                stamp=make(store, "builtin_interfaces/msg/Time", sec=0, nanosec=0),
                frame_id="",
            ),
            format="",
            data=np.zeros(0, np.uint8),
        ),
        "uv_coordinates": [],
        "text": text,
        "mesh_resource": "",
        "mesh_file": make(store, "visualization_msgs/msg/MeshFile", filename="", data=np.zeros(0, np.uint8)),
        "mesh_use_embedded_materials": False,
    }
    return make(store, "visualization_msgs/msg/Marker", **fields)


def _base_messages(source: Path):
    scene = open_log(source).scene("scene-0000")
    return scene, [m for m in scene_messages(scene, "tf", None, False)]


def test_hand_written_markers_latency_labels_and_frames(source: Path, tmp_path: Path) -> None:
    """Markers as a perception stack publishes them: received 300 ms after their stamp (more than half the 2 Hz
    LiDAR period, so matching by receive time would miss every frame), a DELETEALL first, a TEXT label beside each
    cube, no ``text`` on the cube (track id ``<ns>/<id>``), one array stamped 0 (RViz's "latest": its receive time),
    and boxes in the LiDAR frame. Each box comes back where it was put, at the frame of its stamp."""
    scene, messages = _base_messages(source)
    frames = scene.frames
    lidar = frames[0].sensors["LIDAR_TOP"].calibration.T_ego_from_sensor
    T_sensor_box = make_transform(quat_to_rotmat(np.array([np.cos(0.2), 0.0, 0.0, np.sin(0.2)])), [6.0, -2.0, 0.5])
    latency = 300_000_000

    def array(k: int, stamp: int):
        def build(store):
            return make(
                store,
                MARKERS,
                markers=[
                    _marker(store, stamp, "", np.eye(4), (0.0, 0.0, 0.0), "", 0, action=3),
                    _marker(store, stamp, "LIDAR_TOP", T_sensor_box, (4.5, 1.9, 1.6), "vehicle.car", 7),
                    _marker(store, stamp, "LIDAR_TOP", T_sensor_box, (0.0, 0.0, 1.0), "vehicle.car", 7, "car", type=9),
                ],
            )

        return build

    for k, frame in enumerate(frames):
        ns = frame.timestamp_us * 1000
        stamp = 0 if k == 2 else ns  # frame 2's array is stamped 0 and received at the frame time
        messages.append((MARKERS_TOPIC, MARKERS, ns if k == 2 else ns + latency, array(k, stamp)))
    root = tmp_path / "log"
    root.mkdir()
    write_recording(root / "rec", "ros2-mcap", messages)
    reader = RosReader(root)
    assert reader.mappings["rec"].boxes == MARKERS_TOPIC
    got = reader.scene("rec").frames
    for frame, frame_b in zip(frames, got, strict=True):
        ann = frame_b.annotations()
        assert ann.boxes.track_id.tolist() == ["vehicle.car/7"]
        assert ann.boxes.label.tolist() == ["car"] and ann.category.tolist() == ["vehicle.car"]
        T = frame.T_global_from_ego @ lidar @ T_sensor_box
        np.testing.assert_allclose(ann.boxes.center[0], T[:3, 3], atol=1e-9)
        np.testing.assert_allclose(ann.boxes.size_lwh[0], [4.5, 1.9, 1.6])
        np.testing.assert_allclose(np.cos(ann.boxes.yaw[0] - np.arctan2(T[1, 0], T[0, 0])), 1.0, atol=1e-12)


def test_marker_topic_choice_and_mapping_key(source: Path, tmp_path: Path) -> None:
    """A MarkerArray of line strips (lanes) is not taken as boxes; naming it under boxes: is refused with its type;
    a bad box size names the marker."""
    scene, messages = _base_messages(source)
    ns = scene.frames[0].timestamp_us * 1000

    def lanes(store):
        return make(
            store, MARKERS, markers=[_marker(store, ns, "base_link", np.eye(4), (0.1, 0.0, 0.0), "lane", 0, type=4)]
        )

    def bad(store):
        return make(store, MARKERS, markers=[_marker(store, ns, "base_link", np.eye(4), (4.0, -1.0, 1.5), "car", 3)])

    root = tmp_path / "log"
    root.mkdir()
    write_recording(root / "rec", "ros2-mcap", [*messages, ("/lanes", MARKERS, ns, lanes), ("/bad", MARKERS, ns, bad)])
    reader = RosReader(root)
    assert reader.mappings["rec"].boxes == "/bad"  # cubes: taken (the lanes are not)
    with pytest.raises(
        LogFormatError, match=r"/bad at \d+ ns marker 0 \(ns 'car', id 3\): box size .* not finite and positive"
    ):
        reader.scene("rec").frames[0].annotations()
    with pytest.raises(ConfigError, match="boxes: /tf is a tf2_msgs/msg/TFMessage topic, not one of"):
        RosReader(root, {"boxes": "/tf"})
    assert RosReader(root, {"boxes": "/lanes"}).scene("rec").frames[0].annotations().boxes.center.size == 0


# ---------------------------------------------------------------------------------------------- num_lidar_pts


def test_num_lidar_pts_of_a_hand_built_box() -> None:
    """A box 4 x 2 x 1.5 m, yawed 30 deg and pitched 10 deg: the points put inside it, on its faces and up to 1 cm
    beyond them count; those 2 cm beyond, or inside its yaw-only twin but outside it, do not."""
    yaw, pitch = np.radians(30.0), np.radians(10.0)
    Rz = np.array([[np.cos(yaw), -np.sin(yaw), 0], [np.sin(yaw), np.cos(yaw), 0], [0, 0, 1]])
    Ry = np.array([[np.cos(pitch), 0, np.sin(pitch)], [0, 1, 0], [-np.sin(pitch), 0, np.cos(pitch)]])
    R = Rz @ Ry
    center = np.array([10.0, -3.0, 1.0])
    half = np.array([2.0, 1.0, 0.75])
    local = np.array(
        [
            [0.0, 0.0, 0.0],  # in: centre
            [1.9, 0.9, 0.7],  # in: near a corner
            [half[0] + 0.005, 0.0, 0.0],  # in: 5 mm beyond the front face (within the margin)
            [0.0, -half[1] - 0.009, 0.0],  # in: 9 mm beyond the right face
            [0.0, 0.0, half[2]],  # in: on the top face
            [half[0] + 0.02, 0.0, 0.0],  # out: 2 cm beyond the front face
            [0.0, 0.0, -half[2] - 0.02],  # out: 2 cm below
            [-half[0] - BOX_MARGIN_M - 1e-4, 0.5, 0.0],  # out: just past the margin
        ]
    )
    world = local @ R.T + center
    # out: the front face's top edge of the yaw-only box (pitch 0), which the pitched box leaves outside
    world = np.vstack([world, Rz @ [1.95, 0.0, 0.74] + center])
    boxes = SceneBoxes(
        frame=np.array([0]),
        center=center[None],
        size=2.0 * half[None],
        rotation=rotmat_to_quat(R)[None],
        velocity=np.zeros((1, 3)),
        category=["vehicle.car"],
        track=["a"],
    )
    ann = frame_annotations(boxes, 0, "f", world)
    assert ann.num_lidar_pts.tolist() == [5]
    assert frame_annotations(boxes, 0, "f", None).num_lidar_pts.tolist() == [0]


def test_num_lidar_pts_against_the_generator_truth(source: Path, tmp_path: Path) -> None:
    """The generator counts the LiDAR returns on each box (its ray hits); the reader counts the sweep's points
    inside the box (+1 cm). Range noise (sigma 2 cm) puts a return on a face up to a few cm in front of it: at
    normal incidence a return counts when its noise is >= -1 cm, probability Phi(0.5) = 0.69 (more at oblique
    incidence). So each count is at most the truth, is positive exactly when the truth is, and the total is at
    least ~0.66 of the truth's (0.69 less four standard errors of a proportion over ~5000 returns)."""
    src = open_log(source)
    write_ros_log(src, tmp_path / "rec", "ros2-mcap")
    reader = RosReader(tmp_path / "rec")
    got, truth = [], []
    for scene in src.scenes():
        for fa, fb in zip(scene.frames, reader.scene(scene.name).frames, strict=True):
            a, b = fa.annotations(), fb.annotations()
            oa, ob = np.argsort(a.boxes.track_id.astype(str)), np.argsort(b.boxes.track_id.astype(str))
            truth += a.num_lidar_pts[oa].tolist()
            got += b.num_lidar_pts[ob].tolist()
    got_a, truth_a = np.array(got), np.array(truth)
    assert truth_a.sum() > 3000
    assert np.all(got_a <= truth_a)
    np.testing.assert_array_equal(got_a > 0, truth_a > 0)
    assert 0.66 <= got_a.sum() / truth_a.sum() <= 1.0


@pytest.mark.slow
def test_marker_boxes_build_the_detection3d_build_qa(two_scene_log: Path, tmp_path: Path) -> None:
    """The same two scenes as recordings (named by scene token, so a build draws the same), boxes once as
    Detection3DArray and once as MarkerArray: the two builds' QA tables are equal row for row."""
    from stridegen.jobs.build import run_build
    from stridegen.run.config import load_build_config
    from stridegen.shards.reader import Dataset

    src = open_log(two_scene_log)
    overrides = [
        "segmenter.name=projected_box",
        "keyframes.start_s=2",
        "keyframes.end_s=5",
        "anonymize.faces=false",
        "anonymize.plates=false",
        "log.format=ros",
    ]
    built = {}
    for box_format in ("detection3d", "markers"):
        log = tmp_path / f"rec-{box_format}"
        write_ros_log(src, log, "ros2-mcap", name_by_token=True, box_format=box_format)
        result = run_build(log, tmp_path / box_format, load_build_config(None, overrides))
        assert result.ok, [r.reason for r in result.failed]
        rows = []
        ds = Dataset(tmp_path / box_format)
        try:
            for view in ds:
                qa = view.qa
                assert qa is not None
                rows += [
                    (view.name, str(i), str(q), str(a), repr(float(v)))
                    for i, q, a, v in zip(qa.question_id, qa.question, qa.answer, qa.gt_value, strict=True)
                ]
        finally:
            ds.close()
        built[box_format] = sorted(rows)
    assert len(built["detection3d"]) > 500
    assert built["markers"] == built["detection3d"]


@pytest.mark.parametrize("container", ["ros1", "ros2-mcap"])
def test_read_many_gives_what_read_gives_message_by_message(source: Path, tmp_path: Path, container: str) -> None:
    """Recording.read_many (matched_arrays' one pass) returns, for every key, the message ``read`` returns alone;
    a key with no message is an error naming it."""
    from stridegen.logs.ros.recording import Recording

    write_ros_log(open_log(source), tmp_path / "rec", container, scenes=["scene-0000"])
    path = next(p for p in (tmp_path / "rec").iterdir() if not p.name.startswith("."))
    rec = Recording(path)
    topic = "/detections"
    keys = rec.stamps(topic)[1:]  # not from the first message
    assert len(keys) >= 3
    many = rec.read_many(topic, keys)
    assert list(many) == [(h, r) for h, r in keys]
    for header_ns, receive_ns in keys:
        one = rec.read(topic, receive_ns, header_ns)
        got = many[(header_ns, receive_ns)]
        assert len(got.detections) == len(one.detections)
        for a, b in zip(got.detections, one.detections, strict=True):
            assert a.bbox.center.position.x == b.bbox.center.position.x and a.id == b.id
    with pytest.raises(LogFormatError, match="no /detections message"):
        rec.read_many(topic, [*keys, (keys[0][0] + 1, keys[0][1])])
