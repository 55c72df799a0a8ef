"""The segment stage's own cost, in-process CPU, this checkout against another one (alternated child processes).

    .venv/bin/python benchmarks/bench_segment_stage.py --base /tmp/base --rounds 5
    .venv/bin/python benchmarks/bench_segment_stage.py --base /tmp/base --rounds 5 --builds 2 --log default

Each round runs one child process per checkout, in turn (``--base`` first in odd rounds, this checkout first in even
ones), with that checkout on ``PYTHONPATH`` and every numeric library on one thread (``single_thread.THREAD_ENV``,
``cv2.setNumThreads(1)``). A child builds the log once to warm up (imports, caches), then ``--builds`` times more
with ``run_build`` (``workers=1``), and records ``time.process_time`` spent in the functions of the segment stage
(wrapped in place, about a microsecond per call):

- ``segment_images``: the whole stage (requests, segmenter, visibility, RLE);
- ``segmenter.segment``: the segmenter's ``segment`` (the image decode it asks for included: see ``decode``);
- ``_grow``: ``lidar_watershed``'s per-object marker watershed (``lidar_watershed`` only);
- ``decode``: the stage's ``decode_image`` calls (JPEG decodes, most of them inside ``segmenter.segment``);
- ``frame_requests``, ``_stored_view``, ``measure_visibility``, ``encode_rle_crops``: the other parts.

A figure is the CPU seconds of one build (the mean of its ``--builds``), min / median / max over the rounds, and
the ratio of the medians (base / this). Both sides' shards must be byte-identical (else the script stops), so the
comparison is of the same work. To time one set of files alone while others change the rest of the tree, give as
this checkout a copy of ``--base`` with only those files changed (``PYTHONPATH`` is taken from ``--tree``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from single_thread import THREAD_ENV  # noqa: E402  (benchmarks/ is the script's folder)

PARTS = (
    "segment_images",
    "segmenter.segment",
    "_grow",
    "decode",
    "frame_requests",
    "_stored_view",
    "measure_visibility",
    "encode_rle_crops",
)

# The child: the checkout on PYTHONPATH, the stage's functions wrapped with process_time accumulators.
CHILD = r"""
import json, sys, time
from pathlib import Path
import cv2
cv2.setNumThreads(1)
log, out, builds, segmenter = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
from stridegen.jobs.build import run_build
from stridegen.run.config import load_build_config
from stridegen.run import stages
from stridegen.pipeline.segment import stage
from stridegen.pipeline.segment import make_segmenter

spent = {}

def timed(name, fn):
    def wrapper(*args, **kwargs):
        t0 = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] = spent.get(name, 0.0) + time.process_time() - t0
    return wrapper

def timed_generator(name, fn):
    def wrapper(*args, **kwargs):
        it = fn(*args, **kwargs)
        while True:
            t0 = time.process_time()
            try:
                item = next(it)
            except StopIteration:
                spent[name] = spent.get(name, 0.0) + time.process_time() - t0
                return
            spent[name] = spent.get(name, 0.0) + time.process_time() - t0
            yield item
    return wrapper

stages.segment_images = timed("segment_images", stage.segment_images)
stage._stored_view = timed("_stored_view", stage._stored_view)
stage.decode_image = timed("decode", stage.decode_image)
stage.measure_visibility = timed("measure_visibility", stage.measure_visibility)
stage.encode_rle_crops = timed("encode_rle_crops", stage.encode_rle_crops)
stage.frame_requests = timed_generator("frame_requests", stage.frame_requests)
cls = type(make_segmenter(segmenter))
cls.segment = timed("segmenter.segment", cls.segment)
if hasattr(cls, "_grow"):
    cls._grow = timed("_grow", cls._grow)
overrides = ["workers=1", f"segmenter.name={segmenter}"]
digests = None
for k in range(builds + 1):
    if k == 1:
        spent.clear()
    target = out / f"ds{k}"
    run_build(log, target, load_build_config(None, overrides))
    manifest = json.loads((target / "manifest.json").read_text())
    digests = [s["sha256"] for s in manifest["shards"]]
print(json.dumps({"spent": {k: v / builds for k, v in spent.items()}, "digests": digests}))
"""


def run_child(tree: Path, log: Path, tmp: Path, builds: int, segmenter: str, tag: str) -> dict:
    out = Path(tempfile.mkdtemp(prefix=f"{tag}-", dir=tmp))
    env = {**os.environ, **THREAD_ENV, "PYTHONPATH": str(tree)}
    argv = [sys.executable, "-c", CHILD, str(log), str(out), str(builds), segmenter]
    done = subprocess.run(argv, cwd=tmp, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"child ({tree}) exited {done.returncode}:\n{done.stderr[-3000:]}")
    result: dict = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _spread(values: list[float]) -> str:
    return f"{min(values):7.3f} / {statistics.median(values):7.3f} / {max(values):7.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the other checkout (a git worktree)")
    parser.add_argument("--tree", type=Path, default=ROOT, help="this side's checkout (default: this one)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--builds", type=int, default=1, help="timed builds per child, after one warm-up build")
    parser.add_argument("--log", default="default", help="'default' (the embedded default log) or a log folder")
    parser.add_argument("--segmenter", default="lidar_watershed")
    args = parser.parse_args()
    os.environ.update(THREAD_ENV)
    sys.path.insert(0, str(args.tree))
    if args.log == "default":
        from stridegen.logs.synthetic.default import ensure_default_log

        log = ensure_default_log(progress=False)
    else:
        log = Path(args.log)
    sides = {"base": args.base.resolve(), "this": args.tree.resolve()}
    print(
        f"command: {' '.join(sys.argv)}\n  base {sides['base']}, this {sides['this']}, log {log}, segmenter "
        f"{args.segmenter}, {args.rounds} alternated rounds x {args.builds} build(s) after a warm-up build",
        flush=True,
    )
    spent: dict[str, dict[str, list[float]]] = {side: {p: [] for p in PARTS} for side in sides}
    with tempfile.TemporaryDirectory(prefix="bench_segment_stage_") as tmp_name:
        tmp = Path(tmp_name)
        digests: dict[str, list[str]] = {}
        for r in range(args.rounds):
            order = list(sides) if r % 2 == 0 else list(reversed(sides))
            for side in order:
                result = run_child(sides[side], log, tmp, args.builds, args.segmenter, f"{side}{r}")
                digests.setdefault(side, result["digests"])
                if result["digests"] != digests[side]:
                    raise SystemExit(f"{side}: shards differ between rounds")
                for p in PARTS:
                    spent[side][p].append(float(result["spent"].get(p, 0.0)))
            print(f"  round {r + 1}: " + ", ".join(f"{s} {spent[s]['segment_images'][-1]:.3f}" for s in sides))
        if digests["base"] != digests["this"]:
            raise SystemExit("the two checkouts' shards differ: not the same work")
    print("  shards byte-identical on both sides")
    print(f"  {'CPU-s per build':20s} {'base min / median / max':>27s}   {'this min / median / max':>27s}   ratio")
    for p in PARTS:
        b, t = spent["base"][p], spent["this"][p]
        if not any(b) and not any(t):
            continue
        ratio = statistics.median(b) / statistics.median(t) if statistics.median(t) > 0 else float("nan")
        print(f"  {p:20s} {_spread(b)}   {_spread(t)}   {ratio:5.2f}x")


if __name__ == "__main__":
    main()
