"""The box topics of a written recording (``ros_writer``): a frame's boxes as a ``vision_msgs/Detection3DArray`` or
as a ``visualization_msgs/MarkerArray`` of CUBE markers (the simple box topic, docs/ros.md "Boxes"), both in the
ego frame ``base_link`` at the frame time, each box with its full rotation (``ROTATION_GLOBAL`` when the log keeps
one, else its yaw).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stridegen.core.transforms import (
    invert_transform,
    quat_multiply,
    quat_to_rotmat,
    rotmat_to_quat,
    transform_points,
    yaw_to_quat,
)
from stridegen.logs.base import Frame
from stridegen.logs.box_rotation import ROTATION_GLOBAL
from stridegen.logs.ros.boxes import DETECTIONS, MARKER_ADD, MARKER_CUBE, MARKER_DELETEALL, MARKERS
from stridegen.logs.ros.types import make
from stridegen.logs.synthetic.ros_writer import EGO_FRAME, RosMessage, _header, _pose

DETECTIONS_TOPIC = "/detections"
MARKERS_TOPIC = "/boxes/markers"


def _ego_boxes(frame: Frame) -> tuple[np.ndarray, list[str], list[str]]:
    """``T_ego_from_box`` [N, 4, 4], categories and track ids of a frame's boxes."""
    ann = frame.annotations()
    T_ego_from_global = invert_transform(frame.T_global_from_ego)
    n = len(ann)
    center = transform_points(T_ego_from_global, np.asarray(ann.boxes.center, dtype=np.float64).reshape(-1, 3))
    rotation_global = ann.boxes.extras.get(ROTATION_GLOBAL)
    if rotation_global is None:
        rotation_global = yaw_to_quat(np.asarray(ann.boxes.yaw, dtype=np.float64))
    q_ego = rotmat_to_quat(T_ego_from_global[:3, :3])
    rotation = quat_multiply(np.broadcast_to(q_ego, (n, 4)), np.asarray(rotation_global).reshape(-1, 4))
    T = np.broadcast_to(np.eye(4), (n, 4, 4)).copy()
    if n:
        T[:, :3, :3] = quat_to_rotmat(rotation.reshape(n, 4))
        T[:, :3, 3] = center
    return T, [str(c) for c in ann.category], [str(t) for t in ann.boxes.track_id]


def _vector(st: Any, v: np.ndarray) -> Any:
    return make(st, "geometry_msgs/msg/Vector3", x=float(v[0]), y=float(v[1]), z=float(v[2]))


def detections_message(frame: Frame) -> RosMessage:
    """``/detections``: ``results[0].hypothesis.class_id`` = category, score 1; ``id`` = track id;
    ``bbox.size`` = (length, width, height)."""
    T, categories, tracks = _ego_boxes(frame)
    size = np.asarray(frame.annotations().boxes.size_lwh, dtype=np.float64).reshape(-1, 3)
    ns = frame.timestamp_us * 1000

    def build(st: Any) -> Any:
        detections = []
        for i in range(len(tracks)):
            pose = _pose(st, T[i])
            hypothesis = make(
                st,
                "vision_msgs/msg/ObjectHypothesisWithPose",
                hypothesis=make(st, "vision_msgs/msg/ObjectHypothesis", class_id=categories[i], score=1.0),
                pose=make(st, "geometry_msgs/msg/PoseWithCovariance", pose=pose, covariance=np.zeros(36)),
            )
            detections.append(
                make(
                    st,
                    "vision_msgs/msg/Detection3D",
                    header=_header(st, ns, EGO_FRAME),
                    results=[hypothesis],
                    bbox=make(st, "vision_msgs/msg/BoundingBox3D", center=pose, size=_vector(st, size[i])),
                    id=tracks[i],
                )
            )
        return make(st, DETECTIONS, header=_header(st, ns, EGO_FRAME), detections=detections)

    return (DETECTIONS_TOPIC, DETECTIONS, ns, build)


def markers_message(frame: Frame, track_numbers: dict[str, int]) -> RosMessage:
    """``/boxes/markers``: a DELETEALL marker (what a box publisher sends first, so RViz drops the last frame's
    boxes), then one CUBE marker per box: ``ns`` = category, ``id`` = the track's number in ``track_numbers``
    (given in order of first appearance; updated), ``text`` = track id, ``scale`` = (length, width, height),
    opaque grey."""
    T, categories, tracks = _ego_boxes(frame)
    size = np.asarray(frame.annotations().boxes.size_lwh, dtype=np.float64).reshape(-1, 3)
    numbers = [track_numbers.setdefault(t, len(track_numbers)) for t in tracks]
    ns = frame.timestamp_us * 1000

    def marker(st: Any, i: int | None) -> Any:
        pose_T = np.eye(4) if i is None else T[i]
        scale = np.zeros(3) if i is None else size[i]
        color = make(st, "std_msgs/msg/ColorRGBA", r=0.6, g=0.6, b=0.6, a=1.0)
        fields = {
            "header": _header(st, ns, EGO_FRAME),
            "ns": "" if i is None else categories[i],
            "id": 0 if i is None else numbers[i],
            "type": MARKER_CUBE,
            "action": MARKER_DELETEALL if i is None else MARKER_ADD,
            "pose": _pose(st, pose_T),
            "scale": _vector(st, scale),
            "color": color,
            "lifetime": make(st, "builtin_interfaces/msg/Duration", sec=0, nanosec=0),
            "frame_locked": False,
            "points": [],
            "colors": [],
            "text": "" if i is None else tracks[i],
            "mesh_resource": "",
            "mesh_use_embedded_materials": False,
        }
        names = {f[0] for f in st.fielddefs["visualization_msgs/msg/Marker"][1]}
        if "texture" in names:  # ROS 2 Humble's Marker has texture and mesh file fields, ROS 1's has not
            fields.update(
                texture_resource="",
                texture=make(
                    st,
                    "sensor_msgs/msg/CompressedImage",
                    header=_header(st, 0, ""),
                    format="",
                    data=np.zeros(0, np.uint8),
                ),
                uv_coordinates=[],
                mesh_file=make(st, "visualization_msgs/msg/MeshFile", filename="", data=np.zeros(0, np.uint8)),
            )
        return make(st, "visualization_msgs/msg/Marker", **fields)

    def build(st: Any) -> Any:
        return make(st, MARKERS, markers=[marker(st, None), *(marker(st, i) for i in range(len(tracks)))])

    return (MARKERS_TOPIC, MARKERS, ns, build)
