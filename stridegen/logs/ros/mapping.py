"""Which topics of a recording are the LiDARs, the cameras, the poses and the boxes: found by message type and
frame id, overridable by a small YAML file (docs/ros.md, "Mapping file").

The mapping file is ``stridegen-ros.yaml`` in the log root (or, for a root that is one recording, next to it).
Every key is optional::

    lidars: {/os1/points: LIDAR_TOP}        # topic -> channel; the first is the reference of each frame
    cameras: {/cam_front/image_raw: CAM_FRONT}
    camera_info: {/cam_front/image_raw: /cam_front/camera_info}
    ego_frame: base_link
    global_frame: map
    poses: tf                                # tf | /odom topic | /pose topic | /gps/fix topic | none
    imu: /imu/data                           # orientation for GNSS poses
    boxes: /detections                       # a Detection3DArray or MarkerArray (CUBE) topic | none
    scene_length_s: 20
    max_gap_periods: 1.5                     # a LiDAR interval above this many periods cuts the scene
    undistort: true
    deskew: true                             # de-skew sweeps that have per-point times

Automatic: LiDARs are the PointCloud2 topics, named by their frame id (upper case); cameras the Image and
CompressedImage topics (a camera with both keeps the compressed one), named by frame id, each with the CameraInfo
topic of its namespace (``/ns/image_raw`` -> ``/ns/camera_info``), else of its frame id; the ego frame is
``base_link``; poses from /tf when a dynamic link reaches the ego frame, else the first Odometry, PoseStamped or
NavSatFix topic; boxes from the first Detection3DArray topic, else the first MarkerArray topic whose first message
is boxes (``boxes.looks_like_boxes``: CUBE markers, with at most labels, arrows and deletions beside them; a
warning names it, ``boxes: none`` turns it off).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stridegen.core.errors import ConfigError
from stridegen.logs.ros.boxes import BOX_TYPES, DETECTIONS, MARKERS, looks_like_boxes
from stridegen.logs.ros.recording import Recording

MAPPING_FILE = "stridegen-ros.yaml"
POINTCLOUD = "sensor_msgs/msg/PointCloud2"
IMAGE_TYPES = ("sensor_msgs/msg/CompressedImage", "sensor_msgs/msg/Image")
CAMERA_INFO = "sensor_msgs/msg/CameraInfo"
POSE_TYPES = (
    "nav_msgs/msg/Odometry",
    "geometry_msgs/msg/PoseStamped",
    "geometry_msgs/msg/PoseWithCovarianceStamped",
    "sensor_msgs/msg/NavSatFix",
)
_KEYS = {
    "lidars",
    "cameras",
    "camera_info",
    "ego_frame",
    "global_frame",
    "poses",
    "imu",
    "boxes",
    "scene_length_s",
    "max_gap_periods",
    "undistort",
    "deskew",
}


@dataclass
class TopicMapping:
    """The resolved mapping of one recording."""

    lidars: dict[str, str]  # topic -> channel
    cameras: dict[str, str]  # topic -> channel
    camera_info: dict[str, str]  # image topic -> CameraInfo topic
    ego_frame: str = "base_link"
    global_frame: str | None = None
    poses: str = "tf"
    imu: str | None = None
    boxes: str | None = None
    scene_length_s: float = 20.0
    max_gap_periods: float = 1.5
    undistort: bool = True
    deskew: bool = True
    warnings: list[str] = field(default_factory=list)  # what the automatic mapping left out, and why


def mapping_file(root: Path) -> Path:
    return (root if root.is_dir() and not (root / "metadata.yaml").is_file() else root.parent) / MAPPING_FILE


def load_mapping_file(root: Path) -> dict[str, Any]:
    """The user's mapping (empty without a file); ConfigError naming the file for an unknown key or bad value."""
    path = mapping_file(root)
    if not path.is_file():
        return {}
    import yaml

    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of keys {sorted(_KEYS)}")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown keys {unknown}; known: {sorted(_KEYS)}")
    for key in ("lidars", "cameras", "camera_info"):
        if key in data and not isinstance(data[key], dict):
            raise ConfigError(f"{path}: {key} must map topics to names, got {data[key]!r}")
    return data


