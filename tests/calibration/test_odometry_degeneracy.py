"""Degeneracy handling of the LiDAR odometry (known answers): a flat ground constrains z, roll and pitch only, so
x, y and yaw come from the prediction; points inside moving objects' boxes are dropped."""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from stridegen.calibration.icp import point_to_plane_information
from stridegen.calibration.odometry import points_outside_boxes, remap_degenerate
from stridegen.core.geometry import make_transform


def _ground_information(n: int = 2000) -> np.ndarray:
    rng = np.random.default_rng(0)
    xyz = np.concatenate([rng.uniform(-30, 30, (n, 2)), np.zeros((n, 1))], axis=1)
    normals = np.repeat(np.array([[0.0, 0.0, 1.0]]), n, axis=0)
    return point_to_plane_information(xyz, normals, np.eye(3))


def test_flat_ground_is_weak_in_x_y_yaw_and_those_follow_the_prediction():
    info = _ground_information()
    T_pred = make_transform(Rotation.from_rotvec([0, 0, 0.1]).as_matrix(), [5.0, 1.0, 0.0])
    wrong = make_transform(Rotation.from_rotvec([0.01, -0.02, 0.4]).as_matrix(), [3.0, -2.0, 0.05])
    T_icp = T_pred @ wrong
    out = remap_degenerate(T_pred, T_icp, info, min_eigenvalue=20.0, lever_m=10.0)
    assert sorted(out.weak) == ["x", "y", "yaw"]
    delta = np.linalg.inv(T_pred) @ out.T_world_from_ego
    np.testing.assert_allclose(delta[:2, 3], 0.0, atol=1e-9)  # x, y: the prediction
    assert abs(Rotation.from_matrix(delta[:3, :3]).as_rotvec()[2]) < 1e-9  # yaw: the prediction
    # z, roll and pitch: the registration's (to first order)
    np.testing.assert_allclose(delta[2, 3], 0.05, atol=2e-3)
    np.testing.assert_allclose(Rotation.from_matrix(delta[:3, :3]).as_rotvec()[:2], [0.01, -0.02], atol=2e-3)
    # Mutation check: without the degeneracy test the registration is taken whole.
    whole = remap_degenerate(T_pred, T_icp, info, min_eigenvalue=0.0, lever_m=10.0)
    assert whole.weak == () and np.allclose(whole.T_world_from_ego, T_icp)


def test_walls_constrain_every_direction():
    rng = np.random.default_rng(1)
    ground = _ground_information()
    walls = []
    for axis, offset in ((0, 15.0), (1, 12.0), (1, -12.0)):
        p = rng.uniform(-20, 20, (500, 3))
        p[:, axis] = offset
        n = np.zeros((500, 3))
        n[:, axis] = 1.0
        walls.append(point_to_plane_information(p, n, np.eye(3)))
    out = remap_degenerate(np.eye(4), np.eye(4), ground + sum(walls), 20.0, 10.0)
    assert out.weak == () and out.eigenvalues.min() > 20.0


def test_points_inside_grown_boxes_are_dropped():
    points = np.array([[0.0, 0.0, 0.5], [1.2, 0.0, 0.5], [1.6, 0.0, 0.5], [10.0, 0.0, 0.5]])
    keep = points_outside_boxes(points, np.array([[0.0, 0.0, 0.5]]), np.array([[2.0, 1.0, 1.0]]), np.zeros(1), 0.3)
    np.testing.assert_array_equal(keep, [False, False, True, True])  # 1.2 m is within 1.0 + 0.3 of the centre
