"""Ground truth for detection evaluation from our log API, and the devkit's box filtering.

Reference behaviour (read, not copied): nuscenes-devkit 1.2.0 ``nuscenes/eval/common/loaders.py``
(``load_gt``, ``add_center_dist``, ``filter_eval_boxes``) and ``nuscenes/utils/geometry_utils.py``
(``points_in_box``).

Filtering, applied to ground truth and predictions alike:
1. class range: keep a box when its BEV distance to the ego vehicle is strictly below the class's range. As in
   the devkit, the distance is the xy norm of (box translation - ego translation) in global axes, with the ego
   pose of the sample's LIDAR_TOP keyframe (``Frame.T_global_from_ego``).
2. points: drop boxes with ``num_pts == 0`` (lidar + radar points; predictions carry -1 and always pass).
3. bike racks: drop bicycle and motorcycle boxes whose centre lies inside (boundary included) any
   ``static_object.bicycle_rack`` annotation of the same sample.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from stridegen.core.errors import LogFormatError, PredictionFormatError
from stridegen.core.transforms import quat_to_rotmat, yaw_to_quat
from stridegen.core.vocabulary import DETECTION_NAMES
from stridegen.formats.detection_boxes import DetectionBoxes
from stridegen.logs.base import LogReader

BIKE_RACK_CATEGORY = "static_object.bicycle_rack"
CYCLE_CLASSES: tuple[str, ...] = ("bicycle", "motorcycle")
# Boxes.extras key under which the log readers keep the annotation's full global rotation [w, x, y, z]
# (stridegen.logs.box_rotation.ROTATION_GLOBAL); the bike-rack test uses the full rotation, as the devkit does.
ROTATION_EXTRA = "rotation_global"


@dataclass
class SampleContext:
    """What filtering needs to know about each sample: the ego position and the bike racks."""

    sample_tokens: list[str]
    ego_translation_global: np.ndarray  # [S, 3] ego position of each sample (LIDAR_TOP pose)
    rack_sample_token: np.ndarray  # [R] sample of each bike rack
    rack_translation: np.ndarray  # [R, 3] global
    rack_size: np.ndarray  # [R, 3] (w, l, h)
    rack_rotation: np.ndarray  # [R, 4] [w, x, y, z]

    def __post_init__(self) -> None:
        self.ego_translation_global = np.asarray(self.ego_translation_global, dtype=np.float64).reshape(-1, 3)
        self.rack_sample_token = np.asarray(self.rack_sample_token, dtype=object).reshape(-1)
        r = len(self.rack_sample_token)
        self.rack_translation = np.asarray(self.rack_translation, dtype=np.float64).reshape(r, 3)
        self.rack_size = np.asarray(self.rack_size, dtype=np.float64).reshape(r, 3)
        self.rack_rotation = np.asarray(self.rack_rotation, dtype=np.float64).reshape(r, 4)
        self._index = {t: i for i, t in enumerate(self.sample_tokens)}

    def sample_index(self, tokens: np.ndarray) -> np.ndarray:
        """Row of each token in ``sample_tokens``; PredictionFormatError naming the first unknown one."""
        try:
            return np.array([self._index[t] for t in tokens], dtype=np.int64)
        except KeyError as exc:
            raise PredictionFormatError("<boxes>", f"sample token {exc.args[0]!r} is not in the ground truth") from None


@dataclass(frozen=True)
class FilterCounts:
    """Boxes left after each filter step (devkit filter_eval_boxes's verbose counts)."""

    total: int
    after_distance: int
    after_points: int
    after_bike_rack: int

    def to_dict(self) -> dict[str, int]:
        return {
            "total": self.total,
            "after_distance": self.after_distance,
            "after_points": self.after_points,
            "after_bike_rack": self.after_bike_rack,
        }


def add_center_dist(boxes: DetectionBoxes, context: SampleContext) -> DetectionBoxes:
    """Set ``ego_translation`` = translation - ego position of the box's sample (global axes, as the devkit)."""
    ego = context.ego_translation_global[context.sample_index(boxes.sample_token)]
    out = boxes.select(np.arange(len(boxes)))
    out.ego_translation = boxes.translation - ego.reshape(-1, 3)
    return out


def centers_in_boxes(points: np.ndarray, center: np.ndarray, size_wlh: np.ndarray, rotation: np.ndarray) -> np.ndarray:
    """Pairwise test [K]: is ``points[k]`` inside box ``k`` (boundary included)?

    Same construction as the devkit's ``points_in_box``: take corner 0 as origin and the edges towards corners
    4, 1 and 3 as axes i, j, k; a point is inside when 0 <= a.v <= a.a for each axis a.
    """
    points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    rot = quat_to_rotmat(np.asarray(rotation, dtype=np.float64).reshape(-1, 4))  # [K, 3, 3]
    w, l, h = np.asarray(size_wlh, dtype=np.float64).reshape(-1, 3).T
    center = np.asarray(center, dtype=np.float64).reshape(-1, 3)

    def corner(sx: float, sy: float, sz: float) -> np.ndarray:
        local = np.stack([sx * l / 2, sy * w / 2, sz * h / 2], axis=1)
        return np.einsum("kij,kj->ki", rot, local) + center

    p1 = corner(1, 1, 1)
    v = points - p1
    inside = np.ones(len(points), dtype=bool)
    for other in (corner(-1, 1, 1), corner(1, -1, 1), corner(1, 1, -1)):
        axis = other - p1
        proj = np.sum(axis * v, axis=1)
        inside &= (proj >= 0) & (proj <= np.sum(axis * axis, axis=1))
    return inside


def _in_bike_rack(boxes: DetectionBoxes, context: SampleContext) -> np.ndarray:
    """[N] whether each bicycle / motorcycle box centre lies in a bike rack of its sample."""
    out = np.zeros(len(boxes), dtype=bool)
    cycles = np.flatnonzero(np.isin(boxes.detection_name, CYCLE_CLASSES))
    if len(cycles) == 0 or len(context.rack_sample_token) == 0:
        return out
    rack_sample = context.sample_index(context.rack_sample_token)
    rack_order = np.argsort(rack_sample, kind="stable")
    rack_sorted = rack_sample[rack_order]
    box_sample = context.sample_index(boxes.sample_token[cycles])
    lo = np.searchsorted(rack_sorted, box_sample, side="left")
    n_racks = np.searchsorted(rack_sorted, box_sample, side="right") - lo
    box_of_pair = np.repeat(np.arange(len(cycles)), n_racks)
    starts = np.concatenate([[0], np.cumsum(n_racks)[:-1]])
    rack_of_pair = rack_order[np.repeat(lo, n_racks) + np.arange(len(box_of_pair)) - np.repeat(starts, n_racks)]
    inside = centers_in_boxes(
        boxes.translation[cycles[box_of_pair]],
        context.rack_translation[rack_of_pair],
        context.rack_size[rack_of_pair],
        context.rack_rotation[rack_of_pair],
    )
    out[cycles[box_of_pair[inside]]] = True
    return out


def filter_eval_boxes(
    boxes: DetectionBoxes, context: SampleContext, class_range: Mapping[str, float]
) -> tuple[DetectionBoxes, FilterCounts]:
    """Distance, point-count and bike-rack filtering (devkit ``filter_eval_boxes`` after ``add_center_dist``)."""
    boxes = add_center_dist(boxes, context)
    max_dist = np.array([class_range[c] for c in boxes.detection_name], dtype=np.float64)
    keep_dist = boxes.ego_dist < max_dist
    keep_pts = keep_dist & (boxes.num_pts != 0)
    keep = keep_pts & ~_in_bike_rack(boxes, context)
    counts = FilterCounts(len(boxes), int(keep_dist.sum()), int(keep_pts.sum()), int(keep.sum()))
    return boxes.select(keep), counts


def _rotation_wxyz(boxes) -> np.ndarray:
    """Full rotation quaternions if the reader kept them (``extras['rotation_global']``), else the yaw one."""
    rotation = boxes.extras.get(ROTATION_EXTRA)
    if rotation is not None and np.shape(rotation) == (len(boxes), 4):
        return np.asarray(rotation, dtype=np.float64)
    return yaw_to_quat(boxes.yaw)


def gather_detection_gt(reader: LogReader) -> tuple[DetectionBoxes, SampleContext]:
    """All annotated frames of a log -> ground-truth boxes of the 10 detection classes and the sample context.

    Mirrors the devkit's ``load_gt``: boxes whose category maps to no detection class are skipped, ``num_pts`` is
    lidar + radar points, the velocity is the (vx, vy) of the annotation, the attribute its (first) attribute.
    """
    parts: list[DetectionBoxes] = []
    tokens: list[str] = []
    ego_xyz: list[np.ndarray] = []
    racks: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]] = []
    for scene in reader.scenes():
        for frame in scene.frames:
            tokens.append(frame.token)
            ego_xyz.append(np.asarray(frame.T_global_from_ego, dtype=np.float64)[:3, 3])
            ann = frame.annotations()
            b = ann.boxes
            if b.frame != "global":
                raise LogFormatError(
                    reader.root,
                    f"annotations of frame {frame.token} are in the {b.frame!r} "
                    "frame; the log API promises global-frame boxes",
                )
            size_wlh = b.size_lwh[:, [1, 0, 2]]
            rotation = _rotation_wxyz(b)
            rack = np.asarray(ann.category == BIKE_RACK_CATEGORY, dtype=bool)
            for i in np.flatnonzero(rack):
                racks.append((frame.token, b.center[i], size_wlh[i], rotation[i]))
            det = np.isin(b.label, DETECTION_NAMES)
            n = int(det.sum())
            parts.append(
                DetectionBoxes(
                    np.full(n, frame.token, dtype=object),
                    b.center[det],
                    size_wlh[det],
                    rotation[det],
                    b.velocity[det, :2],
                    b.label[det],
                    None,
                    ann.attribute[det],
                    np.asarray(ann.num_lidar_pts)[det] + np.asarray(ann.num_radar_pts)[det],
                )
            )
    gt = DetectionBoxes.concat(parts)
    if racks:
        r_tok, r_t, r_s, r_r = zip(*racks, strict=True)
    else:
        r_tok, r_t, r_s, r_r = [], np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 4))
    context = SampleContext(
        tokens,
        np.array(ego_xyz).reshape(-1, 3),
        np.array(r_tok, dtype=object),
        np.array(r_t),
        np.array(r_s),
        np.array(r_r),
    )
    return gt, context


def load_detection_gt(root: str | Path, version: str | None = None) -> tuple[DetectionBoxes, SampleContext]:
    """Open a log with ``stridegen.logs.open_log`` and gather its detection ground truth."""
    from stridegen.logs import open_log

    reader = open_log(root, version=version) if version else open_log(root)
    return gather_detection_gt(reader)
