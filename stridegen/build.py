"""The build: log -> per-scene pipeline -> one HDF5 shard per scene, resumable, on a local process pool.

One scene runs these stages in order (``STAGES``): read (frames, calibration, ground truth), keyframes, detect,
track, attributes, images, segment (masks and the visibility filter), qa, write. The executor runs scenes
in-process (``workers=1``) or on a spawn-context process pool (``workers>1``); each worker writes its scene's shard
itself (atomic rename) and returns the shard's manifest entry; the parent alone writes the journal, and writes the
manifest at the end in scene order. Shard bytes depend only on (log, config), never on the executor or the order
scenes finish in.

A scene that fails (a typed StrideGenError or any unexpected exception) is recorded in the journal and the
summary with its reason; the build goes on with the other scenes, and ``BuildResult.ok`` is False.
"""

from __future__ import annotations

import inspect
import json
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.config import BuildConfig, config_hash
from stridegen.errors import ConfigError, LogFormatError, StrideGenError

STAGES = ("read", "keyframes", "detect", "track", "attributes", "images", "segment", "qa", "write")
REPORT_NAME = "build_report.json"

StageCallback = Callable[[str, str], None]  # (scene name, finished stage)


@dataclass
class SceneResult:
    scene: str
    status: str  # "built" | "resumed" (skipped: already done) | "failed"
    shard: Any = None  # ShardInfo when built or resumed
    reason: str = ""
    error_type: str = ""
    timings_s: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status in ("built", "resumed")


@dataclass
class BuildResult:
    out_dir: Path
    manifest_path: Path
    config_hash: str
    results: list[SceneResult]  # in scene order
    wall_s: float

    @property
    def failed(self) -> list[SceneResult]:
        return [r for r in self.results if r.status == "failed"]

    @property
    def ok(self) -> bool:
        return not self.failed


# ---------------------------------------------------------------------------------------------------------- stages
_READERS: dict[tuple[str, str | None, str | None], Any] = {}


def open_log_cached(log_root: str | Path, fmt: str | None, version: str | None):
    """One reader per (root, format, version) per process: workers index a log's tables once."""
    from stridegen.logs import open_log

    key = (str(Path(log_root).resolve()), fmt, version)
    if key not in _READERS:
        _READERS[key] = open_log(log_root, fmt, version)
    return _READERS[key]


def _detector_options(config: BuildConfig) -> dict[str, Any]:
    """The detector's options, with the build seed passed to backends that take a ``seed`` and were given none."""
    import importlib

    from stridegen.pipeline.detect import DETECTORS

    options = dict(config.detector.options)
    target = DETECTORS.get(config.detector.name)
    if target is None:
        raise ConfigError(f"unknown detector {config.detector.name!r}; available: {sorted(DETECTORS)}")
    module, attr = target.split(":")
    factory = getattr(importlib.import_module(module), attr)
    if "seed" not in options and "seed" in inspect.signature(factory).parameters:
        options["seed"] = config.seed
    return options


def make_build_detector(config: BuildConfig):
    from stridegen.pipeline.detect import make_detector

    try:
        return make_detector(config.detector.name, **_detector_options(config))
    except TypeError as exc:
        raise ConfigError(f"detector {config.detector.name!r}: bad options {config.detector.options}: {exc}") \
            from None


_SEGMENTERS: dict[str, Any] = {}


def make_build_segmenter(config: BuildConfig):
    """The configured segmenter, built once per process (a SAM 2 model is expensive to load); None for "none"."""
    from stridegen.config import canonical_json
    from stridegen.pipeline.segment.registry import make_segmenter

    if config.segmenter.name == "none":
        return None
    key = canonical_json([config.segmenter.name, config.segmenter.options])
    if key not in _SEGMENTERS:
        try:
            _SEGMENTERS[key] = make_segmenter(config.segmenter.name, **dict(config.segmenter.options))
        except TypeError as exc:
            raise ConfigError(f"segmenter {config.segmenter.name!r}: bad options {config.segmenter.options}: "
                              f"{exc}") from None
    return _SEGMENTERS[key]


