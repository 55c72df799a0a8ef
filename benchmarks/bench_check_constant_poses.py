"""What the LiDAR comparison of constant ego poses adds to `stridegen check` per scene (issue 33,
``stridegen.logs.check.lidar_motion``): CPU time of ``check_scene`` (metadata, ``deep=False``: what a build runs
before each scene; the command's image decode is the same with or without it) on raw logs, i.e. synthetic logs with
the annotations removed and every ego pose the identity, for this tree and optionally another revision's, rounds
alternated.

    .venv/bin/python benchmarks/bench_check_constant_poses.py                       # this tree only
    git worktree add /tmp/base <commit>
    .venv/bin/python benchmarks/bench_check_constant_poses.py --base /tmp/base --rounds 5

Logs (generated once into ``--workdir``, default synthetic size: 2 scenes of 20 s, 800 x 450): ``traffic`` (the
default log: no structure but the traffic, so the LiDAR cannot tell) and ``scenery`` (``static_scenery``: the LiDAR
says the ego moved); ``--log PATH`` adds any other log (e.g. one whose ego stands still). Each round runs every
side in a fresh single-threaded process (OMP/OpenBLAS/MKL threads 1) that imports the check, checks each scene once
untimed (imports of open3d and scipy, the reader's index), then times ``--repeat`` checks of each scene with
``time.process_time`` (user + sys of the process); min / median / max over rounds, repeats and scenes, in ms. The
import cost of the first comparison (open3d, scipy.spatial) is printed apart: a process pays it once.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VERSION = "v1.0-synthetic"
ENV_THREADS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def raw_copy(src: Path, dst: Path) -> Path:
    """``src`` without annotations, every ego pose the identity: what a converter without poses writes."""
    if dst.exists():
        return dst
    tmp = dst.with_name(dst.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp, ignore=shutil.ignore_patterns("instance_ids", "maps", ".stridegen-index"))
    for table in ("sample_annotation", "instance"):
        (tmp / VERSION / f"{table}.json").write_text("[]")
    poses = json.loads((tmp / VERSION / "ego_pose.json").read_text())
    for p in poses:
        p.update(rotation=[1.0, 0.0, 0.0, 0.0], translation=[0.0, 0.0, 0.0])
    (tmp / VERSION / "ego_pose.json").write_text(json.dumps(poses))
    tmp.rename(dst)
    return dst


def inner(log: Path, repeat: int) -> None:
    """One side's process: prints JSON {"warm_ms": [first check per scene], "ms": {scene: [ms per check]},
    "verdicts": {scene: [its constant_ego_pose findings]}}."""
    import cv2

    cv2.setNumThreads(1)
    from stridegen.logs import open_log
    from stridegen.logs.check import check_scene
    from stridegen.run.config import load_build_config

    settings = load_build_config(None).check_settings()
    reader = open_log(log)
    names = [name for name, _ in reader.scene_ids()]
    warm, verdicts = [], {}
    for name in names:
        t0 = time.process_time()
        findings = check_scene(reader, settings, name)
        warm.append((time.process_time() - t0) * 1e3)
        verdicts[name] = [
            f"{f.severity} {f.code}: {f.message[-220:]}" for f in findings if f.code == "constant_ego_pose"
        ]
    ms: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(repeat):
        for name in names:
            t0 = time.process_time()
            check_scene(reader, settings, name)
            ms[name].append((time.process_time() - t0) * 1e3)
    print(json.dumps({"warm_ms": warm, "ms": ms, "verdicts": verdicts}))


def run_side(tree: Path, log: Path, repeat: int) -> dict:
    env = {**os.environ, **ENV_THREADS, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--inner", str(log), "--repeat", str(repeat)]
    out = subprocess.run(cmd, env=env, cwd=tree, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inner", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--base", type=Path, help="another revision's tree (a git worktree) to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--log", type=Path, action="append", default=[], help="another log to measure as it is")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "stridegen-bench-constant-poses")
    args = parser.parse_args()
    if args.inner:
        inner(args.inner, args.repeat)
        return
    from stridegen.logs.synthetic.generator import generate_dataset

    logs: dict[str, Path] = {}
    for name, scenery in (("traffic", False), ("scenery", True)):
        full = args.workdir / name
        if not (full / VERSION).is_dir():
            generate_dataset(full, progress=False, overwrite=True, static_scenery=scenery)
        logs[name] = raw_copy(full, args.workdir / f"{name}-raw")
    logs.update({p.name: p for p in args.log})
    sides = {"new": REPO, **({"base": args.base} if args.base else {})}
    print(" ".join(["OMP_NUM_THREADS=1 ...", sys.executable, *sys.argv]))
    for name, log in logs.items():
        runs: dict[str, list[dict]] = {side: [] for side in sides}
        for r in range(args.rounds):
            order = list(sides) if r % 2 == 0 else list(reversed(sides))
            for side in order:
                runs[side].append(run_side(sides[side], log, args.repeat))
        for side, results in runs.items():
            warm = [v for res in results for v in res["warm_ms"][:1]]
            print(f"{name} [{side}]: first scene of a process (imports included) {statistics.median(warm):.0f} ms")
            for scene, found in results[0]["verdicts"].items():
                ms = [v for res in results for v in res["ms"][scene]]
                print(
                    f"    {scene}: ms min/median/max {min(ms):.0f} / {statistics.median(ms):.0f} / {max(ms):.0f} "
                    f"(n={len(ms)}) {found}"
                )


if __name__ == "__main__":
    main()
