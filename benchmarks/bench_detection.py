"""Detection evaluation time: stridegen.eval.detection vs nuscenes-devkit 1.2.0 on the same inputs.

    .venv/bin/python benchmarks/bench_detection.py [--samples 200] [--boxes 60] [--seed 0] [--repeat 3]

Builds a synthetic validation set (``--samples`` samples with ``--boxes`` ground-truth boxes each, predictions =
noisy copies of 85 % of them plus false positives, so about ``--boxes`` predictions per sample), then times
1. evaluation: the devkit's ``DetectionEval.evaluate`` (accumulate for 10 classes x 4 thresholds, calc_ap,
   calc_tp, DetectionMetrics) against ``evaluate_detection``;
2. filtering: the devkit's ``add_center_dist`` + ``filter_eval_boxes`` against ``filter_eval_boxes``.
It asserts that every AP, TP error, mAP and NDS agree to 1e-9 and prints both times and the ratio.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: reference

from reference.devkit_detection import to_eval_boxes
from stridegen.core import transforms as geo
from stridegen.core.vocabulary import ATTRIBUTE_NAMES, DETECTION_NAMES
from stridegen.eval.detection.data import CVPR_2019, TP_METRICS, DetectionConfig
from stridegen.eval.detection.evaluate import evaluate_detection
from stridegen.eval.detection.gt import SampleContext, filter_eval_boxes
from stridegen.formats.detection_boxes import DetectionBoxes


def make_inputs(n_samples: int, n_boxes: int, seed: int) -> tuple[DetectionBoxes, DetectionBoxes, SampleContext]:
    rng = np.random.default_rng(seed)
    tokens = np.array([f"sample-{i:05d}" for i in range(n_samples)], dtype=object)
    ego = np.concatenate([rng.uniform(-500, 500, (n_samples, 2)), np.zeros((n_samples, 1))], axis=1)
    n = n_samples * n_boxes
    sample = np.repeat(np.arange(n_samples), n_boxes)
    names = rng.choice(DETECTION_NAMES, n, p=[0.4, 0.08, 0.03, 0.03, 0.02, 0.2, 0.02, 0.02, 0.1, 0.1])
    attrs = rng.choice(("", *ATTRIBUTE_NAMES), n)
    velocity = rng.normal(0, 3, (n, 2))
    velocity[rng.random(n) < 0.1] = np.nan
    center = ego[sample] + np.concatenate([rng.uniform(-55, 55, (n, 2)), rng.normal(1, 0.5, (n, 1))], axis=1)
    gt = DetectionBoxes(
        tokens[sample],
        center,
        rng.uniform(0.4, 5, (n, 3)),
        geo.yaw_to_quat(rng.uniform(-np.pi, np.pi, n)),
        velocity,
        names,
        None,
        attrs,
        rng.integers(0, 30, n),
    )
    keep = np.flatnonzero(rng.random(n) < 0.85)
    m = len(keep)
    tp = DetectionBoxes(
        gt.sample_token[keep],
        gt.translation[keep] + rng.normal(0, 0.7, (m, 3)),
        gt.size[keep] * rng.uniform(0.8, 1.2, (m, 3)),
        geo.quat_multiply(gt.rotation[keep], geo.yaw_to_quat(rng.normal(0, 0.2, m))),
        np.nan_to_num(gt.velocity[keep]) + rng.normal(0, 0.5, (m, 2)),
        gt.detection_name[keep],
        np.round(rng.random(m), 3),
        attrs[keep],
    )
    n_fp = n - m
    fp_sample = rng.integers(0, n_samples, n_fp)
    fp = DetectionBoxes(
        tokens[fp_sample],
        ego[fp_sample] + rng.uniform(-55, 55, (n_fp, 3)),
        rng.uniform(0.4, 5, (n_fp, 3)),
        geo.yaw_to_quat(rng.uniform(-3, 3, n_fp)),
        rng.normal(0, 2, (n_fp, 2)),
        rng.choice(DETECTION_NAMES, n_fp),
        np.round(rng.random(n_fp) * 0.6, 3),
        rng.choice(("", *ATTRIBUTE_NAMES), n_fp),
    )
    pred = DetectionBoxes.concat([tp, fp])
    pred = pred.select(np.argsort(np.array([t for t in pred.sample_token]), kind="stable"))
    context = SampleContext(
        list(tokens), ego, np.empty(0, dtype=object), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 4))
    )
    return gt, pred, context


class _Db:
    """The tables the devkit's add_center_dist / filter_eval_boxes read, for samples without annotations."""

    def __init__(self, context: SampleContext) -> None:
        self.ego = dict(zip(context.sample_tokens, context.ego_translation_global.tolist(), strict=True))

    def get(self, table: str, token: str) -> dict:
        if table == "sample":
            return {"data": {"LIDAR_TOP": token}, "anns": []}
        if table == "sample_data":
            return {"ego_pose_token": token}
        return {"translation": self.ego[token]}


