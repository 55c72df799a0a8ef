"""Ground-truth boxes of a scene from a ``vision_msgs/Detection3DArray`` topic or a ``visualization_msgs/MarkerArray``
topic of CUBE markers (the simple box topic: every ROS install ships it, RViz draws it; docs/ros.md, "Boxes").

Matching. Each array is matched to the frame whose reference LiDAR stamp is nearest its stamp within half the LiDAR
period (the camera rule, ``av2_cameras.match_nearest``); a frame without one has no boxes. An array is the complete
set of boxes at its stamp. A Detection3DArray's stamp is its header's. A MarkerArray has no header: its stamp is its
first box marker's ``header.stamp`` (the receive time when that is 0, RViz's "latest"); its messages are looked up
by receive time from half a LiDAR period before the scene to ``MARKER_LATENCY_NS`` after it.

Detection3D. Box = ``bbox.center`` (a pose in the detection's ``header.frame_id``, else the array's) and
``bbox.size`` (x = length along the box heading, y = width, z = height), at the array's stamp. Category:
``results[0].hypothesis.class_id`` (ROS 2; ROS 1 vision_msgs 1.x ``id``). Track id: the detection's ``id``, else
``<stamp>-<position in the array>``.

Marker. A box is a marker of ``type`` CUBE (1) and ``action`` ADD (0, also MODIFY); every other marker (TEXT,
ARROW, DELETE, DELETEALL, ...) is skipped. Box = ``pose`` in the marker's ``header.frame_id`` at the marker's stamp;
``scale`` x = length (along the pose's x axis, the heading), y = width, z = height (a CUBE's scale is its full side
lengths along its own axes: RViz draws it so). Category: ``ns``. Track id: ``text`` when not empty (a CUBE's text is
not drawn, so a string track id can ride there), else ``<ns>/<id>`` (RViz keys a marker by its namespace and id).

Both. The pose is moved into the global frame with ``T_global_from(frame_id, stamp)`` (``frame_poses``: a frame
on the ego pose chain, such as ``odom`` under ``map``, by the chain's links at the stamp; a frame fixed to one of
them, such as a sensor's, through its static links; an empty frame id is the ego frame). The
nuScenes detection class is the category's (``core.vocabulary``), or the category itself when it already is a
class name. Velocities: nuScenes' rule from the track's previous / next box (``_common.neighbour_velocity``;
neither message carries one). ``num_lidar_pts``: the frame's (de-skewed) reference sweep's points inside the box
grown by ``BOX_MARGIN_M`` (``core.box_geometry.points_in_boxes``; the nuScenes and AV2 meaning of the count);
visibility unknown (0); no attribute. A box whose size is not finite and positive is refused, naming where.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from stridegen.core.box_geometry import points_in_boxes
from stridegen.core.boxes import Boxes
from stridegen.core.errors import LogFormatError
from stridegen.core.transforms import quat_to_rotmat, quat_to_yaw, rotmat_to_quat
from stridegen.core.vocabulary import DETECTION_CLASSES, detection_class
from stridegen.logs._common import neighbour_velocity, track_neighbours
from stridegen.logs.av2_cameras import match_nearest
from stridegen.logs.base import Annotations
from stridegen.logs.box_rotation import ROTATION_GLOBAL
from stridegen.logs.ros.poses import PoseTrack
from stridegen.logs.ros.tf import GLOBAL_FRAMES, ChainPoses, TfTree, pose_of, strip

if TYPE_CHECKING:
    from stridegen.logs.ros.recording import Recording

DETECTIONS = "vision_msgs/msg/Detection3DArray"
MARKERS = "visualization_msgs/msg/MarkerArray"
BOX_TYPES = (DETECTIONS, MARKERS)
# visualization_msgs/msg/Marker.msg constants.
MARKER_CUBE, MARKER_ARROW, MARKER_TEXT = 1, 0, 9
MARKER_ADD, MARKER_DELETE, MARKER_DELETEALL = 0, 2, 3
# A MarkerArray is received after its boxes' stamp by the perception stack's latency: its messages are looked up up
# to 1 s (the log check's header-vs-receive tolerance, check.STAMP_MISMATCH_S) after the scene's last sweep.
MARKER_LATENCY_NS = 1_000_000_000
# A LiDAR return on a box's face lies on its surface: within float32 rounding of it, on either side. A point
# within this margin of the box counts as inside (1 cm: far above float32's ~1e-5 m at 100 m, below any object).
BOX_MARGIN_M = 0.01
# Boxes per points_in_boxes call: its [boxes, points] float64 temporaries stay near 64 MB for a 128-beam sweep.
_BOX_CHUNK = 16


@dataclass
class SceneBoxes:
    """Every box of a scene, in the global frame, with the frame each belongs to."""

    frame: np.ndarray  # [B] frame index
    center: np.ndarray  # [B, 3]
    size: np.ndarray  # [B, 3]
    rotation: np.ndarray  # [B, 4] [w, x, y, z] global
    velocity: np.ndarray  # [B, 3]
    category: list[str]
    track: list[str]


@dataclass(frozen=True)
class BoxRow:
    """One box of a message, in the frame it was published in."""

    frame_id: str
    stamp_ns: int  # the time its frame is looked up at
    T_frame_from_box: np.ndarray  # [4, 4]
    size: tuple[float, float, float]  # length, width, height (m)
    category: str
    track: str


def _stamp_ns(header: Any) -> int:
    return int(header.stamp.sec) * 1_000_000_000 + int(header.stamp.nanosec)


def _class_id(result: Any) -> str:
    hypothesis = getattr(result, "hypothesis", None)
    if hypothesis is not None:
        return str(hypothesis.class_id)
    return str(getattr(result, "id", ""))


def _size(v: Any, where: str) -> tuple[float, float, float]:
    size = (float(v.x), float(v.y), float(v.z))
    if not all(np.isfinite(s) and s > 0.0 for s in size):
        raise LogFormatError(where, f"box size (x, y, z) = {size} is not finite and positive")
    return size


def is_box_marker(marker: Any) -> bool:
    """A CUBE marker that adds (or modifies) a box."""
    return int(marker.type) == MARKER_CUBE and int(marker.action) == MARKER_ADD


def marker_array_stamp(msg: Any, receive_ns: int) -> int | None:
    """The stamp of a MarkerArray: its first box marker's (``receive_ns`` when that is 0); None without boxes."""
    for marker in msg.markers:
        if is_box_marker(marker):
            return _stamp_ns(marker.header) or int(receive_ns)
    return None


