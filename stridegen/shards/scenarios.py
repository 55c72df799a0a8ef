"""Scenario relations of a built scene's spatiotemporal groups, from its stored tables (rules in
stridegen.pipeline.scenario; docs/qa-spatiotemporal.md, "Scenario relations")."""

from __future__ import annotations

import numpy as np

from stridegen.pipeline.scenario import classify_relations
from stridegen.shards.scene_view import SceneView


def scene_relations(scene: SceneView) -> dict[str, str]:
    """group_id -> relation of every spatiotemporal group of ``scene``.

    A group's window is its keyframe's window (``keyframes.window``: the context frames before t0, t0 and the
    horizons); the target is the group's first track (``qa.track_index[:, 0]``), its centre
    ``tracks.center_global`` where ``tracks.present``, the ego poses ``frames.T_global_from_ego``.
    """
    table = scene.qa
    if table is None:
        return {}
    group_ids = np.asarray(table.group_id).astype(str)
    has_group = group_ids != ""
    if not has_group.any():
        return {}
    gids, first = np.unique(group_ids[has_group], return_index=True)
    rows = np.flatnonzero(has_group)[first]
    keyframe = np.asarray(table.keyframe_index)[rows]
    track = np.asarray(table.track_index)[rows, 0]
    window = np.asarray(scene.keyframes.window)[keyframe]  # [G, W], -1 where no frame
    have = window >= 0
    frame = np.where(have, window, 0)
    frames = scene.frames
    times = np.asarray(frames.timestamp_us, dtype=np.int64)
    times_s = np.where(have, (times[frame] - times.min()) * 1e-6, np.nan)
    tracks = scene.tracks
    present = np.asarray(tracks.present)[track[:, None], frame] & have
    centre = np.asarray(tracks.center_global, dtype=np.float64)[track[:, None], frame]
    centre = np.where(present[..., None], centre, np.nan)
    poses = np.asarray(frames.T_global_from_ego, dtype=np.float64)[frame]
    poses = np.where(have[..., None, None], poses, np.nan)
    labels = classify_relations(times_s, centre, poses)
    return dict(zip(gids.tolist(), [str(label) for label in labels.tolist()], strict=True))
