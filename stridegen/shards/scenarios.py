"""Scenario relations of a scene's spatiotemporal groups (rules in stridegen.pipeline.scenario; docs/scenarios.md).

The build labels every group once and stores the labels as the ``scenarios`` table (schema v4,
``scenarios_table``); readers and exporters take them from there (``scene_relations``). A shard older than v4 has
no such table: its groups are labelled on read from its stored tables, with the same rules and inputs, so both
give the same labels.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from stridegen.pipeline.scenario import classify_relations
from stridegen.shards.schema import (
    FramesTable,
    KeyframesTable,
    QATable,
    ScenariosTable,
    TracksTable,
    str_array,
)


class _SceneTables(Protocol):
    """What the labels are made from: a SceneRecord (at build time) or a SceneView (on read)."""

    @property
    def qa(self) -> QATable | None: ...

    @property
    def keyframes(self) -> KeyframesTable: ...

    @property
    def frames(self) -> FramesTable: ...

    @property
    def tracks(self) -> TracksTable: ...


def scenarios_table(scene: _SceneTables) -> ScenariosTable | None:
    """The relation of every spatiotemporal group of ``scene``, one row per group id (sorted); None without QA.

    A group's window is its keyframe's window (``keyframes.window``: the context frames before t0, t0 and the
    horizons); the target is the group's first track (``qa.track_index[:, 0]``), its centre
    ``tracks.center_global`` where ``tracks.present``, the ego poses ``frames.T_global_from_ego``; times are
    seconds from the scene's first frame.
    """
    table = scene.qa
    if table is None:
        return None
    group_ids = np.asarray(table.group_id).astype(str)
    has_group = group_ids != ""
    gids, first = np.unique(group_ids[has_group], return_index=True)
    rows = np.flatnonzero(has_group)[first]
    keyframe = np.asarray(table.keyframe_index, dtype=np.int64)[rows]
    track = np.zeros(0, dtype=np.int64)
    labels = np.empty(0, dtype=str)
    if gids.size:  # (a scene without QA stores an empty table, whatever the shape of its empty columns)
        track = np.asarray(table.track_index, dtype=np.int64)[rows, 0]
        window = np.asarray(scene.keyframes.window, dtype=np.int64)[keyframe]  # [G, W], -1 where no frame
        have = window >= 0
        frame = np.where(have, window, 0)
        frames = scene.frames
        times = np.asarray(frames.timestamp_us, dtype=np.int64)
        times_s = np.where(have, (times[frame] - times.min()) * 1e-6, np.nan)
        tracks = scene.tracks
        present = np.asarray(tracks.present, dtype=bool)[track[:, None], frame] & have
        centre = np.asarray(tracks.center_global, dtype=np.float64)[track[:, None], frame]
        centre = np.where(present[..., None], centre, np.nan)
        poses = np.asarray(frames.T_global_from_ego, dtype=np.float64)[frame]
        poses = np.where(have[..., None, None], poses, np.nan)
        labels = classify_relations(times_s, centre, poses)
    return ScenariosTable(
        group_id=str_array(gids.tolist()),
        keyframe_index=keyframe.astype(np.int32),
        track_index=track.astype(np.int32),
        relation=str_array(labels.tolist()),
    )


def scene_relations(scene: _SceneTables) -> dict[str, str]:
    """group_id -> relation of every spatiotemporal group of ``scene``: the stored ``scenarios`` table (schema
    v4), else labelled now from the scene's tables (``scenarios_table``; shards older than v4)."""
    stored = getattr(scene, "scenarios", None)
    table = stored if stored is not None else scenarios_table(scene)
    if table is None:
        return {}
    return dict(zip(table.group_id.astype(str).tolist(), table.relation.astype(str).tolist(), strict=True))


__all__ = ["scenarios_table", "scene_relations"]
