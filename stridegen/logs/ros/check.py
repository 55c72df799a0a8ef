"""The log check of ROS recordings: per topic its type, count, rate and gaps, and the recording mistakes with
their likely causes (``stridegen check`` on a recording; docs/ros.md).

Every finding here is a warning about the whole log: what makes a scene unbuildable (a broken tf chain, no
poses, no LiDAR) is the reader's error when that scene is checked or built, so a recording whose other scenes
are fine still builds them. Codes:

- ``ros_empty_topic``: a topic with a connection and no message;
- ``ros_camera_without_info``: an image topic without CameraInfo (left out: its intrinsics are unknown);
- ``ros_unknown_encoding``: an image topic whose encoding the reader cannot decode;
- ``ros_stamps_not_monotonic``: header stamps that go back in receive order (the reader sorts them);
- ``ros_duplicate_stamps``: messages of one topic with the same header stamp (the first is kept);
- ``ros_stamp_mismatch``: header stamps more than ``STAMP_MISMATCH_S`` from the receive times;
- ``ros_gap``: intervals above the mapping's ``max_gap_periods`` sensor periods (dropped frames; scenes cut there);
- ``ros_broken_tf``: a mapped sensor's frame id not joined to the ego frame by static tf;
- ``ros_no_poses``: no pose source (the scenes fail; ``stridegen calibrate poses``);
- ``ros_no_point_times``: a LiDAR without per-point times (its sweeps are not de-skewed);
- ``ros_camera_info_changed``: a camera's CameraInfo changes during the recording (a recalibration, a resolution
  switch): each scene uses the one in force, a scene with a change inside it fails (``camera_info``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from stridegen.core.errors import StrideGenError
from stridegen.logs.check.findings import WARNING, Finding
from stridegen.logs.ros.camera_info import CameraModel, calibration_change, camera_info_messages, camera_model
from stridegen.logs.ros.images import RAW_ENCODINGS
from stridegen.logs.ros.mapping import IMAGE_TYPES, POSE_TYPES, TopicMapping
from stridegen.logs.ros.recording import Recording

if TYPE_CHECKING:
    from stridegen.logs.ros.reader import RosReader

STAMP_MISMATCH_S = 1.0  # a sensor's driver stamps its messages within milliseconds of their arrival
SENSOR_TYPES = ("sensor_msgs/msg/PointCloud2", *IMAGE_TYPES)


@dataclass
class TopicStats:
    """One topic of one recording."""

    recording: str
    topic: str
    msgtype: str
    count: int
    frame_id: str
    rate_hz: float | None  # 1 / median header-stamp interval
    gaps: int  # intervals above max_gap_periods periods
    max_gap_s: float | None
    backwards: int  # header stamps smaller than the previous one (receive order)
    duplicates: int
    stamp_offset_s: float | None  # median receive - header
    detail: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def topic_stats(rec: Recording, mapping: TopicMapping) -> list[TopicStats]:
    """Stats of every topic of a recording (stamps from its index)."""
    out = []
    for topic, (msgtype, count, frame_id, stamped, detail) in rec.topics.items():
        rows = np.array(rec.stamps(topic), dtype=np.int64).reshape(-1, 2)
        header, receive = rows[:, 0], rows[:, 1]
        backwards = int(np.count_nonzero(np.diff(header) < 0)) if stamped else 0
        unique = np.unique(header)
        duplicates = int(header.size - unique.size) if stamped else 0
        rate = gap_count = max_gap = None
        if unique.size >= 2:
            steps = np.diff(unique)
            period = float(np.median(steps))
            rate = 1e9 / period if period > 0 else None
            big = steps > mapping.max_gap_periods * period
            gap_count, max_gap = int(np.count_nonzero(big)), float(steps.max()) * 1e-9
        offset = float(np.median(receive - header)) * 1e-9 if stamped and header.size else None
        out.append(
            TopicStats(
                rec.name,
                topic,
                msgtype,
                count,
                frame_id,
                rate,
                gap_count or 0,
                max_gap,
                backwards,
                duplicates,
                offset,
                detail,
            )
        )
    return out


def recording_findings(reader: RosReader) -> list[Finding]:
    """The warnings of every recording of the reader (module docstring)."""
    out: list[Finding] = []
    for rec in reader.recordings:
        mapping = reader.mappings[rec.name]
        out += _findings(reader, rec, mapping)
    return out


def _warn(code: str, message: str, cause: str, rec: Recording) -> Finding:
    return Finding(WARNING, code, message, cause, None, str(rec.path))


def _findings(reader: RosReader, rec: Recording, mapping: TopicMapping) -> list[Finding]:
    out = []
    stats = topic_stats(rec, mapping)
    for s in stats:
        if s.count == 0:
            out.append(
                _warn(
                    "ros_empty_topic",
                    f"{s.topic} ({s.msgtype}) has no message",
                    "the publisher was declared but never published (driver not started, or wrong QoS)",
                    rec,
                )
            )
            continue
        if s.msgtype in IMAGE_TYPES and not _known_encoding(s):
            out.append(
                _warn(
                    "ros_unknown_encoding",
                    f"{s.topic}: images are {s.detail!r}, which the reader cannot decode (JPEG / PNG or "
                    f"{', '.join(RAW_ENCODINGS)})",
                    "a depth or video stream (compressedDepth, H.264) or a vendor encoding: record the camera's "
                    "image_raw or its JPEG compressed topic",
                    rec,
                )
            )
        if s.msgtype not in SENSOR_TYPES and s.msgtype not in POSE_TYPES:
            continue
        if s.backwards:
            out.append(
                _warn(
                    "ros_stamps_not_monotonic",
                    f"{s.topic}: {s.backwards} header stamp(s) go back in receive order (the reader sorts by stamp)",
                    "several publishers on one topic, a driver restamping with another clock, or messages "
                    "merged from several bags",
                    rec,
                )
            )
        if s.duplicates:
            out.append(
                _warn(
                    "ros_duplicate_stamps",
                    f"{s.topic}: {s.duplicates} message(s) repeat an earlier header stamp (the first is kept)",
                    "a driver that does not stamp each message (a fixed or stale stamp), or a topic recorded twice",
                    rec,
                )
            )
        if s.stamp_offset_s is not None and abs(s.stamp_offset_s) > STAMP_MISMATCH_S:
            out.append(
                _warn(
                    "ros_stamp_mismatch",
                    f"{s.topic}: header stamps are {s.stamp_offset_s:+.3f} s (median) from the receive times",
                    "the sensor stamps with its own clock (not synchronised by PTP / NTP), or use_sim_time during "
                    "recording; sensors matched by stamp may be paired wrongly",
                    rec,
                )
            )
        if s.gaps and s.msgtype in SENSOR_TYPES:
            out.append(
                _warn(
                    "ros_gap",
                    f"{s.topic}: {s.gaps} gap(s) above {mapping.max_gap_periods} periods, the longest "
                    f"{s.max_gap_s:.3f} s at {s.rate_hz:.3g} Hz (scenes are cut at the reference LiDAR's)",
                    "dropped frames: a full disk or network, a recorder that could not keep up (record with "
                    "compression off or a larger cache), or a sensor restart",
                    rec,
                )
            )
    for warning in mapping.warnings:
        if "without CameraInfo" in warning:
            out.append(
                _warn(
                    "ros_camera_without_info",
                    warning,
                    "the camera_info topic was not recorded (record <camera>/camera_info with the images)",
                    rec,
                )
            )
    out += _tf_and_pose_findings(reader, rec, mapping)
    out += _camera_info_findings(reader, rec, mapping)
    for topic in mapping.lidars:
        first = rec.first(topic)
        names = {str(f.name) for f in first.fields} if first is not None else set()
        from stridegen.logs.ros.pointcloud2 import TIME_NAMES

        if first is not None and not names & set(TIME_NAMES):
            out.append(
                _warn(
                    "ros_no_point_times",
                    f"{topic}: no per-point time field ({', '.join(TIME_NAMES)}): sweeps are not de-skewed",
                    "the driver was configured without per-point timestamps; a moving ego smears each sweep "
                    "(up to speed x sweep period)",
                    rec,
                )
            )
    return out


def _known_encoding(s: TopicStats) -> bool:
    if s.msgtype.endswith("CompressedImage"):
        return s.detail in ("jpeg", "png")
    return s.detail in RAW_ENCODINGS


def _tf_and_pose_findings(reader: RosReader, rec: Recording, mapping: TopicMapping) -> list[Finding]:
    out: list[Finding] = []
    cut = next((c for c in reader.cuts() if c.recording is rec), None)
    if cut is None:
        return out
    try:
        tree, poses = reader.tf_and_poses(cut)
    except StrideGenError as exc:
        code = "ros_no_poses" if "calibrate poses" in str(exc) else "ros_broken_tf"
        return [_warn(code, str(exc), "see the message", rec)]
    if poses is None:
        out.append(
            _warn(
                "ros_no_poses",
                "read with identity ego poses (mapping poses: none)",
                "no pose source was recorded; estimate poses with `stridegen calibrate poses`",
                rec,
            )
        )
    for topic in [*mapping.lidars, *mapping.cameras]:
        frame_id = rec.topics[topic][2]
        try:
            tree.T_from(mapping.ego_frame, frame_id)
        except StrideGenError as exc:
            out.append(
                _warn(
                    "ros_broken_tf",
                    f"{topic}: {exc}",
                    "the robot_state_publisher (or static_transform_publisher) was not running while recording, "
                    "or the frame_id of the driver differs from the URDF's link name",
                    rec,
                )
            )
    return out


def _camera_info_findings(reader: RosReader, rec: Recording, mapping: TopicMapping) -> list[Finding]:
    """One ``ros_camera_info_changed`` per camera whose CameraInfo changes beyond the tolerances, with each
    change's stamp, what changed and the scene it falls inside (that scene fails)."""
    out: list[Finding] = []
    cuts = [c for c in reader.cuts() if c.recording is rec]
    for image_topic in mapping.cameras:
        info_topic = mapping.camera_info.get(image_topic)
        if info_topic is None or info_topic not in rec.topics:
            continue
        changes: list[str] = []
        previous: CameraModel | None = None
        for stamp, msg in camera_info_messages(rec, info_topic):
            try:
                model = camera_model(msg, f"{rec.path} {info_topic} at {stamp} ns")
            except StrideGenError:
                continue  # unusable: the scenes it is in force in fail with its reason
            change = None if previous is None else calibration_change(previous, model)
            previous = model
            if change is None:
                continue
            inside = [c.name for c in cuts if c.start_ns < stamp <= c.stop_ns]
            changes.append(f"at {stamp} ns: {change}" + (f" (inside scene {inside[0]}, which fails)" if inside else ""))
        if changes:
            out.append(
                _warn(
                    "ros_camera_info_changed",
                    f"{info_topic} (camera {image_topic}) changes {len(changes)} time(s): {'; '.join(changes)}",
                    "the camera was recalibrated or its driver switched resolution while recording; each scene "
                    "uses the CameraInfo in force at its first sweep, a scene with a change inside it fails",
                    rec,
                )
            )
    return out
