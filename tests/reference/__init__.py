"""Test oracles: independent reference implementations that the tests (and the benchmarks) compare stridegen
against, one module each. They never import ``benchmarks``; benchmarks import them from here.

- ``plain_tracker``: a loop-by-loop center tracker with PubTracker semantics (reference of pipeline/track.py).
- ``devkit_detection``: stridegen detection boxes as nuscenes-devkit ``EvalBoxes`` (the devkit is the reference).
- ``devkit_tracking``: synthetic nuScenes-like tracking records run through nuscenes-devkit's own loaders and
  ``TrackingEval`` and through stridegen's evaluator, and the metric-by-metric comparison.
- ``lsr_official``: a plain re-implementation of the STRIDE-QA-Bench toolkit's LSR evaluation, and the random
  official-format response records it is compared on.
"""
