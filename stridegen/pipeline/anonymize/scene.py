"""The privacy pass over one scene's stored camera images and times (STRIDE-QA appendix A.4: faces and licence plates
blurred, identifying timestamps removed, frame order kept). The build's ``anonymize`` stage and
``stridegen anonymize`` both run it; ``stridegen.shards.adapters.anonymized_tables`` turns its result into tables.

Per image, the scene's boxes at the image's time (the boxes of its frame, moved by their velocity to the camera
sample's timestamp; a box of a later table with the same label and its centre within ``duplicate_distance_m`` of
one of an earlier table is the same object and left out: the detections and the ground truth of one vehicle give
one plate) say where to look (``search.ImageGeometry``): the plate searches of the vehicles' end faces, the
vehicle and people regions, the ego body mask of the camera. ``image.anonymize_image_bytes`` finds and blurs the
regions and removes the metadata. Times become microseconds since the scene's first frame, and date-times in the
log name (``2018-07-24-11-22-45`` in nuScenes log names) are replaced by ``REDACTED``.

With the scene's masks and regions given, the pass measures per QA region (a row of the regions table) the pixels
of its mask and how many of them were blurred (``qa_region_*``): what the blurring took from the evidence.

The inputs are read by attribute (``ImageRows``, ``CameraRows``, ``BoxRows`` of ``stridegen.pipeline.tables``): the
stored tables have them, and this layer does not know the storage.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stridegen.pipeline.anonymize.faces import FaceDetector
from stridegen.pipeline.anonymize.image import AnonymizeOptions, Region, anonymize_image_bytes
from stridegen.pipeline.anonymize.plates import plate_searches
from stridegen.pipeline.anonymize.search import (
    FACE_CLASSES,
    ROI_MARGIN_PX,
    ROI_MARGIN_REL,
    ImageGeometry,
    ego_body_mask,
    head_boxes,
    search_rois,
)
from stridegen.pipeline.tables import BoxRows, CameraRows, ImageRows

REDACTED = "REDACTED"
_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[-_T ]\d{2}[-:]\d{2}[-:]\d{2}")


@dataclass
class SceneAnonymization:
    """What the pass made of one scene: per image its new bytes and measurements, every region with its image
    index, times relative to the scene's first frame, the redacted log name."""

    data: list[bytes] = field(default_factory=list)
    regions: list[tuple[int, Region]] = field(default_factory=list)
    blurred_px: list[int] = field(default_factory=list)
    region_counts: list[int] = field(default_factory=list)
    metadata_removed: list[bool] = field(default_factory=list)
    reencoded: list[bool] = field(default_factory=list)
    faces_rejected: list[int] = field(default_factory=list)
    qa_region_index: list[int] = field(default_factory=list)  # row of the regions table
    qa_region_image: list[int] = field(default_factory=list)
    qa_region_mask_px: list[int] = field(default_factory=list)
    qa_region_blurred_px: list[int] = field(default_factory=list)
    frame_timestamp_us: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    image_timestamp_us: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    log_name: str = ""


def redact_date_times(text: str) -> str:
    """``text`` with every date-time (``YYYY-MM-DD-hh-mm-ss`` and its ``T`` / ``_`` / ``:`` spellings) replaced."""
    return _DATE_TIME.sub(REDACTED, text)


DUPLICATE_CENTER_M = 1.0  # at most; and at most half the box's width (two pedestrians side by side stay two)


def boxes_at(tables: Sequence[BoxRows | None], frame: int, dt_s: float) -> tuple[np.ndarray, ...]:
    """(center, size_lwh, yaw, label) of the boxes of ``frame`` in ``tables``, centres moved by their velocity
    (where known) over ``dt_s``; global frame. A box of a later table with the label of a box of an earlier one
    and its centre (bird's eye view, at the frame's time) within min(``DUPLICATE_CENTER_M``, half its width) of
    it is left out."""
    center, size, yaw, label, velocity = frame_boxes(tables, frame)
    return center + velocity * dt_s, size, yaw, label


