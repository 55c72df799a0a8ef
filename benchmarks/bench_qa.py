"""Spatial QA generation rate on one core, with the yes/no and pair-order balance and the counts per predicate,
and the rate of the build's ``qa`` stage beside it.

    .venv/bin/python benchmarks/bench_qa.py [--images 2000] [--regions 8] [--repeat 3] [--no-real] [--no-build]

Synthetic contexts: ``--regions`` objects per image scattered in front of a front camera (ego x 3..60 m,
|y| <= 15 m, sizes from pedestrians to buses). Real contexts: the ground-truth boxes of the nuScenes demo keyframe
in ../shared/data (one context per camera), when present. The process is pinned to one CPU where the OS allows.
Rates are the best of ``--repeat`` runs, in QA items per CPU second of this process (and per wall second, which
on a shared machine is lower), generation only: contexts are built before timing.

In-build rate (unless ``--no-build``): a synthetic log (3 scenes of 20 s, seed 7, 800 x 450 images) is built
``--repeat`` times with ``segmenter.name=projected_box`` on the local executor (in this process, on the same CPU);
the rate is the dataset's QA rows over the ``qa`` stage's seconds in ``build_report.json`` (wall clock, best run:
the stage's context assembly and both families, spatial and spatiotemporal). Printed with the ratio of the
generator's wall rate (first synthetic set, default config) to it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: reference

from reference.demo_contexts import demo_contexts  # the demo keyframe's contexts, as in test_spatial
from stridegen.pipeline.qa.base import QAContext, QAItem
from stridegen.pipeline.qa.spatial import generate_spatial_qa
from stridegen.pipeline.qa.spatial_predicates import (
    EGO_YES_NO_FAMILIES,
    PAIR_YES_NO_FAMILIES,
    SPATIAL_PREDICATES,
    SpatialQAConfig,
)

NUSCENES_DEMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "nuscenes-demo"  # the real contexts' log
CLASS_SIZES = {  # rough mean l, w, h (m) per STRIDE-QA class
    "vehicle": (4.6, 1.95, 1.72),
    "large vehicle": (6.7, 2.46, 2.73),
    "bus": (11.2, 2.94, 3.47),
    "pedestrian": (0.73, 0.66, 1.76),
    "bicycle": (1.7, 0.6, 1.28),
    "traffic cone": (0.41, 0.41, 1.07),
}


def synthetic_contexts(rng: np.random.Generator, images: int, regions: int) -> list[QAContext]:
    classes = np.array(list(CLASS_SIZES), dtype=object)
    mean = np.array(list(CLASS_SIZES.values()))
    out = []
    for k in range(images):
        cls_idx = rng.integers(0, len(classes), regions)
        size = mean[cls_idx] * rng.uniform(0.9, 1.1, (regions, 3))
        center_ego = np.c_[rng.uniform(3, 60, regions), rng.uniform(-15, 15, regions), size[:, 2] / 2]
        center_cam = np.c_[-center_ego[:, 1], 1.5 - center_ego[:, 2], center_ego[:, 0] - 1.0]
        out.append(
            QAContext(
                "bench",
                k,
                k,
                "CAM_FRONT",
                np.arange(regions),
                rng.integers(0, 500, regions),
                classes[cls_idx],
                center_ego,
                size,
                np.zeros(regions),
                center_cam,
            )
        )
    return out


def run(contexts: list[QAContext], config: SpatialQAConfig, repeat: int) -> tuple[float, float, list[QAItem]]:
    """Best-of-``repeat`` QA per wall second and per CPU second of this process; the items of the last run.

    On a shared machine the wall-clock rate understates what one core does; the CPU-time rate (``process_time``)
    counts only the time this process was running.
    """
    best_wall = best_cpu = float("inf")
    items: list[QAItem] = []
    for _ in range(repeat):
        rng = np.random.default_rng(0)
        items = []
        t0, c0 = time.perf_counter(), time.process_time()
        for ctx in contexts:
            items.extend(generate_spatial_qa(ctx, rng, config))
        best_wall = min(best_wall, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    return len(items) / best_wall, len(items) / best_cpu, items


def balance_report(items: list[QAItem]) -> None:
    families = {p: f"{pos}/{neg}" for pos, neg in PAIR_YES_NO_FAMILIES + EGO_YES_NO_FAMILIES for p in (pos, neg)}
    answers: dict[str, Counter] = {}
    orders: Counter = Counter()
    for it in items:
        if it.gt_label in ("yes", "no"):
            answers.setdefault(families[it.predicate], Counter())[it.gt_label] += 1
        if len(it.region_ids) == 2:
            orders["ascending" if it.region_ids[0] < it.region_ids[1] else "descending"] += 1
    print(
        "  yes share per family:",
        ", ".join(f"{fam} {c['yes'] / (c['yes'] + c['no']):.3f} (n={c.total()})" for fam, c in answers.items()),
    )
    total = sum(c["yes"] for c in answers.values()), sum(c.total() for c in answers.values())
    print(
        f"  yes share overall: {total[0] / max(total[1], 1):.3f} of {total[1]} yes/no items; pair order "
        f"ascending {orders['ascending'] / max(orders.total(), 1):.3f} of {orders.total()} two-region items"
    )
    counts = Counter(it.predicate for it in items)
    print("  items per predicate:", ", ".join(f"{p} {counts[p]}" for p in SPATIAL_PREDICATES if counts[p]))


def in_build_rate(repeat: int) -> tuple[float, int, float]:
    """(QA per wall second of the build's qa stage, QA rows, qa stage seconds) of the best of ``repeat`` builds."""
    from stridegen.jobs.build import REPORT_NAME, run_build
    from stridegen.logs.synthetic.generator import generate_dataset
    from stridegen.run.config import load_build_config

    config = load_build_config(None, ["segmenter.name=projected_box", "workers=1", "executor.name=local"])
    with tempfile.TemporaryDirectory(prefix="bench_qa_") as tmp:
        log, out = Path(tmp) / "log", Path(tmp) / "out"
        generate_dataset(log, scenes=3, seconds=20, seed=7, width=800, height=450, progress=False)
        best = float("inf")
        rows = 0
        for _ in range(repeat):
            shutil.rmtree(out, ignore_errors=True)  # a build resumes into an existing folder
            run_build(log, out, config)
            seconds = json.loads((out / REPORT_NAME).read_text())["stage_seconds_total"]["qa"]
            manifest = json.loads((out / "manifest.json").read_text())
            rows = sum(int(shard["counts"].get("qa", 0)) for shard in manifest["shards"])
            best = min(best, seconds)
    return rows / best, rows, best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--regions", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-real", action="store_true", help="skip the nuScenes demo contexts")
    ap.add_argument("--no-build", action="store_true", help="skip the in-build rate of the qa stage")
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    configs = {
        "default config": SpatialQAConfig(),
        "all predicates, no caps": SpatialQAConfig(
            max_pairs_per_image=10_000, max_qa_per_image=0, predicates=frozenset(SPATIAL_PREDICATES)
        ),
    }
    sets = {
        f"synthetic, {args.regions} regions x {args.images} images": synthetic_contexts(
            np.random.default_rng(1), args.images, args.regions
        )
    }
    if not args.no_real and NUSCENES_DEMO.is_dir():
        demo = demo_contexts(NUSCENES_DEMO)
        reps = max(1, args.images // (10 * len(demo)))
        sets[f"nuScenes demo keyframe, {len(demo)} cameras ({[len(c) for c in demo]} regions) x {reps}"] = demo * reps
    generator_wall_rate = 0.0
    for set_name, contexts in sets.items():
        for cfg_name, cfg in configs.items():
            wall_rate, cpu_rate, items = run(contexts, cfg, args.repeat)
            generator_wall_rate = generator_wall_rate or wall_rate
            per_image = len(items) / len(contexts)
            print(
                f"{set_name} | {cfg_name}: {cpu_rate:,.0f} QA per CPU second ({wall_rate:,.0f} per wall second), "
                f"{per_image / cpu_rate * 1e6:.0f} us CPU per image, {per_image:.1f} QA per image"
            )
            balance_report(items)
    if not args.no_build:
        build_rate, rows, seconds = in_build_rate(args.repeat)
        print(
            f"build qa stage (synthetic log, projected_box): {build_rate:,.0f} QA per wall second ({rows} QA in "
            f"{seconds:.3f} s); generator / build = {generator_wall_rate / build_rate:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
