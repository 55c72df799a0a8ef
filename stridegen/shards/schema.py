"""Shard schema v4: what one scene's record holds, as plain arrays (the layout is documented in docs/format.md).

A shard file holds ``/scenes/<scene name>/`` groups (one scene per file); each group holds one sub-group per
table below, each table a set of datasets sharing their leading dimension. Version history:

- v2 added the ``masks``, ``regions`` and ``qa`` tables to version 1;
- v3 added the checksums of every dataset (same tables, stridegen.shards.integrity);
- v4 added the ``scenarios`` table: the scenario relation of every spatiotemporal group over its keyframe window
  (stridegen.shards.scenarios; docs/scenarios.md). Shards older than v4 have none: readers label their groups on
  read, with the same rules (``scene_relations``); v4 also binds each shard to its manifest: the scene group's
  ``content_digest`` (scene, config hash, every dataset's CRC-32, counts; stridegen.shards.integrity), which the
  manifest lists per shard and the reader checks on open (v3 shards are checked by size, config hash and counts).

A reader of version N reads every table it knows and ignores the rest, and ``SceneRecord.extra`` carries tables
this module does not define.

Dimensions: F frames of the scene, C cameras, I stored images, K keyframes, W window offsets, S skipped keyframe
targets, D detections, T tracks, G ground-truth boxes, M mask candidates, R regions, Q question-answer pairs,
Y spatiotemporal groups.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import ClassVar

import numpy as np

from stridegen.core.errors import ShardError as ShardError  # re-exported: its historical home

# Version 3 stores a CRC-32 of every dataset's values (attributes, stridegen.shards.integrity); version 4 adds the
# scenarios table (module docstring).
SCHEMA_VERSION = 4
# The first version whose shards carry those checksums; older shards are read without them.
CHECKSUM_SCHEMA_VERSION = 3
# The first version whose shards carry their content digest (their identity in the manifest, docs/format.md).
IDENTITY_SCHEMA_VERSION = 4
SHARD_FORMAT = "stridegen-shard"
SHARD_SUFFIX = ".h5"


def str_array(values) -> np.ndarray:
    """An object array of Python str (the in-memory form of every string dataset)."""
    values = list(values)
    arr = np.empty(len(values), dtype=object)
    arr[:] = [str(v) for v in values]
    return arr


def bytes_array(values) -> np.ndarray:
    """An object array of uint8 arrays (the in-memory form of variable-length byte datasets)."""
    values = list(values)
    arr = np.empty(len(values), dtype=object)
    arr[:] = [
        np.frombuffer(v, dtype=np.uint8).copy() if isinstance(v, bytes | bytearray) else np.asarray(v, dtype=np.uint8)
        for v in values
    ]
    return arr


@dataclass
class Table:
    """A set of arrays sharing their leading dimension (``ROWS`` names it), stored as one HDF5 group."""

    GROUP: ClassVar[str] = ""
    ROWS: ClassVar[str] = ""
    BYTES_FIELDS: ClassVar[tuple[str, ...]] = ()  # object arrays of uint8 arrays (variable-length bytes)
    # Fields whose leading dimension is not ROWS (e.g. the window offsets), exempt from the length check.
    FREE_FIELDS: ClassVar[tuple[str, ...]] = ()

    def arrays(self) -> dict[str, np.ndarray]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> Table:
        missing = [f.name for f in fields(cls) if f.name not in arrays]
        if missing:
            raise KeyError(f"table {cls.GROUP!r} lacks {missing}")
        return cls(**{f.name: arrays[f.name] for f in fields(cls)})

    def __len__(self) -> int:
        first = next(f.name for f in fields(self) if f.name not in self.FREE_FIELDS)
        return int(np.shape(getattr(self, first))[0])

    def validate(self) -> None:
        n = len(self)
        for name, value in self.arrays().items():
            if name in self.FREE_FIELDS:
                continue
            if np.ndim(value) == 0 or np.shape(value)[0] != n:
                raise ValueError(
                    f"{self.GROUP}/{name}: leading dimension must be {n} ({self.ROWS}), got shape {np.shape(value)}"
                )


@dataclass
class FramesTable(Table):
    GROUP: ClassVar[str] = "frames"
    ROWS: ClassVar[str] = "F"
    token: np.ndarray  # [F] str, the log's frame (sample) token
    timestamp_us: np.ndarray  # [F] int64, microseconds
    T_global_from_ego: np.ndarray  # [F, 4, 4] float64, ego pose of the frame's reference (LiDAR) sample


@dataclass
class CamerasTable(Table):
    GROUP: ClassVar[str] = "cameras"
    ROWS: ClassVar[str] = "C"
    channel: np.ndarray  # [C] str
    intrinsic: np.ndarray  # [C, 3, 3] float64, pixels
    T_ego_from_sensor: np.ndarray  # [C, 4, 4] float64; camera frame x right, y down, z forward
    width: np.ndarray  # [C] int32 pixels
    height: np.ndarray  # [C] int32 pixels


@dataclass
class ImagesTable(Table):
    GROUP: ClassVar[str] = "images"
    ROWS: ClassVar[str] = "I"
    BYTES_FIELDS: ClassVar[tuple[str, ...]] = ("data",)
    frame_index: np.ndarray  # [I] int32 into frames
    channel_index: np.ndarray  # [I] int32 into cameras
    sample_token: np.ndarray  # [I] str, the camera sample's token
    timestamp_us: np.ndarray  # [I] int64, the camera sample's own timestamp
    T_global_from_ego: np.ndarray  # [I, 4, 4] float64, ego pose at the camera sample's timestamp
    data: np.ndarray  # [I] variable-length uint8: the camera file's bytes, unchanged (JPEG)


@dataclass
class KeyframesTable(Table):
    GROUP: ClassVar[str] = "keyframes"
    ROWS: ClassVar[str] = "K"
    FREE_FIELDS: ClassVar[tuple[str, ...]] = ("offsets_s",)
    frame_index: np.ndarray  # [K] int32 into frames
    time_s: np.ndarray  # [K] float64, seconds since the scene's first frame
    window: np.ndarray  # [K, W] int32 frame index per window offset, -1 where no frame was close enough
    offsets_s: np.ndarray  # [W] float64, the window offsets relative to the keyframe


@dataclass
class SkippedKeyframesTable(Table):
    GROUP: ClassVar[str] = "skipped_keyframes"
    ROWS: ClassVar[str] = "S"
    time_s: np.ndarray  # [S] float64, target time since the scene's first frame
    reason: np.ndarray  # [S] str


@dataclass
class DetectionsTable(Table):
    GROUP: ClassVar[str] = "detections"
    ROWS: ClassVar[str] = "D"
    frame_index: np.ndarray  # [D] int32 into frames (rows sorted by frame, then detector order)
    center_global: np.ndarray  # [D, 3] float64 metres
    size_lwh: np.ndarray  # [D, 3] float64 metres (length, width, height)
    yaw_global: np.ndarray  # [D] float64 radians about +z
    velocity_global: np.ndarray  # [D, 3] float64 m/s (NaN where unknown)
    label: np.ndarray  # [D] str, nuScenes detection class
    score: np.ndarray  # [D] float64
    track_id: np.ndarray  # [D] str, the tracker's id ("" for detections the tracker did not keep)


@dataclass
class TracksTable(Table):
    GROUP: ClassVar[str] = "tracks"
    ROWS: ClassVar[str] = "T"
    track_id: np.ndarray  # [T] str
    label: np.ndarray  # [T] str, the track's most frequent label
    present: np.ndarray  # [T, F] bool
    center_global: np.ndarray  # [T, F, 3] float64 metres, NaN where absent
    size_lwh: np.ndarray  # [T, F, 3] float64 metres, NaN where absent
    yaw_global: np.ndarray  # [T, F] float64 radians, NaN where absent
    score: np.ndarray  # [T, F] float64, NaN where absent


@dataclass
class AttributesTable(Table):
    GROUP: ClassVar[str] = "attributes"
    ROWS: ClassVar[str] = "T"
    FREE_FIELDS: ClassVar[tuple[str, ...]] = ("ego_velocity_global",)
    velocity_global: np.ndarray  # [T, F, 3] float64 m/s, finite differences of the track centres (NaN: unknown)
    ego_velocity_global: np.ndarray  # [F, 3] float64 m/s, finite differences of the ego positions


@dataclass
class GroundTruthTable(Table):
    GROUP: ClassVar[str] = "ground_truth"
    ROWS: ClassVar[str] = "G"
    frame_index: np.ndarray  # [G] int32 into frames
    instance_token: np.ndarray  # [G] str, stable over the scene
    annotation_token: np.ndarray  # [G] str
    category: np.ndarray  # [G] str, full category name
    label: np.ndarray  # [G] str, nuScenes detection class ("" outside the 10 classes)
    center_global: np.ndarray  # [G, 3] float64 metres
    size_lwh: np.ndarray  # [G, 3] float64 metres
    yaw_global: np.ndarray  # [G] float64 radians
    velocity_global: np.ndarray  # [G, 3] float64 m/s (NaN where the log has none)
    num_lidar_pts: np.ndarray  # [G] int32
    visibility: np.ndarray  # [G] int8, nuScenes visibility bin 1..4, 0 unknown
    attribute: np.ndarray  # [G] str, first attribute name, "" where none


@dataclass
class MasksTable(Table):
    """One row per (stored image, track) whose projected box meets the image: the segmenter's mask and the
    visibility filter's measurements (definitions in docs/visibility.md)."""

    GROUP: ClassVar[str] = "masks"
    ROWS: ClassVar[str] = "M"
    image_index: np.ndarray  # [M] int32 into images
    track_index: np.ndarray  # [M] int32 into tracks
    rle_counts: np.ndarray  # [M] str, COCO compressed RLE counts of the mask (size = the camera's [height, width])
    area_px: np.ndarray  # [M] int64, mask pixels
    mask_box_xyxy: np.ndarray  # [M, 4] float64, the mask's bounding box (x0, y0, x1, y1), NaN for an empty mask
    projected_box_xyxy: np.ndarray  # [M, 4] float64, the projected 3D box's 2D box clipped to the image
    depth_m: np.ndarray  # [M] float64, camera-frame z of the box centre
    quality: np.ndarray  # [M] float64 in [0, 1], the segmenter's own score
    box_iou: np.ndarray  # [M] float64, IoU of mask_box_xyxy and projected_box_xyxy
    coverage: np.ndarray  # [M] float64, share of the projected box hull inside the image and not hidden by nearer
    pass_box_iou: np.ndarray  # [M] bool, box_iou > visibility.min_box_iou
    pass_coverage: np.ndarray  # [M] bool, coverage > visibility.min_coverage
    pass_quality: np.ndarray  # [M] bool, quality > visibility.min_quality
    visible: np.ndarray  # [M] bool, all three rules pass


