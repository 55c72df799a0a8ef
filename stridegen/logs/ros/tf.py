"""The tf tree of a recording: extrinsics (``T_ego_from_sensor`` by frame id) from its static links, and the ego
poses (``T_global_from_ego``) from its dynamic links, odometry, stamped poses or GNSS fixes.

tf convention (REP-105, tf2_msgs/TFMessage): a ``TransformStamped`` with ``header.frame_id = parent`` and
``child_frame_id = child`` is ``T_parent_from_child`` (it maps child-frame points into the parent frame).
Static links are every ``/tf_static`` transform and every ``/tf`` link off the pose chain (first value).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.core.errors import InvalidPoseError, LogFormatError
from stridegen.core.transforms import invert_transform, make_transform, quat_to_rotmat
from stridegen.logs._common import validate_pose
from stridegen.logs.ros.poses import PoseTrack, enu_from_geodetic

GLOBAL_FRAMES = ("map", "world", "earth", "odom")  # REP-105 fixed frames, the first present wins


def strip(frame: str) -> str:
    """A frame id without tf1's leading slash."""
    return frame[1:] if frame.startswith("/") else frame


def transform_of(msg: Any, where: str) -> np.ndarray:
    """``T_parent_from_child`` of a geometry_msgs/Transform (quaternion x, y, z, w -> [w, x, y, z])."""
    r, t = msg.rotation, msg.translation
    q, p = validate_pose([r.w, r.x, r.y, r.z], [t.x, t.y, t.z], where, "transform")
    return make_transform(q, p)


def pose_of(msg: Any, where: str) -> np.ndarray:
    """The 4x4 transform of a geometry_msgs/Pose."""
    o, p = msg.orientation, msg.position
    q, t = validate_pose([o.w, o.x, o.y, o.z], [p.x, p.y, p.z], where, "pose")
    return make_transform(q, t)


@dataclass
class TfTree:
    """Static links: child -> (parent, T_parent_from_child)."""

    source: Path
    links: dict[str, tuple[str, np.ndarray]] = field(default_factory=dict)

    def add(self, parent: str, child: str, T: np.ndarray) -> None:
        self.links.setdefault(strip(child), (strip(parent), T))

    def _to_root(self, frame: str) -> tuple[str, np.ndarray, list[str]]:
        """(root, T_root_from_frame, frames walked)."""
        T = np.eye(4)
        walked = [frame]
        while frame in self.links:
            parent, T_parent = self.links[frame]
            T = T_parent @ T
            frame = parent
            if frame in walked:
                raise LogFormatError(self.source, f"tf has a loop through {walked}")
            walked.append(frame)
        return frame, T, walked

    def T_from(self, target: str, frame: str) -> np.ndarray:
        """``T_target_from_frame`` through the static links; LogFormatError saying where the chain breaks."""
        target, frame = strip(target), strip(frame)
        root_a, T_a, walk_a = self._to_root(target)
        root_b, T_b, walk_b = self._to_root(frame)
        if root_a != root_b:
            raise LogFormatError(
                self.source,
                f"broken tf chain: no static link joins {frame!r} (up to {' -> '.join(walk_b)}) and {target!r} "
                f"(up to {' -> '.join(walk_a)}); publish the missing transform on /tf_static",
            )
        return invert_transform(T_a) @ T_b


class ChainPoses:
    """``T_global_from_ego`` as the product of dynamic links (each a PoseTrack, queried at the same time) and
    static ones, from the global frame down to the ego frame. ``frames``: the chain's frame ids, global first and
    ego last (``frames[k]`` is the parent of ``parts[k]``); None where no tf frame names the global frame (GNSS)."""

    def __init__(
        self, source: Path, parts: list[PoseTrack | np.ndarray], description: str, frames: list[str] | None = None
    ) -> None:
        self.source = source
        self.parts = parts
        self.description = description
        self.frames = frames

    @property
    def timestamp_ns(self) -> np.ndarray:
        tracks = [p for p in self.parts if isinstance(p, PoseTrack)]
        return tracks[-1].timestamp_ns if tracks else np.zeros(0, dtype=np.int64)

    def T_global_from_ego(self, timestamp_ns: np.ndarray, extrapolate_ns: int = 0) -> np.ndarray:
        ts = np.asarray(timestamp_ns, dtype=np.int64).reshape(-1)
        out = np.broadcast_to(np.eye(4), (ts.size, 4, 4)).copy()
        for part in self.parts:
            step = part.T_global_from_ego(ts, extrapolate_ns) if isinstance(part, PoseTrack) else part[None]
            out = out @ step
        return out


