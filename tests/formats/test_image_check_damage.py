"""Which damage the integrity check of stored camera JPEGs (``image_problem``) catches, and which of it only the
entropy decode catches (issue 35: what a cheaper check would give up; ``benchmarks/bench_image_check.py`` measures
the same on the synthetic logs' 800x450 and 1600x900 camera files, with the CPU time of each method).

- a file cut short, or whose tail is zeros (an interrupted copy into a preallocated file): the end-of-image marker
  is missing, found without decoding;
- a file cut short with its end-of-image marker put back, or with a block of zeros inside its entropy-coded data:
  the markers are all in place, so only libjpeg's entropy decode (its "premature end of data segment" and
  "extraneous bytes" warnings) finds them: every such cut; most zero blocks (all 4 KiB blocks in 150 camera files
  of each size of the synthetic logs; 34 of 40 blocks of 512 bytes in the 17 kB file here: zeros are valid Huffman
  bits, and a block after which the decoder falls back in step and ends on the right byte goes unseen);
- one flipped bit in the entropy-coded data: Huffman codes resynchronise, so a flip that keeps the decoder in step
  to the end gives other pixels and no warning. The check finds a minority of them (24-36% on the synthetic
  logs' camera files, 33 of 200 here): it is not a checksum, and no decoder can be one."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from stridegen.formats.images import image_problem, jpeg_frame


def _camera_like_jpeg() -> bytes:
    """A 320x180 4:2:0 baseline JPEG of smooth shapes and texture (quality 90), as cameras and the synthetic log
    write them."""
    rng = np.random.default_rng(3)
    yy, xx = np.mgrid[0:180, 0:320]
    ramps = np.stack([(xx * 0.7) % 256, (yy * 1.3) % 256, ((xx + yy) * 0.5) % 256], axis=-1).astype(np.uint8)
    image = cv2.add(ramps, cv2.GaussianBlur(rng.integers(0, 80, (180, 320, 3), dtype=np.uint8), (3, 3), 0))
    for _ in range(12):
        centre = (int(rng.integers(0, 320)), int(rng.integers(0, 180)))
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        cv2.circle(image, centre, int(rng.integers(5, 40)), colour, -1)
    ok, buf = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 90])
    assert ok
    return buf.tobytes()


def _entropy_data(data: bytes) -> tuple[int, int]:
    """[start, stop) of the entropy-coded data: after the start-of-scan header, before the end-of-image marker."""
    sos = data.index(b"\xff\xda")
    return sos + 2 + int.from_bytes(data[sos + 2 : sos + 4], "big"), len(data) - 2


def _markers_intact(data: bytes) -> bool:
    """What a check without decoding sees: the end-of-image marker and a readable frame header."""
    return data.rstrip(b"\x00").endswith(b"\xff\xd9") and jpeg_frame(data) is not None


@pytest.fixture(scope="module")
def jpeg() -> bytes:
    data = _camera_like_jpeg()
    assert image_problem(data) is None
    return data


def _offsets(data: bytes, n: int, seed: int, margin: int = 0) -> list[int]:
    start, stop = _entropy_data(data)
    return [int(v) for v in np.random.default_rng(seed).integers(start, stop - margin, n)]


def test_a_cut_or_zeroed_tail_is_found_by_the_missing_end_marker(jpeg):
    for at in _offsets(jpeg, 30, 0):
        for damaged in (jpeg[:at], jpeg[:at] + bytes(len(jpeg) - at)):
            assert not _markers_intact(damaged)
            assert image_problem(damaged) == "JPEG is truncated (no end-of-image marker)"


def test_a_cut_with_its_end_marker_put_back_is_found_by_the_decode_only(jpeg):
    for at in _offsets(jpeg, 30, 1):
        damaged = jpeg[:at] + b"\xff\xd9"
        assert _markers_intact(damaged)
        problem = image_problem(damaged)
        assert problem is not None and problem.startswith("corrupt JPEG data (libjpeg: "), problem


def test_a_block_of_zeros_in_the_entropy_data_is_found_by_the_decode_only(jpeg):
    found = 0
    offsets = _offsets(jpeg, 40, 2, margin=512)
    for at in offsets:
        damaged = jpeg[:at] + bytes(512) + jpeg[at + 512 :]
        assert _markers_intact(damaged)
        problem = image_problem(damaged)
        found += problem is not None and problem.startswith("corrupt JPEG data (libjpeg: ")
    assert found >= 0.75 * len(offsets)  # 34 of 40 (module docstring)


def test_one_flipped_bit_is_found_only_sometimes(jpeg):
    rng = np.random.default_rng(4)
    found = 0
    offsets = _offsets(jpeg, 200, 5)
    for at in offsets:
        damaged = bytearray(jpeg)
        damaged[at] ^= 1 << int(rng.integers(0, 8))
        assert _markers_intact(bytes(damaged))
        found += image_problem(bytes(damaged)) is not None
    # The module docstring: neither all nor none. A flip the decoder stays in step through is invisible to it.
    assert 0.05 * len(offsets) <= found < 0.9 * len(offsets)
