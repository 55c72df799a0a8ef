"""``stridegen anonymize``: the privacy pass (``stridegen.pipeline.anonymize.scene``; docs/anonymize.md) over a
built dataset, written as a new dataset: every scene of the source read, passed, written (a job on the scene
runner: resumable, on any executor; what each scene goes through is ``stridegen.shards.anonymization``'s). The
result equals a build of the source's log with that config.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stridegen.core.errors import ConfigError
from stridegen.pipeline.anonymize.faces import check_face_detector
from stridegen.run import backends
from stridegen.run.config import AnonymizeSection, BuildConfig, ExecutorSection, config_hash
from stridegen.run.executors import make_executor
from stridegen.run.runner import (
    JobTarget,
    RunObserver,
    SceneJob,
    SceneResult,
    SceneRunSummary,
    StageCallback,
    run_scene_jobs,
    run_stages,
)
from stridegen.shards.anonymization import anonymize_record, read_stored_scene, write_anonymization_sidecar
from stridegen.shards.journal import check_outside_source
from stridegen.shards.manifest import build_manifest, write_manifest
from stridegen.shards.reader import open_dataset
from stridegen.shards.writer import ShardInfo, write_shard


@dataclass
class AnonymizeResult(SceneRunSummary):
    out_dir: Path
    manifest_path: Path
    sidecar_path: Path | None
    config_hash: str
    results: list[SceneResult]
    wall_s: float


@dataclass(frozen=True)
class AnonymizeTask:
    """The pass's task (``SceneTask``; plain data): the source dataset, the output's config (dumped) and hash."""

    src_dir: str
    config: dict[str, Any]
    out_dir: str
    config_hash: str

    def run_scene(self, scene: str, report: StageCallback, timings: dict[str, float]) -> ShardInfo:
        """Read one scene of the source, run the pass, write its shard into the output."""
        config = BuildConfig.model_validate(self.config)
        state: dict[str, Any] = {}

        def read() -> None:
            state["record"] = read_stored_scene(self.src_dir, scene)

        def anonymize() -> None:
            section = config.anonymize
            state["record"] = anonymize_record(
                state["record"], section.image_options(), backends.face_detector(section)
            )

        def write() -> None:
            output = config.output
            state["info"] = write_shard(
                state["record"], self.out_dir, self.config_hash, output.compression, output.compression_level
            )

        run_stages(scene, [("read", read), ("anonymize", anonymize), ("write", write)], timings, report)
        info: ShardInfo = state["info"]
        return info


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
    start = time.perf_counter()
    src, out = Path(src_dir), Path(out_dir)
    check_outside_source(src, out)
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
    task = AnonymizeTask(str(src), config.model_dump(mode="json"), str(out), cfg_hash)
    job = SceneJob(JobTarget(out, cfg_hash, scenes), task)
    [outcome] = run_scene_jobs([job], make_executor(executor, int(workers)), overwrite, observer)
    new_manifest = build_manifest(config, manifest.get("source", {}), outcome.shards(), outcome.failures())
    manifest_path = write_manifest(out, new_manifest)
    sidecar = write_anonymization_sidecar(out, section.model_dump(mode="json"))
    return AnonymizeResult(out, manifest_path, sidecar, cfg_hash, outcome.results, time.perf_counter() - start)
