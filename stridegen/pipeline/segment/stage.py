"""The segment stage of a scene: masks of every tracked object in the images QA will show, plus the visibility
filter's measurements, and the marked regions of each keyframe image.

Which images: every camera's image at each keyframe and at its spatiotemporal context frames (by default t = -1.5,
-1.0, -0.5 s: the temporal QA config's ``context_offsets_s``, which the build passes in), so that the QA generator
can mark a target in all four frames it shows. Which objects: the tracker's boxes of that frame (global frame)
whose projection meets the image.

Regions: in each keyframe image the objects passing all three visibility rules whose mask is at least the minimum
region size (``visibility.min_region_area_frac`` of the image area) are numbered 0..n-1 from left to right (mask box
left edge, then track index), and questions about that image call them ``Region [i]``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from stridegen.core.boxes import Boxes
from stridegen.core.transforms import invert_transform
from stridegen.formats.images import decode_image, image_size
from stridegen.formats.rle import encode_rle_crops
from stridegen.logs.base import Frame
from stridegen.pipeline.segment.base import LazyImage, Segmenter, SegmentRequest, SegmentResult
from stridegen.pipeline.segment.request import CameraView, frame_lidar, frame_requests
from stridegen.pipeline.tables import CameraRows, ImageRows
from stridegen.pipeline.visibility import VisibilityThresholds, measure_visibility


def context_frames(window: np.ndarray, window_offsets_s: np.ndarray, offsets_s: Sequence[float]) -> np.ndarray:
    """[K, len(offsets_s)] frame indices of each keyframe's context frames (-1 where the window has none)."""
    window = np.asarray(window, dtype=np.int64).reshape(-1, np.size(window_offsets_s))
    offs = np.asarray(window_offsets_s, dtype=np.float64)
    out = np.full((window.shape[0], len(offsets_s)), -1, dtype=np.int64)
    for j, want in enumerate(offsets_s):
        hit = np.flatnonzero(np.isclose(offs, want, atol=1e-6))
        if hit.size:
            out[:, j] = window[:, hit[0]]
    return out


@dataclass
class MaskRows:
    """Columns of the masks table (see stridegen.shards.schema.MasksTable), gathered image by image."""

    image_index: list[np.ndarray]
    track_index: list[np.ndarray]
    rle_counts: list[str]
    area_px: list[np.ndarray]
    mask_box_xyxy: list[np.ndarray]
    projected_box_xyxy: list[np.ndarray]
    depth_m: list[np.ndarray]
    quality: list[np.ndarray]
    box_iou: list[np.ndarray]
    coverage: list[np.ndarray]
    pass_box_iou: list[np.ndarray]
    pass_coverage: list[np.ndarray]
    pass_quality: list[np.ndarray]
    image_agreement: list[np.ndarray]
    pass_image: list[np.ndarray]

    @classmethod
    def empty(cls) -> MaskRows:
        return cls(*([] for _ in range(15)))

    def concat(self) -> SceneMasks:
        """The gathered rows as one array per column."""

        def cat(parts: list[np.ndarray], dtype: type, width: int = 0) -> np.ndarray:
            if not parts:
                return np.zeros((0, width) if width else 0, dtype=dtype)
            return np.concatenate(parts).astype(dtype)

        passes = [cat(p, bool) for p in (self.pass_box_iou, self.pass_coverage, self.pass_quality, self.pass_image)]
        rle = np.empty(len(self.rle_counts), dtype=object)
        rle[:] = list(self.rle_counts)
        return SceneMasks(
            image_index=cat(self.image_index, np.int32),
            track_index=cat(self.track_index, np.int32),
            rle_counts=rle,
            area_px=cat(self.area_px, np.int64),
            mask_box_xyxy=cat(self.mask_box_xyxy, np.float64, 4),
            projected_box_xyxy=cat(self.projected_box_xyxy, np.float64, 4),
            depth_m=cat(self.depth_m, np.float64),
            quality=cat(self.quality, np.float64),
            box_iou=cat(self.box_iou, np.float64),
            coverage=cat(self.coverage, np.float64),
            pass_box_iou=passes[0],
            pass_coverage=passes[1],
            pass_quality=passes[2],
            visible=passes[0] & passes[1] & passes[2] & passes[3],
            image_agreement=cat(self.image_agreement, np.float64),
            pass_image=passes[3],
        )


