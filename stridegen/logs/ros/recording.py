"""Finding ROS recordings under a log root, opening them with rosbags, and their message index.

A recording is a ROS 1 ``.bag`` file, a ROS 2 bag folder (``metadata.yaml`` with sqlite3 or MCAP storage) or a
bare ``.mcap`` file. The log root is one recording, or a folder whose direct children are (in name order).

The index of a recording (an SQLite file, ``stridegen.logs.index.ensure_index``: in
``<folder>/.stridegen-index/`` or the cache folder, rebuilt when the recording changes) is made in one pass over
its messages, which are not deserialised except the first of each topic: per topic its type, count, first
``frame_id`` and first message; per message its topic, header stamp (read from the serialised bytes: the first
field of every stamped message is a ``std_msgs/Header``) and receive time; and the bytes of the few light
messages (tf, odometry, poses, GNSS, IMU); and, for MCAP storage, the MCAP files (``storage``). A build worker then
reads only its scene's rows and, by receive time, its scene's sensor messages: its memory does not grow with the
recording's length.

A topic whose type the recording defines as the standard store does (``types.typestore``, the same definition of the
type and of every type in it) is marked ``standard`` in the index: its messages from the index (tf, poses,
CameraInfo, first messages) are deserialised with that store, compiled once per process, and a scene is read
without opening rosbags' reader (for MCAP storage) or compiling the recording's own types again.

Sensor messages are read by ``messages``: from MCAP files through their chunk index (``mcapfile``, when the ``mcap``
package is installed and the files are indexed), from a ROS 2 bag's SQLite files directly (``sqlitefile``), from
ROS 1 bags through their chunk index (``bagfile``), else (compressed ROS 2 bags) with rosbags' ``AnyReader``; each
gives the same messages in the same order.
"""

from __future__ import annotations

import sqlite3
import struct
import threading
from collections.abc import Iterator
from hashlib import sha256
from pathlib import Path, PurePath
from typing import Any

from stridegen.core.errors import LogFormatError
from stridegen.logs.index import INDEX_DIR_NAME, connect_index, ensure_index, index_cache_dir, source_key
from stridegen.logs.ros.types import require_rosbags, typestore

SCHEMA = "ros-recording-4"  # 3: every CameraInfo change kept, not only the first message; 4: storage, standard
# Messages whose bytes go into the index (small, needed over a whole scene).
LIGHT_TYPES = (
    "tf2_msgs/msg/TFMessage",
    "nav_msgs/msg/Odometry",
    "geometry_msgs/msg/PoseStamped",
    "geometry_msgs/msg/PoseWithCovarianceStamped",
    "sensor_msgs/msg/NavSatFix",
    "sensor_msgs/msg/Imu",
    "sensor_msgs/msg/CameraInfo",
)
_SQL = """
CREATE TABLE topic (name TEXT PRIMARY KEY, msgtype TEXT, count INTEGER, frame_id TEXT, first BLOB,
                    stamped INTEGER, detail TEXT, standard INTEGER);
CREATE TABLE message (topic TEXT, header_ns INTEGER, receive_ns INTEGER, size INTEGER);
CREATE TABLE blob (topic TEXT, header_ns INTEGER, receive_ns INTEGER, data BLOB);
CREATE TABLE storage (kind TEXT, name TEXT);
"""


def is_recording(path: Path) -> bool:
    """A ``.bag`` file, a ``.mcap`` file or a folder with a ``metadata.yaml``."""
    if path.is_file():
        return path.suffix in (".bag", ".mcap")
    return path.is_dir() and (path / "metadata.yaml").is_file()


def find_recordings(root: Path) -> list[Path]:
    """``root`` when it is a recording, else its children that are, by name."""
    if is_recording(root):
        return [root]
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.name != INDEX_DIR_NAME and is_recording(p))


def is_ros_layout(root: Path) -> bool:
    """Whether ``root`` is a recording or a folder of recordings (the ``ros`` reader's ``detect``)."""
    return bool(find_recordings(Path(root)))


