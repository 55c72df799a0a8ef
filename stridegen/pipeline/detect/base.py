"""The detector protocol; detectors are ``detector`` backends of the registry (stridegen.core.registry)."""

from __future__ import annotations

from typing import Any, Protocol

from stridegen.core import registry
from stridegen.core.boxes import Boxes
from stridegen.logs.base import Frame


class Detector(Protocol):
    """Turns one frame into boxes in the global frame. A backend that makes its boxes from the log's annotations
    says so with the class attribute ``uses_ground_truth = True`` (absent: False); the log check then reports a
    scene without annotations as one without detections. ``validation_options`` (optional, a class attribute) are
    the options ``stridegen validate`` gives the backend before the user's. ``check_inputs`` (optional, a static
    method taking the factory's options) checks the files the options name without building the backend (e.g.
    ``precomputed``'s results file): a command's driver calls it before any scene, the backend being built only in
    the workers."""

    name: str

    def detect(self, frame: Frame) -> Boxes: ...


DETECTORS = registry.table("detector")  # name -> "module:factory" (live: registrations show up here)


def register_detector(name: str, target: str) -> None:
    """Register a detector backend as ``"package.module:Factory"`` (imported only when used)."""
    registry.register("detector", name, target)


def make_detector(name: str, **options: Any) -> Detector:
    """The backend registered as ``name``, built with the config's keyword ``options``."""
    detector: Detector = registry.make("detector", name, options)
    return detector
