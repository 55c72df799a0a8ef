"""Tracker quality on real tracks: Argoverse 2 ground truth fed to stridegen's tracker as detections.

    .venv/bin/python benchmarks/av2_tracking_report.py [AV2_ROOT] [--max-age 3]

For each AV2 log (default ../shared/data/av2/logs): every annotated box (city frame, velocity from its track's
neighbouring annotations) becomes a detection of score 1 (the ``oracle`` detector); the tracker assigns ids
(``stridegen track``'s ``run_track``); stridegen's nuScenes tracking evaluation (devkit-identical) scores the result
against the same annotations. Perfect detections isolate the
association: every ID switch and fragmentation is the tracker's. Prints IDS, FRAG, MOTA, recall per log.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from stridegen.eval.tracking.evaluate import evaluate_log
from stridegen.jobs.detect import run_track
from stridegen.logs import open_log

DEFAULT_ROOT = Path(__file__).resolve().parents[2] / "shared" / "data" / "av2" / "logs"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?", type=Path, default=DEFAULT_ROOT)
    ap.add_argument("--max-age", type=int, default=3)
    args = ap.parse_args()
    print(f"{'log':38s} {'frames':>6s} {'gt tracks':>9s} {'IDS':>5s} {'FRAG':>5s} {'MOTA':>7s} {'recall':>7s}")
    for log_dir in sorted(p for p in args.root.iterdir() if (p / "annotations.feather").is_file()):
        reader = open_log(log_dir)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "tracks.json"
            run_track(log_dir, path, "oracle", tracker_options={"max_age": args.max_age})
            report = evaluate_log(log_dir, path)
        r = report.result
        n_tracks = len({str(t) for s in reader.scenes() for f in s.frames for t in f.annotations().boxes.track_id})
        print(
            f"{log_dir.name:38s} {report.n_samples:6d} {n_tracks:9d} {r.summary('ids'):5.0f} "
            f"{r.summary('frag'):5.0f} {r.summary('mota'):7.3f} {r.summary('recall'):7.3f}"
        )


if __name__ == "__main__":
    main()
