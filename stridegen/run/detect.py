"""Run a detector (and a tracker) over a log and write nuScenes results files: the inputs of
``stridegen eval detection`` and ``stridegen eval tracking`` (the commands ``stridegen detect`` / ``stridegen track``).

- ``run_detect``: every frame of every (selected) scene through a ``detector`` backend of the registry; a nuScenes
  detection-results file with an entry (possibly empty) for every sample of the log, so the devkit-identical
  evaluator accepts it (it demands the file's samples equal the ground truth's).
- ``run_track``: the same detections, each scene tracked by a fresh ``tracker`` backend; a nuScenes
  tracking-results file (the tracking classes only; tracking_score = the detection's score; tracking ids
  ``scene/track``), with an entry for every sample of the selected scenes (``eval tracking`` scores the scenes a
  file covers). A tracker that provides the detections itself (``precomputed``) is the source, as in the build.

Both are jobs on the scene runner (stridegen.run.runner), one task per scene: the worker detects (and tracks) its
scene with backends of stridegen.run.backends and writes the scene's results rows as a part in the work folder
``<out>.parts/`` (``parts/<scene>.jsonl``, journaled with its sha256); once every scene is done the results file is
written from the parts, in log order. A rerun resumes from the intact parts; a work folder of other arguments is
refused unless ``overwrite``. The file's bytes depend only on the log and the arguments, never on the executor or
the number of workers.

What a worker does to a scene is ``stridegen.pipeline.results`` (``detect_scene``, ``track_scene_rows``; ``stridegen
validate`` uses them too).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from stridegen.core.canonical import sha256_canonical
from stridegen.core.errors import ConfigError
from stridegen.formats.detection_boxes import to_detection_boxes
from stridegen.formats.nuscenes_results import MAX_BOXES_PER_SAMPLE, results_dict, write_results_dict
from stridegen.formats.tracking_results import write_tracking_results
from stridegen.logs.base import Scene
from stridegen.pipeline.detect.base import Detector
from stridegen.pipeline.results import detect_scene, track_scene_rows
from stridegen.pipeline.track_base import DetectingTracker, provides_detections
from stridegen.run import backends
from stridegen.run.config import DetectorSection, ExecutorSection, TrackerSection, validation_message
from stridegen.run.executors import make_executor
from stridegen.run.runner import (
    JobTarget,
    RunObserver,
    SceneResult,
    SceneRunSummary,
    StageCallback,
    StageEvent,
    failed_scene,
    read_part,
    run_jobs,
    run_stages,
    write_part,
)

_S = TypeVar("_S", bound=BaseModel)

# (frames done, frames in all): called once before the first scene, then after each finished scene.
Progress = Callable[[int, int], None]

WORK_SUFFIX = ".parts"  # the work folder of a results file: <out>.parts/ (journal and per-scene parts)
PART_VERSION = 1  # the parts' layout; in the job hash, so a change never resumes from old parts


@dataclass
class ResultsSummary(SceneRunSummary):
    """What ``run_detect`` / ``run_track`` wrote (the file only when every scene succeeded: ``ok``)."""

    path: Path
    source: str  # the backend that gave the boxes (the detector, or a tracker that provides them)
    n_scenes: int
    n_frames: int
    n_samples: int  # entries in the file (detection: every sample of the log; tracking: of the selected scenes)
    class_counts: dict[str, int] = field(default_factory=dict)  # boxes written, per class
    n_tracks: int = 0  # distinct tracking ids (tracking files)
    truncated: int = 0
    results: list[SceneResult] = field(default_factory=list)  # per scene, in log order
    wall_s: float = 0.0

    @property
    def n_boxes(self) -> int:
        return sum(self.class_counts.values())


# ------------------------------------------------------------------------------------------------------ backends
def _section(model: type[_S], where: str, **fields: Any) -> _S:
    """A config section made from command-line values; its validation errors as one ConfigError."""
    try:
        return model(**fields)
    except ValidationError as exc:
        raise ConfigError(f"{where}: {validation_message(exc)}") from None


def detector_section(name: str, options: Mapping[str, Any] | None = None) -> DetectorSection:
    """The ``detector`` section of ``stridegen detect`` / ``track`` (checked as the build config's is)."""
    return _section(DetectorSection, "detector", name=name, options=dict(options or {}))


def tracker_section(name: str = "center", options: Mapping[str, Any] | None = None) -> TrackerSection:
    """The ``tracker`` section of ``stridegen track``: for ``center`` the options are ``TrackerConfig`` fields
    (``max_age``, ``matching``, ``distance_gates_m``), for other backends their factory's options."""
    return _section(TrackerSection, "tracker", name=name, options=dict(options or {}))


# -------------------------------------------------------------------------------------------------------- detect
def select_log_scenes(scenes: Sequence[Scene], wanted: Sequence[str] | None = None) -> list[Scene]:
    """The log's ``scenes`` in its order; with ``wanted`` (names or tokens) only those (ConfigError for unknown)."""
    if wanted is None:
        return list(scenes)
    known = {s.name for s in scenes} | {s.token for s in scenes}
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise ConfigError(f"scenes {unknown} not in the log (it has {[s.name for s in scenes]})")
    return [s for s in scenes if s.name in wanted or s.token in wanted]


def _class_counts(labels: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    return dict(sorted(counts.items()))


# ------------------------------------------------------------------------------------------------------- the job
@dataclass(frozen=True)
class ResultsJob:
    """What a worker needs to make one scene's part (picklable: plain data). ``tracker`` None: detection rows
    (``results_dict``'s), else tracking rows of a fresh tracker of that section."""

    log_root: str
    log_format: str | None
    log_version: str | None
    detector: dict[str, Any]  # DetectorSection, dumped
    tracker: dict[str, Any] | None  # TrackerSection, dumped
    seed: int
    work: str  # the work folder
    max_boxes_per_sample: int = MAX_BOXES_PER_SAMPLE

    def config_hash(self, scenes: Sequence[str]) -> str:
        """What the parts depend on: the log, the scenes, the backends and their options (the seed resolved)."""
        detector = DetectorSection.model_validate(self.detector)
        return sha256_canonical(
            {
                "results": "tracking" if self.tracker is not None else "detection",
                "version": PART_VERSION,
                "log": [str(Path(self.log_root).resolve()), self.log_format, self.log_version],
                "scenes": list(scenes),
                "detector": [detector.name, backends.detector_options(detector, self.seed)],
                "tracker": self.tracker,
                "max_boxes_per_sample": self.max_boxes_per_sample,
            }
        )


def scene_results(job: ResultsJob, scene: Scene, report: StageCallback, timings: dict[str, float]) -> SceneResult:
    """Detect (and track) one scene and write its part: per frame ``{"sample_token", "rows"}`` in frame order."""
    detector_config = DetectorSection.model_validate(job.detector)
    tracker_config = TrackerSection.model_validate(job.tracker) if job.tracker is not None else None
    state: dict[str, Any] = {}

    def detect() -> None:
        source: Detector | DetectingTracker
        if tracker_config is None:
            source, name = backends.detector(detector_config, job.seed), f"detector {detector_config.name!r}"
        else:
            state["tracker"] = backends.tracker(tracker_config)  # fresh per scene: it keeps state frame to frame
            source, name = backends.detection_source(state["tracker"], detector_config, tracker_config, job.seed)
        state["boxes"], state["truncated"] = detect_scene(scene, source, name, job.max_boxes_per_sample)

    def track() -> None:
        state["rows"] = track_scene_rows(scene, state["boxes"], state["tracker"])

    stages = [("detect", detect)] if tracker_config is None else [("detect", detect), ("track", track)]
    run_stages(scene.name, stages, timings, report)
    tokens = [f.token for f in scene.frames]
    if tracker_config is None:
        state["rows"] = results_dict(to_detection_boxes(list(zip(tokens, state["boxes"], strict=True))), tokens)
    records = [{"sample_token": t, "rows": state["rows"][t]} for t in tokens]
    counts = {"frames": len(tokens), "truncated": state["truncated"]}
    info = write_part(job.work, scene.name, records, counts, sort_keys=False)  # the rows' key order is the file's
    return SceneResult(scene.name, "built", info, timings_s=timings)


def _results_worker(payload: tuple[ResultsJob, str, str], report: StageCallback) -> SceneResult:
    job, scene_name, scene_token = payload
    timings: dict[str, float] = {}
    try:
        reader = backends.log_reader(job.log_root, job.log_format, job.log_version)
        return scene_results(job, reader.scene(scene_token), report, timings)
    except Exception as exc:  # one scene's failure is recorded; the others go on
        return failed_scene(scene_name, exc, timings)


class _FrameProgress:
    """A run observer that also reports frames to a ``Progress`` callback (frames of the resumed scenes count as
    done from the start), passing everything on to ``inner``."""

    def __init__(self, progress: Progress, frames: Mapping[str, int], inner: RunObserver | None) -> None:
        self.progress, self.frames, self.inner = progress, frames, inner
        self.total = sum(frames.values())
        self.done = 0

    def planned(self, tasks: Sequence[tuple[int, str]]) -> None:
        self.done = self.total - sum(self.frames[scene] for _, scene in tasks)
        self.progress(self.done, self.total)
        if self.inner is not None:
            self.inner.planned(tasks)

    def event(self, event: StageEvent) -> None:
        if self.inner is not None:
            self.inner.event(event)

    def finished(self, job: int, result: SceneResult) -> None:
        if result.ok:
            self.done += self.frames[result.scene]
            self.progress(self.done, self.total)
        if self.inner is not None:
            self.inner.finished(job, result)


@dataclass(frozen=True)
class RunOptions:
    """How a results job runs: scenes, executor and workers, overwrite, progress (none of it changes a byte)."""

    scenes: Sequence[str] | None = None
    workers: int = 1
    executor: ExecutorSection | str = "local"
    overwrite: bool = False
    observer: RunObserver | None = None
    progress: Progress | None = None


def work_folder(out: str | Path) -> Path:
    """The work folder of the results file ``out``: ``<out>.parts/`` beside it."""
    out = Path(out)
    return out.with_name(out.name + WORK_SUFFIX)


def _run_results(job: ResultsJob, out: Path, source: str, run: RunOptions) -> ResultsSummary:
    """Run ``job`` over the selected scenes, then write the results file from the parts (module docstring)."""
    start = time.perf_counter()
    executor = make_executor(run.executor, run.workers)
    backends.forget("log_reader")  # the log may have changed since an earlier run in this process
    all_scenes = backends.log_reader(job.log_root, job.log_format, job.log_version).scenes()
    chosen = select_log_scenes(all_scenes, run.scenes)
    names = [s.name for s in chosen]
    frames = {s.name: len(s.frames) for s in chosen}
    tokens = {s.name: s.token for s in chosen}
    observer = run.observer if run.progress is None else _FrameProgress(run.progress, frames, run.observer)
    [outcome] = run_jobs(
        [JobTarget(Path(job.work), job.config_hash(names), names)],
        lambda _, scene: (job, scene, tokens[scene]),
        _results_worker,
        executor,
        run.overwrite,
        observer,
    )
    summary = ResultsSummary(out, source, len(chosen), sum(frames.values()), 0, results=outcome.results)
    if summary.ok:
        write_results_file(job, out, names, [f.token for s in all_scenes for f in s.frames], summary)
    summary.wall_s = time.perf_counter() - start
    return summary


def write_results_file(
    job: ResultsJob, out: Path, scenes: Sequence[str], log_tokens: Sequence[str], summary: ResultsSummary
) -> None:
    """The finalize: the results file ``out`` from the parts of ``scenes`` (log order), and its counts into
    ``summary``. Detection: an entry for every sample of the log (``log_tokens``); tracking: for the samples of
    ``scenes``."""
    parts = [(r["sample_token"], r["rows"]) for name in scenes for r in read_part(job.work, name)]
    rows = [row for _, sample in parts for row in sample]
    results: dict[str, list[dict[str, Any]]]
    if job.tracker is None:
        results = {token: [] for token in log_tokens}
        results.update(parts)
        write_results_dict(out, results)
        summary.class_counts = _class_counts(row["detection_name"] for row in rows)
    else:
        results = dict(parts)
        out.parent.mkdir(parents=True, exist_ok=True)
        write_tracking_results(out, results)
        summary.class_counts = _class_counts(row["tracking_name"] for row in rows)
        summary.n_tracks = len({row["tracking_id"] for row in rows})
    summary.n_samples = len(results)
    summary.truncated = sum(int(r.shard.counts.get("truncated", 0)) for r in summary.results if r.shard is not None)


def _job(
    log_root: str | Path,
    out: str | Path,
    detector: DetectorSection,
    tracker: TrackerSection | None,
    seed: int,
    log_format: str | None,
    version: str | None,
) -> ResultsJob:
    return ResultsJob(
        str(log_root),
        log_format,
        version,
        detector.model_dump(mode="json"),
        tracker.model_dump(mode="json") if tracker is not None else None,
        seed,
        str(work_folder(out)),
    )


def run_detect(
    log_root: str | Path,
    out: str | Path,
    detector: str = "oracle",
    options: Mapping[str, Any] | None = None,
    seed: int = 0,
    scenes: Sequence[str] | None = None,
    log_format: str | None = None,
    version: str | None = None,
    progress: Progress | None = None,
    *,
    workers: int = 1,
    executor: ExecutorSection | str = "local",
    overwrite: bool = False,
    observer: RunObserver | None = None,
) -> ResultsSummary:
    """Detect over a log and write a nuScenes detection-results file to ``out`` (backend errors come before the
    log is read; a failed scene is in the summary's ``failed``, and the file is written once every scene is done).
    ``workers`` / ``executor`` run the scenes, ``observer`` and ``progress`` are told of them; ``overwrite``
    replaces a work folder (``<out>.parts/``) of other arguments."""
    section = detector_section(detector, options)
    backends.detector(section, seed)  # an unknown backend or a bad option fails now (cached: a local worker's)
    job = _job(log_root, out, section, None, seed, log_format, version)
    return _run_results(job, Path(out), detector, RunOptions(scenes, workers, executor, overwrite, observer, progress))


def run_track(
    log_root: str | Path,
    out: str | Path,
    detector: str = "oracle",
    options: Mapping[str, Any] | None = None,
    seed: int = 0,
    tracker: str = "center",
    tracker_options: Mapping[str, Any] | None = None,
    scenes: Sequence[str] | None = None,
    log_format: str | None = None,
    version: str | None = None,
    progress: Progress | None = None,
    *,
    workers: int = 1,
    executor: ExecutorSection | str = "local",
    overwrite: bool = False,
    observer: RunObserver | None = None,
) -> ResultsSummary:
    """Detect over a log, track each scene with a fresh ``tracker`` backend, write a nuScenes tracking-results
    file to ``out``: an entry for every sample of the selected scenes (the tracking evaluator scores the scenes a
    file covers, so the other scenes are left out rather than scored as all missed). The run as ``run_detect``'s."""
    detector_config, tracker_config = detector_section(detector, options), tracker_section(tracker, tracker_options)
    first = backends.tracker(tracker_config)  # bad backends and options fail now, before the log is read
    backends.detection_source(first, detector_config, tracker_config, seed)
    job = _job(log_root, out, detector_config, tracker_config, seed, log_format, version)
    source = tracker if provides_detections(first) else detector
    return _run_results(job, Path(out), source, RunOptions(scenes, workers, executor, overwrite, observer, progress))
