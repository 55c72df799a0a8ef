"""Write any stridegen log as ROS recordings: a ROS 2 MCAP bag, a ROS 1 bag or a ROS 2 sqlite3 bag per scene
(tests of the ROS reader against another one, and a way for users to see what the reader expects).

One recording per scene, named by the scene name: ``<out>/<scene>.bag`` (``ros1``), ``<out>/<scene>/`` with
``metadata.yaml`` and ``<scene>_0.mcap`` or ``<scene>_0.db3`` (``ros2-mcap``, ``ros2-sqlite3``: what
``ros2 bag record`` writes). Receive time = header stamp. Topics (docs/ros.md, "Recording checklist"):

- ``/tf_static`` (``tf2_msgs/TFMessage``, once, at the first stamp): ``base_link`` -> each sensor's frame, named by
  its channel (``T_ego_from_sensor``).
- the ego poses at every sensor sample's own time, as ``/tf`` (``map`` -> ``base_link``, ``poses="tf"``), as
  ``/odom`` (``nav_msgs/Odometry``, ``poses="odometry"``) or not at all (``poses="none"``).
- ``/<LIDAR>/points`` (``sensor_msgs/PointCloud2``, frame = channel): the key sweep, fields x, y, z, intensity
  (float32), ring (uint16), t (float32, seconds relative to the stamp). With ``skew_period_s`` the sweep is written
  as a spinning LiDAR would see it from a moving ego: each point gets its azimuth time
  (``stridegen.calibration.deskew.azimuth_times``, the sweep ending at the stamp) and is moved into the sensor
  frame of that time (poses interpolated as the reader does); the reader's de-skew gives the source sweep back.
- ``/<CAM>/image/compressed`` (``sensor_msgs/CompressedImage``, the source's JPEG bytes unchanged) and
  ``/<CAM>/camera_info`` (``sensor_msgs/CameraInfo``, ``plumb_bob`` with zero D: the source images are pinhole).
- ``/detections`` (``vision_msgs/Detection3DArray``, frame ``base_link``, at the frame time): the ground-truth
  boxes in the ego frame; ``results[0].hypothesis.class_id`` = category, score 1; ``id`` = track id. With
  ``box_format="markers"`` instead ``/boxes/markers`` (``visualization_msgs/MarkerArray``, the simple box topic):
  one CUBE marker per box, ``ns`` = category, ``text`` = track id, ``id`` = the track's number in the recording
  (``ros_writer_boxes``).

rosbags (the ``ros`` extra) is imported when a recording is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.calibration.deskew import azimuth_times
from stridegen.core.errors import ConfigError, LogFormatError
from stridegen.core.transforms import rotmat_to_quat
from stridegen.logs._common import scenes_named
from stridegen.logs.base import Frame, LogReader, Scene, SensorSample
from stridegen.logs.ros.poses import PoseTrack
from stridegen.logs.ros.types import make, require_rosbags, typestore

CONTAINERS = ("ros2-mcap", "ros1", "ros2-sqlite3")
POSE_SOURCES = ("tf", "odometry", "none")
EGO_FRAME = "base_link"
MAP_FRAME = "map"
BOX_FORMATS = ("detection3d", "markers")
# sensor_msgs/PointField datatypes (sensor_msgs/msg/PointField.msg).
FLOAT32, UINT16 = 7, 4


@dataclass
class RosWriteSummary:
    """What ``write_ros_log`` wrote."""

    container: str
    recordings: list[Path] = field(default_factory=list)
    messages: dict[str, int] = field(default_factory=dict)  # topic -> count, over every recording


def recording_path(out_root: Path, scene_name: str, container: str) -> Path:
    """Where the recording of one scene goes."""
    return out_root / (f"{scene_name}.bag" if container == "ros1" else scene_name)


def write_ros_log(
    reader: LogReader,
    out_root: str | Path,
    container: str = "ros2-mcap",
    scenes: Sequence[str] | None = None,
    poses: str = "tf",
    skew_period_s: float | None = None,
    boxes: bool = True,
    name_by_token: bool = False,
    box_format: str = "detection3d",
    skew_columns: int | None = None,
) -> RosWriteSummary:
    """Write the scenes of ``reader`` (all, or those named in ``scenes``) as recordings under ``out_root``.

    ``container``: one of ``CONTAINERS``; ``poses``: one of ``POSE_SOURCES``; ``boxes``: write the boxes, as
    ``box_format`` (one of ``BOX_FORMATS``: ``/detections`` Detection3DArray or ``/boxes/markers`` MarkerArray);
    ``name_by_token``: name each recording by the scene's token instead of its name (the ROS reader's scene token
    is the recording's name, and a build seeds its draws from the scene token: a copy named by token builds the
    same questions as its source). ``skew_columns`` (with ``skew_period_s``): the sweep stamped column by column
    (``column_times``: every point of one of ``skew_columns`` azimuth columns shares its column's time, the points
    stored column after column, as a LiDAR that fires its channels together) instead of each point at its own
    azimuth time.
    An existing recording is refused (FileExistsError).
    """
    if container not in CONTAINERS:
        raise ConfigError(f"container {container!r} is not one of {list(CONTAINERS)}")
    if poses not in POSE_SOURCES:
        raise ConfigError(f"poses {poses!r} is not one of {list(POSE_SOURCES)}")
    if box_format not in BOX_FORMATS:
        raise ConfigError(f"box_format {box_format!r} is not one of {list(BOX_FORMATS)}")
    require_rosbags()
    chosen = scenes_named(reader, scenes)
    out = Path(out_root)
    out.mkdir(parents=True, exist_ok=True)
    summary = RosWriteSummary(container)
    for scene in chosen:
        path = recording_path(out, scene.token if name_by_token else scene.name, container)
        if path.exists():
            raise FileExistsError(f"{path} exists")
        messages = scene_messages(scene, poses, skew_period_s, boxes, box_format, skew_columns)
        write_recording(path, container, messages)
        summary.recordings.append(path)
        for topic, _, _, _ in messages:
            summary.messages[topic] = summary.messages.get(topic, 0) + 1
    return summary


# A message to write: (topic, msgtype, receive time ns, fields builder taking the store).
RosMessage = tuple[str, str, int, Any]


def write_recording(
    path: Path, container: str, messages: list[RosMessage], empty_topics: Sequence[tuple[str, str]] = ()
) -> None:
    """Write ``messages`` (``scene_messages``, possibly edited: tests of bad recordings) in receive-time order as
    one recording; ``empty_topics``: (topic, msgtype) connections declared without any message."""
    ros1 = container == "ros1"
    store = typestore(ros1)
    messages = sorted(messages, key=lambda m: m[2])  # stable: same-time messages keep their order
    if ros1:
        from rosbags.rosbag1 import Writer as Writer1

        writer1 = Writer1(path)
        writer1.set_compression(Writer1.CompressionFormat.LZ4)
        with writer1:
            conns1: dict[str, Any] = {}
            for topic, msgtype in empty_topics:
                conns1[topic] = writer1.add_connection(topic, msgtype, typestore=store)
            for topic, msgtype, time_ns, build in messages:
                if topic not in conns1:
                    latching = 1 if topic == "/tf_static" else None
                    conns1[topic] = writer1.add_connection(topic, msgtype, typestore=store, latching=latching)
                writer1.write(conns1[topic], time_ns, store.serialize_ros1(build(store), msgtype))
        return
    from rosbags.rosbag2 import StoragePlugin
    from rosbags.rosbag2 import Writer as Writer2

    plugin = StoragePlugin.MCAP if container == "ros2-mcap" else StoragePlugin.SQLITE3
    with Writer2(path, version=9, storage_plugin=plugin) as writer2:
        conns2: dict[str, Any] = {}
        for topic, msgtype in empty_topics:
            conns2[topic] = writer2.add_connection(topic, msgtype, typestore=store)
        for topic, msgtype, time_ns, build in messages:
            if topic not in conns2:
                conns2[topic] = writer2.add_connection(topic, msgtype, typestore=store)
            writer2.write(conns2[topic], time_ns, store.serialize_cdr(build(store), msgtype))


def _time(store: Any, ns: int) -> Any:
    return make(store, "builtin_interfaces/msg/Time", sec=int(ns) // 1_000_000_000, nanosec=int(ns) % 1_000_000_000)


def _header(store: Any, ns: int, frame_id: str) -> Any:
    return make(store, "std_msgs/msg/Header", stamp=_time(store, ns), frame_id=frame_id)


def _pose(store: Any, T: np.ndarray) -> Any:
    q = rotmat_to_quat(np.asarray(T, dtype=np.float64)[:3, :3])
    t = np.asarray(T, dtype=np.float64)[:3, 3]
    return make(
        store,
        "geometry_msgs/msg/Pose",
        position=make(store, "geometry_msgs/msg/Point", x=float(t[0]), y=float(t[1]), z=float(t[2])),
        orientation=make(
            store, "geometry_msgs/msg/Quaternion", x=float(q[1]), y=float(q[2]), z=float(q[3]), w=float(q[0])
        ),
    )


def _transform(store: Any, ns: int, parent: str, child: str, T: np.ndarray) -> Any:
    pose = _pose(store, T)
    p = pose.position
    return make(
        store,
        "geometry_msgs/msg/TransformStamped",
        header=_header(store, ns, parent),
        child_frame_id=child,
        transform=make(
            store,
            "geometry_msgs/msg/Transform",
            translation=make(store, "geometry_msgs/msg/Vector3", x=p.x, y=p.y, z=p.z),
            rotation=pose.orientation,
        ),
    )


def scene_messages(
    scene: Scene,
    poses: str,
    skew_period_s: float | None,
    boxes: bool,
    box_format: str = "detection3d",
    skew_columns: int | None = None,
) -> list[RosMessage]:
    """Every message of one scene's recording (boxes as ``box_format``, one of ``BOX_FORMATS``; ``skew_columns``:
    ``write_ros_log``'s)."""
    samples: list[SensorSample] = [s for f in scene.frames for s in f.sensors.values()]
    if not samples:
        raise LogFormatError(scene.name, "scene has no sensor sample")
    first_ns = min(s.timestamp_us for s in samples) * 1000
    calibrations = {s.channel: s.calibration for s in samples}
    statics = [(EGO_FRAME, c, cal.T_ego_from_sensor) for c, cal in calibrations.items()]
    out: list[RosMessage] = [
        (
            "/tf_static",
            "tf2_msgs/msg/TFMessage",
            first_ns,
            lambda st: make(
                st,
                "tf2_msgs/msg/TFMessage",
                transforms=[_transform(st, first_ns, p, c, T) for p, c, T in statics],
            ),
        )
    ]
    pose_at: dict[int, np.ndarray] = {}
    for s in samples:
        pose_at.setdefault(s.timestamp_us * 1000, s.T_global_from_ego)
    for f in scene.frames:
        pose_at.setdefault(f.timestamp_us * 1000, f.T_global_from_ego)
    stamps = sorted(pose_at)
    track = PoseTrack(Path(scene.name), np.array(stamps, dtype=np.int64), np.stack([pose_at[t] for t in stamps]))
    track_numbers: dict[str, int] = {}
    from stridegen.logs.synthetic.ros_writer_boxes import detections_message, markers_message  # imports this module

    for ns in stamps:
        out += _pose_message(poses, ns, pose_at[ns])
    for frame in scene.frames:
        for sample in frame.sensors.values():
            ns = sample.timestamp_us * 1000
            if sample.calibration.modality == "lidar":
                out.append(_cloud_message(frame, sample, ns, track, skew_period_s, skew_columns))
            elif sample.calibration.is_camera:
                out += _camera_messages(frame, sample, ns)
        if boxes:
            out.append(markers_message(frame, track_numbers) if box_format == "markers" else detections_message(frame))
    return out


