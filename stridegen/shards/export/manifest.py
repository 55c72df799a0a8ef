"""``export.json``: what an export job (``stridegen export``, stridegen.jobs.export) records beside the format's
files: the source dataset (path, config hash, digest of its shards), the exporter and its options, the export's
hash, the scenes, the totals of the scenes' counts and the sha256 of every file."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stridegen.core.canonical import sha256_canonical
from stridegen.core.errors import StrideGenError
from stridegen.shards.manifest import manifest_bytes
from stridegen.shards.reader import Dataset
from stridegen.shards.writer import ShardInfo, atomic_write_bytes, sha256_file

EXPORT_MANIFEST = "export.json"
EXPORT_FORMAT_VERSION = 1


def export_source(dataset: Dataset, src_dir: Path, out_dir: Path) -> dict[str, Any]:
    """The source dataset as an export records it: its path relative to the export folder ``out_dir`` (POSIX
    separators, e.g. ``../demo``: no absolute path in a file that travels with the export), config hash and the
    digest of its shards."""
    shards = [[s["file"], s["sha256"]] for s in dataset.manifest["shards"]]
    return {
        "path": Path(os.path.relpath(src_dir.resolve(), out_dir.resolve())).as_posix(),
        "config_hash": str(dataset.manifest.get("config_hash", "")),
        "shards_digest": sha256_canonical(shards),
    }


def export_hash(format_name: str, options: dict[str, Any], source: dict[str, Any]) -> str:
    """The export's config hash: changes with the format, its options and the source's config and shards."""
    return sha256_canonical(
        {
            "format": format_name,
            "version": EXPORT_FORMAT_VERSION,
            "options": options,
            "source_config_hash": source["config_hash"],
            "source_shards": source["shards_digest"],
        }
    )


def write_export_manifest(
    out: Path,
    format_name: str,
    options: dict[str, Any],
    config_hash: str,
    source: dict[str, Any],
    parts: Sequence[tuple[str, ShardInfo | None]],
    files: list[str],
) -> Path:
    """``out/export.json`` of the export of ``parts`` ((scene, its part's ShardInfo) in scene order) into
    ``files`` (relative to ``out``)."""
    totals: dict[str, int] = {}
    for scene, part in parts:
        if part is None:
            raise StrideGenError(f"{scene}: exported scene without a part")
        for key, value in part.counts.items():
            totals[key] = totals.get(key, 0) + int(value)
    manifest = {
        "format": "stridegen-export",
        "version": EXPORT_FORMAT_VERSION,
        "exporter": format_name,
        "options": options,
        "config_hash": config_hash,
        "source": source,
        "scenes": [scene for scene, _ in parts],
        "totals": dict(sorted(totals.items())),
        "files": [{"file": f, "sha256": sha256_file(out / f)} for f in sorted(files)],
    }
    path = out / EXPORT_MANIFEST
    atomic_write_bytes(path, manifest_bytes(manifest))
    return path