def frame_boxes(tables: Sequence[BoxRows | None], frame: int) -> tuple[np.ndarray, ...]:
    """(center, size_lwh, yaw, label, velocity with NaN as 0) of the boxes of ``frame``, duplicates of an earlier
    table left out (``boxes_at``); global frame, the frame's time."""
    parts: list[tuple[np.ndarray, ...]] = []
    for table in tables:
        if table is None or len(table) == 0:
            continue
        rows = np.flatnonzero(np.asarray(table.frame_index) == frame)
        part = (
            np.asarray(table.center_global, dtype=np.float64)[rows],
            np.asarray(table.size_lwh, dtype=np.float64)[rows],
            np.asarray(table.yaw_global, dtype=np.float64)[rows],
            np.asarray(table.label, dtype=object)[rows],
            np.nan_to_num(np.asarray(table.velocity_global, dtype=np.float64)[rows]),
        )
        if parts and len(rows):
            seen_c = np.concatenate([p[0] for p in parts])
            seen_l = np.concatenate([p[3] for p in parts])
            d = np.linalg.norm(part[0][:, None, :2] - seen_c[None, :, :2], axis=2)
            same = (d < np.minimum(DUPLICATE_CENTER_M, part[1][:, 1:2] / 2)) & (part[3][:, None] == seen_l[None, :])
            new = ~same.any(axis=1)
            part = tuple(p[new] for p in part)
        parts.append(part)
    if not parts:
        return np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros(0, dtype=object), np.zeros((0, 3))
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(5))


def image_geometry(
    center: np.ndarray,
    size: np.ndarray,
    yaw: np.ndarray,
    label: np.ndarray,
    T_global_from_cam: np.ndarray,
    intrinsic: np.ndarray,
    image_wh: tuple[int, int],
    options: AnonymizeOptions,
    ego_mask: np.ndarray | None,
) -> ImageGeometry:
    """Where the pass looks in one image (``search``; boxes in the global frame). Boxes whose bounding sphere lies
    wholly outside the camera's view are dropped first (``in_view``). The plate cascade's regions are the plate
    searches' bands grown by the search margin (``search.ROI_MARGIN_REL``, ``ROI_MARGIN_PX``): a plate is nowhere
    else on a vehicle."""
    geometry = ImageGeometry(T_global_from_cam=T_global_from_cam, intrinsic=np.asarray(intrinsic), ego_mask=ego_mask)
    keep = in_view(center, size, T_global_from_cam, intrinsic, image_wh)
    center, size, yaw, label = center[keep], size[keep], yaw[keep], np.asarray(label, dtype=object)[keep]
    names = label.astype(str)
    if options.plates:
        geometry.plate_searches = plate_searches(center, size, yaw, label, T_global_from_cam, intrinsic, image_wh)
        if options.plate_detector != "none" and geometry.plate_searches:
            b = np.array([s.band_xyxy for s in geometry.plate_searches], dtype=np.float64)
            pad = np.stack([b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]], axis=1) * ROI_MARGIN_REL + ROI_MARGIN_PX
            rois = np.concatenate([b[:, :2] - pad, b[:, 2:] + pad], axis=1)
            geometry.vehicle_rois = np.clip(rois, 0, [image_wh[0], image_wh[1]] * 2)
    if options.faces:
        p = np.flatnonzero(np.isin(names, FACE_CLASSES))
        rows, rois, depth = search_rois(center[p], size[p], yaw[p], T_global_from_cam, intrinsic, image_wh)
        c, h = center[p[rows]], size[p[rows], 2]
        geometry.people_rois, geometry.people_depth_m = rois, depth
        geometry.people_z_range_m = np.stack([c[:, 2] - h / 2, c[:, 2] + h / 2], axis=1).reshape(-1, 2)
        heads = head_boxes(c, size[p[rows]], yaw[p[rows]], T_global_from_cam, intrinsic, image_wh)
        geometry.people_head_xyxy, geometry.people_face_px, geometry.people_facing = heads
    return geometry


def in_view(
    center: np.ndarray,
    size: np.ndarray,
    T_global_from_cam: np.ndarray,
    intrinsic: np.ndarray,
    image_wh: tuple[int, int],
) -> np.ndarray:
    """[N] bool: boxes (global frame) whose bounding sphere (radius half the box diagonal) may meet the camera's
    view: in front of the lens and within the image's angles widened by the radius (a cheap, conservative cull)."""
    from stridegen.core.transforms import invert_transform, transform_points

    if len(center) == 0:
        return np.zeros(0, dtype=bool)
    p = transform_points(invert_transform(np.asarray(T_global_from_cam, dtype=np.float64)), np.asarray(center))
    r = np.linalg.norm(np.asarray(size, dtype=np.float64), axis=1) / 2
    K = np.asarray(intrinsic, dtype=np.float64)
    width, height = image_wh
    tan_x = max(K[0, 2], width - K[0, 2]) / K[0, 0]
    tan_y = max(K[1, 2], height - K[1, 2]) / K[1, 1]
    slack_x, slack_y = r * np.sqrt(1 + tan_x**2), r * np.sqrt(1 + tan_y**2)  # the sphere's reach across a side plane
    z = p[:, 2]
    return (z > -r) & (np.abs(p[:, 0]) <= z * tan_x + slack_x) & (np.abs(p[:, 1]) <= z * tan_y + slack_y)


