"""Image codecs: camera bytes to RGB arrays and back (OpenCV's libjpeg and libpng, deterministic), with the
integrity checks every reader of camera files shares, and the pixel size of JPEG / PNG bytes read from their headers
(``image_size``) so that work needing only the size never decodes."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import cv2
import numpy as np

from stridegen.core.errors import ConfigError, LogFormatError, StrideGenError


def decode_image(data: bytes, path: str | Path, factor: int = 1) -> np.ndarray:
    """Decode JPEG/PNG bytes to RGB uint8, raising LogFormatError for empty or corrupt files. A JPEG that libjpeg
    warns about (corrupt entropy-coded data, a premature end: ``jpeg_problem``) is corrupt, although libjpeg would
    return pixels for it.

    ``factor`` 2, 4 or 8 gives the image reduced to ``ceil(H / factor) x ceil(W / factor)``: a plain JPEG by
    libjpeg's DCT scaling (the inverse DCT at the reduced size: every entropy-coded byte is still read and checked,
    the IDCT, upsampling and colour conversion work on the reduced grid), anything else decoded whole and
    area-averaged (``cv2.INTER_AREA``) to that size. 1 (the default) is the full image."""
    if not data:
        raise LogFormatError(path, "image file is empty")
    if factor != 1:
        return _decode_reduced(data, path, factor)
    image = decode_plain_jpeg(data)
    if image is None:
        problem = image_problem(data) if data[:2] == b"\xff\xd8" else None
        if problem is not None:  # libjpeg would "recover": other pixels than the camera took, and a bare stderr line
            raise LogFormatError(path, problem)
        # Straight to RGB (libjpeg / libpng order the channels; the same values as BGR then cvtColor, without the
        # second pass over the pixels).
        image = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_COLOR_RGB)
    if image is None:
        raise LogFormatError(path, "image could not be decoded (truncated or not an image)")
    if data[:2] == b"\xff\xd8" and not data.rstrip(b"\x00").endswith(b"\xff\xd9"):
        raise LogFormatError(path, "JPEG is truncated (no end-of-image marker)")
    return image


def _decode_reduced(data: bytes, path: str | Path, factor: int) -> np.ndarray:
    """``decode_image(data, path, factor)`` for factor 2, 4 or 8."""
    if factor not in (2, 4, 8):
        raise ValueError(f"decode factor must be 1, 2, 4 or 8, got {factor}")
    image = decode_plain_jpeg(data, factor)
    if image is None:
        full = decode_image(data, path)
        size = (-(-full.shape[1] // factor), -(-full.shape[0] // factor))  # (width, height), rounded up
        image = cv2.resize(full, size, interpolation=cv2.INTER_AREA)
    elif not data.rstrip(b"\x00").endswith(b"\xff\xd9"):
        raise LogFormatError(path, "JPEG is truncated (no end-of-image marker)")
    return image


def decode_plain_jpeg(data: bytes, factor: int = 1) -> np.ndarray | None:
    """RGB pixels of a JPEG whose header reads cleanly and holds no EXIF orientation, decoded by libjpeg-turbo
    through simplejpeg: the pixels ``cv2.imdecode`` gives (both use libjpeg-turbo's defaults, the accurate integer
    IDCT and fancy chroma upsampling; equal by test), on one thread and faster (0.79-0.83 against 0.91-0.94 ms per
    800x450 camera image inside a build, 2.8 against 3.2-3.5 ms at 1600x900). None
    where OpenCV decides: not a JPEG, an EXIF segment (OpenCV applies its orientation), a header ``image_size``
    cannot read, four colour components (CMYK or YCCK: the two libraries convert them each their own way), or
    anything libjpeg-turbo warns about or refuses (corrupt or truncated data, 12-bit); OpenCV then decodes, or fails
    with the error the caller reports. ``factor`` 2, 4, 8: libjpeg's DCT scaling to ``ceil(H / factor) x
    ceil(W / factor)`` (libjpeg's scaled output size, jdmaster.c ``jpeg_core_output_dimensions``)."""
    frame = _jpeg_frame(data) if data[:2] == b"\xff\xd8" else None
    if frame is None or frame[2] not in (1, 3):  # grey, or YCbCr / RGB
        return None
    import simplejpeg

    try:
        if factor != 1:  # simplejpeg picks the scale M/8 with the smallest output >= min sizes, none above 1/factor
            height, width = -(-frame[0] // factor), -(-frame[1] // factor)
            return simplejpeg.decode_jpeg(
                data, colorspace="RGB", min_height=height, min_width=width, min_factor=factor, strict=True
            )
        return simplejpeg.decode_jpeg(data, colorspace="RGB", strict=True)
    except ValueError:  # simplejpeg's error for whatever libjpeg-turbo rejects or warns about
        return None


# JPEG start-of-frame markers (ITU-T T.81 table B.1): SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC).
_JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def image_size(data: bytes) -> tuple[int, int] | None:
    """(height, width) in pixels of the image ``decode_image`` makes of JPEG or PNG ``data``, read from the header
    alone (JPEG: the frame header of ITU-T T.81 sec. B.2.2; PNG: IHDR, PNG spec sec. 11.2.2).

    None where the header cannot say it for certain: not JPEG / PNG, a malformed header, or EXIF metadata (a JPEG
    APP1 "Exif" segment, a PNG eXIf chunk), whose orientation tag OpenCV applies when decoding (it may swap the
    sides). Callers decode then.
    """
    if data[:8] == _PNG_SIGNATURE:
        return _png_size(data)
    if data[:2] == b"\xff\xd8":
        return _jpeg_size(data)
    return None


def stored_image_size(data: bytes) -> tuple[int, int] | None:
    """(height, width) as the header of JPEG or PNG ``data`` stores them (JPEG: the frame header; PNG: IHDR), the
    pixel grid before any EXIF orientation, a side of 0 included (a JPEG height defined by a later DNL marker, an
    invalid PNG). None for other data or a header cut short. ``image_size`` is the size ``decode_image`` makes."""
    if data[:8] == _PNG_SIGNATURE:
        return _png_ihdr(data)
    frame = jpeg_frame(data)
    return None if frame is None else (frame.height, frame.width)


def _png_ihdr(data: bytes) -> tuple[int, int] | None:
    """(height, width) of the IHDR chunk, a PNG's first (PNG spec sec. 11.2.2: width, height, big-endian)."""
    if len(data) < 24 or data[12:16] != b"IHDR":
        return None
    return int.from_bytes(data[20:24], "big"), int.from_bytes(data[16:20], "big")


def _png_size(data: bytes) -> tuple[int, int] | None:
    ihdr = _png_ihdr(data) if len(data) >= 33 else None
    if ihdr is None:
        return None
    height, width = ihdr
    pos = 8
    while pos + 8 <= len(data):  # chunks: length (4), type (4), data, CRC (4); eXIf must precede IDAT
        length = int.from_bytes(data[pos : pos + 4], "big")
        kind = data[pos + 4 : pos + 8]
        if kind == b"eXIf":
            return None
        if kind in (b"IDAT", b"IEND"):
            return (height, width) if width and height else None
        pos += 12 + length
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    frame = _jpeg_frame(data)
    return None if frame is None else frame[:2]


def _jpeg_frame(data: bytes) -> tuple[int, int, int] | None:
    """(height, width, colour components) from the JPEG frame header; None as for ``image_size``."""
    frame = jpeg_frame(data)
    if frame is None or frame.exif or not (frame.height and frame.width):
        return None
    return frame.height, frame.width, frame.components


class JpegFrame(NamedTuple):
    """What a JPEG's frame header says (ITU-T T.81 sec. B.2.2), and whether EXIF metadata (an APP1 "Exif"
    segment, whose orientation tag OpenCV applies when decoding) comes before it."""

    height: int  # 0: defined by a DNL marker after the first scan
    width: int
    components: int  # colour components: 1 grey, 3 YCbCr / RGB, 4 CMYK / YCCK
    exif: bool


def jpeg_frame(data: bytes) -> JpegFrame | None:
    """The frame header of JPEG ``data``, found by walking the marker segments from the start of image; None for
    data that is not JPEG, malformed segments before the frame header, or data that ends before it."""
    if data[:2] != b"\xff\xd8":
        return None
    pos, n = 2, len(data)
    exif = False
    while pos + 4 <= n:
        if data[pos] != 0xFF:
            return None
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD8)):  # TEM, RSTn: no length field
            pos += 2
            continue
        if marker in (0xD9, 0xDA):  # end of image or start of scan before any frame header
            return None
        length = int.from_bytes(data[pos + 2 : pos + 4], "big")
        if length < 2:
            return None
        if marker == 0xE1 and data[pos + 4 : pos + 10] == b"Exif\x00\x00":
            exif = True
        if marker in _JPEG_SOF:  # segment: length (2), precision (1), height (2), width (2), components (1)
            if pos + 10 > n:
                return None
            height, width = (
                int.from_bytes(data[pos + 5 : pos + 7], "big"),
                int.from_bytes(data[pos + 7 : pos + 9], "big"),
            )
            return JpegFrame(height, width, data[pos + 9], exif)
        pos += 2 + length
    return None


