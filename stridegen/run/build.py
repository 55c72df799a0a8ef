"""The build: log -> per-scene stages -> one HDF5 shard per scene, resumable, on any executor.

One scene runs the stages of ``SCENE_STAGES`` in order over one ``SceneState``: read (frames, calibration, ground
truth), keyframes, detect, track, attributes, images, segment (with visibility, timed apart), qa, write. Stages are
the pipeline's functions over arrays; the storage tables are made by ``stridegen.shards.adapters``. Backends
(detector, tracker, segmenter, log reader) come from the registry by the names in the config.

The scene runner (``stridegen.run.runner``) checks the output folder, keeps the journal and resumes; the executor
(``executor`` in the config, ``local`` by default) runs scenes in-process or on worker processes, each writing its
scene's shard itself (atomic rename). The manifest is written at the end in scene order. Shard bytes depend only
on (log, config), never on the executor or on the order scenes finish in.

A scene that fails (a typed StrideGenError or any unexpected exception) is recorded in the journal and the
summary with its reason; the build goes on with the other scenes, and ``BuildResult.ok`` is False.

Before any stage runs, the log check (``stridegen.run.check``, metadata only) looks at the selected scenes: an
error of the whole log raises ``LogCheckError`` before any scene starts; a scene with an error finding (a bad pose
or calibration, a timestamp unit, an unsafe scene name, ...) is recorded as failed with the finding's message and
runs no stage; warnings (no keyframes, constant ego poses, no annotations, ...) are kept in
``BuildResult.warnings``. Where the reader can tell the whole-log errors without building a scene
(``LogReader.unknown_modalities``), each scene is checked in its own worker, just before its stages (it reads the
scene's metadata once for both, and no serial walk over the log delays the start); otherwise every scene is checked
first, in this process.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.core import geometry as geo
from stridegen.core import registry
from stridegen.core.boxes import Boxes
from stridegen.core.errors import ConfigError, LogCheckError, LogFormatError, StrideGenError
from stridegen.core.seeding import rng_for
from stridegen.formats.images import decode_image, image_size
from stridegen.logs import open_log
from stridegen.logs.base import Frame, LogReader, Scene, SensorSample
from stridegen.logs.check import (
    ERROR,
    WARNING,
    CheckReport,
    Finding,
    check_log,
    check_log_wide,
    check_scene,
    failure_reason,
    summarize_errors,
)
from stridegen.pipeline.attributes import SceneAttributes, SceneTracks, dense_tracks, extract_attributes
from stridegen.pipeline.detect.base import Detector
from stridegen.pipeline.keyframes import sample_keyframes
from stridegen.pipeline.qa.stage import QARow, generate_scene_qa
from stridegen.pipeline.segment.base import Segmenter
from stridegen.pipeline.segment.stage import SceneMasks, SceneRegions, assign_regions, context_frames, segment_images
from stridegen.pipeline.visibility import min_region_area_px
from stridegen.run.anonymize import anonymize_stage, resolve_build_config, write_anonymization_sidecar
from stridegen.run.config import BuildConfig, config_hash
from stridegen.run.detect import make_detector_backend
from stridegen.run.executors import make_executor
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
from stridegen.shards.manifest import build_manifest, write_manifest
from stridegen.shards.schema import (
    CamerasTable,
    DetectionsTable,
    FramesTable,
    GroundTruthTable,
    ImagesTable,
    KeyframesTable,
    SceneMeta,
    SceneRecord,
    SkippedKeyframesTable,
)
from stridegen.shards.writer import atomic_write_bytes, write_shard

# Every timed step of a scene, in order: the stages, plus visibility (measured inside segment, per image).
STAGES = (
    "read", "keyframes", "detect", "track", "attributes", "images", "segment", "visibility", "qa", "anonymize", "write"
)  # fmt: skip
SUB_STAGES: dict[str, Sequence[str]] = {"segment": ("visibility",)}
REPORT_NAME = "build_report.json"


@dataclass
class BuildResult(SceneRunSummary):
    out_dir: Path
    manifest_path: Path
    config_hash: str
    results: list[SceneResult]  # in scene order
    wall_s: float
    warnings: list[Finding] = field(default_factory=list)  # the log check's warnings of the built scenes
    check: CheckReport | None = None

    @property
    def qa(self) -> int:
        """QA rows in the dataset's shards (built and resumed scenes)."""
        return sum(int(r.shard.counts.get("qa", 0)) for r in self.results if r.ok and r.shard is not None)


