"""Scaling of the build over executors: 1 local worker vs 2 local workers vs Ray with 2 CPUs, on one synthetic log.

    .venv/bin/python benchmarks/bench_scale.py                        # 10 scenes x 20 s at 800x450, default build
    .venv/bin/python benchmarks/bench_scale.py --scenes 3 10 30 --seconds 8 --runs local2 ray2   # memory vs scenes
    .venv/bin/python benchmarks/bench_scale.py --quick                # 4 scenes x 8 s at 320x180

Every run builds the same log into a fresh folder (all runs' shards must be byte-identical) and reports:

- wall seconds and the speed-up over the 1-worker run *of the same invocation* (ratios, not absolute rates: this
  machine's load varies from one minute to the next);
- where the time goes (from the stage events): the serial prefix before the first scene is handed out (log check,
  backends made once in the driver), the start-up until the first scene starts on a worker, the busy time of the
  scenes (sum of their start-to-finish times), and the tail (the last scene running alone);
- the Ray overhead per scene: (Ray wall - local wall) / scenes at the same number of workers. ``ray2`` starts a local
  Ray for the build and stops it afterwards (as ``executor.name=ray`` without an address does), so its wall time
  holds Ray's start-up and shutdown; ``ray2-cluster`` joins a 2-CPU cluster started beforehand with ``ray start
  --head`` and warmed by one throwaway job (neither timed, as on a cluster that is already up and has run jobs before:
  a fresh cluster's first ``ray.init`` takes ~1.1 s, later ones ~0.05 s), which leaves the executor's own costs;
- peak memory (VmHWM) of the driver and the largest worker process (a worker: a child of the driver, or a Ray
  worker process ``ray::...``), sampled every 0.2 s from /proc; for Ray, how many worker processes were seen
  running a scene (``ray_scene_processes``: the number of workers when each process imports stridegen once).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stridegen.jobs.build import run_build
from stridegen.logs.synthetic.default import DEFAULT_SYNTHETIC, ensure_default_log
from stridegen.run.config import load_build_config
from stridegen.run.runner import SceneResult, StageEvent

RUNS = {"local1": ("local", 1), "local2": ("local", 2), "ray2": ("ray", 2), "ray2-cluster": ("ray", 2)}


class Timeline:
    """A RunObserver that stamps the tasks' planning, starts and finishes (time.perf_counter)."""

    def __init__(self) -> None:
        self.planned_at = 0.0
        self.start: dict[str, float] = {}
        self.finish: dict[str, float] = {}

    def planned(self, tasks: Sequence[tuple[int, str]]) -> None:
        self.planned_at = time.perf_counter()

    def event(self, event: StageEvent) -> None:
        if event.stage == "start":
            self.start.setdefault(event.scene, time.perf_counter())

    def finished(self, job: int, result: SceneResult) -> None:
        self.finish[result.scene] = time.perf_counter()


