"""Reading the messages of chosen topics from a ROS 2 bag's SQLite files (``.db3``) directly: the ``ros`` reader's
sensor path for sqlite3 storage without bag-level compression, so a scene is read without rosbags' reader (whose
open parses ``metadata.yaml`` and every message definition again).

rosbag2's sqlite3 storage (ros2/rosbag2, rosbag2_storage_sqlite3): a ``topics`` table (id, name, type, ...) and a
``messages`` table (id, topic_id, timestamp, data: the CDR bytes). The query is rosbags' own
(``rosbags.rosbag2.storage_sqlite3``: the topics' ids, the time window, ordered by timestamp, through the same
SQLite binding, ``apsw``), so the messages come in the same order; files are read one after the other, as rosbags
reads a bag's files.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from stridegen.core.errors import LogFormatError


class Sqlite3Files:
    """The ``.db3`` files of one ROS 2 bag, opened read-only."""

    def __init__(self, paths: list[Path]) -> None:
        self.paths = paths
        import apsw  # rosbags' own SQLite binding (a rosbags requirement): its fetch of blobs is about 20% faster

        self._dbs: list[tuple[Any, dict[int, str]]] = []
        for path in paths:
            try:
                db = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
                topics = {int(i): str(name) for i, name in db.execute("SELECT id, name FROM topics")}
            except apsw.Error as exc:
                raise OSError(f"{path}: {exc}") from None
            self._dbs.append((db, topics))

    def messages(self, topics: set[str], start: int, stop: int) -> Iterator[tuple[str, int, bytes]]:
        """(topic, timestamp ns, serialised message) of ``topics`` with start <= timestamp < stop, in order."""
        for path, (db, names) in zip(self.paths, self._dbs, strict=True):
            ids = [i for i, name in names.items() if name in topics]
            if not ids:
                continue
            query = (
                f"SELECT topic_id, timestamp, data FROM messages WHERE topic_id IN ({','.join('?' * len(ids))}) "
                "AND timestamp >= ? AND timestamp < ? ORDER BY timestamp"
            )
            import apsw

            try:
                for topic_id, timestamp, data in db.execute(query, (*ids, int(start), int(stop))):
                    yield names[topic_id], int(timestamp), data
            except apsw.Error as exc:
                raise LogFormatError(path, f"cannot read its messages ({exc})") from None
