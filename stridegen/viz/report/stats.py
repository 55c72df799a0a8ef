"""One pass over a built dataset's tables: the counts, histograms and funnels the report shows.

Everything is aggregated while reading, scene by scene (each scene's views are closed after use): QA counts per
category, class and predicate, fixed-bin histograms of the answers' values per class, yes/no counts per
predicate, and the visibility filter's funnel per class and distance band. Memory stays bounded by the bins, not
by the number of QA, so a dataset of millions of questions is summarised in one streaming read of its tables.

The distributions are those of the ground-truth answers (the QA ``gt_value`` of one predicate each):
distance ``ego_distance`` (m), bearing ``ego_heading_angle`` (deg, 0 ahead, counter-clockwise positive), clock
``ego_clock_direction``, speed ``target_speed_data`` at the keyframe (m/s), and object size ``region_length``,
``width``, ``height`` (m). The class is the QA's ``object_class`` (the STRIDE-QA class of its first region).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stridegen.core.vocabulary import stride_class
from stridegen.shards.reader import Dataset
from stridegen.shards.scenarios import scene_relations
from stridegen.shards.scene_view import SceneView

SPATIOTEMPORAL = "spatiotemporal"
# The visibility filter's steps, in the order the report's funnel applies them (docs/visibility.md).
FUNNEL_STEPS: tuple[str, ...] = ("candidates", "box IoU", "coverage", "quality", "visible")
# Distance bands of the funnel, by the camera-frame depth of the box centre (masks table ``depth_m``).
DEPTH_BANDS_M: tuple[float, ...] = (0.0, 10.0, 20.0, 30.0, 50.0, math.inf)


@dataclass(frozen=True)
class DistributionSpec:
    """One histogram: the QA predicate whose ``gt_value`` it counts, bin edges and axis label. Values at or beyond
    the last edge fall in the last bin (shown as ">= edge"), values below the first in the first."""

    key: str
    predicate: str
    label: str
    edges: tuple[float, ...]


def _edges(start: float, stop: float, step: float) -> tuple[float, ...]:
    n = round((stop - start) / step)
    return tuple(round(start + i * step, 6) for i in range(n + 1))


DISTRIBUTIONS: tuple[DistributionSpec, ...] = (
    DistributionSpec("distance", "ego_distance", "distance to the ego vehicle (m)", _edges(0, 80, 2.5)),
    DistributionSpec("bearing", "ego_heading_angle", "bearing (deg, 0 = ahead, left positive)", _edges(-180, 180, 15)),
    DistributionSpec("clock", "ego_clock_direction", "clock direction (o'clock)", _edges(0.5, 12.5, 1)),
    DistributionSpec("speed", "target_speed_data", "speed over ground at the keyframe (m/s)", _edges(0, 30, 1)),
    DistributionSpec("length", "region_length", "object length (m)", _edges(0, 20, 0.5)),
    DistributionSpec("width", "width", "object width (m)", _edges(0, 5, 0.125)),
    DistributionSpec("height", "height", "object height (m)", _edges(0, 5, 0.125)),
)
SIZE_KEYS: tuple[str, ...] = ("length", "width", "height")


@dataclass
class Histogram:
    """Counts per class over fixed bins."""

    spec: DistributionSpec
    counts: dict[str, np.ndarray] = field(default_factory=dict)
    sums: dict[str, np.ndarray] = field(default_factory=dict)  # class -> [n, sum, sum of squares]

    def add(self, values: np.ndarray, classes: np.ndarray) -> None:
        values = np.asarray(values, dtype=np.float64)
        keep = np.isfinite(values)
        values, classes = values[keep], classes[keep]
        edges = np.asarray(self.spec.edges)
        bins = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, len(edges) - 2)
        for cls in np.unique(classes).tolist():
            sel = classes == cls
            counts = np.bincount(bins[sel], minlength=len(edges) - 1)
            v = values[sel]
            moments = np.array([v.size, v.sum(), np.square(v).sum()])
            self.counts[cls] = self.counts.get(cls, 0) + counts
            self.sums[cls] = self.sums.get(cls, 0) + moments

    def total(self) -> int:
        return int(sum(int(c.sum()) for c in self.counts.values()))

    def mean_sd(self, cls: str) -> tuple[int, float, float]:
        """(n, mean, sample standard deviation) of the exact values (not the bins) of one class."""
        n, s, ss = (float(x) for x in self.sums.get(cls, np.zeros(3)))
        if n == 0:
            return 0, math.nan, math.nan
        mean = s / n
        var = (ss - n * mean * mean) / (n - 1) if n > 1 else math.nan
        return int(n), mean, math.sqrt(max(var, 0.0)) if not math.isnan(var) else math.nan


@dataclass
class Funnel:
    """Masks remaining after each visibility step, per group (class or distance band): [len(FUNNEL_STEPS)]."""

    rows: dict[str, np.ndarray] = field(default_factory=dict)

    def add(self, group: str, steps: np.ndarray) -> None:
        self.rows[group] = self.rows.get(group, np.zeros(len(FUNNEL_STEPS), dtype=np.int64)) + steps

    def total(self) -> np.ndarray:
        return sum(self.rows.values(), np.zeros(len(FUNNEL_STEPS), dtype=np.int64))


@dataclass
class SceneRow:
    """One scene's counts (the manifest's, plus its cameras from the shard)."""

    name: str
    cameras: int
    counts: dict[str, int]
    megabytes: float


@dataclass
class DatasetStats:
    """What the overview, distributions and visibility sections show."""

    name: str
    manifest: dict[str, Any]
    scenes: list[SceneRow] = field(default_factory=list)
    cameras: list[str] = field(default_factory=list)
    qa_by_category: Counter = field(default_factory=Counter)
    qa_by_category_class: Counter = field(default_factory=Counter)  # (category, class) -> n
    qa_by_predicate: Counter = field(default_factory=Counter)
    predicate_category: dict[str, str] = field(default_factory=dict)
    samples_by_category: Counter = field(default_factory=Counter)  # images (spatial) or groups (spatiotemporal)
    labels_by_predicate: dict[str, Counter] = field(default_factory=dict)  # predicate -> gt_label -> n
    histograms: dict[str, Histogram] = field(default_factory=dict)
    funnel_by_class: Funnel = field(default_factory=Funnel)
    funnel_by_band: Funnel = field(default_factory=Funnel)
    groups_by_scenario: Counter = field(default_factory=Counter)  # scenario relation -> spatiotemporal groups
    qa_by_scenario: Counter = field(default_factory=Counter)  # scenario relation -> spatiotemporal QA
    scenes_labelled_on_read: int = 0  # scenes of shards older than schema v4 (no scenarios table)

    @property
    def totals(self) -> dict[str, Any]:
        return dict(self.manifest.get("totals", {}))

    @property
    def qa_total(self) -> int:
        return int(sum(self.qa_by_category.values()))

    @property
    def classes(self) -> list[str]:
        return sorted({cls for _, cls in self.qa_by_category_class})

    @property
    def categories(self) -> list[str]:
        return sorted(self.qa_by_category)


def band_name(lo: float, hi: float) -> str:
    return f">= {lo:g} m" if math.isinf(hi) else f"{lo:g}-{hi:g} m"


def _strings(values: np.ndarray) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = [str(v) for v in values]
    return out


def _columns(scene: SceneView, group: str, names: tuple[str, ...]) -> dict[str, np.ndarray] | None:
    """Only the named datasets of a table (each read and checked on its own; the questions' text and the masks'
    RLE, the largest columns, are never read), or None when the scene has no such table."""
    if group not in scene.table_names:
        return None
    return {n: scene.array(f"{group}/{n}") for n in names}


_QA_COLUMNS = (
    "category",
    "predicate",
    "object_class",
    "group_id",
    "keyframe_index",
    "channel_index",
    "gt_label",
    "gt_value",
    "horizon_s",
)
_MASK_COLUMNS = ("pass_box_iou", "pass_coverage", "pass_quality", "visible", "track_index", "depth_m")


def _add_qa(stats: DatasetStats, scene: SceneView) -> None:
    qa = _columns(scene, "qa", _QA_COLUMNS)
    if qa is None or len(qa["category"]) == 0:
        return
    category, predicate, cls = _strings(qa["category"]), _strings(qa["predicate"]), _strings(qa["object_class"])
    stats.qa_by_category.update(category.tolist())
    stats.qa_by_category_class.update(zip(category.tolist(), cls.tolist(), strict=True))
    stats.qa_by_predicate.update(predicate.tolist())
    for p, c in set(zip(predicate.tolist(), category.tolist(), strict=True)):  # a predicate belongs to one category
        stats.predicate_category.setdefault(p, c)
    spatiotemporal = category == SPATIOTEMPORAL
    groups = {str(g) for g in np.asarray(qa["group_id"])[spatiotemporal]}
    stats.samples_by_category[SPATIOTEMPORAL] += len(groups)
    if groups:
        _add_scenarios(stats, scene, _strings(qa["group_id"])[spatiotemporal])
    images = np.asarray(qa["keyframe_index"], dtype=np.int64) * 1000 + np.asarray(qa["channel_index"], dtype=np.int64)
    for cat in {c for c in category.tolist() if c != SPATIOTEMPORAL}:
        stats.samples_by_category[cat] += len(np.unique(images[category == cat]))
    labels = _strings(qa["gt_label"])
    labelled = labels != ""
    for p, lab in zip(predicate[labelled].tolist(), labels[labelled].tolist(), strict=True):
        stats.labels_by_predicate.setdefault(p, Counter())[lab] += 1
    values = np.asarray(qa["gt_value"], dtype=np.float64)
    keyframe_time = np.asarray(qa["horizon_s"]) == 0
    for spec in DISTRIBUTIONS:
        sel = (predicate == spec.predicate) & keyframe_time
        if sel.any():
            stats.histograms.setdefault(spec.key, Histogram(spec)).add(values[sel], cls[sel])


def _add_scenarios(stats: DatasetStats, scene: SceneView, group_ids: np.ndarray) -> None:
    """Groups and QA per scenario relation: the shard's scenarios table (schema v4), or the groups labelled now
    from the scene's tables (older shards; stridegen.shards.scenarios). ``group_ids``: one per spatiotemporal QA."""
    stored = _columns(scene, "scenarios", ("group_id", "relation"))
    if stored is None:
        stats.scenes_labelled_on_read += 1
        relation = scene_relations(scene)
    else:
        relation = dict(zip(_strings(stored["group_id"]).tolist(), _strings(stored["relation"]).tolist(), strict=True))
    per_qa = [relation.get(g, "") or "(unlabelled)" for g in group_ids.tolist()]
    stats.qa_by_scenario.update(per_qa)
    stats.groups_by_scenario.update(relation.get(g, "") or "(unlabelled)" for g in set(group_ids.tolist()))


