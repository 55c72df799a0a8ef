"""Boxes: frame changes of position, yaw and velocity; indexing and concatenation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stridegen.core.boxes import Boxes
from stridegen.core.errors import GeometryError
from stridegen.core.transforms import invert_transform, make_transform, transform_points, yaw_to_quat


def _boxes(n=3, seed=0):
    rng = np.random.default_rng(seed)
    return Boxes(
        rng.normal(size=(n, 3)) * 20,
        rng.uniform(0.5, 5, (n, 3)),
        rng.uniform(-np.pi, np.pi, n),
        rng.normal(size=(n, 2)),
        label=["car"] * n,
        track_id=[f"t{i}" for i in range(n)],
        frame="global",
    )


def test_transform_known():
    b = Boxes([[10, 0, 1]], [[4, 2, 1.5]], [0.0], [[5, 0, 0]], frame="global")
    # ego at (10, 0) facing +y (yaw 90 deg): the box is at the ego origin, pointing to the ego's right
    T_global_from_ego = make_transform(yaw_to_quat(np.pi / 2), [10, 0, 0])
    e = b.transform(invert_transform(T_global_from_ego), "ego")
    np.testing.assert_allclose(e.center, [[0, 0, 1]], atol=1e-12)
    assert e.yaw[0] == pytest.approx(-np.pi / 2)
    np.testing.assert_allclose(e.velocity, [[0, -5, 0]], atol=1e-12)
    assert e.frame == "ego"


@given(st.integers(0, 1000), st.floats(-np.pi, np.pi), st.tuples(*[st.floats(-100, 100)] * 3))
@settings(max_examples=40)
def test_transform_round_trip(seed, yaw, t):
    b = _boxes(4, seed)
    T = make_transform(yaw_to_quat(yaw), np.array(t))
    back = b.transform(T, "ego").transform(invert_transform(T), "global")
    np.testing.assert_allclose(back.center, b.center, atol=1e-9)
    np.testing.assert_allclose(np.cos(back.yaw - b.yaw), 1.0, atol=1e-9)
    np.testing.assert_allclose(back.velocity, b.velocity, atol=1e-9)
    # corners transform like points
    np.testing.assert_allclose(b.transform(T, "ego").corners(), transform_points(T, b.corners()), atol=1e-9)


def test_index_concat_and_validation():
    b = _boxes(5)
    sub = b[np.array([0, 2])]
    assert len(sub) == 2 and sub.track_id.tolist() == ["t0", "t2"]
    assert len(Boxes.concat([b, sub])) == 7
    assert len(b[1]) == 1
    assert b.velocity.shape == (5, 3)  # (vx, vy) padded with vz = 0
    with pytest.raises(GeometryError):
        Boxes.concat([b, b.replace(frame="ego")])
    with pytest.raises(GeometryError):
        Boxes([[0, 0, 0]], [[1, 1, 1]], [0], frame="world")
    assert len(Boxes.empty("ego")) == 0
