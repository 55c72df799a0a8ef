"""The embedded default log: a synthetic nuScenes-format log generated once into a cache folder and reused
(``stridegen build`` and ``stridegen validate`` without a log)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from stridegen.core.cache_dir import cache_root

# The embedded default log: several scenes with every class and scenario of the synthetic world, sized so that
# `stridegen build` (generation + build) stays under two minutes on a 2-core machine.
DEFAULT_SYNTHETIC: dict[str, object] = {
    "scenes": 3,
    "seconds": 20.0,
    "seed": 0,
    "width": 800,
    "height": 450,
    "rig": "nuscenes",
    "sweeps": False,
}


def synthetic_cache_dir(params: dict[str, object]) -> Path:
    """``<cache>/synthetic/<hash of the generator version and parameters>`` (``stridegen.core.cache_dir``)."""
    from stridegen.logs.synthetic.version import GENERATOR_VERSION

    key = json.dumps({"generator_version": GENERATOR_VERSION, **params}, sort_keys=True)
    return cache_root() / "synthetic" / hashlib.sha256(key.encode()).hexdigest()[:16]


def ensure_default_log(params: dict[str, object] | None = None, progress: bool = True) -> Path:
    """The cached synthetic log for ``params`` (the default ones when None), generated when absent.

    ``generate_dataset`` writes into a temporary sibling folder and renames it into place, so the cache entry is
    either complete or absent.
    """
    params = dict(DEFAULT_SYNTHETIC if params is None else params)
    path = synthetic_cache_dir(params)
    if (path / "v1.0-synthetic" / "scene.json").is_file():
        return path
    from stridegen.logs.synthetic.generator import generate_dataset  # only when generating (issue 35)

    path.parent.mkdir(parents=True, exist_ok=True)
    generate_dataset(path, progress=progress, overwrite=True, **params)  # type: ignore[arg-type]
    return path
