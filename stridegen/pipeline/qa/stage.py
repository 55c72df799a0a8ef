"""The QA stage of a scene: for every keyframe image, its regions become a QAContext and the generators make
the QA rows; the rows become the shard's ``qa`` table.

Question ids are ``<scene>/k<keyframe>/<channel>/<n>`` (n counts the image's QA), unique in a dataset because
scene names are. One ``numpy.random.Generator`` seeded from (build seed, scene token, "qa") draws every template
and order choice in a fixed order (keyframes, then cameras), so the table is reproducible.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field

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


def _context(scene_name: str, k: int, kf_frame: int, channel: str, regions_sel: np.ndarray, regions, attrs_kf,
             tracks_label: np.ndarray, tracks_size: np.ndarray, T_cam_from_ego: np.ndarray,
             ego_size_lwh: tuple[float, float, float]) -> QAContext:
    track = np.asarray(regions.track_index)[regions_sel].astype(np.int64)
    center_ego = attrs_kf.position_ego[track, kf_frame]
    return QAContext(
        scene=scene_name, keyframe_index=k, frame_index=kf_frame, channel=channel,
        region_id=np.asarray(regions.region_id)[regions_sel].astype(np.int64), track_index=track,
        object_class=np.array([stride_class(str(tracks_label[t])) or str(tracks_label[t]) for t in track],
                              dtype=object),
        center_ego=center_ego, size_lwh=tracks_size[track, kf_frame], yaw_ego=attrs_kf.yaw_rel_ego[track, kf_frame],
        center_cam=geo.transform_points(T_cam_from_ego, center_ego), ego_size_lwh=ego_size_lwh,
    )


def generate_scene_qa(scene_name: str, keyframes, cameras, times_s: np.ndarray, attrs: SceneAttributes,
                      tracks_label: np.ndarray, regions, config, rng: np.random.Generator) -> QAStageResult:
    """QA rows of one scene. ``config`` is the build's QASection; ``regions`` the scene's regions table."""
    from stridegen.pipeline.qa.spatial import (
        EGO_SPATIAL_PREDICATES,
        OBJECT_SPATIAL_PREDICATES,
        SpatialQAConfig,
        generate_spatial_qa,
    )
    from stridegen.pipeline.qa.spatiotemporal import (
        TemporalQAConfig,
        TemporalTargets,
        generate_spatiotemporal_qa,
    )

    spatial_cfg = SpatialQAConfig(**dict(config.spatial_options))
    # A category switched off leaves the generator (so its share of the per-image cap goes to the others).
    dropped = (set() if config.object_spatial else set(OBJECT_SPATIAL_PREDICATES)) | \
        (set() if config.ego_spatial else set(EGO_SPATIAL_PREDICATES))
    remaining = frozenset(spatial_cfg.predicates) - dropped
    wanted_spatial = bool(remaining)
    if wanted_spatial and dropped:
        spatial_cfg = dataclasses.replace(spatial_cfg, predicates=remaining)
    temporal_cfg = TemporalQAConfig(**dict(config.temporal_options))
    rows: list[QARow] = []
    skipped: Counter = Counter()
    region_key = np.asarray(regions.keyframe_index, dtype=np.int64) * max(len(cameras.channel), 1) + \
        np.asarray(regions.channel_index, dtype=np.int64)
    tracks_size = attrs.tracks.size_lwh
    for k, kf_frame in enumerate(np.asarray(keyframes.frame_index).tolist()):
        attrs_kf = attrs.in_keyframe(int(kf_frame))
        for c, channel in enumerate(cameras.channel.tolist()):
            sel = np.flatnonzero(region_key == k * len(cameras.channel) + c)
            if sel.size == 0:
                continue
            T_cam_from_ego = geo.invert_transform(np.asarray(cameras.T_ego_from_sensor[c]))
            ctx = _context(scene_name, k, int(kf_frame), str(channel), sel, regions, attrs_kf, tracks_label,
                           tracks_size, T_cam_from_ego, tuple(config.ego_size_lwh))
            items: list[QAItem] = []
            if wanted_spatial:
                items += generate_spatial_qa(ctx, rng, spatial_cfg)
            if config.spatiotemporal:
                targets = TemporalTargets(
                    scene=scene_name, keyframe_index=k, channel=str(channel), region_id=ctx.region_id,
                    track_index=ctx.track_index, object_class=ctx.object_class,
                    T_ego_from_cam=np.asarray(cameras.T_ego_from_sensor[c]),
                    intrinsic=np.asarray(cameras.intrinsic[c]), width=int(cameras.width[c]),
                    height=int(cameras.height[c]))
                temporal, skips = generate_spatiotemporal_qa(attrs, times_s, int(kf_frame), targets, rng,
                                                             temporal_cfg)
                items += temporal
                skipped.update(skips)
            rows += [(f"{scene_name}/k{k:03d}/{channel}/{n:04d}", k, c, it) for n, it in enumerate(items)]
    return QAStageResult(rows, skipped)


__all__ = ["CATEGORY_SPATIOTEMPORAL", "QARow", "QAStageResult", "generate_scene_qa"]
