"""Known-answer and property tests of the coordinate-frame core."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from stridegen.core import geometry as geo
from stridegen.core.errors import GeometryError

finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
angles = st.floats(-10.0, 10.0, allow_nan=False, allow_infinity=False)
unit_quats = (
    st.tuples(*[st.floats(-1, 1, allow_nan=False)] * 4)
    .filter(lambda q: np.linalg.norm(q) > 0.1)
    .map(lambda q: np.array(q) / np.linalg.norm(q))
)


# ---------------------------------------------------------------------------------------------- angles


@pytest.mark.parametrize(
    ("x", "y", "deg"),
    [
        (1, 0, 0.0),
        (0, 1, 90.0),
        (0, -1, -90.0),
        (-1, 0, 180.0),
        (-1, -0.0, 180.0),
        (1, 1, 45.0),
        (1, -1, -45.0),
    ],
)
def test_polar_angle_known(x, y, deg):
    assert geo.polar_angle_deg(x, y) == pytest.approx(deg, abs=1e-9)


@pytest.mark.parametrize(
    ("x", "y", "hour"),
    [
        (1, 0, 12),
        (0, -1, 3),
        (-1, 0, 6),
        (0, 1, 9),
        (1, -1, 2),  # 45 deg right = 1.5 h -> rounds up to 2
        (1, -0.5, 1),
        (np.cos(np.radians(-14)), np.sin(np.radians(-14)), 12),
        (1, 1, 11),
        (np.cos(np.radians(-16)), np.sin(np.radians(-16)), 1),
        (-1, 1e-9, 6),
    ],
)
def test_clock_direction_known(x, y, hour):
    assert int(geo.clock_direction(x, y)) == hour


@pytest.mark.parametrize(("boundary_deg", "hour"), [(-45.0, 2), (45.0, 11), (-135.0, 5), (135.0, 8)])
@pytest.mark.parametrize("noise_deg", [-1e-12, 0.0, 1e-12])
def test_half_hour_does_not_depend_on_the_rounding_of_the_angle(boundary_deg, noise_deg, hour):
    """A point on a half hour (x = |y|) comes out of arctan2 a few ulp either side of it, the side depending on the
    build (the point cos/sin(-45 deg) has an exact angle 0.07 ulp from the midpoint of two doubles: a correctly
    rounded arctan2 says 2 o'clock, one ulp less says 1). Here that noise is pinned, 1e-12 degrees (~150 ulp, far
    above any arctan2 error) either side: every point gets the half hour's rounded-up hour. The bare
    ``floor(clockwise / 30 + 0.5)`` gives the hour below for the points on the counter-clockwise side."""
    rad = np.radians(boundary_deg + noise_deg)
    assert int(geo.clock_direction(np.cos(rad), np.sin(rad))) == hour
    # Beyond the tie width (1e-7 degrees) the angle decides again: a microdegree counter-clockwise of the boundary
    # is the hour below.
    rad = np.radians(boundary_deg + 1e-6)
    assert int(geo.clock_direction(np.cos(rad), np.sin(rad))) == (hour - 2) % 12 + 1


@given(angles)
def test_wrap_angle_range_and_equivalence(a):
    w = float(geo.wrap_angle(a))
    assert -np.pi < w <= np.pi
    assert np.isclose(np.cos(w), np.cos(a)) and np.isclose(np.sin(w), np.sin(a))


@given(st.floats(0.1, 100), st.floats(-180, 180))
def test_clock_matches_polar(r, deg):
    x, y = r * np.cos(np.radians(deg)), r * np.sin(np.radians(deg))
    hour = int(geo.clock_direction(x, y))
    assert 1 <= hour <= 12
    clockwise = -float(geo.polar_angle_deg(x, y))
    diff = (clockwise - (hour % 12) * 30.0 + 180) % 360 - 180
    assert -15.0 - 1e-6 <= diff <= 15.0 + 1e-6


# ---------------------------------------------------------------------------------------------- quaternions


def test_quat_known_rotation():
    q = geo.yaw_to_quat(np.pi / 2)  # 90 deg about z
    r = geo.quat_to_rotmat(q)
    np.testing.assert_allclose(r @ [1, 0, 0], [0, 1, 0], atol=1e-12)
    np.testing.assert_allclose(q, [np.sqrt(0.5), 0, 0, np.sqrt(0.5)], atol=1e-12)
    assert geo.quat_to_yaw(q) == pytest.approx(np.pi / 2)


def test_quat_matches_pyquaternion():
    pyq = pytest.importorskip("pyquaternion")
    rng = np.random.default_rng(0)
    for _ in range(20):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        np.testing.assert_allclose(geo.quat_to_rotmat(q), pyq.Quaternion(q).rotation_matrix, atol=1e-12)
        yaw_ref = pyq.Quaternion(q).yaw_pitch_roll[0]
        v = pyq.Quaternion(q).rotation_matrix @ [1, 0, 0]
        # the devkit's quaternion_yaw: heading of the rotated x axis
        assert float(geo.quat_to_yaw(q)) == pytest.approx(np.arctan2(v[1], v[0]), abs=1e-12)
        assert np.isfinite(yaw_ref)


@given(unit_quats)
def test_quat_rotmat_round_trip(q):
    q2 = geo.rotmat_to_quat(geo.quat_to_rotmat(q))
    assert np.allclose(q2, q, atol=1e-9) or np.allclose(q2, -q, atol=1e-9)
    assert q2[0] >= 0


@given(unit_quats, unit_quats)
def test_quat_multiply_composes_rotations(a, b):
    np.testing.assert_allclose(
        geo.quat_to_rotmat(geo.quat_multiply(a, b)), geo.quat_to_rotmat(a) @ geo.quat_to_rotmat(b), atol=1e-9
    )


@pytest.mark.parametrize("bad", [[1, 0, 0, np.nan], [2, 0, 0, 0], [0.9, 0, 0, 0], [1, 0, 0]])
def test_check_unit_quaternion_rejects(bad):
    with pytest.raises(GeometryError):
        geo.check_unit_quaternion(np.array(bad, dtype=float))


# ---------------------------------------------------------------------------------------------- SE(3)


@given(
    unit_quats, st.tuples(finite, finite, finite), st.lists(st.tuples(finite, finite, finite), min_size=1, max_size=5)
)
def test_transform_inverse_round_trip(q, t, pts):
    T = geo.make_transform(q, np.array(t))
    pts = np.array(pts)
    back = geo.transform_points(geo.invert_transform(T), geo.transform_points(T, pts))
    np.testing.assert_allclose(back, pts, atol=1e-6)
    np.testing.assert_allclose(geo.invert_transform(T) @ T, np.eye(4), atol=1e-9)


def test_transform_known():
    T = geo.make_transform(geo.yaw_to_quat(np.pi / 2), [10, 0, 0])
    np.testing.assert_allclose(geo.transform_points(T, [1, 0, 0]), [10, 1, 0], atol=1e-12)
    np.testing.assert_allclose(geo.rotate_vectors(T, [1, 0, 0]), [0, 1, 0], atol=1e-12)


# ---------------------------------------------------------------------------------------------- boxes


def test_box_corners_known_and_devkit_order():
    corners = geo.box_corners([0, 0, 0], [4, 2, 1], [0.0])[0]
    # front face (x = +2) first, top-left (y = +1, z = +0.5) first
    np.testing.assert_allclose(corners[0], [2, 1, 0.5])
    np.testing.assert_allclose(corners[6], [-2, -1, -0.5])
    devkit = pytest.importorskip("nuscenes.utils.data_classes")
    pyq = pytest.importorskip("pyquaternion")
    rng = np.random.default_rng(1)
    for _ in range(10):
        c, s, yaw = rng.normal(size=3) * 10, rng.uniform(0.5, 5, 3), rng.uniform(-np.pi, np.pi)
        box = devkit.Box(c, [s[1], s[0], s[2]], pyq.Quaternion(axis=[0, 0, 1], angle=yaw))  # devkit size: w, l, h
        np.testing.assert_allclose(geo.box_corners(c, s, [yaw])[0], box.corners().T, atol=1e-9)


def test_points_in_boxes_known():
    pts = np.array([[0, 0, 0], [1.9, 0.9, 0.4], [2.1, 0, 0], [0, 0, 0.6]])
    inside = geo.points_in_boxes(pts, [[0, 0, 0]], [[4, 2, 1]], [0.0])[0]
    assert inside.tolist() == [True, True, False, False]
    rotated = geo.points_in_boxes(np.array([[0, 1.9, 0]]), [[0, 0, 0]], [[4, 2, 1]], [np.pi / 2])[0]
    assert rotated.tolist() == [True]


# ---------------------------------------------------------------------------------------------- projection

K = np.array([[1000.0, 0, 800], [0, 1000.0, 450], [0, 0, 1]])


def test_project_points_known():
    uv, depth, ok = geo.project_points(np.array([[1, 0.5, 10], [0, 0, -1]]), K)
    np.testing.assert_allclose(uv[0], [900, 500])
    assert depth[0] == 10 and ok.tolist() == [True, False] and np.isnan(uv[1]).all()


def test_project_boxes_2d_in_front_matches_corner_extent():
    corners = geo.box_corners([0, 0, 20], [2, 2, 2], [0.0])  # axis-aligned box 20 m ahead (camera frame)
    box, valid = geo.project_boxes_2d(corners, K)
    uv, _, _ = geo.project_points(corners[0], K)
    assert valid[0]
    np.testing.assert_allclose(box[0], [uv[:, 0].min(), uv[:, 1].min(), uv[:, 0].max(), uv[:, 1].max()])


def test_project_boxes_2d_near_plane_clipping():
    # A box straddling the camera plane: corners behind must not flip to the other side of the image.
    corners = geo.box_corners([0.5, 0, 0.5], [2, 2, 2], [0.0])  # x -0.5..1.5, z -0.5..1.5 (camera axes)
    box, valid = geo.project_boxes_2d(corners, K, near=0.1)
    assert valid[0]
    # The nearest visible depth is the near plane z = 0.1, where x = -0.5 and x = 1.5 give the extreme columns.
    assert box[0, 0] == pytest.approx(800 - 1000 * 0.5 / 0.1)
    assert box[0, 2] == pytest.approx(800 + 1000 * 1.5 / 0.1)
    right_only = geo.box_corners([3, 0, 0.5], [2, 2, 2], [0.0])  # wholly right of a 1600 px wide image
    assert not geo.project_boxes_2d(right_only, K, image_size=(1600, 900))[1][0]
    behind = geo.box_corners([0, 0, -5], [2, 2, 2], [0.0])
    _, valid_b = geo.project_boxes_2d(behind, K)
    assert not valid_b[0]
    clipped, valid_c = geo.project_boxes_2d(corners, K, image_size=(1600, 900))
    assert valid_c[0] and clipped[0, 2] == 1600


@given(st.floats(-50, 50), st.floats(-20, 20), st.floats(1, 80), st.floats(-3.2, 3.2))
@settings(max_examples=50)
def test_project_boxes_2d_contains_visible_corners(x, y, z, yaw):
    corners = geo.box_corners([x, y, z], [4, 2, 1.5], [yaw])
    box, valid = geo.project_boxes_2d(corners, K)
    uv, _, ok = geo.project_points(corners[0], K)
    if ok.any():
        assert valid[0]
        assert np.all(uv[ok, 0] >= box[0, 0] - 1e-6) and np.all(uv[ok, 0] <= box[0, 2] + 1e-6)


# ---------------------------------------------------------------------------------------------- IoU


def test_iou_2d_known():
    a = np.array([[0, 0, 2, 2]])
    b = np.array([[1, 1, 3, 3], [5, 5, 6, 6], [0, 0, 2, 2]])
    np.testing.assert_allclose(geo.iou_2d(a, b), [[1 / 7, 0, 1]])


@given(
    st.lists(
        st.tuples(*[st.floats(-50, 50, allow_nan=False)] * 2, *[st.floats(0, 30, allow_nan=False)] * 2),
        min_size=1,
        max_size=12,
    ),
    st.integers(0, 2**32 - 1),
)
def test_iou_2d_rowwise_is_the_diagonal(boxes, seed):
    """Bit for bit the diagonal of the pairwise matrix (zero-size and disjoint boxes included)."""
    a = np.array([[x, y, x + w, y + h] for x, y, w, h in boxes])
    b = a[np.random.default_rng(seed).permutation(len(a))] + np.random.default_rng(seed).choice([0.0, 0.5], (len(a), 4))
    assert geo.iou_2d_rowwise(a, b).tobytes() == geo.iou_2d(a, b).diagonal().tobytes()
    np.testing.assert_allclose(geo.iou_2d_rowwise([[0, 0, 2, 2]] * 2, [[1, 1, 3, 3], [0, 0, 2, 2]]), [1 / 7, 1])
    with pytest.raises(GeometryError, match="as many boxes"):
        geo.iou_2d_rowwise(a, b[:0])


def test_bev_iou_known():
    # identical -> 1; shifted by half its length -> 1/3; rotated square by 45 deg vs itself
    iou = geo.bev_iou([[0, 0]], [[4, 2]], [0.0], [[0, 0], [2, 0], [100, 0]], [[4, 2]] * 3, [0.0] * 3)
    np.testing.assert_allclose(iou, [[1.0, 1 / 3, 0.0]], atol=1e-12)
    sq = geo.bev_iou([[0, 0]], [[2, 2]], [0.0], [[0, 0]], [[2, 2]], [np.pi / 4])
    inter = 8 * (np.sqrt(2) - 1)  # regular octagon from two unit-half squares
    assert sq[0, 0] == pytest.approx(inter / (8 - inter))


@given(
    st.lists(
        st.tuples(st.floats(-5, 5), st.floats(-5, 5), st.floats(0.2, 6), st.floats(0.2, 6), st.floats(-3.2, 3.2)),
        min_size=1,
        max_size=4,
    ),
    st.lists(
        st.tuples(st.floats(-5, 5), st.floats(-5, 5), st.floats(0.2, 6), st.floats(0.2, 6), st.floats(-3.2, 3.2)),
        min_size=1,
        max_size=4,
    ),
)
@settings(max_examples=60, deadline=None)
def test_bev_iou_matches_shapely(a, b):
    shapely = pytest.importorskip("shapely")
    a, b = np.array(a), np.array(b)
    ours = geo.bev_iou(a[:, :2], a[:, 2:4], a[:, 4], b[:, :2], b[:, 2:4], b[:, 4])
    ca = geo.bev_corners(a[:, :2], a[:, 2:4], a[:, 4])
    cb = geo.bev_corners(b[:, :2], b[:, 2:4], b[:, 4])
    for i in range(len(a)):
        for j in range(len(b)):
            pa, pb = shapely.Polygon(ca[i]), shapely.Polygon(cb[j])
            ref = pa.intersection(pb).area / pa.union(pb).area
            assert ours[i, j] == pytest.approx(ref, abs=1e-9)
    # symmetry
    np.testing.assert_allclose(
        ours, geo.bev_iou(b[:, :2], b[:, 2:4], b[:, 4], a[:, :2], a[:, 2:4], a[:, 4]).T, atol=1e-9
    )


# ---------------------------------------------------------------------------------------------- convex hulls


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-6, 6), st.integers(-6, 6)), min_size=1, max_size=25))
def test_convex_hull_2d_is_the_exact_hull_of_integer_points(pts):
    # Small integers: every cross product is exact, so the hull is decided exactly and can be checked exactly.
    points = np.array(pts, dtype=np.float64)
    hull = geo.convex_hull_2d(points)
    distinct = {tuple(p) for p in pts}
    assert {tuple(p) for p in hull} <= distinct and len({tuple(p) for p in hull}) == hull.shape[0]
    if len(distinct) < 3 or hull.shape[0] < 3:  # all points collinear: no area
        xy = np.array(sorted(distinct), dtype=np.float64)
        d = xy - xy[0]
        assert np.all(d[:, 0] * d[-1, 1] - d[:, 1] * d[-1, 0] == 0)
        return
    assert tuple(hull[0]) == min(distinct)  # starts at the smallest (u, v)
    a, b, c = hull, np.roll(hull, -1, axis=0), np.roll(hull, -2, axis=0)
    turn = (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])
    assert np.all(turn > 0)  # strictly convex, counter-clockwise: no collinear vertex
    du, dv = points[None, :, 0] - a[:, None, 0], points[None, :, 1] - a[:, None, 1]
    side = (b - a)[:, None, 0] * dv - (b - a)[:, None, 1] * du
    assert np.all(side >= 0)  # every point inside or on the hull


coords = st.floats(-1e4, 1e4, allow_nan=False)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.lists(st.tuples(coords, coords, st.booleans()), min_size=1, max_size=14), min_size=1, max_size=6),
    st.booleans(),
)
def test_convex_hulls_2d_lockstep_equals_the_sequential_chain(sets, snap):
    # Ragged sets padded into one [N, P, 2] array, with duplicates and (snapped to a coarse grid) collinear runs.
    p = max(len(s) for s in sets)
    pts = np.full((len(sets), p, 2), np.nan)
    valid = np.zeros((len(sets), p), dtype=bool)
    for i, s in enumerate(sets):
        for j, (u, v, keep) in enumerate(s):
            pts[i, j] = (round(u / 2000) * 2000.0, round(v / 2000) * 2000.0) if snap else (u, v)
            valid[i, j] = keep
    pts[1::2, 0] = pts[1::2, -1]  # a repeated point in every other set
    batch = geo.convex_hulls_2d(pts, valid)
    assert len(batch) == len(sets)
    for i in range(len(sets)):
        expected = geo.convex_hull_2d(pts[i][valid[i]])
        assert batch[i].shape == expected.shape and np.array_equal(batch[i], expected)
    assert geo.convex_hulls_2d(np.zeros((0, 4, 2))) == []


def test_segments_pass_through_box_known_answers():
    # unit cube at (10, 0, 0); sensor at the origin
    center, size = np.array([10.0, 0.0, 0.0]), np.array([2.0, 2.0, 2.0])
    points = np.array(
        [
            [20.0, 0.0, 0.0],  # straight through, point beyond the far face
            [10.5, 0.0, 0.0],  # inside the box: not measured through it
            [11.0, 0.0, 0.0],  # on the far face: not through
            [8.0, 0.0, 0.0],  # in front of the box
            [20.0, 3.0, 0.0],  # ray at y = 1.5 by x = 10: beside the box
            [20.0, 0.0, 1.9],  # ray at z = 0.95 at x = 10: enters the near face (z = 0.855), leaves the top face
            [20.0, 0.0, 2.4],  # ray above the box from x = 9 on (z = 1.08 at x = 9)
        ]
    )
    got = geo.segments_pass_through_box(np.zeros(3), points, center, size, 0.0)
    assert got.tolist() == [True, False, False, False, False, True, False]
    # a 45 deg yaw turns the box into a diamond: a ray along y = 1.3 misses the square but meets the diamond
    ray = np.array([[20.0, 1.3, 0.0]])
    assert not geo.segments_pass_through_box(np.array([0.0, 1.3, 0.0]), ray, center, size, 0.0)[0]
    assert geo.segments_pass_through_box(np.array([0.0, 1.3, 0.0]), ray, center, size, np.pi / 4)[0]
    # a ray parallel to a slab: inside the slab passes, outside misses
    assert geo.segments_pass_through_box(np.array([0.0, 0.5, 0.5]), np.array([[20.0, 0.5, 0.5]]), center, size, 0.0)[0]
    assert not geo.segments_pass_through_box(
        np.array([0.0, 1.5, 0.5]), np.array([[20.0, 1.5, 0.5]]), center, size, 0.0
    )[0]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(-15.0, 15.0), min_size=3, max_size=3),
    st.lists(st.floats(-15.0, 15.0), min_size=3, max_size=3),
    st.lists(st.floats(0.5, 6.0), min_size=3, max_size=3),
    st.floats(-np.pi, np.pi),
)
@example(  # clips an edge of the box for 0.17 mm, under the 2 mm between samples: grazing, not a disagreement
    [2.375, -2.234375, 6.640625], [-1.40625, -1.099609375, 0.0], [1.375, 3.0, 4.361328125], -2.7703537358546426
)
def test_segments_pass_through_box_matches_dense_sampling(origin, point, size, yaw):
    """Reference: sample the segment densely; through = some sample inside the box and the last one outside."""
    origin, point, size = np.array(origin), np.array(point), np.array(size)
    center = np.zeros(3)
    t = np.linspace(0.0, 1.0, 4001)
    samples = origin[None, :] + t[:, None] * (point - origin)[None, :]
    inside = geo.points_in_boxes(samples, center, size, np.array([yaw]))[0]
    step = np.linalg.norm(point - origin) / 4000 + 1e-9
    grown = geo.points_in_boxes(point[None, :], center, size + 4 * step, np.array([yaw]))[0, 0]
    shrunk = geo.points_in_boxes(point[None, :], center, np.maximum(size - 4 * step, 0.0), np.array([yaw]))[0, 0]
    # The samples cannot decide within a step of a face: at the point, or where the segment only clips an edge or a
    # corner of the box (a box grown by a few steps holds samples, one shrunk by as much holds none).
    near_edge = (
        geo.points_in_boxes(samples, center, size + 4 * step, np.array([yaw]))[0].any()
        != geo.points_in_boxes(samples, center, np.maximum(size - 4 * step, 0.0), np.array([yaw]))[0].any()
    )
    grazing = 0 < inside.sum() <= 2 or grown != shrunk or near_edge
    if not grazing:
        expected = bool(inside.any() and not inside[-1])
        assert geo.segments_pass_through_box(origin, point[None, :], center, size, yaw)[0] == expected


@settings(max_examples=150, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.floats(0.05, 2.0),
    st.sampled_from([(320, 180), (800, 450), (1600, 900)]),
    st.floats(-0.01, 0.01),
)
def test_frustum_candidates_hold_every_projected_point(seed: int, near: float, size: tuple[int, int], skew: float):
    """A random camera pose and pinhole (with skew), points all around it, some exactly on the image's edges and
    on the near plane: every point ``project_points`` puts in the image is a candidate, and every candidate
    projects within the widened rectangle (the margins) in front of the widened near plane."""
    rng = np.random.default_rng(seed)
    w, h = size
    f = rng.uniform(0.5, 2.0) * w
    k = np.array([[f, skew * f, w / 2 + rng.uniform(-20, 20)], [0.0, f * rng.uniform(0.9, 1.1), h / 2], [0, 0, 1.0]])
    q = rng.normal(size=4)
    t_cam_from_frame = geo.make_transform(geo.quat_to_rotmat(q / np.linalg.norm(q)), rng.uniform(-50, 50, 3))
    rect = (-0.5, -0.5, w - 0.5, h - 0.5)
    cam = rng.uniform(-40, 40, (3000, 3))
    edge_uv = np.stack([rng.choice([rect[0], rect[2]], 200), rng.uniform(rect[1], rect[3], 200)], axis=1)
    edge_z = rng.uniform(near, 60, 200)
    on_edges = np.linalg.solve(k, np.stack([edge_uv[:, 0] * edge_z, edge_uv[:, 1] * edge_z, edge_z])).T
    on_near = cam[:200].copy()
    on_near[:, 2] = near
    cam = np.concatenate([cam, on_edges, on_near])
    points = geo.transform_points(geo.invert_transform(t_cam_from_frame), cam)
    got = geo.frustum_candidates(t_cam_from_frame, k, near, rect, points)
    uv, _, in_front = geo.project_points(geo.transform_points(t_cam_from_frame, points), k, near)
    with np.errstate(invalid="ignore"):
        seen = in_front & (uv[:, 0] >= rect[0]) & (uv[:, 0] <= rect[2]) & (uv[:, 1] >= rect[1]) & (uv[:, 1] <= rect[3])
    assert seen.sum() > 0
    assert set(np.flatnonzero(seen).tolist()) <= set(got.tolist())
    widened = (rect[0] - 1.001, rect[1] - 1.001, rect[2] + 1.001, rect[3] + 1.001)
    uv_got, z_got, _ = geo.project_points(geo.transform_points(t_cam_from_frame, points[got]), k, near - 0.002)
    assert (z_got >= near - 0.002).all()
    assert ((uv_got >= widened[:2]) & (uv_got <= widened[2:])).all()


def test_frustum_candidates_of_a_non_pinhole_matrix_are_every_point():
    k = np.array([[100.0, 0, 50], [0, 100, 50], [0.001, 0, 1]])
    points = np.random.default_rng(0).normal(size=(20, 3))
    assert geo.frustum_candidates(np.eye(4), k, 0.1, (-0.5, -0.5, 99.5, 99.5), points).tolist() == list(range(20))
