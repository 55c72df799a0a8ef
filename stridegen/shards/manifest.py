"""manifest.json: the dataset's table of contents, deterministic (no wall-clock times), written atomically.

Content: schema version, versions of stridegen and the libraries that write the bytes, the build config and its
hash, the source log, the shards in scene order (file, scenes, counts, sha256, bytes), totals, and the scenes
that failed with their reasons. Timings go to build_report.json instead, so that the same input and config give
the same manifest bytes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from stridegen import __version__
from stridegen.core.canonical import canonical_json, sha256_canonical
from stridegen.formats.textfile import load_json
from stridegen.shards.schema import SCHEMA_VERSION, SHARD_FORMAT, ShardError
from stridegen.shards.writer import ShardInfo, atomic_write_bytes

MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = "stridegen-dataset"
COUNT_KEYS = (
    "frames",
    "keyframes",
    "detections",
    "tracks",
    "images",
    "skipped_keyframes",
    "ground_truth",
    "masks",
    "visible_masks",
    "regions",
    "regions_too_small",
    "qa",
)


def library_versions() -> dict[str, str]:
    """Versions of everything that shapes the shard bytes."""
    import h5py
    import numpy as np

    return {
        "stridegen": __version__,
        "h5py": h5py.__version__,
        "hdf5": h5py.version.hdf5_version,
        "numpy": np.__version__,
    }


class HashedConfig(Protocol):
    """What the manifest needs of a build config: the fields that can change the output, as plain JSON data."""

    def hashed_dict(self) -> dict[str, Any]: ...


def build_manifest(
    config: HashedConfig, source: dict[str, Any], shards: Sequence[ShardInfo], failed: Sequence[tuple[str, str]] = ()
) -> dict[str, Any]:
    """The manifest mapping. ``shards`` must already be in scene order; ``failed`` is (scene, reason)."""
    config_data = config.hashed_dict()
    totals = {key: 0 for key in COUNT_KEYS}
    for shard in shards:
        for key, value in shard.counts.items():
            totals[key] = totals.get(key, 0) + int(value)
    totals = dict(sorted(totals.items()))
    totals["scenes"] = sum(len(s.scenes) for s in shards)
    totals["shards"] = len(shards)
    totals["bytes"] = sum(s.bytes for s in shards)
    return {
        "format": MANIFEST_FORMAT,
        "shard_format": SHARD_FORMAT,
        "schema_version": SCHEMA_VERSION,
        "versions": library_versions(),
        "config_hash": sha256_canonical(config_data),
        "config": config_data,
        "source": dict(source),
        "shards": [s.to_json() for s in shards],
        "totals": totals,
        "visibility": visibility_summary(totals, config_data),
        "qa": qa_summary(totals),
        "failed_scenes": [{"scene": name, "reason": reason} for name, reason in failed],
    }


def visibility_summary(totals: dict[str, int], config_data: dict[str, Any]) -> dict[str, Any]:
    """Mask candidates, how many passed each visibility rule, how many passed all, and the regions made of them and
    left out for being smaller than the minimum region size (docs/visibility.md)."""
    return {
        "segmenter": config_data["segmenter"]["name"],
        "thresholds": config_data["visibility"],
        "candidates": int(totals.get("masks", 0)),
        "pass": {rule: int(totals.get(f"mask_pass_{rule}", 0)) for rule in ("box_iou", "coverage", "quality")},
        "visible": int(totals.get("visible_masks", 0)),
        "regions": int(totals.get("regions", 0)),
        "regions_too_small": int(totals.get("regions_too_small", 0)),
    }


def qa_summary(totals: dict[str, int]) -> dict[str, Any]:
    """QA counts by category, by class, by category and class (the shape of STRIDE-QA tables 4-5), by predicate."""
    by_category: dict[str, int] = {}
    by_class: dict[str, int] = {}
    by_predicate: dict[str, int] = {}
    by_category_class: dict[str, dict[str, int]] = {}
    skipped: dict[str, int] = {}
    for key, value in totals.items():
        kind, _, rest = key.partition("/")
        if kind == "qa_category":
            by_category[rest] = value
        elif kind == "qa_class":
            by_class[rest] = value
        elif kind == "qa_predicate":
            by_predicate[rest] = value
        elif kind == "qa_skipped_group":
            skipped[rest] = value
        elif kind == "qa_category_class":
            cat, _, cls = rest.partition("/")
            by_category_class.setdefault(cat, {})[cls] = value
    return {
        "total": int(totals.get("qa", 0)),
        "by_category": by_category,
        "by_class": by_class,
        "by_category_and_class": by_category_class,
        "by_predicate": by_predicate,
        "spatiotemporal_groups_skipped": skipped,
    }


def manifest_bytes(manifest: dict[str, Any]) -> bytes:
    """Sorted keys, two-space indent, trailing newline: the same mapping always gives the same bytes."""
    json.loads(canonical_json(manifest))  # refuses NaN / non-JSON values early
    return (json.dumps(manifest, sort_keys=True, indent=2, ensure_ascii=True, allow_nan=False) + "\n").encode()


def write_manifest(out_dir: str | Path, manifest: dict[str, Any]) -> Path:
    path = Path(out_dir) / MANIFEST_NAME
    atomic_write_bytes(path, manifest_bytes(manifest))
    return path


def check_totals(path: str | Path, manifest: dict[str, Any]) -> None:
    """ShardError naming the manifest ``path`` when its totals, or the QA and visibility summaries made of them, are
    not what its shards' counts add up to (a manifest edited by hand: the reader then checks each shard's counts
    against its entry, stridegen.shards.reader)."""
    shards, totals = manifest.get("shards"), manifest.get("totals")
    if not isinstance(shards, list) or not isinstance(totals, dict):
        return
    sums: dict[str, int] = {}
    for shard in shards:
        for key, value in (shard.get("counts") or {}).items():
            sums[key] = sums.get(key, 0) + int(value)
    sums["scenes"] = sum(len(s.get("scenes", [])) for s in shards)
    sums["shards"] = len(shards)
    sums["bytes"] = sum(int(s.get("bytes", 0)) for s in shards)
    for key in sorted(set(totals) | set(sums)):
        if totals.get(key, 0) != sums.get(key, 0):
            raise ShardError(
                path, f"totals.{key} is {totals.get(key, 0)}, its shards' counts add up to {sums.get(key, 0)}{_EDITED}"
            )
    derived = {
        "qa": qa_summary({k: int(v) for k, v in totals.items()}),
        "visibility": {
            "candidates": int(totals.get("masks", 0)),
            "pass": {r: int(totals.get(f"mask_pass_{r}", 0)) for r in ("box_iou", "coverage", "quality")},
            "visible": int(totals.get("visible_masks", 0)),
            "regions": int(totals.get("regions", 0)),
            "regions_too_small": int(totals.get("regions_too_small", 0)),
        },
    }
    for section, fields in derived.items():
        stated = manifest.get(section)
        if not isinstance(stated, dict):
            continue
        for key, value in fields.items():
            if key in stated and stated[key] != value:
                raise ShardError(path, f"{section}.{key} is {stated[key]}, its totals give {value}{_EDITED}")


_EDITED = " (the manifest was edited: rebuild or restore it)"


def _corrupt_manifest(path: Path, reason: str) -> ShardError:
    return ShardError(path, f"manifest is unreadable or corrupt: {reason}")


def read_manifest(path: str | Path) -> dict[str, Any]:
    """Read ``<dir>/manifest.json`` (or the file itself), checking its format and schema version."""
    path = Path(path)
    if path.is_dir():
        path = path / MANIFEST_NAME
    if not path.exists():
        raise ShardError(path, "manifest not found (is this a stridegen dataset folder?)")
    # Within the limits on inputs (size, NUL byte, nesting depth: docs/cli.md): a dataset folder may come from anyone.
    data = load_json(path, "manifest", _corrupt_manifest)
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        raise ShardError(
            path,
            f"not a stridegen manifest (format {data.get('format')!r})"
            if isinstance(data, dict)
            else "not a stridegen manifest",
        )
    version = data.get("schema_version")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise ShardError(
            path, f"schema version {version!r} is newer than this stridegen reads ({SCHEMA_VERSION}); upgrade stridegen"
        )
    for key in ("shards", "totals", "config_hash"):
        if key not in data:
            raise ShardError(path, f"manifest lacks {key!r}")
    return data
