"""Decoding of ROS messages (stridegen/logs/ros): PointCloud2 layouts, image encodings, CameraInfo models against
the lens formulas, header stamps from serialised bytes, GNSS to ENU against the WGS84 meridian arc."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from stridegen.logs.ros.camera_info import camera_model
from stridegen.logs.ros.images import UnknownEncodingError, compressed_bytes, raw_to_rgb
from stridegen.logs.ros.pointcloud2 import decode_pointcloud2
from stridegen.logs.ros.poses import WGS84_A_M, WGS84_E2, enu_from_geodetic
from stridegen.logs.ros.recording import header_stamp_ns

pytest.importorskip("rosbags")


def _stamp(sec: int, nanosec: int) -> SimpleNamespace:
    return SimpleNamespace(stamp=SimpleNamespace(sec=sec, nanosec=nanosec))


def _cloud(records: np.ndarray, fields: list[tuple[str, int, int]], height: int, width: int, row_pad: int, big: bool):
    step = records.dtype.itemsize
    rows = records.reshape(height, width)
    data = b"".join(r.tobytes() + b"\0" * row_pad for r in rows)
    return SimpleNamespace(
        header=_stamp(100, 0),
        height=height,
        width=width,
        fields=[SimpleNamespace(name=n, offset=o, datatype=d, count=1) for n, o, d in fields],
        is_bigendian=big,
        point_step=step,
        row_step=width * step + row_pad,
        data=np.frombuffer(data, dtype=np.uint8),
    )


def test_organised_big_endian_float64_cloud_with_nan_and_ns_offsets() -> None:
    dtype = np.dtype(
        {
            "names": ["x", "y", "z", "reflectivity", "ring", "offset_time"],
            "formats": [">f8", ">f8", ">f8", "u1", ">u2", ">u4"],
            "offsets": [0, 8, 16, 24, 26, 28],
            "itemsize": 36,
        }
    )
    rec = np.zeros(6, dtype=dtype)
    rec["x"] = [1.0, 2.0, np.nan, 4.0, 5.0, 6.0]
    rec["y"] = np.arange(6) * 0.5
    rec["z"] = -1.25
    rec["reflectivity"] = [10, 20, 30, 40, 50, 60]
    rec["ring"] = [0, 1, 2, 3, 4, 5]
    rec["offset_time"] = [0, 1_000_000, 2_000_000, 3_000_000, 4_000_000, 50_000_000]  # ns (Livox)
    fields = [("x", 0, 8), ("y", 8, 8), ("z", 16, 8), ("reflectivity", 24, 2), ("ring", 26, 4), ("offset_time", 28, 6)]
    cloud = decode_pointcloud2(_cloud(rec, fields, 2, 3, 4, True), "test")
    keep = [0, 1, 3, 4, 5]
    assert cloud.dropped_nan == 1
    np.testing.assert_array_equal(cloud.points[:, 0], np.float32(rec["x"][keep]))
    np.testing.assert_array_equal(cloud.points[:, 1], np.float32(rec["y"][keep]))
    np.testing.assert_array_equal(cloud.points[:, 3], [10, 20, 40, 50, 60])
    np.testing.assert_array_equal(cloud.points[:, 4], [0, 1, 3, 4, 5])
    np.testing.assert_allclose(cloud.times_s, [0.0, 0.001, 0.003, 0.004, 0.05])
    assert cloud.time_field == "offset_time"


def test_absolute_float_times_become_offsets_and_missing_xyz_is_refused() -> None:
    dtype = np.dtype(
        {
            "names": ["x", "y", "z", "timestamp"],
            "formats": ["<f4"] * 3 + ["<f8"],
            "offsets": [0, 4, 8, 16],
            "itemsize": 24,
        }
    )
    rec = np.zeros(2, dtype=dtype)
    rec["timestamp"] = [100.0 - 0.05, 100.0]  # Hesai: absolute seconds; the stamp is 100 s
    rec["timestamp"] += 1.6e9
    msg = _cloud(rec, [("x", 0, 7), ("y", 4, 7), ("z", 8, 7), ("timestamp", 16, 8)], 1, 2, 0, False)
    msg.header = _stamp(1_600_000_100, 0)
    cloud = decode_pointcloud2(msg, "test")
    np.testing.assert_allclose(cloud.times_s, [-0.05, 0.0], atol=1e-6)
    msg.fields = msg.fields[:2]
    with pytest.raises(Exception, match=r"no \['z'\] field"):
        decode_pointcloud2(msg, "test")


def _image(encoding: str, pixels: np.ndarray, big: bool = False) -> SimpleNamespace:
    h, w = pixels.shape[:2]
    data = pixels.astype(pixels.dtype.newbyteorder(">" if big else "<")).tobytes()
    return SimpleNamespace(
        encoding=encoding, height=h, width=w, step=len(data) // h, is_bigendian=big, data=np.frombuffer(data, np.uint8)
    )


def test_raw_encodings() -> None:
    rgb = np.random.default_rng(0).integers(0, 256, (4, 5, 3), dtype=np.uint8)
    np.testing.assert_array_equal(raw_to_rgb(_image("rgb8", rgb), "t"), rgb)
    np.testing.assert_array_equal(raw_to_rgb(_image("bgr8", rgb[:, :, ::-1].copy()), "t"), rgb)
    mono16 = np.array([[0x1234, 0xFF00]], dtype=np.uint16)
    np.testing.assert_array_equal(raw_to_rgb(_image("mono16", mono16, big=True), "t")[0, :, 0], [0x12, 0xFF])
    with pytest.raises(UnknownEncodingError, match="yuv422"):
        raw_to_rgb(_image("yuv422", rgb), "t")
    with pytest.raises(UnknownEncodingError, match="neither JPEG nor PNG"):
        compressed_bytes(SimpleNamespace(format="qoi", data=np.frombuffer(b"qoif....", np.uint8)), "t")


@pytest.mark.parametrize("pattern", ["rggb", "bggr", "gbrg", "grbg"])
def test_bayer_patterns_demosaic_to_the_scene_colour(pattern: str) -> None:
    """A flat colour mosaicked by hand in each ROS pattern comes back as that colour (away from the border)."""
    colour = {"r": 200, "g": 120, "b": 40}
    mosaic = np.zeros((8, 8), dtype=np.uint8)
    for i, c in enumerate(pattern):  # pattern letters: (0,0), (0,1), (1,0), (1,1) of each 2x2 cell
        mosaic[i // 2 :: 2, i % 2 :: 2] = colour[c]
    rgb = raw_to_rgb(_image(f"bayer_{pattern}8", mosaic), "t")
    np.testing.assert_array_equal(rgb[3, 3], [200, 120, 40])


def _info(model: str, d: list[float]) -> SimpleNamespace:
    K = [400.0, 0.0, 320.0, 0.0, 410.0, 240.0, 0.0, 0.0, 1.0]
    return SimpleNamespace(width=640, height=480, distortion_model=model, d=d, k=K)


def test_equidistant_undistortion_puts_a_ray_where_the_pinhole_model_does() -> None:
    """A bright pixel drawn where the fisheye formula (theta_d = theta (1 + k1 theta^2 + ... k4 theta^8), OpenCV
    fisheye model) images a ray lands, after undistortion, at the ray's pinhole projection."""
    from stridegen.logs.av2_cameras import undistort_model

    cam = camera_model(_info("equidistant", [0.1, -0.02, 0.003, 0.0]), "t")
    ray = np.array([0.3, -0.2, 1.0])
    a, b = ray[0] / ray[2], ray[1] / ray[2]
    theta = np.arctan(np.hypot(a, b))
    k1, k2, k3, k4 = cam.D
    theta_d = theta * (1 + k1 * theta**2 + k2 * theta**4 + k3 * theta**6 + k4 * theta**8)
    scale = theta_d / np.hypot(a, b)
    u_d, v_d = 400.0 * a * scale + 320.0, 410.0 * b * scale + 240.0
    image = np.zeros((480, 640, 3), dtype=np.uint8)
    row, col = round(float(v_d)), round(float(u_d))
    image[row - 1 : row + 2, col - 1 : col + 2] = 255
    out = undistort_model(image, cam.K, cam.model, cam.D)
    ys, xs = np.nonzero(out[:, :, 0] > 60)
    assert abs(xs.mean() - (400.0 * a + 320.0)) < 1.0 and abs(ys.mean() - (410.0 * b + 240.0)) < 1.0