def _pose_message(poses: str, ns: int, T: np.ndarray) -> list[RosMessage]:
    if poses == "tf":
        return [
            (
                "/tf",
                "tf2_msgs/msg/TFMessage",
                ns,
                lambda st: make(st, "tf2_msgs/msg/TFMessage", transforms=[_transform(st, ns, MAP_FRAME, EGO_FRAME, T)]),
            )
        ]
    if poses == "odometry":

        def odometry(st: Any) -> Any:
            covariance = np.zeros(36, dtype=np.float64)
            return make(
                st,
                "nav_msgs/msg/Odometry",
                header=_header(st, ns, MAP_FRAME),
                child_frame_id=EGO_FRAME,
                pose=make(st, "geometry_msgs/msg/PoseWithCovariance", pose=_pose(st, T), covariance=covariance),
                twist=make(
                    st,
                    "geometry_msgs/msg/TwistWithCovariance",
                    twist=make(
                        st,
                        "geometry_msgs/msg/Twist",
                        linear=make(st, "geometry_msgs/msg/Vector3", x=0.0, y=0.0, z=0.0),
                        angular=make(st, "geometry_msgs/msg/Vector3", x=0.0, y=0.0, z=0.0),
                    ),
                    covariance=covariance,
                ),
            )

        return [("/odom", "nav_msgs/msg/Odometry", ns, odometry)]
    return []