def looks_like_boxes(msg: Any) -> bool:
    """Whether a MarkerArray is a box topic (mapping.py's automatic choice): at least one CUBE marker added, and
    besides those only labels (TEXT_VIEW_FACING), arrows and deletions, which box publishers send with them."""
    markers = list(getattr(msg, "markers", []))
    if not any(is_box_marker(m) for m in markers):
        return False
    return all(
        int(m.action) in (MARKER_DELETE, MARKER_DELETEALL) or int(m.type) in (MARKER_CUBE, MARKER_ARROW, MARKER_TEXT)
        for m in markers
    )


def box_rows(msgtype: str, msg: Any, stamp_ns: int, where: str) -> Iterator[BoxRow]:
    """The boxes of one Detection3DArray or MarkerArray matched at ``stamp_ns`` (module docstring)."""
    if msgtype == MARKERS:
        for k, marker in enumerate(msg.markers):
            if not is_box_marker(marker):
                continue
            at = f"{where} marker {k} (ns {marker.ns!r}, id {marker.id})"
            ns = str(marker.ns)
            yield BoxRow(
                str(marker.header.frame_id),
                _stamp_ns(marker.header) or stamp_ns,
                pose_of(marker.pose, at),
                _size(marker.scale, at),
                ns,
                str(marker.text) or f"{ns}/{int(marker.id)}",
            )
        return
    default_frame = str(msg.header.frame_id)
    for k, det in enumerate(msg.detections):
        at = f"{where} detection {k}"
        yield BoxRow(
            str(det.header.frame_id) or default_frame,
            stamp_ns,
            pose_of(det.bbox.center, at),
            _size(det.bbox.size, at),
            _class_id(det.results[0]) if len(det.results) else "",
            str(getattr(det, "id", "")) or f"{stamp_ns}-{k}",
        )


