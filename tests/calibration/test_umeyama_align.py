"""Umeyama alignment: a trajectory moved by a known SE(3) / Sim(3) (plus noise) is recovered; property test."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from stridegen.calibration.umeyama import umeyama
from stridegen.core.errors import GeometryError


def _trajectory(rng: np.random.Generator, n: int = 200) -> np.ndarray:
    t = np.linspace(0.0, 20.0, n)
    return np.stack([8.0 * t, 30.0 * np.sin(t / 6.0), 0.5 * np.sin(t)], axis=1) + rng.normal(0, 0.01, (n, 3))


@pytest.mark.parametrize("with_scale", [False, True])
def test_known_similarity_with_noise_is_recovered(with_scale):
    rng = np.random.default_rng(3)
    src = _trajectory(rng)
    R = Rotation.from_euler("zyx", [37.0, 2.0, -1.5], degrees=True).as_matrix()
    t = np.array([412.0, -1180.0, 3.0])
    s = 1.07 if with_scale else 1.0
    dst = s * src @ R.T + t + rng.normal(0.0, 0.05, src.shape)  # 5 cm noise (RTK vs odometry)
    sim = umeyama(src, dst, with_scale)
    assert np.degrees(Rotation.from_matrix(sim.rotation.T @ R).magnitude()) < 0.05
    assert np.linalg.norm(sim.translation - t) < 0.5
    assert abs(sim.scale - s) < 1e-3
    assert 0.05 < sim.rmse_m < 0.1  # the residuals are the noise: sqrt(3) * 5 cm
    assert sim.residuals_m.shape == (len(src),)


@settings(max_examples=60, deadline=None)
@given(
    rotvec=st.tuples(*[st.floats(-3.0, 3.0)] * 3),
    t=st.tuples(*[st.floats(-1e3, 1e3)] * 3),
    scale=st.floats(0.2, 5.0),
    seed=st.integers(0, 2**16),
)
def test_exact_similarity_is_recovered_property(rotvec, t, scale, seed):
    """Property: without noise, any Sim(3) of a non-degenerate set is recovered exactly (to float rounding)."""
    src = np.random.default_rng(seed).normal(0.0, 10.0, (12, 3))
    R = Rotation.from_rotvec(rotvec).as_matrix()
    dst = scale * src @ R.T + np.asarray(t)
    sim = umeyama(src, dst, with_scale=True)
    np.testing.assert_allclose(sim.rotation, R, atol=1e-8)
    np.testing.assert_allclose(sim.scale, scale, rtol=1e-8)
    np.testing.assert_allclose(sim.apply(src), dst, atol=1e-6 * max(1.0, np.abs(dst).max()))
    rigid = umeyama(src, src @ R.T + np.asarray(t))
    assert rigid.scale == 1.0 and np.abs(np.linalg.det(rigid.rotation) - 1.0) < 1e-9


def test_reflection_is_never_returned_and_degenerate_sets_are_refused():
    rng = np.random.default_rng(0)
    src = rng.normal(size=(10, 3))
    mirrored = src * np.array([1.0, 1.0, -1.0])  # best orthogonal fit would be a reflection
    assert np.linalg.det(umeyama(src, mirrored).rotation) > 0
    line = np.outer(np.arange(10.0), [1.0, 0.0, 0.0])  # a straight drive: rotation about it undetermined
    with pytest.raises(GeometryError, match="collinear"):
        umeyama(line, line)
    with pytest.raises(GeometryError, match="at least 3"):
        umeyama(src[:2], src[:2])
