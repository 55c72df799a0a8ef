"""Detector and tracker validation on a log with ground truth: ``scoring`` (the library functions) and ``cli``
(``stridegen validate``)."""