def _vm_hwm_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _is_worker(pid: int, driver: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    ppid = int(stat.rsplit(")", 1)[1].split()[1])
    return ppid == driver or cmdline.startswith(b"ray::")


class MemorySampler(threading.Thread):
    """The peak VmHWM (KiB) of the driver and of the largest worker process seen while it runs."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.driver = os.getpid()
        self.worker_peak = 0
        self.scene_pids: set[int] = set()  # the Ray worker processes seen running a scene (``ray::_run_scene``)
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            for entry in os.scandir("/proc"):
                if entry.name.isdigit() and int(entry.name) != self.driver and _is_worker(int(entry.name), self.driver):
                    self.worker_peak = max(self.worker_peak, _vm_hwm_kib(int(entry.name)))
                    with contextlib.suppress(OSError):
                        if Path(f"/proc/{entry.name}/cmdline").read_bytes().startswith(b"ray::_run_scene"):
                            self.scene_pids.add(int(entry.name))
            self.stop.wait(0.2)


class HeadNode:
    """``ray start --head`` with ``cpus`` CPUs on the loopback address (the ``ray2-cluster`` run); ``stop`` ends it."""

    def __init__(self, cpus: int) -> None:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        self.address = f"127.0.0.1:{port}"
        self.temp = tempfile.mkdtemp(prefix="sg-ray-", dir="/tmp")  # Ray's socket paths must stay short
        self.ray = str(Path(sys.executable).with_name("ray"))
        args = [f"--port={port}", "--node-ip-address=127.0.0.1", f"--num-cpus={cpus}", f"--temp-dir={self.temp}"]
        args.append("--include-dashboard=false")
        subprocess.run([self.ray, "start", "--head", *args], check=True, capture_output=True)
        # A cluster that is up has served jobs before: its first job pays a one-time set-up (~1.1 s of ray.init
        # here, against 0.05 s for every later one). A throwaway job pays it, untimed (issue 35).
        warm = "import ray, sys; ray.init(address=sys.argv[1], logging_level='WARNING'); ray.shutdown()"
        subprocess.run([sys.executable, "-c", warm, self.address], check=True, capture_output=True)

    def stop(self) -> None:
        """Every process of this head node (their command lines name its session folder or its port), no other Ray."""
        for pattern in (self.temp, self.address):
            subprocess.run(["pkill", "-9", "-f", pattern], check=False)
        shutil.rmtree(self.temp, ignore_errors=True)


def bench(log: Path, run: str, work: Path) -> dict[str, Any]:
    executor, workers = RUNS[run]
    out = work / run
    head = HeadNode(workers) if run.endswith("-cluster") else None
    overrides = [f"executor.name={executor}", f"workers={workers}", "detector.name=oracle"]
    if head is not None:
        overrides.append(f"executor.address={head.address}")
    try:
        return _bench(log, run, out, load_build_config(None, overrides), workers)
    finally:
        if head is not None:
            head.stop()


def _bench(log: Path, run: str, out: Path, cfg: Any, workers: int) -> dict[str, Any]:
    timeline, sampler = Timeline(), MemorySampler()
    sampler.start()
    t0 = time.perf_counter()
    result = run_build(log, out, cfg, observer=timeline)
    wall = time.perf_counter() - t0
    sampler.stop.set()
    sampler.join()
    if not result.ok:
        raise SystemExit(f"{run}: build failed: {[(r.scene, r.reason) for r in result.failed]}")
    busy = sum(timeline.finish[s] - timeline.start.get(s, timeline.finish[s]) for s in timeline.finish)
    finishes = sorted(timeline.finish.values())
    manifest = json.loads((out / "manifest.json").read_text())
    return {
        "run": run,
        "workers": workers,
        "scenes": len(finishes),
        "wall_s": round(wall, 2),
        "prefix_s": round(timeline.planned_at - t0, 2),
        "startup_s": round(min(timeline.start.values()) - timeline.planned_at, 2),
        "busy_s": round(busy, 2),
        "tail_s": round(finishes[-1] - finishes[-2], 2) if len(finishes) > 1 else 0.0,
        "suffix_s": round(t0 + wall - finishes[-1], 2),
        "keyframes": int(json.loads((out / "build_report.json").read_text())["keyframes_built"]),
        "driver_peak_mib": round(_vm_hwm_kib(os.getpid()) / 1024, 1),
        "worker_peak_mib": round(sampler.worker_peak / 1024, 1),
        # Ray: the worker processes seen running scenes (each imports stridegen once: tasks reuse their process)
        **({"ray_scene_processes": len(sampler.scene_pids)} if sampler.scene_pids else {}),
        "digests": [s["sha256"] for s in manifest["shards"]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenes", type=int, nargs="+", default=[10])
    parser.add_argument("--seconds", type=float, default=float(DEFAULT_SYNTHETIC["seconds"]))  # type: ignore[arg-type]
    parser.add_argument("--runs", nargs="+", choices=sorted(RUNS), default=["local1", "local2", "ray2"])
    parser.add_argument("--quick", action="store_true", help="4 scenes x 8 s at 320x180")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a throwaway loopback cluster: no token to hand around

    rows: list[dict[str, Any]] = []
    for n in [4] if args.quick else args.scenes:
        params = {**DEFAULT_SYNTHETIC, "scenes": n, "seconds": 8.0 if args.quick else args.seconds}
        if args.quick:
            params.update(width=320, height=180)
        log = ensure_default_log(params, progress=False)
        with tempfile.TemporaryDirectory(prefix="bench_scale_") as tmp:
            group = [bench(log, run, Path(tmp)) for run in args.runs]
        if len({tuple(r["digests"]) for r in group}) != 1:
            raise SystemExit(f"{n} scenes: shards differ between executors")
        base = next((r for r in group if r["run"] == "local1"), None)
        local2 = next((r for r in group if r["run"] == "local2"), None)
        for r in group:
            r["speedup"] = round(base["wall_s"] / r["wall_s"], 2) if base else None
            if r["run"].startswith("ray2") and local2:
                r["ray_overhead_s_per_scene"] = round((r["wall_s"] - local2["wall_s"]) / r["scenes"], 3)
            print(json.dumps({k: v for k, v in r.items() if k != "digests"}), flush=True)
        rows.extend(group)
    print("shards byte-identical across executors")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
