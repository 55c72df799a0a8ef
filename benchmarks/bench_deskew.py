"""De-skew alone: CPU per sweep of ``stridegen.logs.ros.deskew.deskew`` on the sweep ``bench_ros.py`` reads, and
the same call in another checkout (``--base TREE``) in alternated rounds.

The sweep is ``bench_ros.py``'s: ``--points`` points (x, y, z ~ N(0, 20 m), float32) in an [N, 5] float32 array,
each with its azimuth time (``-azimuth / 2 pi * 0.1`` s, all distinct: a LiDAR stamping every point) or, with
``--columns C``, its azimuth column's time (C columns a turn, points stored column after column, as
``ros_writer.column_times``); ``--layout rows`` stores them channel row after row instead (an organised cloud).
The ego drives at 10 m/s on a 50 m circle (0.2 rad/s of yaw), poses every 0.1 s on ``/tf`` (map -> base_link),
the LiDAR 1.8 m above the base (static link); the sweep is stamped at a pose stamp and its points reach 0.1 s
back (one pose segment). ``--yaw-rate`` changes the turn (1 rad/s: a tight urban turn), ``--segments`` the pose
period (several pose segments in one sweep).

Timing (the project's rule): CPU time (``time.process_time``: user + system) of ``--calls`` de-skews in place,
as the reader calls it (``out=points``, the ego pose at the stamp given), each on a fresh copy of the decoded
sweep, in a child process per side and round (single-threaded: ``single_thread.THREAD_ENV``); the copy alone is
timed in the same child and subtracted. Rounds alternate the sides; min / median / max over ``--rounds``.

With ``--instructions`` each side's child also runs under valgrind's callgrind (40 calls minus 10 calls, over 30:
instructions per de-skew, with two copies of the sweep), a figure the machine's load does not move.

    .venv/bin/python benchmarks/bench_deskew.py [--points 20000] [--columns 1000] [--rounds 7] [--base TREE]
        [--instructions]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from single_thread import THREAD_ENV  # noqa: E402

RADIUS_M = 50.0
SPEED_MPS = 10.0
T0_NS = 1_700_000_000_000_000_000


def sweep(points: int, columns: int, layout: str, seed: int = 0):  # type: ignore[no-untyped-def]
    """(points [N, 5] float32, times [N] float64 s before the stamp): the module docstring's sweep."""
    import numpy as np

    rng = np.random.default_rng(seed)
    xyz = rng.normal(0.0, 20.0, (points, 3)).astype(np.float32)
    cloud = np.zeros((points, 5), dtype=np.float32)
    cloud[:, :3] = xyz
    cloud[:, 3] = rng.uniform(0, 100, points)
    cloud[:, 4] = rng.integers(0, 32, points)
    turned = np.mod(np.arctan2(xyz[:, 1], xyz[:, 0]), 2 * np.pi) / (2 * np.pi)  # of the turn still to go
    times = (-turned * 0.1).astype(np.float32).astype(np.float64)  # the bench recording's float32 field
    if columns:
        column = np.minimum(np.floor(turned * columns), columns - 1)
        if layout == "rows":  # rows of one point per column (a column's points spread over the rows)
            channels = points // columns
            cloud = cloud[: channels * columns]
            times = np.tile(-(np.arange(columns)[::-1]) / columns * 0.1, channels)
        else:
            order = np.argsort(-column, kind="stable")
            cloud, times = cloud[order], (-column / columns * 0.1)[order]
    return cloud, times


def chain(yaw_rate: float, period_ns: int, seconds: float = 2.0):  # type: ignore[no-untyped-def]
    """(ChainPoses map -> base_link, T_ego_from_sensor): the ego on the circle, poses every ``period_ns``."""
    import numpy as np

    from stridegen.core.transforms import make_transform
    from stridegen.logs.ros.poses import PoseTrack
    from stridegen.logs.ros.tf import ChainPoses

    count = int(seconds * 1e9 / period_ns) + 1
    stamps = T0_NS + np.arange(count, dtype=np.int64) * period_ns
    radius = SPEED_MPS / yaw_rate if yaw_rate else 0.0
    poses = []
    for k in range(count):
        s = k * period_ns * 1e-9
        yaw = yaw_rate * s
        Rz = np.array([[np.cos(yaw), -np.sin(yaw), 0.0], [np.sin(yaw), np.cos(yaw), 0.0], [0.0, 0.0, 1.0]])
        p = radius * np.array([np.sin(yaw), 1.0 - np.cos(yaw), 0.0]) if yaw_rate else np.array([SPEED_MPS * s, 0, 0])
        poses.append(make_transform(Rz, p))
    track = PoseTrack(Path("poses"), stamps, np.array(poses))
    T_ego_from_sensor = make_transform(np.eye(3), np.array([1.0, 0.0, 1.8]))
    return ChainPoses(Path("poses"), [track], "/tf map -> base_link", ["map", "base_link"]), T_ego_from_sensor