# ---------------------------------------------------------------------------------------------------------- backends
_READERS: dict[tuple[str, str | None, str | None], LogReader] = {}
_SEGMENTERS: dict[str, Segmenter] = {}


def open_log_cached(log_root: str | Path, fmt: str | None, version: str | None) -> LogReader:
    """One reader per (root, format, version) per process: workers index a log's tables once."""
    key = (str(Path(log_root).resolve()), fmt, version)
    if key not in _READERS:
        _READERS[key] = open_log(log_root, fmt, version)
    return _READERS[key]


def make_build_tracker(config: BuildConfig) -> Any:
    """The configured tracker backend (``provides_detections``: it is the detect stage's source as well)."""
    return registry.make("tracker", config.tracker.name, config.tracker.tracker_options())


def make_build_detector(config: BuildConfig) -> Detector:
    """The configured detector, given the build seed when its factory takes a ``seed`` and the config set none."""
    return make_detector_backend(config.detector.name, config.detector.options, config.seed)


def make_build_segmenter(config: BuildConfig) -> Segmenter | None:
    """The configured segmenter, built once per process (a SAM 2 model is expensive to load); None for "none"."""
    from stridegen.core.canonical import canonical_json

    if config.segmenter.name == "none":
        return None
    key = canonical_json([config.segmenter.name, config.segmenter.options])
    if key not in _SEGMENTERS:
        _SEGMENTERS[key] = registry.make("segmenter", config.segmenter.name, config.segmenter.options)
    return _SEGMENTERS[key]


def image_frame_indices(keyframes: KeyframesTable, n_frames: int, mode: str) -> list[int]:
    """Which frames' images to store: "windows" (union of the keyframes' windows), "keyframes", "all", "none"."""
    if mode == "all":
        return list(range(n_frames))
    if mode == "none":
        return []
    if mode == "keyframes":
        return sorted({int(i) for i in keyframes.frame_index})
    window = np.asarray(keyframes.window)
    return sorted({int(i) for i in window[window >= 0]} | {int(i) for i in keyframes.frame_index})


# ---------------------------------------------------------------------------------------------------------- stages
@dataclass
class SceneState:
    """What the stages of one scene read and write, filled in stage order."""

    scene: Scene
    config: BuildConfig
    source_format: str = ""
    source_version: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    frames: FramesTable | None = None
    cameras: CamerasTable | None = None
    ground_truth: GroundTruthTable | None = None
    times_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    keyframes: KeyframesTable | None = None
    skipped: SkippedKeyframesTable | None = None
    tracker: Any = None  # the scene's tracker backend (made by the detect stage)
    detections: list[Boxes] = field(default_factory=list)
    tracked: list[Boxes] = field(default_factory=list)  # the tracker's active tracks of each frame
    track_ids: list[np.ndarray] = field(default_factory=list)  # per frame, the track id of each detection
    scene_tracks: SceneTracks | None = None
    attributes: SceneAttributes | None = None
    images: ImagesTable | None = None
    masks: SceneMasks | None = None
    regions: SceneRegions | None = None
    qa_rows: list[QARow] | None = None
    qa_skipped: dict[str, int] = field(default_factory=dict)
    extra_tables: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)  # e.g. the anonymization's
    _detections_table: DetectionsTable | None = field(default=None, repr=False)

    def need(self, name: str) -> Any:
        value = getattr(self, name)
        if value is None:
            raise StrideGenError(f"{self.scene.name}: stage order broken, {name!r} is not computed yet")
        return value

    def detections_table(self) -> DetectionsTable:
        """The detections as stored (``adapters.detections_table``), built once: the anonymize stage reads it
        (plate geometry) and the record holds it."""
        if self._detections_table is None:
            self._detections_table = adapters.detections_table(self.detections, self.track_ids)
        return self._detections_table


