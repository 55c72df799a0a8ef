"""Memory and time of a build worker's log reading, with the on-disk table index and with the tables loaded whole.

    .venv/bin/python benchmarks/bench_log_index.py                       # 3 / 10 / 30 synthetic scenes of 20 s
    .venv/bin/python benchmarks/bench_log_index.py --scenes 3 30 --repeat 5
    .venv/bin/python benchmarks/bench_log_index.py --log /data/nuscenes --version v1.0-mini

For each log (synthetic ones are generated once into ``--workdir`` with tiny images: only the tables matter), and
for each way of reading the tables (``whole``: ``NuScenesReader(index=False)``, every table in memory, the reader
before the index; ``index``: the default), ``--repeat`` fresh processes each import what a build worker imports
(``stridegen.jobs.build``), open the log and read its first scene with every frame's annotations, and report:

- ``peak MiB``: the process's peak resident memory (VmHWM), imports included (the figure a worker costs);
- ``open s`` / ``read s``: wall time of opening the log and of reading the scene;
- ``traced MiB``: the peak of the Python allocations made by opening and reading (tracemalloc, in one more process:
  tracing slows allocations down and costs memory of its own, so the other figures are taken without it).

Medians over the repeats. The index is built before the measured processes (as ``build`` does in its parent); its
build time (one process, fresh) and its file size are reported apart.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

MEASURE = """
import json, sys, time, tracemalloc
import stridegen.jobs.build  # what a build worker has imported
from stridegen.logs.nuscenes import NuScenesReader

def vm_hwm_kib():
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM"))

root, version, mode, trace = sys.argv[1], sys.argv[2] or None, sys.argv[3], sys.argv[4] == "trace"
if trace:
    tracemalloc.start()
t0 = time.perf_counter()
reader = NuScenesReader(root, version, index=mode == "index")
t1 = time.perf_counter()
scene = reader.scene(reader.scene_ids()[0][0])
boxes = sum(len(frame.annotations()) for frame in scene.frames)
t2 = time.perf_counter()
traced = tracemalloc.get_traced_memory()[1]
print(json.dumps({"peak": vm_hwm_kib() / 1024, "traced": traced / 2**20, "open": t1 - t0, "read": t2 - t1,
                  "frames": len(scene.frames), "boxes": boxes, "scenes": len(reader.scene_ids())}))
"""


def run_measure(root: Path, version: str | None, mode: str, trace: bool) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, str(root), version or "", mode, "trace" if trace else "time"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    return json.loads(out.stdout)


def synthetic_log(workdir: Path, scenes: int, seconds: float) -> Path:
    from stridegen.logs.synthetic.generator import generate_dataset

    root = workdir / f"synthetic-{scenes}x{seconds:g}s"
    if not (root / "v1.0-synthetic" / "scene.json").is_file():
        print(f"generating {root} ...", file=sys.stderr)
        generate_dataset(root, scenes=scenes, seconds=seconds, seed=0, width=32, height=18, progress=False)
    return root


def index_build(root: Path, version: str | None) -> tuple[float, int]:
    """Seconds to open the log with no index (one fresh process), and the index file's size in bytes."""
    from stridegen.logs.index import INDEX_DIR_NAME

    shutil.rmtree(root / INDEX_DIR_NAME, ignore_errors=True)
    code = (
        "import sys, time; from stridegen.logs.nuscenes import NuScenesReader; t = time.perf_counter(); "
        "r = NuScenesReader(sys.argv[1], sys.argv[2] or None); print(time.perf_counter() - t, r.store.index_path)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(root), version or ""], capture_output=True, text=True, cwd=REPO, check=True
    )
    seconds, path = out.stdout.split(maxsplit=1)
    return float(seconds), Path(path.strip()).stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenes", type=int, nargs="+", default=[3, 10, 30], help="synthetic logs of these sizes")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each synthetic scene")
    parser.add_argument("--log", type=Path, default=None, help="a nuScenes-layout log instead of synthetic ones")
    parser.add_argument("--version", default=None, help="its table folder, where it has several")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "stridegen-bench-log-index")
    args = parser.parse_args()

    logs = [args.log] if args.log else [synthetic_log(args.workdir, n, args.seconds) for n in args.scenes]
    header = f"{'log':<28} {'scenes':>6} {'mode':>6} {'peak MiB':>9} {'traced MiB':>10} {'open s':>7} {'read s':>7}"
    rows = []
    for root in logs:
        build_s, size = index_build(root, args.version)
        for mode in ("whole", "index"):
            runs = [run_measure(root, args.version, mode, trace=False) for _ in range(args.repeat)]
            med = {k: statistics.median(r[k] for r in runs) for k in ("peak", "open", "read")}
            med["traced"] = run_measure(root, args.version, mode, trace=True)["traced"]
            rows.append(
                f"{root.name[-28:]:<28} {runs[0]['scenes']:>6} {mode:>6} {med['peak']:>9.1f} {med['traced']:>10.2f} "
                f"{med['open']:>7.3f} {med['read']:>7.3f}"
            )
        rows.append(f"{'':<28} {'':>6} index built in {build_s:.2f} s, {size / 2**20:.2f} MiB on disk")
    print(f"median of {args.repeat} fresh processes; {time.strftime('%Y-%m-%d %H:%M')}")
    print(header)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
