"""Ground truth for the tracking evaluation, gathered through the log API (``stridegen.logs.open_log``).

Mirrors the devkit's ``load_gt`` for ``TrackingBox`` (nuscenes/eval/common/loaders.py): every annotation whose
category maps to one of the 7 tracking classes (``category_to_tracking_name``) becomes a box whose tracking id is
its instance token and whose ``num_pts`` is LiDAR + radar points; the ego position of each sample is the pose of
its LiDAR sample (``add_center_dist``); bicycle racks are kept aside for the bike-rack filter. The class-range,
zero-point and bike-rack filters themselves run in ``stridegen.eval.tracking.prepare.filter_tracks``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from stridegen.core.errors import LogFormatError
from stridegen.core.vocabulary import CATEGORY_TO_TRACKING
from stridegen.eval.tracking.data import BIKE_RACK_CATEGORY, RackBoxes, Timeline, TrackBoxes
from stridegen.logs.base import Annotations, Scene

_ROTATION_EXTRA = "rotation_global"  # Boxes extra the log readers fill with the full [w, x, y, z] rotation


@dataclass
class TrackingGroundTruth:
    """The frames of the evaluated scenes, their GT track boxes and their bike racks."""

    timeline: Timeline
    boxes: TrackBoxes
    racks: RackBoxes
    scene_names: list[str]
    scene_tokens: list[str]

    @property
    def sample_tokens(self) -> list[str]:
        assert self.timeline.token is not None  # a log's timeline has its sample tokens
        return [str(t) for t in self.timeline.token]

    def select_scenes(self, keep: np.ndarray) -> TrackingGroundTruth:
        """The same ground truth restricted to the scenes where ``keep`` [n_scenes] is true."""
        keep = np.asarray(keep, dtype=bool)
        frame_keep = keep[self.timeline.scene]
        new_index = np.cumsum(frame_keep) - 1
        new_scene = np.cumsum(keep) - 1
        tl = self.timeline
        timeline = Timeline(
            new_scene[tl.scene[frame_keep]],
            tl.timestamp_us[frame_keep],
            tl.ego_translation_global[frame_keep],
            None if tl.token is None else tl.token[frame_keep],
        )
        box_keep = np.flatnonzero(frame_keep[self.boxes.frame])
        boxes = self.boxes.take(box_keep)
        boxes = TrackBoxes(
            new_index[boxes.frame],
            boxes.track_id,
            boxes.class_name,
            boxes.translation_global,
            boxes.score,
            boxes.num_pts,
        )
        rack_keep = frame_keep[self.racks.frame]
        racks = RackBoxes(
            new_index[self.racks.frame[rack_keep]],
            self.racks.center_global[rack_keep],
            self.racks.size_wlh[rack_keep],
            self.racks.rotation_global[rack_keep],
        )
        return TrackingGroundTruth(
            timeline,
            boxes,
            racks,
            [n for n, k in zip(self.scene_names, keep, strict=True) if k],
            [t for t, k in zip(self.scene_tokens, keep, strict=True) if k],
        )


def tracking_classes(ann: Annotations) -> np.ndarray:
    """Tracking class of each annotation ("" where none), from its nuScenes category, or from the reader's
    detection label when the category is not a nuScenes tracking category (e.g. Argoverse 2 categories, which the
    AV2 reader maps to detection classes)."""
    tracking_values = set(CATEGORY_TO_TRACKING.values())
    out = np.empty(len(ann), dtype=object)
    for i, (category, label) in enumerate(zip(ann.category, ann.boxes.label, strict=True)):
        mapped = CATEGORY_TO_TRACKING.get(str(category))
        out[i] = mapped if mapped is not None else (str(label) if str(label) in tracking_values else "")
    return out


def _rotation_wxyz(ann: Annotations) -> np.ndarray:
    rotation = ann.boxes.extras.get(_ROTATION_EXTRA)
    if rotation is not None:
        return np.asarray(rotation, dtype=np.float64).reshape(-1, 4)
    from stridegen.core.transforms import yaw_to_quat

    return np.asarray(yaw_to_quat(ann.boxes.yaw), dtype=np.float64).reshape(-1, 4)


def gather_tracking_gt(scenes: Iterable[Scene], root: str | Path = "<log>") -> TrackingGroundTruth:
    """Scenes of a log -> timeline, GT track boxes of the tracking classes and bike racks (global frame)."""
    scene_idx: list[int] = []
    timestamps: list[int] = []
    ego: list[np.ndarray] = []
    tokens: list[str] = []
    names, scene_tokens = [], []
    box_parts: list[TrackBoxes] = []
    rack_frame, rack_center, rack_size, rack_rot = [], [], [], []
    for s, scene in enumerate(scenes):
        names.append(scene.name)
        scene_tokens.append(scene.token)
        for frame in scene.frames:
            f = len(tokens)
            scene_idx.append(s)
            timestamps.append(int(frame.timestamp_us))
            ego.append(np.asarray(frame.T_global_from_ego, dtype=np.float64)[:3, 3])
            tokens.append(frame.token)
            ann = frame.annotations()
            if ann.boxes.frame != "global":
                raise LogFormatError(
                    root,
                    f"annotations of frame {frame.token} are in the {ann.boxes.frame!r} "
                    "frame; the log API promises global-frame boxes",
                )
            cls = tracking_classes(ann)
            keep = np.flatnonzero(cls != "")
            box_parts.append(
                TrackBoxes(
                    np.full(keep.size, f),
                    ann.boxes.track_id[keep],
                    cls[keep],
                    ann.boxes.center[keep],
                    np.full(keep.size, -1.0),
                    np.asarray(ann.num_lidar_pts)[keep] + np.asarray(ann.num_radar_pts)[keep],
                )
            )
            empty_id = keep[ann.boxes.track_id[keep] == ""]
            if empty_id.size:
                raise LogFormatError(
                    root, f"annotation {ann.token[empty_id[0]]} of frame {frame.token} has no instance (tracking) id"
                )
            rack_rows = np.flatnonzero(np.asarray(ann.category) == BIKE_RACK_CATEGORY)
            if rack_rows.size:
                rack_frame.append(np.full(rack_rows.size, f))
                rack_center.append(ann.boxes.center[rack_rows])
                rack_size.append(ann.boxes.size_lwh[rack_rows][:, [1, 0, 2]])  # nuScenes order [w, l, h]
                rack_rot.append(_rotation_wxyz(ann)[rack_rows])
    try:
        timeline = Timeline(
            np.asarray(scene_idx, dtype=np.int64),
            np.asarray(timestamps, dtype=np.int64),
            np.array(ego).reshape(-1, 3),
            np.array(tokens, dtype=object),
        )
    except ValueError as exc:
        raise LogFormatError(root, str(exc)) from None
    boxes = TrackBoxes.concat(box_parts) if box_parts else TrackBoxes.create([], [], [], np.zeros((0, 3)))
    racks = (
        RackBoxes(
            np.concatenate(rack_frame), np.concatenate(rack_center), np.concatenate(rack_size), np.concatenate(rack_rot)
        )
        if rack_frame
        else RackBoxes.empty()
    )
    return TrackingGroundTruth(timeline, boxes, racks, names, scene_tokens)


def load_tracking_gt(root: str | Path, version: str | None = None) -> TrackingGroundTruth:
    """Open a log with ``stridegen.logs.open_log`` and gather the tracking ground truth of all its scenes."""
    from stridegen.logs import open_log

    reader = open_log(root, version=version)
    return gather_tracking_gt(reader.scenes(), reader.root)
