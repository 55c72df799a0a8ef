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

Localisation (``plate_searches``, ``localize_plate``). The band is where a plate may be, not where it is: blurring
it all takes about a quarter of every vehicle's mask. Inside the band's pixels the plate is found by its image
evidence: a plate is a high-contrast rectangle (a dark border or a light plate on the paint, dark characters) of
known size, the projection of ``PLATE_SIZE_M`` at the face's depth (``PlateSearch.plate_wh_px``). Canny edges,
closed by a kernel of about a character's size so the characters and the border merge into one blob, give
candidate blobs; a blob is a plate when its width is 0.5-1.7x the expected width (US plates are 0.305 m wide), its
height 0.5-3.2x the expected height (US 0.152 m, Japanese 0.165 m), its aspect 1.3-9, its edge density at least
``MIN_EDGE_DENSITY``; the best by edge density and width match wins, and its box, grown by ``PLATE_PAD_REL`` of
its size plus ``PLATE_PAD_PX``, is blurred (a plate under ``MIN_PRECISE_PX`` wide: at least the blob's centre
+- the expected width and +- 1.5 expected heights, since a blob of a few pixels may be a part of the plate).
Where the pixels cannot tell (the plate is under ``MIN_LOCALISE_PX``
wide, or no blob passes), the smaller fallback band is blurred: ``FALLBACK_Z_M`` above the box bottom and
``FALLBACK_HALF_WIDTH_M`` either side of the centre line (plates are mounted 0.3-1.1 m high on cars in practice,
centred or at most ~0.15 m off).
"""

from __future__ import annotations

from dataclasses import dataclass

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
FALLBACK_Z_M = (0.30, 1.10)  # the band blurred where the pixels cannot tell (module docstring)
FALLBACK_HALF_WIDTH_M = PLATE_HALF_WIDTH_M + 0.15
MIN_LOCALISE_PX = 6.0  # expected plate width below which no localisation is tried
MIN_PRECISE_PX = 14.0  # below, a blob may be part of the plate: the box is its centre +- the expected width
MIN_EDGE_DENSITY = 0.12  # share of a candidate's pixels on a Canny edge
PLATE_PAD_REL = 0.10  # a localised plate's box grows by this share of its size, each side
PLATE_PAD_PX = 1.0
CANNY_THRESHOLDS = (40, 120)  # grey levels; a plate's border and characters contrast by 100+ levels


def plate_bands_global(
    center_global: np.ndarray,
    size_lwh: np.ndarray,
    yaw_global: np.ndarray,
    label: np.ndarray,
    band_z_m: tuple[float, float] = PLATE_BAND_Z_M,
    half_width_m: float = PLATE_HALF_WIDTH_M + PLATE_LATERAL_MARGIN_M,
    with_rows: bool = False,
) -> tuple[np.ndarray, ...]:
    """The plate bands of every plate-carrying box: (center [P, 3], size_lwh [P, 3], yaw [P], end side [P] +-1)
    in the boxes' frame (global), one row per (box, end face), and with ``with_rows`` the box row of each. The band
    spans ``band_z_m`` above the box bottom (capped at the box height) and ``half_width_m`` either side (capped at
    half the box width). ``center`` z is the box centre (box bottom = z - h / 2, the ground for an annotated box)."""
    center_global = np.asarray(center_global, dtype=np.float64).reshape(-1, 3)
    size_lwh = np.asarray(size_lwh, dtype=np.float64).reshape(-1, 3)
    yaw_global = np.asarray(yaw_global, dtype=np.float64).reshape(-1)
    names = np.asarray(label, dtype=object).reshape(-1).astype(str)
    ok = np.isfinite(size_lwh).all(axis=1) & (size_lwh[:, 2] > band_z_m[0])
    # (row, side) pairs in the order of each class's ends (front first), box by box
    pairs = [(i, side) for i in np.flatnonzero(ok).tolist() for side in PLATE_CLASSES.get(names[i], ())]
    if not pairs:
        empty = (np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros(0, dtype=np.int64))
        return (*empty, np.zeros(0, dtype=np.int64)) if with_rows else empty
    rows = np.array([p[0] for p in pairs], dtype=np.int64)
    sides = np.array([p[1] for p in pairs], dtype=np.int64)
    length, width, height = size_lwh[rows, 0], size_lwh[rows, 1], size_lwh[rows, 2]
    z0, z1 = band_z_m[0], np.minimum(band_z_m[1], height)
    half_w = np.minimum(width / 2, half_width_m)
    yaws = yaw_global[rows]
    centers = center_global[rows].copy()
    centers[:, 0] += sides * (length / 2) * np.cos(yaws)
    centers[:, 1] += sides * (length / 2) * np.sin(yaws)
    centers[:, 2] = centers[:, 2] - height / 2 + (z0 + z1) / 2
    sizes = np.stack([np.full(len(rows), PLATE_SLAB_M), 2 * half_w, z1 - z0], axis=1)
    out = (centers, sizes, yaws, sides)
    return (*out, rows) if with_rows else out


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
    c, s, yaw, side = plate_bands_global(center_global, size_lwh, yaw_global, label)[:4]
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


@dataclass(frozen=True)
class PlateSearch:
    """One visible plate-carrying end face in one image: the row of its box, the side (+1 front, -1 back), the
    search band and the fallback band (pixel boxes xyxy, clipped to the image) and the expected plate size in
    pixels (width, height: ``PLATE_SIZE_M`` on the face at the fallback band's centre)."""

    box_row: int
    side: int
    band_xyxy: tuple[float, float, float, float]
    fallback_xyxy: tuple[float, float, float, float]
    plate_wh_px: tuple[float, float]


def _project_slabs(
    c: np.ndarray, s: np.ndarray, yaw: np.ndarray, T_cam_from_global: np.ndarray, intrinsic: np.ndarray,
    image_wh: tuple[int, int] | None, near_m: float,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    corners_cam = transform_points(T_cam_from_global, box_corners(c, s, yaw))
    return project_boxes_2d(corners_cam, intrinsic, image_wh, near=near_m)


def plate_searches(
    center_global: np.ndarray,
    size_lwh: np.ndarray,
    yaw_global: np.ndarray,
    label: np.ndarray,
    T_global_from_cam: np.ndarray,
    intrinsic: np.ndarray,
    image_wh: tuple[int, int],
    near_m: float = 0.1,
) -> list[PlateSearch]:
    """The plate searches of the boxes (global frame) on end faces turned to the camera and inside the image."""
    c, s, yaw, side, rows = plate_bands_global(center_global, size_lwh, yaw_global, label, with_rows=True)
    if len(c) == 0:
        return []
    fc, fs, _, _ = plate_bands_global(center_global, size_lwh, yaw_global, label, FALLBACK_Z_M, FALLBACK_HALF_WIDTH_M)[
        :4
    ]
    T_global_from_cam = np.asarray(T_global_from_cam, dtype=np.float64)
    cam_origin = T_global_from_cam[:3, 3]
    heading = np.stack([np.cos(yaw), np.sin(yaw)], axis=1)
    facing = side * np.einsum("ij,ij->i", cam_origin[None, :2] - c[:, :2], heading) > 0  # camera outside the face
    T_cam_from_global = invert_transform(T_global_from_cam)
    plate_size = np.tile([PLATE_SLAB_M, PLATE_SIZE_M[0], PLATE_SIZE_M[1]], (len(fc), 1))
    n = len(c)
    slabs, ok = _project_slabs(  # band, fallback band, nominal plate: one projection
        np.concatenate([c, fc, fc]), np.concatenate([s, fs, plate_size]), np.tile(yaw, 3),
        T_cam_from_global, intrinsic, None, near_m,
    )  # fmt: skip
    width, height = image_wh
    inside = ok & (slabs[:, 2] > 0) & (slabs[:, 0] < width) & (slabs[:, 3] > 0) & (slabs[:, 1] < height)
    clipped = np.clip(slabs, 0, [width, height, width, height])
    band, ok_band = clipped[:n], inside[:n]
    fallback, ok_fallback = clipped[n : 2 * n], inside[n : 2 * n]
    nominal, ok_nominal = slabs[2 * n :], ok[2 * n :]
    out = []
    for k in np.flatnonzero(facing & ok_band & ok_fallback).tolist():
        b, f = band[k], fallback[k]
        if not (b[2] > b[0] and b[3] > b[1] and f[2] > f[0] and f[3] > f[1]):
            continue
        wh = (nominal[k, 2] - nominal[k, 0], nominal[k, 3] - nominal[k, 1]) if ok_nominal[k] else (0.0, 0.0)
        out.append(
            PlateSearch(int(rows[k]), int(side[k]), tuple(b.tolist()), tuple(f.tolist()), (float(wh[0]), float(wh[1])))
        )
    return out


def localize_plate(grey: np.ndarray, search: PlateSearch) -> tuple[tuple[float, float, float, float], float] | None:
    """(box xyxy grown by the pad, edge density) of the plate inside ``search``'s band in the grey image
    [H, W] uint8, or None where the pixels cannot tell (module docstring)."""
    import cv2

    ew, eh = search.plate_wh_px
    if not ew >= MIN_LOCALISE_PX or not eh > 0:
        return None
    h, w = grey.shape
    x0, y0, x1, y1 = search.band_xyxy
    pad = max(2.0, 0.5 * eh)  # a plate across the band's edge (box error) is still seen whole
    c0, r0 = max(0, int(np.floor(x0 - pad))), max(0, int(np.floor(y0 - pad)))
    c1, r1 = min(w, int(np.ceil(x1 + pad))), min(h, int(np.ceil(y1 + pad)))
    if c1 - c0 < 4 or r1 - r0 < 3:
        return None
    crop = grey[r0:r1, c0:c1]
    edges = cv2.Canny(crop, *CANNY_THRESHOLDS)
    kx, ky = max(3, round(0.12 * ew)) | 1, max(3, round(0.4 * eh)) | 1
    closed = cv2.morphologyEx(edges, cv2.MORPH_CLOSE, np.ones((ky, kx), np.uint8))
    contours, _ = cv2.findContours(closed, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    best: tuple[float, tuple[int, int, int, int], float] | None = None
    on_edge = edges > 0
    for contour in contours:
        x, y, bw, bh = cv2.boundingRect(contour)
        if not (0.5 * ew - 2 <= bw <= 1.7 * ew + 2 and 0.5 * eh - 2 <= bh <= 3.2 * eh + 2):
            continue
        if not 1.3 <= bw / max(bh, 1) <= 9.0:
            continue
        density = float(on_edge[y : y + bh, x : x + bw].mean())
        if density < MIN_EDGE_DENSITY:
            continue
        score = density * min(bw / ew, ew / bw)
        if best is None or score > best[0]:
            best = (score, (x, y, bw, bh), density)
    if best is None:
        return None
    x, y, bw, bh = best[1]
    gx, gy = PLATE_PAD_REL * bw + PLATE_PAD_PX, PLATE_PAD_REL * bh + PLATE_PAD_PX
    bx0, by0, bx1, by1 = c0 + x - gx, r0 + y - gy, c0 + x + bw + gx, r0 + y + bh + gy
    if ew < MIN_PRECISE_PX:  # a small plate's blob can be a part of it: cover the plate wherever it is around it
        cx, cy = c0 + x + bw / 2, r0 + y + bh / 2
        bx0, bx1 = min(bx0, cx - ew), max(bx1, cx + ew)
        by0, by1 = min(by0, cy - 1.5 * eh - PLATE_PAD_PX), max(by1, cy + 1.5 * eh + PLATE_PAD_PX)
    return (max(0.0, bx0), max(0.0, by0), min(float(w), bx1), min(float(h), by1)), best[2]
