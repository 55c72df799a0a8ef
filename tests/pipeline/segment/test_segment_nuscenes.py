"""Offline backends on the real nuScenes demo keyframe (CAM_FRONT): masks land on the annotated objects.

No pixel truth exists for this image, so the checks use the LiDAR: an object's own returns (points inside its 3D box
that no nearer object's hull hides) must mostly fall inside its mask, and masks must stay (mostly) inside the
projected hull. Objects with >= 10 such returns are checked (4 of the 47: a truck with 413, a car with 15, barriers
with 14 and 11; only the truck has >= 20). Measured: projected_box and lidar hold all their returns; grabcut holds
0.46 of the truck's (GrabCut on real, hazy 1600 x 900 crops is the weak baseline; 0.59 when the boxes were drawn
yaw-only, before they kept the annotations' 2.2 degree tilt: GrabCut's result on this crop swings with a few
pixels of hull) and 0.93-1.0 of the others'.
Every mask of >= 50 pixels lies inside its hull (grabcut: >= 0.96 of it).
Overlay pictures for a person to look at: test-output/nuscenes_demo_masks_<backend>.png (git-ignored).
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from stridegen.pipeline.segment import make_segmenter
from stridegen.pipeline.segment.lidar import point_pixels
from stridegen.pipeline.segment.request import camera_view, frame_lidar, frame_requests, hull_masks, nearest_first
from tests.shared_data import NUSCENES_DEMO as DEMO
from tests.shared_data import needs_nuscenes_demo

REPO = Path(__file__).resolve().parents[3]
OUT = REPO / "test-output"
MIN_POINTS = 10
POINTS_INSIDE_MIN = {
    "projected_box": 0.95,
    "lidar": 0.9,
    "lidar_watershed": 0.9,
    "grabcut": 0.4,
}  # share of visible own points
INSIDE_HULL_MIN = {
    "projected_box": 1.0,
    "lidar": 1.0,
    "lidar_watershed": 1.0,
    "grabcut": 0.85,
}  # |mask ∩ hull| / |mask|

pytestmark = needs_nuscenes_demo


@pytest.fixture(scope="module")
def front_request():
    from stridegen.logs import open_log

    frame = open_log(DEMO).scenes()[0].frames[0]
    annotations = frame.annotations()
    [(request, keep)] = frame_requests([camera_view(frame, "CAM_FRONT")], annotations.boxes, frame_lidar(frame))
    return request, keep, annotations


def overlay(image_rgb: np.ndarray, masks: np.ndarray, hulls: list[np.ndarray], alpha: float = 0.45) -> np.ndarray:
    """Coloured masks with white outlines over the image, projected hulls as thin yellow lines (RGB)."""
    out = image_rgb.astype(np.float32)
    palette = np.random.default_rng(7).integers(40, 256, (max(len(masks), 1), 3)).astype(np.float32)
    for mask, colour in zip(masks, palette, strict=False):
        out[mask] = (1 - alpha) * out[mask] + alpha * colour
    out = out.astype(np.uint8)
    for mask, hull in zip(masks, hulls, strict=True):
        cv2.polylines(out, [np.round(hull).astype(np.int32)], True, (255, 220, 0), 1, cv2.LINE_AA)
        contours, _ = cv2.findContours(mask.astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
        cv2.drawContours(out, contours, -1, (255, 255, 255), 2)
    return out


def _visible_own_points(request) -> list[np.ndarray]:
    """Per object, the indices of its own LiDAR points not inside a nearer object's hull."""
    hulls = hull_masks(request.hull_uv, request.height, request.width)
    rows, cols = point_pixels(request.lidar_uv, request.height, request.width)
    nearer = np.zeros((request.height, request.width), dtype=bool)
    out: list[np.ndarray] = [np.zeros(0, np.int64)] * len(request)
    for i in nearest_first(request.depth_m).tolist():
        out[i] = np.flatnonzero((request.lidar_object == i) & ~nearer[rows, cols])
        nearer |= hulls[i]
    return out


@pytest.mark.parametrize("name", ["projected_box", "grabcut", "lidar", "lidar_watershed"])
def test_masks_land_on_the_objects(name: str, front_request) -> None:
    request, keep, annotations = front_request
    assert len(request) >= 20
    result = make_segmenter(name).segment(request)
    masks = result.masks
    assert masks.shape == (len(request), 900, 1600)
    assert not (masks.sum(axis=0) > 1).any()

    hulls = hull_masks(request.hull_uv, request.height, request.width)
    for i in range(len(request)):
        area = int(masks[i].sum())
        if area >= 50:
            inside = np.count_nonzero(masks[i] & hulls[i]) / area
            assert inside >= INSIDE_HULL_MIN[name] - 1e-12, f"{name}: object {i} mask {inside:.2f} inside its hull"

    rows, cols = point_pixels(request.lidar_uv, request.height, request.width)
    checked = 0
    for i, idx in enumerate(_visible_own_points(request)):
        if idx.size < MIN_POINTS:
            continue
        share = float(masks[i][rows[idx], cols[idx]].mean())
        label = annotations.boxes.label[keep[i]]
        assert share >= POINTS_INSIDE_MIN[name], f"{name}: {label} ({idx.size} points) only {share:.2f} inside"
        checked += 1
    assert checked >= 3

    OUT.mkdir(exist_ok=True)
    path = OUT / f"nuscenes_demo_masks_{name}.png"
    cv2.imwrite(str(path), overlay(request.image_rgb, masks, request.hull_uv)[..., ::-1])
    assert cv2.imread(str(path)).shape == (900, 1600, 3)
