"""Detector stage: backends that turn one frame into 3D boxes in the global frame.

Backends are ``detector`` entries of the registry (stridegen.core.registry: ``oracle``, ``simulated``,
``precomputed``, or a plugin) and are chosen in the build config; every backend returns ``Boxes`` in the global
frame with ``label`` = nuScenes detection class, ``score`` and ``velocity`` (vx, vy, 0).
"""

from stridegen.pipeline.detect.base import DETECTORS, Detector, make_detector, register_detector

__all__ = ["DETECTORS", "Detector", "make_detector", "register_detector"]
