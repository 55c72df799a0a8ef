"""The detector protocol and its registry."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Protocol

from stridegen.boxes import Boxes
from stridegen.errors import ConfigError
from stridegen.logs.base import Frame


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
    try:
        target = DETECTORS[name]
    except KeyError:
        raise ConfigError(f"unknown detector {name!r}; available: {sorted(DETECTORS)}") from None
    module, attr = target.split(":")
    factory: Callable[..., Detector] = getattr(importlib.import_module(module), attr)
    return factory(**options)
