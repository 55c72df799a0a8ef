"""Known-answer and property tests of quaternions, rotation matrices and SE(3) transforms."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stridegen.core.errors import GeometryError
from stridegen.core.transforms import (
    check_unit_quaternion,
    invert_transform,
    make_transform,
    quat_multiply,
    quat_to_rotmat,
    quat_to_yaw,
    rotate_vectors,
    rotmat_to_quat,
    transform_points,
    yaw_to_quat,
)

finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
unit_quats = (
    st.tuples(*[st.floats(-1, 1, allow_nan=False)] * 4)
    .filter(lambda q: np.linalg.norm(q) > 0.1)
    .map(lambda q: np.array(q) / np.linalg.norm(q))
)


# ---------------------------------------------------------------------------------------------- quaternions


def test_quat_known_rotation():
    q = yaw_to_quat(np.pi / 2)  # 90 deg about z
    r = quat_to_rotmat(q)
    np.testing.assert_allclose(r @ [1, 0, 0], [0, 1, 0], atol=1e-12)
    np.testing.assert_allclose(q, [np.sqrt(0.5), 0, 0, np.sqrt(0.5)], atol=1e-12)
    assert quat_to_yaw(q) == pytest.approx(np.pi / 2)


def test_quat_matches_pyquaternion():
    pyq = pytest.importorskip("pyquaternion")
    rng = np.random.default_rng(0)
    for _ in range(20):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        np.testing.assert_allclose(quat_to_rotmat(q), pyq.Quaternion(q).rotation_matrix, atol=1e-12)
        yaw_ref = pyq.Quaternion(q).yaw_pitch_roll[0]
        v = pyq.Quaternion(q).rotation_matrix @ [1, 0, 0]
        # the devkit's quaternion_yaw: heading of the rotated x axis
        assert float(quat_to_yaw(q)) == pytest.approx(np.arctan2(v[1], v[0]), abs=1e-12)
        assert np.isfinite(yaw_ref)


@given(unit_quats)
def test_quat_rotmat_round_trip(q):
    q2 = rotmat_to_quat(quat_to_rotmat(q))
    assert np.allclose(q2, q, atol=1e-9) or np.allclose(q2, -q, atol=1e-9)
    assert q2[0] >= 0


@given(unit_quats, unit_quats)
def test_quat_multiply_composes_rotations(a, b):
    np.testing.assert_allclose(quat_to_rotmat(quat_multiply(a, b)), quat_to_rotmat(a) @ quat_to_rotmat(b), atol=1e-9)


@pytest.mark.parametrize("bad", [[1, 0, 0, np.nan], [2, 0, 0, 0], [0.9, 0, 0, 0], [1, 0, 0]])
def test_check_unit_quaternion_rejects(bad):
    with pytest.raises(GeometryError):
        check_unit_quaternion(np.array(bad, dtype=float))


# ---------------------------------------------------------------------------------------------- SE(3)


@given(
    unit_quats, st.tuples(finite, finite, finite), st.lists(st.tuples(finite, finite, finite), min_size=1, max_size=5)
)
def test_transform_inverse_round_trip(q, t, pts):
    T = make_transform(q, np.array(t))
    pts = np.array(pts)
    back = transform_points(invert_transform(T), transform_points(T, pts))
    np.testing.assert_allclose(back, pts, atol=1e-6)
    np.testing.assert_allclose(invert_transform(T) @ T, np.eye(4), atol=1e-9)


def test_transform_known():
    T = make_transform(yaw_to_quat(np.pi / 2), [10, 0, 0])
    np.testing.assert_allclose(transform_points(T, [1, 0, 0]), [10, 1, 0], atol=1e-12)
    np.testing.assert_allclose(rotate_vectors(T, [1, 0, 0]), [0, 1, 0], atol=1e-12)


@pytest.mark.parametrize("n", [1, 3, 4, 5])
def test_make_transform_batches_of_quaternions_of_any_length(n):
    """A batch of exactly four quaternions is four poses, not one 4x4 matrix (a 2 s scene has four frames)."""
    rng = np.random.default_rng(n)
    quats = rng.normal(size=(n, 4))
    quats /= np.linalg.norm(quats, axis=1, keepdims=True)
    trans = rng.normal(size=(n, 3))
    batch = make_transform(quats, trans)
    assert batch.shape == (n, 4, 4)
    for k in range(n):
        np.testing.assert_array_equal(batch[k], make_transform(quats[k], trans[k]))
