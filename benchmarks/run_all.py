"""Run every benchmark in turn (the quick variants where a full run takes minutes) and report failures.

    .venv/bin/python benchmarks/run_all.py [--full]

Each script prints its own figures and exits non-zero when its outputs disagree with its reference. The image
corruption benchmark compares with imagecorruptions / albumentations, which live only in a benchmark venv: it runs
only when both import (see docs/augment.md for how to make that venv).
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# (script, quick arguments, full arguments)
BENCHMARKS = [
    ("bench_synth.py", [], ["--repeat", "2"]),
    ("bench_build.py", ["--quick"], []),
    ("bench_tracker.py", ["--scenes", "10"], ["--scenes", "40"]),
    ("calibrate_simulated.py", ["--seeds", "0"], []),
    ("bench_detection.py", ["--samples", "100", "--repeat", "1"], []),
    ("bench_tracking.py", ["--quick"], []),
    ("bench_lsr.py", ["--groups", "2000", "--repeat", "1"], []),
    ("bench_export.py", ["--quick", "--repeat", "1"], []),
    ("bench_augment.py", ["--repeats", "2", "--skip-slow"], ["--skip-slow"]),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="full-size runs (tens of minutes)")
    args = ap.parse_args()
    failed = []
    for script, quick, full in BENCHMARKS:
        if script == "bench_augment.py" and not all(
            importlib.util.find_spec(m) for m in ("imagecorruptions", "albumentations")
        ):
            print(f"== {script}: skipped (imagecorruptions / albumentations are not installed here)")
            continue
        print(f"== {script} {' '.join(full if args.full else quick)}", flush=True)
        start = time.perf_counter()
        rc = subprocess.call([sys.executable, str(HERE / script), *(full if args.full else quick)])
        print(f"== {script}: exit {rc} in {time.perf_counter() - start:.1f} s", flush=True)
        if rc:
            failed.append(script)
    print("failed: " + (", ".join(failed) if failed else "none"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
