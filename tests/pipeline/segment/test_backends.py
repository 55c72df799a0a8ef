"""Offline segmenter backends and the registry on hand-built requests with known answers."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from stridegen.core.errors import ConfigError
from stridegen.formats.rle import decode_rle, encode_rle_batch
from stridegen.pipeline.segment import SEGMENTERS, SegmentRequest, make_segmenter
from stridegen.pipeline.segment.grabcut import Crop, foreground_posterior, hull_precision, run_grabcut, shrink_polygon
from stridegen.pipeline.segment.raster import MaskCrop, polygon_mask
from stridegen.pipeline.segment.request import hull_masks, mask_iou

OFFLINE = ("projected_box", "grabcut", "lidar")
H, W = 96, 128
OBJ = (30, 70, 40, 90)  # rows [30, 70), cols [40, 90): the object's true silhouette


def _scene(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A red rectangle on a textured grey background, and its true mask."""
    rng = np.random.default_rng(seed)
    image = np.clip(rng.normal(120, 12, (H, W, 3)), 0, 255).astype(np.uint8)
    r0, r1, c0, c1 = OBJ
    image[r0:r1, c0:c1] = np.clip(rng.normal((190, 40, 45), 10, (r1 - r0, c1 - c0, 3)), 0, 255).astype(np.uint8)
    truth = np.zeros((H, W), dtype=bool)
    truth[r0:r1, c0:c1] = True
    return image, truth


def _box_hull() -> np.ndarray:
    """A projected-box-like hull around the object: larger than the silhouette, with one slanted corner."""
    r0, r1, c0, c1 = OBJ
    return np.array(
        [[c0 - 6.5, r0 - 4.5], [c1 + 5.5, r0 - 4.5], [c1 + 5.5, r1 + 4.5], [c0 + 4.0, r1 + 4.5], [c0 - 6.5, r1 - 4.0]]
    )


def _lidar_on_object(step: int = 5) -> np.ndarray:
    """Beam-like rows of points on the object (image pixels)."""
    r0, r1, c0, c1 = OBJ
    vv, uu = np.mgrid[r0 + 1 : r1 - 1 : step, c0 + 1 : c1 - 1 : 3]
    return np.stack([uu.ravel(), vv.ravel()], axis=1).astype(np.float64)


def _request(
    image: np.ndarray,
    hulls: list[np.ndarray],
    depth: list[float],
    lidar_uv: np.ndarray | None = None,
    lidar_object: np.ndarray | None = None,
) -> SegmentRequest:
    boxes = []
    for hull in hulls:
        lo = np.clip(hull.min(axis=0), -0.5, [W - 0.5, H - 0.5])
        hi = np.clip(hull.max(axis=0), -0.5, [W - 0.5, H - 0.5])
        boxes.append(np.concatenate([lo, hi]))
    request = SegmentRequest(
        image_rgb=image,
        box_xyxy=np.asarray(boxes, dtype=np.float64).reshape(-1, 4),
        hull_uv=hulls,
        depth_m=np.asarray(depth, dtype=np.float64),
    )
    if lidar_uv is not None:
        request.lidar_uv = lidar_uv
        request.lidar_depth_m = np.full(len(lidar_uv), 10.0)
        request.lidar_object = lidar_object
    return request


def _single_object_request() -> tuple[SegmentRequest, np.ndarray]:
    image, truth = _scene()
    seeds = _lidar_on_object()
    rng = np.random.default_rng(1)
    background = rng.uniform([0, 0], [W - 1, H - 1], (200, 2))
    background = background[~truth[np.round(background[:, 1]).astype(int), np.round(background[:, 0]).astype(int)]]
    uv = np.concatenate([seeds, background])
    owner = np.concatenate([np.zeros(len(seeds), np.int64), np.full(len(background), -1, np.int64)])
    return _request(image, [_box_hull()], [10.0], uv, owner), truth


# ---------------------------------------------------------------------------------------------- registry


