"""Degeneracy handling of the LiDAR odometry (known answers): a flat ground constrains z, roll and pitch only, so
x, y and yaw come from the prediction; points inside moving objects' boxes are dropped."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from stridegen.calibration.icp import point_to_plane_information
from stridegen.calibration.odometry import points_outside_boxes, remap_degenerate, weak_axis_names, weak_directions
from stridegen.core.transforms import make_transform


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


def test_rounding_noise_below_zero_is_not_weak_when_the_threshold_is_zero():
    """An exactly rank-deficient information whose zero eigenvalue comes out of ``eigh`` as -1e-15 (the sign of
    rounding noise differs between LAPACK builds; a diagonal matrix pins it, as eigh returns its diagonal): with
    ``min_eigenvalue=0`` nothing is weak. The bare ``values < min_eigenvalue`` rule fails here."""
    diagonal = np.array([4e3, 4e3, -1e-15, 2e3, 2e3, 9e3])  # yaw: "zero" with negative noise
    raw = np.linalg.eigh(np.diag(diagonal))[0]
    assert raw.min() < 0  # the input really carries the negative noise
    T_icp = make_transform(Rotation.from_rotvec([0, 0, 0.3]).as_matrix(), [1.0, 2.0, 0.0])
    out = remap_degenerate(np.eye(4), T_icp, np.diag(diagonal), min_eigenvalue=0.0, lever_m=10.0)
    assert out.weak == () and np.array_equal(out.T_world_from_ego, T_icp)
    assert out.eigenvalues.min() == 0.0  # the noise is reported as the zero it stands for
    # The same input with a real threshold: yaw (and only yaw) follows the prediction.
    out = remap_degenerate(np.eye(4), T_icp, np.diag(diagonal), min_eigenvalue=20.0, lever_m=10.0)
    assert out.weak == ("yaw",)


@pytest.mark.parametrize("noise", [-1e-12, -1e-15, 0.0, 1e-15, 1e-12])
def test_weak_directions_are_independent_of_the_noise_sign(noise):
    values, weak = weak_directions(np.array([noise, 25.0, 1e4]), 0.0)
    assert values[0] == 0.0 and not weak.any()
    values, weak = weak_directions(np.array([noise, 25.0, 1e4]), 20.0)
    assert weak.tolist() == [True, False, False]


def test_a_real_small_eigenvalue_is_kept():
    values, weak = weak_directions(np.array([1e-3, 25.0, 1e4]), 0.01)
    assert values[0] == 1e-3 and weak.tolist() == [True, False, False]


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_a_negative_or_non_finite_threshold_is_an_error(bad):
    with pytest.raises(ValueError, match="min_eigenvalue"):
        weak_directions(np.array([0.0, 1.0]), bad)


def test_weak_axis_names_do_not_depend_on_the_basis_of_a_repeated_eigenvalue():
    """A rotation inside the 3-D null space (x, y, yaw) changes each eigenvector's largest entry, not the names."""
    rng = np.random.default_rng(3)
    basis = np.zeros((6, 3))
    basis[[2, 3, 4], [0, 1, 2]] = 1.0  # yaw, x, y
    for _ in range(20):
        q, _r = np.linalg.qr(rng.normal(size=(3, 3)))
        assert weak_axis_names(basis @ q) == ("yaw", "x", "y")
