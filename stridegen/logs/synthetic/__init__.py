"""Synthetic driving logs with exact ground truth: `stridegen synth` and the truth API.

- ``world``: the road network (main road x cross road) and its ground shader.
- ``agents``: object classes, closed-form trajectories (arcs + lines, piecewise-constant acceleration).
- ``scenario``: per (seed, scene index) composition of the ego drive and the agents (six STRIDE-QA relations).
- ``lidar`` / ``render``: the sensor models (ray-cast LiDAR, z-buffered cuboid renderer).
- ``writer`` / ``generator``: nuScenes tables and files; ``generate_dataset`` and ``load_synthetic_truth``.

See docs/synthetic.md.
"""

from __future__ import annotations

from stridegen.logs.synthetic.generator import (
    GenerationSummary,
    OutputExistsError,
    generate_dataset,
    load_synthetic_truth,
)
from stridegen.logs.synthetic.scenario import SyntheticScene, compose_scene

__all__ = [
    "GenerationSummary",
    "OutputExistsError",
    "SyntheticScene",
    "compose_scene",
    "generate_dataset",
    "load_synthetic_truth",
]