def test_registry_names_and_errors(monkeypatch) -> None:
    assert set(SEGMENTERS) >= {"projected_box", "grabcut", "lidar", "sam2"}
    assert SEGMENTERS["sam2"] == "stridegen.pipeline.segment.sam2_backend:Sam2Segmenter"
    with pytest.raises(ConfigError, match="unknown segmenter 'nope'"):
        make_segmenter("nope")
    for name in OFFLINE:
        assert make_segmenter(name).name == name
    with pytest.raises(ConfigError):
        make_segmenter("grabcut", occlusion="sideways")
    with pytest.raises(TypeError):
        make_segmenter("projected_box", no_such_option=1)
    from stridegen.pipeline.segment import register_segmenter

    monkeypatch.setitem(SEGMENTERS, "placeholder", "x")  # restored after the test
    register_segmenter("box_again", "stridegen.pipeline.segment.projected_box:ProjectedBoxSegmenter")
    try:
        assert make_segmenter("box_again", occlusion="none").occlusion == "none"
    finally:
        SEGMENTERS.pop("box_again")
    with pytest.raises(ConfigError):
        register_segmenter("bad", "no_colon_here")


# ---------------------------------------------------------------------------------------------- known answers


def test_projected_box_is_the_filled_hull_with_in_image_share() -> None:
    image, _ = _scene()
    inside_hull = np.array([[10.0, 10.0], [50.0, 12.0], [45.0, 60.0], [12.0, 50.0]])
    half_out = np.array([[-40.5, 70.0], [39.5, 70.0], [39.5, 90.0], [-40.5, 90.0]])  # half its area left of -0.5
    request = _request(image, [inside_hull, half_out], [5.0, 6.0])
    result = make_segmenter("projected_box").segment(request)
    assert np.array_equal(result.masks, hull_masks(request.hull_uv, H, W))
    np.testing.assert_allclose(result.quality, [1.0, 0.5])


@pytest.mark.parametrize("name", ["grabcut", "lidar"])
def test_rectangle_object_is_recovered(name: str) -> None:
    request, truth = _single_object_request()
    result = make_segmenter(name).segment(request)
    assert result.masks.shape == (1, H, W) and result.masks.dtype == bool
    iou = mask_iou(result.masks[0], truth)
    assert iou > 0.8, f"{name}: IoU {iou:.3f}"
    hull_iou = mask_iou(polygon_mask(request.hull_uv[0], H, W), truth)
    assert iou > hull_iou + 0.05  # the image evidence improves on the projected box
    assert 0.5 < result.quality[0] <= 1.0


def test_grabcut_quality_parts() -> None:
    mask = np.zeros((4, 4), bool)
    hull = np.zeros((4, 4), bool)
    mask[:2] = True
    hull[1:] = True
    assert hull_precision(MaskCrop.of_full(mask), MaskCrop.of_full(hull)) == pytest.approx(0.5)
    assert hull_precision(MaskCrop(0, 0, mask[:2]), MaskCrop(1, 0, hull[1:])) == pytest.approx(0.5)  # other windows
    assert hull_precision(MaskCrop.empty(), MaskCrop.of_full(hull)) == 0.0

    # one-component GMMs: unit-variance blobs at 0 and at 10 (model row: 5 weights, 5x3 means, 5x3x3 covs)
    def model(mean: float) -> np.ndarray:
        weights = np.array([1.0, 0, 0, 0, 0])
        means = np.zeros((5, 3))
        means[0] = mean
        covs = np.tile(np.eye(3), (5, 1, 1))
        return np.concatenate([weights, means.ravel(), covs.ravel()])[None]

    post = foreground_posterior(np.array([[0.0, 0, 0], [5.0, 5, 5], [10.0, 10, 10]]), model(10.0), model(0.0))
    np.testing.assert_allclose(post, [1 / (1 + np.exp(150.0)), 0.5, 1 / (1 + np.exp(-150.0))], rtol=1e-3)  # 1e-6 I reg.
    np.testing.assert_allclose(
        shrink_polygon(np.array([[0.0, 0], [4, 0], [4, 2], [0, 2]]), 0.5), [[1.0, 0.5], [3, 0.5], [3, 1.5], [1, 1.5]]
    )


def test_crop_maps_pixel_centres_like_cv2_resize() -> None:
    crop = Crop.around(np.array([10.0, 20.0, 30.0, 40.0]), 100, 100, 0.0, 0.0, 42)  # 21 px -> 42 px: scale 2
    assert (crop.r0, crop.r1, crop.c0, crop.c1, crop.hs, crop.ws) == (20, 41, 10, 31, 42, 42)
    # pixel (c0, r0) covers [c0 - 0.5, c0 + 0.5]: at scale 2 its centre lies between crop pixels 0 and 1
    np.testing.assert_allclose(crop.to_crop(np.array([10.0, 20.0])), [0.5, 0.5])
    ramp = np.tile(np.arange(100, dtype=np.float32), (100, 1))
    image = np.repeat(ramp[..., None], 3, axis=2).astype(np.uint8)
    crop_image = crop.image(image)
    assert crop_image.shape == (42, 42, 3)
    # bilinear upscaling samples the source at the mapped centres: crop column 5 <-> u = 10 + (5 + 0.5) / 2 - 0.5
    assert crop_image[0, 5, 0] == pytest.approx(10 + 5.5 / 2 - 0.5, abs=0.6)
    pasted = crop.paste(np.ones((42, 42), bool)).full(100, 100)
    assert pasted.sum() == 21 * 21 and pasted[20:41, 10:31].all()


