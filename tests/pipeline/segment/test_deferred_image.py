"""Deferred decoding in the segment stage: image sizes read from JPEG / PNG headers, requests that decode on first
use, segmenters that never read pixels costing no decode, and the same masks either way."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stridegen.core.boxes import Boxes
from stridegen.core.errors import GeometryError
from stridegen.core.transforms import make_transform
from stridegen.formats.images import decode_image, image_size
from stridegen.pipeline.segment.base import DeferredImageRequest, LazyImage
from stridegen.pipeline.segment.lidar import LidarSegmenter
from stridegen.pipeline.segment.lidar_watershed import LidarWatershedSegmenter
from stridegen.pipeline.segment.projected_box import ProjectedBoxSegmenter
from stridegen.pipeline.segment.request import make_request

W, H = 160, 90
K = np.array([[100.0, 0.0, 80.0], [0.0, 100.0, 45.0], [0.0, 0.0, 1.0]])
# Camera at the global origin looking along global +x (as in test_request.py).
T_CAM_FROM_GLOBAL = make_transform(np.array([[0.0, -1.0, 0.0], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0]]), np.zeros(3))


def _encode(image: np.ndarray, ext: str, params: list[int] | None = None) -> bytes:
    ok, buf = cv2.imencode(ext, image, params or [])
    assert ok
    return buf.tobytes()


def _jpeg_with_exif(data: bytes) -> bytes:
    """``data`` with an APP1 Exif segment (an empty TIFF header) inserted after SOI."""
    payload = b"Exif\x00\x00" + b"MM\x00\x2a\x00\x00\x00\x08" + b"\x00\x00"
    return data[:2] + b"\xff\xe1" + (len(payload) + 2).to_bytes(2, "big") + payload + data[2:]


def _png_with_exif(data: bytes) -> bytes:
    """``data`` with an eXIf chunk (CRC not checked by the size reader) inserted after IHDR."""
    ihdr_end = 8 + 12 + int.from_bytes(data[8:12], "big")
    body = b"MM\x00\x2a\x00\x00\x00\x08"
    chunk = len(body).to_bytes(4, "big") + b"eXIf" + body + b"\x00\x00\x00\x00"
    return data[:ihdr_end] + chunk + data[ihdr_end:]


@settings(max_examples=40, deadline=None)
@given(
    h=st.integers(1, 70),
    w=st.integers(1, 70),
    kind=st.sampled_from(["jpg", "jpg-progressive", "jpg-gray", "png", "png-gray", "png-rgba", "png-16"]),
)
def test_image_size_equals_the_decoded_shape(h: int, w: int, kind: str) -> None:
    rng = np.random.default_rng(h * 100 + w)
    image = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    data = {
        "jpg": lambda: _encode(image, ".jpg"),
        "jpg-progressive": lambda: _encode(image, ".jpg", [cv2.IMWRITE_JPEG_PROGRESSIVE, 1]),
        "jpg-gray": lambda: _encode(image[..., 0], ".jpg"),
        "png": lambda: _encode(image, ".png"),
        "png-gray": lambda: _encode(image[..., 0], ".png"),
        "png-rgba": lambda: _encode(np.dstack([image, image[..., :1]]), ".png"),
        "png-16": lambda: _encode(image.astype(np.uint16) * 257, ".png"),
    }[kind]()
    decoded = decode_image(data, "x")
    assert image_size(data) == tuple(decoded.shape[:2]) == (h, w)
    assert decoded.dtype == np.uint8 and decoded.shape[2] == 3


def test_decode_image_is_rgb_and_equals_bgr_then_swap() -> None:
    rng = np.random.default_rng(1)
    rgb = rng.integers(0, 256, (33, 47, 3), dtype=np.uint8)
    for ext in (".png", ".jpg"):
        data = _encode(cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), ext)
        bgr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
        assert bgr is not None
        np.testing.assert_array_equal(decode_image(data, "x"), bgr[..., ::-1])
    np.testing.assert_array_equal(decode_image(_encode(rgb[..., ::-1], ".png"), "x"), rgb)  # lossless: exact RGB


def test_image_size_gives_up_where_the_header_cannot_say() -> None:
    image = np.zeros((20, 30, 3), dtype=np.uint8)
    jpeg, png = _encode(image, ".jpg"), _encode(image, ".png")
    assert image_size(jpeg) == (20, 30) and image_size(png) == (20, 30)
    assert image_size(_jpeg_with_exif(jpeg)) is None  # EXIF orientation may swap the sides when decoding
    assert decode_image(_jpeg_with_exif(jpeg), "x").shape[:2] == (20, 30)  # still a valid image
    assert image_size(_png_with_exif(png)) is None
    assert image_size(jpeg[:20]) is None  # no frame header yet
    assert image_size(b"GIF89a" + bytes(40)) is None
    assert image_size(b"") is None
    assert image_size(b"\xff\xd8\xff\xda\x00\x08" + bytes(10)) is None  # scan before any frame header


def _boxes() -> Boxes:
    centers = np.array([[10.0, 0.0, 0.0], [14.0, 1.5, 0.3], [-10.0, 0.0, 0.0]])
    sizes = np.array([[2.0, 2.0, 2.0], [4.0, 2.0, 1.6], [2.0, 2.0, 2.0]])
    return Boxes(centers, sizes, np.array([0.0, 0.3, 0.0]), frame="global")


def _lidar() -> np.ndarray:
    """Points on the faces of the two visible boxes and on a wall behind them (global frame, metres)."""
    rng = np.random.default_rng(3)
    front = np.column_stack([np.full(60, 9.0), rng.uniform(-0.9, 0.9, 60), rng.uniform(-0.7, 0.9, 60)])
    second = np.column_stack([np.full(60, 12.2), rng.uniform(0.8, 2.4, 60), rng.uniform(-0.3, 0.9, 60)])
    wall = np.column_stack([np.full(200, 30.0), rng.uniform(-12, 12, 200), rng.uniform(-1, 5, 200)])
    return np.vstack([front, second, wall])


def _image() -> np.ndarray:
    rng = np.random.default_rng(4)
    image = rng.integers(0, 60, (H, W, 3), dtype=np.uint8)
    image[30:60, 60:100] += 150  # the nearer box, brighter
    return image


class _Counter:
    def __init__(self, image: np.ndarray) -> None:
        self.image, self.calls = image, 0

    def __call__(self) -> np.ndarray:
        self.calls += 1
        return self.image


@pytest.mark.parametrize(
    "segmenter", [ProjectedBoxSegmenter(), LidarSegmenter(), LidarWatershedSegmenter()], ids=lambda s: s.name
)
def test_deferred_request_gives_the_eager_masks(segmenter) -> None:
    image, boxes, points = _image(), _boxes(), _lidar()
    eager, keep = make_request(image, K, T_CAM_FROM_GLOBAL, boxes, points)
    load = _Counter(image)
    lazy, keep_lazy = make_request(LazyImage(H, W, load), K, T_CAM_FROM_GLOBAL, boxes, lambda: points)
    assert isinstance(lazy, DeferredImageRequest) and load.calls == 0
    np.testing.assert_array_equal(keep, keep_lazy)
    assert len(eager) == 2 and (lazy.height, lazy.width) == (H, W)
    for name in ("box_xyxy", "depth_m", "lidar_uv", "lidar_depth_m", "lidar_object"):
        np.testing.assert_array_equal(getattr(lazy, name), getattr(eager, name))
    a, b = segmenter.segment(eager), segmenter.segment(lazy)
    np.testing.assert_array_equal(a.masks, b.masks)
    np.testing.assert_array_equal(a.quality, b.quality)
    # projected_box never reads the pixels; a pixel-reading backend decodes once, however many objects it has
    assert load.calls == (0 if segmenter.name == "projected_box" else 1)
    assert lazy.loaded == (segmenter.name != "projected_box")


def test_deferred_request_checks_the_decoded_size_and_skips_work_for_empty_images() -> None:
    boxes = _boxes()
    request, _ = make_request(LazyImage(H, W, lambda: np.zeros((H + 1, W, 3), np.uint8)), K, T_CAM_FROM_GLOBAL, boxes)
    with pytest.raises(GeometryError, match="decoded image"):
        _ = request.image_rgb
    # an image whose boxes all lie behind the camera: no decode, and the LiDAR source is never asked
    asked: list[int] = []

    def lidar() -> np.ndarray:
        asked.append(1)
        return _lidar()

    empty, keep = make_request(LazyImage(H, W, _Counter(_image())), K, T_CAM_FROM_GLOBAL, boxes[np.array([2])], lidar)
    assert isinstance(empty, DeferredImageRequest)
    assert len(empty) == 0 and keep.size == 0 and not asked and not empty.loaded
    assert empty.lidar_uv.shape == (0, 2)
