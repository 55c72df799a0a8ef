"""``sensor_msgs/PointCloud2`` -> a stridegen sweep: x, y, z, intensity, ring as [N, 5] float32 in the message's
frame, plus per-point times (s, relative to the header stamp) when the cloud has them.

Any field layout: the fields' offsets, datatypes (sensor_msgs/msg/PointField.msg: INT8=1 ... FLOAT64=8) and
counts give a numpy structured dtype of ``point_step`` bytes, in the message's byte order (``is_bigendian``).
Organised clouds (``height > 1``) are read row by row (``row_step`` bytes each, padding skipped). Points with a
non-finite x, y or z (the NaN returns of an organised cloud) are dropped. Intensity: ``intensity``, ``i`` or
``reflectivity``, else 0; ring: ``ring``, ``channel``, ``line`` or ``laser_id``, else 0.

Per-point time, by the first present of (driver conventions, each one's documented unit):

- ``t`` (Ouster ouster-ros, uint32 ns since the sweep start),
- ``offset_time`` (Livox livox_ros_driver2, uint32 ns since the frame stamp),
- ``time`` (Velodyne velodyne_pointcloud, float32 s relative to the stamp),
- ``time_offset``, ``timestamp`` (Hesai / Robosense drivers: float64 absolute s, or relative),

with the unit read from the type: an integer field counts nanoseconds, a float field seconds; a value above 1e9 s
(after 2001) is an absolute time and the stamp is subtracted. The writer of the synthetic recordings uses ``t`` as
float32 seconds relative to the stamp.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from stridegen.core.errors import LogFormatError

# sensor_msgs/PointField datatype -> numpy type code (PointField.msg constants).
DATATYPES = {1: "i1", 2: "u1", 3: "i2", 4: "u2", 5: "i4", 6: "u4", 7: "f4", 8: "f8"}
INTENSITY_NAMES = ("intensity", "i", "reflectivity")
RING_NAMES = ("ring", "channel", "line", "laser_id")
TIME_NAMES = ("t", "offset_time", "time", "time_offset", "timestamp")
ABSOLUTE_TIME_S = 1e9  # a per-point time above this many seconds is a Unix time, not an offset


@dataclass
class DecodedCloud:
    """One decoded sweep in the message's frame."""

    points: np.ndarray  # [N, 5] float32: x, y, z, intensity, ring
    times_s: np.ndarray | None  # [N] float64 s relative to the header stamp; None without a time field
    time_field: str | None
    dropped_nan: int


def cloud_dtype(fields: list[tuple[str, int, int, int]], point_step: int, big_endian: bool) -> np.dtype:
    """The structured dtype of one point: ``fields`` as (name, offset, datatype, count)."""
    order = ">" if big_endian else "<"
    names, formats, offsets = [], [], []
    for name, offset, datatype, count in fields:
        if datatype not in DATATYPES:
            raise ValueError(f"field {name!r} has unknown PointField datatype {datatype}")
        if name in names:
            continue  # a repeated name (some drivers pad with ''): the first wins
        code = order + DATATYPES[datatype]
        names.append(name or f"_pad{offset}")
        formats.append((code, (count,)) if count > 1 else code)
        offsets.append(offset)
    return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": point_step})


def decode_pointcloud2(msg: Any, where: str) -> DecodedCloud:
    """Decode a deserialised PointCloud2 (module docstring); LogFormatError naming ``where`` when it is broken."""
    fields = [(str(f.name), int(f.offset), int(f.datatype), int(f.count)) for f in msg.fields]
    names = {f[0] for f in fields}
    missing = [c for c in ("x", "y", "z") if c not in names]
    if missing:
        raise LogFormatError(where, f"PointCloud2 has no {missing} field (fields: {sorted(names)})")
    try:
        dtype = cloud_dtype(fields, int(msg.point_step), bool(msg.is_bigendian))
    except ValueError as exc:
        raise LogFormatError(where, f"PointCloud2 {exc}") from None
    height, width, row_step = int(msg.height), int(msg.width), int(msg.row_step)
    data = np.asarray(msg.data, dtype=np.uint8).reshape(-1)
    needed = (height - 1) * row_step + width * int(msg.point_step) if height and width else 0
    if data.size < needed or (height > 1 and row_step < width * int(msg.point_step)):
        raise LogFormatError(
            where, f"PointCloud2 data has {data.size} bytes; {height}x{width} points of {msg.point_step} need {needed}"
        )
    if height <= 1 or row_step == width * int(msg.point_step):
        records = np.frombuffer(np.ascontiguousarray(data), dtype=dtype, count=height * width)  # no copy
    else:
        rows = data[: height * row_step].reshape(height, row_step)[:, : width * int(msg.point_step)]
        records = np.frombuffer(np.ascontiguousarray(rows), dtype=dtype, count=height * width)
    keep = np.isfinite(records["x"]) & np.isfinite(records["y"]) & np.isfinite(records["z"])
    n = int(np.count_nonzero(keep))
    points = np.empty((n, 5), dtype=np.float32)
    everything = n == keep.size
    for column, name in enumerate(("x", "y", "z")):
        points[:, column] = records[name] if everything else records[name][keep]
    intensity = next((c for c in INTENSITY_NAMES if c in names), None)
    points[:, 3:] = 0.0
    if intensity is not None:
        points[:, 3] = records[intensity] if everything else records[intensity][keep]
    ring = next((c for c in RING_NAMES if c in names), None)
    if ring is not None:
        points[:, 4] = records[ring] if everything else records[ring][keep]
    time_field = next((c for c in TIME_NAMES if c in names), None)
    times = None
    if time_field is not None:
        raw = records[time_field] if everything else records[time_field][keep]
        if np.issubdtype(raw.dtype, np.integer):
            times = raw.astype(np.float64) * 1e-9
        else:
            times = raw.astype(np.float64)
        if times.size and np.nanmax(np.abs(times)) > ABSOLUTE_TIME_S:
            stamp = int(msg.header.stamp.sec) + int(msg.header.stamp.nanosec) * 1e-9
            times = times - stamp
    return DecodedCloud(points, times, time_field, int(keep.size - n))
