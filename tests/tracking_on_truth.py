"""The tracker on perfect detections: a log's ground-truth boxes fed to stridegen's tracker, so that every ID
switch and fragmentation is the tracker's. For tests/pipeline/test_track.py (benchmarks/av2_tracking_report.py
gets the same results from ``run_track`` with the ``oracle`` detector)."""

from __future__ import annotations

from typing import Any

from stridegen.eval.validate.scoring import tracking_results as library_tracking_results
from stridegen.pipeline.detect import make_detector
from stridegen.pipeline.track import TrackerConfig


def tracking_results(reader: Any, max_age: int) -> dict:
    """The tracker's output on the log's ground truth as detections (nuScenes tracking-results dict)."""
    oracle = make_detector("oracle")
    samples = {f.token: oracle.detect(f) for s in reader.scenes() for f in s.frames}
    return library_tracking_results(reader, samples, TrackerConfig(max_age=max_age))
