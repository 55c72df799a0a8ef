"""The reader's fast paths (issue 34 throughput): PointCloud2 and CompressedImage decoded straight from their
serialised bytes (stridegen/logs/ros/rawmsg.py) against hand-built clouds and rosbags' deserialisation, in ROS 1,
CDR little-endian and CDR big-endian; a bytes layout that is not the standard one falls back; and the streamed
scene reads (stridegen/logs/ros/window.py) give every message in order, out of order and after a jump."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rosbags")

from stridegen.core.errors import LogFormatError
from stridegen.logs.ros.images import UnknownEncodingError, compressed_bytes, compressed_image_bytes
from stridegen.logs.ros.pointcloud2 import decode_pointcloud2, decode_pointcloud2_bytes
from stridegen.logs.ros.types import make, typestore

# (ros1, little endian) of each wire format
WIRES = {"ros1": (True, True), "cdr-le": (False, True), "cdr-be": (False, False)}


def _serialise(ros1: bool, little: bool, msgtype: str, **fields) -> tuple[object, bytes]:
    store = typestore(ros1)
    msg = make(store, msgtype, **fields)
    raw = store.serialize_ros1(msg, msgtype) if ros1 else store.serialize_cdr(msg, msgtype, little_endian=little)
    return store, bytes(raw)


def _pointcloud(store, records: np.ndarray, fields, height: int, width: int, row_pad: int, big: bool, stamp_sec=100):
    step = records.dtype.itemsize
    rows = records.reshape(height, width)
    data = np.frombuffer(b"".join(r.tobytes() + b"\0" * row_pad for r in rows), dtype=np.uint8)
    header = make(
        store,
        "std_msgs/msg/Header",
        stamp=make(store, "builtin_interfaces/msg/Time", sec=stamp_sec, nanosec=250_000_000),
        frame_id="lidar_top",
    )
    return dict(
        header=header,
        height=height,
        width=width,
        fields=[make(store, "sensor_msgs/msg/PointField", name=n, offset=o, datatype=d, count=1) for n, o, d in fields],
        is_bigendian=big,
        point_step=step,
        row_step=width * step + row_pad,
        data=data,
        is_dense=False,
    )


def _organised_float64_big_endian() -> tuple[np.ndarray, list[tuple[str, int, int]]]:
    dtype = np.dtype(
        {
            "names": ["x", "y", "z", "intensity", "ring", "t"],
            "formats": [">f8", ">f8", ">f8", ">f4", ">u2", ">u4"],
            "offsets": [0, 8, 16, 24, 28, 32],
            "itemsize": 40,
        }
    )
    rec = np.zeros(6, dtype=dtype)
    rec["x"] = [1.5, np.nan, 3.0, 4.0, 5.0, -6.0]
    rec["y"] = [0.0, 1.0, np.inf, 3.0, 4.0, 5.0]
    rec["z"] = -1.25
    rec["intensity"] = [10, 20, 30, 40, 50, 60]
    rec["ring"] = [0, 1, 2, 3, 4, 5]
    rec["t"] = [0, 1_000_000, 2_000_000, 3_000_000, 4_000_000, 50_000_000]  # ns (Ouster)
    fields = [("x", 0, 8), ("y", 8, 8), ("z", 16, 8), ("intensity", 24, 7), ("ring", 28, 4), ("t", 32, 6)]
    return rec, fields


@pytest.mark.parametrize("wire", list(WIRES))
def test_organised_float64_big_endian_cloud_from_bytes(wire: str) -> None:
    ros1, little = WIRES[wire]
    rec, fields = _organised_float64_big_endian()
    store = typestore(ros1)
    fields_msg = _pointcloud(store, rec, fields, 2, 3, 4, True)
    _store, raw = _serialise(ros1, little, "sensor_msgs/msg/PointCloud2", **fields_msg)
    fast = decode_pointcloud2_bytes(raw, ros1, "test")
    assert fast is not None
    keep = [0, 3, 4, 5]  # NaN x, inf y dropped
    assert fast.dropped_nan == 2
    want = np.stack(
        [rec["x"][keep], rec["y"][keep], rec["z"][keep], rec["intensity"][keep], rec["ring"][keep]], axis=1
    ).astype(np.float32)
    np.testing.assert_array_equal(fast.points, want)
    np.testing.assert_allclose(fast.times_s, [0.0, 0.003, 0.004, 0.05])
    assert fast.time_field == "t"
    slow = decode_pointcloud2(
        store.deserialize_ros1(raw, "sensor_msgs/msg/PointCloud2")
        if ros1
        else store.deserialize_cdr(raw, "sensor_msgs/msg/PointCloud2"),
        "test",
    )
    np.testing.assert_array_equal(fast.points, slow.points)
    np.testing.assert_array_equal(fast.times_s, slow.times_s)


@pytest.mark.parametrize("wire", list(WIRES))
def test_float32_cloud_with_absolute_times_and_no_intensity(wire: str) -> None:
    ros1, little = WIRES[wire]
    rng = np.random.default_rng(4)
    dtype = np.dtype(
        {
            "names": ["x", "y", "z", "timestamp"],
            "formats": ["<f4"] * 3 + ["<f8"],
            "offsets": [0, 4, 8, 16],
            "itemsize": 24,
        }
    )
    rec = np.zeros(50, dtype=dtype)
    for c in "xyz":
        rec[c] = rng.normal(0, 10, 50)
    rec["timestamp"] = 1_700_000_000.25 + np.linspace(-0.1, 0.0, 50)  # absolute s (Hesai): the stamp's second
    fields = [("x", 0, 7), ("y", 4, 7), ("z", 8, 7), ("timestamp", 16, 8)]
    store = typestore(ros1)
    _store, raw = _serialise(
        ros1, little, "sensor_msgs/msg/PointCloud2", **_pointcloud(store, rec, fields, 1, 50, 0, False, 1_700_000_000)
    )
    fast = decode_pointcloud2_bytes(raw, ros1, "test")
    assert fast is not None and fast.dropped_nan == 0
    np.testing.assert_array_equal(fast.points[:, :3], np.stack([rec["x"], rec["y"], rec["z"]], axis=1))
    np.testing.assert_array_equal(fast.points[:, 3:], 0.0)
    np.testing.assert_allclose(fast.times_s, np.linspace(-0.1, 0.0, 50), atol=1e-6)


def test_a_cloud_without_xyz_is_refused_and_foreign_bytes_fall_back() -> None:
    rec = np.zeros(3, dtype=np.dtype({"names": ["a"], "formats": ["<f4"], "offsets": [0], "itemsize": 4}))
    store = typestore(False)
    _store, raw = _serialise(
        False, True, "sensor_msgs/msg/PointCloud2", **_pointcloud(store, rec, [("a", 0, 7)], 1, 3, 0, False)
    )
    with pytest.raises(LogFormatError, match="no \\['x', 'y', 'z'\\] field"):
        decode_pointcloud2_bytes(raw, False, "test")
    assert decode_pointcloud2_bytes(raw + b"\0" * 8, False, "test") is None  # longer than its fields: not standard
    assert decode_pointcloud2_bytes(raw[:40], False, "test") is None  # truncated


@pytest.mark.parametrize("wire", list(WIRES))
def test_compressed_image_from_bytes(wire: str) -> None:
    ros1, little = WIRES[wire]
    store = typestore(ros1)
    header = make(
        store, "std_msgs/msg/Header", stamp=make(store, "builtin_interfaces/msg/Time", sec=1, nanosec=2), frame_id="cam"
    )
    jpeg = np.frombuffer(b"\xff\xd8\xff\xe0" + bytes(range(200)), dtype=np.uint8)
    _s, raw = _serialise(ros1, little, "sensor_msgs/msg/CompressedImage", header=header, format="jpeg", data=jpeg)
    assert compressed_image_bytes(raw, ros1, "test") == jpeg.tobytes()
    msg = (
        store.deserialize_ros1(raw, "sensor_msgs/msg/CompressedImage")
        if ros1
        else store.deserialize_cdr(raw, "sensor_msgs/msg/CompressedImage")
    )
    assert compressed_bytes(msg, "test") == jpeg.tobytes()
    _s, raw = _serialise(
        ros1,
        little,
        "sensor_msgs/msg/CompressedImage",
        header=header,
        format="qoi",
        data=np.frombuffer(b"qoif" + bytes(20), dtype=np.uint8),
    )
    with pytest.raises(UnknownEncodingError, match="'qoi' is neither JPEG nor PNG"):
        compressed_image_bytes(raw, ros1, "test")


def test_streamed_reads_in_order_out_of_order_and_after_a_jump(tmp_path: Path) -> None:
    """Every sample's bytes through the scene cursor equal rosbags' own read of that message, whatever the order."""
    from stridegen.logs import open_log
    from stridegen.logs.ros.reader import RosReader
    from stridegen.logs.synthetic.generator import generate_dataset
    from stridegen.logs.synthetic.ros_writer import write_ros_log

    src = tmp_path / "src"
    generate_dataset(src, scenes=1, seconds=2.0, seed=5, width=32, height=18, progress=False)
    write_ros_log(open_log(src), tmp_path / "ros", "ros1")
    reader = RosReader(tmp_path / "ros")
    scene = reader.scene(reader.scene_ids()[0][0])
    samples = [s for f in scene.frames for s in f.sensors.values()]
    direct = {}
    for s in samples:
        ref = reader._ref(s)
        msg = ref.recording.read(ref.topic, ref.receive_ns, ref.header_ns)
        direct[s.token] = msg
    rng = np.random.default_rng(0)
    orders = [list(range(len(samples))), list(range(len(samples)))[::-1], list(rng.permutation(len(samples)))]
    for n, order in enumerate(orders):
        if n == 1:  # the recording closed between reads: the next read opens it again and starts a new pass
            reader.recordings[0].close()
        for i in order:
            s = samples[i]
            ref = reader._ref(s)
            got = ref.recording.deserialize(reader._raw(ref), ref.recording.topics[ref.topic][0])
            want = direct[s.token]
            assert got.header.stamp.sec == want.header.stamp.sec
            assert got.header.stamp.nanosec == want.header.stamp.nanosec
            assert np.array_equal(np.asarray(got.data), np.asarray(want.data))
        held = reader._cursor._pass.held if reader._cursor._pass else {}
        assert len({frame for frame, _raw in held.values()}) <= 3  # a frame or two, not the scene
