"""Reading the messages of chosen topics from indexed MCAP files through their chunk index, without rosbags'
copies: the ``ros`` reader's sensor path for ROS 2 MCAP recordings (bare ``.mcap`` files and bag folders with MCAP
storage and no bag-level compression).

MCAP (mcap.dev/spec, "Records"): a file is a sequence of records (opcode u8, length u64, content); messages sit in
Chunk records (message_start_time u64, message_end_time u64, uncompressed_size u64, uncompressed_crc u32,
compression string, records length u64, records: compressed with "", "lz4" (LZ4 frame) or "zstd"); the summary
section at the end lists every chunk (ChunkIndex: its offset, time span, compression and the channels in it) and
every channel (id, topic). A Message record is channel_id u16, sequence u32, log_time u64, publish_time u64, data.
Strings are a u32 length and UTF-8 bytes; everything little endian.

The summary is parsed with the ``mcap`` package (``mcap.reader.make_reader``; the ``ros`` extra). A chunk is read
only when its time span meets the request and it holds one of the topics; an uncompressed chunk's messages are
``memoryview`` slices of the file's memory map (no copy), a compressed chunk is decompressed once and sliced. A
chunk's CRC, when the writer stored one, is checked as rosbags checks it.

Order: messages in log-time order, chunks merged as rosbags merges them (``rosbags.rosbag2.storage_mcap``: each
chunk's messages sorted by log time, stable; equal times of two chunks by the chunk's file offset; files one after
the other), so a pass yields the same messages in the same order as ``AnyReader.messages``. A chunk is decompressed
only when the merge reaches its start time, so a pass holds about one chunk at a time.
"""

from __future__ import annotations

import heapq
import mmap
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from stridegen.core.errors import LogFormatError

_RECORD = struct.Struct("<BQ")  # opcode, content length
_MESSAGE = struct.Struct("<HIQQ")  # channel_id, sequence, log_time, publish_time
_CHUNK_HEAD = struct.Struct("<QQQI")  # message_start_time, message_end_time, uncompressed_size, uncompressed_crc
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
OP_MESSAGE, OP_CHUNK = 0x05, 0x06


class NotIndexed(Exception):
    """The file has no summary with a chunk index (the caller reads it with rosbags instead)."""


def mcap_available() -> bool:
    """Whether the ``mcap`` package is importable (else the reader reads MCAP with rosbags)."""
    try:
        import mcap.reader  # noqa: F401
    except ImportError:
        return False
    return True


