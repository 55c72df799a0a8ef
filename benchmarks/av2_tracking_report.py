"""Tracker quality on real tracks: Argoverse 2 ground truth fed to stridegen's tracker as detections.

    .venv/bin/python benchmarks/av2_tracking_report.py [AV2_ROOT] [--max-age 3]

For each AV2 log (default ../shared/data/av2/logs): every annotated box (city frame, velocity from its track's
neighbouring annotations) becomes a detection of score 1; the tracker assigns ids; stridegen's nuScenes tracking
evaluation (devkit-identical) scores the result against the same annotations. Perfect detections isolate the
association: every ID switch and fragmentation is the tracker's. Prints IDS, FRAG, MOTA, recall per log.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from stridegen import geometry as geo
from stridegen.classes import TRACKING_CLASSES
from stridegen.eval.tracking_cli import evaluate_log
from stridegen.logs import open_log
from stridegen.pipeline.detect import make_detector
from stridegen.pipeline.track import TrackerConfig, track_scene

DEFAULT_ROOT = Path(__file__).resolve().parents[2] / "shared" / "data" / "av2" / "logs"


def tracking_results(reader, max_age: int) -> dict:
    oracle = make_detector("oracle")
    results: dict[str, list[dict]] = {}
    for scene in reader.scenes():
        dets = [oracle.detect(f) for f in scene.frames]
        tracked = track_scene(dets, scene.timestamps_s, TrackerConfig(max_age=max_age))
        for frame, boxes in zip(scene.frames, tracked, strict=True):
            quat = boxes.extras.get("rotation_global")
            results[frame.token] = [
                {"sample_token": frame.token, "translation": boxes.center[i].tolist(),
                 "size": boxes.size_lwh[i, [1, 0, 2]].tolist(),
                 "rotation": (quat[i] if quat is not None else geo.yaw_to_quat(boxes.yaw[i])).tolist(),
                 "velocity": boxes.velocity[i, :2].tolist(), "tracking_id": f"{scene.name}-{boxes.track_id[i]}",
                 "tracking_name": str(boxes.label[i]), "tracking_score": float(boxes.score[i])}
                for i in range(len(boxes)) if boxes.label[i] in TRACKING_CLASSES]
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?", type=Path, default=DEFAULT_ROOT)
    ap.add_argument("--max-age", type=int, default=3)
    args = ap.parse_args()
    print(f"{'log':38s} {'frames':>6s} {'gt tracks':>9s} {'IDS':>5s} {'FRAG':>5s} {'MOTA':>7s} {'recall':>7s}")
    for log_dir in sorted(p for p in args.root.iterdir() if (p / "annotations.feather").is_file()):
        reader = open_log(log_dir)
        results = tracking_results(reader, args.max_age)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "tracks.json"
            path.write_text(json.dumps({"meta": {}, "results": results}))
            report = evaluate_log(log_dir, path)
        r = report.result
        n_tracks = len({str(t) for s in reader.scenes() for f in s.frames for t in f.annotations().boxes.track_id})
        print(f"{log_dir.name:38s} {report.n_samples:6d} {n_tracks:9d} {r.summary('ids'):5.0f} "
              f"{r.summary('frag'):5.0f} {r.summary('mota'):7.3f} {r.summary('recall'):7.3f}")


if __name__ == "__main__":
    main()