def child(args: argparse.Namespace) -> None:
    """One side's round: prints {"deskew_ms": CPU ms per sweep, "copy_ms": ...}."""
    import numpy as np

    from stridegen.logs.ros.deskew import deskew

    cloud, times = sweep(args.points, args.columns, args.layout)
    poses, T_ego_from_sensor = chain(args.yaw_rate, args.pose_period_ns)
    stamp = T0_NS + 10 * 100_000_000  # a pose stamp (1 s in)
    pose = poses.T_global_from_ego(np.array([stamp]), 0)[0]
    buf = cloud.copy()
    for _ in range(5):  # warm-up (workspaces, caches)
        np.copyto(buf, cloud)
        deskew(buf, times, stamp, T_ego_from_sensor, poses, 50_000_000, out=buf, T_global_from_ego=pose)
    start = time.process_time()
    for _ in range(args.calls):
        np.copyto(buf, cloud)
    copy = time.process_time() - start
    start = time.process_time()
    for _ in range(args.calls):
        np.copyto(buf, cloud)
        deskew(buf, times, stamp, T_ego_from_sensor, poses, 50_000_000, out=buf, T_global_from_ego=pose)
    total = time.process_time() - start
    print(json.dumps({"deskew_ms": (total - copy) / args.calls * 1e3, "copy_ms": copy / args.calls * 1e3}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=20000)
    parser.add_argument("--columns", type=int, default=0, help="one time per azimuth column, C a turn (0: per point)")
    parser.add_argument("--layout", choices=["runs", "rows"], default="runs", help="with --columns: storage order")
    parser.add_argument("--yaw-rate", type=float, default=SPEED_MPS / RADIUS_M, help="rad/s (default 0.2)")
    parser.add_argument("--pose-period-ns", type=int, default=100_000_000, help="pose stamps' spacing")
    parser.add_argument("--calls", type=int, default=300, help="de-skews per round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--base", type=Path, default=None, help="another checkout, run in alternated rounds")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count instructions per sweep under valgrind's callgrind (independent of the machine's load)",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    sides = {"this tree": REPO}
    if args.base is not None:
        sides = {f"base {args.base}": args.base.resolve(), "this tree": REPO}
    forwarded = [a for a in sys.argv[1:] if a != "--base" and a != str(args.base)]
    print("$ .venv/bin/python benchmarks/bench_deskew.py " + shlex.join(sys.argv[1:]))
    results: dict[str, list[float]] = {name: [] for name in sides}
    copies: list[float] = []
    for _ in range(args.rounds):
        for name, tree in sides.items():
            env = {**os.environ, **THREAD_ENV, "PYTHONPATH": str(tree)}
            run = subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), *forwarded, "--child"],
                env=env,
                cwd=tree,
                check=True,
                capture_output=True,
                text=True,
            )
            got = json.loads(run.stdout.strip().splitlines()[-1])
            results[name].append(got["deskew_ms"])
            copies.append(got["copy_ms"])
    for name, values in results.items():
        print(
            f"{name}: de-skew CPU ms per sweep min {min(values):.3f} / median {statistics.median(values):.3f} / "
            f"max {max(values):.3f} ({args.rounds} rounds of {args.calls})"
        )
    print(f"(the sweep's copy, subtracted: median {statistics.median(copies):.3f} ms)")
    if args.instructions:
        for name, tree in sides.items():
            print(f"{name}: {instructions_per_sweep(tree, forwarded) / 1e6:.3f} M instructions per sweep (callgrind)")


def instructions_per_sweep(tree: Path, forwarded: list[str]) -> float:
    """Instructions of one de-skew (and two copies of the sweep): callgrind's total for a child of 40 calls minus
    one of 10, over 30 (the imports and set-up cancel)."""
    totals = []
    for calls in (10, 40):
        with tempfile.TemporaryDirectory(prefix="bench-deskew-") as tmp:
            out = Path(tmp) / "callgrind.out"
            args = [a for a in forwarded if a != "--instructions"]
            command = [sys.executable, str(Path(__file__).resolve()), *args, "--child", "--calls", str(calls)]
            env = {**os.environ, **THREAD_ENV, "PYTHONPATH": str(tree)}
            subprocess.run(
                ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *command],
                env=env,
                cwd=tree,
                check=True,
                capture_output=True,
            )
            summary = [line for line in out.read_text().splitlines() if line.startswith(("summary:", "totals:"))]
            totals.append(int(summary[-1].split()[1]))
    return (totals[1] - totals[0]) / 30


if __name__ == "__main__":
    main()
