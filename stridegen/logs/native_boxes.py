"""The boxes of a stridegen-log frame (format: stridegen/logs/native.py, docs/log-format.md): one rule for a box.

A frame's boxes are a JSON list of box objects, in a box file or inline in frames.jsonl, in the global frame:
``center_m``, ``size_m`` {"length", "width", "height"} (length along the heading), ``rotation_wxyz``. The rule for
one box (``_read_box``) is read once without places (the common case: a valid frame costs no place objects) and,
where that pass doubts, again with places, to raise the first error with its row (``box i`` of a box file,
``boxes[i]`` inline), key and reason. Boxes that leave ``velocity_mps`` out get the velocity of their instance's
neighbouring boxes (``derive_velocities``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.core.boxes import Boxes
from stridegen.core.errors import GeometryError
from stridegen.core.transforms import check_unit_quaternion, quat_to_yaw
from stridegen.core.vocabulary import DETECTION_CLASSES, detection_class
from stridegen.logs._common import neighbour_velocity
from stridegen.logs.base import Annotations
from stridegen.logs.box_rotation import ROTATION_GLOBAL
from stridegen.logs.native_json import (
    QUATERNION_ATOL,
    UNLOCATED,
    At,
    Doubt,
    InvalidValueError,
    Keys,
    are_numbers,
    check_rotations,
    is_number,
    kind_of,
    read_integer,
    read_json_file,
    read_numbers,
    read_object,
    read_relative_file,
    read_string,
    read_wxyz,
)

VISIBILITY_BINS = 4  # nuScenes visibility bins 1..4 (0-40, 40-60, 60-80, 80-100 %), 0 = unknown
BOX_KEYS = Keys(
    ("instance_id", "category", "center_m", "size_m", "rotation_wxyz"),
    ("label", "token", "velocity_mps", "num_lidar_pts", "num_radar_pts", "visibility", "attribute"),
)
SIZE_KEYS = Keys(("length", "width", "height"))
_UNKNOWN_VELOCITY = (math.nan, math.nan, math.nan)


@dataclass(frozen=True)
class BoxSource:
    """Where a frame's boxes are: a box file, or a list inline in frames.jsonl (``at`` names it)."""

    at: At
    inline: list[Any] | None = None


@dataclass
class FrameBoxes:
    """One frame's parsed boxes; ``velocity`` NaN and ``has_velocity`` False where ``velocity_mps`` was left out."""

    annotations: Annotations
    has_velocity: np.ndarray


@dataclass
class _BoxColumns:
    """The values of one frame's boxes, column by column, before they become Annotations."""

    instance: list[str] = field(default_factory=list)
    category: list[str] = field(default_factory=list)
    label: list[str] = field(default_factory=list)
    token: list[str] = field(default_factory=list)
    center: list[Any] = field(default_factory=list)
    size: list[Any] = field(default_factory=list)
    rotation: list[Any] = field(default_factory=list)
    velocity: list[Any] = field(default_factory=list)
    has_velocity: list[bool] = field(default_factory=list)
    lidar: list[int] = field(default_factory=list)
    radar: list[int] = field(default_factory=list)
    visibility: list[int] = field(default_factory=list)
    attribute: list[str] = field(default_factory=list)


def read_box_source(value: Any, at: At, scene_dir: Path) -> BoxSource:
    """A frame's ``boxes`` value: a list of boxes inline, or a ``.json`` box file relative to the scene folder."""
    if isinstance(value, list):
        return BoxSource(at, value)
    path = read_relative_file(value, at, scene_dir, (".json",), "boxes")
    return BoxSource(At(path, "boxes"))


def read_frame_boxes(source: BoxSource | None, frame_token: str) -> FrameBoxes:
    """The boxes of a frame from where they are (none: no boxes)."""
    if source is None:
        return parse_boxes([], At(Path(), "boxes"), frame_token)
    if source.inline is not None:
        return parse_boxes(source.inline, source.at, frame_token)
    return parse_boxes(read_json_file(source.at.path, "box file"), source.at, frame_token)


