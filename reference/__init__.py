"""Reference oracles: independent implementations and devkit glue that the parity tests (tests/) and the benchmarks
(benchmarks/) compare stridegen against, one module each, imported as ``reference.<module>`` from the repository
root. Not shipped (the wheel packages ``stridegen*`` only); nothing in ``stridegen/`` imports it, and it imports
neither ``tests`` nor ``benchmarks`` (tests/test_import_boundaries.py checks all three). See README.md here.

- ``plain_tracker``: a loop-by-loop center tracker with PubTracker semantics (reference of pipeline/track.py).
- ``devkit_detection``: stridegen detection boxes as nuscenes-devkit ``EvalBoxes`` (the devkit is the reference).
- ``devkit_tracking``: synthetic nuScenes-like tracking records run through nuscenes-devkit's own loaders and
  ``TrackingEval`` and through stridegen's evaluator, and the metric-by-metric comparison.
- ``lsr_official``: a plain re-implementation of the STRIDE-QA-Bench toolkit's LSR evaluation, and the random
  official-format response records it is compared on.
- ``demo_contexts``: the spatial-QA contexts of a log's first frame straight from its ground-truth boxes (a fixture
  that the spatial-QA tests and benchmarks/bench_qa.py share; the build's own contexts come from its scene tables).
"""
