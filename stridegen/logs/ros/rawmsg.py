"""Reading the few sensor messages the reader decodes per frame straight from their serialised bytes, without
building rosbags' message objects: ``sensor_msgs/PointCloud2`` and ``sensor_msgs/CompressedImage``.

Wire formats:

- ROS 1 (ROS wiki, roslib/Serialization): little endian, no alignment; a string or an array is a uint32 count and
  its elements; ``std_msgs/Header`` is uint32 seq, uint32 sec, uint32 nsec, string frame_id.
- ROS 2 CDR (OMG DDS-XTypes 1.3, 7.4.3 plain CDR, as ROS 2's rmw serialises): a 4-byte encapsulation header whose
  second byte is 1 for little endian, 0 for big endian; every primitive aligned to its size counted from the end of
  that header; a string is a uint32 length that counts its NUL terminator, then the bytes and the NUL; a sequence
  is a uint32 count and its elements; ``std_msgs/Header`` is int32 sec, uint32 nanosec, string frame_id.

A parse that does not land exactly on the message's end (CDR: up to 3 bytes of padding) returns None, and the
caller deserialises with rosbags instead: a message that does not follow the standard definition is never
misread.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

_U32 = {"<": struct.Struct("<I"), ">": struct.Struct(">I")}
_STAMP = {"<": struct.Struct("<iI"), ">": struct.Struct(">iI")}


class _Cursor:
    """Reads a serialised message from its start (ROS 1) or from after the CDR encapsulation header."""

    def __init__(self, raw: bytes | memoryview, ros1: bool) -> None:
        self.raw = raw
        self.size = len(raw)
        if ros1:
            self.order, self.base, self.pos, self.aligned = "<", 0, 0, False
        else:
            if self.size < 4:
                raise ValueError("shorter than the CDR header")
            self.order = "<" if bytes(raw[1:2]) == b"\x01" else ">"
            self.base, self.pos, self.aligned = 4, 4, True

    def align(self, n: int) -> None:
        if self.aligned:
            self.pos += (-(self.pos - self.base)) % n

    def u32(self) -> int:
        self.align(4)
        if self.pos + 4 > self.size:
            raise ValueError("truncated")
        value = int(_U32[self.order].unpack_from(self.raw, self.pos)[0])
        self.pos += 4
        return value

    def u8(self) -> int:
        if self.pos + 1 > self.size:
            raise ValueError("truncated")
        value = int(self.raw[self.pos])
        self.pos += 1
        return value

    def skip_string(self) -> None:
        length = self.u32()
        if self.pos + length > self.size:
            raise ValueError("truncated")
        self.pos += length

    def string(self) -> str:
        length = self.u32()
        start = self.pos
        if start + length > self.size:
            raise ValueError("truncated")
        self.pos += length
        text = bytes(self.raw[start : start + length])
        return (text[:-1] if self.aligned and text.endswith(b"\0") else text).decode()

    def byte_array(self) -> tuple[int, int]:
        """(offset, length) of a uint8[] in the buffer."""
        length = self.u32()
        if self.pos + length > self.size:
            raise ValueError("truncated")
        start = self.pos
        self.pos += length
        return start, length

    def header_stamp(self) -> tuple[int, int]:
        """(sec, nanosec) of a leading std_msgs/Header, its frame_id skipped."""
        if not self.aligned:
            self.u32()  # seq
        self.align(4)
        if self.pos + 8 > self.size:
            raise ValueError("truncated")
        sec, nsec = _STAMP[self.order].unpack_from(self.raw, self.pos)
        self.pos += 8
        self.skip_string()
        return int(sec), int(nsec)

    def at_end(self) -> bool:
        rest = self.size - self.pos
        return rest == 0 or (self.aligned and 0 <= rest < 4)


@dataclass
class CloudLayout:
    """A PointCloud2's fields (name, offset, datatype, count) and shape, and where its data lies in the buffer."""

    stamp_sec: int
    stamp_nanosec: int
    height: int
    width: int
    fields: tuple[tuple[str, int, int, int], ...]
    is_bigendian: bool
    point_step: int
    row_step: int
    data_offset: int
    data_length: int


# The last fields section parsed, per wire format: (its bytes, the fields). Every message of a topic has the same
# fields, and the section starts 4-aligned (its count is a uint32), so equal bytes are the same fields.
_last_fields: dict[tuple[bool, str], tuple[bytes, tuple[tuple[str, int, int, int], ...]]] = {}


def pointcloud2_layout(raw: bytes | memoryview, ros1: bool) -> CloudLayout | None:
    """The layout of a serialised sensor_msgs/PointCloud2 (None when the bytes do not parse as one)."""
    try:
        c = _Cursor(raw, ros1)
        sec, nsec = c.header_stamp()
        height, width = c.u32(), c.u32()
        c.align(4)
        start = c.pos
        last = _last_fields.get((ros1, c.order))
        if last is not None and raw[start : start + len(last[0])] == last[0]:
            c.pos += len(last[0])
            fields = last[1]
        else:
            parsed = []
            for _ in range(c.u32()):
                name = c.string()
                offset = c.u32()
                datatype = c.u8()
                count = c.u32()
                parsed.append((name, offset, datatype, count))
            fields = tuple(parsed)
            _last_fields[(ros1, c.order)] = (bytes(raw[start : c.pos]), fields)
        is_bigendian = bool(c.u8())
        point_step, row_step = c.u32(), c.u32()
        data_offset, data_length = c.byte_array()
        c.u8()  # is_dense
        if not c.at_end():
            return None
    except (ValueError, UnicodeDecodeError, struct.error, IndexError):
        return None
    return CloudLayout(sec, nsec, height, width, fields, is_bigendian, point_step, row_step, data_offset, data_length)


def compressed_image_data(raw: bytes | memoryview, ros1: bool) -> tuple[str, int, int] | None:
    """(format, data offset, data length) of a serialised sensor_msgs/CompressedImage (None when the bytes do not
    parse as one)."""
    try:
        c = _Cursor(raw, ros1)
        c.header_stamp()
        fmt = c.string()
        offset, length = c.byte_array()
        if not c.at_end():
            return None
    except (ValueError, UnicodeDecodeError, struct.error, IndexError):
        return None
    return fmt, offset, length
