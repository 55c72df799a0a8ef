"""ICP seconds per sweep of `stridegen calibrate poses` (open3d point-to-plane, DEFAULT_LEVELS), on consecutive
key sweeps of a synthetic log (nuscenes rig, ~22k points per sweep): median of ``--repeats`` registrations of
each pair onto a 3-sweep local map.

    .venv/bin/python benchmarks/bench_calibrate.py --pairs 10 --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from stridegen.calibration.icp import point_to_plane_icp
    from stridegen.core.transforms import transform_points
    from stridegen.logs import open_log
    from stridegen.logs.synthetic.generator import generate_dataset

    with tempfile.TemporaryDirectory() as tmp:
        generate_dataset(
            Path(tmp) / "log", scenes=1, seconds=args.pairs / 2 + 2, seed=0, width=320, height=180, progress=False
        )
        (scene,) = open_log(Path(tmp) / "log").scenes()
        pts = []
        for f in scene.frames:
            s = f.sensor("LIDAR_TOP")
            pts.append(transform_points(s.calibration.T_ego_from_sensor, f.lidar("LIDAR_TOP")[:, :3]))
        truth = [f.T_global_from_ego for f in scene.frames]
        seconds = []
        for k in range(3, min(3 + args.pairs, len(pts))):
            target = np.concatenate([transform_points(truth[j], pts[j]) for j in range(k - 3, k)])
            runs = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                point_to_plane_icp(pts[k], target, truth[k - 1])
                runs.append(time.perf_counter() - t0)
            seconds.append(statistics.median(runs))
    print(
        f"ICP seconds per sweep: median {statistics.median(seconds):.3f}, max {max(seconds):.3f} "
        f"over {len(seconds)} sweeps"
    )


if __name__ == "__main__":
    main()
