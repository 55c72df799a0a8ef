"""Tracking evaluation: stridegen's vectorised evaluator vs nuscenes-devkit 1.2.0, same synthetic input.

    .venv/bin/python benchmarks/bench_tracking.py            # 40 scenes x 40 frames x 30 tracks
    .venv/bin/python benchmarks/bench_tracking.py --quick    # 4 scenes x 20 frames x 15 tracks

Prints both run times and their ratio, and fails if any reported metric differs by more than 1e-6.
The devkit needs a ``NuScenes`` object only to look up samples, scenes, ego poses and bike racks; a small stand-in
(``FakeNuScenes``) serves those tables so that its own loaders (``add_center_dist``, ``filter_eval_boxes``,
``create_tracks``) and ``TrackingEval.evaluate`` run unchanged (reference/devkit_tracking.py, shared with
the parity tests).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: reference

from reference.devkit_tracking import compare, make_synthetic, run_devkit, run_stridegen


def main(argv: list[str] | None = None) -> int:
    import warnings

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenes", type=int, default=40)
    parser.add_argument("--frames", type=int, default=40)
    parser.add_argument("--tracks", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="4 scenes x 20 frames x 15 tracks")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of ours (the best is reported)")
    args = parser.parse_args(argv)
    if args.quick:
        args.scenes, args.frames, args.tracks = 4, 20, 15
    data = make_synthetic(args.seed, args.scenes, args.frames, args.tracks)
    print(
        f"{args.scenes} scenes x {args.frames} frames x {args.tracks} tracks: {len(data.gt)} GT boxes, "
        f"{len(data.pred)} predicted boxes"
    )
    ours_s = ours_cpu = math.inf
    for _ in range(max(1, args.repeat)):
        t, c = time.perf_counter(), time.process_time()
        ours = run_stridegen(data)
        ours_s = min(ours_s, time.perf_counter() - t)
        ours_cpu = min(ours_cpu, time.process_time() - c)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t, c = time.perf_counter(), time.process_time()
        dk_metrics, dk_md = run_devkit(data)
        devkit_s, devkit_cpu = time.perf_counter() - t, time.process_time() - c
    bad = compare(ours, dk_metrics, dk_md)
    # Both figures include the pipeline from raw boxes (filtering, score averaging, interpolation) to the metrics.
    print(f"devkit:    {devkit_s:8.2f} s wall, {devkit_cpu:8.2f} s CPU ({devkit_s / args.scenes:.2f} s per scene)")
    print(f"stridegen: {ours_s:8.3f} s wall, {ours_cpu:8.3f} s CPU (best of {args.repeat})")
    print(f"speed-up:  {devkit_s / ours_s:8.1f}x wall, {devkit_cpu / ours_cpu:8.1f}x CPU")
    print(
        f"AMOTA {ours.summary('amota'):.6f} (devkit {dk_metrics.compute_metric('amota'):.6f}), "
        f"AMOTP {ours.summary('amotp'):.6f}, MOTA {ours.summary('mota'):.6f}, IDS {ours.summary('ids'):.0f}"
    )
    if bad:
        print(f"{len(bad)} MISMATCHES:")
        print("\n".join(bad[:30]))
        return 1
    print("all metrics agree to 1e-6")
    return 0


if __name__ == "__main__":
    sys.exit(main())
