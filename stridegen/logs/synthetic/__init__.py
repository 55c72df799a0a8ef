"""Synthetic driving logs with exact ground truth: `stridegen synth` and the truth API.

- ``world``: the road network (main road x cross road) and its ground shader.
- ``agents``: object classes, closed-form trajectories (arcs + lines, piecewise-constant acceleration).
- ``scenario``: per (seed, scene index) composition of the ego drive and the agents (six STRIDE-QA relations).
- ``lidar`` / ``render``: the sensor models (ray-cast LiDAR, z-buffered cuboid renderer).
- ``writer`` / ``generator``: nuScenes tables and files; ``generate_dataset`` and ``load_synthetic_truth``.

See docs/synthetic.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stridegen.logs.synthetic.generator import (
        GenerationSummary,
        OutputExistsError,
        generate_dataset,
        load_synthetic_truth,
    )
    from stridegen.logs.synthetic.scenario import SyntheticScene, compose_scene

# Imported on first use (PEP 562): a build of the cached default log reads ``default`` only, and the generator
# (world, agents, renderer, LiDAR, writer: ~50 ms) is not loaded by it (issue 35).
_LAZY = {
    "GenerationSummary": "generator",
    "OutputExistsError": "generator",
    "generate_dataset": "generator",
    "load_synthetic_truth": "generator",
    "SyntheticScene": "scenario",
    "compose_scene": "scenario",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "GenerationSummary",
    "OutputExistsError",
    "SyntheticScene",
    "compose_scene",
    "generate_dataset",
    "load_synthetic_truth",
]