def _add_masks(stats: DatasetStats, scene: SceneView) -> None:
    masks = _columns(scene, "masks", _MASK_COLUMNS)
    if masks is None or len(masks["visible"]) == 0:
        return
    box = np.asarray(masks["pass_box_iou"], dtype=bool)
    cov = box & np.asarray(masks["pass_coverage"], dtype=bool)
    qual = cov & np.asarray(masks["pass_quality"], dtype=bool)
    visible = np.asarray(masks["visible"], dtype=bool)
    steps = np.stack([np.ones_like(box), box, cov, qual, visible], axis=1).astype(np.int64)  # [M, 5]
    track_class = {label: stride_class(label) or label for label in map(str, scene.array("tracks/label"))}
    labels = _strings(scene.array("tracks/label"))[np.asarray(masks["track_index"], dtype=np.int64)]
    classes = np.array([track_class[x] for x in labels], dtype=object)
    for cls in np.unique(classes).tolist():
        stats.funnel_by_class.add(cls, steps[classes == cls].sum(axis=0))
    depth = np.asarray(masks["depth_m"], dtype=np.float64)
    for lo, hi in itertools.pairwise(DEPTH_BANDS_M):
        sel = (depth >= lo) & (depth < hi)
        if sel.any():
            stats.funnel_by_band.add(band_name(lo, hi), steps[sel].sum(axis=0))


def collect_stats(dataset: Dataset, on_scene: Callable[[int, int], None] | None = None) -> DatasetStats:
    """Read every scene's QA, masks, tracks and cameras tables once (no images) and aggregate them;
    ``on_scene(done, total)`` after each scene."""
    manifest = dataset.manifest
    stats = DatasetStats(name=dataset.root.name, manifest=manifest)
    cameras: dict[str, None] = {}
    for shard in manifest["shards"]:  # the writer puts one scene in each shard: its counts are the scene's
        for name in shard["scenes"]:
            scene = dataset.scene(name)
            try:
                channels = [str(c) for c in scene.array("cameras/channel")]
                cameras.update(dict.fromkeys(channels))
                counts = {k: int(v) for k, v in shard.get("counts", {}).items() if "/" not in k}
                stats.scenes.append(SceneRow(name, len(channels), counts, int(shard["bytes"]) / 1e6))
                _add_qa(stats, scene)
                _add_masks(stats, scene)
            finally:
                scene.close()
            if on_scene is not None:
                on_scene(len(stats.scenes), len(dataset))
    stats.cameras = list(cameras)
    return stats