class McapFile:
    """One indexed MCAP file: its memory map, channels and chunk index (module docstring)."""

    def __init__(self, path: Path) -> None:
        from mcap.exceptions import McapError
        from mcap.reader import make_reader

        self.path = path
        with path.open("rb") as f:
            try:
                summary = make_reader(f).get_summary()
            except (McapError, struct.error, ValueError, EOFError) as exc:
                raise NotIndexed(f"{path}: no readable summary ({type(exc).__name__}: {exc})") from None
            if summary is None or not summary.chunk_indexes:
                raise NotIndexed(f"{path}: no chunk index")
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        self.topic_of = {cid: channel.topic for cid, channel in summary.channels.items()}
        self.chunks = sorted(summary.chunk_indexes, key=lambda c: c.chunk_start_offset)

    def messages(self, topics: set[str], start: int, stop: int) -> Iterator[tuple[str, int, memoryview]]:
        """(topic, log_time ns, serialised message) of ``topics`` with start <= log_time < stop, in order."""
        wanted = {cid for cid, topic in self.topic_of.items() if topic in topics}
        if not wanted:
            return
        sources = [
            self._chunk_messages(chunk, wanted, start, stop)
            for chunk in self.chunks
            if start <= chunk.message_end_time
            and chunk.message_start_time < stop
            # A chunk lists its channels in its message index offsets; a writer that wrote no message index
            # leaves them empty, and then the chunk is read to find out.
            and (not chunk.message_index_offsets or not wanted.isdisjoint(chunk.message_index_offsets))
        ]
        for item in heapq.merge(*sources):
            if item[1] >= 0:
                yield item[3], item[0], item[4]

    def _chunk_messages(
        self, chunk: Any, wanted: set[int], start: int, stop: int
    ) -> Iterator[tuple[int, int, int, str, memoryview]]:
        """A chunk's (log_time, chunk offset, position, topic, data), sorted; first a marker at its start time, so
        the merge opens the chunk only when it reaches it."""
        yield (chunk.message_start_time, -1, -1, "", memoryview(b""))
        records = self._records(chunk)
        found = []
        pos, end, position = 0, len(records), 0
        while pos + 9 <= end:
            opcode, length = _RECORD.unpack_from(records, pos)
            pos += 9
            if pos + length > end:
                raise LogFormatError(self.path, f"chunk at byte {chunk.chunk_start_offset}: a record runs past its end")
            if opcode == OP_MESSAGE:
                if length < 22:
                    where = f"chunk at byte {chunk.chunk_start_offset}"
                    raise LogFormatError(self.path, f"{where}: message record of {length} bytes")
                channel, _seq, log_time, _pub = _MESSAGE.unpack_from(records, pos)
                if channel in wanted and start <= log_time < stop:
                    data = records[pos + 22 : pos + length]
                    found.append((log_time, chunk.chunk_start_offset, position, self.topic_of[channel], data))
                    position += 1
            pos += length
        found.sort()  # (log_time, offset, position): rosbags' stable sort by log time
        yield from found
        self._release(chunk)

    def _release(self, chunk: Any) -> None:
        """Unmap the chunk's pages once the merge is past it: a file's mapped pages count in the process's resident
        memory, which would otherwise grow with what a worker has read. Its messages stay readable (a later access
        maps the page again from the page cache)."""
        if hasattr(mmap, "MADV_DONTNEED"):
            start = chunk.chunk_start_offset - chunk.chunk_start_offset % mmap.PAGESIZE
            end = min(chunk.chunk_start_offset + chunk.chunk_length, len(self._map))
            self._map.madvise(mmap.MADV_DONTNEED, start, end - start)

    def _records(self, chunk: Any) -> memoryview:
        """The chunk's records (uncompressed), checked against its size and CRC."""
        if self.path.stat().st_size < len(self._map):  # reading a mapped page past a truncated end kills the process
            raise LogFormatError(self.path, "the file was truncated while it was being read")
        view = memoryview(self._map)
        at = chunk.chunk_start_offset + 9
        _start, _end, size, crc = _CHUNK_HEAD.unpack_from(view, at)
        at += _CHUNK_HEAD.size
        (name_length,) = _U32.unpack_from(view, at)
        compression = bytes(view[at + 4 : at + 4 + name_length]).decode()
        at += 4 + name_length
        (length,) = _U64.unpack_from(view, at)
        at += 8
        if at + length > len(view):
            raise LogFormatError(self.path, f"chunk at byte {chunk.chunk_start_offset} runs past the end of the file")
        data = view[at : at + length]
        if compression == "":
            records = data
        elif compression == "lz4":
            import lz4.frame

            records = memoryview(lz4.frame.decompress(data))
        elif compression == "zstd":
            import zstandard

            records = memoryview(zstandard.ZstdDecompressor().decompress(data, max_output_size=size))
        else:
            where = f"chunk at byte {chunk.chunk_start_offset}"
            raise LogFormatError(self.path, f"{where}: unknown compression {compression!r}")
        if len(records) != size:
            raise LogFormatError(
                self.path, f"chunk at byte {chunk.chunk_start_offset}: {len(records)} bytes, its header says {size}"
            )
        if crc and zlib.crc32(records) != crc:
            raise LogFormatError(self.path, f"chunk at byte {chunk.chunk_start_offset}: CRC mismatch (a damaged file)")
        return records


class McapFiles:
    """The MCAP files of one recording, read one after the other (as rosbags reads a bag's files)."""

    def __init__(self, paths: list[Path]) -> None:
        self.files = [McapFile(p) for p in paths]

    def messages(self, topics: set[str], start: int, stop: int) -> Iterator[tuple[str, int, memoryview]]:
        for f in self.files:
            yield from f.messages(topics, start, stop)