def matched_arrays(
    rec: Recording, topic: str, start_ns: int, stop_ns: int, frame_ns: np.ndarray, period_ns: int
) -> list[tuple[int, int, Any]]:
    """(frame index, stamp ns, message) of the box arrays of ``topic`` matched to the frames (module docstring)."""
    msgtype = rec.topics[topic][0]
    half = period_ns // 2
    found: dict[int, tuple[int, int]] = {}  # stamp -> (header_ns, receive_ns) of the message; the first kept
    cache: dict[int, Any] = {}
    if msgtype == MARKERS:
        keys = rec.stamps(topic, start_ns - half, stop_ns + half + MARKER_LATENCY_NS + 1)
        messages = rec.read_many(topic, keys)  # one pass over the scene's span (Recording.read_many)
        for header_ns, receive_ns in keys:
            msg = messages[(header_ns, receive_ns)]
            stamp = marker_array_stamp(msg, receive_ns)
            if stamp is not None and stamp not in found:
                found[stamp] = (header_ns, receive_ns)
                cache[stamp] = msg
    else:
        for header_ns, receive_ns in rec.stamps(topic, start_ns - half, stop_ns + half + 1):
            found.setdefault(header_ns, (header_ns, receive_ns))
    stamps = np.array(sorted(found), dtype=np.int64)
    index = match_nearest(frame_ns, stamps, period_ns)
    matched = [(int(i), int(stamps[int(index[i])])) for i in np.flatnonzero(index >= 0)]
    if msgtype != MARKERS:
        cache = {h: msg for (h, _r), msg in rec.read_many(topic, [found[s] for _i, s in matched]).items()}
    return [(i, stamp, cache[stamp]) for i, stamp in matched]


def frame_poses(
    poses: ChainPoses | None,
    tree: TfTree,
    ego_frame: str,
    global_frame: str | None,
    extrapolate_ns: int,
    where: str,
) -> Callable[[str, int], np.ndarray]:
    """``T_global_from(frame_id, stamp_ns)``: where a box published in ``frame_id`` at ``stamp_ns`` lies in the
    global frame of the ego poses.

    The frame's static links are followed up to the first frame of the pose chain (``poses.frames``, global ...
    ego): the ego frame for a sensor's frame (then the ego pose at the stamp), a frame between, such as ``odom`` in
    map -> odom -> base_link (the chain's links above it, each at the stamp), or the global frame itself
    (identity). A frame above the chain's top (world -> map) is joined by static links. Any other frame is an
    error naming it and the chain: a box in a frame the poses do not know would be silently misplaced. With
    identity poses (mapping ``poses: none``) the fixed frames are the ego frame; with GNSS poses (a local ENU frame
    no tf frame names) only frames fixed to the ego frame are known."""
    fixed = {f for f in (global_frame, *GLOBAL_FRAMES) if f}

    def chain_top(frame: str) -> tuple[str, np.ndarray]:
        """(the first chain frame above ``frame``, or the top of its static links; T_that_from_frame)."""
        chain = poses.frames if poses is not None and poses.frames else [ego_frame]
        T = np.eye(4)
        walked = [frame]
        while frame not in chain and frame in tree.links:
            frame, T_parent = tree.links[frame]
            T = T_parent @ T
            if frame in walked:
                raise LogFormatError(where, f"tf has a loop through {walked}")
            walked.append(frame)
        return frame, T

    def T_global_from(frame_id: str, stamp_ns: int) -> np.ndarray:
        frame = strip(frame_id) or ego_frame
        stamp = np.array([stamp_ns], dtype=np.int64)
        if poses is None:
            return np.eye(4) if frame in fixed else tree.T_from(ego_frame, frame)
        if frame == ego_frame:
            return poses.T_global_from_ego(stamp, extrapolate_ns)[0]
        if poses.frames is None:
            if frame in fixed:
                raise LogFormatError(
                    where,
                    f"boxes in frame {frame!r}, but the ego poses are {poses.description}, a frame no tf frame "
                    f"names: publish the boxes in the ego frame {ego_frame!r} or a sensor's frame",
                )
            return poses.T_global_from_ego(stamp, extrapolate_ns)[0] @ tree.T_from(ego_frame, frame)
        chain = poses.frames
        top, T_top_from_frame = chain_top(frame)
        if top == ego_frame:
            return poses.T_global_from_ego(stamp, extrapolate_ns)[0] @ T_top_from_frame
        if top in chain:
            T = np.eye(4)
            for part in poses.parts[: chain.index(top)]:
                T = T @ (part.T_global_from_ego(stamp, extrapolate_ns)[0] if isinstance(part, PoseTrack) else part)
            return T @ T_top_from_frame
        try:
            return tree.T_from(chain[0], frame)
        except LogFormatError:
            raise LogFormatError(
                where,
                f"boxes in frame {frame!r}, which no tf link joins to the ego pose chain {' -> '.join(chain)}: "
                "publish the missing transform (or the boxes in one of the chain's frames)",
            ) from None

    return T_global_from


