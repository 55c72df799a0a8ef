"""The ``ros`` log reader: ROS recordings (ROS 1 bags, ROS 2 bag folders, MCAP files) as scenes and frames.

Scenes. Each recording's reference LiDAR (the mapping's first) is cut into scenes of ``scene_length_s`` (default
20 s) and at sensor gaps (an interval above ``max_gap_periods`` times the median LiDAR period). A recording that
gives one scene names it after the recording; several are ``<recording>-000``, ``-001``, ... The scene token is
its name. Every reference sweep is a frame (stamped with its header stamp); the other LiDARs and the cameras are
matched to it as the AV2 reader matches cameras (the nearest message within half the sensor's period, else none:
``av2_cameras.match_nearest``), and every sample carries the ego pose interpolated at its own header stamp
(``poses.PoseTrack``, the AV2 rule; within ``MAX_EXTRAPOLATION_NS`` of the pose stream's ends the end segment is
extended). Messages are sorted by header stamp; a repeated stamp keeps its first message.

Data. A worker reads only its scene's index rows and messages (``recording.Recording``). Sweeps are decoded by
``pointcloud2`` and, when they have per-point times and the ego moves, de-skewed: each point is moved into the
sensor frame of the header stamp with the sensor's pose interpolated at its own time. Images by ``images``,
undistorted with the CameraInfo's model (``camera_info``). Extrinsics: the static tf from the ego frame to each
topic's frame id. Ego poses: module ``tf``. Without any pose source the reader refuses the recording and points
at ``stridegen calibrate poses`` (mapping ``poses: none`` reads it with identity poses for that).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.core.cache import LruCache
from stridegen.core.errors import ConfigError, InvalidPoseError, LogFormatError
from stridegen.core.transforms import make_transform, transform_points
from stridegen.logs._common import SCENE_CACHE, valid_poses
from stridegen.logs.av2_cameras import camera_period_ns, match_nearest
from stridegen.logs.base import Annotations, Frame, LogReader, Scene, SensorCalibration, SensorSample
from stridegen.logs.check.findings import Finding
from stridegen.logs.ros.boxes import SceneBoxes, frame_annotations, frame_poses, matched_arrays, scene_boxes
from stridegen.logs.ros.camera_info import CameraModel, scene_camera_model, undistort_bytes
from stridegen.logs.ros.deskew import deskew
from stridegen.logs.ros.images import COMPRESSED_IMAGE, compressed_image_bytes, image_bytes
from stridegen.logs.ros.mapping import POSE_TYPES, TopicMapping, load_mapping_file, resolve_mapping
from stridegen.logs.ros.pointcloud2 import POINTCLOUD2, decode_pointcloud2, decode_pointcloud2_bytes
from stridegen.logs.ros.poses import PoseTrack
from stridegen.logs.ros.recording import Recording, find_recordings, is_ros_layout
from stridegen.logs.ros.tf import (
    ChainPoses,
    TfTree,
    dynamic_chain,
    navsat_track,
    odometry_track,
    strip,
    transform_of,
)
from stridegen.logs.ros.window import Key, SceneCursor

MAX_EXTRAPOLATION_NS = 50_000_000  # a sample up to 50 ms past the pose stream's ends extends its end segment
POSE_MARGIN_NS = 2_000_000_000  # poses read around a scene's window
NO_POSES = (
    "no ego poses: no /tf link reaches the ego frame {ego!r} and there is no Odometry, PoseStamped or NavSatFix "
    "topic; estimate them with `stridegen calibrate poses` (put `poses: none` in stridegen-ros.yaml to read the "
    "recording with identity poses for it)"
)


@dataclass
class _Cut:
    recording: Recording
    name: str
    start_ns: int  # first frame's stamp
    stop_ns: int  # last frame's stamp


@dataclass
class _Ref:
    """Where a sample's message is."""

    recording: Recording
    topic: str
    header_ns: int
    receive_ns: int
    camera: CameraModel | None = None
    scene: str = ""  # the scene and frame index it belongs to (streamed reads: ``window``)
    frame: int = 0


