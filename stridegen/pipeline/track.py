"""Center-based multi-object tracker with CenterPoint PubTracker semantics (global-frame BEV centres).

Behaviour follows CenterPoint ``tools/nusc_tracking/pub_tracker.py`` (Yin et al., CVPR 2021):

- each detection's BEV centre is back-projected by ``-velocity * time_lag`` to where it was at the previous frame;
- a detection may only match a track of the same class within a per-class distance gate (the reference's
  "99.9 percentile of the velocity error per 0.5 s": car 4, truck 4, bus 5.5, trailer 3, pedestrian 1,
  motorcycle 13, bicycle 3 metres; a pair matches when distance <= gate);
- greedy matching: detections in descending score order each take the nearest free track;
- unmatched tracks coast by their velocity for up to ``max_age - 1`` frames and are not emitted while coasting;
  a track is emitted only in frames where a detection matched it ("active");
- the tracker is reset at each scene start and ids count from 1 per scene.

Departures from the reference, each fixing a known fault:

- a frame with no detections (or only classes that are not tracked) ages and coasts the tracks instead of wiping
  them (the reference clears all tracks, or crashes indexing ``results[0]``);
- with Hungarian matching, a track whose assigned detection lies outside the gate stays an unmatched track (the
  reference forgets it);
- a coasting track moves by its velocity times the current frame's time lag (the reference reuses the offset of
  the frame the track was last seen in). At a constant frame rate the two agree, except for tracks last seen in a
  scene's first frame: the reference's lag there is 0, so it leaves them in place, and ours moves them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from stridegen.core.boxes import Boxes
from stridegen.core.vocabulary import TRACKING_CLASSES

# CenterPoint NUSCENE_CLS_VELOCITY_ERROR (metres per 0.5 s).
_CLASS_INDEX = {c: i for i, c in enumerate(TRACKING_CLASSES)}

DEFAULT_DISTANCE_GATES_M = {
    "car": 4.0,
    "truck": 4.0,
    "bus": 5.5,
    "trailer": 3.0,
    "pedestrian": 1.0,
    "motorcycle": 13.0,
    "bicycle": 3.0,
}


class TrackerConfig(BaseModel):
    """The center tracker's parameters (the build config's ``tracker`` section extends it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    distance_gates_m: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_DISTANCE_GATES_M))
    max_age: int = Field(3, ge=1)
    matching: Literal["greedy", "hungarian"] = "greedy"


