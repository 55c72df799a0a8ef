"""Streamed reads of a scene's sensor messages: one rosbags pass over the scene, kept open while its frames are read
in order, instead of one rosbags query per message.

A recording is read by its storage unit: an MCAP chunk or a ROS 1 bag chunk (about 1 MB, several messages
of every topic, read, checksummed and decompressed whole) or an SQLite query. A query per message reads its chunk
again for every message in it (and a ROS 1 query walks the topic's index from the start). ``SceneCursor`` keeps
one ``Recording.messages(topics, start, stop)`` generator (MCAP files through their index, else rosbags'
``AnyReader.messages``) over the scene's receive-time span and pulls from it as frames are asked for: each chunk
is read once, as in rosbags' own iteration.

Only the messages of the frame asked for, the one before it (a sample read twice: a sweep for its frame's boxes)
and those pulled on the way (another sensor of a later frame received earlier) are held, so a worker's memory
does not grow with the scene's or the recording's length. A request behind the cursor, or far ahead of it,
starts a new pass at that frame: a worker that reads a few samples here and there reads about what it asks for.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterator
from typing import Any

import numpy as np

from stridegen.core.errors import LogFormatError
from stridegen.logs.ros.recording import Recording, header_stamp_ns

Key = tuple[str, int, int]  # topic, receive_ns, header_ns
AHEAD_FRAMES = 8  # a request this many frames past the cursor's frame starts a new pass instead of reading on


class _Pass:
    """One scene's messages: every (frame, key) of it, and the open rosbags generator."""

    def __init__(self, recording: Recording, scene: Hashable, keys: list[tuple[int, Key]]) -> None:
        self.recording = recording
        self.scene = scene
        self.frame_of: dict[tuple[str, int], dict[int, int]] = {}  # (topic, receive_ns) -> header_ns -> frame
        frames = max((f for f, _k in keys), default=-1) + 1
        first_receive = np.full(frames + 1, np.iinfo(np.int64).max, dtype=np.int64)
        for frame, (topic, receive_ns, header_ns) in keys:
            self.frame_of.setdefault((topic, receive_ns), {}).setdefault(header_ns, frame)
            first_receive[frame] = min(first_receive[frame], receive_ns)
        # The earliest receive time of frame k or any later frame: where a pass that starts at frame k begins.
        self.start_at = np.minimum.accumulate(first_receive[::-1])[::-1]
        self.stop = max((k[1] for _f, k in keys), default=0) + 1
        self.topics = {k[0] for _f, k in keys}
        self.messages: Iterator[tuple[str, int, Any]] | None = None
        self.source: Any = None  # what the generator reads (``Recording.source``; another one: start a new pass)
        self.frame = 0  # the frame the generator was started at or last asked for
        self.held: dict[Key, tuple[int, Any]] = {}  # key -> (frame, serialised bytes)

    def restart(self, frame: int) -> None:
        self.held = {}
        self.messages = None  # the old generator (and its chunk) released first
        self.source = self.recording.source()
        start = int(self.start_at[min(frame, self.start_at.size - 1)])
        self.messages = self.recording.messages(self.topics, start, self.stop)
        self.frame = frame

    def pull(self, key: Key) -> Any:
        """Read on until ``key``'s message (None when the pass ends without it); the scene's messages met on the
        way are held."""
        assert self.messages is not None
        stamped = self.recording.topics
        for topic, receive_ns, raw in self.messages:
            headers = self.frame_of.get((topic, receive_ns))
            if headers is None:
                continue
            header_ns = header_stamp_ns(raw, self.recording.ros1) if stamped[topic][3] else receive_ns
            frame = headers.get(header_ns)
            if frame is None or frame < self.frame - 1:
                continue
            found = (topic, receive_ns, header_ns)
            self.held.setdefault(found, (frame, raw))  # a repeated message: the first kept
            if found == key:
                return self.held[found][1]
        self.messages = None
        return None

    def forget_before(self, frame: int) -> None:
        """Drop the held messages of frames before ``frame``."""
        if any(f < frame for f, _r in self.held.values()):
            self.held = {k: v for k, v in self.held.items() if v[0] >= frame}


class SceneCursor:
    """The serialised messages of one scene at a time (module docstring). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pass: _Pass | None = None

    def get(
        self,
        recording: Recording,
        key: Key,
        scene: Hashable,
        frame: int,
        scene_keys: Callable[[], list[tuple[int, Key]]],
    ) -> Any:
        """The serialised message ``key`` of frame ``frame`` of ``scene``; ``scene_keys()`` lists every (frame,
        key) of the scene (asked once per scene)."""
        with self._lock:
            p = self._pass
            if p is None or p.scene != scene or p.recording is not recording:
                p = self._pass = None  # the previous scene's pass released first
                p = self._pass = _Pass(recording, scene, scene_keys())
            held = p.held.get(key)
            if held is not None:
                raw = held[1]
            else:
                behind = (
                    p.messages is None
                    or p.source is not recording.source()
                    or frame < p.frame - 1
                    or frame > p.frame + AHEAD_FRAMES
                )
                if behind:
                    p.restart(frame)
                raw = p.pull(key)
                if raw is None and not behind:  # passed it (a message asked for again after it was dropped)
                    p.restart(frame)
                    raw = p.pull(key)
            if frame > p.frame:
                p.frame = frame
            p.forget_before(p.frame - 1)
        if raw is None:
            topic, receive_ns, header_ns = key
            raise LogFormatError(
                recording.path, f"no {topic} message received at {receive_ns} ns with stamp {header_ns} ns"
            )
        return raw

    def clear(self) -> None:
        with self._lock:
            self._pass = None