def parse_boxes(items: Any, at: At, frame_token: str) -> FrameBoxes:
    """The boxes of one frame: a JSON list of box objects (``at`` names the list).

    The boxes are read without places first; only when that pass doubts a value are they read again with places,
    to raise the error with its row, key and reason (or to skip the converter's free ``x_...`` keys).
    """
    if not isinstance(items, list):
        raise at.fail(InvalidValueError, f"boxes must be a JSON list of box objects, got {kind_of(items)}")
    try:
        cols = _box_columns(items, UNLOCATED, frame_token)
    except Doubt:
        cols = _box_columns_checked(items, at, frame_token)
    rotation = np.array(cols.rotation, dtype=np.float64).reshape(-1, 4)
    boxes = Boxes(
        center=np.array(cols.center, dtype=np.float64).reshape(-1, 3),
        size_lwh=np.array(cols.size, dtype=np.float64).reshape(-1, 3),
        yaw=quat_to_yaw(rotation),
        velocity=np.array(cols.velocity, dtype=np.float64).reshape(-1, 3),
        label=_str_array(cols.label),
        track_id=_str_array(cols.instance),
        frame="global",
        extras={ROTATION_GLOBAL: rotation},
    )
    annotations = Annotations(
        boxes=boxes,
        category=_str_array(cols.category),
        token=_str_array(cols.token),
        num_lidar_pts=np.array(cols.lidar, dtype=np.int64),
        num_radar_pts=np.array(cols.radar, dtype=np.int64),
        visibility=np.array(cols.visibility, dtype=np.int64),
        attribute=_str_array(cols.attribute),
    )
    return FrameBoxes(annotations, np.array(cols.has_velocity, dtype=bool))


def _box_columns_checked(items: list[Any], at: At, frame_token: str) -> _BoxColumns:
    """The boxes read with their places: the first wrong value raises with its row (``box i`` of a box file,
    ``boxes[i]`` inline), key and reason."""
    return _box_columns(items, at, frame_token)


def _box_columns(items: list[Any], at: At, frame_token: str) -> _BoxColumns:
    """Every box of the list read by the rule, box by box, into columns."""
    cols = _BoxColumns()
    seen: set[str] = set()
    try:
        for i, item in enumerate(items):
            _read_box(item, at.item(i, "box"), frame_token, seen, cols)
    except Exception:
        _check_unit_rotations(cols.rotation, at)  # a wrong rotation read before the error is the first error
        raise
    _check_unit_rotations(cols.rotation, at)
    return cols


def _check_unit_rotations(rotations: list[list[Any]], at: At) -> None:
    """The unit norm of box ``i``'s rotation ``rotations[i]`` (every box's rotation read so far), checked for all
    at once (check_unit_quaternion per box takes longer than reading the box): the first wrong one raises."""
    q = np.array(rotations, dtype=np.float64).reshape(-1, 4)
    try:
        check_unit_quaternion(q, atol=QUATERNION_ATOL)
    except GeometryError:
        for i, value in enumerate(rotations):
            check_rotations(q[i], value, at.item(i, "box")["rotation_wxyz"])


def _read_box(item: Any, row: At, frame_token: str, seen: set[str], cols: _BoxColumns) -> None:
    """The rule for one box object: its values appended to ``cols``; ``seen`` holds the frame's instances so far."""
    rec = read_object(item, row, BOX_KEYS)
    instance = read_string(rec["instance_id"], row["instance_id"])
    if instance in seen:
        raise row["instance_id"].fail(InvalidValueError, f"instance {instance!r} has two boxes in this frame")
    seen.add(instance)
    category = read_string(rec["category"], row["category"])
    cols.instance.append(instance)
    cols.category.append(category)
    cols.label.append(_box_label(rec, category, row))
    cols.token.append(read_string(rec.get("token", f"{frame_token}_{instance}"), row["token"]))
    cols.center.append(read_numbers(rec["center_m"], row["center_m"], 3))
    cols.size.append(_box_size(rec["size_m"], row["size_m"]))
    cols.rotation.append(read_wxyz(rec["rotation_wxyz"], row["rotation_wxyz"]))  # unit norm: _box_columns
    cols.has_velocity.append("velocity_mps" in rec)
    cols.velocity.append(_box_velocity(rec.get("velocity_mps"), row["velocity_mps"]))
    cols.lidar.append(read_integer(rec.get("num_lidar_pts", 0), row["num_lidar_pts"], low=0))
    cols.radar.append(read_integer(rec.get("num_radar_pts", 0), row["num_radar_pts"], low=0))
    cols.visibility.append(read_integer(rec.get("visibility", 0), row["visibility"], low=0, high=VISIBILITY_BINS))
    cols.attribute.append(read_string(rec.get("attribute", ""), row["attribute"], empty=True))