def column_times(points_sensor: np.ndarray, period_s: float, columns: int) -> tuple[np.ndarray, np.ndarray]:
    """A column-stamped spinning LiDAR: each point's time is that of its azimuth column (``columns`` equal
    columns a turn, the column's first azimuth: ``azimuth_times`` quantised), and the order that stores the
    points column after column (stable: a column keeps the points' order). Returns (times [N] s, order [N])."""
    turned = -azimuth_times(points_sensor, period_s) / period_s  # fraction of the turn still to go, [0, 1)
    column = np.minimum(np.floor(turned * columns), columns - 1)
    order = np.argsort(-column, kind="stable")  # the earliest column (most still to turn) first
    return (-column / columns * period_s)[order], order


def _cloud_message(
    frame: Frame,
    sample: SensorSample,
    ns: int,
    track: PoseTrack,
    skew_period_s: float | None,
    skew_columns: int | None = None,
) -> RosMessage:
    points = frame.reader.load_points(sample)
    xyz = points[:, :3].astype(np.float64)
    n = xyz.shape[0]
    times: np.ndarray = np.zeros(n, dtype=np.float64)
    if skew_period_s and skew_columns:
        times, order = column_times(xyz, skew_period_s, skew_columns)
        points, xyz = points[order], xyz[order]
    elif skew_period_s:
        times = azimuth_times(xyz, skew_period_s)
    if skew_period_s:
        T_ego_from_sensor = sample.calibration.T_ego_from_sensor
        T_ref = sample.T_global_from_ego @ T_ego_from_sensor
        stamps, inverse = np.unique(ns + np.round(times * 1e9).astype(np.int64), return_inverse=True)
        # The sensor pose at each point's time; the first sweep's points precede the first pose: the reader's
        # extrapolation rule (stridegen.logs.ros.poses) covers them.
        reach = int(skew_period_s * 1e9) + 1
        T_at = track.T_global_from_ego(stamps, extrapolate_ns=reach) @ T_ego_from_sensor
        T_point_from_ref = np.einsum("nij,jk->nik", np.linalg.inv(T_at), T_ref)[inverse.reshape(-1)]
        xyz = np.einsum("nij,nj->ni", T_point_from_ref[:, :3, :3], xyz) + T_point_from_ref[:, :3, 3]
        times = (stamps[inverse.reshape(-1)] - ns) * 1e-9
    ring = points[:, 4] if points.shape[1] > 4 else np.zeros(n, np.float32)
    record = np.zeros(
        n,
        dtype=np.dtype(
            {
                "names": ["x", "y", "z", "intensity", "ring", "t"],
                "formats": ["<f4", "<f4", "<f4", "<f4", "<u2", "<f4"],
                "offsets": [0, 4, 8, 12, 16, 20],
                "itemsize": 24,
            }
        ),
    )
    record["x"], record["y"], record["z"] = xyz[:, 0], xyz[:, 1], xyz[:, 2]
    record["intensity"] = points[:, 3]
    record["ring"] = np.clip(ring, 0, 65535).astype(np.uint16)
    record["t"] = times
    data = np.frombuffer(record.tobytes(), dtype=np.uint8)
    channel = sample.channel

    def build(st: Any) -> Any:
        fields = [
            make(st, "sensor_msgs/msg/PointField", name=name, offset=off, datatype=dt, count=1)
            for name, off, dt in (
                ("x", 0, FLOAT32),
                ("y", 4, FLOAT32),
                ("z", 8, FLOAT32),
                ("intensity", 12, FLOAT32),
                ("ring", 16, UINT16),
                ("t", 20, FLOAT32),
            )
        ]
        return make(
            st,
            "sensor_msgs/msg/PointCloud2",
            header=_header(st, ns, channel),
            height=1,
            width=n,
            fields=fields,
            is_bigendian=False,
            point_step=24,
            row_step=24 * n,
            data=data,
            is_dense=True,
        )

    return (f"/{channel}/points", "sensor_msgs/msg/PointCloud2", ns, build)


