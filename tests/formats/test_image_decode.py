"""``decode_image``: plain JPEGs go through simplejpeg (libjpeg-turbo on one thread), everything else through
OpenCV; the pixels are OpenCV's in every case."""

from __future__ import annotations

import io
from pathlib import Path

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stridegen.core.errors import LogFormatError
from stridegen.formats.images import decode_image, decode_plain_jpeg

SAMPLING = {
    "444": cv2.IMWRITE_JPEG_SAMPLING_FACTOR_444,
    "422": cv2.IMWRITE_JPEG_SAMPLING_FACTOR_422,
    "420": cv2.IMWRITE_JPEG_SAMPLING_FACTOR_420,
    "411": cv2.IMWRITE_JPEG_SAMPLING_FACTOR_411,
}


def _opencv(data: bytes) -> np.ndarray:
    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR_RGB)
    assert image is not None
    return image


def _encode(image: np.ndarray, params: list[int]) -> bytes:
    ok, buf = cv2.imencode(".jpg", image, params)
    assert ok
    return buf.tobytes()


@settings(max_examples=60, deadline=None)
@given(
    h=st.integers(1, 90),
    w=st.integers(1, 90),
    quality=st.integers(5, 100),
    sampling=st.sampled_from(sorted(SAMPLING)),
    progressive=st.booleans(),
    gray=st.booleans(),
)
def test_plain_jpegs_decode_to_opencvs_pixels(
    h: int, w: int, quality: int, sampling: str, progressive: bool, gray: bool
) -> None:
    rng = np.random.default_rng(h * 7919 + w * 31 + quality)
    image = cv2.GaussianBlur(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), (5, 5), 0)  # some structure
    params = [cv2.IMWRITE_JPEG_QUALITY, quality, cv2.IMWRITE_JPEG_SAMPLING_FACTOR, SAMPLING[sampling]]
    params += [cv2.IMWRITE_JPEG_PROGRESSIVE, int(progressive)]
    data = _encode(image[..., 0] if gray else image, params)
    fast = decode_plain_jpeg(data)
    assert fast is not None  # the simplejpeg path was taken
    assert fast.dtype == np.uint8 and fast.shape == (h, w, 3)
    assert np.array_equal(fast, _opencv(data)) and np.array_equal(decode_image(data, "x"), fast)


def _with_exif_orientation(data: bytes, orientation: int) -> bytes:
    """``data`` with an APP1 Exif segment whose one IFD entry is the Orientation tag (TIFF 6.0, tag 274, SHORT)."""
    ifd = b"\x00\x01" + b"\x01\x12" + b"\x00\x03" + b"\x00\x00\x00\x01" + orientation.to_bytes(2, "big") + b"\x00\x00"
    payload = b"Exif\x00\x00" + b"MM\x00\x2a\x00\x00\x00\x08" + ifd + b"\x00\x00\x00\x00"
    return data[:2] + b"\xff\xe1" + (len(payload) + 2).to_bytes(2, "big") + payload + data[2:]


def test_exif_cmyk_and_broken_jpegs_are_opencvs() -> None:
    rng = np.random.default_rng(5)
    image = rng.integers(0, 256, (20, 30, 3), dtype=np.uint8)
    data = _encode(image, [cv2.IMWRITE_JPEG_QUALITY, 90])
    rotated = _with_exif_orientation(data, 6)  # "rotate 90 degrees clockwise to display"
    assert decode_plain_jpeg(rotated) is None
    assert decode_image(rotated, "x").shape == (30, 20, 3)  # OpenCV applies the orientation
    assert np.array_equal(decode_image(rotated, "x"), _opencv(rotated))

    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(image).convert("CMYK").save(buf, format="JPEG", quality=90)
    cmyk = buf.getvalue()
    assert decode_plain_jpeg(cmyk) is None  # four components: OpenCV converts them its way
    assert np.array_equal(decode_image(cmyk, "x"), _opencv(cmyk))

    assert decode_plain_jpeg(data[: len(data) // 2]) is None  # libjpeg-turbo warns: OpenCV decides
    with pytest.raises(LogFormatError, match="truncated"):  # OpenCV's error, as before
        decode_image(data[: len(data) // 2], "x")
    garbled = data[:200] + bytes(100) + data[300:]
    assert decode_plain_jpeg(garbled) is None


def test_real_camera_images_decode_to_opencvs_pixels(nuscenes_demo: Path) -> None:
    files = sorted(nuscenes_demo.rglob("*.jpg"))
    assert files
    for path in files:
        data = path.read_bytes()
        fast = decode_plain_jpeg(data)
        assert fast is not None and np.array_equal(fast, _opencv(data)), path