def read_stage(st: SceneState) -> None:
    scene, config = st.scene, st.config
    if not scene.frames:
        raise LogFormatError(scene.name, "scene has no frames")
    st.frames = adapters.frames_table(scene)
    channels = list(config.cameras.channels) if config.cameras.channels is not None else scene.frames[0].camera_channels
    st.cameras = adapters.cameras_table(scene, channels)
    st.ground_truth = adapters.ground_truth_table(scene) if config.output.ground_truth else None
    st.times_s = st.frames.timestamp_us.astype(np.float64) * 1e-6


def keyframes_stage(st: SceneState) -> None:
    selection = sample_keyframes(st.times_s, st.config.keyframes)
    st.keyframes, st.skipped = adapters.keyframe_tables(selection, selection.window_offsets_s)


def detect_stage(st: SceneState) -> None:
    st.tracker = tracker = make_build_tracker(st.config)  # one per scene: it starts fresh, and track_stage uses it
    source = tracker if tracker.provides_detections else make_build_detector(st.config)
    name = st.config.tracker.name if tracker.provides_detections else st.config.detector.name
    st.detections = []
    for frame in st.scene.frames:
        boxes = source.detect(frame)
        if boxes.frame != "global":
            raise StrideGenError(f"detector {name!r} returned boxes in {boxes.frame!r}, expected 'global'")
        st.detections.append(boxes.replace(extras={**boxes.extras, "_row": np.arange(len(boxes))}))


def track_stage(st: SceneState) -> None:
    st.tracked = st.need("tracker").track(st.detections, st.times_s.tolist())
    st.track_ids = []
    for det, trk in zip(st.detections, st.tracked, strict=True):
        ids = np.full(len(det), "", dtype=object)
        if len(trk):
            ids[np.asarray(trk.extras["_row"], dtype=np.int64)] = trk.track_id
        st.track_ids.append(ids)


def attributes_stage(st: SceneState) -> None:
    st.scene_tracks = dense_tracks(st.tracked, st.times_s.tolist(), st.need("frames").T_global_from_ego)
    st.attributes = extract_attributes(st.scene_tracks)


def images_stage(st: SceneState) -> None:
    keyframes = st.need("keyframes")
    frames = image_frame_indices(keyframes, len(st.scene.frames), st.config.output.images)
    st.images = adapters.images_table(st.scene, [str(c) for c in st.need("cameras").channel], frames)


def segment_stage(st: SceneState) -> None:
    """Masks of the tracked objects in the keyframe and context images, the visibility filter, the regions (visible
    masks of keyframe images of at least ``visibility.min_region_area_frac`` of the image area)."""
    segmenter = make_build_segmenter(st.config)
    if segmenter is None:
        return
    scene, keyframes, images, cameras = st.scene, st.need("keyframes"), st.need("images"), st.need("cameras")
    ctx = context_frames(keyframes.window, keyframes.offsets_s, st.config.context_offsets_s())
    wanted = {int(f) for f in np.asarray(keyframes.frame_index)} | {int(f) for f in ctx.ravel() if f >= 0}
    rows = [i for i, f in enumerate(np.asarray(images.frame_index).tolist()) if f in wanted]
    tracked_ok = [b[np.flatnonzero(np.asarray(b.track_id, dtype=object) != "")] if len(b) else b for b in st.tracked]

    def decode(row: int) -> np.ndarray:
        channel = str(cameras.channel[int(images.channel_index[row])])
        return decode_image(images.data[row].tobytes(), f"{scene.name}:{channel}/frame {images.frame_index[row]}")

    def size(row: int) -> tuple[int, int] | None:  # from the header: an image is decoded only if its pixels are used
        return image_size(images.data[row][:65536].tobytes())

    lidar: Callable[[int], np.ndarray | None] | None = None
    lidar_origin: Callable[[int], np.ndarray | None] | None = None
    if getattr(segmenter, "needs_lidar", False):
        # Image rows are ordered by frame, then camera: keeping the last frame's sweep reads each sweep once
        # instead of once per camera.
        def lidar_sample(frame_index: int) -> tuple[Frame, SensorSample] | None:
            frame = scene.frames[frame_index]
            return (frame, frame.sensor(frame.lidar_channels[0])) if frame.lidar_channels else None

        @functools.lru_cache(maxsize=1)
        def lidar(frame_index: int) -> np.ndarray | None:
            found = lidar_sample(frame_index)
            if found is None:
                return None
            frame, sample = found
            return geo.transform_points(sample.T_global_from_sensor, frame.lidar()[:, :3].astype(np.float64))

        def lidar_origin(frame_index: int) -> np.ndarray | None:
            found = lidar_sample(frame_index)
            return None if found is None else found[1].ray_origin_global

    st.masks = segment_images(
        rows,
        images,
        cameras,
        tracked_ok,
        st.need("scene_tracks").track_id,
        segmenter,
        st.config.visibility,
        decode,
        lidar,
        st.timings,
        size,
        lidar_origin,
    )
    min_area = min_region_area_px(cameras.width, cameras.height, st.config.visibility.min_region_area_frac)
    st.regions = assign_regions(np.asarray(keyframes.frame_index), images, st.masks, min_area)


