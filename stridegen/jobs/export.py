"""``stridegen export``: a built dataset rewritten in another tool's format, scene by scene, resumable.

An exporter is an ``exporter`` backend of the registry (the formats and their protocol: stridegen.shards.export).
This module is the export job, with the shape of a build (stridegen.run.runner): every scene of the source becomes
one *part* (``parts/<scene>.jsonl``, the scene's records, plus whatever files the format keeps per scene, e.g.
images), written by a worker and recorded in the journal with its sha256; a rerun skips the scenes whose part is
intact. When every scene is done the exporter's ``finalize`` turns the parts, in scene order, into the format's
own files, and ``export.json`` records the source, the format and the sha256 of every file
(``stridegen.shards.export.manifest``). Same source and arguments give the same bytes, with any number of workers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stridegen.run.config import ExecutorSection
from stridegen.run.executors import make_executor
from stridegen.run.runner import (
    JobOutcome,
    JobTarget,
    RunObserver,
    SceneJob,
    SceneResult,
    SceneRunSummary,
    StageCallback,
    read_parts,
    run_scene_jobs,
    write_part,
)
from stridegen.shards.export.base import make_exporter
from stridegen.shards.export.manifest import export_hash, export_source, write_export_manifest
from stridegen.shards.journal import check_outside_source
from stridegen.shards.reader import open_dataset
from stridegen.shards.writer import ShardInfo


@dataclass
class ExportResult(SceneRunSummary):
    out_dir: Path
    format: str
    manifest_path: Path | None
    results: list[SceneResult] = field(default_factory=list)  # in scene order
    wall_s: float = 0.0


@dataclass(frozen=True)
class ExportTask:
    """The export's task (``SceneTask``; plain data): the source dataset, the format and its options, the output."""

    src_dir: str
    format_name: str
    options: dict[str, Any]
    out_dir: str

    def run_scene(self, scene: str, report: StageCallback, timings: dict[str, float]) -> ShardInfo:
        """Export one scene and write its part (atomically); the part's ShardInfo for the journal."""
        t0 = time.perf_counter()
        exporter = make_exporter(self.format_name, self.options)
        with open_dataset(self.src_dir) as source:
            source.verify([scene])  # never export a shard that no longer matches its manifest
            records, counts = exporter.export_scene(source.scene(scene), Path(self.out_dir))
        info = write_part(self.out_dir, scene, records, counts)
        timings["export"] = time.perf_counter() - t0
        report(scene, "export")
        return info


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
    check_outside_source(src, out)
    with open_dataset(src) as source:
        scenes = list(source.scenes)
        source_info = export_source(source, src)
    config_hash = export_hash(format_name, options, source_info)
    result = ExportResult(out, format_name, None)

    def finish(outcome: JobOutcome) -> None:  # the format's files from the parts, once every scene is done
        result.results = outcome.results
        if outcome.ok:
            files = make_exporter(format_name, options).finalize(out, read_parts(out, scenes), source_info)
            parts = [(r.scene, r.shard) for r in outcome.results]
            result.manifest_path = write_export_manifest(
                out, format_name, options, config_hash, source_info, parts, files
            )

    task = ExportTask(str(src), format_name, options, str(out))
    job = SceneJob(JobTarget(out, config_hash, scenes), task, finish)
    run_scene_jobs([job], make_executor(executor, workers), overwrite, observer)
    result.wall_s = time.perf_counter() - start
    return result
