"""Time of the synthetic generator on one core: one 20 s scene (40 key frames, 6 cameras at 800x450, LiDAR).

Pins the process to one CPU (where the OS allows it) and sets OMP / OPENBLAS / MKL threads and OpenCV threads to 1
before anything heavy is imported. Prints the wall time, the process CPU time, and the break-down that
``generate_dataset`` records (scenario composition, LiDAR casting, rendering, JPEG/PNG encoding, file and table
writing) in CPU seconds, which other processes sharing the machine do not inflate. The first process-wide use of
the ground shader builds its raster; that is included ("render"), as a user running `stridegen synth` pays it
once. Target: <= 10 s.

    .venv/bin/python benchmarks/bench_synth.py [--seconds 20] [--width 800] [--height 450] [--sweeps] [--repeat 1]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--width", type=int, default=800)
    parser.add_argument("--height", type=int, default=450)
    parser.add_argument("--sweeps", action="store_true")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()

    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    import cv2

    cv2.setNumThreads(1)
    from stridegen.logs.synthetic import generate_dataset

    for run in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            wall0, cpu0 = time.perf_counter(), time.process_time()
            summary = generate_dataset(
                Path(tmp) / "ds",
                scenes=1,
                seconds=args.seconds,
                seed=0,
                width=args.width,
                height=args.height,
                sweeps=args.sweeps,
                progress=False,
            )
            wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        parts = ", ".join(f"{k} {v:.2f}" for k, v in sorted(summary.timings_s.items()))
        print(
            f"run {run}: one {args.seconds:g} s scene ({summary.samples} key frames, 6 cameras at "
            f"{args.width}x{args.height}{', sweeps' if args.sweeps else ''}): wall {wall:.2f} s, cpu {cpu:.2f} s "
            f"(target <= 10 s)"
        )
        print(f"  break-down (cpu s): {parts}")
        print(f"  annotations: {sum(summary.annotations_per_class.values())}, sample_data: {summary.sample_data}")


if __name__ == "__main__":
    main()