def qa_stage(st: SceneState) -> None:
    if st.regions is None:  # no segmenter: no regions, no QA
        return
    rng = rng_for(st.config.seed, st.scene.token, "qa")
    result = generate_scene_qa(
        st.scene.name,
        st.need("keyframes"),
        st.need("cameras"),
        st.times_s,
        st.need("attributes"),
        st.need("scene_tracks").label,
        st.regions,
        st.config.qa,
        rng,
    )
    st.qa_rows, st.qa_skipped = result.rows, dict(result.skipped)


def scene_record(st: SceneState) -> SceneRecord:
    """The storage form of a scene whose stages all ran."""
    scene = st.scene
    meta = SceneMeta(
        token=scene.token,
        name=scene.name,
        description=scene.description,
        log_name=scene.log_name,
        source_format=st.source_format,
        source_version=st.source_version,
    )
    segmented = st.masks is not None and st.regions is not None
    return SceneRecord(
        meta,
        st.need("frames"),
        st.need("cameras"),
        st.need("images"),
        st.need("keyframes"),
        st.need("skipped"),
        st.detections_table(),
        adapters.tracks_table(st.need("scene_tracks")),
        adapters.attributes_table(st.need("attributes")),
        st.ground_truth,
        adapters.masks_table(st.need("masks")) if segmented else None,
        adapters.regions_table(st.need("regions")) if segmented else None,
        adapters.qa_table(st.qa_rows) if segmented and st.qa_rows is not None else None,
        st.qa_skipped,
        extra=st.extra_tables,
    )


# The stages of a scene, in order (``write`` follows them in ``process_scene``).
SCENE_STAGES: tuple[tuple[str, Callable[[SceneState], None]], ...] = (
    ("read", read_stage),
    ("keyframes", keyframes_stage),
    ("detect", detect_stage),
    ("track", track_stage),
    ("attributes", attributes_stage),
    ("images", images_stage),
    ("segment", segment_stage),
    ("qa", qa_stage),
    ("anonymize", anonymize_stage),  # stridegen.run.anonymize: after the QA, so masks and QA see the raw pixels
)


def build_scene_record(
    scene: Scene,
    config: BuildConfig,
    source_format: str = "",
    source_version: str = "",
    on_stage: StageCallback | None = None,
    timings: dict[str, float] | None = None,
) -> SceneRecord:
    """Run every stage on one scene and gather the SceneRecord (no file is written)."""
    state = SceneState(scene, config, source_format, source_version, timings if timings is not None else {})
    report = on_stage or (lambda scene_name, stage: None)
    steps = [(name, functools.partial(stage, state)) for name, stage in SCENE_STAGES]
    segmented = make_build_segmenter(config) is not None
    if not segmented:  # no masks: neither segment, visibility nor qa runs
        steps = [(name, step) for name, step in steps if name not in ("segment", "qa")]
    run_stages(scene.name, steps, state.timings, report, SUB_STAGES if segmented else {})
    return scene_record(state)


