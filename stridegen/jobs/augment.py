"""Robustness splits: a built dataset rewritten once per (corruption, severity) with degraded images.

``build_robustness_split(src_dir, out_dir, corruptions, severities)`` writes, for each pair,
``out_dir/<corruption>/s<severity>/`` as a complete stridegen dataset (manifest.json, shards/, journal.jsonl, read by
``open_dataset``) and ``out_dir/index.json`` listing them. Each scene is the source's with corrupted images
(``stridegen.augment.scene``: the draws, the black images of dropped cameras, the warped masks) and the tables that
follow from them (``stridegen.shards.augmented``: masks, QA visual evidence, the ``augmentation`` table). The
sub-datasets are ``stridegen.augment.split.SplitSpec``'s; their manifests and the index are written by
``stridegen.shards.splits``. Each sub-dataset's manifest keeps the source's build ``config`` and log ``source``; its
``config_hash`` is the hash of the split (source config hash and shard digests, corruption, severity, its
parameters, seed, JPEG quality), and ``augmentation`` records the source dataset (path, config hash), the
corruption, severity and its parameters at that severity (``level(severity)``).

Resume and determinism follow the build (stridegen.jobs.build): one journal per sub-dataset, a finished scene (``done``
with its shard intact) is skipped on a rerun, shards are written atomically, manifests and index have no times. The
same source and arguments give the same bytes with any number of workers.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stridegen.augment.corruptions.base import keep_freed_memory
from stridegen.augment.split import SplitSpec, resolve_corruptions, resolve_levels
from stridegen.core.errors import ConfigError
from stridegen.run.config import BuildConfig, ExecutorSection
from stridegen.run.executors import make_executor
from stridegen.run.lock import folder_lock
from stridegen.run.runner import (
    JobOutcome,
    JobTarget,
    RunObserver,
    SceneJob,
    SceneResult,
    SceneRunSummary,
    StageCallback,
    run_scene_jobs,
)
from stridegen.shards.augmented import process_split_scene
from stridegen.shards.journal import check_outside_source
from stridegen.shards.reader import Dataset, open_dataset
from stridegen.shards.schema import ShardError
from stridegen.shards.splits import SourceInfo, check_index, index_entry, write_index, write_split_manifest
from stridegen.shards.writer import ShardInfo


@dataclass(frozen=True)
class SplitTask:
    """A sub-dataset's task (``SceneTask``; plain data): the source dataset, the split and where it goes."""

    src_dir: str
    spec: dict[str, Any]  # SplitSpec.to_task()
    sub_dir: str
    split_hash: str

    def run_scene(self, scene: str, report: StageCallback, timings: dict[str, float]) -> ShardInfo:
        keep_freed_memory()  # a worker corrupts image after image: their temporaries' pages are reused
        return process_split_scene(self.src_dir, SplitSpec(**self.spec), scene, self.sub_dir, self.split_hash, timings)


@dataclass
class SplitOutcome(SceneRunSummary):
    """One sub-dataset of a run."""

    spec: SplitSpec
    path: Path
    config_hash: str
    manifest_path: Path | None = None
    results: list[SceneResult] = field(default_factory=list)  # in scene order


@dataclass
class RobustnessResult:
    out_dir: Path
    index_path: Path
    splits: list[SplitOutcome]
    wall_s: float

    @property
    def ok(self) -> bool:
        return not any(s.failed for s in self.splits)


def _read_source(src_dir: str | Path) -> tuple[Dataset, BuildConfig]:
    source = open_dataset(src_dir)
    try:
        config = BuildConfig.model_validate(source.manifest.get("config", {}))
    except Exception as exc:  # pydantic's ValidationError or a non-mapping config
        raise ShardError(Path(src_dir) / "manifest.json", f"its build config does not validate: {exc}") from None
    return source, config


def build_robustness_split(
    src_dir: str | Path,
    out_dir: str | Path,
    corruptions: str | Sequence[str],
    severities: str | int | Sequence[int],
    seed: int = 0,
    workers: int = 1,
    overwrite: bool = False,
    jpeg_quality: int = 95,
    observer: RunObserver | None = None,
    executor: ExecutorSection | str = "local",
) -> RobustnessResult:
    """Write ``out_dir/<corruption>/s<severity>/`` for every pair and ``out_dir/index.json`` (module docstring).

    Config errors (unknown corruption, bad severity, an output folder holding another split) raise ConfigError
    before anything is written; a scene that fails is recorded in its sub-dataset's manifest and the run goes on.
    """
    start = time.perf_counter()
    names = resolve_corruptions(corruptions)
    levels = resolve_levels(severities)
    if not 1 <= int(jpeg_quality) <= 100:
        raise ConfigError(f"jpeg_quality must be in 1..100, got {jpeg_quality}")
    if not 0 <= int(seed) < 2**32:
        raise ConfigError(f"seed must be in [0, 2**32), got {seed}")
    if int(workers) < 1:
        raise ConfigError(f"workers must be at least 1, got {workers}")
    src, out = Path(src_dir), Path(out_dir)
    source_ds, config = _read_source(src)
    try:
        source = SourceInfo.of(source_ds)
        check_outside_source(src, out)
        with folder_lock(out):  # the index spans the splits: one augment run per --out (the runner locks each split)
            kept = check_index(out, source, overwrite)
            specs = [SplitSpec(n, s, int(seed), int(jpeg_quality)) for n in names for s in levels]
            splits = [SplitOutcome(spec, out / spec.rel_path, source.split_hash(spec)) for spec in specs]

            def job(split: SplitOutcome) -> SceneJob:
                def finish(outcome: JobOutcome) -> None:
                    split.results = outcome.results
                    shards, failed = outcome.shards(), outcome.failures()
                    split.manifest_path = write_split_manifest(
                        split.path, split.spec, split.config_hash, source_ds, source, config, shards, failed
                    )

                task = SplitTask(str(src), split.spec.to_task(), str(split.path), split.config_hash)
                return SceneJob(JobTarget(split.path, split.config_hash, list(source.scenes)), task, finish)

            run_scene_jobs([job(split) for split in splits], make_executor(executor, int(workers)), overwrite, observer)
            entries = [index_entry(s.spec, s.config_hash, sum(r.ok for r in s.results), len(s.failed)) for s in splits]
            index_path = write_index(out, source, kept, entries)
    finally:
        source_ds.close()
    return RobustnessResult(out, index_path, splits, time.perf_counter() - start)
