"""The QA stage of a scene: for every keyframe image, its regions become a QAContext and the generators make
the QA rows; the rows become the shard's ``qa`` table.

Question ids are ``<scene>/k<keyframe>/<channel>/<n>`` (n counts the image's QA), unique in a dataset because
scene names are. One ``numpy.random.Generator`` seeded from (build seed, scene token, "qa") draws every template
and order choice in a fixed order (keyframes, then cameras), so the table is reproducible.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from stridegen.core import geometry as geo
from stridegen.core.vocabulary import stride_class
from stridegen.pipeline.attributes import SceneAttributes
from stridegen.pipeline.qa.base import CATEGORY_SPATIOTEMPORAL, QAContext, QAItem

QARow = tuple[str, int, int, QAItem]  # (question id, keyframe index, channel index, item)


@dataclass
class QAStageResult:
    rows: list[QARow]  # (question id, keyframe index, channel index, item), in question order
    skipped: Counter = field(default_factory=Counter)  # spatiotemporal groups not made, by reason


def _context(
    scene_name: str,
    k: int,
    kf_frame: int,
    channel: str,
    regions_sel: np.ndarray,
    regions,
    attrs_kf,
    tracks_label: np.ndarray,
    tracks_size: np.ndarray,
    T_cam_from_ego: np.ndarray,
    ego_size_lwh: tuple[float, float, float],
) -> QAContext:
    track = np.asarray(regions.track_index)[regions_sel].astype(np.int64)
    center_ego = attrs_kf.position_ego[track, kf_frame]
    return QAContext(
        scene=scene_name,
        keyframe_index=k,
        frame_index=kf_frame,
        channel=channel,
        region_id=np.asarray(regions.region_id)[regions_sel].astype(np.int64),
        track_index=track,
        object_class=np.array(
            [stride_class(str(tracks_label[t])) or str(tracks_label[t]) for t in track], dtype=object
        ),
        center_ego=center_ego,
        size_lwh=tracks_size[track, kf_frame],
        yaw_ego=attrs_kf.yaw_rel_ego[track, kf_frame],
        center_cam=geo.transform_points(T_cam_from_ego, center_ego),
        ego_size_lwh=ego_size_lwh,
    )


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
    skipped by reason. Families run in the configured order on one shared generator."""

    name: str

    def generate(self, image: QAImage, rng: np.random.Generator) -> tuple[list[QAItem], dict[str, int]]: ...


def qa_families(config: Any) -> list[QAFamily]:
    """The families the build's QA section asks for, in order: spatial (object- and ego-centric predicates share
    one generator call and its per-image cap), spatiotemporal, then ``config.families`` (plugins)."""
    from stridegen.core import registry

    families: list[QAFamily] = []
    if config.object_spatial or config.ego_spatial:
        family = registry.make(
            "qa_family",
            "spatial",
            {
                "config": config.spatial_config(),
                "object_centric": config.object_spatial,
                "ego_centric": config.ego_spatial,
            },
        )
        if family.predicates:
            families.append(family)
    if config.spatiotemporal:
        families.append(registry.make("qa_family", "spatiotemporal", {"config": config.temporal_config()}))
    families += [registry.make("qa_family", name) for name in config.families]
    return families


def generate_scene_qa(
    scene_name: str,
    keyframes: Any,
    cameras: Any,
    times_s: np.ndarray,
    attrs: SceneAttributes,
    tracks_label: np.ndarray,
    regions: Any,
    config: Any,
    rng: np.random.Generator,
) -> QAStageResult:
    """QA rows of one scene. ``config`` is the build's QASection; ``regions`` the scene's regions."""
    families = qa_families(config)
    rows: list[QARow] = []
    skipped: Counter = Counter()
    region_key = np.asarray(regions.keyframe_index, dtype=np.int64) * max(len(cameras.channel), 1) + np.asarray(
        regions.channel_index, dtype=np.int64
    )
    tracks_size = attrs.tracks.size_lwh
    for k, kf_frame in enumerate(np.asarray(keyframes.frame_index).tolist()):
        attrs_kf = attrs.in_keyframe(int(kf_frame))
        for c, channel in enumerate(cameras.channel.tolist()):
            sel = np.flatnonzero(region_key == k * len(cameras.channel) + c)
            if sel.size == 0:
                continue
            T_cam_from_ego = geo.invert_transform(np.asarray(cameras.T_ego_from_sensor[c]))
            ctx = _context(
                scene_name,
                k,
                int(kf_frame),
                str(channel),
                sel,
                regions,
                attrs_kf,
                tracks_label,
                tracks_size,
                T_cam_from_ego,
                tuple(config.ego_size_lwh),
            )
            image = QAImage(
                scene_name,
                k,
                int(kf_frame),
                str(channel),
                ctx,
                attrs,
                times_s,
                np.asarray(cameras.T_ego_from_sensor[c]),
                np.asarray(cameras.intrinsic[c]),
                int(cameras.width[c]),
                int(cameras.height[c]),
            )
            items: list[QAItem] = []
            for family in families:
                made, skips = family.generate(image, rng)
                items += made
                skipped.update(skips)
            rows += [(f"{scene_name}/k{k:03d}/{channel}/{n:04d}", k, c, it) for n, it in enumerate(items)]
    return QAStageResult(rows, skipped)


__all__ = [
    "CATEGORY_SPATIOTEMPORAL",
    "QAFamily",
    "QAImage",
    "QARow",
    "QAStageResult",
    "generate_scene_qa",
    "qa_families",
]
