"""``stridegen export``: a built dataset rewritten in another tool's format, scene by scene, resumable.

An exporter is an ``exporter`` backend of the registry (the formats and their protocol: stridegen.shards.export).
This module is the export job, with the shape of a build (stridegen.run.runner): every scene of the source becomes
one *part* (``parts/<scene>.jsonl``, the scene's records, plus whatever files the format keeps per scene, e.g.
images), written by a worker and recorded in the journal with its sha256; a rerun skips the scenes whose part is
intact. When every scene is done the exporter's ``finalize`` turns the parts, in scene order, into the format's
own files, and ``export.json`` records the source, the format and the sha256 of every file
(``stridegen.shards.export.manifest``). Same source and arguments give the same bytes, with any number of workers.

Scene-level splits (the options ``splits`` and ``split_seed``, stridegen.shards.export.splits) are the job's, so
every exporter honours them: each scene is exported for its split, and ``finalize`` runs once per split over that
split's scenes. An exporter whose ``split`` option already names a folder inside the export
(``splits_in_place``, e.g. ``strideqa``) gets ``split=<name>`` and writes every split into the export folder;
any other writes each split into ``<out>/<split>/`` (with ``split=<name>`` too when it takes that option, e.g.
``hf``). ``splits.json`` records the ratios, the seed and each split's scenes. Without ``splits`` nothing changes.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stridegen.core import registry
from stridegen.core.errors import ConfigError
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
from stridegen.shards.export.splits import SPLITS_FILE, SceneSplits, parse_splits
from stridegen.shards.journal import check_outside_source
from stridegen.shards.reader import open_dataset
from stridegen.shards.writer import ShardInfo, atomic_write_bytes


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
    options: dict[str, Any]  # the exporter's own options (without ``splits`` / ``split_seed``)
    out_dir: str
    splits: SceneSplits | None = None

    def exporter_options(self, split: str | None) -> dict[str, Any]:
        """The exporter's options for ``split`` (None: no splits): ``split=<name>`` where the exporter takes it."""
        if split is None or not registry.accepts("exporter", self.format_name, "split"):
            return self.options
        return {**self.options, "split": split}

    def split_dir(self, split: str | None) -> str:
        """Where the exporter writes ``split``: the export folder, or ``<out>/<split>`` (module docstring)."""
        exporter_class = registry.resolve("exporter", self.format_name)
        if split is None or getattr(exporter_class, "splits_in_place", False):
            return ""
        return split

    def run_scene(self, scene: str, report: StageCallback, timings: dict[str, float]) -> ShardInfo:
        """Export one scene and write its part (atomically); the part's ShardInfo for the journal."""
        t0 = time.perf_counter()
        split = self.splits.of(scene) if self.splits else None
        exporter = make_exporter(self.format_name, self.exporter_options(split))
        with open_dataset(self.src_dir) as source:
            source.verify([scene])  # never export a shard that no longer matches its manifest
            out = Path(self.out_dir) / self.split_dir(split)
            records, counts = exporter.export_scene(source.scene(scene), out)
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
    splits, exporter_options = _split_options(format_name, options)
    make_exporter(format_name, exporter_options)  # an unknown format or a bad option fails now
    src, out = Path(src_dir), Path(out_dir)
    check_outside_source(src, out)
    with open_dataset(src) as source:
        scenes = list(source.scenes)
        source_info = export_source(source, src, out)
    config_hash = export_hash(format_name, options, source_info)
    result = ExportResult(out, format_name, None)

    task = ExportTask(str(src), format_name, exporter_options, str(out), splits)

    def finish(outcome: JobOutcome) -> None:  # the format's files from the parts, once every scene is done
        result.results = outcome.results
        if outcome.ok:
            if splits is None:
                files = make_exporter(format_name, options).finalize(out, read_parts(out, scenes), source_info)
            else:
                files = _finalize_splits(task, splits, scenes, source_info)
            parts = [(r.scene, r.shard) for r in outcome.results]
            result.manifest_path = write_export_manifest(
                out, format_name, options, config_hash, source_info, parts, files
            )

    job = SceneJob(JobTarget(out, config_hash, scenes), task, finish)
    run_scene_jobs([job], make_executor(executor, workers), overwrite, observer)
    result.wall_s = time.perf_counter() - start
    return result


def _split_options(format_name: str, options: dict[str, Any]) -> tuple[SceneSplits | None, dict[str, Any]]:
    """The export's splits (None without ``splits``) and the exporter's own options; ConfigError for a bad
    ``splits``, a ``split_seed`` without it, or ``split`` beside it."""
    exporter_options = {k: v for k, v in options.items() if k not in ("splits", "split_seed")}
    if "splits" not in options:
        if "split_seed" in options:
            raise ConfigError("split_seed is given without splits")
        return None, exporter_options
    if "split" in options:
        raise ConfigError("split and splits both given: splits names every split (and each split's folder)")
    registry.resolve("exporter", format_name)  # an unknown format before the splits' errors
    return parse_splits(options["splits"], options.get("split_seed", 0)), exporter_options


def _finalize_splits(task: ExportTask, splits: SceneSplits, scenes: list[str], source: dict[str, Any]) -> list[str]:
    """Each split's files from its scenes' parts (in scene order) and ``splits.json``; the paths relative to the
    export folder."""
    out = Path(task.out_dir)
    by_split = splits.assign(scenes)
    files = []
    for name, split_scenes in by_split.items():
        exporter = make_exporter(task.format_name, task.exporter_options(name))
        folder = task.split_dir(name)
        written = exporter.finalize(out / folder, read_parts(out, split_scenes), source)
        files += [f"{folder}/{f}" if folder else f for f in written]
    summary = {"splits": dict(splits.ratios), "split_seed": splits.seed, "scenes": by_split}
    atomic_write_bytes(out / SPLITS_FILE, json.dumps(summary, indent=2).encode() + b"\n")
    return [*files, SPLITS_FILE]
