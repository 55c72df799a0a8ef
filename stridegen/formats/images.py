"""Image codecs: camera bytes to RGB arrays and back (OpenCV's libjpeg and libpng, deterministic), with the
integrity checks every reader of camera files shares."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from stridegen.core.errors import ConfigError, LogFormatError, StrideGenError


def decode_image(data: bytes, path: str | Path) -> np.ndarray:
    """Decode JPEG/PNG bytes to RGB uint8, raising LogFormatError for empty or corrupt files."""
    if not data:
        raise LogFormatError(path, "image file is empty")
    image = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        raise LogFormatError(path, "image could not be decoded (truncated or not an image)")
    if data[:2] == b"\xff\xd8" and not data.rstrip(b"\x00").endswith(b"\xff\xd9"):
        raise LogFormatError(path, "JPEG is truncated (no end-of-image marker)")
    return cv2.cvtColor(image, cv2.COLOR_BGR2RGB)


def check_image_bytes(data: bytes, path: str | Path) -> None:
    """Cheap integrity check of camera bytes stored unchanged: non-empty, JPEG (complete) or PNG."""
    if not data:
        raise LogFormatError(path, "image file is empty")
    if data[:2] == b"\xff\xd8":
        if not data.rstrip(b"\x00").endswith(b"\xff\xd9"):
            raise LogFormatError(path, "JPEG is truncated (no end-of-image marker)")
        return
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return
    raise LogFormatError(path, "camera file is neither JPEG nor PNG")


def encode_jpeg(image_rgb: np.ndarray, quality: int) -> np.ndarray:
    """RGB uint8 -> JPEG bytes (uint8 array) at ``quality`` with OpenCV's libjpeg (baseline, deterministic)."""
    bgr = cv2.cvtColor(np.ascontiguousarray(image_rgb), cv2.COLOR_RGB2BGR)
    ok, buf = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise StrideGenError("OpenCV could not encode a JPEG")
    return np.asarray(buf, dtype=np.uint8).reshape(-1)


def read_rgb(path: str | Path) -> np.ndarray:
    """Read an image file (any format OpenCV decodes) as RGB uint8; ConfigError naming the file if it is missing,
    unreadable or not an image. The bytes are read here, so OpenCV prints no warning of its own."""
    from stridegen.formats.textfile import config_error, read_bytes

    data = read_bytes(path, "image file", config_error)
    if not data:
        raise ConfigError(f"{path}: image file is empty")
    image = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        raise ConfigError(f"{path}: cannot read an image from this file (not an image, or truncated)")
    return cv2.cvtColor(image, cv2.COLOR_BGR2RGB)


def check_image_path(path: str | Path) -> Path:
    """``path`` if OpenCV can write an image there by its suffix (.png, .jpg, ...); ConfigError otherwise, before
    any work is done."""
    path = Path(path)
    if not path.suffix or not cv2.haveImageWriter(str(path)):
        shown = f"suffix {path.suffix!r}" if path.suffix else "no suffix"
        raise ConfigError(f"{path}: cannot write an image with {shown}; use .png or .jpg")
    return path


def write_rgb(path: str | Path, image_rgb: np.ndarray) -> Path:
    """Write an RGB image (format from the suffix: .png, .jpg, ...), creating the parent folder."""
    path = check_image_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    params = [cv2.IMWRITE_PNG_COMPRESSION, 9] if path.suffix.lower() == ".png" else [cv2.IMWRITE_JPEG_QUALITY, 88]
    try:
        written = cv2.imwrite(str(path), cv2.cvtColor(image_rgb, cv2.COLOR_RGB2BGR), params)
    except cv2.error as exc:
        raise ConfigError(f"{path}: cannot write an image here: {' '.join(str(exc).split())}") from None
    if not written:
        raise ConfigError(f"{path}: cannot write an image here (unwritable folder?)")
    return path
