"""The QA stage of a scene: for every keyframe image, its regions become a QAContext and the generators make
the QA rows; the rows become the shard's ``qa`` table.

Question ids are ``<scene>/k<keyframe>/<channel>/<n>`` (n counts the image's QA), unique in a dataset because
scene names are. One ``numpy.random.Generator`` seeded from (build seed, scene token, "qa") draws every template
and order choice in a fixed order (keyframes, then cameras), so the table is reproducible.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, cast

import numpy as np

from stridegen.core.transforms import invert_transform, transform_points
from stridegen.core.vocabulary import stride_class
from stridegen.pipeline.attributes import SceneAttributes
from stridegen.pipeline.qa.base import CATEGORY_SPATIOTEMPORAL, QAContext, QAItem
from stridegen.pipeline.qa.spatial_predicates import SpatialQAConfig
from stridegen.pipeline.qa.spatiotemporal_inputs import TemporalQAConfig
from stridegen.pipeline.tables import CameraRows, KeyframeRows, RegionRows

QARow = tuple[str, int, int, QAItem]  # (question id, keyframe index, channel index, item)


@dataclass
class QAStageResult:
    rows: list[QARow]  # (question id, keyframe index, channel index, item), in question order
    skipped: Counter = field(default_factory=Counter)  # spatiotemporal groups not made, by reason


@dataclass
class QAImage:
    """What a QA family sees of one keyframe image: its visible regions (``ctx``), the scene's attributes and frame
    times, the keyframe's frame index, and the camera (extrinsic, intrinsic, image size)."""

    scene: str
    keyframe_index: int
    keyframe_frame: int
    channel: str
    ctx: QAContext
    attrs: SceneAttributes
    times_s: np.ndarray
    T_ego_from_cam: np.ndarray
    intrinsic: np.ndarray
    width: int
    height: int


class QAFamily(Protocol):
    """A ``qa_family`` backend (stridegen.core.registry): the items of one keyframe image, and the targets it
    skipped by reason. Families run in the configured order on one shared generator.

    A family may also have ``for_scene(images) -> SceneGenerate``: the scene's draw-independent work done once,
    vectorised over all its images, and a function ``(image position, rng) -> (items, skips)`` that draws from
    ``rng`` exactly what ``generate`` would (the QA stage uses it when present)."""

    name: str

    def generate(self, image: QAImage, rng: np.random.Generator) -> tuple[list[QAItem], dict[str, int]]: ...


SceneGenerate = Callable[[int, np.random.Generator], tuple[list[QAItem], dict[str, int]]]


class QASettings(Protocol):
    """What the QA stage reads of its settings (the build config's ``qa`` section: ``QASection``): which families run
    and the generators' configs, typed when the config was loaded."""

    @property
    def object_spatial(self) -> bool: ...

    @property
    def ego_spatial(self) -> bool: ...

    @property
    def spatiotemporal(self) -> bool: ...

    @property
    def spatial_config(self) -> SpatialQAConfig: ...

    @property
    def temporal_config(self) -> TemporalQAConfig: ...

    @property
    def ego_size_lwh(self) -> tuple[float, float, float]: ...

    @property
    def families(self) -> Sequence[str]: ...


@dataclass(frozen=True, eq=False)
class QAScene:
    """What the QA stage reads of one scene."""

    name: str
    keyframes: KeyframeRows
    cameras: CameraRows
    times_s: np.ndarray  # [F] seconds of each frame since the scene's first
    attrs: SceneAttributes  # the scene's tracks (labels, sizes) and their attributes
    regions: RegionRows  # the marked regions of each keyframe image


def qa_families(config: QASettings) -> list[QAFamily]:
    """The families the build's QA section asks for, in order: spatial (object- and ego-centric predicates share
    one generator call and its per-image cap), spatiotemporal, then ``config.families`` (plugins)."""
    from stridegen.core import registry

    families: list[QAFamily] = []
    if config.object_spatial or config.ego_spatial:
        family = registry.make(
            "qa_family",
            "spatial",
            {
                "config": config.spatial_config,
                "object_centric": config.object_spatial,
                "ego_centric": config.ego_spatial,
            },
        )
        if family.predicates:
            families.append(family)
    if config.spatiotemporal:
        families.append(registry.make("qa_family", "spatiotemporal", {"config": config.temporal_config}))
    families += [registry.make("qa_family", name) for name in config.families]
    return families


