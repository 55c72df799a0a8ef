"""The image pass: JPEG metadata removal (lossless), region filters, the pass on one image."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from stridegen.formats.images import decode_image, encode_jpeg
from stridegen.pipeline.anonymize.image import (
    AnonymizeOptions,
    Region,
    anonymize_image_bytes,
    filter_region,
    region_mask,
    strip_jpeg_metadata,
)


def _segment(marker: int, payload: bytes) -> bytes:
    return bytes([0xFF, marker]) + (len(payload) + 2).to_bytes(2, "big") + payload


def _textured(h: int = 120, w: int = 200, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (h, w, 3), dtype=np.uint8)


def jpeg_with_metadata(rgb: np.ndarray) -> bytes:
    """A baseline JPEG with an EXIF APP1 (camera make and a DateTimeOriginal), an XMP APP1 and a comment."""
    plain = encode_jpeg(rgb, 90).tobytes()
    exif = b"Exif\x00\x00MM\x00*\x00\x00\x00\x08" + b"DateTimeOriginal 2018:07:24 11:22:45 Make:TestCam"
    xmp = b"http://ns.adobe.com/xap/1.0/\x00<x:xmpmeta>2018-07-24T11:22:45</x:xmpmeta>"
    extra = _segment(0xE1, exif) + _segment(0xE1, xmp) + _segment(0xFE, b"shot 2018-07-24 11:22:45")
    # After SOI and the JFIF APP0 (OpenCV writes it first).
    app0_end = 4 + int.from_bytes(plain[4:6], "big")
    return plain[:app0_end] + extra + plain[app0_end:]


def test_strip_jpeg_metadata_removes_exif_xmp_comments_losslessly() -> None:
    rgb = _textured()
    data = jpeg_with_metadata(rgb)
    assert b"Exif" in data and b"2018" in data
    out = strip_jpeg_metadata(data)
    assert b"Exif" not in out and b"2018" not in out and b"xmpmeta" not in out
    assert out.startswith(b"\xff\xd8\xff\xe0")  # JFIF kept
    assert out == encode_jpeg(rgb, 90).tobytes()  # exactly the file without the three segments
    np.testing.assert_array_equal(decode_image(out, "x"), decode_image(data, "x"))
    assert strip_jpeg_metadata(out) == out
    png = b"\x89PNG\r\n\x1a\n...."
    assert strip_jpeg_metadata(png) == png


def test_pass_without_regions_keeps_pixels_and_drops_exif() -> None:
    data = jpeg_with_metadata(_textured())
    opts = AnonymizeOptions(faces=False, plates=True, plate_detector="none")
    result = anonymize_image_bytes(data, np.zeros((0, 4)), None, opts)
    assert not result.regions and not result.reencoded and result.metadata_removed
    assert b"Exif" not in result.data and result.blurred_px == 0


def test_pass_blurs_inside_the_regions_only() -> None:
    rgb = _textured()
    data = jpeg_with_metadata(rgb)
    opts = AnonymizeOptions(faces=False, plates=True, plate_detector="none", jpeg_quality=95)
    box = np.array([[40.2, 30.0, 120.0, 60.7]])
    result = anonymize_image_bytes(data, box, None, opts)
    assert result.reencoded and b"Exif" not in result.data
    assert [r.kind for r in result.regions] == ["plate"] and np.isnan(result.regions[0].score)
    assert result.blurred_px == (120 - 40) * (61 - 30)  # pixel centres inside the box
    before, after = decode_image(data, "a").astype(float), decode_image(result.data, "b").astype(float)
    inside = (slice(30, 61), slice(40, 120))
    assert after[inside].std() < 0.25 * before[inside].std()  # noise is gone
    # Outside the 16 x 16 JPEG units that meet the region, the pixels are those of the original re-encoded.
    reference = decode_image(encode_jpeg(before.astype(np.uint8), 95).tobytes(), "r").astype(float)
    outside = np.ones(rgb.shape[:2], bool)
    outside[8:72, 24:136] = False  # (and chroma upsampling reads one unit further)
    np.testing.assert_array_equal(after[outside], reference[outside])


@pytest.mark.parametrize("method", ["blur", "pixelate"])
def test_filters_destroy_detail_within_an_ellipse_for_faces(method: str) -> None:
    rgb = _textured(100, 100, seed=3)
    work = rgb.copy()
    region = Region("face", "test", (20.0, 10.0, 80.0, 90.0), 0.9)
    window, mask = region_mask(region, 100, 100)
    assert window == (20, 10, 80, 90)
    assert not mask[0, 0] and mask[40, 30]  # corners of the box are outside the ellipse
    filter_region(work, window, mask, method)
    c0, r0, c1, r1 = window
    changed = np.any(work != rgb, axis=2)[r0:r1, c0:c1]
    assert not changed[~mask].any()
    assert work[r0:r1, c0:c1][mask].std() < 0.3 * rgb[r0:r1, c0:c1][mask].std()


def test_png_is_reencoded_losslessly_where_nothing_is_found() -> None:
    rgb = _textured()
    ok, buf = cv2.imencode(".png", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    assert ok
    opts = AnonymizeOptions(faces=False, plates=True, plate_detector="none")
    result = anonymize_image_bytes(buf.tobytes(), np.zeros((0, 4)), None, opts)
    np.testing.assert_array_equal(decode_image(result.data, "p"), rgb)


@pytest.mark.parametrize("sigma", [3.0, 10.0, 25.0, 50.0])
def test_large_blurs_on_an_averaged_copy_equal_the_full_resolution_blur(nuscenes_demo, sigma: float) -> None:
    """``gaussian_blur`` (a copy averaged down to sigma 4 for larger sigmas) against OpenCV's full-resolution
    Gaussian of the same sigma on a real camera image: within 2 levels everywhere inside the region, 0.3 on average."""
    from stridegen.pipeline.anonymize.image import gaussian_blur

    image = cv2.imread(str(sorted((nuscenes_demo / "samples" / "CAM_FRONT").glob("*.jpg"))[0]))
    radius = int(np.ceil(3 * sigma))
    size = int(sigma / 0.25)  # the region a sigma belongs to (SIGMA_PER_SIZE)
    patch = image[200 : 200 + size + 2 * radius, 300 : 300 + size + 2 * radius]
    full = cv2.GaussianBlur(patch, (2 * radius + 1, 2 * radius + 1), sigma)
    fast = gaussian_blur(patch, sigma)
    assert fast.shape == patch.shape and fast.dtype == np.uint8
    inner = (slice(radius, radius + size), slice(radius, radius + size))
    diff = np.abs(full[inner].astype(np.int16) - fast[inner].astype(np.int16))
    assert diff.max() <= 2 and diff.mean() <= 0.3