def test_lidar_quality_counts_points_in_the_mask() -> None:
    request, _ = _single_object_request()
    n_points = int(np.count_nonzero(request.lidar_object == 0))
    segmenter = make_segmenter("lidar", points_scale=10.0)
    result = segmenter.segment(request)
    uv = request.lidar_uv[request.lidar_object == 0]
    inside = result.masks[0][np.floor(uv[:, 1] + 0.5).astype(int), np.floor(uv[:, 0] + 0.5).astype(int)]
    n_in = int(inside.sum())
    assert result.quality[0] == pytest.approx(n_in / n_points * (1 - np.exp(-n_in / 10.0)))
    # a nearer object covering the left half of the object hides half its points
    cover = np.array([[20.0, 10.0], [65.0, 10.0], [65.0, 90.0], [20.0, 90.0]])
    occluded = _request(
        request.image_rgb, [request.hull_uv[0], cover], [10.0, 4.0], request.lidar_uv, request.lidar_object
    )
    res2 = segmenter.segment(occluded)
    assert not (res2.masks[0] & res2.masks[1]).any()
    assert res2.quality[0] < 0.8 * result.quality[0]


@pytest.mark.parametrize("name", OFFLINE)
def test_nearer_objects_occlude_farther_ones(name: str) -> None:
    image, _ = _scene()
    far = np.array([[20.0, 20.0], [90.0, 20.0], [90.0, 80.0], [20.0, 80.0]])
    near = np.array([[60.0, 40.0], [120.0, 40.0], [120.0, 90.0], [60.0, 90.0]])
    hm = hull_masks([far, near], H, W)
    for depth, nearer in (([20.0, 8.0], 1), ([8.0, 20.0], 0)):
        request = _request(image, [far, near], depth)
        result = make_segmenter(name).segment(request)
        farther = 1 - nearer
        assert not (result.masks[0] & result.masks[1]).any()
        assert not (result.masks[farther] & hm[nearer]).any()  # no pixel of the nearer hull
        if name == "projected_box":
            assert np.array_equal(result.masks[nearer], hm[nearer])
            assert np.array_equal(result.masks[farther], hm[farther] & ~hm[nearer])
    overlap = make_segmenter(name, occlusion="none").segment(_request(image, [far, near], [20.0, 8.0]))
    if name == "projected_box":
        assert (overlap.masks[0] & overlap.masks[1]).any()


@pytest.mark.parametrize("name", OFFLINE)
def test_empty_request(name: str) -> None:
    image, _ = _scene()
    result = make_segmenter(name).segment(_request(image, [], []))
    assert result.masks.shape == (0, H, W) and result.quality.shape == (0,)


@pytest.mark.parametrize("name", OFFLINE)
def test_degenerate_boxes(name: str) -> None:
    image, _ = _scene()
    hulls = [
        np.array([[10.0, 10.0], [20.0, 20.0]]),  # a segment: no area
        np.array([[30.2, 30.2], [30.4, 30.2], [30.3, 30.4]]),  # sub-pixel: holds no pixel centre
        np.array([[50.0, 50.0], [53.0, 50.0], [53.0, 53.0], [50.0, 53.0]]),  # 4 x 4 pixels: below min_box_px
    ]
    uv = np.array([[51.0, 51.0], [52.0, 52.0]])
    request = _request(image, hulls, [5.0, 6.0, 7.0], uv, np.array([2, 2]))
    result = make_segmenter(name).segment(request)
    assert not result.masks[0].any() and not result.masks[1].any()
    np.testing.assert_array_equal(result.quality[:2], [0.0, 0.0])  # empty masks score 0
    assert np.isfinite(result.quality).all() and ((0 <= result.quality) & (result.quality <= 1)).all()
    tiny = polygon_mask(hulls[2], H, W)
    assert np.array_equal(result.masks[2], tiny)  # grabcut falls back to the hull; lidar has too few points
    if name == "grabcut":
        assert result.quality[2] == 0.0  # fallback quality: no image evidence
    if name == "lidar":
        assert result.quality[2] == pytest.approx(1 - np.exp(-2 / 10))  # both points inside, saturation 2 / 10
    # lidar with enough points on a tiny box: morphology around them, inside the hull
    many = np.array([[50.0, 50.0], [51.0, 50.0], [52.0, 52.0], [50.0, 52.0]])
    small = _request(image, [hulls[2]], [5.0], many, np.zeros(4, np.int64))
    morph = make_segmenter("lidar").segment(small).masks[0]
    assert morph.any() and not (morph & ~tiny).any()