def check_image_bytes(data: bytes, path: str | Path) -> None:
    """Cheap integrity check of camera bytes stored unchanged: non-empty, JPEG (complete) or PNG."""
    if not data:
        raise LogFormatError(path, "image file is empty")
    if data[:2] == b"\xff\xd8":
        if not data.rstrip(b"\x00").endswith(b"\xff\xd9"):
            raise LogFormatError(path, "JPEG is truncated (no end-of-image marker)")
        return
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return
    raise LogFormatError(path, "camera file is neither JPEG nor PNG")


def _frames_table(scene):
    from stridegen.shards.schema import FramesTable, str_array

    return FramesTable(
        token=str_array(f.token for f in scene.frames),
        timestamp_us=np.array([f.timestamp_us for f in scene.frames], dtype=np.int64),
        T_global_from_ego=np.array([f.T_global_from_ego for f in scene.frames], dtype=np.float64).reshape(-1, 4, 4),
    )


def _camera_channels(scene, config: BuildConfig) -> list[str]:
    if not scene.frames:
        return []
    return list(config.cameras.channels) if config.cameras.channels is not None else scene.frames[0].camera_channels


def _cameras_table(scene, channels: list[str]):
    from stridegen.errors import UnknownChannelError
    from stridegen.shards.schema import CamerasTable, str_array

    cals = []
    for ch in channels:
        sample = scene.frames[0].sensor(ch)
        if not sample.calibration.is_camera or sample.calibration.intrinsic is None:
            raise UnknownChannelError(sample.path, f"channel {ch!r} is not a calibrated camera")
        cals.append(sample.calibration)
    return CamerasTable(
        channel=str_array(channels),
        intrinsic=np.array([c.intrinsic for c in cals], dtype=np.float64).reshape(-1, 3, 3),
        T_ego_from_sensor=np.array([c.T_ego_from_sensor for c in cals], dtype=np.float64).reshape(-1, 4, 4),
        width=np.array([c.width or 0 for c in cals], dtype=np.int32),
        height=np.array([c.height or 0 for c in cals], dtype=np.int32),
    )


def _ground_truth_table(scene):
    from stridegen.shards.schema import GroundTruthTable, str_array

    parts = [(i, f.annotations()) for i, f in enumerate(scene.frames)]
    parts = [(i, a) for i, a in parts if len(a)]
    if not parts:
        return None

    def cat(getter, dtype=None):
        return np.concatenate([np.asarray(getter(a), dtype=dtype) for _, a in parts])

    return GroundTruthTable(
        frame_index=np.concatenate([np.full(len(a), i, dtype=np.int32) for i, a in parts]),
        instance_token=str_array(cat(lambda a: a.boxes.track_id, object)),
        annotation_token=str_array(cat(lambda a: a.token, object)),
        category=str_array(cat(lambda a: a.category, object)),
        label=str_array(cat(lambda a: a.boxes.label, object)),
        center_global=cat(lambda a: a.boxes.center, np.float64).reshape(-1, 3),
        size_lwh=cat(lambda a: a.boxes.size_lwh, np.float64).reshape(-1, 3),
        yaw_global=cat(lambda a: a.boxes.yaw, np.float64),
        velocity_global=cat(lambda a: a.boxes.velocity, np.float64).reshape(-1, 3),
        num_lidar_pts=cat(lambda a: a.num_lidar_pts, np.int32),
        visibility=cat(lambda a: a.visibility, np.int8),
        attribute=str_array(cat(lambda a: a.attribute, object)),
    )