def _scene_generate(family: QAFamily, images: list[QAImage]) -> SceneGenerate:
    """The family's per-image call over this scene's images (``for_scene`` when it has one, else ``generate``)."""
    for_scene = getattr(family, "for_scene", None)
    if for_scene is not None:
        return cast(SceneGenerate, for_scene(images))
    return lambda i, rng: family.generate(images[i], rng)


def scene_images(scene: QAScene, ego_size_lwh: tuple[float, float, float]) -> list[tuple[int, QAImage]]:
    """(camera index, QAImage) of every keyframe image with regions, keyframes then cameras in table order.

    Lookups are made once per scene: the STRIDE-QA class of every track, each camera's ego-from-camera inverse,
    the regions grouped by image (one stable sort; a group keeps the regions' table order)."""
    scene_name, cameras, attrs, regions = scene.name, scene.cameras, scene.attrs, scene.regions
    n_cam = len(cameras.channel)
    channels = [str(c) for c in cameras.channel.tolist()]
    track_class = np.array([stride_class(str(label)) or str(label) for label in attrs.tracks.label], dtype=object)
    T_ego_from_cam = [np.asarray(cameras.T_ego_from_sensor[c]) for c in range(n_cam)]
    T_cam_from_ego = [invert_transform(t) for t in T_ego_from_cam]
    region_key = np.asarray(regions.keyframe_index, dtype=np.int64) * max(n_cam, 1) + np.asarray(
        regions.channel_index, dtype=np.int64
    )
    region_id = np.asarray(regions.region_id).astype(np.int64)
    region_track = np.asarray(regions.track_index).astype(np.int64)
    order = np.argsort(region_key, kind="stable")
    keys, starts = np.unique(region_key[order], return_index=True)
    groups = dict(zip(keys.tolist(), np.split(order, starts[1:]), strict=True)) if keys.size else {}
    tracks_size = attrs.tracks.size_lwh
    out: list[tuple[int, QAImage]] = []
    for k, kf_frame in enumerate(np.asarray(scene.keyframes.frame_index).tolist()):
        if not any(k * n_cam + c in groups for c in range(n_cam)):
            continue
        attrs_kf = attrs.in_keyframe(int(kf_frame))
        for c, channel in enumerate(channels):
            sel = groups.get(k * n_cam + c)
            if sel is None:
                continue
            track = region_track[sel]
            center_ego = attrs_kf.position_ego[track, kf_frame]
            ctx = QAContext(
                scene=scene_name,
                keyframe_index=k,
                frame_index=int(kf_frame),
                channel=channel,
                region_id=region_id[sel],
                track_index=track,
                object_class=track_class[track],
                center_ego=center_ego,
                size_lwh=tracks_size[track, kf_frame],
                yaw_ego=attrs_kf.yaw_rel_ego[track, kf_frame],
                center_cam=transform_points(T_cam_from_ego[c], center_ego),
                ego_size_lwh=ego_size_lwh,
            )
            image = QAImage(
                scene_name,
                k,
                int(kf_frame),
                channel,
                ctx,
                attrs,
                scene.times_s,
                T_ego_from_cam[c],
                np.asarray(cameras.intrinsic[c]),
                int(cameras.width[c]),
                int(cameras.height[c]),
            )
            out.append((c, image))
    return out


def generate_scene_qa(scene: QAScene, config: QASettings, rng: np.random.Generator) -> QAStageResult:
    """QA rows of one scene. The images are visited keyframe by keyframe, camera by camera, and each runs the
    families in order on ``rng``."""
    families = qa_families(config)
    located = scene_images(scene, config.ego_size_lwh)
    images = [image for _, image in located]
    generate = [_scene_generate(family, images) for family in families]
    rows: list[QARow] = []
    skipped: Counter = Counter()
    for i, (c, image) in enumerate(located):
        items: list[QAItem] = []
        for family_generate in generate:
            made, skips = family_generate(i, rng)
            items += made
            skipped.update(skips)
        k = image.keyframe_index
        prefix = f"{scene.name}/k{k:03d}/{image.channel}/"
        rows += [(f"{prefix}{n:04d}", k, c, it) for n, it in enumerate(items)]
    return QAStageResult(rows, skipped)


__all__ = [
    "CATEGORY_SPATIOTEMPORAL",
    "QAFamily",
    "QAImage",
    "QARow",
    "QAScene",
    "QASettings",
    "QAStageResult",
    "SceneGenerate",
    "generate_scene_qa",
    "qa_families",
    "scene_images",
]