def process_scene(
    log_root: str | Path,
    config: BuildConfig,
    scene_name: str,
    out_dir: str | Path,
    cfg_hash: str,
    on_stage: StageCallback | None = None,
) -> SceneResult:
    """Build and write one scene. Never raises for a bad scene: the failure comes back in the result."""
    timings: dict[str, float] = {}
    report = on_stage or (lambda scene_name, stage: None)
    try:
        reader = open_log_cached(log_root, config.log.format, config.log.version)
        scene = reader.scene(scene_name)
        record = build_scene_record(
            scene, config, reader.format_name, str(getattr(reader, "version", "") or ""), report, timings
        )
        info: list[Any] = []

        def write() -> None:
            info.append(
                write_shard(record, out_dir, cfg_hash, config.output.compression, config.output.compression_level)
            )

        run_stages(scene_name, [("write", write)], timings, report)
        return SceneResult(scene_name, "built", info[0], timings_s=timings)
    except Exception as exc:  # any failure of one scene is recorded; the build goes on
        return failed_scene(scene_name, exc, timings)


def _build_worker(payload: tuple[str, dict[str, Any], str, str, str, str | None], report: StageCallback) -> SceneResult:
    """One scene: its log check (unless the parent checked it: ``check_failure`` is then its failure reason or
    ""), then ``process_scene``. A scene with an error finding runs no stage."""
    log_root, config_data, scene_name, out_dir, cfg_hash, check_failure = payload
    config = BuildConfig.model_validate(config_data)
    warnings: list[Finding] = []
    check_s: dict[str, float] = {}
    if check_failure is None:
        t0 = time.perf_counter()
        try:
            reader = open_log_cached(log_root, config.log.format, config.log.version)
            findings = check_scene(reader, config.check_settings(), scene_name)
        except Exception as exc:  # the check never raises for a bad log; anything else fails this scene alone
            return failed_scene(scene_name, exc, {})
        errors = [f for f in findings if f.severity == ERROR]
        check_failure = failure_reason(errors) if errors else ""
        warnings = scene_warnings(findings)
        check_s["check"] = time.perf_counter() - t0
    if check_failure:  # the log check found an error in this scene: no stage runs
        return SceneResult(scene_name, "failed", reason=check_failure, error_type=LogCheckError.__name__)
    result = process_scene(log_root, config, scene_name, out_dir, cfg_hash, report)
    result.warnings = warnings
    result.timings_s = {**check_s, **result.timings_s}
    return result


# ---------------------------------------------------------------------------------------------------------- the run
def scene_warnings(findings: list[Finding]) -> list[Finding]:
    """The warnings of one scene's check that the build reports: none where the scene has an error finding (it
    is a failed scene, or a resumed one whose warnings the check before the build left out too)."""
    if any(f.severity == ERROR for f in findings):
        return []
    return [f for f in findings if f.severity == WARNING]


def _check_failure(blocked: dict[str, str] | None, scene: str) -> str | None:
    """The worker's ``check_failure``: None (check the scene there) when ``precheck`` left the scenes to the
    workers, else the scene's failure reason from the parent's check ("" for none)."""
    return None if blocked is None else blocked.get(scene, "")


def select_scenes(reader: LogReader, config: BuildConfig) -> list[str]:
    """Scene names to build, in the log's order (a subset when ``log.scenes`` is set)."""
    ids = reader.scene_ids()  # names and tokens only: a broken scene fails alone, later
    if config.log.scenes is None:
        return [name for name, _ in ids]
    wanted = list(config.log.scenes)
    known = {name for name, _ in ids} | {token for _, token in ids}
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise ConfigError(f"log.scenes: {unknown} not in the log (it has {[name for name, _ in ids]})")
    return [name for name, token in ids if name in wanted or token in wanted]


def precheck(reader: LogReader, config: BuildConfig, names: list[str]) -> tuple[CheckReport, dict[str, str] | None]:
    """The log check before any stage (metadata only): LogCheckError for errors of the whole log. Returns the
    report and, where every scene had to be checked here, the failure reason of each scene with an error finding
    (None where each scene is checked in its worker: ``check_log_wide``)."""
    settings = config.check_settings()
    wide = check_log_wide(reader, settings)  # the names are select_scenes', checked there
    report = wide if wide is not None else check_log(reader, settings, scenes=names, deep=False)
    if report.log_errors:
        raise LogCheckError(
            f"{reader.root}: the log check found {len(report.log_errors)} error(s) that concern the whole log; "
            f"nothing was built:\n{summarize_errors(report.log_errors)}",
            report.log_errors,
        )
    if wide is not None:
        return report, None
    return report, {n: failure_reason(report.scene_errors(n)) for n in names if report.scene_errors(n)}


