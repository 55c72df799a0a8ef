"""Known-answer and property tests of yaw-only 3D box geometry: corners, points in boxes, segments through a box."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from stridegen.core.box_geometry import box_corners, points_in_boxes, segments_pass_through_box

# ---------------------------------------------------------------------------------------------- boxes


def test_box_corners_known_and_devkit_order():
    corners = box_corners([0, 0, 0], [4, 2, 1], [0.0])[0]
    # front face (x = +2) first, top-left (y = +1, z = +0.5) first
    np.testing.assert_allclose(corners[0], [2, 1, 0.5])
    np.testing.assert_allclose(corners[6], [-2, -1, -0.5])
    devkit = pytest.importorskip("nuscenes.utils.data_classes")
    pyq = pytest.importorskip("pyquaternion")
    rng = np.random.default_rng(1)
    for _ in range(10):
        c, s, yaw = rng.normal(size=3) * 10, rng.uniform(0.5, 5, 3), rng.uniform(-np.pi, np.pi)
        box = devkit.Box(c, [s[1], s[0], s[2]], pyq.Quaternion(axis=[0, 0, 1], angle=yaw))  # devkit size: w, l, h
        np.testing.assert_allclose(box_corners(c, s, [yaw])[0], box.corners().T, atol=1e-9)


def test_points_in_boxes_known():
    pts = np.array([[0, 0, 0], [1.9, 0.9, 0.4], [2.1, 0, 0], [0, 0, 0.6]])
    inside = points_in_boxes(pts, [[0, 0, 0]], [[4, 2, 1]], [0.0])[0]
    assert inside.tolist() == [True, True, False, False]
    rotated = points_in_boxes(np.array([[0, 1.9, 0]]), [[0, 0, 0]], [[4, 2, 1]], [np.pi / 2])[0]
    assert rotated.tolist() == [True]


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
    got = segments_pass_through_box(np.zeros(3), points, center, size, 0.0)
    assert got.tolist() == [True, False, False, False, False, True, False]
    # a 45 deg yaw turns the box into a diamond: a ray along y = 1.3 misses the square but meets the diamond
    ray = np.array([[20.0, 1.3, 0.0]])
    assert not segments_pass_through_box(np.array([0.0, 1.3, 0.0]), ray, center, size, 0.0)[0]
    assert segments_pass_through_box(np.array([0.0, 1.3, 0.0]), ray, center, size, np.pi / 4)[0]
    # a ray parallel to a slab: inside the slab passes, outside misses
    assert segments_pass_through_box(np.array([0.0, 0.5, 0.5]), np.array([[20.0, 0.5, 0.5]]), center, size, 0.0)[0]
    assert not segments_pass_through_box(np.array([0.0, 1.5, 0.5]), np.array([[20.0, 1.5, 0.5]]), center, size, 0.0)[0]


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
    inside = points_in_boxes(samples, center, size, np.array([yaw]))[0]
    step = np.linalg.norm(point - origin) / 4000 + 1e-9
    grown = points_in_boxes(point[None, :], center, size + 4 * step, np.array([yaw]))[0, 0]
    shrunk = points_in_boxes(point[None, :], center, np.maximum(size - 4 * step, 0.0), np.array([yaw]))[0, 0]
    # The samples cannot decide within a step of a face: at the point, or where the segment only clips an edge or a
    # corner of the box (a box grown by a few steps holds samples, one shrunk by as much holds none).
    near_edge = (
        points_in_boxes(samples, center, size + 4 * step, np.array([yaw]))[0].any()
        != points_in_boxes(samples, center, np.maximum(size - 4 * step, 0.0), np.array([yaw]))[0].any()
    )
    grazing = 0 < inside.sum() <= 2 or grown != shrunk or near_edge
    if not grazing:
        expected = bool(inside.any() and not inside[-1])
        assert segments_pass_through_box(origin, point[None, :], center, size, yaw)[0] == expected


def test_segments_pass_through_box_batch_equals_each_point_alone():
    """The slabs are tested on all points at once: each point's answer is its answer alone, on rays parallel to the
    slabs (grid points), through faces and edges, with a full rotation and with a NaN point."""
    rng = np.random.default_rng(7)
    origin, center, size = np.array([0.0, 0.0, 0.5]), np.array([4.0, 0.0, 0.5]), np.array([2.0, 2.0, 1.0])
    grid = np.stack(np.meshgrid(*(np.arange(-1.0, 9.5, 0.5),) * 2, np.arange(-1.0, 2.5, 0.5)), -1).reshape(-1, 3)
    points = np.concatenate([grid, rng.normal(4.0, 3.0, (300, 3)), [[np.nan, 0.0, 0.0]]])
    c, s = np.cos(0.3), np.sin(0.3)
    tilt = np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
    for yaw, rotation in ((0.0, None), (0.7, None), (0.0, tilt)):
        batch = segments_pass_through_box(origin, points, center, size, yaw, rotation)
        alone = [segments_pass_through_box(origin, p[None], center, size, yaw, rotation)[0] for p in points]
        assert batch.tolist() == alone and 0 < batch.sum() < len(points) - 1 and not batch[-1]