def _measure_qa_regions(
    out: SceneAnonymization, image: int, blurred: np.ndarray | None, masks: Any, regions: Any, wh: tuple[int, int]
) -> None:
    """Append the mask pixels and blurred mask pixels of every QA region whose mask is of ``image``."""
    from stridegen.formats.rle import decode_rle

    mask_image = np.asarray(masks.image_index)
    for r, m in enumerate(np.asarray(regions.mask_index).tolist()):
        if m < 0 or int(mask_image[m]) != image:
            continue
        area = int(masks.area_px[m])
        hit = 0
        if blurred is not None and area:
            hit = int(np.count_nonzero(decode_rle(str(masks.rle_counts[m]), wh[1], wh[0]) & blurred))
        out.qa_region_index.append(r)
        out.qa_region_image.append(image)
        out.qa_region_mask_px.append(area)
        out.qa_region_blurred_px.append(hit)


def anonymize_scene(
    scene_name: str,
    log_name: str,
    frame_timestamp_us: np.ndarray,
    cameras: CameraRows,
    images: ImageRows,
    box_tables: Sequence[BoxRows | None],
    options: AnonymizeOptions,
    face_detector: FaceDetector | None,
    masks: Any = None,
    regions: Any = None,
) -> SceneAnonymization:
    """The pass over one scene (module docstring). ``face_detector`` is used when ``options.faces``; ``masks`` and
    ``regions`` (the scene's masks and regions tables, read by attribute) give the QA-region measures."""
    frame_ts = np.asarray(frame_timestamp_us, dtype=np.int64)
    out = SceneAnonymization()
    ego_masks: dict[int, np.ndarray] = {}
    per_frame: dict[int, tuple[np.ndarray, ...]] = {}
    for i in range(len(images)):
        f, c = int(images.frame_index[i]), int(images.channel_index[i])
        wh = (int(cameras.width[c]), int(cameras.height[c]))
        dt_s = float(int(images.timestamp_us[i]) - int(frame_ts[f])) * 1e-6
        if f not in per_frame:
            per_frame[f] = frame_boxes(box_tables, f)
        center, size, yaw, label, velocity = per_frame[f]
        center = center + velocity * dt_s
        T_global_from_cam = np.asarray(images.T_global_from_ego[i]) @ np.asarray(cameras.T_ego_from_sensor[c])
        geometry = image_geometry(
            center, size, yaw, label, T_global_from_cam, cameras.intrinsic[c], wh, options, ego_masks.get(c)
        )
        if options.faces and c not in ego_masks:  # made when a face first needs it, then kept for the camera

            def make(c: int = c, wh: tuple[int, int] = wh) -> np.ndarray:
                ego_masks[c] = ego_body_mask(cameras.T_ego_from_sensor[c], cameras.intrinsic[c], wh)
                return ego_masks[c]

            geometry.ego_mask_maker = make
        result = anonymize_image_bytes(
            np.asarray(images.data[i], dtype=np.uint8).tobytes(),
            np.zeros((0, 4)),
            face_detector if options.faces else None,
            options,
            f"{scene_name}:{cameras.channel[c]}/frame {f}",
            geometry,
        )
        out.data.append(result.data)
        out.regions += [(i, r) for r in result.regions]
        out.blurred_px.append(result.blurred_px)
        out.region_counts.append(len(result.regions))
        out.metadata_removed.append(result.metadata_removed)
        out.reencoded.append(result.reencoded)
        out.faces_rejected.append(result.faces_rejected)
        if masks is not None and regions is not None:
            _measure_qa_regions(out, i, result.blurred_mask, masks, regions, wh)
    t0 = int(frame_ts[0]) if len(frame_ts) else 0
    out.frame_timestamp_us = frame_ts - t0
    out.image_timestamp_us = np.asarray(images.timestamp_us, dtype=np.int64) - t0
    out.log_name = redact_date_times(log_name)
    return out