def _keyframe_tables(selection, config: BuildConfig):
    from stridegen.shards.schema import KeyframesTable, SkippedKeyframesTable, str_array

    offsets = np.asarray(config.keyframes.window_offsets_s, dtype=np.float64)
    kfs = selection.keyframes
    window = np.array([[-1 if i is None else i for i in k.window] for k in kfs], dtype=np.int32)
    keyframes = KeyframesTable(
        frame_index=np.array([k.frame_index for k in kfs], dtype=np.int32),
        time_s=np.array([k.time_s for k in kfs], dtype=np.float64),
        window=window.reshape(len(kfs), offsets.size),
        offsets_s=offsets,
    )
    skipped = SkippedKeyframesTable(
        time_s=np.array([t for t, _ in selection.skipped], dtype=np.float64),
        reason=str_array(r for _, r in selection.skipped),
    )
    return keyframes, skipped


def image_frame_indices(keyframes, n_frames: int, mode: str) -> list[int]:
    """Which frames' images to store: "windows" (union of the keyframes' windows), "keyframes", "all", "none"."""
    if mode == "all":
        return list(range(n_frames))
    if mode == "none":
        return []
    if mode == "keyframes":
        return sorted({int(i) for i in keyframes.frame_index})
    window = np.asarray(keyframes.window)
    return sorted({int(i) for i in window[window >= 0]} | {int(i) for i in keyframes.frame_index})


def _images_table(scene, channels: list[str], frame_indices: list[int]):
    from stridegen.shards.schema import ImagesTable, bytes_array, str_array

    rows: list[tuple[int, int, Any, bytes]] = []
    for f in frame_indices:
        frame = scene.frames[f]
        for c, ch in enumerate(channels):
            sample = frame.sensor(ch)
            data = frame.image_bytes(ch)
            check_image_bytes(data, sample.path)
            rows.append((f, c, sample, data))
    return ImagesTable(
        frame_index=np.array([r[0] for r in rows], dtype=np.int32),
        channel_index=np.array([r[1] for r in rows], dtype=np.int32),
        sample_token=str_array(r[2].token for r in rows),
        timestamp_us=np.array([r[2].timestamp_us for r in rows], dtype=np.int64),
        T_global_from_ego=np.array([r[2].T_global_from_ego for r in rows], dtype=np.float64).reshape(-1, 4, 4),
        data=bytes_array(r[3] for r in rows),
    )


def _detect_and_track(scene, config: BuildConfig, times_s: np.ndarray, timings: dict[str, float],
                      on_stage: StageCallback):
    """Detections of every frame and the tracker's ids for them; the tracker's per-frame output boxes."""
    from stridegen.boxes import Boxes
    from stridegen.pipeline.track import track_scene
    from stridegen.shards.schema import DetectionsTable, str_array

    t0 = time.perf_counter()
    if config.tracker.name == "precomputed":
        from stridegen.pipeline.track_precomputed import PrecomputedTracks

        source = PrecomputedTracks(config.tracker.path)
        detect = source.tracks  # the file's boxes are the frame's detections and its active tracks
    else:
        detect = make_build_detector(config).detect
    detections = []
    for frame in scene.frames:
        boxes = detect(frame)
        if boxes.frame != "global":
            raise StrideGenError(f"detector {config.detector.name!r} returned boxes in {boxes.frame!r}, "
                                 "expected 'global'")
        detections.append(boxes.replace(extras={**boxes.extras, "_row": np.arange(len(boxes))}))
    timings["detect"] = time.perf_counter() - t0
    on_stage(scene.name, "detect")

    t0 = time.perf_counter()
    if config.tracker.name == "precomputed":
        tracked = detections
    else:
        tracked = track_scene(detections, times_s.tolist(), config.tracker.to_tracker_config())
    track_ids = []
    for det, trk in zip(detections, tracked, strict=True):
        ids = np.full(len(det), "", dtype=object)
        if len(trk):
            ids[np.asarray(trk.extras["_row"], dtype=np.int64)] = trk.track_id
        track_ids.append(ids)
    timings["track"] = time.perf_counter() - t0
    on_stage(scene.name, "track")

    all_dets = Boxes.concat(detections) if detections else Boxes.empty("global")
    table = DetectionsTable(
        frame_index=np.concatenate([np.full(len(d), i, dtype=np.int32) for i, d in enumerate(detections)]
                                   or [np.zeros(0, dtype=np.int32)]),
        center_global=all_dets.center, size_lwh=all_dets.size_lwh, yaw_global=all_dets.yaw,
        velocity_global=all_dets.velocity, label=str_array(all_dets.label), score=all_dets.score,
        track_id=str_array(np.concatenate(track_ids) if track_ids else []),
    )
    return table, tracked