def _best(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--boxes", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from nuscenes.eval.common.loaders import add_center_dist
    from nuscenes.eval.common.loaders import filter_eval_boxes as devkit_filter
    from nuscenes.eval.detection.data_classes import DetectionConfig as DevkitConfig
    from nuscenes.eval.detection.evaluate import DetectionEval

    gt, pred, context = make_inputs(args.samples, args.boxes, args.seed)
    cfg = DetectionConfig.cvpr_2019()
    print(f"{args.samples} samples, {len(gt)} GT boxes, {len(pred)} predictions")

    # Filtering.
    t_ours_f, (gt_f, _) = _best(lambda: filter_eval_boxes(gt, context, cfg.class_range), args.repeat)
    pred_f, _ = filter_eval_boxes(pred, context, cfg.class_range)
    db = _Db(context)
    gt_eb, pred_eb = to_eval_boxes(gt), to_eval_boxes(pred)
    start = time.perf_counter()
    gt_dk = devkit_filter(db, add_center_dist(db, gt_eb), CVPR_2019["class_range"])
    t_dk_f = time.perf_counter() - start
    pred_dk = devkit_filter(db, add_center_dist(db, pred_eb), CVPR_2019["class_range"])
    assert len(gt_dk.all) == len(gt_f) and len(pred_dk.all) == len(pred_f)
    print(
        f"filtering GT      devkit {t_dk_f * 1e3:9.1f} ms   stridegen {t_ours_f * 1e3:8.2f} ms   "
        f"x{t_dk_f / t_ours_f:7.1f}"
    )

    # Evaluation on the filtered boxes (the devkit reads them in the order its filter left them).
    gt_f, pred_f = gt_f.select(gt_f.canonical_order()), pred_f.select(pred_f.canonical_order())
    ev = DetectionEval.__new__(DetectionEval)
    ev.cfg, ev.verbose = DevkitConfig.deserialize(CVPR_2019), False
    ev.gt_boxes, ev.pred_boxes = to_eval_boxes(gt_f), to_eval_boxes(pred_f)
    t_dk, (theirs, _) = _best(ev.evaluate, 1)
    t_ours, (ours, _) = _best(lambda: evaluate_detection(gt_f, pred_f, cfg), args.repeat)
    print(f"evaluation        devkit {t_dk * 1e3:9.1f} ms   stridegen {t_ours * 1e3:8.2f} ms   x{t_dk / t_ours:7.1f}")

    worst = 0.0
    for c in cfg.class_names:
        for th in cfg.dist_ths:
            worst = max(worst, abs(ours.label_aps[c][th] - theirs.get_label_ap(c, th)))
        for m in TP_METRICS:
            a, b = ours.label_tp_errors[c][m], theirs.get_label_tp(c, m)
            if not (math.isnan(a) and math.isnan(b)):
                worst = max(worst, abs(a - b))
    worst = max(worst, abs(ours.mean_ap - theirs.mean_ap), abs(ours.nd_score - theirs.nd_score))
    assert worst <= 1e-9, f"metrics differ by {worst}"
    print(
        f"mAP {ours.mean_ap:.6f}  NDS {ours.nd_score:.6f}  (devkit {theirs.mean_ap:.6f} / {theirs.nd_score:.6f}); "
        f"max |difference| over all APs, TP errors, mAP, NDS: {worst:.1e}"
    )


if __name__ == "__main__":
    main()