@dataclass
class RegionsTable(Table):
    """The marked objects of each keyframe image: ``Region [region_id]`` in questions of that image."""

    GROUP: ClassVar[str] = "regions"
    ROWS: ClassVar[str] = "R"
    keyframe_index: np.ndarray  # [R] int32 into keyframes
    channel_index: np.ndarray  # [R] int32 into cameras
    region_id: np.ndarray  # [R] int32, 0..n-1 within one (keyframe, channel)
    track_index: np.ndarray  # [R] int32 into tracks
    mask_index: np.ndarray  # [R] int32 into masks (the keyframe image's mask of the track)


# Widths of the QA table's padded columns: regions (and their tracks) a question names, frames it shows.
QA_REGION_SLOTS = 2
QA_FRAME_SLOTS = 4


@dataclass
class QATable(Table):
    """Question-answer pairs (stridegen.pipeline.qa.base.QAItem), one row each."""

    GROUP: ClassVar[str] = "qa"
    ROWS: ClassVar[str] = "Q"
    question_id: np.ndarray  # [Q] str, unique in the dataset
    category: np.ndarray  # [Q] str: object_spatial | ego_spatial | spatiotemporal
    predicate: np.ndarray  # [Q] str
    keyframe_index: np.ndarray  # [Q] int32 into keyframes
    channel_index: np.ndarray  # [Q] int32 into cameras
    region_ids: np.ndarray  # [Q, 2] int32, regions named by the question in order, -1 padding
    track_index: np.ndarray  # [Q, 2] int32 into tracks, same order, -1 padding
    frame_indices: np.ndarray  # [Q, 4] int32 frames whose images the question shows (in time order), -1 padding
    question: np.ndarray  # [Q] str
    answer: np.ndarray  # [Q] str
    gt_value: np.ndarray  # [Q] float64, canonical rounded number; NaN for qualitative
    unit: np.ndarray  # [Q] str: m | deg | o'clock | m/s | "" (qualitative)
    gt_label: np.ndarray  # [Q] str, qualitative truth ("yes", "no", ...); "" for quantitative
    gt_extra: np.ndarray  # [Q] str, JSON object of further structured truth ("{}" when none)
    group_id: np.ndarray  # [Q] str, spatiotemporal group ("" for spatial)
    horizon_s: np.ndarray  # [Q] int32, prediction horizon in seconds (0 for spatial)
    out_of_view: np.ndarray  # [Q] int8: 1 target outside the camera view at the horizon, 0 inside, -1 unknown
    object_class: np.ndarray  # [Q] str, STRIDE-QA class of the first region
    visual_evidence: np.ndarray  # [Q] bool, False where an augmentation removed the images the QA needs


