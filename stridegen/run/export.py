"""``stridegen export``: a built dataset rewritten in another tool's format, scene by scene, resumable.

An exporter is an ``exporter`` backend of the registry (the formats and their protocol: stridegen.shards.export).
This module is the export job, with the shape of a build (stridegen.run.runner): every scene of the source becomes
one *part* (``parts/<scene>.jsonl``, the scene's records, plus whatever files the format keeps per scene, e.g.
images), written by a worker and recorded in the journal with its sha256; a rerun skips the scenes whose part is
intact. When every scene is done the exporter's ``finalize`` turns the parts, in scene order, into the format's
own files, and ``export.json`` records the source, the format and the sha256 of every file. Same source and
arguments give the same bytes, with any number of workers.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stridegen.core import registry
from stridegen.core.canonical import sha256_canonical
from stridegen.core.errors import ConfigError, StrideGenError
from stridegen.run.config import ExecutorSection
from stridegen.run.executors import make_executor
from stridegen.run.runner import (
    JobTarget,
    RunObserver,
    SceneResult,
    SceneRunSummary,
    StageCallback,
    failed_scene,
    read_part,
    run_jobs,
    write_part,
)
from stridegen.shards.export.base import Exporter
from stridegen.shards.manifest import manifest_bytes
from stridegen.shards.reader import open_dataset
from stridegen.shards.writer import ShardInfo, atomic_write_bytes, sha256_file

EXPORT_MANIFEST = "export.json"
EXPORT_FORMAT_VERSION = 1


@dataclass
class ExportResult(SceneRunSummary):
    out_dir: Path
    format: str
    manifest_path: Path | None
    results: list[SceneResult] = field(default_factory=list)  # in scene order
    wall_s: float = 0.0


def make_exporter(name: str, options: dict[str, Any] | None = None) -> Exporter:
    exporter: Exporter = registry.make("exporter", name, options or {})
    return exporter


def export_scene_part(
    src_dir: str, format_name: str, options: dict[str, Any], scene_name: str, out_dir: str
) -> ShardInfo:
    """Export one scene and write its part file (atomically); the part's ShardInfo for the journal."""
    exporter = make_exporter(format_name, options)
    with open_dataset(src_dir) as source:
        source.verify([scene_name])  # never export a shard that no longer matches its manifest
        records, counts = exporter.export_scene(source.scene(scene_name), Path(out_dir))
    return write_part(out_dir, scene_name, records, counts)


def _export_worker(payload: tuple[str, str, dict[str, Any], str, str], report: StageCallback) -> SceneResult:
    src_dir, format_name, options, scene_name, out_dir = payload
    timings: dict[str, float] = {}
    try:
        t0 = time.perf_counter()
        info = export_scene_part(src_dir, format_name, options, scene_name, out_dir)
        timings["export"] = time.perf_counter() - t0
        report(scene_name, "export")
        return SceneResult(scene_name, "built", info, timings_s=timings)
    except Exception as exc:  # one scene's failure is recorded; the others go on
        return failed_scene(scene_name, exc, timings)


def run_export(
    src_dir: str | Path,
    out_dir: str | Path,
    format_name: str,
    options: dict[str, Any] | None = None,
    workers: int = 1,
    overwrite: bool = False,
    observer: RunObserver | None = None,
    executor: ExecutorSection | str = "local",
) -> ExportResult:
    """Export the dataset ``src_dir`` into ``out_dir`` as ``format_name`` (module docstring). Config errors raise;
    a failed scene is recorded and the format's files are not written until every scene is done."""
    start = time.perf_counter()
    options = dict(options or {})
    make_exporter(format_name, options)  # an unknown format or a bad option fails now
    src, out = Path(src_dir), Path(out_dir)
    if out.resolve() == src.resolve() or src.resolve() in out.resolve().parents:
        raise ConfigError(f"--out {out} must lie outside the source dataset {src}")
    with open_dataset(src) as source:
        scenes = list(source.scenes)
        shards = [[s["file"], s["sha256"]] for s in source.manifest["shards"]]
        source_info = {
            "path": str(src.resolve()),
            "config_hash": str(source.manifest.get("config_hash", "")),
            "shards_digest": sha256_canonical(shards),
        }
    export_hash = sha256_canonical(
        {
            "format": format_name,
            "version": EXPORT_FORMAT_VERSION,
            "options": options,
            "source_config_hash": source_info["config_hash"],
            "source_shards": source_info["shards_digest"],
        }
    )
    [outcome] = run_jobs(
        [JobTarget(out, export_hash, scenes)],
        lambda job, scene: (str(src), format_name, options, scene, str(out)),
        _export_worker,
        make_executor(executor, workers),
        overwrite,
        observer,
    )
    result = ExportResult(out, format_name, None, outcome.results)
    if result.ok:
        records = [read_part(out, scene) for scene in scenes]
        files = make_exporter(format_name, options).finalize(out, records, source_info)
        result.manifest_path = _write_export_manifest(
            out, format_name, options, export_hash, source_info, result.results, files
        )
    result.wall_s = time.perf_counter() - start
    return result


def _write_export_manifest(
    out: Path,
    format_name: str,
    options: dict[str, Any],
    export_hash: str,
    source: dict[str, Any],
    results: Sequence[SceneResult],
    files: list[str],
) -> Path:
    totals: dict[str, int] = {}
    for r in results:
        if r.shard is None:
            raise StrideGenError(f"{r.scene}: exported scene without a part")
        for key, value in r.shard.counts.items():
            totals[key] = totals.get(key, 0) + int(value)
    manifest = {
        "format": "stridegen-export",
        "version": EXPORT_FORMAT_VERSION,
        "exporter": format_name,
        "options": options,
        "config_hash": export_hash,
        "source": source,
        "scenes": [r.scene for r in results],
        "totals": dict(sorted(totals.items())),
        "files": [{"file": f, "sha256": sha256_file(out / f)} for f in sorted(files)],
    }
    path = out / EXPORT_MANIFEST
    atomic_write_bytes(path, manifest_bytes(manifest))
    return path