@dataclass
class SceneMasks:
    """Masks of one scene, one entry per (image row, track) (columns of stridegen.shards.schema.MasksTable)."""

    image_index: np.ndarray  # [M] int32 into the scene's image rows
    track_index: np.ndarray  # [M] int32 into the scene's tracks
    rle_counts: np.ndarray  # [M] object array of str, COCO compressed RLE counts
    area_px: np.ndarray  # [M] int64
    mask_box_xyxy: np.ndarray  # [M, 4] float64, NaN for an empty mask
    projected_box_xyxy: np.ndarray  # [M, 4] float64
    depth_m: np.ndarray  # [M] float64, camera-frame z of the box centre
    quality: np.ndarray  # [M] float64
    box_iou: np.ndarray  # [M] float64
    coverage: np.ndarray  # [M] float64
    pass_box_iou: np.ndarray  # [M] bool
    pass_coverage: np.ndarray  # [M] bool
    pass_quality: np.ndarray  # [M] bool
    visible: np.ndarray  # [M] bool, all four rules pass (docs/visibility.md)
    # The image-evidence rule (docs/visibility.md#image-agreement). Not stored in the shards (their masks table
    # keeps the paper's three flags and ``visible``); the build's in-memory record has them.
    image_agreement: np.ndarray | None = None  # [M] float64, NaN where the image cannot tell (None: not measured)
    pass_image: np.ndarray | None = None  # [M] bool (None: not measured)


@dataclass
class SceneRegions:
    """The marked objects of each keyframe image (columns of stridegen.shards.schema.RegionsTable)."""

    keyframe_index: np.ndarray  # [R] int32
    channel_index: np.ndarray  # [R] int32
    region_id: np.ndarray  # [R] int32, 0..n-1 within one (keyframe, channel)
    track_index: np.ndarray  # [R] int32
    mask_index: np.ndarray  # [R] int32


@dataclass(frozen=True, eq=False)
class SegmentScene:
    """What the segment stage reads of one scene."""

    name: str  # the scene's name (in decoding errors)
    images: ImageRows  # the stored camera images
    cameras: CameraRows
    rows: Sequence[int]  # the image rows to segment, in table order (grouped by frame)
    tracked: Sequence[Boxes]  # per frame, the tracker's boxes (global frame, ``track_id`` set)
    track_ids: np.ndarray  # [T] the scene's tracks table ids (sorted, as ``dense_tracks`` makes them)
    frames: Sequence[Frame]  # the log's frames: their LiDAR sweeps, for a segmenter that ``needs_lidar``
    # gains the rows whose stored JPEG bytes a decode has read whole with libjpeg's warnings as errors
    # (``decode_image``): those need no separate integrity check (docs/scale.md#decoded-scale); None: not recorded
    decoded: set[int] | None = None


def segment_images(
    scene: SegmentScene,
    segmenter: Segmenter,
    thresholds: VisibilityThresholds,
    timings: dict[str, float] | None = None,
) -> SceneMasks:
    """Segment the objects of ``scene.rows`` of the images table; returns their masks.

    Frame by frame, the requests of the frame's images are made by ``request.frame_requests`` on the stored image
    files: each image is decoded at most once, and only when the segmenter reads its pixels (where its header gives
    the size), so an image without objects, or one whose objects the backend shapes from geometry alone, is never
    decoded. Likewise a frame's LiDAR sweep (``request.frame_lidar``, for a segmenter with ``needs_lidar``) is read
    only when one of its images holds an object. ``timings`` gains the seconds of ``segment`` (requests and
    segmenter) and ``visibility`` (the filter's measurements).
    """
    timings = timings if timings is not None else {}
    timings.setdefault("segment", 0.0)
    timings.setdefault("visibility", 0.0)
    rows = MaskRows.empty()
    track_ids = np.asarray(scene.track_ids, dtype=object)
    needs_lidar = bool(getattr(segmenter, "needs_lidar", False))
    image_rule = not bool(getattr(segmenter, "box_shaped_masks", False))  # docs/visibility.md#image-agreement
    min_side = int(getattr(segmenter, "image_min_side", 0) or 0)  # docs/scale.md#decoded-scale
    for f, frame_rows in _by_frame(scene.rows, scene.images):
        boxes = scene.tracked[f]
        if len(boxes) == 0:
            continue
        t0 = time.perf_counter()
        views = [_stored_view(scene, row, min_side) for row in frame_rows]
        lidar = frame_lidar(scene.frames[f]) if needs_lidar else None
        for row, (request, keep) in zip(frame_rows, frame_requests(views, boxes, lidar), strict=True):
            if len(request) == 0:
                continue
            result = segmenter.segment(request)
            t1 = time.perf_counter()
            timings["segment"] += t1 - t0
            _add_rows(rows, row, request, result, keep, boxes, track_ids, thresholds, image_rule)
            t0 = time.perf_counter()
            timings["visibility"] += t0 - t1
        timings["segment"] += time.perf_counter() - t0
    return rows.concat()


