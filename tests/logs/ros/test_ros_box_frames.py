"""Boxes published in a frame other than the ego frame (stridegen/logs/ros/boxes.py, ``frame_poses``): in ``odom``
under a moving map -> odom link, in ``map``, in a sensor frame, each comes back at the source's global box; a box in
a frame the ego poses do not reach is an error naming it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stridegen.core.errors import LogFormatError

pytest.importorskip("rosbags")

from stridegen.core.transforms import invert_transform, make_transform, quat_to_rotmat
from stridegen.logs.ros.reader import RosReader
from stridegen.logs.ros.tf import pose_of, transform_of
from stridegen.logs.ros.types import make
from stridegen.logs.synthetic.ros_writer import _pose, _transform, scene_messages, write_recording
from stridegen.logs.synthetic.ros_writer_boxes import detections_message

DETECTIONS = "vision_msgs/msg/Detection3DArray"


def _T_map_odom(ns: int) -> np.ndarray:
    """A map -> odom link that drifts: 3 m and 20 deg at the start, growing with time (localisation corrections)."""
    t = (ns % 10**11) * 1e-9
    yaw = np.radians(20.0) + 0.05 * t
    q = np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])
    return make_transform(quat_to_rotmat(q), [3.0 + 0.4 * t, -1.5, 0.2])


def _recording(scene, tmp_path: Path, box_frame: str, chain: str) -> Path:
    """The scene with its boxes in ``box_frame`` and its poses as the tf chain ``chain``: "map-odom" (map -> odom
    -> base_link, both dynamic) or "odom" (odom -> base_link only)."""
    messages = []
    lidar = scene.frames[0].sensors["LIDAR_TOP"].calibration.T_ego_from_sensor
    for m in scene_messages(scene, "tf", None, False):
        if m[0] != "/tf":
            messages.append(m)
            continue
        ns = m[2]

        def tf(store, build=m[3], ns=ns):
            T = transform_of(build(store).transforms[0].transform, "t")
            if chain == "odom":
                return make(store, "tf2_msgs/msg/TFMessage", transforms=[_transform(store, ns, "odom", "base_link", T)])
            M = _T_map_odom(ns)
            links = [
                _transform(store, ns, "map", "odom", M),
                _transform(store, ns, "odom", "base_link", invert_transform(M) @ T),
            ]
            return make(store, "tf2_msgs/msg/TFMessage", transforms=links)

        messages.append((*m[:3], tf))
    for frame in scene.frames:
        topic, msgtype, ns, build = detections_message(frame)
        T_global_ego = frame.T_global_from_ego
        T_frame_from_ego = {
            "map": T_global_ego,
            "odom": invert_transform(_T_map_odom(ns)) @ T_global_ego,
            "LIDAR_TOP": invert_transform(lidar),
        }[box_frame]

        def boxes(store, build=build, T_frame_from_ego=T_frame_from_ego):
            msg = build(store)
            for det in msg.detections:
                det.header.frame_id = box_frame
                det.bbox.center = _pose(store, T_frame_from_ego @ pose_of(det.bbox.center, "t"))
            msg.header.frame_id = box_frame
            return msg

        messages.append((topic, msgtype, ns, boxes))
    root = tmp_path / "log"
    root.mkdir()
    write_recording(root / "rec", "ros2-mcap", messages)
    return root


@pytest.mark.parametrize("box_frame", ["odom", "map", "LIDAR_TOP"])
def test_boxes_in_another_frame_come_back_at_the_global_box(scene, tmp_path: Path, box_frame: str) -> None:
    """map -> odom moves (3 m, 20 deg and drifting): a box in odom must be moved by it at its stamp, not taken as
    global; a box in map is global; one in the LiDAR frame goes through the ego pose and the static link."""
    reader = RosReader(_recording(scene, tmp_path, box_frame, "map-odom"))
    frames = reader.scene("rec").frames
    for fa, fb in zip(scene.frames, frames, strict=True):
        np.testing.assert_allclose(fb.T_global_from_ego, fa.T_global_from_ego, atol=1e-9)
        a, b = fa.annotations(), fb.annotations()
        assert len(a) and b.boxes.track_id.tolist() == a.boxes.track_id.tolist()
        np.testing.assert_allclose(b.boxes.center, a.boxes.center, atol=1e-9)
        np.testing.assert_allclose(np.cos(b.boxes.yaw - a.boxes.yaw), 1.0, atol=1e-12)
        np.testing.assert_array_equal(b.boxes.size_lwh, a.boxes.size_lwh)


def test_boxes_in_a_frame_the_poses_do_not_reach(scene, tmp_path: Path) -> None:
    """Poses odom -> base_link, boxes in map, and no tf link between map and odom: an error naming both, not the
    boxes taken as if map were odom."""
    reader = RosReader(_recording(scene, tmp_path, "map", "odom"))
    frame = reader.scene("rec").frames[0]
    with pytest.raises(
        LogFormatError, match=r"boxes in frame 'map', which no tf link joins to the ego pose chain odom -> base_link"
    ):
        frame.annotations()


def test_frame_poses_with_gnss_and_identity_poses() -> None:
    """GNSS poses (a local ENU frame no tf frame names): a box in the LiDAR frame goes through the ego pose and the
    static link, one in map is an error; identity poses (``poses: none``): map is the ego frame."""
    from stridegen.logs.ros.boxes import frame_poses
    from stridegen.logs.ros.poses import PoseTrack
    from stridegen.logs.ros.tf import ChainPoses, TfTree

    tree = TfTree(Path("rec"))
    T_ego_lidar = make_transform(quat_to_rotmat(np.array([np.cos(0.3), 0.0, 0.0, np.sin(0.3)])), [1.0, 0.0, 1.8])
    tree.add("base_link", "lidar", T_ego_lidar)
    poses_T = np.stack([make_transform(np.eye(3), [x, 2.0, 0.0]) for x in (0.0, 10.0)])
    gnss = ChainPoses(Path("rec"), [PoseTrack(Path("rec"), np.array([0, 10**9]), poses_T)], "GNSS (ENU)")
    lookup = frame_poses(gnss, tree, "base_link", None, 0, "rec /boxes")
    np.testing.assert_allclose(lookup("lidar", 5 * 10**8), make_transform(np.eye(3), [5.0, 2.0, 0.0]) @ T_ego_lidar)
    with pytest.raises(LogFormatError, match=r"rec /boxes: boxes in frame 'map', but the ego poses are GNSS \(ENU\)"):
        lookup("map", 0)
    identity = frame_poses(None, tree, "base_link", None, 0, "rec /boxes")
    np.testing.assert_array_equal(identity("map", 0), np.eye(4))
    np.testing.assert_array_equal(identity("", 0), np.eye(4))
    np.testing.assert_allclose(identity("/lidar", 0), T_ego_lidar)
