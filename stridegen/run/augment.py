"""Robustness splits: a built dataset rewritten once per (corruption, severity) with degraded images.

``build_robustness_split(src_dir, out_dir, corruptions, severities)`` writes, for each pair,
``out_dir/<corruption>/s<severity>/`` as a complete stridegen dataset (manifest.json, shards/, journal.jsonl, read by
``open_dataset``) and ``out_dir/index.json`` listing them. Each scene is the source's with corrupted images
(``stridegen.augment.scene``: the draws, the black images of dropped cameras, the warped masks) and the tables that
follow from them (``stridegen.shards.augmented``: masks, QA visual evidence, the ``augmentation`` table). Each
sub-dataset's manifest keeps the source's build ``config`` and log ``source``; its ``config_hash`` is the hash of the
split (source config hash and shard digests, corruption, severity, its parameters, seed, JPEG quality), and
``augmentation`` records the source dataset (path, config hash), the corruption, severity and its parameters at that
severity (``level(severity)``).

Resume and determinism follow the build (stridegen.run.build): one journal per sub-dataset, a finished scene (``done``
with its shard intact) is skipped on a rerun, shards are written atomically, manifests and index have no times. The
same source and arguments give the same bytes with any number of workers.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from stridegen.augment.scene import SceneCorruption
from stridegen.core.canonical import sha256_canonical
from stridegen.core.errors import ConfigError
from stridegen.run.config import ExecutorSection
from stridegen.run.executors import make_executor
from stridegen.run.runner import (
    JobTarget,
    RunObserver,
    SceneResult,
    SceneRunSummary,
    StageCallback,
    failed_scene,
    run_jobs,
)
from stridegen.shards.augmented import augmentation_totals, corrupt_record

SPLIT_FORMAT = "stridegen-robustness-split"
SPLIT_VERSION = 1
INDEX_NAME = "index.json"
INDEX_FORMAT = "stridegen-robustness-index"


# ---------------------------------------------------------------------------------------------------------- specs
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


def _sha256_json(data: Any) -> str:
    return sha256_canonical(data)


@dataclass(frozen=True)
class SourceInfo:
    """The source dataset as the splits record it."""

    path: str  # absolute
    config_hash: str
    shards_digest: str  # SHA-256 of the canonical JSON of [[file, sha256], ...] of the source manifest
    scenes: tuple[str, ...]

    @classmethod
    def of(cls, dataset) -> SourceInfo:
        shards = [[s["file"], s["sha256"]] for s in dataset.manifest["shards"]]
        return cls(
            str(Path(dataset.root).resolve()),
            str(dataset.manifest["config_hash"]),
            _sha256_json(shards),
            tuple(dataset.scenes),
        )

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "config_hash": self.config_hash, "shards_digest": self.shards_digest}


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

    def split_hash(self, source: SourceInfo) -> str:
        """The sub-dataset's config hash: changes with anything that changes its bytes."""
        return _sha256_json(
            {
                "format": SPLIT_FORMAT,
                "version": SPLIT_VERSION,
                "source_config_hash": source.config_hash,
                "source_shards": source.shards_digest,
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
    from stridegen.augment.corruptions import resolve_names

    spec = corruptions if isinstance(corruptions, str) else ",".join(str(c) for c in corruptions)
    return resolve_names(spec)


def resolve_levels(severities: str | int | Sequence[int]) -> list[int]:
    """Sorted severities from ``"all"``, ``"1-3"``, ``"2,5"``, an int or a list of ints (ConfigError otherwise)."""
    from stridegen.augment.corruptions import check_severity, resolve_severities

    if isinstance(severities, str):
        return resolve_severities(severities)
    if isinstance(severities, (int, np.integer)) and not isinstance(severities, bool):
        return [check_severity(int(severities))]
    levels = sorted({check_severity(int(s)) for s in cast(Sequence[int], severities)})
    if not levels:
        raise ConfigError("no severity given")
    return levels


# ---------------------------------------------------------------------------------------------------------- one scene
def _compression(source_manifest: dict[str, Any]) -> tuple[str, int]:
    output = source_manifest.get("config", {}).get("output", {})
    return str(output.get("compression", "gzip")), int(output.get("compression_level", 4))


def process_split_scene(
    src_dir: str | Path, spec: SplitSpec, scene_name: str, sub_dir: str | Path, split_hash: str
) -> SceneResult:
    """Corrupt one scene of the source into one sub-dataset. Never raises for a bad scene: the failure comes back
    in the result."""
    from stridegen.shards.reader import open_dataset
    from stridegen.shards.writer import write_shard

    timings: dict[str, float] = {}
    try:
        t0 = time.perf_counter()
        with open_dataset(src_dir) as source:
            source.verify([scene_name])  # never degrade a shard that no longer matches its manifest
            record = source.scene(scene_name).record()
            compression, level = _compression(source.manifest)
        timings["read"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        out = corrupt_record(record, spec)
        timings["corrupt"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        info = write_shard(out, sub_dir, split_hash, compression, level)
        timings["write"] = time.perf_counter() - t0
        return SceneResult(scene_name, "built", info, timings_s=timings)
    except Exception as exc:  # one scene's failure is recorded; the others go on
        return failed_scene(scene_name, exc, timings)


def _split_worker(payload: tuple[str, dict[str, Any], str, str, str], report: StageCallback) -> SceneResult:
    from stridegen.augment.corruptions.base import keep_freed_memory

    keep_freed_memory()  # a worker corrupts image after image: their temporaries' pages are reused
    src_dir, spec_data, scene_name, sub_dir, split_hash = payload
    return process_split_scene(src_dir, SplitSpec(**spec_data), scene_name, sub_dir, split_hash)


# ---------------------------------------------------------------------------------------------------------- the run
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


def _read_source(src_dir: str | Path):
    from stridegen.run.config import BuildConfig
    from stridegen.shards.reader import open_dataset
    from stridegen.shards.schema import ShardError

    source = open_dataset(src_dir)
    try:
        config = BuildConfig.model_validate(source.manifest.get("config", {}))
    except Exception as exc:  # pydantic's ValidationError or a non-mapping config
        raise ShardError(Path(src_dir) / "manifest.json", f"its build config does not validate: {exc}") from None
    return source, config


def _check_index(out: Path, source: SourceInfo, overwrite: bool) -> list[dict[str, Any]]:
    """The previous index's entries worth keeping (same source); ConfigError for another source unless
    ``overwrite``."""
    path = out / INDEX_NAME
    if not path.is_file():
        return []
    try:
        previous = json.loads(path.read_text())
        prev_source = previous["source"]
        entries = list(previous["splits"])
    except (OSError, ValueError, KeyError, TypeError):
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


def _write_split_manifest(split: SplitOutcome, source_ds, source: SourceInfo, config) -> Path:
    import cv2

    from stridegen.shards.manifest import build_manifest, write_manifest

    shards = [r.shard for r in split.results if r.ok and r.shard is not None]
    manifest = build_manifest(
        config, source_ds.manifest.get("source", {}), shards, [(r.scene, r.reason) for r in split.results if not r.ok]
    )
    manifest["config"] = source_ds.manifest.get("config", {})  # the source build's config, verbatim
    manifest["config_hash"] = split.config_hash
    manifest["augmentation"] = {
        "format": SPLIT_FORMAT,
        "version": SPLIT_VERSION,
        **split.spec.describe(),
        "source_dataset": source.to_json(),
        "versions": {"opencv": cv2.__version__},
        "totals": augmentation_totals(split.path, shards),
    }
    return write_manifest(split.path, manifest)


def _index_entry(split: SplitOutcome) -> dict[str, Any]:
    desc = split.spec.describe()
    return {
        "corruption": desc["corruption"],
        "severity": desc["severity"],
        "kind": desc["kind"],
        "params": desc["params"],
        "seed": desc["seed"],
        "jpeg_quality": desc["jpeg_quality"],
        "path": split.spec.rel_path,
        "config_hash": split.config_hash,
        "scenes": sum(r.ok for r in split.results),
        "failed_scenes": len(split.failed),
    }


def _write_index(out: Path, source: SourceInfo, kept: list[dict[str, Any]], splits: list[SplitOutcome]) -> Path:
    """index.json: every sub-dataset of this source in ``out`` (earlier runs' ones whose manifest still holds the
    recorded hash, plus this run's), sorted by (registry order of the corruption, severity)."""
    from stridegen.augment.corruptions import all_names
    from stridegen.shards.manifest import manifest_bytes
    from stridegen.shards.writer import atomic_write_bytes

    entries = {(e["corruption"], int(e["severity"])): e for e in kept if _still_there(out, e)}
    entries.update({(s.spec.corruption, s.spec.severity): _index_entry(s) for s in splits})
    order = {name: k for k, name in enumerate(all_names())}
    ordered = [entries[k] for k in sorted(entries, key=lambda k: (order.get(k[0], len(order)), k[0], k[1]))]
    index = {"format": INDEX_FORMAT, "version": SPLIT_VERSION, "source": source.to_json(), "splits": ordered}
    path = out / INDEX_NAME
    atomic_write_bytes(path, manifest_bytes(index))
    return path


def _still_there(out: Path, entry: dict[str, Any]) -> bool:
    try:
        manifest = json.loads((out / entry["path"] / "manifest.json").read_text())
        return manifest.get("config_hash") == entry["config_hash"]
    except (OSError, ValueError, KeyError, TypeError):
        return False


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
    src = Path(src_dir)
    out = Path(out_dir)
    source_ds, config = _read_source(src)
    try:
        source = SourceInfo.of(source_ds)
        if out.resolve() == src.resolve() or src.resolve() in out.resolve().parents:
            raise ConfigError(f"--out {out} must lie outside the source dataset {src}")
        kept = _check_index(out, source, overwrite)
        splits = [
            SplitOutcome(SplitSpec(n, s, int(seed), int(jpeg_quality)), out / n / f"s{s}", "")
            for n in names
            for s in levels
        ]
        for split in splits:
            split.config_hash = split.spec.split_hash(source)
        targets = [JobTarget(split.path, split.config_hash, list(source.scenes)) for split in splits]
        outcomes = run_jobs(
            targets,
            lambda k, scene: (str(src), splits[k].spec.to_task(), scene, str(splits[k].path), splits[k].config_hash),
            _split_worker,
            make_executor(executor, int(workers)),
            overwrite,
            observer,
        )
        for split, outcome in zip(splits, outcomes, strict=True):
            split.results = outcome.results
        for split in splits:
            split.manifest_path = _write_split_manifest(split, source_ds, source, config)
        index_path = _write_index(out, source, kept, splits)
    finally:
        source_ds.close()
    return RobustnessResult(out, index_path, splits, time.perf_counter() - start)