def dynamic_chain(
    source: Path,
    dynamic: dict[tuple[str, str], PoseTrack],
    tree: TfTree,
    ego_frame: str,
    global_frame: str | None,
) -> ChainPoses | None:
    """The chain global -> ... -> ego through dynamic links (and static ones between them), or None when no
    dynamic link leads to the ego frame."""
    parent_of = {child: parent for parent, child in dynamic}
    frame = ego_frame
    parts: list[PoseTrack | np.ndarray] = []
    names = [frame]
    while True:
        if frame in parent_of:
            parent = parent_of[frame]
            parts.insert(0, dynamic[(parent, frame)])
        elif frame in tree.links:
            parent, T = tree.links[frame]
            parts.insert(0, T)
        else:
            break
        frame = parent
        names.insert(0, frame)
        if len(names) > 64:
            raise LogFormatError(source, f"tf has a loop through {names[:8]}")
        if global_frame is not None and frame == global_frame:
            break
    if not any(isinstance(p, PoseTrack) for p in parts):
        return None
    if global_frame is not None and frame != global_frame:
        raise LogFormatError(source, f"tf chain {' -> '.join(names)} does not reach the global frame {global_frame!r}")
    return ChainPoses(source, parts, "/tf " + " -> ".join(names), names)


def odometry_track(source: Path, messages: list[tuple[int, Any]], tree: TfTree, ego_frame: str) -> ChainPoses:
    """Poses from nav_msgs/Odometry (or PoseStamped / PoseWithCovarianceStamped): the pose is of
    ``child_frame_id`` (Odometry) or of the ego frame (the others) in ``header.frame_id``."""
    stamps, poses = [], []
    child = ego_frame
    parent = strip(str(messages[0][1].header.frame_id)) if messages else ""
    for stamp, msg in messages:
        pose = msg.pose.pose if hasattr(msg.pose, "pose") else msg.pose
        poses.append(pose_of(pose, f"{source} at {stamp} ns"))
        stamps.append(stamp)
        child = strip(getattr(msg, "child_frame_id", "") or ego_frame)
    track = PoseTrack(source, np.array(stamps, dtype=np.int64), np.array(poses).reshape(-1, 4, 4))
    parts: list[PoseTrack | np.ndarray] = [track]
    if child != ego_frame:
        parts.append(tree.T_from(child, ego_frame))
    frames = [parent, *([child] if child != ego_frame else []), ego_frame] if parent else None
    return ChainPoses(source, parts, "odometry", frames)


def navsat_track(
    source: Path,
    fixes: list[tuple[int, Any]],
    imu: list[tuple[int, Any]],
    tree: TfTree,
    ego_frame: str,
) -> ChainPoses:
    """Poses from sensor_msgs/NavSatFix in the local ENU frame about the first fix (``poses.enu_from_geodetic``).
    Orientation: the IMU's (REP-103/105: ``orientation`` relative to ENU) interpolated at each fix, else the
    heading of the motion between fixes (yaw only; roll and pitch 0). The antenna's offset (the fix's frame_id in
    the static tree) is removed."""
    ok = [
        (s, m) for s, m in fixes if int(m.status.status) >= 0 and np.isfinite(m.latitude) and np.isfinite(m.longitude)
    ]
    if len(ok) < 2:
        raise InvalidPoseError(source, f"{len(ok)} valid GNSS fixes (status >= 0): need 2 or more")
    stamps = np.array([s for s, _ in ok], dtype=np.int64)
    enu = enu_from_geodetic(
        np.array([m.latitude for _, m in ok]),
        np.array([m.longitude for _, m in ok]),
        np.array([m.altitude for _, m in ok]),
    )
    if imu:
        from stridegen.core.transforms import rotmat_to_quat

        imu_T = np.array([make_transform(_quat(m.orientation), np.zeros(3)) for _, m in imu])
        imu_track = PoseTrack(source, np.array([s for s, _ in imu], dtype=np.int64), imu_T)
        R = imu_track.T_global_from_ego(stamps, extrapolate_ns=10**9)[:, :3, :3]
        q = rotmat_to_quat(R).reshape(-1, 4)
    else:
        d = np.gradient(enu[:, :2], axis=0)
        yaw = np.arctan2(d[:, 1], d[:, 0])
        q = np.stack([np.cos(yaw / 2), np.zeros_like(yaw), np.zeros_like(yaw), np.sin(yaw / 2)], axis=1)
    T = make_transform(quat_to_rotmat(q), enu)
    antenna = strip(str(ok[0][1].header.frame_id)) or ego_frame
    parts: list[PoseTrack | np.ndarray] = [PoseTrack(source, stamps, T)]
    if antenna != ego_frame:
        parts.append(tree.T_from(antenna, ego_frame))
    return ChainPoses(source, parts, "GNSS (ENU about the first fix)" + (" + IMU" if imu else ", heading of motion"))


def _quat(o: Any) -> np.ndarray:
    q = np.array([o.w, o.x, o.y, o.z], dtype=np.float64)
    return q / np.linalg.norm(q)
