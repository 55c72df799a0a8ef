"""Detector and tracker validation on a log with ground truth: ``scoring`` (the library functions; the command
``stridegen validate`` is stridegen/cli/validate.py)."""
