"""The files of robustness splits (``stridegen augment``; docs/augment.md) beside their shards: the source dataset
as the splits record it (``SourceInfo``), each sub-dataset's manifest (``write_split_manifest``) and ``index.json``
listing the sub-datasets of one source (``check_index``, ``write_index``). The sub-datasets themselves are
``stridegen.augment.split.SplitSpec``'s; their scenes are written by ``stridegen.shards.augmented``."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stridegen.augment.corruptions import all_names
from stridegen.augment.split import SPLIT_FORMAT, SPLIT_VERSION, SplitSpec
from stridegen.core.canonical import sha256_canonical
from stridegen.core.errors import ConfigError
from stridegen.shards.augmented import augmentation_totals
from stridegen.shards.manifest import HashedConfig, build_manifest, manifest_bytes, write_manifest
from stridegen.shards.reader import Dataset
from stridegen.shards.writer import ShardInfo, atomic_write_bytes

INDEX_NAME = "index.json"
INDEX_FORMAT = "stridegen-robustness-index"


@dataclass(frozen=True)
class SourceInfo:
    """The source dataset as the splits record it."""

    path: str  # absolute, on this machine; files record it relative to themselves (to_json)
    config_hash: str
    shards_digest: str  # SHA-256 of the canonical JSON of [[file, sha256], ...] of the source manifest
    scenes: tuple[str, ...]

    @classmethod
    def of(cls, dataset: Dataset) -> SourceInfo:
        shards = [[s["file"], s["sha256"]] for s in dataset.manifest["shards"]]
        return cls(
            str(Path(dataset.root).resolve()),
            str(dataset.manifest["config_hash"]),
            sha256_canonical(shards),
            tuple(dataset.scenes),
        )

    def to_json(self, folder: Path) -> dict[str, Any]:
        """The source as a file in ``folder`` records it: its path relative to ``folder`` (POSIX separators, e.g.
        ``../../demo``; no absolute path in a file that travels with the splits), config hash, shards digest."""
        relative = Path(os.path.relpath(self.path, Path(folder).resolve())).as_posix()
        return {"path": relative, "config_hash": self.config_hash, "shards_digest": self.shards_digest}

    def split_hash(self, spec: SplitSpec) -> str:
        """The config hash of the sub-dataset ``spec`` of this source."""
        return spec.split_hash(self.config_hash, self.shards_digest)


def check_index(out: Path, source: SourceInfo, overwrite: bool) -> list[dict[str, Any]]:
    """The entries of the index in ``out`` worth keeping (same source); ConfigError for another source unless
    ``overwrite``."""
    path = out / INDEX_NAME
    if not path.is_file():
        return []
    try:
        previous = json.loads(path.read_text())
        prev_source = previous["source"]
        entries = list(previous["splits"])
    except (OSError, ValueError, KeyError, TypeError, RecursionError):  # RecursionError: nested too deep
        if overwrite:
            return []
        raise ConfigError(f"{path} is unreadable; pass --overwrite to replace it") from None
    same = (prev_source.get("config_hash"), prev_source.get("shards_digest")) == (
        source.config_hash,
        source.shards_digest,
    )
    if not same:
        if overwrite:
            return []
        raise ConfigError(
            f"{out} holds robustness splits of another source dataset (config "
            f"{str(prev_source.get('config_hash'))[:12]}...); pass --overwrite or choose another --out"
        )
    return entries


def write_split_manifest(
    path: Path,
    spec: SplitSpec,
    split_hash: str,
    source_ds: Dataset,
    source: SourceInfo,
    config: HashedConfig,
    shards: Sequence[ShardInfo],
    failed: Sequence[tuple[str, str]],
) -> Path:
    """The manifest of the sub-dataset in ``path``: its ``shards`` and ``failed`` scenes, the source build's
    config verbatim, the split's hash, and ``augmentation`` (the corruption, the source, the totals)."""
    import cv2

    manifest = build_manifest(config, source_ds.manifest.get("source", {}), shards, failed)
    manifest["config"] = source_ds.manifest.get("config", {})  # the source build's config, verbatim
    manifest["config_hash"] = split_hash
    manifest["augmentation"] = {
        "format": SPLIT_FORMAT,
        "version": SPLIT_VERSION,
        **spec.describe(),
        "source_dataset": source.to_json(path),
        "versions": {"opencv": cv2.__version__},
        "totals": augmentation_totals(path, shards),
    }
    return write_manifest(path, manifest)


def index_entry(spec: SplitSpec, split_hash: str, scenes: int, failed_scenes: int) -> dict[str, Any]:
    """The index's entry of one sub-dataset (``scenes`` built or resumed, ``failed_scenes`` failed)."""
    desc = spec.describe()
    return {
        "corruption": desc["corruption"],
        "severity": desc["severity"],
        "kind": desc["kind"],
        "params": desc["params"],
        "seed": desc["seed"],
        "jpeg_quality": desc["jpeg_quality"],
        "path": spec.rel_path,
        "config_hash": split_hash,
        "scenes": scenes,
        "failed_scenes": failed_scenes,
    }


def write_index(out: Path, source: SourceInfo, kept: list[dict[str, Any]], entries: list[dict[str, Any]]) -> Path:
    """index.json: every sub-dataset of this source in ``out`` (the ``kept`` entries of earlier runs whose manifest
    still holds the recorded hash, plus this run's ``entries``), sorted by (registry order of the corruption,
    severity)."""
    by_key = {(e["corruption"], int(e["severity"])): e for e in kept if _still_there(out, e)}
    by_key.update({(e["corruption"], int(e["severity"])): e for e in entries})
    order = {name: k for k, name in enumerate(all_names())}
    ordered = [by_key[k] for k in sorted(by_key, key=lambda k: (order.get(k[0], len(order)), k[0], k[1]))]
    index = {"format": INDEX_FORMAT, "version": SPLIT_VERSION, "source": source.to_json(out), "splits": ordered}
    path = out / INDEX_NAME
    atomic_write_bytes(path, manifest_bytes(index))
    return path


def _still_there(out: Path, entry: dict[str, Any]) -> bool:
    try:
        manifest = json.loads((out / entry["path"] / "manifest.json").read_text())
        return manifest.get("config_hash") == entry["config_hash"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return False
