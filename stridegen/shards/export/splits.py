"""Scene-level train / val / test splits of an export (the export options ``splits`` and ``split_seed``).

Every scene goes whole into one split, so no scene's images or objects are seen in two splits. A scene's split
is drawn from the sha256 of ``[split_seed, scene name]`` read as a number u in [0, 1): the first split whose
cumulative ratio exceeds u. It depends only on the scene's name, the seed and the ratios, never on the other
scenes, the scene order or the number of workers; a ratio is the expected share of scenes, not an exact count
(with few scenes a split may come out empty).

``splits`` is ``"train=0.8,val=0.1,test=0.1"`` or a mapping ``{"train": 0.8, ...}``; the ratios are positive
and sum to 1, split names are words joined by ``.`` (``SPLIT_RE``: the names ``datasets`` and folders accept).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stridegen.core.errors import ConfigError

# Split names datasets accepts (datasets/naming.py, ``_split_re``); no "-", which separates hf's shard numbering.
SPLIT_RE = re.compile(r"^\w+(\.\w+)*$")
SPLITS_FILE = "splits.json"
_SUM_TOLERANCE = 1e-6


@dataclass(frozen=True)
class SceneSplits:
    """Named ratios (in the order given) and the seed of the draw (module docstring)."""

    ratios: tuple[tuple[str, float], ...]
    seed: int = 0

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.ratios]

    def of(self, scene: str) -> str:
        """The split of the scene named ``scene``."""
        digest = hashlib.sha256(json.dumps([self.seed, scene]).encode()).digest()
        u = int.from_bytes(digest[:8], "big") / 2**64
        total = 0.0
        for name, ratio in self.ratios:
            total += ratio
            if u < total:
                return name
        return self.ratios[-1][0]  # u within the rounding of the sum below 1

    def assign(self, scenes: list[str]) -> dict[str, list[str]]:
        """Every split's scenes, in the order of ``scenes`` (every split present, possibly empty)."""
        by_split: dict[str, list[str]] = {name: [] for name in self.names}
        for scene in scenes:
            by_split[self.of(scene)].append(scene)
        return by_split


def parse_splits(value: Any, seed: Any = 0) -> SceneSplits | None:
    """The ``splits`` option as SceneSplits (None when not given); ConfigError for a malformed one."""
    if value is None:
        return None
    form = "expected name=ratio,... (e.g. train=0.8,val=0.1,test=0.1) or a mapping of split names to ratios"
    if isinstance(value, str):
        items: list[tuple[Any, Any]] = []
        for item in value.split(","):
            name, sep, ratio = item.partition("=")
            if not sep:
                raise ConfigError(f"splits {value!r}: bad item {item.strip()!r}; {form}")
            items.append((name.strip(), ratio.strip()))
    elif isinstance(value, Mapping):
        items = list(value.items())
    else:
        raise ConfigError(f"splits {value!r}: {form}")
    ratios: list[tuple[str, float]] = []
    for name, ratio in items:
        if not isinstance(name, str) or not SPLIT_RE.match(name):
            raise ConfigError(f"splits: split name {name!r} is not a datasets split name (letters, digits, _, .)")
        if name in dict(ratios):
            raise ConfigError(f"splits: split {name!r} given twice")
        try:
            number = float(ratio)
        except (TypeError, ValueError):
            raise ConfigError(f"splits: ratio {ratio!r} of {name!r} is not a number") from None
        if not math.isfinite(number) or number <= 0:
            raise ConfigError(f"splits: ratio of {name!r} must be positive, got {ratio!r}")
        ratios.append((name, number))
    if not ratios:
        raise ConfigError(f"splits {value!r}: {form}")
    total = sum(r for _, r in ratios)
    if abs(total - 1.0) > _SUM_TOLERANCE:
        raise ConfigError(f"splits: the ratios sum to {total:g}, not 1")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"split_seed must be an integer, got {seed!r}")
    return SceneSplits(tuple(ratios), seed)
