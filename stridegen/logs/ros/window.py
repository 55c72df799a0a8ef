"""Batched reads of a scene's sensor messages: the serialised messages of a few consecutive frames read in one pass
over their receive-time span, instead of one rosbags query per message.

rosbags reads a recording by its storage unit: an MCAP chunk or a ROS 1 bag chunk (about 1 MB, several messages
of every topic, read, checksummed and decompressed whole) or an SQLite query. A query per message reads its
chunk again for every message in it; one query over a window of frames reads each chunk of the window once
(``rosbags.highlevel.AnyReader.messages(connections, start, stop)``).

The window grows while frames are asked for in order (1, 2, 4, ... up to ``MAX_FRAMES`` frames, within
``MAX_BYTES`` of messages) and falls back to one frame on a jump, so a worker that reads a few samples here and
there does not read whole windows. Only the current window's bytes are held: a worker's memory does not grow
with the recording's length.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any

from stridegen.core.errors import LogFormatError
from stridegen.logs.ros.recording import Recording, header_stamp_ns

MAX_FRAMES = 32  # frames read in one pass at most
MAX_BYTES = 16_000_000  # serialised bytes held at most (the window shrinks for heavy frames; one frame at least)

Key = tuple[str, int, int]  # topic, receive_ns, header_ns


def read_span(recording: Recording, keys: list[Key]) -> dict[Key, Any]:
    """The serialised messages ``keys`` of one recording, read in one pass over their receive-time span (a key
    whose message is missing is absent from the result)."""
    if not keys:
        return {}
    reader = recording.reader()
    topics = {topic for topic, _r, _h in keys}
    wanted: dict[tuple[str, int], set[int]] = {}
    for topic, receive_ns, header_ns in keys:
        wanted.setdefault((topic, receive_ns), set()).add(header_ns)
    conns = [c for c in reader.connections if c.topic in topics]
    start = min(r for _t, r, _h in keys)
    stop = max(r for _t, r, _h in keys) + 1
    found: dict[Key, Any] = {}
    for conn, receive_ns, raw in reader.messages(connections=conns, start=start, stop=stop):
        headers = wanted.get((conn.topic, receive_ns))
        if headers is None:
            continue
        stamped = recording.topics[conn.topic][3]
        header_ns = header_stamp_ns(raw, recording.ros1) if stamped else receive_ns
        if header_ns in headers:
            found.setdefault((conn.topic, receive_ns, header_ns), raw)  # a repeated message: the first kept
            if len(found) == len(keys):
                break
    return found


class MessageWindow:
    """The serialised messages of the frames last read (module docstring). Thread-safe."""

    def __init__(self, max_frames: int = MAX_FRAMES, max_bytes: int = MAX_BYTES) -> None:
        self.max_frames = max_frames
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._messages: dict[Key, Any] = {}
        self._next: tuple[Hashable, int] | None = None  # (scene, frame) that continues the current window
        self._frames = 0
        self._bytes_per_frame = 0.0

    def get(
        self,
        recording: Recording,
        key: Key,
        scene: Hashable,
        frame: int,
        frame_keys: Callable[[int], list[Key] | None],
    ) -> Any:
        """The serialised message ``key`` of frame ``frame`` of ``scene``; on a miss the window is read anew from
        that frame: ``frame_keys(k)`` lists frame k's messages (None past the scene's end)."""
        with self._lock:
            raw = self._messages.get(key)
            if raw is not None:
                return raw
            sequential = self._next == (scene, frame)
            frames = min(self.max_frames, 2 * self._frames) if sequential and self._frames else 1
            if self._bytes_per_frame > 0:
                frames = max(1, min(frames, int(self.max_bytes // self._bytes_per_frame)))
            keys: list[Key] = [key]
            taken = 0
            for k in range(frame, frame + frames):
                more = frame_keys(k)
                if more is None:
                    break
                keys.extend(more)
                taken += 1
            self._messages = {}  # the old window's bytes freed before the new one is read
            keys = list(dict.fromkeys(keys))
            self._messages = read_span(recording, keys)
            self._frames = max(taken, 1)
            self._next = (scene, frame + self._frames)
            size = sum(len(raw) for raw in self._messages.values())
            self._bytes_per_frame = size / self._frames
            raw = self._messages.get(key)
        if raw is None:
            topic, receive_ns, header_ns = key
            raise LogFormatError(
                recording.path, f"no {topic} message received at {receive_ns} ns with stamp {header_ns} ns"
            )
        return raw

    def clear(self) -> None:
        with self._lock:
            self._messages = {}
            self._next = None
            self._frames = 0
