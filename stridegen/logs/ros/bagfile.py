"""Reading the messages of chosen topics from a ROS 1 bag through its chunk index, without rosbags' per-message
copies: the ``ros`` reader's sensor path for ``.bag`` files (format 2.0).

ROS 1 bag format 2.0 (ROS wiki, Bags/Format/2.0): ``#ROSBAG V2.0\\n`` then records; a record is a header (u32
length, then fields: u32 length, ``name=value``) and data (u32 length, bytes), little endian. The bag header record
(op 0x03) gives ``index_pos``, where the index section starts: Connection records (op 0x07: ``conn``, ``topic``) and
Chunk Info records (op 0x06: ``chunk_pos``, ``start_time`` and ``end_time`` as u32 sec + u32 nsec, data: per
connection (u32 conn, u32 count)). A Chunk record (op 0x05: ``compression`` none / lz4 / bz2, ``size``
uncompressed) holds Connection and Message Data records (op 0x02: ``conn``, ``time``; data: the message).

A chunk is read only when its time span meets the request and it holds one of the topics; its messages are
``memoryview`` slices of the decompressed chunk (no copy per message). Order: rosbags' (``rosbags.rosbag1.reader``
merges the connections' index entries, each connection's sorted by time, comparing times only: equal times by
connection id, then in file order), so a pass yields the same messages in the same order as
``AnyReader.messages``; a chunk is decompressed only when the merge reaches its start time.
"""

from __future__ import annotations

import bz2
import heapq
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from stridegen.core.errors import LogFormatError

MAGIC = b"#ROSBAG V2.0\n"
OP_MSG_DATA, OP_BAG_HEADER, OP_CHUNK, OP_CONNECTION, OP_CHUNK_INFO = 0x02, 0x03, 0x05, 0x07, 0x06
_U32 = struct.Struct("<I")


def _fields(header: bytes | memoryview) -> dict[str, bytes]:
    """A record header's fields (name -> value bytes)."""
    out, pos, end = {}, 0, len(header)
    while pos + 4 <= end:
        (length,) = _U32.unpack_from(header, pos)
        field = bytes(header[pos + 4 : pos + 4 + length])
        name, sep, value = field.partition(b"=")
        if not sep or pos + 4 + length > end:
            raise ValueError("a header field without '='")
        out[name.decode()] = value
        pos += 4 + length
    return out


def _time(value: bytes) -> int:
    sec, nsec = struct.unpack("<II", value)
    return sec * 1_000_000_000 + nsec


def _record(f: BinaryIO) -> tuple[dict[str, bytes], int, int]:
    """The record at the file position: (header fields, data position, data length); the file left after it."""
    (length,) = _U32.unpack(f.read(4))
    fields = _fields(f.read(length))
    (size,) = _U32.unpack(f.read(4))
    at = f.tell()
    f.seek(size, 1)
    return fields, at, size


