"""Known-answer and property tests of pinhole projection: points, 2D boxes of 3D boxes, frustum candidates."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stridegen.core.box_geometry import box_corners
from stridegen.core.projection import frustum_candidates, project_boxes_2d, project_clipped_edges, project_points
from stridegen.core.transforms import (
    invert_transform,
    make_transform,
    quat_to_rotmat,
    transform_points,
)

# ---------------------------------------------------------------------------------------------- projection

K = np.array([[1000.0, 0, 800], [0, 1000.0, 450], [0, 0, 1]])


def test_project_points_known():
    uv, depth, ok = project_points(np.array([[1, 0.5, 10], [0, 0, -1]]), K)
    np.testing.assert_allclose(uv[0], [900, 500])
    assert depth[0] == 10 and ok.tolist() == [True, False] and np.isnan(uv[1]).all()


def test_project_boxes_2d_in_front_matches_corner_extent():
    corners = box_corners([0, 0, 20], [2, 2, 2], [0.0])  # axis-aligned box 20 m ahead (camera frame)
    box, valid = project_boxes_2d(corners, K)
    uv, _, _ = project_points(corners[0], K)
    assert valid[0]
    np.testing.assert_allclose(box[0], [uv[:, 0].min(), uv[:, 1].min(), uv[:, 0].max(), uv[:, 1].max()])


def test_project_boxes_2d_near_plane_clipping():
    # A box straddling the camera plane: corners behind must not flip to the other side of the image.
    corners = box_corners([0.5, 0, 0.5], [2, 2, 2], [0.0])  # x -0.5..1.5, z -0.5..1.5 (camera axes)
    box, valid = project_boxes_2d(corners, K, near=0.1)
    assert valid[0]
    # The nearest visible depth is the near plane z = 0.1, where x = -0.5 and x = 1.5 give the extreme columns.
    assert box[0, 0] == pytest.approx(800 - 1000 * 0.5 / 0.1)
    assert box[0, 2] == pytest.approx(800 + 1000 * 1.5 / 0.1)
    right_only = box_corners([3, 0, 0.5], [2, 2, 2], [0.0])  # wholly right of a 1600 px wide image
    assert not project_boxes_2d(right_only, K, image_size=(1600, 900))[1][0]
    behind = box_corners([0, 0, -5], [2, 2, 2], [0.0])
    _, valid_b = project_boxes_2d(behind, K)
    assert not valid_b[0]
    clipped, valid_c = project_boxes_2d(corners, K, image_size=(1600, 900))
    assert valid_c[0] and clipped[0, 2] == 1600


@given(st.floats(-50, 50), st.floats(-20, 20), st.floats(1, 80), st.floats(-3.2, 3.2))
@settings(max_examples=50)
def test_project_boxes_2d_contains_visible_corners(x, y, z, yaw):
    corners = box_corners([x, y, z], [4, 2, 1.5], [yaw])
    box, valid = project_boxes_2d(corners, K)
    uv, _, ok = project_points(corners[0], K)
    if ok.any():
        assert valid[0]
        assert np.all(uv[ok, 0] >= box[0, 0] - 1e-6) and np.all(uv[ok, 0] <= box[0, 2] + 1e-6)


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
    t_cam_from_frame = make_transform(quat_to_rotmat(q / np.linalg.norm(q)), rng.uniform(-50, 50, 3))
    rect = (-0.5, -0.5, w - 0.5, h - 0.5)
    cam = rng.uniform(-40, 40, (3000, 3))
    edge_uv = np.stack([rng.choice([rect[0], rect[2]], 200), rng.uniform(rect[1], rect[3], 200)], axis=1)
    edge_z = rng.uniform(near, 60, 200)
    on_edges = np.linalg.solve(k, np.stack([edge_uv[:, 0] * edge_z, edge_uv[:, 1] * edge_z, edge_z])).T
    on_near = cam[:200].copy()
    on_near[:, 2] = near
    cam = np.concatenate([cam, on_edges, on_near])
    points = transform_points(invert_transform(t_cam_from_frame), cam)
    got = frustum_candidates(t_cam_from_frame, k, near, rect, points)
    uv, _, in_front = project_points(transform_points(t_cam_from_frame, points), k, near)
    with np.errstate(invalid="ignore"):
        seen = in_front & (uv[:, 0] >= rect[0]) & (uv[:, 0] <= rect[2]) & (uv[:, 1] >= rect[1]) & (uv[:, 1] <= rect[3])
    assert seen.sum() > 0
    assert set(np.flatnonzero(seen).tolist()) <= set(got.tolist())
    widened = (rect[0] - 1.001, rect[1] - 1.001, rect[2] + 1.001, rect[3] + 1.001)
    uv_got, z_got, _ = project_points(transform_points(t_cam_from_frame, points[got]), k, near - 0.002)
    assert (z_got >= near - 0.002).all()
    assert ((uv_got >= widened[:2]) & (uv_got <= widened[2:])).all()


def test_frustum_candidates_of_a_non_pinhole_matrix_are_every_point():
    k = np.array([[100.0, 0, 50], [0, 100, 50], [0.001, 0, 1]])
    points = np.random.default_rng(0).normal(size=(20, 3))
    assert frustum_candidates(np.eye(4), k, 0.1, (-0.5, -0.5, 99.5, 99.5), points).tolist() == list(range(20))


def test_project_clipped_edges_with_one_intrinsic_per_box_equals_each_camera_alone() -> None:
    # Boxes of three cameras in one call, some crossing the near plane, some behind it: bit for bit each camera's.
    rng = np.random.default_rng(5)
    cameras = [
        np.array([[fx, skew, cx], [0.0, fx * 1.01, cy], [0.0, 0.0, 1.0]])
        for fx, skew, cx, cy in [(1266.0, 0.0, 816.0, 491.0), (633.0, 0.0, 400.0, 225.0), (900.0, 0.7, 320.5, 240.25)]
    ]
    per_camera = []
    for _ in cameras:
        n = int(rng.integers(0, 9))
        centers = np.column_stack([rng.normal(0, 8, n), rng.normal(0, 2, n), rng.uniform(-3, 40, n)])
        per_camera.append(box_corners(centers, rng.uniform(0.5, 5, (n, 3)), rng.uniform(-np.pi, np.pi, n)))
    stacked = np.concatenate([np.broadcast_to(k, (len(c), 3, 3)) for k, c in zip(cameras, per_camera, strict=True)])
    uv, keep = project_clipped_edges(np.concatenate(per_camera), stacked, 0.1)
    alone = [project_clipped_edges(c, k, 0.1) for c, k in zip(per_camera, cameras, strict=True)]
    assert np.array_equal(uv, np.concatenate([a[0] for a in alone]), equal_nan=True)
    assert np.array_equal(keep, np.concatenate([a[1] for a in alone])) and keep.any() and not keep.all()