def test_camera_info_models_and_refusals() -> None:
    assert camera_model(_info("plumb_bob", [0.1, 0, 0, 0, 0]), "t").distorted
    assert camera_model(_info("rational_polynomial", [0.1] + [0.0] * 7), "t").D.size == 8
    assert not camera_model(_info("", []), "t").distorted  # no model, no D: a pinhole camera
    with pytest.raises(Exception, match="distortion model 'kannala'"):
        camera_model(_info("kannala", [0.1]), "t")
    with pytest.raises(Exception, match="takes 5 coefficients"):
        camera_model(_info("plumb_bob", [0.0] * 5 + [0.2]), "t")


@pytest.mark.parametrize("ros1", [True, False])
def test_header_stamp_from_serialised_bytes(ros1: bool) -> None:
    from stridegen.logs.ros.types import make, typestore

    store = typestore(ros1)
    stamp = make(store, "builtin_interfaces/msg/Time", sec=1_700_000_123, nanosec=456_789)
    header = make(store, "std_msgs/msg/Header", stamp=stamp, frame_id="cam")
    msg = make(store, "sensor_msgs/msg/CompressedImage", header=header, format="jpeg", data=np.zeros(3, np.uint8))
    typename = "sensor_msgs/msg/CompressedImage"
    raw = store.serialize_ros1(msg, typename) if ros1 else store.serialize_cdr(msg, typename)
    assert header_stamp_ns(raw, ros1) == 1_700_000_123_000_456_789
    if not ros1:
        big = store.serialize_cdr(msg, typename, little_endian=False)
        assert header_stamp_ns(big, False) == 1_700_000_123_000_456_789


def test_enu_of_a_fix_north_along_the_equator_meridian() -> None:
    """0.001 degree of latitude at the equator is the meridian arc M dphi with M = a (1 - e^2) (the meridional
    radius of curvature at latitude 0); up drops by d^2 / (2 M) (the tangent plane leaves the ellipsoid)."""
    enu = enu_from_geodetic(np.array([0.0, 0.001]), np.array([10.0, 10.0]), np.array([0.0, 0.0]))
    d = WGS84_A_M * (1 - WGS84_E2) * np.radians(0.001)
    assert abs(enu[1, 0]) < 1e-6
    assert enu[1, 1] == pytest.approx(d, abs=1e-3)
    assert enu[1, 2] == pytest.approx(-(d**2) / (2 * WGS84_A_M * (1 - WGS84_E2)), abs=1e-4)