def recording_files(path: Path) -> list[Path]:
    """The files whose change invalidates a recording's index."""
    if path.is_file():
        return [path]
    return sorted(p for p in path.iterdir() if p.is_file())


def header_stamp_ns(raw: bytes | memoryview, ros1: bool) -> int:
    """The header stamp (ns) of a serialised message whose first field is a ``std_msgs/Header``: ROS 1 (uint32
    seq, uint32 sec, uint32 nsec, little endian; ROS wiki roslib/Serialization) or CDR (4-byte encapsulation header
    whose second byte says the byte order, then int32 sec, uint32 nanosec; OMG DDS-XTypes 7.6.3.1)."""
    if ros1:
        sec, nsec = struct.unpack_from("<II", raw, 4)
    else:
        order = "<" if bytes(raw[1:2]) == b"\x01" else ">"
        sec, nsec = struct.unpack_from(order + "iI", raw, 4)
    return int(sec) * 1_000_000_000 + int(nsec)


class Recording:
    """One recording: its open rosbags reader (per process, opened on first use) and its index."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = path.stem if path.is_file() else path.name
        self.ros1 = path.suffix == ".bag"
        self._anyreader: Any = None
        self._direct_files: Any = None  # McapFiles, Sqlite3Files or BagFiles (``_direct``); False: read with rosbags
        self._lock = threading.RLock()
        place = sha256(str(path.resolve()).encode()).hexdigest()[:16]
        file_name = f"ros-{place}.sqlite"
        folder = path.parent
        self.candidates = (folder / INDEX_DIR_NAME / file_name, index_cache_dir() / file_name)
        self.index_path = ensure_index(
            self.candidates, path, lambda: source_key(recording_files(path)), SCHEMA, self._build
        )
        if self.index_path is None:
            raise LogFormatError(path, "cannot write the recording's index anywhere (log folder and cache read-only)")
        self._db = connect_index(self.index_path)
        self.topics: dict[str, tuple[str, int, str, bool, str]] = {}
        self._standard: set[str] = set()  # topics whose type is the standard store's (module docstring)
        for name, msgtype, count, frame_id, stamped, detail, standard in self._db.execute(
            "SELECT name, msgtype, count, frame_id, stamped, detail, standard FROM topic ORDER BY name"
        ):
            self.topics[name] = (msgtype, count, frame_id, bool(stamped), detail)
            if standard:
                self._standard.add(name)

    # ------------------------------------------------------------------------------------------ rosbags
    def reader(self) -> Any:
        """The open ``rosbags.highlevel.AnyReader`` of this recording (ROS 1 or ROS 2 stores as the default)."""
        with self._lock:
            if self._anyreader is None:
                require_rosbags()
                from rosbags.highlevel import AnyReader

                reader = AnyReader([self.path], default_typestore=typestore(self.ros1))
                try:
                    reader.open()
                except Exception as exc:  # rosbags raises its own errors for unreadable containers
                    raise LogFormatError(self.path, f"not a readable recording ({type(exc).__name__}: {exc})") from None
                self._anyreader = reader
            return self._anyreader

    def close(self) -> None:
        with self._lock:
            if self._anyreader is not None:
                self._anyreader.close()
                self._anyreader = None
            self._direct_files = None

    def _direct(self) -> Any:
        """The recording's files read without rosbags (module docstring): MCAP through their chunk index
        (``mcapfile.McapFiles``), SQLite directly (``sqlitefile.Sqlite3Files``), ROS 1 bags through their chunk
        index (``bagfile.BagFiles``); None for compressed ROS 2 bags, MCAP without the ``mcap`` package, files
        without a chunk index."""
        with self._lock:
            if self._direct_files is None:
                self._direct_files = False
                rows = self._db.execute("SELECT kind, name FROM storage").fetchall()
                kinds = {kind for kind, _name in rows}
                paths = [self.path / name if name else self.path for _kind, name in rows]
                from stridegen.logs.ros.bagfile import BagFiles
                from stridegen.logs.ros.mcapfile import McapFiles, NotIndexed, mcap_available
                from stridegen.logs.ros.sqlitefile import Sqlite3Files

                try:
                    if kinds == {"mcap"} and mcap_available():
                        self._direct_files = McapFiles(paths)
                    elif kinds == {"sqlite3"}:
                        self._direct_files = Sqlite3Files(paths)
                    elif kinds == {"ros1"}:
                        self._direct_files = BagFiles(paths)
                except (NotIndexed, OSError):
                    self._direct_files = False
            return self._direct_files or None

    def source(self) -> Any:
        """The object ``messages`` reads from now (a pass started on another one, closed since, is stale)."""
        return self._direct() or self.reader()

    def messages(self, topics: set[str], start: int, stop: int) -> Iterator[tuple[str, int, Any]]:
        """(topic, receive ns, serialised bytes) of the messages of ``topics`` received in [start, stop), in
        receive order (rosbags' order: module docstring)."""
        direct = self._direct()
        if direct is not None:
            return iter(direct.messages(topics, start, stop))
        reader = self.reader()
        conns = [c for c in reader.connections if c.topic in topics]
        if not conns:  # rosbags reads every topic for an empty selection
            return iter(())
        return ((c.topic, t, raw) for c, t, raw in reader.messages(connections=conns, start=start, stop=stop))

    def deserialize(self, raw: bytes | memoryview, msgtype: str) -> Any:
        return self.reader().deserialize(raw, msgtype)

    def deserialize_topic(self, raw: bytes | memoryview, topic: str) -> Any:
        """A message of ``topic``: with the standard store where the topic is ``standard`` (module docstring), else
        with the recording's own types."""
        msgtype = self.topics[topic][0]
        if topic not in self._standard:
            return self.deserialize(raw, msgtype)
        store = typestore(self.ros1)
        try:
            return store.deserialize_ros1(raw, msgtype) if self.ros1 else store.deserialize_cdr(raw, msgtype)
        except Exception:  # rosbags' SerdeError and the struct errors of its generated code: its reader's message
            return self.deserialize(raw, msgtype)

    def read(self, topic: str, receive_ns: int, header_ns: int) -> Any:
        """The deserialised message of ``topic`` received at ``receive_ns`` with that header stamp (``read_many``
        of one key)."""
        return self.read_many(topic, [(header_ns, receive_ns)])[(int(header_ns), int(receive_ns))]

    def read_many(self, topic: str, keys: list[tuple[int, int]]) -> dict[tuple[int, int], Any]:
        """The deserialised messages of ``topic`` at ``keys`` (header_ns, receive_ns), as ``read`` finds each, in
        one rosbags pass over their receive-time span (a query per message reads its chunk again for every
        message, and a ROS 1 query walks the topic's index from the start). LogFormatError naming the first one
        missing."""
        if not keys:
            return {}
        wanted = {(int(r), int(h)) for h, r in keys}
        stamped = self.topics[topic][3]
        receive = {r for r, _h in wanted}
        start, stop = min(receive), max(receive) + 1
        raws: dict[tuple[int, int], Any] = {}
        with self._lock:
            for _topic, receive_ns, raw in self.messages({topic}, start, stop):
                if receive_ns not in receive:
                    continue
                if stamped:
                    key = (int(receive_ns), header_stamp_ns(raw, self.ros1))
                    if key in wanted:
                        raws.setdefault(key, raw)
                else:  # an unstamped message: the first at its receive time, whatever header asked for
                    for r, h in wanted:
                        if r == receive_ns:
                            raws.setdefault((r, h), raw)
        out = {}
        for h, r in keys:
            raw = raws.get((int(r), int(h)))
            if raw is None:
                raise LogFormatError(self.path, f"no {topic} message received at {r} ns with stamp {h} ns")
            out[(int(h), int(r))] = self.deserialize_topic(raw, topic)
        return out

    # ------------------------------------------------------------------------------------------ index
    def _build(self, conn: sqlite3.Connection) -> None:
        """One pass over the recording's messages (module docstring)."""
        conn.executescript(_SQL)
        reader = self.reader()
        store = reader.typestore
        info: dict[str, list[Any]] = {}
        rows: list[tuple[str, int, int, int]] = []
        blobs: list[tuple[str, int, int, bytes]] = []
        info_body: dict[str, bytes] = {}  # CameraInfo: the bytes after the stamp of the last one kept
        for connection, receive_ns, raw in reader.messages():
            topic, msgtype = connection.topic, connection.msgtype
            if topic not in info:
                fields = store.fielddefs.get(msgtype, ((), ()))[1]
                stamped = bool(fields) and fields[0][0] == "header"
                info[topic] = [msgtype, 0, "", bytes(raw), stamped, ""]
                frame_id, detail = _first_message_facts(reader, raw, msgtype)
                info[topic][2], info[topic][5] = frame_id, detail
            entry = info[topic]
            entry[1] += 1
            header_ns = header_stamp_ns(raw, self.ros1) if entry[4] else int(receive_ns)
            rows.append((topic, header_ns, int(receive_ns), len(raw)))
            # A CameraInfo is kept when it differs from the last one kept beyond its stamp (bytes 12 on: after ROS
            # 1 seq, sec, nsec, or the CDR encapsulation, sec, nanosec): its first message and each recalibration.
            keep = msgtype in LIGHT_TYPES
            if keep and msgtype.endswith("CameraInfo"):
                body = bytes(raw[12:])
                keep, info_body[topic] = info_body.get(topic) != body, body
            if keep:
                blobs.append((topic, header_ns, int(receive_ns), bytes(raw)))
            if len(rows) >= 10000:
                conn.executemany("INSERT INTO message VALUES (?, ?, ?, ?)", rows)
                rows = []
            if len(blobs) >= 1000:
                conn.executemany("INSERT INTO blob VALUES (?, ?, ?, ?)", blobs)
                blobs = []
        conn.executemany("INSERT INTO message VALUES (?, ?, ?, ?)", rows)
        conn.executemany("INSERT INTO blob VALUES (?, ?, ?, ?)", blobs)
        # Topics that have a connection and no message (an empty topic) are listed with count 0.
        for connection in reader.connections:
            info.setdefault(connection.topic, [connection.msgtype, 0, "", b"", False, ""])
        standard = typestore(self.ros1)
        conn.executemany(
            "INSERT INTO topic VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (name, e[0], e[1], e[2], e[3], int(e[4]), e[5], int(same_definition(store, standard, e[0])))
                for name, e in info.items()
            ],
        )
        conn.executemany("INSERT INTO storage VALUES (?, ?)", _storage_rows(self.path))
        conn.execute("CREATE INDEX message_by_topic ON message (topic, header_ns)")
        conn.execute("CREATE INDEX blob_by_topic ON blob (topic, header_ns)")

    def stamps(self, topic: str, start_ns: int | None = None, stop_ns: int | None = None) -> list[tuple[int, int]]:
        """(header_ns, receive_ns) of a topic's messages with start <= header stamp < stop, in receive order."""
        lo = -(2**63) if start_ns is None else int(start_ns)
        hi = 2**63 - 1 if stop_ns is None else int(stop_ns)
        with self._lock:
            return [
                (int(h), int(r))
                for h, r in self._db.execute(
                    "SELECT header_ns, receive_ns FROM message WHERE topic = ? AND header_ns >= ? AND header_ns < ? "
                    "ORDER BY rowid",
                    (topic, lo, hi),
                )
            ]

    def size(self, topic: str, receive_ns: int, header_ns: int) -> int | None:
        """Bytes of the serialised message (None when the index has no such message)."""
        with self._lock:
            row = self._db.execute(
                "SELECT size FROM message WHERE topic = ? AND header_ns = ? AND receive_ns = ?",
                (topic, int(header_ns), int(receive_ns)),
            ).fetchone()
        return None if row is None else int(row[0])

    def blobs(self, topic: str, start_ns: int | None = None, stop_ns: int | None = None) -> list[tuple[int, Any]]:
        """(header_ns, deserialised message) of a light topic's messages in the window, in receive order."""
        lo = -(2**63) if start_ns is None else int(start_ns)
        hi = 2**63 - 1 if stop_ns is None else int(stop_ns)
        with self._lock:
            rows = self._db.execute(
                "SELECT header_ns, data FROM blob WHERE topic = ? AND header_ns >= ? AND header_ns < ? ORDER BY rowid",
                (topic, lo, hi),
            ).fetchall()
        return [(int(h), self.deserialize_topic(data, topic)) for h, data in rows]

    def first(self, topic: str) -> Any:
        """The deserialised first message of a topic (None when it has none)."""
        with self._lock:
            row = self._db.execute("SELECT msgtype, first FROM topic WHERE name = ?", (topic,)).fetchone()
        if row is None or not row[1]:
            return None
        return self.deserialize_topic(row[1], topic)