@dataclass
class ScenariosTable(Table):
    """The scenario relation of each spatiotemporal group (``qa.group_id``) over its keyframe window, labelled at
    build time by stridegen.pipeline.scenario from the target's track and the ego poses (docs/scenarios.md)."""

    GROUP: ClassVar[str] = "scenarios"
    ROWS: ClassVar[str] = "Y"
    group_id: np.ndarray  # [Y] str, sorted, as in qa.group_id
    keyframe_index: np.ndarray  # [Y] int32 into keyframes, the group's keyframe (its window: keyframes.window)
    track_index: np.ndarray  # [Y] int32 into tracks, the group's target (qa.track_index[:, 0])
    relation: np.ndarray  # [Y] str, STRIDE-QA-Bench relation name (stridegen.pipeline.scenario.RELATIONS)


# The tables of the schema, in the order they are written.
TABLES: tuple[type[Table], ...] = (
    FramesTable,
    CamerasTable,
    ImagesTable,
    KeyframesTable,
    SkippedKeyframesTable,
    DetectionsTable,
    TracksTable,
    AttributesTable,
    GroundTruthTable,
    MasksTable,
    RegionsTable,
    QATable,
    ScenariosTable,
)
TABLE_BY_GROUP: dict[str, type[Table]] = {t.GROUP: t for t in TABLES}


