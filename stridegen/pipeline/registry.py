"""Backend registries of the pipeline stages: a name maps to ``"package.module:Factory"``, and the module is
imported only when a backend of that name is made (heavy optional dependencies load lazily)."""

from __future__ import annotations

import importlib
from typing import Any

from stridegen.errors import ConfigError


def make_registered(kind: str, registry: dict[str, str], name: str, options: dict[str, Any]) -> Any:
    """``Factory(**options)`` of the backend registered as ``name``; ConfigError naming the ``kind`` of backend
    ("detector", "segmenter") and the registered names when there is none."""
    try:
        target = registry[name]
    except KeyError:
        raise ConfigError(f"unknown {kind} {name!r}; available: {sorted(registry)}") from None
    module, attr = target.split(":")
    return getattr(importlib.import_module(module), attr)(**options)
