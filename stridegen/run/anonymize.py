"""``stridegen anonymize``: the privacy pass (``stridegen.pipeline.anonymize.scene``; docs/anonymize.md) over a
built dataset, written as a new dataset: every scene of the source read, passed, written (a job on the scene
runner: resumable, on any executor). The result equals a build of the source's log with that config.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from stridegen.core.errors import ConfigError
from stridegen.pipeline.anonymize.faces import check_face_detector
from stridegen.pipeline.anonymize.scene import anonymize_scene
from stridegen.run import backends
from stridegen.run.config import AnonymizeSection, BuildConfig, ExecutorSection, config_hash
from stridegen.run.runner import (
    JobTarget,
    RunObserver,
    SceneResult,
    SceneRunSummary,
    StageCallback,
    failed_scene,
    run_jobs,
    run_stages,
)
from stridegen.shards import adapters
from stridegen.shards.anonymization import write_anonymization_sidecar
from stridegen.shards.schema import SceneRecord


def anonymize_record(record: SceneRecord, section: AnonymizeSection) -> SceneRecord:
    """A stored scene through the pass: the same bytes as the build's anonymize stage gives."""
    out = anonymize_scene(
        record.meta.name,
        record.meta.log_name,
        record.frames.timestamp_us,
        record.cameras,
        record.images,
        [record.detections, record.ground_truth],
        section.image_options(),
        backends.face_detector(section),
    )
    frames, images, extra = adapters.anonymized_tables(record.frames, record.images, out)
    return replace(
        record,
        meta=replace(record.meta, log_name=out.log_name),
        frames=frames,
        images=images,
        extra={**record.extra, **extra},
    )


@dataclass
class AnonymizeResult(SceneRunSummary):
    out_dir: Path
    manifest_path: Path
    sidecar_path: Path | None
    config_hash: str
    results: list[SceneResult]
    wall_s: float


def _qa_skipped(manifest: dict[str, Any], scene_name: str) -> dict[str, int]:
    """The scene's spatiotemporal groups not made, by reason: kept in the manifest only (not in the shard)."""
    prefix = "qa_skipped_group/"
    for shard in manifest.get("shards", []):
        if scene_name in shard.get("scenes", []):
            counts = shard.get("counts", {})
            return {k[len(prefix) :]: int(v) for k, v in counts.items() if k.startswith(prefix)}
    return {}


def _scene_worker(payload: tuple[str, dict[str, Any], str, str, str], report: StageCallback) -> SceneResult:
    """Read one scene of the source, run the pass, write its shard into the output."""
    from stridegen.shards.reader import open_dataset
    from stridegen.shards.writer import write_shard

    src_dir, config_data, scene_name, out_dir, cfg_hash = payload
    config = BuildConfig.model_validate(config_data)
    timings: dict[str, float] = {}
    state: dict[str, Any] = {}
    try:

        def read() -> None:
            with open_dataset(src_dir) as source:
                source.verify([scene_name])
                record = source.scene(scene_name).record()
                state["record"] = replace(record, qa_skipped=_qa_skipped(source.manifest, scene_name))

        def anonymize() -> None:
            state["record"] = anonymize_record(state["record"], config.anonymize)

        def write() -> None:
            state["info"] = write_shard(
                state["record"], out_dir, cfg_hash, config.output.compression, config.output.compression_level
            )

        run_stages(scene_name, [("read", read), ("anonymize", anonymize), ("write", write)], timings, report)
        return SceneResult(scene_name, "built", state["info"], timings_s=timings)
    except Exception as exc:  # one scene's failure is recorded; the others go on
        return failed_scene(scene_name, exc, timings)


def anonymize_dataset(
    src_dir: str | Path,
    out_dir: str | Path,
    section: AnonymizeSection | None = None,
    workers: int = 1,
    overwrite: bool = False,
    observer: RunObserver | None = None,
    executor: ExecutorSection | str = "local",
) -> AnonymizeResult:
    """Write the anonymized copy of the built dataset ``src_dir`` into ``out_dir``: its shards rewritten by the
    pass, a manifest whose config is the source's with ``section`` (faces and plates on by default), and the
    sidecar. The result equals a build of the source's log with that config. A source whose build already ran the
    pass is refused (ConfigError)."""
    from stridegen.run.executors import make_executor
    from stridegen.shards.manifest import build_manifest, write_manifest
    from stridegen.shards.reader import open_dataset

    start = time.perf_counter()
    src, out = Path(src_dir), Path(out_dir)
    if out.resolve() == src.resolve() or src.resolve() in out.resolve().parents:
        raise ConfigError(f"--out {out} must lie outside the source dataset {src}")
    section = section or AnonymizeSection(faces=True, plates=True)
    if not section.active():
        raise ConfigError("nothing to do: faces and plates are both off")
    with open_dataset(src) as source:
        manifest, scenes = source.manifest, list(source.scenes)
    try:
        config = BuildConfig.model_validate(manifest.get("config", {}))
    except Exception as exc:  # pydantic's ValidationError or a non-mapping config
        raise ConfigError(f"{src}: the manifest's build config does not validate: {exc}") from None
    if config.anonymize.active():
        raise ConfigError(f"{src} is anonymized already (anonymize: {config.anonymize.model_dump(mode='json')})")
    if section.faces:
        check_face_detector(section.face_detector)  # fails now if onnxruntime is missing
    config = config.model_copy(update={"anonymize": section})
    cfg_hash = config_hash(config)
    config_data = config.model_dump(mode="json")
    [outcome] = run_jobs(
        [JobTarget(out, cfg_hash, scenes)],
        lambda job, scene: (str(src), config_data, scene, str(out), cfg_hash),
        _scene_worker,
        make_executor(executor, int(workers)),
        overwrite,
        observer,
    )
    results = outcome.results
    new_manifest = build_manifest(
        config,
        manifest.get("source", {}),
        [r.shard for r in results if r.ok and r.shard is not None],
        [(r.scene, r.reason) for r in results if not r.ok],
    )
    manifest_path = write_manifest(out, new_manifest)
    sidecar = write_anonymization_sidecar(out, section.model_dump(mode="json"))
    return AnonymizeResult(out, manifest_path, sidecar, cfg_hash, results, time.perf_counter() - start)
