"""Domain arrays of the pipeline stages -> the shard's tables (and back, for the QA rows).

Stages return plain arrays and small dataclasses; this module alone knows the storage tables of
``stridegen.shards.schema`` and fills them (string columns as object arrays of str, byte columns as uint8 arrays).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from stridegen.core.boxes import Boxes
from stridegen.core.errors import UnknownChannelError
from stridegen.formats.images import check_image_bytes
from stridegen.logs.base import Scene
from stridegen.pipeline.attributes import SceneAttributes, SceneTracks
from stridegen.pipeline.keyframes import KeyframeSelection
from stridegen.pipeline.qa.base import QAItem
from stridegen.pipeline.qa.stage import QARow
from stridegen.pipeline.segment.stage import SceneMasks, SceneRegions
from stridegen.shards.schema import (
    QA_FRAME_SLOTS,
    QA_REGION_SLOTS,
    AttributesTable,
    CamerasTable,
    DetectionsTable,
    FramesTable,
    GroundTruthTable,
    ImagesTable,
    KeyframesTable,
    MasksTable,
    QATable,
    RegionsTable,
    SkippedKeyframesTable,
    TracksTable,
    bytes_array,
    str_array,
)

if TYPE_CHECKING:  # the anonymizer is imported by a build that anonymizes only (issue 35)
    from stridegen.pipeline.anonymize.scene import SceneAnonymization

# The extra tables an anonymized scene carries (read back by stridegen.shards.anonymization).
ANONYMIZATION_REGIONS_TABLE = "anonymization"
ANONYMIZATION_IMAGES_TABLE = "anonymization_images"
ANONYMIZATION_QA_REGIONS_TABLE = "anonymization_qa_regions"


def frames_table(scene: Scene) -> FramesTable:
    return FramesTable(
        token=str_array(f.token for f in scene.frames),
        timestamp_us=np.array([f.timestamp_us for f in scene.frames], dtype=np.int64),
        T_global_from_ego=np.array([f.T_global_from_ego for f in scene.frames], dtype=np.float64).reshape(-1, 4, 4),
    )


def cameras_table(scene: Scene, channels: list[str]) -> CamerasTable:
    cals = []
    for ch in channels:
        sample = scene.frames[0].sensor(ch)
        if not sample.calibration.is_camera or sample.calibration.intrinsic is None:
            raise UnknownChannelError(sample.path, f"channel {ch!r} is not a calibrated camera")
        cals.append(sample.calibration)
    return CamerasTable(
        channel=str_array(channels),
        intrinsic=np.array([c.intrinsic for c in cals], dtype=np.float64).reshape(-1, 3, 3),
        T_ego_from_sensor=np.array([c.T_ego_from_sensor for c in cals], dtype=np.float64).reshape(-1, 4, 4),
        width=np.array([c.width or 0 for c in cals], dtype=np.int32),
        height=np.array([c.height or 0 for c in cals], dtype=np.int32),
    )


def ground_truth_table(scene: Scene) -> GroundTruthTable | None:
    parts = [(i, f.annotations()) for i, f in enumerate(scene.frames)]
    parts = [(i, a) for i, a in parts if len(a)]
    if not parts:
        return None

    def cat(getter, dtype=None):
        return np.concatenate([np.asarray(getter(a), dtype=dtype) for _, a in parts])

    return GroundTruthTable(
        frame_index=np.concatenate([np.full(len(a), i, dtype=np.int32) for i, a in parts]),
        instance_token=str_array(cat(lambda a: a.boxes.track_id, object)),
        annotation_token=str_array(cat(lambda a: a.token, object)),
        category=str_array(cat(lambda a: a.category, object)),
        label=str_array(cat(lambda a: a.boxes.label, object)),
        center_global=cat(lambda a: a.boxes.center, np.float64).reshape(-1, 3),
        size_lwh=cat(lambda a: a.boxes.size_lwh, np.float64).reshape(-1, 3),
        yaw_global=cat(lambda a: a.boxes.yaw, np.float64),
        velocity_global=cat(lambda a: a.boxes.velocity, np.float64).reshape(-1, 3),
        num_lidar_pts=cat(lambda a: a.num_lidar_pts, np.int32),
        visibility=cat(lambda a: a.visibility, np.int8),
        attribute=str_array(cat(lambda a: a.attribute, object)),
    )


def keyframe_tables(
    selection: KeyframeSelection, window_offsets_s: np.ndarray | tuple[float, ...]
) -> tuple[KeyframesTable, SkippedKeyframesTable]:
    offsets = np.asarray(window_offsets_s, dtype=np.float64)
    kfs = selection.keyframes
    window = np.array([[-1 if i is None else i for i in k.window] for k in kfs], dtype=np.int32)
    keyframes = KeyframesTable(
        frame_index=np.array([k.frame_index for k in kfs], dtype=np.int32),
        time_s=np.array([k.time_s for k in kfs], dtype=np.float64),
        window=window.reshape(len(kfs), offsets.size),
        offsets_s=offsets,
    )
    skipped = SkippedKeyframesTable(
        time_s=np.array([t for t, _ in selection.skipped], dtype=np.float64),
        reason=str_array(r for _, r in selection.skipped),
    )
    return keyframes, skipped


def images_table(scene: Scene, channels: list[str], frame_indices: list[int], check: bool = True) -> ImagesTable:
    """The camera images of ``frame_indices`` (bytes stored unchanged). ``check``: each passes ``check_image_bytes``
    now; False leaves that to ``check_images`` (the build, after the segmenter's strict decodes)."""
    rows: list[tuple[int, int, Any, bytes]] = []
    for f in frame_indices:
        frame = scene.frames[f]
        for c, ch in enumerate(channels):
            sample = frame.sensor(ch)
            data = frame.image_bytes(ch)
            if check:
                check_image_bytes(data, sample.path)
            rows.append((f, c, sample, data))
    return ImagesTable(
        frame_index=np.array([r[0] for r in rows], dtype=np.int32),
        channel_index=np.array([r[1] for r in rows], dtype=np.int32),
        sample_token=str_array(r[2].token for r in rows),
        timestamp_us=np.array([r[2].timestamp_us for r in rows], dtype=np.int64),
        T_global_from_ego=np.array([r[2].T_global_from_ego for r in rows], dtype=np.float64).reshape(-1, 4, 4),
        data=bytes_array(r[3] for r in rows),
    )


def check_images(scene: Scene, images: ImagesTable, channels: Sequence[str], skip: Collection[int] = ()) -> None:
    """``check_image_bytes`` of the rows of ``images`` (made by ``images_table(..., check=False)`` over ``channels``)
    not in ``skip``, in row order: the first bad image raises LogFormatError naming its file, as ``images_table``'s
    own check would. ``skip``: rows whose stored bytes a strict decode has already read whole (issue 35: each JPEG's
    compressed data decoded once per build)."""
    for row in range(len(images.frame_index)):
        if row in skip:
            continue
        sample = scene.frames[int(images.frame_index[row])].sensor(channels[int(images.channel_index[row])])
        check_image_bytes(np.asarray(images.data[row], dtype=np.uint8).tobytes(), sample.path)


def detections_table(detections: Sequence[Boxes], track_ids: Sequence[np.ndarray]) -> DetectionsTable:
    """Every frame's detections (global frame) with the tracker's id of each ("" where it made none)."""
    all_dets = Boxes.concat(list(detections)) if detections else Boxes.empty("global")
    return DetectionsTable(
        frame_index=np.concatenate(
            [np.full(len(d), i, dtype=np.int32) for i, d in enumerate(detections)] or [np.zeros(0, dtype=np.int32)]
        ),
        center_global=all_dets.center,
        size_lwh=all_dets.size_lwh,
        yaw_global=all_dets.yaw,
        velocity_global=all_dets.velocity,
        label=str_array(all_dets.label),
        score=all_dets.score,
        track_id=str_array(np.concatenate(list(track_ids)) if track_ids else []),
    )


def tracks_table(tracks: SceneTracks) -> TracksTable:
    return TracksTable(
        track_id=str_array(tracks.track_id),
        label=str_array(tracks.label),
        present=tracks.present,
        center_global=tracks.center_global,
        size_lwh=tracks.size_lwh,
        yaw_global=tracks.yaw_global,
        score=tracks.score,
    )


def attributes_table(attrs: SceneAttributes) -> AttributesTable:
    return AttributesTable(velocity_global=attrs.velocity_global, ego_velocity_global=attrs.ego_velocity_global)


def masks_table(masks: SceneMasks) -> MasksTable:
    # the table's columns (the build's record also holds the image rule's measure, which shards do not store)
    columns = {f.name: getattr(masks, f.name) for f in dataclasses.fields(MasksTable)}
    columns["rle_counts"] = str_array(masks.rle_counts)
    return MasksTable(**columns)


def regions_table(regions: SceneRegions) -> RegionsTable:
    return RegionsTable(**{f.name: getattr(regions, f.name) for f in dataclasses.fields(regions)})


def _padded(values: list[tuple[int, ...]], width: int) -> np.ndarray:
    out = np.full((len(values), width), -1, dtype=np.int32)
    for i, v in enumerate(values):
        if len(v) > width:
            raise ValueError(f"a QA row names {len(v)} entries, the table holds {width}")
        out[i, : len(v)] = v
    return out


def _extra_json(extra: dict) -> str:
    return json.dumps(extra, sort_keys=True) if extra else "{}"


def qa_table(rows: Sequence[QARow]) -> QATable:
    """The shard's QATable from (question id, keyframe index, channel index, item) rows."""
    items = [r[3] for r in rows]
    return QATable(
        question_id=str_array(r[0] for r in rows),
        category=str_array(it.category for it in items),
        predicate=str_array(it.predicate for it in items),
        keyframe_index=np.array([r[1] for r in rows], dtype=np.int32),
        channel_index=np.array([r[2] for r in rows], dtype=np.int32),
        region_ids=_padded([tuple(it.region_ids) for it in items], QA_REGION_SLOTS),
        track_index=_padded([tuple(it.track_indices) for it in items], QA_REGION_SLOTS),
        frame_indices=_padded([tuple(it.frame_indices) for it in items], QA_FRAME_SLOTS),
        question=str_array(it.question for it in items),
        answer=str_array(it.answer for it in items),
        gt_value=np.array([it.gt_value for it in items], dtype=np.float64),
        unit=str_array(it.unit for it in items),
        gt_label=str_array(it.gt_label for it in items),
        gt_extra=str_array(_extra_json(it.gt_extra) for it in items),
        group_id=str_array(it.group_id for it in items),
        horizon_s=np.array([it.horizon_s for it in items], dtype=np.int32),
        out_of_view=np.array([it.out_of_view for it in items], dtype=np.int8),
        object_class=str_array(it.object_class for it in items),
        visual_evidence=np.ones(len(items), dtype=bool),
    )


def items_from_table(table: QATable) -> list[tuple[str, QAItem]]:
    """(question id, QAItem) of every row of a shard's QATable (the inverse of ``qa_table``)."""

    def unpad(row: np.ndarray) -> tuple[int, ...]:
        return tuple(int(v) for v in row if v >= 0)

    out = []
    for i, qid in enumerate(table.question_id.tolist()):
        out.append(
            (
                str(qid),
                QAItem(
                    category=str(table.category[i]),
                    predicate=str(table.predicate[i]),
                    question=str(table.question[i]),
                    answer=str(table.answer[i]),
                    region_ids=unpad(table.region_ids[i]),
                    track_indices=unpad(table.track_index[i]),
                    gt_value=float(table.gt_value[i]),
                    unit=str(table.unit[i]),
                    gt_label=str(table.gt_label[i]),
                    gt_extra=json.loads(str(table.gt_extra[i]) or "{}"),
                    group_id=str(table.group_id[i]),
                    horizon_s=int(table.horizon_s[i]),
                    frame_indices=unpad(table.frame_indices[i]),
                    out_of_view=int(table.out_of_view[i]),
                    object_class=str(table.object_class[i]),
                ),
            )
        )
    return out


def anonymized_tables(
    frames: FramesTable, images: ImagesTable, out: SceneAnonymization
) -> tuple[FramesTable, ImagesTable, dict[str, dict[str, np.ndarray]]]:
    """The frames and images tables after the privacy pass ``out`` (new image bytes, times relative to the scene's
    first frame), and the three tables it adds (``stridegen.shards.anonymization``)."""
    new_frames = dataclasses.replace(frames, timestamp_us=out.frame_timestamp_us)
    new_images = dataclasses.replace(images, data=bytes_array(out.data), timestamp_us=out.image_timestamp_us)
    regions = {
        "image_index": np.array([i for i, _ in out.regions], dtype=np.int32),
        "kind": str_array(r.kind for _, r in out.regions),
        "source": str_array(r.source for _, r in out.regions),
        "box_xyxy": np.array([r.box_xyxy for _, r in out.regions], dtype=np.float64).reshape(-1, 4),
        "score": np.array([r.score for _, r in out.regions], dtype=np.float64),
    }
    per_image: dict[str, np.ndarray] = {
        "blurred_px": np.array(out.blurred_px, dtype=np.int64),
        "regions": np.array(out.region_counts, dtype=np.int32),
        "metadata_removed": np.array(out.metadata_removed, dtype=bool),
        "reencoded": np.array(out.reencoded, dtype=bool),
        "faces_rejected": np.array(out.faces_rejected, dtype=np.int32),
    }
    # per QA region (row of the regions table): its mask's pixels and how many of them were blurred
    qa_regions: dict[str, np.ndarray] = {
        "region_index": np.array(out.qa_region_index, dtype=np.int32),
        "image_index": np.array(out.qa_region_image, dtype=np.int32),
        "mask_px": np.array(out.qa_region_mask_px, dtype=np.int64),
        "blurred_px": np.array(out.qa_region_blurred_px, dtype=np.int64),
    }
    tables = {ANONYMIZATION_REGIONS_TABLE: regions, ANONYMIZATION_IMAGES_TABLE: per_image}
    return new_frames, new_images, {**tables, ANONYMIZATION_QA_REGIONS_TABLE: qa_regions}
