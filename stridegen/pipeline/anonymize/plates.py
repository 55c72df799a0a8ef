"""Licence-plate regions: from the 3D boxes of vehicles (geometry) and from the pixels (OpenCV's Haar cascade).

Geometry. A plate is mounted on the front and the back face of a vehicle, centred or nearly so, within a band of
heights above the ground. Sizes and heights used (metres):

- EU plate 520 x 110 mm (Council Regulation (EC) No 2411/98, annex: the plate format used in most EU states);
- rear plate mounting height: lower edge at least 0.30 m, upper edge at most 1.20 m above the ground (Commission
  Regulation (EU) No 1003/2010, annex I, rear registration plate space); the front plate is mounted in the
  same band in practice.

The region searched on each visible end face is a thin box on the face plane: ``PLATE_BAND_Z_M`` above the box's
bottom (capped at the box height) and ``PLATE_HALF_WIDTH_M + PLATE_LATERAL_MARGIN_M`` either side of the face's
centre line (capped at the box width), so plates set off-centre by up to the margin, and boxes a little off, are
still covered. The face is visible when the camera lies on its outward side; the band is projected with its edges
clipped at the near plane (``projection.project_boxes_2d``), so a vehicle beside the camera still gets its region.

Classes with plates: the nuScenes detection classes ``PLATE_CLASSES`` (stridegen.core.vocabulary), both ends;
motorcycles carry a plate at the back only.
"""

from __future__ import annotations

import numpy as np

from stridegen.core.box_geometry import box_corners
from stridegen.core.projection import project_boxes_2d
from stridegen.core.transforms import invert_transform, transform_points
from stridegen.core.vocabulary import DETECTION_CLASSES

PLATE_SIZE_M = (0.52, 0.11)  # width, height: EU plate, Regulation (EC) No 2411/98
PLATE_BAND_Z_M = (0.30, 1.20)  # lower edge, upper edge above the ground: Regulation (EU) No 1003/2010
PLATE_HALF_WIDTH_M = PLATE_SIZE_M[0] / 2
PLATE_LATERAL_MARGIN_M = 0.30  # off-centre plates and box error
PLATE_SLAB_M = 0.02  # thickness of the projected band (it lies on the face plane)
# Detection class -> which end faces carry a plate (+1 front, -1 back).
PLATE_CLASSES: dict[str, tuple[int, ...]] = {
    "car": (1, -1),
    "truck": (1, -1),
    "bus": (1, -1),
    "trailer": (-1,),
    "construction_vehicle": (1, -1),
    "motorcycle": (-1,),
}
assert set(PLATE_CLASSES) <= set(DETECTION_CLASSES)
HAAR_PLATE_CASCADE = "haarcascade_russian_plate_number.xml"  # plates of the 520 x 112 mm format


def plate_bands_global(
    center_global: np.ndarray, size_lwh: np.ndarray, yaw_global: np.ndarray, label: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The plate bands of every plate-carrying box: (center [P, 3], size_lwh [P, 3], yaw [P], end side [P] +-1)
    in the boxes' frame (global), one row per (box, end face). ``center`` z is the box centre (box bottom =
    z - h / 2, the ground for an annotated box)."""
    centers, sizes, yaws, sides = [], [], [], []
    center_global = np.asarray(center_global, dtype=np.float64).reshape(-1, 3)
    size_lwh = np.asarray(size_lwh, dtype=np.float64).reshape(-1, 3)
    yaw_global = np.asarray(yaw_global, dtype=np.float64).reshape(-1)
    for i, name in enumerate(np.asarray(label, dtype=object).reshape(-1).tolist()):
        ends = PLATE_CLASSES.get(str(name), ())
        length, width, height = size_lwh[i]
        if not ends or not np.isfinite(size_lwh[i]).all() or height <= PLATE_BAND_Z_M[0]:
            continue
        z0, z1 = PLATE_BAND_Z_M[0], min(PLATE_BAND_Z_M[1], height)
        half_w = min(width / 2, PLATE_HALF_WIDTH_M + PLATE_LATERAL_MARGIN_M)
        heading = np.array([np.cos(yaw_global[i]), np.sin(yaw_global[i]), 0.0])
        bottom = center_global[i, 2] - height / 2
        for side in ends:
            c = center_global[i] + side * (length / 2) * heading
            c[2] = bottom + (z0 + z1) / 2
            centers.append(c)
            sizes.append([PLATE_SLAB_M, 2 * half_w, z1 - z0])
            yaws.append(yaw_global[i])
            sides.append(side)
    if not centers:
        return np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros(0, dtype=np.int64)
    return np.array(centers), np.array(sizes), np.array(yaws), np.array(sides, dtype=np.int64)


def plate_regions_2d(
    center_global: np.ndarray,
    size_lwh: np.ndarray,
    yaw_global: np.ndarray,
    label: np.ndarray,
    T_global_from_cam: np.ndarray,
    intrinsic: np.ndarray,
    image_wh: tuple[int, int],
    near_m: float = 0.1,
) -> np.ndarray:
    """Pixel boxes [P, 4] (x0, y0, x1, y1) of the plate bands of the boxes (global frame) that the camera sees,
    clipped to the image; bands on faces turned away from the camera or outside the image are left out."""
    c, s, yaw, side = plate_bands_global(center_global, size_lwh, yaw_global, label)
    if len(c) == 0:
        return np.zeros((0, 4))
    cam_origin = np.asarray(T_global_from_cam, dtype=np.float64)[:3, 3]
    heading = np.stack([np.cos(yaw), np.sin(yaw)], axis=1)
    facing = side * np.einsum("ij,ij->i", cam_origin[None, :2] - c[:, :2], heading) > 0  # camera outside the face
    T_cam_from_global = invert_transform(np.asarray(T_global_from_cam, dtype=np.float64))
    corners_cam = transform_points(T_cam_from_global, box_corners(c, s, yaw))
    boxes, valid = project_boxes_2d(corners_cam, intrinsic, image_wh, near=near_m)
    keep = valid & facing & (boxes[:, 2] > boxes[:, 0]) & (boxes[:, 3] > boxes[:, 1])
    return boxes[keep]


def haar_plates(image_rgb: np.ndarray, min_size: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """(boxes [N, 4] xyxy, level weights [N]) of OpenCV's plate cascade (``HAAR_PLATE_CASCADE``) on the image."""
    from stridegen.pipeline.anonymize.faces import haar_detect

    return haar_detect(image_rgb, HAAR_PLATE_CASCADE, min_size)
