"""One sub-dataset of a robustness split: a corruption at a severity (``SplitSpec``), what its manifest and index
say about it, and the hash that changes with anything that changes its bytes; and the names and severities a
command asks for (``resolve_corruptions``, ``resolve_levels``). The split's files are written by
``stridegen.shards.splits``, its scenes by ``stridegen.shards.augmented`` (the job: ``stridegen.jobs.augment``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from stridegen.augment.corruptions import resolve_names, resolve_severities
from stridegen.augment.corruptions.base import check_severity
from stridegen.augment.scene import SceneCorruption
from stridegen.core.canonical import sha256_canonical
from stridegen.core.errors import ConfigError

SPLIT_FORMAT = "stridegen-robustness-split"
SPLIT_VERSION = 1


def _jsonable(value: Any) -> Any:
    """Severity parameters as plain JSON (tuples and arrays to lists, numpy scalars to Python numbers)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_jsonable(v) for v in (value.tolist() if isinstance(value, np.ndarray) else value)]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return str(value)


@dataclass(frozen=True)
class SplitSpec(SceneCorruption):
    """One (corruption, severity) sub-dataset and the arguments that shape its bytes."""

    @property
    def rel_path(self) -> str:
        return f"{self.corruption}/s{self.severity}"

    def params(self) -> Any:
        return _jsonable(self.corruption_object().level(self.severity))

    def describe(self) -> dict[str, Any]:
        """What the manifest and the index record about the corruption."""
        c = self.corruption_object()
        kind = "camera_set" if self.camera_set else ("warp" if self.moves_pixels else "image")
        out = {
            "corruption": self.corruption,
            "severity": self.severity,
            "params": self.params(),
            "kind": kind,
            "seed": self.seed,
            "jpeg_quality": self.jpeg_quality,
            "description": c.description,
            "sources": list(c.sources),
        }
        if self.camera_set:
            out["draw_scope"] = self.draw_scope
        return out

    def split_hash(self, source_config_hash: str, source_shards_digest: str) -> str:
        """The sub-dataset's config hash of a source dataset (its config hash and the digest of its shards):
        changes with anything that changes its bytes."""
        return sha256_canonical(
            {
                "format": SPLIT_FORMAT,
                "version": SPLIT_VERSION,
                "source_config_hash": source_config_hash,
                "source_shards": source_shards_digest,
                "corruption": self.corruption,
                "severity": self.severity,
                "params": self.params(),
                "seed": self.seed,
                "jpeg_quality": self.jpeg_quality,
            }
        )

    def to_task(self) -> dict[str, Any]:
        return {
            "corruption": self.corruption,
            "severity": self.severity,
            "seed": self.seed,
            "jpeg_quality": self.jpeg_quality,
        }


def resolve_corruptions(corruptions: str | Sequence[str]) -> list[str]:
    """Canonical corruption names from ``"fog,snow"``, ``"all"``, a group name or a list of names."""
    spec = corruptions if isinstance(corruptions, str) else ",".join(str(c) for c in corruptions)
    return resolve_names(spec)


def resolve_levels(severities: str | int | Sequence[int]) -> list[int]:
    """Sorted severities from ``"all"``, ``"1-3"``, ``"2,5"``, an int or a list of ints (ConfigError otherwise)."""
    if isinstance(severities, str):
        return resolve_severities(severities)
    if isinstance(severities, (int, np.integer)) and not isinstance(severities, bool):
        return [check_severity(int(severities))]
    levels = sorted({check_severity(int(s)) for s in cast(Sequence[int], severities)})
    if not levels:
        raise ConfigError("no severity given")
    return levels