def build_scene_record(scene, config: BuildConfig, source_format: str = "", source_version: str = "",
                       on_stage: StageCallback | None = None, timings: dict[str, float] | None = None):
    """Run every stage on one scene and gather the SceneRecord (no file is written)."""
    from stridegen.pipeline.attributes import dense_tracks, extract_attributes
    from stridegen.pipeline.keyframes import sample_keyframes
    from stridegen.shards.schema import AttributesTable, SceneMeta, SceneRecord, TracksTable, str_array

    on_stage = on_stage or (lambda scene_name, stage: None)
    timings = timings if timings is not None else {}
    t0 = time.perf_counter()
    if not scene.frames:
        raise LogFormatError(scene.name, "scene has no frames")
    frames = _frames_table(scene)
    channels = _camera_channels(scene, config)
    cameras = _cameras_table(scene, channels)
    ground_truth = _ground_truth_table(scene) if config.output.ground_truth else None
    times_s = frames.timestamp_us.astype(np.float64) * 1e-6
    timings["read"] = time.perf_counter() - t0
    on_stage(scene.name, "read")

    t0 = time.perf_counter()
    keyframes, skipped = _keyframe_tables(sample_keyframes(times_s, config.keyframes), config)
    timings["keyframes"] = time.perf_counter() - t0
    on_stage(scene.name, "keyframes")

    detections, tracked = _detect_and_track(scene, config, times_s, timings, on_stage)

    t0 = time.perf_counter()
    scene_tracks = dense_tracks(tracked, times_s, frames.T_global_from_ego)
    attrs = extract_attributes(scene_tracks)
    tracks = TracksTable(track_id=str_array(scene_tracks.track_id), label=str_array(scene_tracks.label),
                         present=scene_tracks.present, center_global=scene_tracks.center_global,
                         size_lwh=scene_tracks.size_lwh, yaw_global=scene_tracks.yaw_global,
                         score=scene_tracks.score)
    attributes = AttributesTable(velocity_global=attrs.velocity_global,
                                 ego_velocity_global=attrs.ego_velocity_global)
    timings["attributes"] = time.perf_counter() - t0
    on_stage(scene.name, "attributes")

    t0 = time.perf_counter()
    images = _images_table(scene, channels, image_frame_indices(keyframes, len(scene.frames),
                                                                config.output.images))
    timings["images"] = time.perf_counter() - t0
    on_stage(scene.name, "images")

    masks = regions = qa = None
    qa_skipped: dict[str, int] = {}
    segmenter = make_build_segmenter(config)
    if segmenter is not None:
        masks, regions = _segment_stage(scene, config, segmenter, keyframes, images, cameras, tracked, scene_tracks,
                                        timings)
        on_stage(scene.name, "segment")
        t0 = time.perf_counter()
        qa, qa_skipped = _qa_stage(scene, config, keyframes, cameras, times_s, attrs, scene_tracks, regions)
        timings["qa"] = time.perf_counter() - t0
        on_stage(scene.name, "qa")

    meta = SceneMeta(token=scene.token, name=scene.name, description=scene.description, log_name=scene.log_name,
                     source_format=source_format, source_version=source_version)
    return SceneRecord(meta, frames, cameras, images, keyframes, skipped, detections, tracks, attributes,
                       ground_truth, masks, regions, qa, qa_skipped)


