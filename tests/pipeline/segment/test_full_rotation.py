"""Boxes keep their full rotation (issue 32, deliverable 4): on a log whose ego poses carry pitch, with boxes
pitched alike, the projected boxes and the masks are those of the level log.

The pitched log is the synthetic log turned rigidly about the global y axis (``PosedReader`` with poses
``P @ T``): the cameras see exactly the same images, the LiDAR the same points (in its own frame), and every box is
pitched by P. The analytic truth of the projection is therefore the level log's: a camera-frame corner is
``(P T_cam)^-1 (P c) = T_cam^-1 c``. Yaw-only boxes (the rotation dropped) stand level in the pitched world and
project tilted against the image.
"""

from __future__ import annotations

import numpy as np
import pytest

from stridegen.core.boxes import ROTATION_GLOBAL, Boxes, rotation_extra
from stridegen.core.transforms import make_transform, quat_to_rotmat, transform_points, yaw_to_quat
from stridegen.pipeline.segment import make_segmenter
from stridegen.pipeline.segment.request import camera_view, frame_lidar, frame_requests
from stridegen.pipeline.visibility import measure_visibility

PITCH_DEG = 4.0


def _vertices(hull: np.ndarray) -> np.ndarray:
    """A hull's vertices in a canonical order (the hull routine may start at another vertex)."""
    h = np.round(np.asarray(hull, dtype=np.float64), 6)
    return h[np.lexsort((h[:, 1], h[:, 0]))]


def _pitch(deg: float = PITCH_DEG) -> np.ndarray:
    a = np.radians(deg)
    return make_transform(
        np.array([[np.cos(a), 0.0, np.sin(a)], [0.0, 1.0, 0.0], [-np.sin(a), 0.0, np.cos(a)]]), np.zeros(3)
    )


@pytest.fixture(scope="module")
def logs(one_scene_log):
    from stridegen.logs import open_log
    from stridegen.logs.posed import PosedReader

    level = open_log(one_scene_log)
    poses = {}
    for scene in level.scenes():
        times = np.array([f.timestamp_us * 1e-6 for f in scene.frames])
        poses[scene.token] = (times, np.stack([_pitch() @ f.T_global_from_ego for f in scene.frames]))
    return level, PosedReader(level, poses)


def _frame_pair(logs, k: int = 6):
    level, pitched = logs
    return level.scenes()[0].frames[k], pitched.scenes()[0].frames[k]


def test_pitched_annotations_carry_the_pitch(logs):
    flat, tilted = _frame_pair(logs)
    boxes = tilted.annotations().boxes
    assert boxes.full_rotation is not None
    z_axis = boxes.rotation_matrices()[:, :, 2]
    np.testing.assert_allclose(z_axis, np.broadcast_to(_pitch()[:3, 2], z_axis.shape), atol=1e-9)
    # the yaw is the heading of the pitched x axis; corners are P times the level corners
    np.testing.assert_allclose(
        boxes.corners(),
        transform_points(_pitch(), flat.annotations().boxes.corners().reshape(-1, 3)).reshape(-1, 8, 3),
        atol=1e-9,
    )


def test_projected_box_corners_match_the_analytic_truth(logs):
    flat, tilted = _frame_pair(logs)
    channels = flat.camera_channels
    level = list(frame_requests([camera_view(flat, c) for c in channels], flat.annotations().boxes))
    full = list(frame_requests([camera_view(tilted, c) for c in channels], tilted.annotations().boxes))
    yaw_only_boxes = tilted.annotations().boxes.replace(extras={})
    yaw_only = list(frame_requests([camera_view(tilted, c) for c in channels], yaw_only_boxes))
    worst_yaw_only = 0.0
    compared = 0
    for (a, keep_a), (b, keep_b), (c, keep_c) in zip(level, full, yaw_only, strict=True):
        assert keep_a.tolist() == keep_b.tolist()
        for ha, hb in zip(a.hull_uv, b.hull_uv, strict=True):
            np.testing.assert_allclose(_vertices(hb), _vertices(ha), atol=1e-5)
            compared += 1
        common = np.intersect1d(keep_a, keep_c)
        for i in common.tolist():
            ha = a.hull_uv[keep_a.tolist().index(i)]
            hc = c.hull_uv[keep_c.tolist().index(i)]
            if len(ha) == len(hc):
                worst_yaw_only = max(worst_yaw_only, float(np.abs(_vertices(ha) - _vertices(hc)).max()))
            else:
                worst_yaw_only = max(worst_yaw_only, np.inf)
    assert compared >= 5
    assert worst_yaw_only > 2.0  # pixels: the level boxes of the pitched world project visibly wrong


