"""Request building (projection of 3D boxes and LiDAR into one image) and hull rasterisation, on hand-built cameras."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stridegen.core.box_geometry import segments_pass_through_box
from stridegen.core.boxes import Boxes
from stridegen.core.errors import ConfigError, GeometryError
from stridegen.core.polygons import convex_hull_2d
from stridegen.core.projection import project_points
from stridegen.core.transforms import make_transform, transform_points
from stridegen.pipeline.segment import request as request_module
from stridegen.pipeline.segment.raster import polygon_mask
from stridegen.pipeline.segment.request import (
    check_occlusion_mode,
    hull_masks,
    make_request,
    mask_iou,
    nearest_first,
    projected_hulls,
    projected_hulls_batch,
)

W, H = 160, 90
K = np.array([[100.0, 0.0, 80.0], [0.0, 100.0, 45.0], [0.0, 0.0, 1.0]])
# Camera at the global origin looking along global +x: cam x right = -y, cam y down = -z, cam z forward = +x.
R_CAM_FROM_GLOBAL = np.array([[0.0, -1.0, 0.0], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0]])
T_CAM_FROM_GLOBAL = make_transform(R_CAM_FROM_GLOBAL, np.zeros(3))
IMAGE = np.zeros((H, W, 3), dtype=np.uint8)


def _boxes(centers, sizes, yaws=None) -> Boxes:
    centers = np.asarray(centers, dtype=np.float64).reshape(-1, 3)
    yaws = np.zeros(len(centers)) if yaws is None else yaws
    return Boxes(centers, np.asarray(sizes, dtype=np.float64).reshape(-1, 3), yaws, frame="global")


# ---------------------------------------------------------------------------------------------- polygons


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(0, 6), min_size=0, max_size=5))
def test_projected_hulls_batch_equals_each_view_alone(seed: int, boxes_per_view: list[int]) -> None:
    # Cameras turned about the vertical axis (one frame's rig), boxes all around: some views hold none, some boxes
    # are behind the camera, beyond the image or cut by the near plane.
    rng = np.random.default_rng(seed)
    views = []
    for n in boxes_per_view:
        yaw = rng.uniform(-np.pi, np.pi)
        turn = np.array([[np.cos(yaw), np.sin(yaw), 0.0], [-np.sin(yaw), np.cos(yaw), 0.0], [0.0, 0.0, 1.0]])
        T = make_transform(R_CAM_FROM_GLOBAL @ turn, rng.normal(size=3))
        boxes = _boxes(rng.uniform(-15, 15, size=(n, 3)), rng.uniform(0.3, 5, size=(n, 3)), rng.uniform(-3, 3, n))
        within = (-0.5, -0.5, W - 0.5, H - 0.5) if rng.random() < 0.7 else None
        views.append((transform_points(T, boxes.corners()), K, within))
    batch = projected_hulls_batch(views)
    assert len(batch) == len(views)
    for (corners, k, within), got in zip(views, batch, strict=True):
        alone = projected_hulls(corners, k, 0.1, within)
        assert len(got) == len(alone) == corners.shape[0]
        for a, b in zip(got, alone, strict=True):
            assert np.array_equal(a, b)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 8))
def test_make_request_inside_shares_equal_the_raster_rule(seed: int, n: int) -> None:
    """The inside shares ``make_request`` hands over (from the areas it clips anyway) are ``raster.inside_share``
    of each hull, bit for bit: boxes inside, across the edges, across the near plane."""
    from stridegen.pipeline.segment.raster import inside_share

    rng = np.random.default_rng(seed)
    centres = np.column_stack([rng.uniform(0.2, 25, n), rng.uniform(-15, 15, n), rng.uniform(-4, 4, n)])
    boxes = _boxes(centres, rng.uniform(0.3, 6, size=(n, 3)), rng.uniform(-3, 3, n))
    request, _ = make_request(IMAGE, K, T_CAM_FROM_GLOBAL, boxes)
    given_shares = dict(request._inside)
    assert sorted(given_shares) == list(range(len(request)))
    for i, hull in enumerate(request.hull_uv):
        assert given_shares[i] == inside_share(hull, W, H)
    with pytest.raises(GeometryError, match="inside shares"):
        request.know_inside_shares([0.5] * (len(request) + 1))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 8), st.integers(1, 5))
def test_frame_requests_equal_make_request_with_each_hull_rastered_alone(seed: int, n: int, cameras: int) -> None:
    """``frame_requests`` rasterises a frame's hulls in one batch per image size (issue 35): every request is
    ``make_request``'s of its view, and every hull crop it hands over is ``polygon_crop`` of that hull alone, pixel
    for pixel and window for window; images of two sizes in one frame, views holding no object."""
    from stridegen.pipeline.segment.raster import polygon_crop
    from stridegen.pipeline.segment.request import CameraView, frame_requests

    rng = np.random.default_rng(seed)
    centres = np.column_stack([rng.uniform(-25, 25, n), rng.uniform(-25, 25, n), rng.uniform(-3, 3, n)])
    boxes = _boxes(centres, rng.uniform(0.3, 6, size=(n, 3)), rng.uniform(-3, 3, n))
    views = []
    for _ in range(cameras):
        yaw = rng.uniform(-np.pi, np.pi)
        turn = np.array([[np.cos(yaw), np.sin(yaw), 0.0], [-np.sin(yaw), np.cos(yaw), 0.0], [0.0, 0.0, 1.0]])
        image = IMAGE if rng.random() < 0.6 else np.zeros((2 * H, 2 * W, 3), dtype=np.uint8)
        k = K if image is IMAGE else K * np.array([[2.0], [2.0], [1.0]])
        views.append(CameraView(image, k, make_transform(R_CAM_FROM_GLOBAL @ turn, rng.normal(size=3))))
    got = list(frame_requests(views, boxes))
    assert len(got) == len(views)
    for view, (request, keep) in zip(views, got, strict=True):
        want, want_keep = make_request(view.image, view.intrinsic, view.T_cam_from_global, boxes)
        assert np.array_equal(keep, want_keep)
        assert np.array_equal(request.box_xyxy, want.box_xyxy) and np.array_equal(request.depth_m, want.depth_m)
        assert sorted(request._hull_crops) == list(range(len(request)))  # handed over, not made on demand
        for i, hull in enumerate(request.hull_uv):
            assert np.array_equal(hull, want.hull_uv[i])
            crop, alone = request.hull_crop(i), polygon_crop(hull, request.height, request.width)
            assert crop.window == alone.window and np.array_equal(crop.pixels, alone.pixels)
    if got and len(got[0][0]):
        with pytest.raises(GeometryError, match="hull crops"):
            got[0][0].know_hull_crops([])


def test_convex_hull_drops_interior_and_collinear_points() -> None:
    pts = np.array([[0, 0], [2, 0], [2, 2], [0, 2], [1, 1], [1, 0], [0.5, 1.5]], dtype=np.float64)
    hull = convex_hull_2d(pts)
    assert hull.shape == (4, 2)
    assert {tuple(p) for p in hull} == {(0, 0), (2, 0), (2, 2), (0, 2)}
    x, y = hull[:, 0], hull[:, 1]
    assert np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)) > 0  # counter-clockwise (maths orientation)
    assert convex_hull_2d(np.array([[1.0, 1.0], [1.0, 1.0]])).shape == (1, 2)


def test_polygon_mask_pixel_centre_rule() -> None:
    # Pixel centres at integers: [0.5, 3.5]^2 holds centres 1..3; the closed square [1, 3]^2 holds the same.
    expected = np.zeros((5, 6), dtype=bool)
    expected[1:4, 1:4] = True
    for lo, hi in ((0.5, 3.5), (1.0, 3.0), (0.6, 3.4)):
        square = np.array([[lo, lo], [hi, lo], [hi, hi], [lo, hi]])
        assert np.array_equal(polygon_mask(square, 5, 6), expected)
    # A triangle: right-angled at (0, 0) with legs of 4 px -> centres with u + v <= 4, u, v >= 0.
    tri = polygon_mask(np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]]), 6, 6)
    vv, uu = np.mgrid[0:6, 0:6]
    assert np.array_equal(tri, (uu + vv <= 4))
    # Off-image parts are cut, degenerate polygons give nothing.
    assert polygon_mask(np.array([[-50.0, -50.0], [50.0, -50.0], [50.0, 50.0], [-50.0, 50.0]]), 4, 5).all()
    assert not polygon_mask(np.array([[0.0, 0.0], [3.0, 3.0], [1.0, 1.0]]), 5, 5).any()
    assert not polygon_mask(np.zeros((0, 2)), 5, 5).any()


def test_polygon_mask_agrees_with_fillpoly_on_integer_rectangles() -> None:
    rect = np.array([[3, 2], [11, 2], [11, 7], [3, 7]])
    ours = polygon_mask(rect.astype(np.float64), 10, 15)
    cv = cv2.fillPoly(np.zeros((10, 15), np.uint8), [rect.astype(np.int32)], 1).astype(bool)
    assert np.array_equal(ours, cv)
    assert hull_masks([rect.astype(np.float64), np.zeros((0, 2))], 10, 15).shape == (2, 10, 15)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(-5, 25), st.floats(-5, 20)), min_size=3, max_size=12))
def test_polygon_mask_equals_brute_force_half_planes(points) -> None:
    hull = convex_hull_2d(np.array(points))
    mask = polygon_mask(hull, 16, 22)
    vv, uu = np.mgrid[0:16, 0:22].astype(np.float64)
    if hull.shape[0] < 3:
        assert not mask.any()
        return
    a, b = hull, np.roll(hull, -1, axis=0)
    edge = b - a
    # signed distance of every pixel centre to every edge (> 0 inside a counter-clockwise polygon)
    cross = edge[:, None, None, 0] * (vv - a[:, None, None, 1]) - edge[:, None, None, 1] * (uu - a[:, None, None, 0])
    dist = cross / np.linalg.norm(edge, axis=1)[:, None, None]
    inside = (dist >= 0).all(axis=0)
    unsure = (np.abs(dist) < 1e-7).any(axis=0)  # centres on an edge: floating-point rounding may go either way
    if geo_area(hull) < 1e-9:
        return
    assert np.array_equal(mask[~unsure], inside[~unsure])


def geo_area(poly: np.ndarray) -> float:
    x, y = poly[:, 0], poly[:, 1]
    return 0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))


def test_mask_iou_and_depth_order() -> None:
    a = np.zeros((4, 4), bool)
    b = np.zeros((4, 4), bool)
    assert mask_iou(a, b) == 0.0
    a[:2] = True
    b[1:3] = True
    assert mask_iou(a, b) == pytest.approx(4 / 12)
    assert nearest_first(np.array([5.0, 2.0, 5.0, 1.0])).tolist() == [3, 1, 0, 2]
    with pytest.raises(ConfigError):
        check_occlusion_mode("z-buffer")


# ---------------------------------------------------------------------------------------------- make_request


def test_object_straight_ahead_projects_to_the_image_centre() -> None:
    boxes = _boxes([[10.0, 0.0, 0.0]], [[2.0, 2.0, 2.0]])
    request, keep = make_request(IMAGE, K, T_CAM_FROM_GLOBAL, boxes)
    assert keep.tolist() == [0] and len(request) == 1
    half = 100.0 / 9.0  # the near face (z = 9 m) is the silhouette: +-1 m at 9 m, f = 100 px
    np.testing.assert_allclose(request.box_xyxy[0], [80 - half, 45 - half, 80 + half, 45 + half], atol=1e-9)
    np.testing.assert_allclose(request.hull_uv[0].mean(axis=0), [80.0, 45.0], atol=1e-9)
    assert request.hull_uv[0].shape == (4, 2)
    assert request.depth_m[0] == pytest.approx(10.0)
    mask = hull_masks(request.hull_uv, H, W)[0]
    rows, cols = np.nonzero(mask)
    assert (rows.min(), rows.max(), cols.min(), cols.max()) == (34, 56, 69, 91)  # centres within 45/80 +- 11.1


def test_boxes_behind_or_outside_are_dropped_and_order_is_kept() -> None:
    boxes = _boxes([[-10.0, 0.0, 0.0], [20.0, 1.0, 0.0], [10.0, 40.0, 0.0], [8.0, -1.0, 0.5]], [[2.0, 2.0, 2.0]] * 4)
    request, keep = make_request(IMAGE, K, T_CAM_FROM_GLOBAL, boxes)
    assert keep.tolist() == [1, 3]
    np.testing.assert_allclose(request.depth_m, [20.0, 8.0])
    # box 1 at y = +1 (left of the camera) projects left of the centre, box 3 (y = -1) right of it
    assert np.mean(request.hull_uv[0][:, 0]) < 80.0 < np.mean(request.hull_uv[1][:, 0])


def test_partly_behind_box_is_near_clipped() -> None:
    near = 0.1
    boxes = _boxes([[0.5, 0.0, 0.0]], [[4.0, 2.0, 2.0]])  # spans x = -1.5 .. 2.5 m: crosses the camera plane
    request, keep = make_request(IMAGE, K, T_CAM_FROM_GLOBAL, boxes, near_m=near)
    assert keep.tolist() == [0]
    hull = request.hull_uv[0]
    # the cut at z = near is a 2 x 2 m square: +-1 m at 0.1 m -> +-1000 px around the principal point
    np.testing.assert_allclose(hull.min(axis=0), [80 - 1000.0, 45 - 1000.0], atol=1e-6)
    np.testing.assert_allclose(hull.max(axis=0), [80 + 1000.0, 45 + 1000.0], atol=1e-6)
    np.testing.assert_allclose(request.box_xyxy[0], [-0.5, -0.5, W - 0.5, H - 0.5])  # clipped to the image
    assert hull_masks(request.hull_uv, H, W)[0].all()
    # the same box with a near plane beyond its far end is dropped
    _, keep_far = make_request(IMAGE, K, T_CAM_FROM_GLOBAL, boxes, near_m=3.0)
    assert keep_far.size == 0


def test_empty_boxes_and_wrong_frame() -> None:
    points = np.array([[0.0, 0.0, 0.0], [10.0, 0.0, 0.0], [10.0, 0.5, 0.2]])  # the first is on the camera
    request, keep = make_request(IMAGE, K, T_CAM_FROM_GLOBAL, Boxes.empty(), points)
    assert len(request) == 0 and keep.size == 0 and request.box_xyxy.shape == (0, 4)
    assert request.lidar_object.tolist() == [-1, -1] and request.lidar_uv.shape == (2, 2)
    with pytest.raises(GeometryError):
        make_request(IMAGE, K, T_CAM_FROM_GLOBAL, _boxes([[10.0, 0, 0]], [[1, 1, 1]]).replace(frame="ego"))
    two = _boxes([[10.0, 0, 0], [12.0, 1, 0]], [[1, 1, 1], [1, 1, 1]])
    with pytest.raises(GeometryError, match="1 hulls for 2 boxes"):  # precomputed hulls must match the boxes
        make_request(IMAGE, K, T_CAM_FROM_GLOBAL, two, hulls=[np.zeros((0, 2))])
    corners = transform_points(T_CAM_FROM_GLOBAL, two.corners())
    given_hulls, _ = make_request(
        IMAGE, K, T_CAM_FROM_GLOBAL, two, hulls=projected_hulls(corners, K, 0.1, (-0.5, -0.5, W - 0.5, H - 0.5))
    )
    computed, _ = make_request(IMAGE, K, T_CAM_FROM_GLOBAL, two)
    assert np.array_equal(given_hulls.box_xyxy, computed.box_xyxy) and len(computed) == 2


def test_lidar_points_are_assigned_projected_and_filtered() -> None:
    # Two overlapping boxes ahead (centres 10 and 11 m) and one far box; a box behind the camera is dropped.
    boxes = _boxes(
        [[10.0, 0.0, 1.0], [11.0, 0.0, 1.0], [30.0, 5.0, 1.0], [-5.0, 0.0, 1.0]],
        [[2.0, 2.0, 2.0], [2.0, 2.0, 2.0], [2.0, 2.0, 2.0], [2.0, 2.0, 2.0]],
    )
    points = np.array(
        [
            [9.5, 0.0, 1.0],  # inside box 0 only
            [10.4, 0.2, 1.0],  # inside boxes 0 and 1, nearer box 0's centre
            [10.6, -0.2, 1.5],  # inside boxes 0 and 1, nearer box 1's centre
            [30.0, 5.0, 1.5],  # inside box 2
            [10.0, 0.0, 0.05],  # inside box 0 but within the ground margin (0.2 m above its bottom at z = 0)
            [20.0, 0.0, 1.0],  # in front, in the image, in no box
            [-5.0, 0.0, 1.0],  # behind the camera (inside the dropped box)
            [10.0, 30.0, 1.0],  # in front but far outside the image
        ]
    )
    request, keep = make_request(IMAGE, K, T_CAM_FROM_GLOBAL, boxes, points)
    assert keep.tolist() == [0, 1, 2]
    assert request.lidar_object.tolist() == [0, 0, 1, 2, -1, -1]
    expected_uv, expected_z, _ = project_points(transform_points(T_CAM_FROM_GLOBAL, points[:6]), K)
    np.testing.assert_allclose(request.lidar_uv, expected_uv)
    np.testing.assert_allclose(request.lidar_depth_m, expected_z)
    # without the ground margin the low point belongs to box 0
    request0, _ = make_request(IMAGE, K, T_CAM_FROM_GLOBAL, boxes, points, ground_margin_m=0.0)
    assert request0.lidar_object.tolist() == [0, 0, 1, 2, 0, -1]
    # every owned point projects inside its object's hull
    masks = hull_masks(request.hull_uv, H, W)
    for (u, v), owner in zip(request.lidar_uv, request.lidar_object, strict=True):
        if owner >= 0:
            assert masks[owner][int(np.floor(v + 0.5)), int(np.floor(u + 0.5))]


def test_lidar_through_lists_points_measured_through_each_box() -> None:
    # A 2 m box 10 m ahead; the LiDAR 2 m above the camera. Points behind the box: one on a ray through the box,
    # one whose ray passes over the box's top but lands inside its hull in the camera (parallax), one beside.
    boxes = _boxes([[10.0, 0.0, 0.0]], [[2.0, 2.0, 2.0]])
    origin = np.array([0.0, 0.0, 2.0])
    points = np.array(
        [
            [20.0, 0.0, -0.5],  # ray z = 2 - 0.125 x: z = 0.875 at x = 9 (near face): through the box
            [20.0, 0.0, 1.2],  # ray z = 2 - 0.04 x: 1.64 to 1.56 over the box; the camera's ray meets the box
            [20.0, 4.0, 0.0],  # beside
            [10.0, 0.0, 0.5],  # the box's own point
        ]
    )
    request, keep = make_request(IMAGE, K, T_CAM_FROM_GLOBAL, boxes, points, lidar_origin_global=origin)
    assert keep.tolist() == [0] and request.lidar_object.tolist() == [-1, -1, -1, 0]
    assert request.lidar_through is not None and request.lidar_through[0].tolist() == [0]
    hull = hull_masks(request.hull_uv, H, W)[0]
    u, v = request.lidar_uv[1]
    assert hull[int(np.floor(v + 0.5)), int(np.floor(u + 0.5))]  # the parallax point lies in the hull
    without, _ = make_request(IMAGE, K, T_CAM_FROM_GLOBAL, boxes, points)
    assert without.lidar_through is None  # the sensor's position unknown: no such evidence


def test_lidar_through_is_computed_per_object_on_first_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two boxes, points behind both: each object's array is the slab test of the points within its hull's bounds
    that are not its own, computed only when that object is first read, and kept."""
    boxes = _boxes([[10.0, -2.0, 0.0], [12.0, 3.0, 0.0]], [[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]])
    origin = np.array([0.0, 0.0, 2.0])
    rng = np.random.default_rng(3)
    points = np.concatenate(
        [rng.uniform([15.0, -6.0, -1.0], [30.0, 8.0, 1.5], (60, 3)), [[10.0, -2.0, 0.5], [12.0, 3.0, 0.5]]]
    )
    request, keep = make_request(IMAGE, K, T_CAM_FROM_GLOBAL, boxes, points, lidar_origin_global=origin)
    assert keep.tolist() == [0, 1]
    uv_all, _, _ = project_points(transform_points(T_CAM_FROM_GLOBAL, points), K)
    kept = [int(np.flatnonzero(np.all(uv_all == uv, axis=1))[0]) for uv in request.lidar_uv]  # request order
    through = request.lidar_through
    assert through is not None and len(through) == 2
    real = segments_pass_through_box
    calls: list[int] = []
    monkeypatch.setattr(request_module, "segments_pass_through_box", lambda *a: calls.append(1) or real(*a))
    for i in (1, 0):  # out of order: each object alone
        got = through[i]
        assert len(calls) == 2 - i
        lo, hi = request.hull_uv[i].min(axis=0), request.hull_uv[i].max(axis=0)
        within = (request.lidar_object != i) & np.all((request.lidar_uv >= lo) & (request.lidar_uv <= hi), axis=1)
        center, size, yaw = boxes.center[i], boxes.size_lwh[i], float(boxes.yaw[i])
        expected = [k for k in np.flatnonzero(within) if real(origin, points[kept[k]][None], center, size, yaw)[0]]
        assert got.tolist() == expected
        assert through[i] is got and len(calls) == 2 - i  # kept, not recomputed
    assert all(len(through[i]) for i in range(2))  # both boxes have points measured through them: not vacuous
    assert [a.tolist() for a in through[:]] == [through[0].tolist(), through[1].tolist()]
    assert through[-1] is through[1]
    with pytest.raises(IndexError):
        through[2]