def _channel(frame_id: str, topic: str) -> str:
    name = (frame_id.strip("/") or topic.strip("/")).upper()
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def resolve_mapping(recording: Recording, user: dict[str, Any]) -> TopicMapping:
    """The mapping of a recording: ``user`` keys win, the rest automatic (module docstring)."""
    topics = recording.topics
    warnings: list[str] = []
    by_type: dict[str, list[str]] = {}
    for name, (msgtype, *_rest) in topics.items():
        by_type.setdefault(msgtype, []).append(name)

    def check_topics(key: str, names: list[str]) -> None:
        missing = [t for t in names if t not in topics]
        if missing:
            raise ConfigError(f"{mapping_file(recording.path)}: {key} names topics {missing} the recording lacks")

    if "lidars" in user:
        lidars = {str(k): str(v) for k, v in user["lidars"].items()}
        check_topics("lidars", list(lidars))
    else:
        lidars = {t: _channel(topics[t][2], t) for t in by_type.get(POINTCLOUD, []) if topics[t][1] > 0}
        warnings += [
            f"{t}: PointCloud2 topic without messages" for t in by_type.get(POINTCLOUD, []) if not topics[t][1]
        ]
    infos = by_type.get(CAMERA_INFO, [])
    if "cameras" in user:
        cameras = {str(k): str(v) for k, v in user["cameras"].items()}
        check_topics("cameras", list(cameras))
    else:
        cameras = {}
        seen: dict[str, str] = {}
        for msgtype in IMAGE_TYPES:
            for t in by_type.get(msgtype, []):
                if not topics[t][1]:
                    warnings.append(f"{t}: image topic without messages")
                    continue
                channel = _channel(topics[t][2], t)
                if channel in seen:
                    warnings.append(f"{t}: camera {channel} also has {seen[channel]} (kept)")
                    continue
                seen[channel] = t
                cameras[t] = channel
    camera_info = {str(k): str(v) for k, v in user.get("camera_info", {}).items()}
    for t in list(cameras):
        if t in camera_info:
            continue
        info = _camera_info_for(t, topics[t][2], infos, topics)
        if info is None:
            if "cameras" in user:
                continue  # the reader refuses it with its reason
            warnings.append(f"{t}: camera without CameraInfo (left out: no intrinsics)")
            del cameras[t]
        else:
            camera_info[t] = info
    imu_found: list[str | None] = [*by_type.get("sensor_msgs/msg/Imu", []), None]
    if "boxes" in user:
        boxes = None if user["boxes"] in (None, "none") else str(user["boxes"])
        if boxes is not None:
            check_topics("boxes", [boxes])
            if topics[boxes][0] not in BOX_TYPES:
                raise ConfigError(
                    f"{mapping_file(recording.path)}: boxes: {boxes} is a {topics[boxes][0]} topic, not one of "
                    f"{list(BOX_TYPES)}"
                )
    else:
        boxes = _auto_boxes(recording, by_type, warnings)
    return TopicMapping(
        lidars=lidars,
        cameras=cameras,
        camera_info=camera_info,
        ego_frame=str(user.get("ego_frame", "base_link")),
        global_frame=user.get("global_frame"),
        poses=str(user.get("poses", "auto")),
        imu=user.get("imu", imu_found[0]),
        boxes=boxes,
        scene_length_s=float(user.get("scene_length_s", 20.0)),
        max_gap_periods=float(user.get("max_gap_periods", 1.5)),
        undistort=bool(user.get("undistort", True)),
        deskew=bool(user.get("deskew", True)),
        warnings=warnings,
    )


def _camera_info_for(image_topic: str, frame_id: str, infos: list[str], topics: dict[str, Any]) -> str | None:
    """The CameraInfo topic of an image topic: same namespace first, then same frame id; only topics with
    messages."""
    infos = [t for t in infos if topics[t][1] > 0]
    namespace = image_topic.rsplit("/", 1)[0]
    while namespace:
        candidate = f"{namespace}/camera_info"
        if candidate in infos:
            return candidate
        namespace = namespace.rsplit("/", 1)[0]
    same_frame = [t for t in infos if topics[t][2] == frame_id and frame_id]
    return same_frame[0] if same_frame else None


def _auto_boxes(recording: Recording, by_type: dict[str, list[str]], warnings: list[str]) -> str | None:
    """The first Detection3DArray topic, else the first MarkerArray topic whose first message is boxes (module
    docstring), with a warning that names it."""
    topics = recording.topics
    detections = by_type.get(DETECTIONS, [])
    if detections:
        return detections[0]
    for t in by_type.get(MARKERS, []):
        if not topics[t][1]:
            continue
        try:
            first = recording.first(t)
        except Exception as exc:  # rosbags' own errors for a message that does not match its definition
            warnings.append(f"{t}: first message undecodable ({type(exc).__name__}), not read as boxes")
            continue
        if looks_like_boxes(first):
            warnings.append(f"{t}: boxes read from its CUBE markers (put boxes: none in {MAPPING_FILE} to ignore)")
            return t
    return None
