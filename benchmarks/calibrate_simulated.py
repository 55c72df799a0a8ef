"""Calibration check of the `simulated` detector's profiles against a published detector's nuScenes figures.

    .venv/bin/python benchmarks/calibrate_simulated.py [LOG_ROOT] [--profile bevfusion] [--seeds 0 1 2]

Runs the simulated detector over every frame of the log (default: the embedded synthetic default), evaluates the
detections with stridegen's nuScenes detection metrics (devkit-identical) and prints mAP, mATE, mASE, mAOE, mAVE
next to the target (STRIDE-QA table 6, BEVFusion: mAP 0.701, mATE 0.136, mASE 0.168, mAOE 0.146, mAVE 1.28).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from stridegen.eval.validate.scoring import validate_detector
from stridegen.logs import open_log
from stridegen.pipeline.detect import make_detector

TARGET = {"mAP": 0.701, "mATE": 0.136, "mASE": 0.168, "mAOE": 0.146, "mAVE": 1.28}


def evaluate_profile(root: Path, profile: str, seed: int) -> dict[str, float]:
    metrics, row = validate_detector(open_log(root), make_detector("simulated", profile=profile, seed=seed))
    return {**row, "NDS (all 10 classes)": metrics.nd_score}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log_root", nargs="?", type=Path)
    ap.add_argument("--profile", default="bevfusion")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = ap.parse_args()
    root = args.log_root
    if root is None:
        from stridegen.logs.synthetic.default import ensure_default_log

        root = ensure_default_log(progress=False)
    rows = [evaluate_profile(root, args.profile, s) for s in args.seeds]
    print(f"log {root}, profile {args.profile}, seeds {args.seeds}")
    print(f"{'metric':6s} {'target':>8s} {'mean':>8s} {'std':>8s}")
    for key in rows[0]:
        vals = np.array([r[key] for r in rows])
        print(f"{key:6s} {TARGET.get(key, float('nan')):8.3f} {vals.mean():8.3f} {vals.std():8.3f}")
    print("(means over the classes present in the ground truth)")


if __name__ == "__main__":
    main()
