"""The segmenter registry: backend name -> ``"module:Factory"``, imported only when the backend is made."""

from __future__ import annotations

from typing import Any

from stridegen.errors import ConfigError
from stridegen.pipeline.registry import make_registered
from stridegen.pipeline.segment.base import Segmenter

# name -> "module:factory"; factories take keyword options from the config (``segment.options``).
SEGMENTERS: dict[str, str] = {
    "projected_box": "stridegen.pipeline.segment.projected_box:ProjectedBoxSegmenter",
    "grabcut": "stridegen.pipeline.segment.grabcut:GrabCutSegmenter",
    "lidar": "stridegen.pipeline.segment.lidar:LidarSegmenter",
    "sam2": "stridegen.pipeline.segment.sam2_backend:Sam2Segmenter",
}


def register_segmenter(name: str, target: str) -> None:
    """Register a segmenter backend as ``"package.module:Factory"`` (imported only when used)."""
    if ":" not in target:
        raise ConfigError(f"segmenter target must look like 'package.module:Factory', got {target!r}")
    SEGMENTERS[name] = target


def make_segmenter(name: str, **options: Any) -> Segmenter:
    """The backend registered as ``name``, built with the config's keyword ``options``."""
    return make_registered("segmenter", SEGMENTERS, name, options)