def _box_label(rec: dict[str, Any], category: str, at: At) -> str:
    """``label``: '' or a detection class; left out, the category's detection class (or the category itself)."""
    if "label" not in rec:
        return detection_class(category) or (category if category in DETECTION_CLASSES else "")
    label = read_string(rec["label"], at["label"], empty=True)
    if label and label not in DETECTION_CLASSES:
        raise at["label"].fail(InvalidValueError, f"{label!r} is not '' or a detection class {list(DETECTION_CLASSES)}")
    return label


def _box_size(value: Any, at: At) -> list[float]:
    """``{"length", "width", "height"}`` -> [l, w, h], each finite and positive."""
    rec = read_object(value, at, SIZE_KEYS)
    out = []
    for key in ("length", "width", "height"):
        x = rec[key]
        if not is_number(x) or not math.isfinite(x) or x <= 0:
            raise at[key].fail(InvalidValueError, f"must be a positive finite number of metres, got {x!r}")
        out.append(float(x))
    return out


def _box_velocity(value: Any, at: At) -> tuple[float, float, float]:
    """null -> unknown (NaN); [vx, vy] (vz = 0) or [vx, vy, vz] with numbers or null (unknown) entries."""
    if value is None:
        return _UNKNOWN_VELOCITY
    if not isinstance(value, list) or len(value) not in (2, 3) or not are_numbers(value, null=True):
        raise at.fail(InvalidValueError, f"must be null or [vx, vy] / [vx, vy, vz] (numbers or null), got {value!r}")
    if not all(x is None or math.isfinite(x) for x in value):
        raise at.fail(InvalidValueError, f"{value!r} has non-finite values (write null where unknown)")
    v = [math.nan if x is None else float(x) for x in value]
    return v[0], v[1], v[2] if len(v) == 3 else 0.0


def derive_velocities(frames: list[FrameBoxes], time_s: np.ndarray) -> None:
    """Fill the velocity of boxes that left ``velocity_mps`` out from their instance's neighbouring boxes, with
    the nuscenes-devkit ``box_velocity`` rule (stridegen.logs._common.neighbour_velocity, docs/log-formats.md)."""
    if all(f.has_velocity.all() for f in frames):
        return
    frame_of = np.concatenate([np.full(len(f.annotations), i, dtype=np.int64) for i, f in enumerate(frames)])
    track = np.concatenate([f.annotations.boxes.track_id.astype(str) for f in frames])
    center = np.concatenate([f.annotations.boxes.center for f in frames]).reshape(-1, 3)
    order = np.lexsort((frame_of, track))  # by instance, then time
    same = np.zeros(order.size, dtype=bool)
    same[1:] = track[order[1:]] == track[order[:-1]]
    prev_idx = np.full(order.size, -1, dtype=np.int64)
    next_idx = np.full(order.size, -1, dtype=np.int64)
    prev_idx[order[1:][same[1:]]] = order[:-1][same[1:]]
    next_idx[order[:-1][same[1:]]] = order[1:][same[1:]]
    derived = neighbour_velocity(center, time_s[frame_of], prev_idx, next_idx)
    start = 0
    for f in frames:
        n = len(f.annotations)
        missing = ~f.has_velocity
        f.annotations.boxes.velocity[missing] = derived[start : start + n][missing]
        start += n


def _str_array(values: list[str]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out