@dataclass
class _SceneState:
    mapping: TopicMapping
    poses: ChainPoses | None
    tree: TfTree
    frame_ns: np.ndarray
    lidar_period_ns: int
    boxes: SceneBoxes | None = None
    frames: list[Frame] = field(default_factory=list)


class RosReader(LogReader):
    """ROS recordings under ``root`` (module docstring); ``mapping``: the mapping file's keys (default: the file's)."""

    format_name = "ros"

    def __init__(self, root: str | Path, mapping: dict[str, Any] | None = None) -> None:
        super().__init__(root)
        paths = find_recordings(self.root)
        if not paths:
            raise LogFormatError(self.root, "no ROS recording (.bag, .mcap, or a bag folder with metadata.yaml)")
        self.recordings = [Recording(p) for p in paths]
        self.user_mapping = load_mapping_file(self.root) if mapping is None else dict(mapping)
        self.mappings = {rec.name: resolve_mapping(rec, self.user_mapping) for rec in self.recordings}
        for rec in self.recordings:
            for warning in self.mappings[rec.name].warnings:
                print(f"stridegen: {rec.path}: {warning}", file=sys.stderr)
        self._cuts: list[_Cut] | None = None
        self._scene_cache: LruCache[str, Scene] = LruCache(SCENE_CACHE)
        self._refs: dict[str, _Ref] = {}
        self._states: dict[str, _SceneState] = {}
        self._cursor = SceneCursor()
        self._periods: dict[tuple[str, str], int] = {}

    # ------------------------------------------------------------------------------------------ scenes
    def cuts(self) -> list[_Cut]:
        if self._cuts is None:
            self._cuts = [c for rec in self.recordings for c in self._cut(rec)]
        return self._cuts

    def _cut(self, rec: Recording) -> list[_Cut]:
        mapping = self.mappings[rec.name]
        if not mapping.lidars:
            raise LogFormatError(rec.path, "no LiDAR topic (PointCloud2 with messages; or name one under lidars:)")
        stamps = np.unique(np.array([h for h, _ in rec.stamps(next(iter(mapping.lidars)))], dtype=np.int64))
        if stamps.size == 0:
            return []
        period = camera_period_ns(stamps)
        length_ns = int(mapping.scene_length_s * 1e9)
        starts = [0]
        for i in range(1, stamps.size):
            gap = stamps[i] - stamps[i - 1]
            if gap > mapping.max_gap_periods * period or stamps[i] - stamps[starts[-1]] >= length_ns:
                starts.append(i)
        ends = [*starts[1:], stamps.size]
        single = len(starts) == 1
        return [
            _Cut(rec, rec.name if single else f"{rec.name}-{k:03d}", int(stamps[a]), int(stamps[b - 1]))
            for k, (a, b) in enumerate(zip(starts, ends, strict=True))
        ]

    def scene_ids(self) -> list[tuple[str, str]]:
        return [(c.name, c.name) for c in self.cuts()]

    def scenes(self) -> list[Scene]:
        return [self.scene(c.name) for c in self.cuts()]

    def scene(self, name_or_token: str) -> Scene:
        for cut in self.cuts():
            if cut.name == name_or_token:
                return self._scene_cache.get(cut.name, lambda c=cut: self._make_scene(c))  # type: ignore[misc]
        raise LogFormatError(self.root, f"no scene named {name_or_token!r}; scenes: {[c.name for c in self.cuts()]}")

    def unknown_modalities(self) -> dict[str, list[str]]:
        """{}: every mapped sensor is a camera or a LiDAR."""
        return {}

    # ------------------------------------------------------------------------------------------ tf / poses
    def _tf(self, cut: _Cut, mapping: TopicMapping) -> tuple[TfTree, ChainPoses | None]:
        rec = cut.recording
        tree = TfTree(rec.path)
        links: dict[tuple[str, str], list[tuple[int, Any, str]]] = {}  # dynamic: (stamp, transform, topic)
        lo, hi = cut.start_ns - POSE_MARGIN_NS, cut.stop_ns + POSE_MARGIN_NS
        for topic, (msgtype, *_rest) in rec.topics.items():
            if msgtype != "tf2_msgs/msg/TFMessage":
                continue
            static = topic.endswith("tf_static")
            for _stamp, msg in rec.blobs(topic, None if static else lo, None if static else hi):
                for tr in msg.transforms:
                    stamp = int(tr.header.stamp.sec) * 1_000_000_000 + int(tr.header.stamp.nanosec)
                    parent, child = strip(str(tr.header.frame_id)), strip(str(tr.child_frame_id))
                    if static:
                        T = transform_of(tr.transform, f"{rec.path} {topic} {parent}->{child} at {stamp} ns")
                        tree.add(parent, child, T)
                    else:
                        links.setdefault((parent, child), []).append((stamp, tr.transform, topic))
        dynamic = {edge: _link_poses(rec.path, edge, values) for edge, values in links.items()}
        tracks = {edge: PoseTrack(rec.path, stamps, T) for edge, (stamps, T) in dynamic.items()}
        poses = self._pose_source(cut, mapping, tree, tracks)
        for (parent, child), (_stamps, T) in dynamic.items():  # off-chain dynamic links serve extrinsics (first)
            tree.add(parent, child, T[0])
        return tree, poses

    def tf_and_poses(self, cut: _Cut) -> tuple[TfTree, ChainPoses | None]:
        """The static tf tree and the ego pose source of a scene's window (the log check's view)."""
        return self._tf(cut, self.mappings[cut.recording.name])

    def log_findings(self) -> list[Finding]:
        """The recordings' warnings for the log check (``stridegen.logs.ros.check``)."""
        from stridegen.logs.ros.check import recording_findings

        return recording_findings(self)

    def _pose_source(
        self, cut: _Cut, mapping: TopicMapping, tree: TfTree, tracks: dict[tuple[str, str], PoseTrack]
    ) -> ChainPoses | None:
        rec = cut.recording
        lo, hi = cut.start_ns - POSE_MARGIN_NS, cut.stop_ns + POSE_MARGIN_NS
        choice = mapping.poses
        if choice == "none":
            return None
        if choice in ("auto", "tf"):
            chain = dynamic_chain(rec.path, tracks, tree, mapping.ego_frame, mapping.global_frame)
            if chain is not None:
                return chain
            if choice == "tf":
                raise InvalidPoseError(
                    rec.path, f"poses: tf, but no /tf link reaches the ego frame {mapping.ego_frame!r}"
                )
            candidates = [t for t, (m, count, *_r) in rec.topics.items() if m in POSE_TYPES and count > 0]
            if not candidates:
                raise InvalidPoseError(rec.path, NO_POSES.format(ego=mapping.ego_frame))
            order = {m: i for i, m in enumerate(POSE_TYPES)}
            choice = min(candidates, key=lambda t: order[rec.topics[t][0]])
        if choice not in rec.topics:
            raise ConfigError(f"poses: {choice!r} is not a topic of {rec.path}")
        msgtype = rec.topics[choice][0]
        messages = rec.blobs(choice, lo, hi)
        if not messages:
            raise InvalidPoseError(rec.path, f"pose topic {choice} has no message within 2 s of the scene {cut.name}")
        if msgtype == "sensor_msgs/msg/NavSatFix":
            imu = rec.blobs(mapping.imu, lo, hi) if mapping.imu and mapping.imu in rec.topics else []
            return navsat_track(rec.path, messages, imu, tree, mapping.ego_frame)
        return odometry_track(rec.path, messages, tree, mapping.ego_frame)

    def _poses_at(
        self, state: _SceneState, stamps: np.ndarray, extrapolate_ns: int = MAX_EXTRAPOLATION_NS
    ) -> np.ndarray:
        if state.poses is None:
            return np.broadcast_to(np.eye(4), (np.asarray(stamps).size, 4, 4)).copy()
        return state.poses.T_global_from_ego(stamps, extrapolate_ns)

    # ------------------------------------------------------------------------------------------ building
    def _make_scene(self, cut: _Cut) -> Scene:
        rec = cut.recording
        mapping = self.mappings[rec.name]
        tree, poses = self._tf(cut, mapping)
        lidar_topics = list(mapping.lidars)
        reference = lidar_topics[0]
        frame_rows = _sorted_unique(rec.stamps(reference, cut.start_ns, cut.stop_ns + 1))
        frame_ns = np.array([h for h, _ in frame_rows], dtype=np.int64)
        period = self._period(rec, reference)
        state = _SceneState(mapping, poses, tree, frame_ns, period)
        self._states[cut.name] = state
        frame_poses = self._poses_at(state, frame_ns)
        sensors: list[dict[str, SensorSample]] = [{} for _ in frame_rows]
        calibrations = {
            topic: self._calibration(
                rec, mapping, tree, topic, mapping.lidars.get(topic) or mapping.cameras[topic], cut
            )
            for topic in [*lidar_topics, *mapping.cameras]
        }
        cameras = list(mapping.cameras)
        if "cameras" not in self.user_mapping:
            cameras.sort(key=lambda t: clockwise_from_front(calibrations[t][0].T_ego_from_sensor))
        for topic in [*lidar_topics, *cameras]:
            channel = mapping.lidars.get(topic) or mapping.cameras[topic]
            calibration, camera = calibrations[topic]
            if topic == reference:
                rows = frame_rows
                index = np.arange(len(rows))
            else:
                own_period = self._period(rec, topic)
                rows = _sorted_unique(rec.stamps(topic, cut.start_ns - own_period, cut.stop_ns + own_period + 1))
                index = match_nearest(frame_ns, np.array([h for h, _ in rows], dtype=np.int64), own_period)
            matched = np.flatnonzero(index >= 0)
            stamps = np.array([rows[int(index[i])][0] for i in matched], dtype=np.int64)
            sample_poses = self._poses_at(state, stamps) if stamps.size else np.zeros((0, 4, 4))
            folder = rec.path / topic.strip("/")
            suffix = ".bin" if calibration.modality == "lidar" else ".jpg"
            for i, stamp, pose in zip(matched, stamps, sample_poses, strict=True):
                header_ns, receive_ns = rows[int(index[i])]
                token = f"{cut.name}:{channel}:{header_ns}"
                path = folder / f"{header_ns}{suffix}"
                sensors[int(i)][channel] = SensorSample(
                    token, channel, int(stamp) // 1000, path, pose, calibration, True
                )
                self._refs[token] = _Ref(rec, topic, header_ns, receive_ns, camera, cut.name, int(i))
        scene = Scene(self, cut.name, cut.name, [], "", rec.name)
        for k, (frame_stamp, _r) in enumerate(frame_rows):
            token = f"{cut.name}:{frame_stamp}"
            frame = Frame(self, token, cut.name, k, int(frame_stamp) // 1000, frame_poses[k], sensors[k])
            scene.frames.append(frame)
        state.frames = scene.frames
        return scene

    def _period(self, rec: Recording, topic: str) -> int:
        """A topic's median message period over the whole recording (``camera_period_ns``), read once."""
        key = (rec.name, topic)
        if key not in self._periods:
            stamps = np.array([h for h, _ in _sorted_unique(rec.stamps(topic))], dtype=np.int64)
            self._periods[key] = camera_period_ns(stamps)
        return self._periods[key]

    def _calibration(
        self, rec: Recording, mapping: TopicMapping, tree: TfTree, topic: str, channel: str, cut: _Cut
    ) -> tuple[SensorCalibration, CameraModel | None]:
        frame_id = strip(rec.topics[topic][2])
        if not frame_id:
            raise LogFormatError(rec.path, f"{topic}: messages have no header.frame_id: its extrinsics are unknown")
        T = tree.T_from(mapping.ego_frame, frame_id)
        if topic in mapping.lidars:
            return SensorCalibration(channel, "lidar", T), None
        info_topic = mapping.camera_info.get(topic)
        if info_topic is None:
            raise LogFormatError(rec.path, f"camera {topic} has no CameraInfo topic (name it under camera_info:)")
        model = scene_camera_model(rec, info_topic, topic, cut.start_ns, cut.stop_ns)  # the one in force
        return SensorCalibration(channel, "camera", T, model.K, model.width, model.height), model

    # ------------------------------------------------------------------------------------------ data
    def _ref(self, sample: SensorSample) -> _Ref:
        ref = self._refs.get(sample.token)
        if ref is None:
            scene = sample.token.split(":", 1)[0]
            self.scene(scene)
            ref = self._refs[sample.token]
        return ref

    def load_bytes(self, sample: SensorSample) -> bytes:
        """The camera's JPEG / PNG bytes, undistorted when its CameraInfo has a lens model (and ``undistort``)."""
        ref = self._ref(sample)
        where = f"{ref.recording.path} {ref.topic} at {ref.header_ns} ns"
        raw = self._raw(ref)
        msgtype = ref.recording.topics[ref.topic][0]
        data = compressed_image_bytes(raw, ref.recording.ros1, where) if msgtype == COMPRESSED_IMAGE else None
        if data is None:
            data = image_bytes(msgtype, ref.recording.deserialize_topic(raw, ref.topic), where)
        mapping = self.mappings[ref.recording.name]
        if ref.camera is not None and mapping.undistort:
            data = undistort_bytes(data, ref.camera, where)
        return data

    def sample_size(self, sample: SensorSample) -> int | None:
        """Bytes of the sample's serialised message (the log check's file size)."""
        ref = self._ref(sample)
        return ref.recording.size(ref.topic, ref.receive_ns, ref.header_ns)

    def sample_head(self, sample: SensorSample, limit: int) -> bytes:
        """The first ``limit`` bytes of the sample's camera bytes (``load_bytes``) or serialised message."""
        if sample.calibration.is_camera:
            try:
                return self.load_bytes(sample)[:limit]
            except LogFormatError:  # an unknown encoding: no image header (the check's unreadable_image)
                return b""
        return b""

    def load_points(self, sample: SensorSample) -> np.ndarray:
        """Sweep [N, 5] float32 in the sensor frame (x, y, z, intensity, ring), NaN points dropped, de-skewed to the
        header stamp when it has per-point times and poses."""
        ref = self._ref(sample)
        where = f"{ref.recording.path} {ref.topic} at {ref.header_ns} ns"
        raw = self._raw(ref)
        cloud = decode_pointcloud2_bytes(raw, ref.recording.ros1, where) if _is_cloud(ref) else None
        if cloud is None:  # not the standard layout: rosbags' deserialisation
            cloud = decode_pointcloud2(ref.recording.deserialize_topic(raw, ref.topic), where)
        state = self._states[sample.token.split(":", 1)[0]]
        if not state.mapping.deskew or cloud.times_s is None or state.poses is None or not np.any(cloud.times_s):
            return cloud.points
        try:
            return deskew(
                cloud.points,
                cloud.times_s,
                ref.header_ns,
                sample.calibration.T_ego_from_sensor,
                state.poses,
                MAX_EXTRAPOLATION_NS,
                out=cloud.points,
                T_global_from_ego=sample.T_global_from_ego,
            )
        except ValueError as exc:  # a NaN or infinite per-point time
            raise LogFormatError(where, f"PointCloud2 field {cloud.time_field!r}: {exc}") from None

    def _raw(self, ref: _Ref) -> Any:
        """The serialised message of a sample, read in a pass over its scene (``window``)."""

        def scene_keys() -> list[tuple[int, Key]]:
            keys = []
            for k, frame in enumerate(self._states[ref.scene].frames):
                for sample in frame.sensors.values():
                    other = self._refs.get(sample.token)
                    if other is not None and other.recording is ref.recording:
                        keys.append((k, (other.topic, other.receive_ns, other.header_ns)))
            return keys

        key = (ref.topic, ref.receive_ns, ref.header_ns)
        return self._cursor.get(ref.recording, key, ref.scene, ref.frame, scene_keys)

    def load_annotations(self, frame: Frame) -> Annotations:
        self.scene(frame.scene_token)
        state = self._states[frame.scene_token]
        if state.boxes is None:
            state.boxes = self._scene_boxes(frame.scene_token, state)
        points = None
        channels = frame.lidar_channels
        if channels and len(state.boxes.frame):
            sample = frame.sensor(channels[0])
            points = transform_points(sample.T_global_from_sensor, self.load_points(sample)[:, :3].astype(np.float64))
        return frame_annotations(state.boxes, frame.index, frame.token, points)

    def _scene_boxes(self, scene_name: str, state: _SceneState) -> SceneBoxes:
        cut = next(c for c in self.cuts() if c.name == scene_name)
        rec, topic = cut.recording, state.mapping.boxes
        if topic is None:
            return scene_boxes([], state.frame_ns, lambda f, s: np.eye(4))
        arrays = matched_arrays(rec, topic, cut.start_ns, cut.stop_ns, state.frame_ns, state.lidar_period_ns)
        where = f"{rec.path} {topic}"
        mapping = state.mapping
        T_global_from = frame_poses(
            state.poses, state.tree, mapping.ego_frame, mapping.global_frame, MAX_EXTRAPOLATION_NS, where
        )
        return scene_boxes(arrays, state.frame_ns, T_global_from, rec.topics[topic][0], where)


def _link_poses(
    source: Path, edge: tuple[str, str], values: list[tuple[int, Any, str]]
) -> tuple[np.ndarray, np.ndarray]:
    """(stamps, T_parent_from_child [N, 4, 4]) of one dynamic tf link's transforms, checked as ``transform_of``
    checks each (vectorised: ``valid_poses``; the first bad one raises its error)."""
    q = np.array([(t.rotation.w, t.rotation.x, t.rotation.y, t.rotation.z) for _s, t, _p in values], dtype=np.float64)
    p = np.array([(t.translation.x, t.translation.y, t.translation.z) for _s, t, _p in values], dtype=np.float64)
    ok = valid_poses(q, p)
    if not ok.all():
        stamp, bad, topic = values[int(np.argmin(ok))]
        where = f"{source} {topic} {edge[0]}->{edge[1]} at {stamp} ns"
        transform_of(bad, where)  # raises, naming it
        raise InvalidPoseError(source, f"{where}: invalid transform")
    return np.array([s for s, _t, _p in values], dtype=np.int64), make_transform(q, p)


def _is_cloud(ref: _Ref) -> bool:
    return bool(ref.recording.topics[ref.topic][0] == POINTCLOUD2)


def clockwise_from_front(T_ego_from_camera: np.ndarray) -> float:
    """The automatic camera order's key: the azimuth of the optical axis (camera +z) in the ego frame (x forward, y
    left), turning clockwise from the front, in [0, 2 pi). It puts a nuScenes rig in its own order (FRONT,
    FRONT_RIGHT, BACK_RIGHT, BACK, BACK_LEFT, FRONT_LEFT)."""
    axis = np.asarray(T_ego_from_camera, dtype=np.float64)[:3, 2]
    return float(np.mod(-np.arctan2(axis[1], axis[0]), 2.0 * np.pi))


def _sorted_unique(rows: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """(header_ns, receive_ns) rows sorted by header stamp, the first message of a repeated stamp kept."""
    out: dict[int, int] = {}
    for header_ns, receive_ns in rows:
        out.setdefault(header_ns, receive_ns)
    return sorted(out.items())


def open_ros(root: Path, version: str | None = None) -> RosReader:
    """The ``ros`` log reader (recordings have no table versions); the mapping from ``stridegen-ros.yaml``."""
    if version is not None:
        raise ConfigError(f"version={version!r} applies to nuScenes logs only")
    return RosReader(root)


# What stridegen.logs.detect_format asks of this reader, and names in its error when no reader knows a folder.
open_ros.detect = is_ros_layout  # type: ignore[attr-defined]
open_ros.looks_for = "ROS recordings (.bag files, .mcap files, ROS 2 bag folders with metadata.yaml)"  # type: ignore[attr-defined]