def _segment_stage(scene, config: BuildConfig, segmenter, keyframes, images, cameras, tracked, scene_tracks,
                   timings: dict[str, float]):
    """Masks of the tracked objects in the keyframe and context images, the visibility filter, the regions."""
    from stridegen.logs.base import decode_image
    from stridegen.pipeline.segment.stage import assign_regions, context_frames, segment_images
    from stridegen.pipeline.visibility import VisibilityThresholds

    ctx = context_frames(keyframes.window, keyframes.offsets_s)
    wanted = {int(f) for f in np.asarray(keyframes.frame_index)} | {int(f) for f in ctx.ravel() if f >= 0}
    rows = [i for i, f in enumerate(np.asarray(images.frame_index).tolist()) if f in wanted]
    thresholds = VisibilityThresholds(config.visibility.min_box_iou, config.visibility.min_coverage,
                                      config.visibility.min_quality)
    tracked_ok = [b[np.flatnonzero(np.asarray(b.track_id, dtype=object) != "")] if len(b) else b for b in tracked]

    def decode(row: int) -> np.ndarray:
        channel = str(cameras.channel[int(images.channel_index[row])])
        return decode_image(images.data[row].tobytes(), f"{scene.name}:{channel}/frame {images.frame_index[row]}")

    lidar = None
    if getattr(segmenter, "needs_lidar", False):
        import functools

        # Image rows are ordered by frame, then camera: keeping the last frame's sweep reads each sweep once
        # instead of once per camera.
        @functools.lru_cache(maxsize=1)
        def lidar(frame_index: int) -> np.ndarray | None:
            from stridegen import geometry as geo

            frame = scene.frames[frame_index]
            if not frame.lidar_channels:
                return None
            sample = frame.sensor(frame.lidar_channels[0])
            return geo.transform_points(sample.T_global_from_sensor, frame.lidar()[:, :3].astype(np.float64))

    masks = segment_images(rows, images, cameras, tracked_ok, scene_tracks.track_id, segmenter, thresholds, decode,
                           lidar, timings)
    return masks, assign_regions(np.asarray(keyframes.frame_index), images, masks)


def _qa_stage(scene, config: BuildConfig, keyframes, cameras, times_s, attrs, scene_tracks, regions):
    from stridegen.pipeline.qa.stage import generate_scene_qa
    from stridegen.seeding import rng_for

    rng = rng_for(config.seed, scene.token, "qa")
    result = generate_scene_qa(scene.name, keyframes, cameras, times_s, attrs, scene_tracks.label, regions,
                               config.qa, rng)
    return result.table, dict(result.skipped)


def failed_scene(scene_name: str, exc: Exception, timings: dict[str, float]) -> SceneResult:
    """The failed SceneResult of a scene that raised ``exc``: a StrideGenError's message as it is, any other
    exception's type and message with the file and line it was raised at."""
    reason = str(exc) if isinstance(exc, StrideGenError) else f"{type(exc).__name__}: {exc}"
    if not isinstance(exc, StrideGenError):
        tb = traceback.extract_tb(exc.__traceback__)
        if tb:
            reason += f" (at {Path(tb[-1].filename).name}:{tb[-1].lineno})"
    return SceneResult(scene_name, "failed", reason=reason, error_type=type(exc).__name__, timings_s=timings)