def test_lidar_through_among_equals_membership_in_the_whole_array() -> None:
    """``among(i, points)``, asked before object i's array exists (the slab test on those points only) and after
    (a look-up), is ``np.isin(points, through[i])`` for any subset, in any order, with repeats."""
    boxes = _boxes([[10.0, -2.0, 0.0], [12.0, 3.0, 0.0]], [[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]])
    rng = np.random.default_rng(4)
    points = np.concatenate(
        [rng.uniform([15.0, -6.0, -1.0], [30.0, 8.0, 1.5], (80, 3)), [[10.0, -2.0, 0.5], [12.0, 3.0, 0.5]]]
    )
    origin = np.array([0.0, 0.0, 2.0])
    for i in (0, 1):
        fresh, _ = make_request(IMAGE, K, T_CAM_FROM_GLOBAL, boxes, points, lidar_origin_global=origin)
        through = fresh.lidar_through
        assert isinstance(through, request_module.LidarThrough)
        n = len(fresh.lidar_object)
        asked = [rng.permutation(n)[: rng.integers(0, n + 1)] for _ in range(5)] + [np.arange(n), np.array([3, 3, 1])]
        before = [through.among(i, a) for a in asked]  # object i's array not computed yet
        whole = through[i]
        assert whole.size  # not vacuous
        for a, got in zip(asked, before, strict=True):
            assert got.tolist() == np.isin(a, whole).tolist() == through.among(i, a).tolist()