def greedy_match(dist: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Row-greedy assignment: rows in order each take their nearest still-free valid column. Returns [K, 2]."""
    pairs: list[tuple[int, int]] = []
    if dist.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    rows, cols = np.nonzero(valid)
    if rows.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    # Candidates sorted by row, then distance (then column, as argmin takes the first minimum).
    order = np.lexsort((cols, dist[rows, cols], rows))
    taken_cols: set[int] = set()
    done_row = -1
    for r, c in zip(rows[order].tolist(), cols[order].tolist(), strict=True):
        if r == done_row or c in taken_cols:
            continue
        pairs.append((r, c))
        taken_cols.add(c)
        done_row = r
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def hungarian_match(dist: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Minimum-cost assignment restricted to valid pairs (invalid pairs are never returned). Returns [K, 2]."""
    if dist.size == 0 or not valid.any():
        return np.zeros((0, 2), dtype=np.int64)
    from scipy.optimize import linear_sum_assignment  # here: scipy.optimize takes ~0.3 s to import, and the
    # config (which every command loads) imports this module for TrackerConfig

    cost = np.where(valid, dist, 1e18)
    rows, cols = linear_sum_assignment(cost)
    keep = valid[rows, cols]
    return np.stack([rows[keep], cols[keep]], axis=1).astype(np.int64)


class CenterTracker:
    """Stateful tracker for one scene at a time; feed frames in time order with ``step``."""

    def __init__(self, config: TrackerConfig | None = None) -> None:
        self.config = config or TrackerConfig()
        self._gate_per_class = np.array([self.config.distance_gates_m.get(c, 0.0) for c in TRACKING_CLASSES])
        self.reset()

    def reset(self) -> None:
        self.next_id = 1
        self.last_timestamp_s: float | None = None
        # Track state as plain arrays: BEV centre and velocity (global), class, id, frames since last matched.
        self.track_xy = np.zeros((0, 2))
        self.track_vxy = np.zeros((0, 2))
        self.track_class = np.zeros(0, dtype=np.int64)  # index into TRACKING_CLASSES
        self.track_id = np.zeros(0, dtype=object)
        self.track_age = np.zeros(0, dtype=np.int64)

    def step(self, detections_global: Boxes, timestamp_s: float) -> Boxes:
        """Track one frame of detections (global frame). Returns the active tracks with ``track_id`` set."""
        if detections_global.frame != "global":
            raise ValueError(f"the tracker works in the global frame, got boxes in {detections_global.frame!r}")
        time_lag = 0.0 if self.last_timestamp_s is None else float(timestamp_s - self.last_timestamp_s)
        self.last_timestamp_s = float(timestamp_s)

        # Integer class codes (comparing object arrays of strings is slow); -1 = not a tracked class.
        cls_all = np.array([_CLASS_INDEX.get(c, -1) for c in detections_global.label.tolist()], dtype=np.int64)
        tracked = np.flatnonzero(cls_all >= 0)
        order = tracked[np.argsort(-detections_global.score[tracked], kind="stable")]
        dets = detections_global[order]
        cls = cls_all[order]
        velocity_xy = np.nan_to_num(dets.velocity[:, :2])
        back_projected_xy = dets.center[:, :2] - velocity_xy * time_lag

        diff = back_projected_xy[:, None, :] - self.track_xy[None, :, :]
        dist = np.sqrt(diff[..., 0] ** 2 + diff[..., 1] ** 2)
        valid = (dist <= self._gate_per_class[cls][:, None]) & (cls[:, None] == self.track_class[None, :])
        match = (greedy_match if self.config.matching == "greedy" else hungarian_match)(dist, valid)

        n_dets = len(dets)
        det_track = np.full(n_dets, -1, dtype=np.int64)
        det_track[match[:, 0]] = match[:, 1]
        matched_tracks = np.zeros(len(self.track_id), dtype=bool)
        matched_tracks[match[:, 1]] = True

        # Matched detections inherit ids; the rest start new tracks, numbered in score order.
        ids = np.empty(n_dets, dtype=object)
        is_matched = det_track >= 0
        ids[is_matched] = self.track_id[det_track[is_matched]]
        n_new = int(n_dets - is_matched.sum())
        ids[~is_matched] = [str(i) for i in range(self.next_id, self.next_id + n_new)]
        self.next_id += n_new

        # Unmatched tracks coast by their velocity while younger than max_age.
        coast = np.flatnonzero(~matched_tracks & (self.track_age < self.config.max_age))
        self.track_xy = np.concatenate([dets.center[:, :2], self.track_xy[coast] + self.track_vxy[coast] * time_lag])
        self.track_vxy = np.concatenate([velocity_xy, self.track_vxy[coast]])
        self.track_class = np.concatenate([cls, self.track_class[coast]])
        self.track_id = np.concatenate([ids, self.track_id[coast]])
        self.track_age = np.concatenate([np.ones(n_dets, dtype=np.int64), self.track_age[coast] + 1])
        return dets.replace(track_id=ids)


class SceneTracker:
    """The ``center`` tracker backend: a fresh ``CenterTracker`` per scene (``track_scene``)."""

    provides_detections = False  # it tracks the configured detector's boxes
    takes_section_config = True  # its factory takes ``config``: the build's tracker section as a TrackerConfig

    def __init__(self, config: TrackerConfig | None = None) -> None:
        self.config = config or TrackerConfig()

    def track(self, detections_per_frame: Sequence[Boxes], timestamps_s: Sequence[float]) -> list[Boxes]:
        return track_scene(detections_per_frame, timestamps_s, self.config)


def track_scene(
    detections_per_frame: Sequence[Boxes], timestamps_s: Sequence[float], config: TrackerConfig | None = None
) -> list[Boxes]:
    """Track a whole scene (the tracker starts fresh). Returns the active tracks of each frame."""
    if len(detections_per_frame) != len(timestamps_s):
        raise ValueError("one timestamp per frame of detections is needed")
    if np.any(np.diff(np.asarray(timestamps_s, dtype=np.float64)) <= 0):
        raise ValueError("frame timestamps must increase strictly")
    tracker = CenterTracker(config)
    return [tracker.step(d, t) for d, t in zip(detections_per_frame, timestamps_s, strict=True)]
