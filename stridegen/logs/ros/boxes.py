"""Ground-truth boxes of a scene from a ``vision_msgs/Detection3DArray`` topic.

Each array is matched to the frame whose reference LiDAR stamp is nearest within half the LiDAR period (the
camera rule, ``av2_cameras.match_nearest``); a frame without one has no boxes. A detection's box is
``bbox.center`` (pose in the array's ``header.frame_id``) and ``bbox.size`` (x = length along the box heading, y =
width, z = height); it is moved into the global frame with the ego pose at the array's own stamp (and the static
tf of a sensor frame). Category: ``results[0].hypothesis.class_id`` (ROS 2; ROS 1 vision_msgs 1.x ``id``); its
nuScenes detection class is the category's (``core.vocabulary``), or the id itself when it already is a class
name. Track id: the detection's ``id``, else its position in the array. Velocities: nuScenes' rule from the
track's previous / next box (``_common.neighbour_velocity``). ``num_lidar_pts``: the reference sweep's points
inside the box (the AV2 ``num_interior_pts`` meaning); visibility unknown (0); no attribute.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from stridegen.core.boxes import Boxes
from stridegen.core.transforms import quat_to_rotmat, quat_to_yaw, rotmat_to_quat
from stridegen.core.vocabulary import DETECTION_CLASSES, detection_class
from stridegen.logs._common import neighbour_velocity
from stridegen.logs.base import Annotations
from stridegen.logs.box_rotation import ROTATION_GLOBAL
from stridegen.logs.ros.tf import pose_of

# A LiDAR return on a box's face lies on its surface: within float32 rounding of it, on either side. A point
# within this margin of the box counts as inside (1 cm: far above float32's ~1e-5 m at 100 m, below any object).
BOX_MARGIN_M = 0.01


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


def _class_id(result: Any) -> str:
    hypothesis = getattr(result, "hypothesis", None)
    if hypothesis is not None:
        return str(hypothesis.class_id)
    return str(getattr(result, "id", ""))


def scene_boxes(
    arrays: list[tuple[int, int, Any]],
    frame_ns: np.ndarray,
    T_global_from: Callable[[str, int], np.ndarray],
) -> SceneBoxes:
    """``arrays``: (frame index, stamp ns, Detection3DArray) of the matched arrays; ``T_global_from(frame_id,
    stamp_ns)`` the pose of a frame id at a time."""
    frame, center, size, rotation, category, track, time_ns = [], [], [], [], [], [], []
    for index, stamp, msg in arrays:
        default_frame = str(msg.header.frame_id)
        for k, det in enumerate(msg.detections):
            frame_id = str(det.header.frame_id) or default_frame
            T = T_global_from(frame_id, stamp) @ pose_of(det.bbox.center, f"detection {k} at {stamp} ns")
            frame.append(index)
            center.append(T[:3, 3])
            rotation.append(rotmat_to_quat(T[:3, :3]))
            size.append([det.bbox.size.x, det.bbox.size.y, det.bbox.size.z])
            category.append(_class_id(det.results[0]) if len(det.results) else "")
            track.append(str(getattr(det, "id", "")) or f"{stamp}-{k}")
            time_ns.append(int(frame_ns[index]))
    n = len(frame)
    centers = np.array(center, dtype=np.float64).reshape(n, 3)
    tracks = np.array(track, dtype=object)
    times = np.array(time_ns, dtype=np.int64)
    order = np.lexsort((times, tracks.astype(str))) if n else np.zeros(0, dtype=np.int64)
    prev_idx = np.full(n, -1, dtype=np.int64)
    next_idx = np.full(n, -1, dtype=np.int64)
    if n:
        same = tracks[order[1:]] == tracks[order[:-1]]
        prev_idx[order[1:][same]] = order[:-1][same]
        next_idx[order[:-1][same]] = order[1:][same]
    velocity = neighbour_velocity(centers, 1e-6 * (times // 1000).astype(np.float64), prev_idx, next_idx)
    return SceneBoxes(
        np.array(frame, dtype=np.int64),
        centers,
        np.array(size, dtype=np.float64).reshape(n, 3),
        np.array(rotation, dtype=np.float64).reshape(n, 4),
        velocity,
        category,
        track,
    )


def points_in_boxes(
    points_global: np.ndarray, center: np.ndarray, rotation_R: np.ndarray, size: np.ndarray
) -> np.ndarray:
    """[B] number of points inside each box grown by ``BOX_MARGIN_M`` (box frame: |x| <= l/2 + margin, ...)."""
    out = np.zeros(center.shape[0], dtype=np.int64)
    for i in range(center.shape[0]):
        local = (points_global - center[i]) @ rotation_R[i]
        out[i] = int(np.count_nonzero(np.all(np.abs(local) <= size[i] / 2.0 + BOX_MARGIN_M, axis=1)))
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
        counts = points_in_boxes(points_global, boxes.center[rows], quat_to_rotmat(rotation), boxes.size[rows])
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