def test_quality_and_visibility_match_the_level_log(logs):
    flat, tilted = _frame_pair(logs)
    segmenter = make_segmenter("lidar_watershed")
    channels = flat.camera_channels

    def measured(frame, boxes):
        out = []
        views = [camera_view(frame, c) for c in channels]
        for request, _ in frame_requests(views, boxes, frame_lidar(frame)):
            if len(request):
                vis = measure_visibility(request, segmenter.segment(request))
                out.append((vis.quality, vis.visible, vis.area_px))
        return out

    level = measured(flat, flat.annotations().boxes)
    full = measured(tilted, tilted.annotations().boxes)
    assert sum(len(q) for q, _, _ in level) >= 5
    for (qa, va, aa), (qb, vb, ab) in zip(level, full, strict=True):
        np.testing.assert_allclose(qb, qa, atol=1e-9)
        np.testing.assert_array_equal(vb, va)
        np.testing.assert_array_equal(ab, aa)
    # without the rotation (the boxes before the fix) the masks are not the level log's
    yaw_only = measured(tilted, tilted.annotations().boxes.replace(extras={}))
    changed = sum(
        int(np.count_nonzero((np.abs(qc - qa) > 1e-6) | (ac != aa)))
        for (qa, _, aa), (qc, _, ac) in zip(level, yaw_only, strict=False)
        if len(qa) == len(qc)
    )
    assert changed > 0


def test_transform_carries_the_rotation_and_level_boxes_stay_yaw_only():
    boxes = Boxes([[10.0, 2.0, 1.0]], [[4.0, 2.0, 1.5]], [0.7])
    up = make_transform(np.eye(3), np.array([1.0, 2.0, 3.0]))
    moved = boxes.transform(up, "ego")
    assert moved.full_rotation is None and rotation_extra("ego") not in moved.extras
    tilted = boxes.transform(_pitch(), "global")
    q = tilted.extras[ROTATION_GLOBAL]
    np.testing.assert_allclose(
        quat_to_rotmat(q)[0], _pitch()[:3, :3] @ quat_to_rotmat(yaw_to_quat(np.array([0.7])))[0], atol=1e-12
    )
    # and back: the level box again, its rotation a rotation about z
    back = tilted.transform(np.linalg.inv(_pitch()), "global")
    np.testing.assert_allclose(back.corners(), boxes.corners(), atol=1e-9)
    assert back.full_rotation is None and back.yaw[0] == pytest.approx(0.7)


def test_the_tracker_keeps_the_rotation():
    from stridegen.pipeline.track import track_scene

    q = np.array([[0.999, 0.0, 0.0447, 0.0]])  # pitched by about 5 degrees about y
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    det = Boxes([[5.0, 0.0, 1.0]], [[4.0, 2.0, 1.5]], [0.0], label=["car"], extras={ROTATION_GLOBAL: q})
    tracked = track_scene([det, det], [0.0, 0.5])
    for t in tracked:
        np.testing.assert_allclose(t.extras[ROTATION_GLOBAL], q)
        np.testing.assert_allclose(t.corners(), det.corners())


def test_the_simulated_detector_keeps_pitch_and_roll_and_turns_the_heading():
    from stridegen.pipeline.detect.simulated import load_profiles, perturb

    profile = next(iter(load_profiles().values()))
    n = 40
    rng = np.random.default_rng(3)
    level = Boxes(
        np.c_[rng.uniform(5, 30, n), rng.uniform(-10, 10, n), np.full(n, 0.8)],
        np.tile([4.5, 1.9, 1.6], (n, 1)),
        rng.uniform(-np.pi, np.pi, n),
        np.zeros((n, 3)),
        label=["car"] * n,
    )
    gt = level.transform(_pitch(), "global")  # pitched boxes, rotation_global set
    out = perturb(gt, np.full(n, 10.0), np.full(n, 200), np.full(n, 4), profile, np.eye(4), rng)
    fp = Boxes([[8.0, 0.0, 0.8]], [[4.5, 1.9, 1.6]], [0.3], label=["car"])  # a level box (a false positive)
    detected = Boxes.concat([out, fp])  # the level part gets its yaw's rotation, the tilted ones keep theirs
    assert len(out) > 0 and detected.full_rotation is not None
    r = detected.rotation_matrices()
    tilted = 2.0 * (detected.full_rotation[:, 1] ** 2 + detected.full_rotation[:, 2] ** 2) > 1e-9
    # pitch and roll as the ground truth's (the z axis stays P's), the heading the detection's yaw
    np.testing.assert_allclose(r[tilted][:, :, 2], np.broadcast_to(_pitch()[:3, 2], (int(tilted.sum()), 3)), atol=1e-9)
    np.testing.assert_allclose(np.arctan2(r[tilted][:, 1, 0], r[tilted][:, 0, 0]), detected.yaw[tilted], atol=1e-9)
