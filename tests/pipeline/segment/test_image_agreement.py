"""The visibility filter's image-evidence rule (docs/visibility.md#image-agreement): a mask shifted off its object
by unmodelled motion is dropped, a mask in place is kept.

Known answers on drawn rectangles (the outline in place scores 1, a shifted one ~0 and the best offset points
back at the object), then the case of the issue on the synthetic world: a car crossing at 10 m/s, its LiDAR
sweep not motion-compensated (``SweepTiming``: the points lag the camera-time car by ~1 m) and its box where the
LiDAR saw it (as a detector or annotator working on the sweep puts it). The LiDAR segmenter then shapes a mask
beside the car with high quality and box IoU; only the image rule drops it.
"""

from __future__ import annotations

import numpy as np
import pytest

from stridegen.calibration.rig import load_rig
from stridegen.core.boxes import Boxes
from stridegen.core.transforms import invert_transform, transform_points
from stridegen.logs.synthetic.generator import default_ground_shader
from stridegen.logs.synthetic.lidar import SweepTiming, azimuth_columns, cast_lidar
from stridegen.logs.synthetic.render import render_camera
from stridegen.pipeline.segment import make_segmenter
from stridegen.pipeline.segment.edge_alignment import EdgeAlignment
from stridegen.pipeline.segment.raster import MaskCrop
from stridegen.pipeline.segment.request import make_request
from stridegen.pipeline.visibility import VisibilityThresholds, measure_visibility


def _rectangle_image(h: int = 120, w: int = 200) -> np.ndarray:
    img = np.full((h, w, 3), 60, dtype=np.uint8)
    img[40:90, 70:130] = (200, 180, 40)  # the object: rows 40..89, columns 70..129
    return img


def _rect_mask(r0: int, r1: int, c0: int, c1: int) -> MaskCrop:
    return MaskCrop(r0, c0, np.ones((r1 - r0, c1 - c0), dtype=bool))


def test_an_outline_in_place_scores_one_and_a_shifted_one_points_back():
    img = _rectangle_image()
    ea = EdgeAlignment()
    score, offset = ea.score(img, _rect_mask(40, 90, 70, 130))
    assert score == pytest.approx(1.0) and np.allclose(offset, 0.0, atol=1.0)
    shifted, offset = ea.score(img, _rect_mask(40, 90, 90, 150))  # 20 px to the right
    assert shifted < 0.1
    assert offset[0] == pytest.approx(-20.0, abs=1.5) and abs(offset[1]) <= 1.5


def test_no_evidence_is_nan_and_passes():
    flat = np.full((120, 200, 3), 90, dtype=np.uint8)
    score, _ = EdgeAlignment().score(flat, _rect_mask(40, 90, 70, 130))
    assert np.isnan(score)
    assert np.isnan(EdgeAlignment().score(flat, MaskCrop.empty())[0])


def test_an_occluders_edge_is_not_the_objects():
    """The right part of the mask was cut by a nearer object: that outline is left out, the rest decides."""
    img = _rectangle_image()
    excluded = np.zeros(img.shape[:2], dtype=bool)
    excluded[:, 130:] = True
    score, _ = EdgeAlignment().score(img, _rect_mask(40, 90, 70, 130), excluded)
    assert score == pytest.approx(1.0)


def _crossing_car(lag_s: float):
    """(request, LiDAR-segmented result) of CAM_FRONT looking at a car crossing 14 m ahead at 10 m/s. The camera
    sees the car at time 0; the sweep fires over 0.05 s ending ``lag_s - 0.025`` s before, so the columns that
    see the car fire ~``lag_s`` s before the camera; the box is where the car was then (the LiDAR's view)."""
    rig = load_rig("nuscenes").with_camera_resolution(800, 450)
    cam = next(c for c in rig.cameras if c.channel == "CAM_FRONT")
    lidar = rig.lidars[0]
    T_cam = cam.T_ego_from_sensor
    center = np.array([[14.0, 0.5, 0.8]])
    size = np.array([[4.6, 1.9, 1.6]])
    yaw = np.array([np.pi / 2])
    velocity = np.array([[0.0, 10.0, 0.0]])
    image = render_camera(cam, T_cam, center, size, yaw, np.array([[40, 90, 160]], np.uint8), default_ground_shader())
    # the LiDAR's x axis: nuScenes mounts it turned, so find the columns looking at the car and time them
    timing = SweepTiming(period_s=0.05, end_s=0.0)
    T_lidar = lidar.T_ego_from_sensor
    pts = transform_points(invert_transform(T_lidar), center)[0]
    n_az = azimuth_columns(lidar)
    col = int(np.floor((np.degrees(np.arctan2(pts[1], pts[0])) % 360.0) / (360.0 / n_az)))
    t_col = timing.column_times(n_az)[col]
    timing = SweepTiming(period_s=0.05, end_s=-lag_s - t_col)  # the car's columns fire at about -lag_s
    sweep = cast_lidar(
        T_lidar, lidar, center, size, yaw, np.random.default_rng(0), velocity_global=velocity, timing=timing
    )
    points_global = transform_points(T_lidar, sweep.points_sensor[:, :3].astype(np.float64))
    box = Boxes(center - velocity * lag_s, size, yaw)  # where the LiDAR saw it
    request, keep = make_request(image.rgb, cam.intrinsic, invert_transform(T_cam), box, points_global)
    assert keep.tolist() == [0]
    return request, make_segmenter("lidar_watershed").segment(request)


def test_a_mask_displaced_by_1_m_of_unmodelled_motion_is_dropped():
    request, result = _crossing_car(0.1)  # 10 m/s x 0.1 s = 1 m
    vis = measure_visibility(request, result)
    # the three rules measured against the same points and box see nothing wrong ...
    assert vis.pass_box_iou[0] and vis.pass_coverage[0] and vis.pass_quality[0], vis
    # ... the image does
    assert vis.image_agreement[0] < 0.1 and not vis.pass_image[0] and not vis.visible[0]
    # off, the rule measures nothing and drops nothing
    off = measure_visibility(request, result, VisibilityThresholds(min_image_agreement=0.0))
    assert np.isnan(off.image_agreement[0]) and off.visible[0]


def test_the_same_car_with_a_compensated_sweep_is_kept():
    request, result = _crossing_car(0.0)
    vis = measure_visibility(request, result)
    assert vis.visible[0] and vis.image_agreement[0] > 0.9


def test_box_shaped_masks_are_not_judged_by_the_image_rule():
    """``projected_box`` masks are box hulls, not outlines: the segment stage measures them without the rule."""
    assert make_segmenter("projected_box").box_shaped_masks
    assert not getattr(make_segmenter("lidar_watershed"), "box_shaped_masks", False)
    request, result = _crossing_car(0.1)
    vis = measure_visibility(request, result, image_rule=False)
    assert np.isnan(vis.image_agreement[0]) and vis.pass_image[0]
