"""CPU time of the build's per-keyframe parts (requests, hull rasters, visibility, edge alignment) inside a real build.

    .venv/bin/python benchmarks/bench_build_parts.py --rounds 5                   # this checkout only
    .venv/bin/python benchmarks/bench_build_parts.py --rounds 5 --base /tmp/base  # against another checkout

Each round runs, per variant (this checkout, and with ``--base TREE`` that checkout's code through ``PYTHONPATH``),
a child process that builds the default log (``DEFAULT_SYNTHETIC``: 3 scenes x 20 s at 800x450, 45 keyframes,
``workers=1``) twice in-process: a warm-up build (imports, caches), then the timed one. In the timed build the
functions below are wrapped, each accumulating the CPU time (``time.process_time``, this process) spent inside it:

- ``frame_requests`` (each step of the generator, as the segment stage calls it: the requests of a frame's
  images, the LiDAR sweep's read included), ``make_request`` (where a checkout's ``frame_requests`` calls it),
  and ``_lidar_evidence``;
- ``polygon_crops`` (as ``pipeline.segment.base`` and ``pipeline.segment.request`` call it: the hull rasters,
  made inside ``frame_requests`` or when the segmenter first asks for them, depending on the checkout);
  ``requests + hull rasters`` is ``frame_requests`` plus the ``polygon_crops`` made outside it, the figure to
  compare across checkouts;
- ``LidarThrough._measured`` (the segmenter's through-the-box tests);
- ``measure_visibility`` (as the segment stage calls it), and inside it ``EdgeAlignment.score``.

The variants run in alternated order, round by round; every child runs single-threaded (``THREAD_ENV``). Printed:
the exact command, then per part the CPU seconds per build, min / median / max over the rounds, for each variant.
Each child checks that its shards are byte-identical to the other variant's.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from single_thread import THREAD_ENV  # benchmarks/ is the script's folder

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
from pathlib import Path

import cv2

cv2.setNumThreads(1)
from stridegen.jobs.build import run_build
from stridegen.logs.synthetic.default import ensure_default_log
from stridegen.pipeline.segment import base, request, stage
from stridegen.pipeline.segment.edge_alignment import EdgeAlignment
from stridegen.run.config import load_build_config

spent = {}
in_requests = [False]


def timed(name, fn):
    def wrapper(*args, **kwargs):
        t0 = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            dt = time.process_time() - t0
            spent[name] = spent.get(name, 0.0) + dt
            if name == "polygon_crops" and not in_requests[0]:  # made when the segmenter first asks
                spent["requests + hull rasters"] = spent.get("requests + hull rasters", 0.0) + dt
    return wrapper


def timed_iter(name, fn):  # a generator function: the time of each step (the requests are made there)
    def wrapper(*args, **kwargs):
        steps = fn(*args, **kwargs)
        while True:
            t0 = time.process_time()
            in_requests[0] = True
            try:
                item = next(steps)
            except StopIteration:
                return
            finally:
                in_requests[0] = False
                dt = time.process_time() - t0
                spent[name] = spent.get(name, 0.0) + dt
                spent["requests + hull rasters"] = spent.get("requests + hull rasters", 0.0) + dt
            yield item
    return wrapper


log, out = ensure_default_log(progress=False), Path(sys.argv[1])
cfg = load_build_config(None, [])
run_build(log, out / "warm", cfg)
stage.frame_requests = timed_iter("frame_requests", stage.frame_requests)
request.make_request = timed("make_request", request.make_request)
request._lidar_evidence = timed("_lidar_evidence", request._lidar_evidence)
base.polygon_crops = timed("polygon_crops", base.polygon_crops)
if hasattr(request, "polygon_crops"):  # a frame's hull rasters in one batch (frame_requests)
    request.polygon_crops = timed("polygon_crops", request.polygon_crops)
request.LidarThrough._measured = timed("LidarThrough._measured", request.LidarThrough._measured)
stage.measure_visibility = timed("measure_visibility", stage.measure_visibility)
EdgeAlignment.score = timed("EdgeAlignment.score", EdgeAlignment.score)
t0 = time.process_time()
run_build(log, out / "timed", cfg)
spent["whole build (in-process)"] = time.process_time() - t0
manifest = json.loads((out / "timed" / "manifest.json").read_text())
print(json.dumps({"spent": spent, "shards": [s["sha256"] for s in manifest["shards"]]}))
"""

PARTS = (
    "requests + hull rasters",
    "frame_requests",
    "make_request",
    "_lidar_evidence",
    "polygon_crops",
    "LidarThrough._measured",
    "measure_visibility",
    "EdgeAlignment.score",
    "whole build (in-process)",
)


def run_child(tree: Path, tmp: Path) -> dict:
    env = {**os.environ, **THREAD_ENV, "PYTHONPATH": str(tree)}
    out = Path(tempfile.mkdtemp(dir=tmp))
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(out)], cwd=tmp, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"child for {tree} exited {done.returncode}:\n{done.stderr[-3000:]}")
    result: dict = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--base", type=Path, default=None, help="another checkout (a git worktree) to compare with")
    args = parser.parse_args()
    print("command:", shlex.join([sys.executable, *sys.argv]))
    trees = {"this checkout": ROOT}
    if args.base is not None:
        trees["base"] = args.base.resolve()
    figures: dict[str, dict[str, list[float]]] = {name: {p: [] for p in PARTS} for name in trees}
    shards: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-parts-") as tmp:
        for r in range(args.rounds):
            names = list(trees) if r % 2 == 0 else list(reversed(trees))
            for name in names:
                result = run_child(trees[name], Path(tmp))
                shards[name] = result["shards"]
                for p in PARTS:
                    figures[name][p].append(result["spent"].get(p, 0.0))
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    print(f"CPU seconds per default build (45 keyframes), min / median / max over {args.rounds} rounds:")
    print(f"{'part':28s}" + "".join(f"{name:>26s}" for name in trees))
    for p in PARTS:
        cells = []
        for name in trees:
            v = figures[name][p]
            cells.append(f"{min(v):7.3f} / {statistics.median(v):6.3f} / {max(v):6.3f}")
        print(f"{p:28s}" + "".join(f"{c:>26s}" for c in cells))
    if len({tuple(s) for s in shards.values()}) > 1:
        print("shards DIFFER:", json.dumps(shards))
    else:
        print("shards identical:", " / ".join(s[:8] for s in next(iter(shards.values()))))


if __name__ == "__main__":
    main()
