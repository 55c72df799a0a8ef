"""A plain, loop-by-loop center tracker with PubTracker semantics, as the reference for stridegen's tracker.

Written for clarity, not speed: one Python dict per track, one loop per detection. It mirrors the semantics of
CenterPoint's pub_tracker.py (greedy matching in the given detection order, class gate, distance gate,
velocity back-projection, max_age coasting, only matched tracks emitted) with stridegen's three fixes (empty frames
coast instead of wiping, non-tracked-only frames do not crash, coasting uses the current time lag). Detections are
sorted by descending score first, as stridegen does.
"""

from __future__ import annotations

import math

TRACKING_CLASSES = ("bicycle", "bus", "car", "motorcycle", "pedestrian", "trailer", "truck")
GATES = {"car": 4.0, "truck": 4.0, "bus": 5.5, "trailer": 3.0, "pedestrian": 1.0, "motorcycle": 13.0, "bicycle": 3.0}


class PlainTracker:
    def __init__(self, max_age: int = 3) -> None:
        self.max_age = max_age
        self.tracks: list[dict] = []
        self.next_id = 1
        self.last_t: float | None = None

    def step(self, detections: list[dict], t: float) -> list[dict]:
        """detections: dicts with x, y, vx, vy, label, score. Returns matched/new detections with 'id'."""
        lag = 0.0 if self.last_t is None else t - self.last_t
        self.last_t = t
        dets = [d for d in detections if d["label"] in TRACKING_CLASSES]
        dets = sorted(dets, key=lambda d: -d["score"])
        taken: set[int] = set()
        out = []
        for d in dets:
            px = d["x"] - d["vx"] * lag
            py = d["y"] - d["vy"] * lag
            best, best_dist = -1, math.inf
            for j, tr in enumerate(self.tracks):
                if j in taken or tr["label"] != d["label"]:
                    continue
                dist = math.hypot(px - tr["x"], py - tr["y"])
                if dist <= GATES[d["label"]] and dist < best_dist:
                    best, best_dist = j, dist
            new = dict(d)
            if best >= 0:
                taken.add(best)
                new["id"] = self.tracks[best]["id"]
            else:
                new["id"] = str(self.next_id)
                self.next_id += 1
            new["age"] = 1
            out.append(new)
        coasting = []
        for j, tr in enumerate(self.tracks):
            if j not in taken and tr["age"] < self.max_age:
                moved = dict(tr)
                moved["x"] += tr["vx"] * lag
                moved["y"] += tr["vy"] * lag
                moved["age"] = tr["age"] + 1
                coasting.append(moved)
        self.tracks = out + coasting
        return out
