"""Where the privacy pass looks: ego body mask, face height, plate localisation, one plate per vehicle face, faces
only in people's regions, and the install hint that names the alternatives (issue 32)."""

from __future__ import annotations

import numpy as np
import pytest

from stridegen.pipeline.anonymize.image import AnonymizeOptions, anonymize_image_bytes, find_regions
from stridegen.pipeline.anonymize.plates import PlateSearch, localize_plate
from stridegen.pipeline.anonymize.scene import boxes_at, image_geometry
from stridegen.pipeline.anonymize.search import ImageGeometry, ego_body_mask, face_height_ok, search_rois

# Camera axes (x right, y down, z forward) in the ego frame (x forward, y left, z up).
R_BACK = np.array([[0.0, 0.0, -1.0], [1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
R_FRONT = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])


def _pose(R: np.ndarray, t: tuple[float, float, float]) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, t
    return T


def _K(f: float, width: int, height: int) -> np.ndarray:
    return np.array([[f, 0.0, width / 2], [0.0, f, height / 2], [0.0, 0.0, 1.0]])


def test_ego_body_mask_of_a_level_rear_camera_known_answer() -> None:
    """The nuScenes demo's CAM_BACK position, level: the rear body box (top 1.25 m, back end at x = -0.656 m) is
    met by rays at least atan(0.3291 / 0.6843) below the horizon: rows from 450 + 809 x 0.3291 / 0.6843 = 839.1
    in the centre column (the mask is cast on an 8 px grid and grown by one step: +-16 px)."""
    mask = ego_body_mask(_pose(R_BACK, (0.0283, 0.0, 1.5791)), _K(809.0, 1600, 900), (1600, 900))
    edge = 450 + 809.0 * (1.5791 - 1.25) / (0.0283 + 0.656)
    column = mask[:, 800]
    assert column[int(edge) + 16 :].all()
    assert not column[: int(edge) - 16].any()
    front = ego_body_mask(_pose(R_FRONT, (1.70, 0.0, 1.51)), _K(1266.0, 1600, 900), (1600, 900))
    assert not front.any()  # the bonnet is below CAM_FRONT's field of view


def _front_camera() -> tuple[np.ndarray, np.ndarray]:
    """A level camera 1.5 m above the global origin looking along +x, 800 x 450, f = 500 px."""
    return _pose(R_FRONT, (0.0, 0.0, 1.5)), _K(500.0, 800, 450)


def test_face_height_keeps_a_head_and_drops_a_sign_above_the_person() -> None:
    T, K = _front_camera()
    center, size = np.array([[10.0, 0.0, 0.875]]), np.array([[0.7, 0.7, 1.75]])
    _, rois, depth = search_rois(center, size, np.zeros(1), T, K, (800, 450))
    geometry = ImageGeometry(people_rois=rois, people_depth_m=depth, T_global_from_cam=T, intrinsic=K)
    geometry.people_z_range_m = np.array([[0.0, 1.75]])
    # the head at 1.6 m: 0.1 m below the camera at 10 m -> 5 px below the centre row 225
    assert face_height_ok(np.array([395.0, 226.0, 405.0, 234.0]), 0, geometry)
    # a "face" 3 m up at the same depth (a sign): 1.5 m above the camera -> 75 px above the centre row
    assert not face_height_ok(np.array([395.0, 145.0, 405.0, 155.0]), 0, geometry)


def _plate_image(paint: int, width: int = 200, height: int = 100) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    import cv2

    from stridegen.logs.synthetic.patches import plate_texture

    image = np.full((height, width, 3), paint, np.uint8)
    plate = cv2.resize(plate_texture(np.random.default_rng(1)), (52, 11), interpolation=cv2.INTER_AREA)
    image[50:61, 70:122] = plate
    return image, (70, 50, 122, 61)


@pytest.mark.parametrize("paint", [40, 120, 236])  # dark, mid and white paint (the plate is white)
def test_localize_plate_finds_the_plate_rectangle_in_its_band(paint: int) -> None:
    import cv2

    image, (x0, y0, x1, y1) = _plate_image(paint)
    grey = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    search = PlateSearch(0, 1, (40.0, 30.0, 160.0, 90.0), (50.0, 35.0, 150.0, 85.0), (52.0, 11.0))
    found = localize_plate(grey, search)
    assert found is not None
    (bx0, by0, bx1, by1), density = found
    assert bx0 <= x0 and by0 <= y0 and bx1 >= x1 and by1 >= y1  # the whole plate
    # and not much more: the pad (10% + 1 px each side) makes 1.7x; the band is 12.6x
    assert (bx1 - bx0) * (by1 - by0) <= 2.5 * (x1 - x0) * (y1 - y0)
    assert density > 0.1


def test_localize_plate_cannot_tell_on_flat_paint_or_a_tiny_plate() -> None:
    import cv2

    grey = np.full((100, 200), 120, np.uint8)
    search = PlateSearch(0, 1, (40.0, 30.0, 160.0, 90.0), (50.0, 35.0, 150.0, 85.0), (52.0, 11.0))
    assert localize_plate(grey, search) is None
    image, _ = _plate_image(120)
    tiny = PlateSearch(0, 1, (40.0, 30.0, 160.0, 90.0), (50.0, 35.0, 150.0, 85.0), (5.0, 1.0))
    assert localize_plate(cv2.cvtColor(image, cv2.COLOR_RGB2GRAY), tiny) is None


class _Boxes:
    """Box rows of one frame (``BoxRows``)."""

    def __init__(self, center, size, label) -> None:
        self.center_global = np.asarray(center, dtype=np.float64).reshape(-1, 3)
        self.size_lwh = np.asarray(size, dtype=np.float64).reshape(-1, 3)
        self.yaw_global = np.zeros(len(self.center_global))
        self.velocity_global = np.full((len(self.center_global), 3), np.nan)
        self.label = np.asarray(label, dtype=object)
        self.frame_index = np.zeros(len(self.center_global), dtype=np.int64)

    def __len__(self) -> int:
        return len(self.center_global)


def test_detection_and_ground_truth_of_one_object_count_once() -> None:
    car, ped = [4.5, 1.9, 1.5], [0.7, 0.7, 1.75]
    detections = _Boxes(
        [[10, 0, 0.75], [12, 3, 0.875], [12, 3.6, 0.875]], [car, ped, ped], ["car", *["pedestrian"] * 2]
    )
    truth = _Boxes([[10.3, 0.1, 0.75], [12, 3.1, 0.875], [10, 0, 0.75]], [car, ped, ped], ["car", *["pedestrian"] * 2])
    center, _, _, label = boxes_at([detections, truth], 0, 0.0)
    # the truth car 0.32 m off the detected car and the truth pedestrian 0.1 m off one are the same objects; the
    # two detected pedestrians 0.6 m apart stay two; a pedestrian inside the car's box is another label: kept
    assert label.tolist() == ["car", "pedestrian", "pedestrian", "pedestrian"]
    np.testing.assert_allclose(center[-1], [10, 0, 0.75])


def _car_image() -> tuple[bytes, np.ndarray, tuple[int, int, int, int]]:
    """A 800 x 450 PNG: grey road, a car's back face 10 m ahead of ``_front_camera`` (yaw pi: its back faces the
    camera) and its plate drawn 0.6 m above the ground, centred."""
    import cv2

    from stridegen.logs.synthetic.patches import plate_texture

    T = _front_camera()[0]
    image = np.full((450, 800, 3), 110, np.uint8)
    # back face at x = 7.75 m (car centre 10 m, length 4.5 m): 1.9 m wide, 0 .. 1.5 m high
    f, d = 500.0, 7.75
    u0, u1 = round(400 - f * 0.95 / d), round(400 + f * 0.95 / d)
    v0, v1 = round(225 + f * (1.5 - 1.5) / d), round(225 + f * 1.5 / d)
    image[v0:v1, u0:u1] = (150, 30, 30)
    pw, ph = round(f * 0.52 / d), round(f * 0.11 / d)
    px0, py0 = round(400 - pw / 2), round(225 + f * (1.5 - 0.6) / d - ph / 2)
    image[py0 : py0 + ph, px0 : px0 + pw] = cv2.resize(plate_texture(np.random.default_rng(2)), (pw, ph))
    ok, buf = cv2.imencode(".png", cv2.cvtColor(image, cv2.COLOR_RGB2BGR))
    assert ok
    return buf.tobytes(), T, (px0, py0, px0 + pw, py0 + ph)


def test_one_plate_record_per_vehicle_face_localised_on_the_plate() -> None:
    data, T, plate = _car_image()
    K = _front_camera()[1]
    center = np.array([[10.0, 0.0, 0.75], [10.0, 0.0, 0.75]])  # the same car twice (two box tables)
    size = np.array([[4.5, 1.9, 1.5], [4.5, 1.9, 1.5]])
    options = AnonymizeOptions(faces=False, plates=True, plate_detector="none")
    geometry = image_geometry(
        center, size, np.full(2, np.pi), np.array(["car", "car"]), T, K, (800, 450), options, None
    )
    assert len(geometry.plate_searches) == 2  # the back face of each box; the front faces away
    result = anonymize_image_bytes(data, np.zeros((0, 4)), None, options, "car", geometry)
    assert [(r.kind, r.source) for r in result.regions] == [("plate", "localized")]
    x0, y0, x1, y1 = result.regions[0].box_xyxy
    assert x0 <= plate[0] and y0 <= plate[1] and x1 >= plate[2] and y1 >= plate[3]
    band = geometry.plate_searches[0].band_xyxy
    band_area = (band[2] - band[0]) * (band[3] - band[1])
    assert (x1 - x0) * (y1 - y0) < 0.15 * band_area  # the plate, not the 1.12 m x 0.9 m band


class _FixedFaces:
    """A face detector that reports one face at a fixed place of the crop it is given (test double)."""

    name = "fixed"

    def __init__(self, box_in_crop: tuple[float, float, float, float]) -> None:
        self.box = np.array([box_in_crop], dtype=np.float64)

    def detect(self, image_rgb: np.ndarray):
        from stridegen.pipeline.anonymize.faces import FaceDetections

        return FaceDetections(self.box.copy(), np.array([0.9]))


def _person_geometry(ego_mask: np.ndarray | None) -> tuple[ImageGeometry, np.ndarray]:
    T, K = _front_camera()
    center, size = np.array([[6.0, 0.0, 0.875]]), np.array([[0.7, 0.7, 1.75]])
    options = AnonymizeOptions(faces=True, plates=False)
    yaw = np.array([np.pi])  # walking towards the camera
    geometry = image_geometry(center, size, yaw, np.array(["pedestrian"]), T, K, (800, 450), options, ego_mask)
    return geometry, geometry.people_rois[0]


def test_faces_only_in_people_regions_at_a_face_height_and_off_the_ego_body() -> None:
    image = np.full((450, 800, 3), 100, np.uint8)
    options = AnonymizeOptions(faces=True, plates=False)
    geometry, roi = _person_geometry(None)
    # a face at the person's head (1.6 m at 6 m: ~8 px below the centre row), in crop coordinates
    head = (400 - 6 - roi[0], 225 + 2 - roi[1], 400 + 6 - roi[0], 225 + 14 - roi[1])
    regions, rejected = find_regions(image, np.zeros((0, 4)), _FixedFaces(head), options, geometry)
    assert [(r.kind, r.source) for r in regions] == [("face", "fixed")] and rejected == 0
    # the same face on the ego body's pixels is dropped (and the person's head box too)
    ego = np.zeros((450, 800), dtype=bool)
    ego[200:260, 380:420] = True
    geometry, roi = _person_geometry(ego)
    regions, rejected = find_regions(image, np.zeros((0, 4)), _FixedFaces(head), options, geometry)
    assert rejected == 1 and regions == []  # on the ego body; its head box too


def test_no_face_found_gives_the_head_box_of_a_person_facing_the_camera() -> None:
    image = np.full((450, 800, 3), 100, np.uint8)
    options = AnonymizeOptions(faces=True, plates=False)
    geometry, _ = _person_geometry(None)
    far = (0.0, 0.0, 0.0, 0.0)  # an empty box: clipped away, so "nothing found"

    class _NoFaces(_FixedFaces):
        def detect(self, image_rgb: np.ndarray):
            from stridegen.pipeline.anonymize.faces import FaceDetections

            return FaceDetections.empty()

    regions, _ = find_regions(image, np.zeros((0, 4)), _NoFaces(far), options, geometry)
    assert [(r.kind, r.source) for r in regions] == [("face", "head_geometry")]
    x0, y0, x1, y1 = regions[0].box_xyxy
    # the top 0.30 m of the 1.75 m box, from its centre (6 m) to its front face (5.65 m): rows 225 + 500 x
    # (1.5 - 1.75) / d .. 225 + 500 x (1.5 - 1.45) / d for d in 5.65 .. 6
    assert y0 == pytest.approx(225 + 500 * (1.5 - 1.75) / 5.65, abs=0.01)
    assert y1 == pytest.approx(225 + 500 * (1.5 - 1.45) / 5.65, abs=0.01)
    assert 400 - 500 * 0.15 / 5.65 == pytest.approx(x0, abs=0.01) and x1 - x0 < 30


def test_missing_centerface_names_the_alternatives(monkeypatch) -> None:
    from stridegen.core.errors import ConfigError
    from stridegen.pipeline.anonymize import faces

    monkeypatch.setattr(faces.importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(ConfigError) as err:
        faces.check_face_detector("centerface")
    message = str(err.value)
    assert "stridegen[anonymize]" in message
    assert "anonymize.face_detector=haar" in message and "anonymize.faces=false" in message


def test_merge_regions_joins_overlapping_people_without_growing_the_search() -> None:
    from stridegen.pipeline.anonymize.image import merge_regions

    # two people side by side (their union, 30 x 40 px, is smaller than their areas summed: 2 x 20 x 40) -> one
    # crop; a third whose union with them would be mostly empty (a corner overlap) stays apart
    rois = np.array([[0, 0, 20, 40], [10, 0, 30, 40], [28, 38, 100, 120]], dtype=np.float64)
    merged = merge_regions(rois)
    np.testing.assert_array_equal(merged, [[0, 0, 30, 40], [28, 38, 100, 120]])
    assert merge_regions(np.zeros((0, 4))).shape == (0, 4)
