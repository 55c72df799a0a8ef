"""Build throughput as a user sees it: keyframes per CPU-second of the whole `stridegen build` command, beside the
warm in-process rate (`run_build` called again in a process that has built once).

    .venv/bin/python benchmarks/bench_build.py                        # default log, 12x800x450, 12x1600x900; 3 rounds
    .venv/bin/python benchmarks/bench_build.py --logs default --rounds 5
    .venv/bin/python benchmarks/bench_build.py --logs 12x800x450 --seconds 8 --rounds 3
    .venv/bin/python benchmarks/bench_build.py --quick                # 2 scenes x 8 s at 320x180, 2 rounds
    .venv/bin/python benchmarks/bench_build.py --logs default --rounds 5 --base /tmp/base  # against another checkout
    .venv/bin/python benchmarks/bench_build.py --logs 2x800x450 2x1600x900 2x2880x1860 --seconds 8 \
        --segmenters lidar lidar_watershed projected_box --rounds 1   # segmenters x resolutions

Logs: ``default`` is the embedded default (``DEFAULT_SYNTHETIC``: 3 scenes x 20 s at 800x450, 45 keyframes);
``SxWxH`` is the same generator with S scenes of ``--seconds`` at W x H. Each log is generated once (cached like
`stridegen build` does) and is not part of the timing.

Per log, each round runs every variant once, in turn (alternated, so a busy machine weighs on all of them alike):

- ``command``: ``stridegen build LOG --out TMP workers=1`` as a child process; its CPU is user + system of the child
  and everything it waited for (``RUSAGE_CHILDREN``): interpreter start-up, imports, log check, progress display,
  build, report. The child runs with Python's bytecode cache (a private ``PYTHONPYCACHEPREFIX``, filled by a warm-up
  run), as an installed package does; ``--no-bytecode`` runs it with no bytecode cache at all: every module compiled
  at each start (about +0.9 CPU-s), ``PYTHONDONTWRITEBYTECODE=1`` and ``PYTHONPYCACHEPREFIX`` at an empty folder.
  ``PYTHONDONTWRITEBYTECODE`` alone stops writing ``.pyc`` files but still reads the ``__pycache__`` folders that
  exist, so its figure would depend on whether a cache had been written.
- ``in-process (warm)``: ``run_build`` in this process after a warm-up build (imports and caches paid);
  ``time.process_time`` of this process plus ``RUSAGE_CHILDREN`` of the workers it spawned.
- ``command (base)``, with ``--base TREE`` (a ``git worktree`` of an older commit): the same command run by that
  checkout's code (``PYTHONPATH=TREE``, run from outside both trees so that the current folder does not shadow it,
  its own bytecode cache), in the same rounds, for a before / after of whole commands. Its shards are compared with
  this checkout's and the difference printed (a change may be meant to change them).

Single-threaded on both sides: OMP/MKL/OpenBLAS/NumExpr threads = 1 and OpenCV's pool at 1 thread
(``OPENCV_FOR_THREADS_NUM=1`` in the child, ``cv2.setNumThreads(1)`` here), ``workers=1`` unless ``--workers``.
Prints the exact command, then per variant the CPU seconds and keyframes per CPU-second, min / median / max over the
rounds, and the in-process per-stage milliseconds per keyframe (median round). Every run's shards must be
byte-identical (else the benchmark stops).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from single_thread import THREAD_ENV  # noqa: E402  (benchmarks/ is the script's folder)

os.environ.update(THREAD_ENV)  # before numpy/OpenCV load in this process

import cv2  # noqa: E402

from stridegen.jobs.build import STAGES, run_build  # noqa: E402
from stridegen.logs.synthetic.default import DEFAULT_SYNTHETIC, ensure_default_log  # noqa: E402
from stridegen.run.config import load_build_config  # noqa: E402

STRIDEGEN = str(Path(sys.executable).with_name("stridegen"))
QUICK_LOG = "2x320x180"
QUICK_SECONDS = 8.0


def log_params(spec: str, seconds: float) -> dict[str, object]:
    """``default`` -> ``DEFAULT_SYNTHETIC``; ``SxWxH`` -> S scenes of ``seconds`` at W x H (same seed and rig)."""
    if spec == "default":
        return dict(DEFAULT_SYNTHETIC)
    try:
        scenes, width, height = (int(p) for p in spec.split("x"))
    except ValueError:
        raise SystemExit(f"--logs: {spec!r} is neither 'default' nor SCENESxWIDTHxHEIGHT") from None
    return {**DEFAULT_SYNTHETIC, "scenes": scenes, "seconds": seconds, "width": width, "height": height}


def _digests(out: Path) -> list[str]:
    return [s["sha256"] for s in json.loads((out / "manifest.json").read_text())["shards"]]


def _report(out: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((out / "build_report.json").read_text())
    if report["scenes"]["failed"]:
        raise SystemExit(f"build failed: {[(s['scene'], s['reason']) for s in report['per_scene'] if s['reason']]}")
    return report


def _children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class Runner:
    """The two variants on one log and one set of overrides, each run building into a fresh folder."""

    def __init__(self, log: Path, overrides: list[str], tmp: Path, bytecode: bool, base: Path | None = None) -> None:
        self.log, self.overrides, self.tmp, self.base = log, overrides, tmp, base
        self.env = {**os.environ, **THREAD_ENV}
        if bytecode:
            self.env.pop("PYTHONDONTWRITEBYTECODE", None)
            self.env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
        else:
            self.env["PYTHONDONTWRITEBYTECODE"] = "1"  # nothing written ...
            self.env["PYTHONPYCACHEPREFIX"] = str(tmp / "no-pycache")  # ... and no __pycache__ read: an empty folder
        self.runs = 0

    def _out(self) -> Path:
        self.runs += 1
        return self.tmp / f"ds{self.runs}"

    def argv(self, out: Path) -> list[str]:
        return [STRIDEGEN, "build", str(self.log), "--out", str(out), *self.overrides]

    def command(self) -> tuple[float, dict[str, Any], list[str]]:
        out = self._out()
        before = _children_cpu_s()
        done = subprocess.run(self.argv(out), cwd=ROOT, env=self.env, capture_output=True, text=True)
        cpu = _children_cpu_s() - before
        if done.returncode != 0:
            raise SystemExit(f"{shlex.join(self.argv(out))} exited {done.returncode}:\n{done.stderr[-2000:]}")
        return cpu, _report(out), _digests(out)

    def base_command(self) -> tuple[float, dict[str, Any], list[str]]:
        """The command run by the ``--base`` checkout's code (module docstring)."""
        assert self.base is not None
        out = self._out()
        code = "import sys; sys.argv[0] = 'stridegen'; from stridegen.cli import main; main()"
        argv = [sys.executable, "-c", code, *self.argv(out)[1:]]
        env = {**self.env, "PYTHONPATH": str(self.base)}
        env["PYTHONPYCACHEPREFIX"] = env["PYTHONPYCACHEPREFIX"] + "-base"
        before = _children_cpu_s()
        done = subprocess.run(argv, cwd=self.tmp, env=env, capture_output=True, text=True)
        cpu = _children_cpu_s() - before
        if done.returncode != 0:
            raise SystemExit(f"{shlex.join(argv)} exited {done.returncode}:\n{done.stderr[-2000:]}")
        return cpu, _report(out), _digests(out)

    def in_process(self) -> tuple[float, dict[str, Any], list[str]]:
        out = self._out()
        cfg = load_build_config(None, self.overrides)
        before_self, before_children = time.process_time(), _children_cpu_s()
        run_build(self.log, out, cfg)
        cpu = (time.process_time() - before_self) + (_children_cpu_s() - before_children)
        return cpu, _report(out), _digests(out)


