"""MCAP files read through their chunk index (stridegen/logs/ros/mcapfile.py, issue 34 throughput): the same messages,
bytes and order as rosbags' own MCAP reader, for uncompressed, LZ4 and zstd chunks with CRCs, overlapping chunks,
equal log times, topic and time selections; a damaged chunk is an error naming it; a file without a chunk index is
left to rosbags; the ros reader's recordings go through it (and fall back) with the same result; a sweep decoded
from an unaligned slice of the file is the one decoded from aligned bytes."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rosbags")
pytest.importorskip("mcap")

from mcap.writer import CompressionType, Writer

from stridegen.core.errors import LogFormatError
from stridegen.logs.ros.mcapfile import McapFile, McapFiles, NotIndexed
from stridegen.logs.ros.pointcloud2 import decode_pointcloud2_bytes

TOPICS = ("/a", "/b", "/c")


def _write(path: Path, compression: CompressionType, chunking: bool = True, seed: int = 0) -> list[tuple]:
    """An MCAP of three topics whose log times go back and forth (chunks overlap in time) and repeat; returns
    (topic, log_time, data) as written."""
    rng = random.Random(seed)
    written = []
    with path.open("wb") as f:
        writer = Writer(f, chunk_size=700, compression=compression, use_chunking=chunking)
        writer.start(profile="ros2", library="test")
        schema = writer.register_schema("std_msgs/msg/String", "ros2msg", b"string data")
        channels = {t: writer.register_channel(t, "cdr", schema) for t in TOPICS}
        for k in range(300):
            topic = TOPICS[rng.randrange(3)]
            log_time = 1_000 + 10 * k + rng.choice([0, 0, -35, 40])  # out of order, equal times
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 90)))
            writer.add_message(channels[topic], log_time=log_time, data=data, publish_time=log_time, sequence=k)
            written.append((topic, log_time, data))
        writer.finish()
    return written


def _rosbags(path: Path, topics: set[str], start: int, stop: int) -> list[tuple[str, int, bytes]]:
    from rosbags.rosbag2.storage_mcap import McapReader

    reader = McapReader(path)
    reader.open()
    try:
        conns = [c for c in reader.connections if c.topic in topics]
        return [(c.topic, t, bytes(d)) for c, t, d in reader.messages(conns, start, stop)]
    finally:
        reader.close()


@pytest.mark.parametrize("compression", [CompressionType.NONE, CompressionType.LZ4, CompressionType.ZSTD])
def test_same_messages_and_order_as_rosbags(tmp_path: Path, compression: CompressionType) -> None:
    path = tmp_path / "x.mcap"
    written = _write(path, compression)
    f = McapFile(path)
    assert len(f.chunks) > 10  # many chunks, overlapping in time
    for topics, start, stop in [
        (set(TOPICS), 0, 2**62),
        ({"/b"}, 0, 2**62),
        ({"/a", "/c"}, 1_500, 2_600),
        ({"/c"}, 1_995, 1_996),
    ]:
        ours = [(t, n, bytes(d)) for t, n, d in f.messages(topics, start, stop)]
        assert ours == _rosbags(path, topics, start, stop)
        expected = sorted(((t, n, d) for t, n, d in written if t in topics and start <= n < stop), key=lambda m: m[1])
        assert sorted(ours, key=lambda m: (m[1], m[0], m[2])) == sorted(expected, key=lambda m: (m[1], m[0], m[2]))
    assert list(f.messages({"/nothing"}, 0, 2**62)) == []


def test_damaged_chunk_is_an_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "x.mcap"
    _write(path, CompressionType.NONE)
    chunk = McapFile(path).chunks[3]
    raw = bytearray(path.read_bytes())
    raw[chunk.chunk_start_offset + chunk.chunk_length - 5] ^= 0xFF  # a byte of the chunk's last record
    path.write_bytes(bytes(raw))
    with pytest.raises(LogFormatError, match=f"chunk at byte {chunk.chunk_start_offset}: CRC mismatch"):
        list(McapFiles([path]).messages(set(TOPICS), 0, 2**62))


def test_file_without_chunk_index_is_left_to_rosbags(tmp_path: Path) -> None:
    path = tmp_path / "x.mcap"
    _write(path, CompressionType.NONE, chunking=False)
    with pytest.raises(NotIndexed):
        McapFile(path)


@pytest.mark.parametrize("container", ["ros2-mcap", "ros2-sqlite3", "ros1"])
def test_recording_reads_the_same_through_either_path(tmp_path: Path, scene, container: str) -> None:
    from stridegen.logs.ros.reader import RosReader
    from stridegen.logs.synthetic.ros_writer import scene_messages, write_recording

    name = "rec.bag" if container == "ros1" else "rec"
    write_recording(tmp_path / name, container, scene_messages(scene, "tf", None, True))
    rec = RosReader(tmp_path).recordings[0]
    direct = rec._direct()
    assert direct is not None
    topics = set(rec.topics)
    ours = [(t, n, bytes(d)) for t, n, d in rec.messages(topics, 0, 2**62)]
    rec._mcap = False  # rosbags' AnyReader
    theirs = [(t, n, bytes(d)) for t, n, d in rec.messages(topics, 0, 2**62)]
    assert ours == theirs and len(ours) > 50


def test_unaligned_sweep_decodes_as_aligned() -> None:
    from stridegen.logs.ros.types import make, typestore

    store = typestore(False)
    rng = np.random.default_rng(3)
    clouds = []
    for _ in range(2):
        rec = np.zeros(500, dtype=[("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("t", "<f4")])
        for c in "xyzt":
            rec[c] = rng.normal(size=500)
        rec["x"][7] = np.nan
        fields = [
            make(store, "sensor_msgs/msg/PointField", name=c, offset=4 * i, datatype=7, count=1)
            for i, c in enumerate("xyzt")
        ]
        msg = make(
            store,
            "sensor_msgs/msg/PointCloud2",
            header=make(
                store,
                "std_msgs/msg/Header",
                stamp=make(store, "builtin_interfaces/msg/Time", sec=1, nanosec=0),
                frame_id="l",
            ),
            height=1,
            width=500,
            fields=fields,
            is_bigendian=False,
            point_step=16,
            row_step=16 * 500,
            data=np.frombuffer(rec.tobytes(), dtype=np.uint8),
            is_dense=False,
        )
        clouds.append(bytes(store.serialize_cdr(msg, "sensor_msgs/msg/PointCloud2")))
    decoded = []
    for raw in clouds:
        for shift in (0, 3):  # 3: the message starts 3 bytes into a buffer, as in a file's memory map
            view = memoryview(b"\0" * shift + raw)[shift:]
            decoded.append(decode_pointcloud2_bytes(view, False, "x"))
    a, a3, b, b3 = decoded  # a3's times must survive b3's decode (the scratch buffer is reused)
    for x, y in [(a, a3), (b, b3)]:
        np.testing.assert_array_equal(x.points, y.points)
        np.testing.assert_array_equal(x.time_values, y.time_values)
        assert x.points.shape == (499, 5)


@pytest.mark.parametrize("compression", ["none", "lz4", "bz2"])
def test_ros1_bag_same_messages_and_order_as_rosbags(tmp_path: Path, compression: str) -> None:
    from rosbags.rosbag1 import Writer as Writer1

    from stridegen.logs.ros.bagfile import BagFiles
    from stridegen.logs.ros.types import make, typestore

    store = typestore(True)
    rng = random.Random(5)
    path = tmp_path / "x.bag"
    writer = Writer1(path)
    writer.chunk_threshold = 600  # many chunks, overlapping in time
    if compression != "none":
        writer.set_compression(getattr(Writer1.CompressionFormat, compression.upper()))
    with writer:
        conns = {t: writer.add_connection(t, "std_msgs/msg/String", typestore=store) for t in TOPICS}
        for k in range(300):
            topic = TOPICS[rng.randrange(3)]
            time = 1_000 + 10 * k + rng.choice([0, 0, -35, 40])
            text = "x" * rng.randrange(90)
            writer.write(
                conns[topic],
                time,
                store.serialize_ros1(make(store, "std_msgs/msg/String", data=text), "std_msgs/msg/String"),
            )
    from rosbags.highlevel import AnyReader

    bag = BagFiles([path])
    assert len(bag.files[0].chunks) > 10
    with AnyReader([path], default_typestore=store) as reader:
        for topics, start, stop in [(set(TOPICS), 0, 2**62), ({"/b"}, 0, 2**62), ({"/a", "/c"}, 1_500, 2_600)]:
            conns_ = [c for c in reader.connections if c.topic in topics]
            theirs = [(c.topic, t, bytes(d)) for c, t, d in reader.messages(connections=conns_, start=start, stop=stop)]
            assert [(t, n, bytes(d)) for t, n, d in bag.messages(topics, start, stop)] == theirs


def test_standard_definition_is_compared_through_nested_types() -> None:
    """Index messages are decoded with the process's standard store only where the recording defines the type, and
    every type inside it, the same way; a company's own Transform (one field more) inside TFMessage is not."""
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    from stridegen.logs.ros.recording import same_definition
    from stridegen.logs.ros.types import typestore

    standard = typestore(False)
    same = get_typestore(Stores.EMPTY)
    same.register(standard.fielddefs)
    assert same_definition(same, standard, "tf2_msgs/msg/TFMessage")
    own = get_typestore(Stores.EMPTY)
    types = dict(standard.fielddefs)
    types.pop("geometry_msgs/msg/Transform")
    types.update(
        get_types_from_msg(
            "geometry_msgs/Vector3 translation\ngeometry_msgs/Quaternion rotation\nfloat64 confidence\n",
            "geometry_msgs/msg/Transform",
        )
    )
    own.register(types)
    assert not same_definition(own, standard, "tf2_msgs/msg/TFMessage")
    assert same_definition(own, standard, "sensor_msgs/msg/CameraInfo")
    assert not same_definition(own, standard, "no_msgs/msg/Missing")


def test_file_truncated_while_read_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "x.mcap"
    _write(path, CompressionType.NONE)
    f = McapFile(path)
    with path.open("r+b") as out:
        out.truncate(path.stat().st_size // 2)
    with pytest.raises(LogFormatError, match="truncated while it was being read"):
        list(f.messages(set(TOPICS), 0, 2**62))
