"""``sensor_msgs/Image`` and ``sensor_msgs/CompressedImage`` -> camera bytes a stridegen frame serves (JPEG or
PNG, ``Frame.image_bytes``).

CompressedImage: the bytes unchanged when they are a JPEG (FF D8) or a PNG (89 'PNG'), whatever ``format`` says
(drivers write "jpeg", "rgb8; jpeg compressed bgr8", ...); anything else (``compressedDepth``, QOI, H.264 frames)
is an unknown encoding. Image: the raw pixels of a known ``encoding`` (sensor_msgs/image_encodings.hpp names)
turned into RGB and encoded as PNG (lossless):

- ``rgb8``, ``bgr8``, ``rgba8``, ``bgra8``, ``mono8``, ``8UC1``, ``8UC3`` (taken as BGR, OpenCV's order);
- ``mono16``, ``16UC1``, ``rgb16``, ``bgr16``: the 16-bit values scaled to 8 bits (the high byte);
- ``bayer_rggb8``, ``bayer_bggr8``, ``bayer_gbrg8``, ``bayer_grbg8`` (and their 16-bit forms): demosaiced with
  OpenCV's bilinear ``cvtColor``. OpenCV names a Bayer pattern by the second row's first two pixels, so ROS's
  ``rggb`` is OpenCV's ``BG`` (as ros-perception/image_pipeline image_proc does).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stridegen.core.errors import LogFormatError
from stridegen.logs.ros.rawmsg import compressed_image_data

COMPRESSED_IMAGE = "sensor_msgs/msg/CompressedImage"
JPEG_MAGIC = b"\xff\xd8"
PNG_MAGIC = b"\x89PNG"
_BAYER = {"rggb": "BG", "bggr": "RG", "gbrg": "GR", "grbg": "GB"}
RAW_ENCODINGS = (
    "rgb8",
    "bgr8",
    "rgba8",
    "bgra8",
    "mono8",
    "8UC1",
    "8UC3",
    "mono16",
    "16UC1",
    "rgb16",
    "bgr16",
    *(f"bayer_{p}{bits}" for p in _BAYER for bits in (8, 16)),
)


class UnknownEncodingError(LogFormatError):
    """An image message whose encoding the reader cannot decode."""


def compressed_bytes(msg: Any, where: str) -> bytes:
    """The JPEG or PNG bytes of a CompressedImage (module docstring)."""
    data = np.asarray(msg.data, dtype=np.uint8).tobytes()
    if data[:2] == JPEG_MAGIC or data[:4] == PNG_MAGIC:
        return data
    raise UnknownEncodingError(where, f"CompressedImage of format {msg.format!r} is neither JPEG nor PNG")


def compressed_image_bytes(raw: bytes | memoryview, ros1: bool, where: str) -> bytes | None:
    """``compressed_bytes`` of a serialised CompressedImage, read straight from its bytes (``rawmsg``); None when
    they do not parse as the standard definition (the caller then deserialises with rosbags)."""
    parsed = compressed_image_data(raw, ros1)
    if parsed is None:
        return None
    fmt, offset, length = parsed
    data = bytes(raw[offset : offset + length])
    if data[:2] == JPEG_MAGIC or data[:4] == PNG_MAGIC:
        return data
    raise UnknownEncodingError(where, f"CompressedImage of format {fmt!r} is neither JPEG nor PNG")


def raw_to_rgb(msg: Any, where: str) -> np.ndarray:
    """[H, W, 3] uint8 RGB of a raw Image message (module docstring)."""
    import cv2

    encoding = str(msg.encoding)
    if encoding not in RAW_ENCODINGS:
        raise UnknownEncodingError(where, f"Image encoding {encoding!r} is not one of {list(RAW_ENCODINGS)}")
    height, width, step = int(msg.height), int(msg.width), int(msg.step)
    sixteen = "16" in encoding
    channels = (
        3 if encoding in ("rgb8", "bgr8", "8UC3", "rgb16", "bgr16") else 4 if encoding in ("rgba8", "bgra8") else 1
    )
    item = 2 if sixteen else 1
    data = np.asarray(msg.data, dtype=np.uint8).reshape(-1)
    if step < width * channels * item or data.size < height * step:
        raise LogFormatError(where, f"Image data of {data.size} bytes does not hold {height} rows of step {step}")
    rows = data[: height * step].reshape(height, step)[:, : width * channels * item]
    dtype = np.dtype(">u2" if msg.is_bigendian else "<u2") if sixteen else np.dtype(np.uint8)
    pixels = np.ascontiguousarray(rows).view(dtype).reshape(height, width, channels)
    if sixteen:
        pixels = (pixels.astype(np.uint16) >> 8).astype(np.uint8)
    if encoding.startswith("bayer_"):
        code = getattr(cv2, f"COLOR_Bayer{_BAYER[encoding[6:10]]}2RGB")
        return np.asarray(cv2.cvtColor(np.ascontiguousarray(pixels[:, :, 0]), code))
    if channels == 1:
        return np.repeat(pixels, 3, axis=2)
    if encoding in ("bgr8", "bgra8", "8UC3", "bgr16"):
        return np.ascontiguousarray(pixels[:, :, 2::-1])
    return np.ascontiguousarray(pixels[:, :, :3])


def encode_png(rgb: np.ndarray) -> bytes:
    """RGB uint8 -> PNG bytes (OpenCV, default compression: lossless and deterministic)."""
    import cv2

    ok, buf = cv2.imencode(".png", cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2BGR))
    if not ok:
        raise LogFormatError("png", "OpenCV could not encode a PNG")
    return bytes(buf)


def image_bytes(msgtype: str, msg: Any, where: str) -> bytes:
    """JPEG / PNG bytes of an Image or CompressedImage message."""
    if msgtype.endswith("CompressedImage"):
        return compressed_bytes(msg, where)
    return encode_png(raw_to_rgb(msg, where))