class BagFile:
    """One ROS 1 bag: its connections' topics and chunk infos (module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.topic_of: dict[int, str] = {}
        self.chunks: list[tuple[int, int, int, set[int]]] = []  # (chunk_pos, start_time, end_time, connections)
        with path.open("rb") as f:
            try:
                if f.read(len(MAGIC)) != MAGIC:
                    raise ValueError("not a ROS 1 bag of format 2.0")
                fields, _at, _size = _record(f)
                if fields.get("op") != bytes([OP_BAG_HEADER]):
                    raise ValueError("no bag header record")
                (index_pos,) = struct.unpack("<Q", fields["index_pos"])
                if index_pos == 0:
                    raise ValueError("an unindexed bag (index_pos 0)")
                f.seek(index_pos)
                end = path.stat().st_size
                while f.tell() < end:
                    fields, at, size = _record(f)
                    op = fields.get("op")
                    if op == bytes([OP_CONNECTION]):
                        self.topic_of[_U32.unpack(fields["conn"])[0]] = fields["topic"].decode()
                    elif op == bytes([OP_CHUNK_INFO]):
                        f.seek(at)
                        data = f.read(size)
                        conns = {_U32.unpack_from(data, 8 * k)[0] for k in range(len(data) // 8)}
                        (pos,) = struct.unpack("<Q", fields["chunk_pos"])
                        self.chunks.append((pos, _time(fields["start_time"]), _time(fields["end_time"]), conns))
            except (ValueError, KeyError, struct.error, UnicodeDecodeError) as exc:
                raise OSError(f"{path}: cannot read its index ({exc})") from None
        self.chunks.sort()

    def messages(self, topics: set[str], start: int, stop: int) -> Iterator[tuple[str, int, memoryview]]:
        """(topic, receive time ns, serialised message) of ``topics`` with start <= time < stop, in order."""
        wanted = {conn for conn, topic in self.topic_of.items() if topic in topics}
        if not wanted:
            return
        sources = [
            self._chunk_messages(chunk, wanted, start, stop)
            for chunk in self.chunks
            if start <= chunk[2] and chunk[1] < stop and not wanted.isdisjoint(chunk[3])
        ]
        for item in heapq.merge(*sources):
            if item[1] >= 0:
                yield item[4], item[0], item[5]

    def _chunk_messages(
        self, chunk: tuple[int, int, int, set[int]], wanted: set[int], start: int, stop: int
    ) -> Iterator[tuple[int, int, int, int, str, memoryview]]:
        """A chunk's (time, connection, chunk position, offset, topic, data) in order; first a marker at its start
        time."""
        yield (chunk[1], -1, -1, -1, "", memoryview(b""))
        records = self._records(chunk[0])
        found = []
        pos, end = 0, len(records)
        try:
            while pos < end:
                offset = pos
                (length,) = _U32.unpack_from(records, pos)
                header = records[pos + 4 : pos + 4 + length]
                pos += 4 + length
                (size,) = _U32.unpack_from(records, pos)
                pos += 4
                if pos + size > end:
                    raise ValueError("a record runs past the chunk's end")
                fields = _fields(header)
                if fields.get("op") == bytes([OP_MSG_DATA]):
                    conn = _U32.unpack(fields["conn"])[0]
                    time = _time(fields["time"])
                    if conn in wanted and start <= time < stop:
                        found.append((time, conn, chunk[0], offset, self.topic_of[conn], records[pos : pos + size]))
                pos += size
        except (ValueError, KeyError, struct.error) as exc:
            raise LogFormatError(self.path, f"chunk at byte {chunk[0]}: {exc}") from None
        found.sort()  # rosbags' merge of the connections' index entries: by time, then connection, then file order
        yield from found

    def _records(self, chunk_pos: int) -> memoryview:
        """The chunk's records, decompressed and checked against its ``size``."""
        with self.path.open("rb") as f:
            f.seek(chunk_pos)
            try:
                fields, at, size = _record(f)
                compression = fields["compression"].decode()
                (expected,) = _U32.unpack(fields["size"])
            except (ValueError, KeyError, struct.error, UnicodeDecodeError) as exc:
                raise LogFormatError(self.path, f"chunk at byte {chunk_pos}: {exc}") from None
            f.seek(at)
            data = f.read(size)
        if compression == "none":
            records = data
        elif compression == "lz4":
            import lz4.frame

            records = lz4.frame.decompress(data)
        elif compression == "bz2":
            records = bz2.decompress(data)
        else:
            raise LogFormatError(self.path, f"chunk at byte {chunk_pos}: unknown compression {compression!r}")
        if len(records) != expected:
            raise LogFormatError(
                self.path, f"chunk at byte {chunk_pos}: {len(records)} bytes, its header says {expected}"
            )
        return memoryview(records)


class BagFiles:
    """The one bag file of a ROS 1 recording (the ``messages`` interface of ``mcapfile.McapFiles``)."""

    def __init__(self, paths: list[Path]) -> None:
        self.files = [BagFile(p) for p in paths]

    def messages(self, topics: set[str], start: int, stop: int) -> Iterator[tuple[str, int, Any]]:
        for f in self.files:
            yield from f.messages(topics, start, stop)
