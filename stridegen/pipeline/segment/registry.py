"""Segmenters are ``segmenter`` backends of the registry (stridegen.core.registry); the names here are its view."""

from __future__ import annotations

from typing import Any

from stridegen.core import registry
from stridegen.pipeline.segment.base import Segmenter

SEGMENTERS = registry.table("segmenter")  # name -> "module:factory" (live: registrations show up here)


def register_segmenter(name: str, target: str) -> None:
    """Register a segmenter backend as ``"package.module:Factory"`` (imported only when used)."""
    registry.register("segmenter", name, target)


def make_segmenter(name: str, **options: Any) -> Segmenter:
    """The backend registered as ``name``, built with the config's keyword ``options``."""
    segmenter: Segmenter = registry.make("segmenter", name, options)
    return segmenter