def check_image_bytes(data: bytes, path: str | Path) -> None:
    """Integrity check of camera bytes stored unchanged: non-empty, JPEG (complete, and decoding at 1/8 scale without
    a libjpeg warning: ``jpeg_problem``) or PNG (decoding at 1/8 scale: libpng checks every chunk's CRC)."""
    problem = image_problem(data)
    if problem is not None:
        raise LogFormatError(path, problem)


# libjpeg errors (jerror.h JERR_*) for what this libjpeg-turbo build cannot decode at all, as opposed to data it finds
# corrupt: such a file is left to OpenCV's decoder.
_JPEG_UNSUPPORTED = ("Unsupported JPEG data precision", "Unsupported color conversion", "Unsupported JPEG process")


def jpeg_problem(data: bytes) -> str | None:
    """libjpeg-turbo's first warning or error about JPEG ``data``, decoded at 1/8 scale (the DCT scaling of libjpeg:
    every entropy-coded byte is still read, so corruption anywhere shows) into grey, with warnings as errors
    (simplejpeg ``strict``); None for a clean file, and for one this build cannot decode (12-bit, an unsupported
    process: ``_JPEG_UNSUPPORTED``). libjpeg's warnings ("Corrupt JPEG data: ...", "Premature end of JPEG file")
    are those after which it returns made-up pixels.

    Grey output (CMYK for four components, which libjpeg cannot turn grey): the entropy decoder still reads every
    component's coefficients, MCU by MCU and scan by scan, and libjpeg's warnings come from that reading and the
    markers; only the chroma's inverse DCT and the colour conversion are skipped (medians of 5 alternated rounds
    over 150 synthetic camera files, one core: 0.70 -> 0.60 ms per 800 x 450 image, 1.93 -> 1.59 ms at
    1600 x 900). The same problem, word for word, as a colour decode's (tested on corrupted baseline, progressive,
    4:4:4, 4:2:2, 4:2:0 and grey files)."""
    import simplejpeg

    frame = jpeg_frame(data)
    colorspace = "CMYK" if frame is not None and frame.components == 4 else "GRAY"
    try:
        simplejpeg.decode_jpeg(data, colorspace=colorspace, min_height=1, min_width=1, strict=True)
    except ValueError as exc:
        message = " ".join(str(exc).split())
        return None if message.startswith(_JPEG_UNSUPPORTED) else message or "undecodable"
    return None


def image_problem(data: bytes) -> str | None:
    """Why camera bytes are no usable image, or None: empty, a JPEG without its end-of-image marker or that libjpeg
    warns about (``jpeg_problem``), a PNG that libpng cannot decode, or another format. Decodes at reduced scale
    (JPEG 1/8 by DCT scaling; PNG: OpenCV decodes whole, then shrinks)."""
    if not data:
        return "image file is empty"
    if data[:2] == b"\xff\xd8":
        if not data.rstrip(b"\x00").endswith(b"\xff\xd9"):
            return "JPEG is truncated (no end-of-image marker)"
        problem = jpeg_problem(data)
        return None if problem is None else f"corrupt JPEG data (libjpeg: {problem})"
    if data[:8] == _PNG_SIGNATURE:
        image = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_REDUCED_COLOR_8)
        return None if image is not None else "PNG could not be decoded (truncated or corrupt)"
    return "camera file is neither JPEG nor PNG"


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
    image = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_COLOR_RGB)
    if image is None:
        raise ConfigError(f"{path}: cannot read an image from this file (not an image, or truncated)")
    return image


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
