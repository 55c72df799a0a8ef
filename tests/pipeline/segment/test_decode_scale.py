"""Images read at the scale each stage needs (issue 35, docs/scale.md#decoded-scale): DCT-scaled JPEG decodes, the
factor the segment stage picks, the reduced image behind a deferred request, the crops and the image-agreement
measure on it, and what it changes in masks and QA against whole decoding on a 1600 x 900 synthetic log."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from stridegen.core.errors import GeometryError, LogFormatError
from stridegen.formats.images import decode_image
from stridegen.pipeline.segment.base import DeferredImageRequest, LazyImage
from stridegen.pipeline.segment.edge_alignment import EdgeAlignment
from stridegen.pipeline.segment.grabcut import Crop
from stridegen.pipeline.segment.lidar_watershed import LidarWatershedSegmenter
from stridegen.pipeline.segment.raster import MaskCrop
from stridegen.pipeline.segment.stage import _stored_image, decode_factor


def _jpeg(image_rgb: np.ndarray, quality: int = 95) -> bytes:
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(image_rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, quality])
    assert ok
    return buf.tobytes()


def _scene(height: int, width: int) -> np.ndarray:
    """A smooth colour ramp with a dark rectangle (vertical edges at columns 60 and 140)."""
    y, x = np.mgrid[0:height, 0:width]
    image = np.stack([x * 255 // width, y * 255 // height, np.full_like(x, 128)], axis=-1).astype(np.uint8)
    image[40:120, 60:140] = 20
    return image


@pytest.mark.parametrize(
    ("height", "width", "min_side", "factor"),
    [
        (900, 1600, 450, 2),  # nuScenes -> 800 x 450
        (450, 800, 450, 1),  # the default log: whole
        (1860, 2880, 450, 4),  # STRIDE-QA's front camera -> 720 x 465 (1/8 would be 233 high)
        (901, 1600, 450, 2),  # ceil(901 / 2) = 451
        (899, 1600, 450, 2),  # ceil(899 / 2) = 450
        (897, 1600, 450, 1),  # ceil(897 / 2) = 449
        (900, 1600, 0, 1),  # 0: always whole
        (900, 1600, 100, 8),  # no reduction beyond 1/8
    ],
)
def test_decode_factor(height: int, width: int, min_side: int, factor: int) -> None:
    assert decode_factor(height, width, min_side) == factor


@pytest.mark.parametrize("factor", [2, 4, 8])
def test_reduced_jpeg_decode_is_the_area_average(factor: int) -> None:
    image = _scene(180, 320)
    data = _jpeg(image)
    reduced = decode_image(data, "x.jpg", factor)
    size = (-(-320 // factor), -(-180 // factor))
    assert reduced.shape == (size[1], size[0], 3)
    area = cv2.resize(decode_image(data, "x.jpg"), size, interpolation=cv2.INTER_AREA)
    # libjpeg's scaled IDCT is a low-pass of the same coefficients: close to the area average of the full decode
    assert np.abs(reduced.astype(int) - area.astype(int)).mean() < 3.0


def test_reduced_decode_of_png_and_odd_sizes() -> None:
    image = _scene(91, 161)
    ok, buf = cv2.imencode(".png", cv2.cvtColor(image, cv2.COLOR_RGB2BGR))
    assert ok
    reduced = decode_image(buf.tobytes(), "x.png", 2)
    assert reduced.shape == (46, 81, 3)
    assert np.array_equal(reduced, cv2.resize(image, (81, 46), interpolation=cv2.INTER_AREA))
    assert decode_image(_jpeg(image), "x.jpg", 2).shape == (46, 81, 3)
    with pytest.raises(ValueError, match="decode factor"):
        decode_image(_jpeg(image), "x.jpg", 3)


def test_reduced_decode_refuses_corrupt_jpeg() -> None:
    data = bytearray(_jpeg(_scene(180, 320)))
    data[len(data) // 2 : len(data) // 2 + 40] = bytes(range(40))  # garbled entropy-coded data
    with pytest.raises(LogFormatError):
        decode_image(bytes(data), "bad.jpg", 2)
    with pytest.raises(LogFormatError, match="truncated"):
        decode_image(_jpeg(_scene(180, 320))[:-2], "cut.jpg", 2)


def test_deferred_request_gives_the_reduced_image_until_the_full_one_is_read() -> None:
    image = _scene(180, 320)
    data = np.frombuffer(_jpeg(image), dtype=np.uint8)
    lazy = _stored_image(data, "cam", min_side=90)
    assert isinstance(lazy, LazyImage) and lazy.load_reduced is not None
    fields = {"box_xyxy": np.zeros((0, 4)), "hull_uv": [], "depth_m": np.zeros(0)}
    request = DeferredImageRequest(lazy, **fields)
    assert request.work_image().shape == (90, 160, 3)
    assert not request.loaded
    full = request.image_rgb
    assert request.work_image() is full  # decoded whole already: no second, coarser decode
    whole = _stored_image(data, "cam", min_side=0)
    assert isinstance(whole, LazyImage) and whole.load_reduced is None
    assert DeferredImageRequest(whole, **fields).work_image().shape == (180, 320, 3)
    wrong = LazyImage(180, 320, lazy.load, lambda: np.zeros((200, 10, 3), np.uint8))
    with pytest.raises(GeometryError, match="reduced image"):
        DeferredImageRequest(wrong, **fields).work_image()


def test_crop_from_reduced_image() -> None:
    image = _scene(180, 320)
    half = cv2.resize(image, (160, 90), interpolation=cv2.INTER_AREA)
    shrunk = Crop(20, 140, 40, 200, 60, 80)  # 120 x 160 window worked at 60 x 80 (factor 2: the half image's)
    assert np.array_equal(shrunk.image_scaled(image, 180, 320), shrunk.image(image))
    assert np.array_equal(shrunk.image_scaled(half, 180, 320), half[10:70, 20:100])
    whole = Crop(20, 60, 40, 80, 40, 40)  # worked at full resolution: the half image upsampled
    up = whole.image_scaled(half, 180, 320)
    assert up.shape == (40, 40, 3)
    assert np.abs(up.astype(int) - whole.image(image).astype(int)).mean() < 4.0


def test_image_agreement_on_reduced_image() -> None:
    """The measure on a 1/2 decode of the image: the same offset and a score within rounding of the full one."""
    image = _scene(360, 640)
    image[:] = 128
    image[80:240, 200:360] = 30  # an object with vertical edges at columns 200 and 360
    pixels = np.zeros((360, 640), dtype=bool)
    pixels[80:240, 230:390] = True  # its mask 30 px to the right
    mask = MaskCrop.of_full(pixels)
    half = cv2.resize(image, (320, 180), interpolation=cv2.INTER_AREA)
    alignment = EdgeAlignment()
    score_full, offset_full = alignment.score(image, mask)
    assert alignment.score(image, mask, None, (360, 640)) == (score_full, offset_full)
    score_half, offset_half = alignment.score(half, mask, None, (360, 640))
    assert score_full < 0.5 and score_half < 0.5  # both see the mask beside its object
    assert abs(offset_half[0] - offset_full[0]) <= 2.0 and abs(offset_full[0] + 30) <= 3.0


def test_segmenter_option() -> None:
    assert LidarWatershedSegmenter().image_min_side == 450
    assert LidarWatershedSegmenter(image_min_side=0).image_min_side == 0
    with pytest.raises(Exception, match="image_min_side"):
        LidarWatershedSegmenter(image_min_side=-1)


# ---------------------------------------------------------------------------------------------- 1600 x 900 log


@pytest.fixture(scope="module")
def log_1600(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from stridegen.logs.synthetic import generate_dataset

    root = tmp_path_factory.mktemp("decode_scale") / "log"
    generate_dataset(root, scenes=1, seconds=6.0, seed=3, width=1600, height=900, progress=False)
    return root


def _build(log: Path, out: Path, overrides: list[str]) -> Path:
    from stridegen.jobs.build import run_build
    from stridegen.run.config import load_build_config

    result = run_build(log, out, load_build_config(None, ["workers=1", *overrides]))
    assert result.ok
    return out


@pytest.mark.slow
def test_half_scale_masks_and_qa_against_whole_decoding(
    log_1600: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default build of a 1600 x 900 log (decoded at 1/2) against the same build decoding every image whole
    (``image_min_side=0``): each mask's IoU, the visible flags and the QA count (reported; bounds from
    docs/scale.md#decoded-scale)."""
    from stridegen.shards.reader import open_dataset

    reduced = _build(log_1600, tmp_path / "half", [])
    whole = _build(log_1600, tmp_path / "whole", ["segmenter.options.image_min_side=0"])
    ious, flips, qa = [], 0, [0, 0]
    with open_dataset(whole) as a, open_dataset(reduced) as b:
        for name in a.scenes:
            sa, sb = a.scene(name), b.scene(name)
            ma, mb = sa.masks, sb.masks
            assert ma is not None and mb is not None
            assert np.array_equal(ma.image_index, mb.image_index) and np.array_equal(ma.track_index, mb.track_index)
            for k in range(len(ma.image_index)):
                x, y = sa.mask(k), sb.mask(k)
                union = np.count_nonzero(x | y)
                ious.append(np.count_nonzero(x & y) / union if union else 1.0)
            flips += int(np.count_nonzero(np.asarray(ma.visible) != np.asarray(mb.visible)))
            qa[0] += sa.counts.get("qa", 0)
            qa[1] += sb.counts.get("qa", 0)
    iou = np.asarray(ious)
    with capsys.disabled():
        print(
            f"\n1600x900 at 1/2 vs whole: {iou.size} masks, mean IoU {iou.mean():.4f}, median {np.median(iou):.4f}, "
            f"5th percentile {np.percentile(iou, 5):.4f}, {np.count_nonzero(iou < 0.9)} below 0.9; "
            f"visible flags changed {flips}; QA {qa[0]} -> {qa[1]}"
        )
    assert iou.size > 20
    assert iou.mean() >= 0.98 and np.median(iou) >= 0.99
    assert flips <= max(1, iou.size // 100)
    assert abs(qa[1] - qa[0]) <= max(2, qa[0] // 50)