def process_scene(log_root: str | Path, config: BuildConfig, scene_name: str, out_dir: str | Path,
                  cfg_hash: str, on_stage: StageCallback | None = None) -> SceneResult:
    """Build and write one scene. Never raises for a bad scene: the failure comes back in the result."""
    from stridegen.shards.writer import write_shard

    timings: dict[str, float] = {}
    on_stage = on_stage or (lambda scene_name, stage: None)
    try:
        reader = open_log_cached(log_root, config.log.format, config.log.version)
        scene = reader.scene(scene_name)
        record = build_scene_record(scene, config, reader.format_name, str(getattr(reader, "version", "") or ""),
                                    on_stage, timings)
        t0 = time.perf_counter()
        info = write_shard(record, out_dir, cfg_hash, config.output.compression, config.output.compression_level)
        timings["write"] = time.perf_counter() - t0
        on_stage(scene_name, "write")
        return SceneResult(scene_name, "built", info, timings_s=timings)
    except Exception as exc:  # any failure of one scene is recorded; the build goes on
        return failed_scene(scene_name, exc, timings)


# ---------------------------------------------------------------------------------------------------------- executor
_STAGE_QUEUE = None


def _init_worker(queue) -> None:
    global _STAGE_QUEUE
    _STAGE_QUEUE = queue


def _queue_stage(scene_name: str, stage: str) -> None:
    if _STAGE_QUEUE is not None:
        _STAGE_QUEUE.put((scene_name, stage))


def _worker_task(task: tuple[str, dict[str, Any], str, str, str]) -> SceneResult:
    log_root, config_data, scene_name, out_dir, cfg_hash = task
    config = BuildConfig.model_validate(config_data)
    _queue_stage(scene_name, "start")
    return process_scene(log_root, config, scene_name, out_dir, cfg_hash, _queue_stage)


def select_scenes(reader, config: BuildConfig) -> list[str]:
    """Scene names to build, in the log's order (a subset when ``log.scenes`` is set)."""
    scenes = reader.scenes()
    if config.log.scenes is None:
        return [s.name for s in scenes]
    wanted = list(config.log.scenes)
    known = {s.name for s in scenes} | {s.token for s in scenes}
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise ConfigError(f"log.scenes: {unknown} not in the log (it has {[s.name for s in scenes]})")
    return [s.name for s in scenes if s.name in wanted or s.token in wanted]


