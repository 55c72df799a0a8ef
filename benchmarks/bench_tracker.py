"""Tracker speed: stridegen's CenterTracker against the plain loop-by-loop reference, same inputs, same assignments.

    .venv/bin/python benchmarks/bench_tracker.py [--scenes 20] [--frames 40] [--objects 60]

Prints frames per second of each and the ratio; exits non-zero if any frame's assignments differ.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: reference

from reference.plain_tracker import PlainTracker
from stridegen.core.boxes import Boxes
from stridegen.pipeline.track import track_scene

CLASSES = ["car", "pedestrian", "bicycle", "truck", "bus", "motorcycle", "barrier"]


def make_scene(rng: np.random.Generator, frames: int, objects: int) -> list[list[tuple]]:
    pos = rng.uniform(-60, 60, (objects, 2))
    vel = rng.normal(0, 4, (objects, 2))
    labels = rng.choice(CLASSES, objects)
    out = []
    for k in range(frames):
        rows = []
        for i in range(objects):
            if rng.random() < 0.9:
                p = pos[i] + vel[i] * 0.5 * k + rng.normal(0, 0.2, 2)
                rows.append(
                    (
                        p[0],
                        p[1],
                        vel[i, 0] + rng.normal(0, 0.3),
                        vel[i, 1] + rng.normal(0, 0.3),
                        str(labels[i]),
                        float(rng.uniform(0.05, 1.0)),
                    )
                )
        for _ in range(rng.poisson(3)):  # false positives
            p = rng.uniform(-60, 60, 2)
            rows.append((p[0], p[1], 0.0, 0.0, str(rng.choice(CLASSES)), float(rng.uniform(0.05, 0.4))))
        out.append(rows)
    return out


def to_boxes(rows: list[tuple]) -> Boxes:
    if not rows:
        return Boxes.empty("global")
    a = np.array([r[:4] for r in rows], dtype=float)
    n = len(rows)
    return Boxes(
        np.c_[a[:, :2], np.zeros(n)],
        np.tile([4.0, 2.0, 1.5], (n, 1)),
        np.zeros(n),
        a[:, 2:4],
        label=[r[4] for r in rows],
        score=[r[5] for r in rows],
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenes", type=int, default=20)
    ap.add_argument("--frames", type=int, default=40)
    ap.add_argument("--objects", type=int, default=60)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    scenes = [make_scene(rng, args.frames, args.objects) for _ in range(args.scenes)]
    boxes = [[to_boxes(f) for f in s] for s in scenes]
    dicts = [[[dict(x=r[0], y=r[1], vx=r[2], vy=r[3], label=r[4], score=r[5]) for r in f] for f in s] for s in scenes]
    times = [0.5 * k for k in range(args.frames)]

    t0 = time.perf_counter()
    ours = [track_scene(b, times) for b in boxes]
    t_ours = time.perf_counter() - t0

    t0 = time.perf_counter()
    ref = []
    for s in dicts:
        tracker = PlainTracker()
        ref.append([tracker.step(f, t) for f, t in zip(s, times, strict=True)])
    t_ref = time.perf_counter() - t0

    mismatches = 0
    for s_ours, s_ref in zip(ours, ref, strict=True):
        for o, r in zip(s_ours, s_ref, strict=True):
            got = sorted(zip(o.center[:, 0].round(9).tolist(), o.track_id.tolist(), strict=True))
            want = sorted((round(d["x"], 9), d["id"]) for d in r)
            mismatches += got != want
    n_frames = args.scenes * args.frames
    dets = sum(len(f) for s in scenes for f in s)
    print(f"{args.scenes} scenes x {args.frames} frames, {dets / n_frames:.1f} detections per frame")
    print(f"stridegen CenterTracker: {n_frames / t_ours:10.1f} frames/s ({t_ours:.3f} s)")
    print(f"plain reference:         {n_frames / t_ref:10.1f} frames/s ({t_ref:.3f} s)")
    print(f"ratio: {t_ref / t_ours:.1f}x; frames with different assignments: {mismatches}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