def qa_breakdown(qa: QATable) -> dict[str, int]:
    """QA counts per category, class, (category, class) and predicate, keyed ``qa_category/<c>`` and so on."""
    from collections import Counter

    # each distinct (category, class, predicate) counted once (Counter's C loop), then its keys formatted once
    rows = Counter(zip(qa.category.tolist(), qa.object_class.tolist(), qa.predicate.tolist(), strict=True))
    counts: Counter = Counter()
    for (cat, cls, pred), n in rows.items():
        counts[f"qa_category/{cat}"] += n
        counts[f"qa_class/{cls}"] += n
        counts[f"qa_category_class/{cat}/{cls}"] += n
        counts[f"qa_predicate/{pred}"] += n
    return dict(sorted(counts.items()))


@dataclass
class SceneMeta:
    """Scalar facts about the scene, stored as attributes of its group."""

    token: str
    name: str
    description: str = ""
    log_name: str = ""
    source_format: str = ""  # "nuscenes" | "av2"
    source_version: str = ""  # e.g. "v1.0-mini"

    def attrs(self) -> dict[str, str]:
        return {f.name: str(getattr(self, f.name)) for f in fields(self)}


@dataclass
class SceneRecord:
    """Everything the build produces for one scene; the shard writer stores it as-is."""

    meta: SceneMeta
    frames: FramesTable
    cameras: CamerasTable
    images: ImagesTable
    keyframes: KeyframesTable
    skipped_keyframes: SkippedKeyframesTable
    detections: DetectionsTable
    tracks: TracksTable
    attributes: AttributesTable
    ground_truth: GroundTruthTable | None = None  # None when the log has no annotations (or not stored)
    masks: MasksTable | None = None  # None when the build ran no segmenter (and in schema v1 shards)
    regions: RegionsTable | None = None
    qa: QATable | None = None
    qa_skipped: dict[str, int] = field(default_factory=dict)  # spatiotemporal groups not made, by reason (manifest)
    extra: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)  # tables of later schema additions
    scenarios: ScenariosTable | None = None  # None without QA (and in shards older than v4)

    def tables(self) -> list[Table]:
        out: list[Table] = [
            self.frames,
            self.cameras,
            self.images,
            self.keyframes,
            self.skipped_keyframes,
            self.detections,
            self.tracks,
            self.attributes,
        ]
        out.extend(t for t in (self.ground_truth, self.masks, self.regions, self.qa, self.scenarios) if t is not None)
        return out

    def counts(self) -> dict[str, int]:
        counts = {
            "frames": len(self.frames),
            "keyframes": len(self.keyframes),
            "detections": len(self.detections),
            "tracks": len(self.tracks),
            "images": len(self.images),
            "skipped_keyframes": len(self.skipped_keyframes),
            "ground_truth": len(self.ground_truth) if self.ground_truth is not None else 0,
            "masks": len(self.masks) if self.masks is not None else 0,
            "visible_masks": int(np.count_nonzero(self.masks.visible)) if self.masks is not None else 0,
            "regions": len(self.regions) if self.regions is not None else 0,
            "regions_too_small": self.regions_too_small(),
            "qa": len(self.qa) if self.qa is not None else 0,
        }
        if self.masks is not None:
            for rule in ("box_iou", "coverage", "quality"):
                counts[f"mask_pass_{rule}"] = int(np.count_nonzero(getattr(self.masks, f"pass_{rule}")))
        if self.qa is not None:
            counts.update(qa_breakdown(self.qa))
        if self.scenarios is not None:
            counts["scenario_groups"] = len(self.scenarios)
            for relation in self.scenarios.relation.tolist():
                counts[f"scenario/{relation}"] = counts.get(f"scenario/{relation}", 0) + 1
        counts.update({f"qa_skipped_group/{reason}": int(n) for reason, n in sorted(self.qa_skipped.items()) if n})
        return counts

    def regions_too_small(self) -> int:
        """Visible masks of keyframe images that are not regions. The build makes every such mask a region unless
        it is smaller than ``visibility.min_region_area_frac`` of the image (docs/visibility.md), so this is the
        number of objects that rule kept out of the QA. Counted from the tables, so a split rewritten from the
        shard (stridegen augment) reports the same number."""
        if self.masks is None or len(self.masks) == 0:
            return 0
        image_frame = np.asarray(self.images.frame_index, dtype=np.int64)
        at_keyframe = np.isin(image_frame, np.asarray(self.keyframes.frame_index, dtype=np.int64))
        left_out = at_keyframe[np.asarray(self.masks.image_index, dtype=np.int64)] & np.asarray(
            self.masks.visible, dtype=bool
        )
        if self.regions is not None and len(self.regions):
            left_out[np.asarray(self.regions.mask_index, dtype=np.int64)] = False
        return int(np.count_nonzero(left_out))

    def validate(self) -> None:
        """Check every table's lengths and the cross-table dimensions (frames, cameras, tracks)."""
        for table in self.tables():
            table.validate()
        n_frames, n_cams, n_tracks = len(self.frames), len(self.cameras), len(self.tracks)
        checks = [
            ("tracks/present", self.tracks.present.shape[1:], (n_frames,)),
            ("attributes/velocity_global", self.attributes.velocity_global.shape, (n_tracks, n_frames, 3)),
            ("attributes/ego_velocity_global", self.attributes.ego_velocity_global.shape, (n_frames, 3)),
            ("keyframes/window", self.keyframes.window.shape[1:], self.keyframes.offsets_s.shape),
        ]
        for name, got, want in checks:
            if tuple(got) != tuple(want):
                raise ValueError(f"{name}: shape {tuple(got)} does not match {tuple(want)}")
        for name, idx, bound in (
            ("images/frame_index", self.images.frame_index, n_frames),
            ("images/channel_index", self.images.channel_index, n_cams),
            ("detections/frame_index", self.detections.frame_index, n_frames),
            ("keyframes/frame_index", self.keyframes.frame_index, n_frames),
            *self._vision_indices(n_frames, n_cams, n_tracks),
        ):
            idx = np.asarray(idx)
            if idx.size and (idx.min() < 0 or idx.max() >= bound):
                raise ValueError(f"{name}: index out of range [0, {bound})")

    def _vision_indices(self, n_frames: int, n_cams: int, n_tracks: int) -> list[tuple[str, np.ndarray, int]]:
        """(name, indices, bound) of the masks, regions and QA tables' references into other tables."""
        out: list[tuple[str, np.ndarray, int]] = []
        n_masks = len(self.masks) if self.masks is not None else 0
        if self.masks is not None:
            out += [
                ("masks/image_index", self.masks.image_index, len(self.images)),
                ("masks/track_index", self.masks.track_index, n_tracks),
            ]
        if self.regions is not None:
            out += [
                ("regions/keyframe_index", self.regions.keyframe_index, len(self.keyframes)),
                ("regions/channel_index", self.regions.channel_index, n_cams),
                ("regions/track_index", self.regions.track_index, n_tracks),
                ("regions/mask_index", self.regions.mask_index, n_masks),
            ]
        if self.qa is not None:

            def valid(a: np.ndarray) -> np.ndarray:
                a = np.asarray(a)
                return a[a >= 0]

            out += [
                ("qa/keyframe_index", self.qa.keyframe_index, len(self.keyframes)),
                ("qa/channel_index", self.qa.channel_index, n_cams),
                ("qa/track_index", valid(self.qa.track_index), n_tracks),
                ("qa/frame_indices", valid(self.qa.frame_indices), n_frames),
            ]
        if self.scenarios is not None:
            out += [
                ("scenarios/keyframe_index", self.scenarios.keyframe_index, len(self.keyframes)),
                ("scenarios/track_index", self.scenarios.track_index, n_tracks),
            ]
        return out