class SceneProgress:
    """Rich progress bars of a scene executor: an overall "scenes (done n, failed m)" bar and one bar per name in
    ``bars`` (name -> total; names with a total of 0 get none). Does nothing when disabled or ``total`` is 0."""

    def __init__(self, total: int, bars: dict[str, int], enabled: bool, console=None, label_width: int = 28) -> None:
        self.enabled = enabled and total > 0
        self.done = 0
        self.failed = 0
        self.total = total
        if not self.enabled:
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(TextColumn(f"{{task.description:<{label_width}}}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=False)
        self.overall = self.progress.add_task(self._overall_text(), total=total)
        self.tasks = {name: self.progress.add_task(f"  {name}", total=n) for name, n in bars.items() if n}

    def _overall_text(self) -> str:
        return f"scenes (done {self.done}, failed {self.failed})"

    def __enter__(self) -> SceneProgress:
        if self.enabled:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            self.progress.stop()

    def advance(self, bar: str) -> None:
        """One more done on the bar ``bar`` (ignored for names without a bar)."""
        if self.enabled and bar in self.tasks:
            self.progress.advance(self.tasks[bar])

    def stage(self, scene_name: str, stage: str) -> None:
        """A ``StageCallback``: a scene finished ``stage`` (the build's bars are its stages)."""
        self.advance(stage)

    def finished(self, result: SceneResult, bar: str | None = None) -> None:
        """A scene ended (counted as done or failed); advances ``bar`` too when given."""
        if result.ok:
            self.done += 1
        else:
            self.failed += 1
        if self.enabled:
            if bar is not None:
                self.advance(bar)
            self.progress.update(self.overall, advance=1, description=self._overall_text())


def run_on_process_pool(worker: Callable[[Any], SceneResult], tasks: list[tuple[str, Any]], workers: int,
                        finish: Callable[[int, SceneResult], None], poll: Callable[[], None] = lambda: None,
                        initializer: Callable[..., None] | None = None, initargs: tuple = ()) -> None:
    """Run ``worker(payload)`` for every ``(scene name, payload)`` of ``tasks`` on a spawn-context process pool of
    ``min(workers, len(tasks))`` processes; ``finish(task index, result)`` is called in the parent in completion
    order (ties by task order). A worker process that dies gives its scene a failed SceneResult. ``poll`` is called
    in the parent around every wait (0.05 s at most), e.g. to drain a queue the workers write to."""
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    # concurrent.futures rather than multiprocessing.Pool: a worker that dies (OOM kill, segfault) breaks the
    # pool and fails its futures instead of leaving the parent waiting forever.
    with ProcessPoolExecutor(min(workers, len(tasks)), mp_context=mp.get_context("spawn"), initializer=initializer,
                             initargs=initargs) as pool:
        futures = {pool.submit(worker, payload): k for k, (_, payload) in enumerate(tasks)}
        pending = set(futures)
        while pending:
            poll()
            done, pending = wait(pending, timeout=0.05, return_when=FIRST_COMPLETED)
            poll()
            for future in sorted(done, key=futures.__getitem__):
                k = futures[future]
                try:
                    result = future.result()
                except Exception as exc:  # the worker process itself failed
                    result = SceneResult(tasks[k][0], "failed",
                                         reason=f"worker process failed: {type(exc).__name__}: {exc}",
                                         error_type=type(exc).__name__)
                finish(k, result)
        poll()


def _execute(log_root: Path, config: BuildConfig, names: list[str], out_dir: Path, cfg_hash: str, workers: int,
             journal, progress: SceneProgress) -> dict[str, SceneResult]:
    results: dict[str, SceneResult] = {}

    def finish(result: SceneResult) -> None:
        if result.ok:
            journal.scene_done(result.scene, result.shard)
        else:
            journal.scene_failed(result.scene, result.reason, result.error_type)
        results[result.scene] = result
        progress.finished(result)

    if workers <= 1 or len(names) <= 1:
        for name in names:
            journal.scene_started(name)
            finish(process_scene(log_root, config, name, out_dir, cfg_hash, progress.stage))
        return results

    import multiprocessing as mp
    import queue as queue_mod

    stage_queue = mp.get_context("spawn").Queue()
    config_data = config.model_dump(mode="json")

    def drain() -> None:
        try:
            while True:
                scene_name, stage = stage_queue.get(timeout=0.0)
                if stage == "start":
                    journal.scene_started(scene_name)
                else:
                    progress.stage(scene_name, stage)
        except queue_mod.Empty:
            return

    tasks = [(name, (str(log_root), config_data, name, str(out_dir), cfg_hash)) for name in names]
    run_on_process_pool(_worker_task, tasks, workers, lambda _, result: finish(result), drain, _init_worker,
                        (stage_queue,))
    return results


def run_build(log_root: str | Path, out_dir: str | Path, config: BuildConfig | None = None,
              overwrite: bool = False, progress: bool = True, console=None) -> BuildResult:
    """Build (or resume) a dataset from a log into ``out_dir``. Config errors raise; scene failures do not."""
    from stridegen.shards.journal import Journal, check_output_folder
    from stridegen.shards.manifest import build_manifest, write_manifest
    from stridegen.shards.schema import SCHEMA_VERSION
    from stridegen.shards.writer import atomic_write_bytes, remove_stale_temporaries

    start = time.perf_counter()
    config = config or BuildConfig()
    log_root = Path(log_root)
    out = Path(out_dir)
    cfg_hash = config_hash(config)
    _READERS.clear()  # a log may have changed since an earlier build in this process
    make_build_detector(config)  # a bad detector name or option fails now, not once per scene
    make_build_segmenter(config)  # likewise for the segmenter (and a SAM 2 checkpoint is loaded once here)
    reader = open_log_cached(log_root, config.log.format, config.log.version)
    names = select_scenes(reader, config)

    out.mkdir(parents=True, exist_ok=True)
    check_output_folder(out, cfg_hash, overwrite)
    remove_stale_temporaries(out / "shards")
    remove_stale_temporaries(out)
    journal = Journal(out)
    journal.build_started(cfg_hash, SCHEMA_VERSION, names)
    completed = journal.completed()
    todo = [n for n in names if n not in completed]

    with SceneProgress(len(todo), dict.fromkeys(STAGES, len(todo)), progress, console) as prog:
        built = _execute(log_root, config, todo, out, cfg_hash, config.workers, journal, prog)
    results = [SceneResult(n, "resumed", completed[n]) if n in completed else built[n] for n in names]

    source = {"root": str(log_root.resolve()), "format": reader.format_name,
              "version": str(getattr(reader, "version", "") or "")}
    manifest = build_manifest(config, source, [r.shard for r in results if r.ok],
                              [(r.scene, r.reason) for r in results if not r.ok])
    manifest_path = write_manifest(out, manifest)
    result = BuildResult(out, manifest_path, cfg_hash, results, time.perf_counter() - start)
    atomic_write_bytes(out / REPORT_NAME, json.dumps(build_report(result, config), indent=2).encode() + b"\n")
    return result


def build_report(result: BuildResult, config: BuildConfig) -> dict[str, Any]:
    """Timings and statuses (not deterministic, hence not in the manifest)."""
    stage_totals = {s: round(sum(r.timings_s.get(s, 0.0) for r in result.results), 4) for s in STAGES}
    built = [r for r in result.results if r.status == "built"]
    keyframes = sum(int(r.shard.counts.get("keyframes", 0)) for r in built)
    return {
        "config_hash": result.config_hash,
        "workers": config.workers,
        "cpu_count": os.cpu_count(),
        "wall_s": round(result.wall_s, 4),
        "scenes": {"total": len(result.results), "built": len(built),
                   "resumed": sum(r.status == "resumed" for r in result.results),
                   "failed": len(result.failed)},
        "keyframes_built": keyframes,
        "keyframes_per_s": round(keyframes / result.wall_s, 4) if result.wall_s > 0 else None,
        "stage_seconds_total": stage_totals,
        "per_scene": [{"scene": r.scene, "status": r.status, "reason": r.reason,
                       "timings_s": {k: round(v, 4) for k, v in r.timings_s.items()}} for r in result.results],
    }


def summary_table(result: BuildResult):
    """A rich Table: one row per scene with its status and counts (failure reasons: ``BuildResult.failed``)."""
    from rich.table import Table

    table = Table(title=f"build {result.out_dir}  ({result.wall_s:.1f} s)")
    table.add_column("scene", overflow="fold")
    table.add_column("status", no_wrap=True, min_width=7)
    columns = (("frames", "frames"), ("kf", "keyframes"), ("dets", "detections"), ("tracks", "tracks"),
               ("images", "images"), ("vis", "visible_masks"), ("qa", "qa"))
    for header, _ in columns:
        table.add_column(header, justify="right", no_wrap=True)
    table.add_column("s", justify="right", no_wrap=True)
    for r in result.results:
        counts = r.shard.counts if r.shard is not None else {}
        style = {"built": "green", "resumed": "cyan", "failed": "red"}[r.status]
        table.add_row(r.scene, f"[{style}]{r.status}[/{style}]", *(str(counts.get(k, "")) for _, k in columns),
                      f"{sum(r.timings_s.values()):.1f}" if r.timings_s else "")
    n = {status: sum(r.status == status for r in result.results) for status in ("built", "resumed", "failed")}
    table.caption = (f"{len(result.results)} scenes: {n['built']} built, {n['resumed']} resumed, "
                     f"{n['failed']} failed (kf = keyframes, vis = visible masks, s = seconds of work)")
    return table