def same_definition(store: Any, standard: Any, msgtype: str) -> bool:
    """Whether rosbags type store ``store`` defines ``msgtype``, and every message type inside it, as ``standard``
    does (the same constants and fields: ``fielddefs``)."""
    todo, seen = [msgtype], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        mine, theirs = store.fielddefs.get(name), standard.fielddefs.get(name)
        if mine is None or mine != theirs:
            return False
        todo.extend(_type_names(mine[1], store.fielddefs))
    return True


def _type_names(node: Any, known: dict[str, Any]) -> list[str]:
    """The message type names inside a ``fielddefs`` entry (nested tuples of node kinds and names)."""
    if isinstance(node, str):
        return [node] if node in known else []
    if isinstance(node, (tuple, list)):
        return [name for item in node for name in _type_names(item, known)]
    return []


def _storage_rows(path: Path) -> list[tuple[str, str]]:
    """The index's storage rows: (kind, file name) for a bare ``.mcap`` ("mcap", name "") or ``.bag`` ("ros1"), or
    for each file of a bag
    folder with MCAP or sqlite3 storage and no bag compression (``metadata.yaml``: rosbag2's ``storage_identifier``,
    ``relative_file_paths``, ``compression_mode``); none otherwise (read with rosbags)."""
    if path.is_file():
        return [("mcap" if path.suffix == ".mcap" else "ros1", "")]
    import yaml

    try:
        info = yaml.safe_load((path / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
        compressed = str(info.get("compression_mode") or "none").lower() != "none"
        kind = str(info["storage_identifier"])
        if kind not in ("mcap", "sqlite3") or compressed:
            return []
        return [(kind, PurePath(str(name)).name) for name in info["relative_file_paths"]]
    except (OSError, yaml.YAMLError, KeyError, TypeError):  # rosbags read it for the index: it decides
        return []


def _first_message_facts(reader: Any, raw: bytes | memoryview, msgtype: str) -> tuple[str, str]:
    """(header frame_id, detail) of a topic's first message: the detail is an image's encoding (Image) or its
    data's kind (CompressedImage: "jpeg", "png" or "format <what it says>")."""
    try:
        msg = reader.deserialize(raw, msgtype)
    except Exception as exc:  # a message that does not match its definition: the check reports it
        return "", f"undecodable ({type(exc).__name__}: {exc})"
    header = getattr(msg, "header", None)
    frame_id = str(getattr(header, "frame_id", "")) if header is not None else ""
    detail = ""
    if msgtype == "sensor_msgs/msg/Image":
        detail = str(msg.encoding)
    elif msgtype == "sensor_msgs/msg/CompressedImage":
        data = bytes(msg.data[:4])
        detail = "jpeg" if data[:2] == b"\xff\xd8" else "png" if data == b"\x89PNG" else f"format {msg.format}"
    return frame_id, detail