def _stored_view(scene: SegmentScene, row: int, min_side: int = 0) -> CameraView:
    """Image ``row`` of the scene's images table as a request's camera view (pose: the image's ego pose and the
    camera's extrinsics); ``min_side`` as in ``_stored_image``."""
    images, cameras = scene.images, scene.cameras
    c = int(images.channel_index[row])
    T_global_from_cam = np.asarray(images.T_global_from_ego[row]) @ np.asarray(cameras.T_ego_from_sensor[c])
    where = f"{scene.name}:{cameras.channel[c]}/frame {images.frame_index[row]}"
    image = _stored_image(images.data[row], where, min_side)
    if scene.decoded is not None and isinstance(image, LazyImage) and images.data[row][:2].tobytes() == b"\xff\xd8":
        image = _recording(image, row, scene.decoded)
    return CameraView(image, cameras.intrinsic[c], invert_transform(T_global_from_cam))


def _stored_image(data: np.ndarray, where: str, min_side: int = 0) -> np.ndarray | LazyImage:
    """A stored image file's bytes (uint8) as a request's image: a ``LazyImage`` where the header gives the size
    (``image_size``: the pixels are decoded when a backend first reads them), else decoded now. ``where`` names the
    image in a decoding error. ``min_side`` > 0 (the segmenter's ``image_min_side``) offers a reduced decode
    (``LazyImage.load_reduced``) at ``decode_factor``; the stored bytes are never changed."""
    size = image_size(data[:65536].tobytes())
    if size is None:
        return decode_image(data.tobytes(), where)
    factor = decode_factor(size[0], size[1], min_side)
    reduced = (lambda: decode_image(data.tobytes(), where, factor)) if factor > 1 else None
    return LazyImage(size[0], size[1], lambda: decode_image(data.tobytes(), where), reduced)


def _recording(image: LazyImage, row: int, decoded: set[int]) -> LazyImage:
    """``image`` whose loads add ``row`` to ``decoded`` once they return: a JPEG that ``decode_image`` returns (at
    any scale) was entropy-decoded whole without a libjpeg warning and ends with its end-of-image marker, which is
    what ``check_image_bytes`` checks (libjpeg's DCT scaling reads every compressed byte at any scale)."""

    def record(load: Callable[[], np.ndarray]) -> Callable[[], np.ndarray]:
        def recorded() -> np.ndarray:
            pixels = load()
            decoded.add(row)
            return pixels

        return recorded

    reduced = None if image.load_reduced is None else record(image.load_reduced)
    return LazyImage(image.height, image.width, record(image.load), reduced)


