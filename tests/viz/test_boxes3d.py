"""Wireframe drawing and the image-visibility test of stridegen.viz.boxes3d."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stridegen.core.box_geometry import box_corners
from stridegen.logs.box_rotation import box_corners_quat
from stridegen.viz.boxes3d import CLASS_COLORS, DEFAULT_COLOR, boxes_in_image, color_for_label, draw_boxes3d

K = np.array([[100.0, 0.0, 50.0], [0.0, 100.0, 50.0], [0.0, 0.0, 1.0]])


def _cube_cam(center_cam: list[float], size: float = 2.0) -> np.ndarray:
    """Corners [1, 8, 3] of an axis-aligned cube in camera coordinates (x right, y down, z forward)."""
    return box_corners(np.array([center_cam]), np.full((1, 3), size), np.zeros(1))


def test_color_table() -> None:
    assert color_for_label("car") == CLASS_COLORS["car"]
    assert color_for_label("") == DEFAULT_COLOR
    assert color_for_label("REGULAR_VEHICLE") == color_for_label("REGULAR_VEHICLE")  # stable
    assert len(set(CLASS_COLORS.values())) == len(CLASS_COLORS)


def test_cube_edges_land_on_known_pixels() -> None:
    image = np.zeros((100, 100, 3), dtype=np.uint8)
    corners = _cube_cam([0.0, 0.0, 10.0])
    drawn = draw_boxes3d(image, corners, K, ["pedestrian"], thickness=1, mark_front=False, antialias=False)
    color = np.array(CLASS_COLORS["pedestrian"])
    # Near face (z = 9) spans 50 +- 100/9 = [38.9, 61.1]; far face (z = 11) spans 50 +- 100/11 = [40.9, 59.1].
    near_left, far_left = round(50 - 100 / 9), round(50 - 100 / 11)
    assert np.array_equal(drawn[50, near_left], color)
    assert np.array_equal(drawn[50, far_left], color)
    assert np.array_equal(drawn[50, 50], [0, 0, 0])  # inside the box: nothing drawn
    assert np.array_equal(drawn[5, 5], [0, 0, 0])
    assert np.array_equal(image, np.zeros_like(image))  # input untouched


def test_box_behind_and_across_the_camera() -> None:
    image = np.zeros((100, 100, 3), dtype=np.uint8)
    behind = draw_boxes3d(image, _cube_cam([0.0, 0.0, -10.0]), K, ["car"])
    assert not behind.any()
    # The camera sits inside this box (x in [-0.5, 3.5], z in [0, 4]): edges are cut at the near plane. The
    # far left edge (x = -0.5, z = 4) is at u = 50 - 100 * 0.5 / 4 = 37.5 and runs over the whole image height.
    across = draw_boxes3d(image, _cube_cam([1.5, 0.0, 2.0], size=4.0), K, ["car"], thickness=1, antialias=False)
    assert np.array_equal(across[50, 37], CLASS_COLORS["car"]) or np.array_equal(across[50, 38], CLASS_COLORS["car"])
    assert np.array_equal(across[50, 45], [0, 0, 0])


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_boxes_in_image_matches_devkit(seed: int) -> None:
    geometry_utils = pytest.importorskip("nuscenes.utils.geometry_utils")
    data_classes = pytest.importorskip("nuscenes.utils.data_classes")
    pyquaternion = pytest.importorskip("pyquaternion")
    rng = np.random.default_rng(seed)
    n = 12
    center = np.stack([rng.uniform(-30, 30, n), rng.uniform(-5, 5, n), rng.uniform(-5, 40, n)], axis=1)
    size = rng.uniform(0.3, 6.0, size=(n, 3))
    quat = rng.normal(size=(n, 4))
    quat /= np.linalg.norm(quat, axis=1, keepdims=True)
    corners = box_corners_quat(center, size, quat)
    for level, dk_level in (("any", geometry_utils.BoxVisibility.ANY), ("all", geometry_utils.BoxVisibility.ALL)):
        ours = boxes_in_image(corners, K, (100, 100), level)
        for i in range(n):
            box = data_classes.Box(center[i], size[i, [1, 0, 2]], pyquaternion.Quaternion(quat[i]))
            assert np.allclose(box.corners().T, corners[i], atol=1e-9)
            assert ours[i] == geometry_utils.box_in_image(box, K, (100, 100), vis_level=dk_level)