def test_lidar_without_points_falls_back_to_the_hull() -> None:
    image, _ = _scene()
    request = _request(image, [_box_hull()], [10.0], np.zeros((0, 2)), np.zeros(0, np.int64))
    result = make_segmenter("lidar", fallback_quality=0.05).segment(request)
    assert np.array_equal(result.masks[0], polygon_mask(_box_hull(), H, W))
    assert result.quality[0] == pytest.approx(0.05)


@pytest.mark.parametrize("name", OFFLINE)
def test_rle_round_trip_and_determinism(name: str) -> None:
    request, _ = _single_object_request()
    other = np.array([[5.0, 5.0], [35.0, 5.0], [35.0, 25.0], [5.0, 25.0]])
    request = _request(
        request.image_rgb, [request.hull_uv[0], other], [10.0, 12.0], request.lidar_uv, request.lidar_object
    )
    first = make_segmenter(name).segment(request)
    cv2.setRNGSeed(12345)  # disturb OpenCV's global RNG: the backends seed it themselves
    cv2.randu(np.zeros((8, 8), np.float32), 0, 1)
    second = make_segmenter(name).segment(request)
    assert np.array_equal(first.masks, second.masks)
    assert np.array_equal(first.quality, second.quality)
    counts = encode_rle_batch(first.masks)
    assert len(counts) == 2
    for mask, c in zip(first.masks, counts, strict=True):
        assert np.array_equal(decode_rle(c, H, W), mask)


def test_backends_say_whether_they_need_lidar() -> None:
    """The build reads each frame's LiDAR sweep only when the segmenter's ``needs_lidar`` is true."""
    assert make_segmenter("lidar").needs_lidar is True
    assert make_segmenter("grabcut").needs_lidar is False
    assert make_segmenter("projected_box").needs_lidar is False


@pytest.mark.parametrize(
    "module",
    ["stridegen.pipeline.visibility", "stridegen.pipeline.segment.request", "stridegen.pipeline.segment.stage"],
)
def test_imports_in_any_order_without_heavy_dependencies(module: str) -> None:
    """visibility imports this package and the backends use visibility's polygon helpers: no import cycle."""
    import subprocess
    import sys

    code = (
        f"import sys, {module}, stridegen.pipeline.segment as s; s.make_segmenter('lidar'); "
        "assert 'torch' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_lidar_never_computes_the_colour_posterior(monkeypatch: pytest.MonkeyPatch) -> None:
    import stridegen.pipeline.segment.grabcut as grabcut_module

    def refuse(*args: object) -> np.ndarray:
        raise AssertionError("the colour posterior was computed")

    monkeypatch.setattr(grabcut_module, "foreground_posterior", refuse)
    request, truth = _single_object_request()
    result = make_segmenter("lidar").segment(request)  # GrabCut runs (a large object with many seeds)
    assert mask_iou(result.masks[0], truth) > 0.8
    with pytest.raises(AssertionError, match="posterior"):  # the grabcut backend does use it: the patch bites
        make_segmenter("grabcut").segment(request)


def test_grabcut_posterior_of_the_foreground_equals_the_whole_crop_posterior_there() -> None:
    image, truth = _scene()
    labels = np.where(truth, cv2.GC_PR_FGD, cv2.GC_PR_BGD).astype(np.uint8)
    out = run_grabcut(image, labels, 2, 0)
    assert out is not None and out.foreground.any()
    whole = foreground_posterior(image.reshape(-1, 3), out.fgd_model, out.bgd_model).reshape(truth.shape)
    assert out.mean_fg_posterior() == float(np.mean(whole[out.foreground]))
