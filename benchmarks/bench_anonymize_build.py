"""Cost of the privacy pass in a build: CPU seconds per keyframe on one core, build with anonymization off and on.

Logs: a synthetic log with plates and faces drawn (the default log's generator parameters with
``privacy_patches=True``; ``--scenes`` / ``--seconds`` shorten it) and the nuScenes demo keyframe
(../shared/data/nuscenes-demo, one keyframe, six 1600x900 images) where present. Each log is built in this process
(``workers=1``, the local executor, OpenCV and onnxruntime on one thread) with

- ``off``: ``anonymize.faces=false anonymize.plates=false``;
- ``on``: ``anonymize.faces=true anonymize.plates=true`` with the section's other defaults (CenterFace faces, Haar
  plate cascade besides the plate localisation), what a real log gets by default.

The figure is CPU time (``time.process_time`` of this process plus ``resource`` children's user + system time) per
stored keyframe; ``--rounds`` rounds alternate the order (off, on / on, off) so drift hits both; min / median /
max over the rounds and the ratio of the medians. The ``anonymize`` stage's own wall seconds per keyframe (from
the build's scene timings) are printed beside them.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_anonymize_build.py [--rounds 3] [--scenes 1 --seconds 8]

Run against another checkout (e.g. the code before a change) with ``PYTHONPATH=<checkout>``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
REPO = Path(__file__).resolve().parents[1]
if not os.environ.get("PYTHONPATH"):  # else the checkout named there (its entries come first in sys.path)
    sys.path.insert(0, str(REPO))
NUSCENES_DEMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "nuscenes-demo"

OFF = ["anonymize.faces=false", "anonymize.plates=false"]
ON = ["anonymize.faces=true", "anonymize.plates=true"]


def cpu_s() -> float:
    """CPU seconds of this process and its waited-for children (user + system)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


# The nuScenes demo is one keyframe without neighbours (tests/jobs/test_build.py's single-frame overrides).
DEMO_OVERRIDES = ["keyframes.start_s=0", "keyframes.require_full_window=false"]


def build_once(log: Path, overrides: list[str]) -> tuple[float, int, float]:
    """(CPU seconds, keyframes stored, anonymize stage wall seconds) of one fresh build of ``log``."""
    from stridegen.jobs.build import run_build
    from stridegen.run.config import load_build_config

    with tempfile.TemporaryDirectory(prefix="bench_anon_build_") as tmp:
        config = load_build_config(None, ["workers=1", *overrides])
        t0 = cpu_s()
        result = run_build(log, Path(tmp) / "ds", config)
        spent = cpu_s() - t0
        if not result.ok:
            raise SystemExit(f"{log}: build failed: {[r.reason for r in result.failed]}")
        keyframes = sum(int(r.shard.counts.get("keyframes", 0)) for r in result.results if r.shard is not None)
        stage = sum(float(r.timings_s.get("anonymize", 0.0)) for r in result.results)
    return spent, keyframes, stage


def bench(name: str, log: Path, rounds: int, extra: list[str] | None = None) -> None:
    runs: dict[str, list[float]] = {"off": [], "on": []}
    stage_s: list[float] = []
    modes = {"off": OFF + (extra or []), "on": ON + (extra or [])}
    build_once(log, modes["off"])  # warm-up: imports, caches, models
    build_once(log, modes["on"])
    for k in range(rounds):
        order = ("off", "on") if k % 2 == 0 else ("on", "off")
        for mode in order:
            spent, keyframes, stage = build_once(log, modes[mode])
            runs[mode].append(spent / max(keyframes, 1))
            if mode == "on":
                stage_s.append(stage / max(keyframes, 1))
    off, on = statistics.median(runs["off"]), statistics.median(runs["on"])
    print(f"{name}: {keyframes} keyframes, {rounds} rounds, CPU s per keyframe (min / median / max)")
    for mode in ("off", "on"):
        v = runs[mode]
        print(f"  {mode:>3}: {min(v):.3f} / {statistics.median(v):.3f} / {max(v):.3f}")
    print(f"  anonymization: {on - off:.3f} CPU s per keyframe; on / off = {on / off:.2f}x")
    print(f"  anonymize stage wall s per keyframe (median): {statistics.median(stage_s):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scenes", type=int, default=None, help="default: the default log's")
    parser.add_argument("--seconds", type=float, default=None, help="default: the default log's")
    parser.add_argument("--no-nuscenes", action="store_true")
    args = parser.parse_args()
    import cv2

    cv2.setNumThreads(1)
    from stridegen.logs.synthetic.default import DEFAULT_SYNTHETIC
    from stridegen.logs.synthetic.generator import generate_dataset

    params = {**DEFAULT_SYNTHETIC, "privacy_patches": True}
    if args.scenes is not None:
        params["scenes"] = args.scenes
    if args.seconds is not None:
        params["seconds"] = args.seconds
    import stridegen

    print(f"code: {Path(stridegen.__file__).parent}")
    with tempfile.TemporaryDirectory(prefix="bench_anon_log_") as tmp:
        log = Path(tmp) / "log"
        generate_dataset(log, progress=False, overwrite=True, **params)  # type: ignore[arg-type]
        bench(
            f"synthetic {params['width']}x{params['height']} {params['scenes']} x {params['seconds']} s",
            log,
            args.rounds,
        )
    if not args.no_nuscenes and (NUSCENES_DEMO / "v1.0-demo").is_dir():
        bench("nuscenes-demo 1600x900", NUSCENES_DEMO, args.rounds, DEMO_OVERRIDES)


if __name__ == "__main__":
    main()
