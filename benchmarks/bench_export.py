"""Export throughput per format: records/s and images/s per core, on a built dataset.

    .venv/bin/python benchmarks/bench_export.py --dataset out/demo          # a dataset you built
    .venv/bin/python benchmarks/bench_export.py --quick                      # builds 2 scenes x 8 s at 320x180 first
    .venv/bin/python benchmarks/bench_export.py --scenes 10                  # builds the default log with 10 scenes

Each format is exported into a fresh folder with one worker, ``--repeat`` times; the figure is the best run.
Every run's files (export.json's sha256 list) must be identical, or the script exits non-zero.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stridegen.jobs.build import run_build
from stridegen.jobs.export import run_export
from stridegen.logs.synthetic.default import DEFAULT_SYNTHETIC, ensure_default_log
from stridegen.run.config import load_build_config
from stridegen.shards.export.manifest import EXPORT_MANIFEST

FORMATS = ("strideqa", "strideqa-bench", "llava", "messages", "llamafactory", "lmms-eval", "hf")
QUICK = {"scenes": 2, "seconds": 8.0, "seed": 0, "width": 320, "height": 180, "rig": "nuscenes", "sweeps": False}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", type=Path, help="a built dataset (default: build the quick or default log)")
    ap.add_argument("--quick", action="store_true", help="build a small dataset first (2 scenes x 8 s, 320x180)")
    ap.add_argument("--scenes", type=int, help="build the default synthetic log with this many scenes first")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--formats", nargs="+", default=list(FORMATS))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        dataset = args.dataset
        if dataset is None:
            params = dict(QUICK if args.quick else DEFAULT_SYNTHETIC)
            if args.scenes:
                params["scenes"] = args.scenes
            log = ensure_default_log(params, progress=False)
            dataset = Path(tmp) / "ds"
            assert run_build(log, dataset, load_build_config(None)).ok
        bad = 0
        print(f"dataset: {dataset}")
        print(f"{'format':<16}{'records/s':>12}{'questions/s':>14}{'images/s':>10}{'best s':>9}")
        for fmt in args.formats:
            best, digests, totals = float("inf"), set(), {}
            for r in range(args.repeat):
                out = Path(tmp) / f"{fmt}-{r}"
                t0 = time.perf_counter()
                result = run_export(dataset, out, fmt)
                wall = time.perf_counter() - t0
                assert result.ok, [x.reason for x in result.failed]
                manifest = json.loads((out / EXPORT_MANIFEST).read_text())
                digests.add(json.dumps(manifest["files"]))
                totals = manifest["totals"]
                best = min(best, wall)
            records = totals.get("samples", totals.get("records", totals.get("questions", 0)))
            print(
                f"{fmt:<16}{records / best:>12.0f}{totals.get('questions', 0) / best:>14.0f}"
                f"{totals.get('images', 0) / best:>10.1f}{best:>9.2f}"
            )
            if len(digests) != 1:
                print(f"  {fmt}: runs wrote different files", file=sys.stderr)
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