def decode_factor(height: int, width: int, min_side: int) -> int:
    """The largest libjpeg DCT reduction (1, 2, 4, 8) whose decoded image's shorter side, ``ceil(side / factor)``,
    is at least ``min_side`` pixels; 1 for ``min_side`` <= 0 (docs/scale.md#decoded-scale)."""
    factor = 1
    if min_side > 0:
        while factor < 8 and -(-min(height, width) // (2 * factor)) >= min_side:
            factor *= 2
    return factor


def _by_frame(image_rows: Sequence[int], images: ImageRows) -> list[tuple[int, list[int]]]:
    """The rows grouped by frame, in order: (frame index, the consecutive rows of that frame)."""
    groups: list[tuple[int, list[int]]] = []
    for row in image_rows:
        f = int(images.frame_index[row])
        if groups and groups[-1][0] == f:
            groups[-1][1].append(row)
        else:
            groups.append((f, [row]))
    return groups


def _add_rows(
    rows: MaskRows,
    row: int,
    request: SegmentRequest,
    result: SegmentResult,
    keep: np.ndarray,
    boxes: Boxes,
    track_ids: np.ndarray,
    thresholds: VisibilityThresholds,
    image_rule: bool = True,
) -> None:
    """Measure visibility of one image's masks and append them (sorted by track) to ``rows``."""
    vis = measure_visibility(request, result, thresholds, image_rule)
    tracks_of_boxes = np.searchsorted(track_ids, np.asarray(boxes.track_id, dtype=object)[keep])
    order = np.argsort(tracks_of_boxes, kind="stable")
    rows.image_index.append(np.full(order.size, row))
    rows.track_index.append(tracks_of_boxes[order])
    crops = [result.crops[k] for k in order.tolist()]
    rows.rle_counts.extend(encode_rle_crops([(m.pixels, m.r0, m.c0) for m in crops], request.height, request.width))
    rows.area_px.append(vis.area_px[order])
    rows.mask_box_xyxy.append(vis.mask_box_xyxy[order])
    rows.projected_box_xyxy.append(np.asarray(request.box_xyxy, dtype=np.float64)[order])
    rows.depth_m.append(np.asarray(request.depth_m, dtype=np.float64)[order])
    rows.quality.append(vis.quality[order])
    rows.box_iou.append(vis.box_iou[order])
    rows.coverage.append(vis.coverage[order])
    rows.pass_box_iou.append(vis.pass_box_iou[order])
    rows.pass_coverage.append(vis.pass_coverage[order])
    rows.pass_quality.append(vis.pass_quality[order])
    rows.image_agreement.append(vis.image_agreement[order])
    rows.pass_image.append(vis.pass_image[order])


def region_candidates(images: ImageRows, masks: SceneMasks, min_area_px: np.ndarray | int = 0) -> np.ndarray:
    """[M] bool: the masks that may become regions, visible and ``area_px >= min_area_px`` of their image's camera
    (``min_area_px`` per camera row [C], or one value for all; 0 admits every visible mask)."""
    visible = np.asarray(masks.visible, dtype=bool)
    image_index = np.asarray(masks.image_index, dtype=np.int64)
    channel = np.asarray(images.channel_index, dtype=np.int64)[image_index]
    minimum = np.asarray(min_area_px, dtype=np.int64)
    needed = minimum[channel] if minimum.ndim else np.full(image_index.shape, int(minimum), dtype=np.int64)
    return visible & (np.asarray(masks.area_px, dtype=np.int64) >= needed)


def assign_regions(
    keyframe_frames: np.ndarray, images: ImageRows, masks: SceneMasks, min_area_px: np.ndarray | int = 0
) -> SceneRegions:
    """The regions: visible objects of each keyframe image at least ``min_area_px`` large (``region_candidates``),
    numbered left to right. A smaller visible mask is no region, so no question names it (the shard counts it as
    ``regions_too_small``)."""
    image_of = {
        (int(f), int(c)): i for i, (f, c) in enumerate(zip(images.frame_index, images.channel_index, strict=True))
    }
    by_image: dict[int, list[int]] = {}
    for m in np.flatnonzero(region_candidates(images, masks, min_area_px)).tolist():
        by_image.setdefault(int(masks.image_index[m]), []).append(m)
    n_channels = int(np.max(images.channel_index)) + 1 if len(images.channel_index) else 0
    cols: dict[str, list[int]] = {
        k: [] for k in ("keyframe_index", "channel_index", "region_id", "track_index", "mask_index")
    }
    for k, f in enumerate(np.asarray(keyframe_frames).tolist()):
        for c in range(n_channels):
            members = by_image.get(image_of.get((int(f), c), -1), [])
            members = sorted(members, key=lambda m: (float(masks.mask_box_xyxy[m][0]), int(masks.track_index[m])))
            for region, m in enumerate(members):
                cols["keyframe_index"].append(k)
                cols["channel_index"].append(c)
                cols["region_id"].append(region)
                cols["track_index"].append(int(masks.track_index[m]))
                cols["mask_index"].append(m)
    return SceneRegions(**{k: np.asarray(v, dtype=np.int32) for k, v in cols.items()})