def _camera_messages(frame: Frame, sample: SensorSample, ns: int) -> list[RosMessage]:
    channel = sample.channel
    data = np.frombuffer(frame.image_bytes(channel), dtype=np.uint8)
    fmt = "jpeg" if data[:2].tobytes() == b"\xff\xd8" else "png"
    calib = sample.calibration
    K = np.asarray(calib.intrinsic, dtype=np.float64)
    P = np.hstack([K, np.zeros((3, 1))])

    def image(st: Any) -> Any:
        return make(st, "sensor_msgs/msg/CompressedImage", header=_header(st, ns, channel), format=fmt, data=data)

    def info(st: Any) -> Any:
        roi = make(st, "sensor_msgs/msg/RegionOfInterest", x_offset=0, y_offset=0, height=0, width=0, do_rectify=False)
        return make(
            st,
            "sensor_msgs/msg/CameraInfo",
            header=_header(st, ns, channel),
            height=int(calib.height or 0),
            width=int(calib.width or 0),
            distortion_model="plumb_bob",
            d=np.zeros(5, dtype=np.float64),
            k=K.reshape(-1),
            r=np.eye(3).reshape(-1),
            p=P.reshape(-1),
            binning_x=0,
            binning_y=0,
            roi=roi,
        )

    return [
        (f"/{channel}/image/compressed", "sensor_msgs/msg/CompressedImage", ns, image),
        (f"/{channel}/camera_info", "sensor_msgs/msg/CameraInfo", ns, info),
    ]


def synth_recordings(
    out: str | Path,
    container: str,
    scenes: int,
    seconds: float,
    seed: int,
    width: int,
    height: int,
    rig: str = "nuscenes",
    overwrite: bool = False,
) -> RosWriteSummary:
    """``stridegen synth --format <container>``: a synthetic log generated in a temporary folder next to ``out``
    and written as one recording per scene under ``out`` (named by scene)."""
    import shutil
    import tempfile

    from stridegen.logs import open_log
    from stridegen.logs.synthetic.generator import OutputExistsError, generate_dataset

    if container not in CONTAINERS:
        raise ConfigError(f"--format {container!r} is not nuscenes or one of {list(CONTAINERS)}")
    target = Path(out)
    if target.exists() and any(target.iterdir()):
        if not overwrite:
            raise OutputExistsError(f"{target} is not empty (pass --overwrite to replace it)")
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".synth-", dir=target.parent) as tmp:
        source = Path(tmp) / "nuscenes"
        generate_dataset(
            source, scenes=scenes, seconds=seconds, seed=seed, width=width, height=height, rig=rig, progress=False
        )
        return write_ros_log(open_log(source, "nuscenes"), target, container)