def run_build(
    log_root: str | Path,
    out_dir: str | Path,
    config: BuildConfig | None = None,
    overwrite: bool = False,
    observer: RunObserver | None = None,
) -> BuildResult:
    """Build (or resume) a dataset from a log into ``out_dir``. Config errors raise; scene failures do not.
    ``observer`` is told of the run's tasks, stage events and finished scenes (progress display)."""
    start = time.perf_counter()
    config = config or BuildConfig()
    log_root = Path(log_root)
    out = Path(out_dir)
    _READERS.clear()  # a log may have changed since an earlier build in this process
    executor = make_executor(config.executor, config.workers)
    reader = open_log_cached(log_root, config.log.format, config.log.version)
    source_version = str(getattr(reader, "version", "") or "")
    config = resolve_build_config(config, reader.format_name, source_version)
    cfg_hash = config_hash(config)  # with the anonymization resolved for this log
    names = select_scenes(reader, config)
    report, blocked = precheck(reader, config, names)  # before any backend is made: a broken log fails fast
    if not make_build_tracker(config).provides_detections:  # a bad backend option fails now, not once per scene
        make_build_detector(config)
    make_build_segmenter(config)  # likewise (and a SAM 2 checkpoint is loaded once here)

    config_data = config.model_dump(mode="json")
    [outcome] = run_jobs(
        [JobTarget(out, cfg_hash, names)],
        lambda job, scene: (str(log_root), config_data, scene, str(out), cfg_hash, _check_failure(blocked, scene)),
        _build_worker,
        executor,
        overwrite,
        observer,
    )
    results = outcome.results
    if blocked is None:  # a resumed scene ran in no worker: its check's warnings come from here, as before
        for r in results:
            if r.status == "resumed":
                r.warnings = scene_warnings(check_scene(reader, config.check_settings(), r.scene))
    source = {
        "root": str(log_root.resolve()),
        "format": reader.format_name,
        "version": source_version,
    }
    manifest = build_manifest(
        config,
        source,
        [r.shard for r in results if r.ok and r.shard is not None],
        [(r.scene, r.reason) for r in results if not r.ok],
    )
    manifest_path = write_manifest(out, manifest)
    write_anonymization_sidecar(out, config)
    warnings = [f for f in report.warnings if f.scene is None or f.scene not in (blocked or {})]
    warnings += [w for r in results for w in r.warnings]  # the scenes checked in their workers
    result = BuildResult(out, manifest_path, cfg_hash, results, time.perf_counter() - start, warnings, report)
    atomic_write_bytes(out / REPORT_NAME, json.dumps(build_report(result, config), indent=2).encode() + b"\n")
    return result


def build_report(result: BuildResult, config: BuildConfig) -> dict[str, Any]:
    """Timings and statuses (not deterministic, hence not in the manifest)."""
    stage_totals = {s: round(sum(r.timings_s.get(s, 0.0) for r in result.results), 4) for s in STAGES}
    built = [r for r in result.results if r.status == "built" and r.shard is not None]
    keyframes = sum(int(r.shard.counts.get("keyframes", 0)) for r in built if r.shard is not None)
    return {
        "config_hash": result.config_hash,
        "executor": config.executor.name,
        "workers": config.workers,
        "cpu_count": os.cpu_count(),
        "wall_s": round(result.wall_s, 4),
        "scenes": {
            "total": len(result.results),
            "built": len(built),
            "resumed": sum(r.status == "resumed" for r in result.results),
            "failed": len(result.failed),
        },
        "check_s": round(result.check.wall_s, 4) if result.check is not None else None,
        "warnings": [f.to_json() for f in result.warnings],
        "keyframes_built": keyframes,
        "keyframes_per_s": round(keyframes / result.wall_s, 4) if result.wall_s > 0 else None,
        "stage_seconds_total": stage_totals,
        "per_scene": [
            {
                "scene": r.scene,
                "status": r.status,
                "reason": r.reason,
                "timings_s": {k: round(v, 4) for k, v in r.timings_s.items()},
            }
            for r in result.results
        ],
    }
