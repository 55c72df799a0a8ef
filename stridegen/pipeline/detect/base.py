"""The detector protocol and its registry."""

from __future__ import annotations

from typing import Any, Protocol

from stridegen.boxes import Boxes
from stridegen.logs.base import Frame
from stridegen.pipeline.registry import make_registered


class Detector(Protocol):
    """Turns one frame into boxes in the global frame."""

    name: str

    def detect(self, frame: Frame) -> Boxes: ...


# name -> "module:factory"; factories take keyword options from the config.
DETECTORS: dict[str, str] = {
    "oracle": "stridegen.pipeline.detect.oracle:OracleDetector",
    "simulated": "stridegen.pipeline.detect.simulated:SimulatedDetector",
    "precomputed": "stridegen.pipeline.detect.precomputed:PrecomputedDetector",
}


def register_detector(name: str, target: str) -> None:
    """Register a detector backend as ``"package.module:Factory"`` (imported only when used)."""
    DETECTORS[name] = target


def make_detector(name: str, **options: Any) -> Detector:
    """The backend registered as ``name``, built with the config's keyword ``options``."""
    return make_registered("detector", DETECTORS, name, options)