def scene_boxes(
    arrays: list[tuple[int, int, Any]],
    frame_ns: np.ndarray,
    T_global_from: Callable[[str, int], np.ndarray],
    msgtype: str = DETECTIONS,
    where: str = "",
) -> SceneBoxes:
    """``arrays``: (frame index, stamp ns, Detection3DArray or MarkerArray) of the matched arrays;
    ``T_global_from(frame_id, stamp_ns)`` the pose of a frame id at a time."""
    frame, center, size, rotation, category, track, time_ns = [], [], [], [], [], [], []
    for index, stamp, msg in arrays:
        for row in box_rows(msgtype, msg, stamp, f"{where} at {stamp} ns"):
            T = T_global_from(row.frame_id, row.stamp_ns) @ row.T_frame_from_box
            frame.append(index)
            center.append(T[:3, 3])
            rotation.append(rotmat_to_quat(T[:3, :3]))
            size.append(row.size)
            category.append(row.category)
            track.append(row.track)
            time_ns.append(int(frame_ns[index]))
    n = len(frame)
    centers = np.array(center, dtype=np.float64).reshape(n, 3)
    time_s = 1e-6 * (np.array(time_ns, dtype=np.int64) // 1000).astype(np.float64)
    prev_idx, next_idx = track_neighbours(np.array(track, dtype=object), time_s)
    velocity = neighbour_velocity(centers, time_s, prev_idx, next_idx)
    return SceneBoxes(
        np.array(frame, dtype=np.int64),
        centers,
        np.array(size, dtype=np.float64).reshape(n, 3),
        np.array(rotation, dtype=np.float64).reshape(n, 4),
        velocity,
        category,
        track,
    )


def lidar_points_in_boxes(
    points_global: np.ndarray, center: np.ndarray, rotation_R: np.ndarray, size: np.ndarray
) -> np.ndarray:
    """[B] number of points [N, 3] inside each box (center [B, 3], rotation [B, 3, 3] box axes -> frame, size
    [B, 3] l, w, h; all in one frame) grown by ``BOX_MARGIN_M`` on every side."""
    out = np.zeros(center.shape[0], dtype=np.int64)
    points = np.asarray(points_global, dtype=np.float64)[:, :3]
    for lo in range(0, center.shape[0], _BOX_CHUNK):
        part = slice(lo, lo + _BOX_CHUNK)
        inside = points_in_boxes(points, center[part], size[part] + 2.0 * BOX_MARGIN_M, np.zeros(0), rotation_R[part])
        out[part] = np.count_nonzero(inside, axis=1)
    return out


def frame_annotations(boxes: SceneBoxes, index: int, frame_token: str, points_global: np.ndarray | None) -> Annotations:
    """The Annotations of frame ``index``; ``points_global``: its reference sweep in the global frame."""
    rows = np.flatnonzero(boxes.frame == index)
    n = rows.size
    rotation = boxes.rotation[rows]
    category = np.empty(n, dtype=object)
    category[:] = [boxes.category[i] for i in rows]
    label = np.empty(n, dtype=object)
    label[:] = [detection_class(c) or (c if c in DETECTION_CLASSES else "") for c in category]
    track = np.empty(n, dtype=object)
    track[:] = [boxes.track[i] for i in rows]
    token = np.empty(n, dtype=object)
    token[:] = [f"{frame_token}_{t}" for t in track]
    counts = np.zeros(n, dtype=np.int64)
    if points_global is not None and n:
        counts = lidar_points_in_boxes(points_global, boxes.center[rows], quat_to_rotmat(rotation), boxes.size[rows])
    attribute = np.empty(n, dtype=object)
    attribute[:] = [""] * n
    return Annotations(
        boxes=Boxes(
            center=boxes.center[rows],
            size_lwh=boxes.size[rows],
            yaw=quat_to_yaw(rotation),
            velocity=boxes.velocity[rows],
            label=label,
            track_id=track,
            frame="global",
            extras={ROTATION_GLOBAL: rotation},
        ),
        category=category,
        token=token,
        num_lidar_pts=counts,
        num_radar_pts=np.zeros(n, dtype=np.int64),
        visibility=np.zeros(n, dtype=np.int64),
        attribute=attribute,
    )
