"""Visibility filter: known answers for each measurement and rule (stridegen/pipeline/visibility.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stridegen.core.polygons import clip_polygon_to_rect, polygon_area
from stridegen.pipeline.segment.base import SegmentRequest, SegmentResult
from stridegen.pipeline.visibility import (
    VisibilityThresholds,
    inside_share,
    mask_boxes,
    measure_visibility,
    unoccluded_share,
)


def _rect(x0, y0, x1, y1):
    return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], dtype=np.float64)


def test_mask_boxes_pixel_edges_and_empty():
    masks = np.zeros((2, 10, 20), dtype=bool)
    masks[0, 2:5, 3:9] = True  # rows 2..4, cols 3..8
    box, area = mask_boxes(masks)
    np.testing.assert_array_equal(box[0], [2.5, 1.5, 8.5, 4.5])
    assert area.tolist() == [18, 0]
    assert np.isnan(box[1]).all()


def test_polygon_area_and_clipping():
    square = _rect(0, 0, 4, 4)
    assert polygon_area(square) == 16.0
    assert polygon_area(square[::-1]) == 16.0
    clipped = clip_polygon_to_rect(square, 2, -1, 10, 3)
    assert polygon_area(clipped) == pytest.approx(2 * 3)
    assert clip_polygon_to_rect(square, 5, 5, 6, 6).shape == (0, 2)
    tri = np.array([[0, 0], [4, 0], [0, 4]], dtype=np.float64)
    assert polygon_area(clip_polygon_to_rect(tri, 0, 0, 2, 10)) == pytest.approx(8 - 2)  # x <= 2 part: 8 - 2*2/2


def test_inside_share_half_out_of_the_image():
    # image 10 x 10 spans [-0.5, 9.5]; a square from x=5.5 to 13.5 is half inside
    assert inside_share(_rect(5.5, 2, 13.5, 6), 10, 10) == pytest.approx(0.5)
    assert inside_share(_rect(1, 1, 3, 3), 10, 10) == 1.0
    assert inside_share(_rect(20, 20, 30, 30), 10, 10) == 0.0


@settings(max_examples=60, deadline=None)
@given(st.floats(-20, 20), st.floats(-20, 20), st.floats(0.5, 30), st.floats(0.5, 30), st.floats(0, np.pi))
def test_inside_share_matches_shapely(cx, cy, w, h, angle):
    shapely = pytest.importorskip("shapely.geometry", reason="shapely is the reference for polygon clipping")
    c, s = np.cos(angle), np.sin(angle)
    corners = np.array([[-w, -h], [w, -h], [w, h], [-w, h]]) / 2 @ np.array([[c, s], [-s, c]]) + [cx, cy]
    poly = shapely.Polygon(corners)
    image = shapely.box(-0.5, -0.5, 15.5, 9.5)
    assert inside_share(corners, 16, 10) == pytest.approx(poly.intersection(image).area / poly.area, abs=1e-9)


def test_unoccluded_share_uses_depth_order():
    hulls = np.zeros((3, 10, 10), dtype=bool)
    hulls[0, 0:10, 0:4] = True  # far object, 40 px, half of it (20 px) behind object 1
    hulls[1, 0:10, 2:6] = True  # nearest
    hulls[2, 0:5, 8:10] = True  # alone
    share = unoccluded_share(hulls, np.array([20.0, 5.0, 30.0]))
    np.testing.assert_allclose(share, [0.5, 1.0, 1.0])


def _request(boxes, hulls, depth, h=40, w=60):
    return SegmentRequest(
        np.zeros((h, w, 3), dtype=np.uint8),
        np.asarray(boxes, dtype=np.float64),
        hulls,
        np.asarray(depth, dtype=np.float64),
    )


def test_measure_visibility_rules():
    pytest.importorskip("cv2")
    h, w = 40, 60
    # object 0: fully inside, mask equals its box; object 1: behind object 0 for the most part;
    # object 2: good coverage but a low-quality mask; object 3: empty mask
    hulls = [
        _rect(9.5, 9.5, 29.5, 29.5),
        _rect(14.5, 9.5, 34.5, 29.5),
        _rect(39.5, 4.5, 54.5, 19.5),
        _rect(44.5, 24.5, 54.5, 34.5),
    ]
    boxes = [h_.min(0).tolist() + h_.max(0).tolist() for h_ in hulls]
    masks = np.zeros((4, h, w), dtype=bool)
    masks[0, 10:30, 10:30] = True
    masks[1, 10:30, 30:35] = True
    masks[2, 5:20, 40:55] = True
    quality = np.array([0.95, 0.9, 0.5, 0.99])
    vis = measure_visibility(
        _request(boxes, hulls, [5.0, 10.0, 8.0, 8.0]), SegmentResult(masks, quality), VisibilityThresholds()
    )
    np.testing.assert_allclose(vis.box_iou[0], 1.0)
    assert vis.box_iou[3] == 0.0 and vis.area_px[3] == 0
    assert vis.coverage[0] == pytest.approx(1.0)
    assert vis.coverage[1] == pytest.approx(0.25, abs=0.02)  # 15 of its 20 columns are behind object 0
    assert vis.visible.tolist() == [True, False, False, False]
    assert vis.pass_coverage.tolist() == [True, False, True, True]
    assert vis.pass_quality.tolist() == [True, True, False, True]
    assert vis.pass_box_iou.tolist() == [True, False, True, False]