def _spread(values: list[float]) -> str:
    return f"{min(values):7.2f} / {statistics.median(values):7.2f} / {max(values):7.2f}"


def bench_log(
    spec: str, seconds: float, segmenter: str | None, workers: int, rounds: int, bytecode: bool, base: Path | None
) -> dict[str, Any]:
    params = log_params(spec, seconds)
    log = ensure_default_log(params, progress=False)
    overrides = [f"workers={workers}"] + ([f"segmenter.name={segmenter}"] if segmenter else [])
    with tempfile.TemporaryDirectory(prefix="bench_build_") as tmp:
        runner = Runner(log, overrides, Path(tmp), bytecode, base)
        variants = {"command": runner.command, "in-process (warm)": runner.in_process}
        if base is not None:
            variants["command (base)"] = runner.base_command
        shown = shlex.join(runner.argv(Path("OUT")))
        print(f"\nlog {spec}: {', '.join(f'{k}={v}' for k, v in params.items())}")
        print(f"  command: {' '.join(f'{k}={v}' for k, v in THREAD_ENV.items())} {shown}", flush=True)
        reference: list[str] | None = None
        base_digests: list[str] | None = None
        for name, fn in variants.items():  # warm-up: bytecode, file cache, this process's imports and caches
            _, _, digests = fn()
            if name == "command (base)":
                base_digests = digests
                continue
            reference = reference or digests
            if digests != reference:
                raise SystemExit("shards differ between the command and the in-process build")
        cpu: dict[str, list[float]] = {name: [] for name in variants}
        stages: list[dict[str, float]] = []
        keyframes = 0
        for _ in range(rounds):
            for name, fn in variants.items():
                seconds_cpu, report, digests = fn()
                if digests != (base_digests if name == "command (base)" else reference):
                    raise SystemExit(f"shards differ between runs ({name})")
                keyframes = int(report["keyframes_built"])
                cpu[name].append(seconds_cpu)
                if name != "command":
                    stages.append(report["stage_seconds_total"])
    if base is not None:
        same = "the same as" if base_digests == reference else "DIFFERENT from"
        print(f"  base checkout {base}: its shards are {same} this checkout's")
    print(f"  {keyframes} keyframes, {rounds} alternated rounds, min / median / max")
    print(f"  {'variant':22s} {'CPU seconds':>27s}   {'keyframes per CPU-second':>27s}")
    for name, values in cpu.items():
        rates = [keyframes / v for v in values]
        print(f"  {name:22s} {_spread(values)}   {_spread(rates)}")
    fixed = [c - w for c, w in zip(cpu["command"], cpu["in-process (warm)"], strict=True)]
    print(f"  command - in-process (the command's fixed cost): {_spread(fixed)} CPU-s")
    median_round = sorted(stages, key=lambda s: sum(s.values()))[len(stages) // 2]
    print(
        "  in-process stages, ms per keyframe: "
        + ", ".join(f"{s} {1e3 * median_round.get(s, 0.0) / max(keyframes, 1):.1f}" for s in STAGES)
    )
    return {"log": spec, "keyframes": keyframes, "cpu_s": cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--logs", nargs="+", default=["default", "12x800x450", "12x1600x900"], metavar="LOG")
    parser.add_argument("--seconds", type=float, default=float(DEFAULT_SYNTHETIC["seconds"]))  # type: ignore[arg-type]
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--segmenters", nargs="+", help="segmenter names to compare (default: the config's)")
    parser.add_argument("--no-bytecode", action="store_true", help="the child without Python's bytecode cache")
    parser.add_argument("--base", type=Path, help="another checkout (git worktree) whose command runs in the rounds")
    parser.add_argument("--quick", action="store_true", help=f"the log {QUICK_LOG} of {QUICK_SECONDS:g} s, 2 rounds")
    args = parser.parse_args()
    cv2.setNumThreads(1)
    if args.quick:
        args.logs, args.seconds, args.rounds = [QUICK_LOG], QUICK_SECONDS, 2
    print(f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} (1/5/15 min)")
    for spec in args.logs:
        for segmenter in args.segmenters or [None]:
            if segmenter:
                print(f"\nsegmenter {segmenter}")
            bench_log(spec, args.seconds, segmenter, args.workers, args.rounds, not args.no_bytecode, args.base)
    print(f"\nload average at the end {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print("shards byte-identical across variants and rounds")


if __name__ == "__main__":
    main()
