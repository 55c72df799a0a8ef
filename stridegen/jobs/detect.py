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

What a worker does to a scene, and the results file made from the parts, is ``stridegen.pipeline.results``
(``detect_scene``, ``track_scene_rows``, ``write_results_file``; ``stridegen validate`` uses them too). Backends are
built only in the workers: the sections are checked here without building them (``stridegen.run.config``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from stridegen.core import registry
from stridegen.core.canonical import sha256_canonical
from stridegen.formats.nuscenes_results import MAX_BOXES_PER_SAMPLE
from stridegen.logs.names import select_scenes
from stridegen.pipeline.detect.base import Detector
from stridegen.pipeline.results import (
    detect_scene,
    detection_rows,
    scene_records,
    track_scene_rows,
    write_results_file,
)
from stridegen.pipeline.track_base import DetectingTracker, provides_detections
from stridegen.run import backends
from stridegen.run.config import DetectorSection, ExecutorSection, TrackerSection, detector_section, tracker_section
from stridegen.run.executors import make_executor
from stridegen.run.runner import (
    JobOutcome,
    JobTarget,
    RunObserver,
    SceneJob,
    SceneResult,
    SceneRunSummary,
    StageCallback,
    UnitProgress,
    read_parts,
    run_scene_jobs,
    run_stages,
    work_folder,
    write_part,
)
from stridegen.shards.writer import ShardInfo

# (frames done, frames in all): called once before the first scene, then after each finished scene.
Progress = Callable[[int, int], None]

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


# ------------------------------------------------------------------------------------------------------- the job
@dataclass(frozen=True)
class ResultsJob:
    """The task of a results job (``SceneTask``; picklable: plain data). ``tracker`` None: detection rows
    (``results_dict``'s), else tracking rows of a fresh tracker of that section. ``tokens``: scene name -> token."""

    log_root: str
    log_format: str | None
    log_version: str | None
    detector: dict[str, Any]  # DetectorSection, dumped
    tracker: dict[str, Any] | None  # TrackerSection, dumped
    seed: int
    work: str  # the work folder
    max_boxes_per_sample: int = MAX_BOXES_PER_SAMPLE
    tokens: Mapping[str, str] = field(default_factory=dict)

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

    def run_scene(self, scene_name: str, report: StageCallback, timings: dict[str, float]) -> ShardInfo:
        """Detect (and track) one scene and write its part (``scene_records``: its rows per frame)."""
        scene = backends.log_reader(self.log_root, self.log_format, self.log_version).scene(self.tokens[scene_name])
        detector_config = DetectorSection.model_validate(self.detector)
        tracker_config = TrackerSection.model_validate(self.tracker) if self.tracker is not None else None
        state: dict[str, Any] = {}

        def detect() -> None:
            source: Detector | DetectingTracker
            if tracker_config is None:
                source, name = backends.detector(detector_config, self.seed), f"detector {detector_config.name!r}"
            else:
                state["tracker"] = backends.tracker(tracker_config)  # fresh per scene: it keeps state frame to frame
                source, name = backends.detection_source(state["tracker"], detector_config, tracker_config, self.seed)
            state["boxes"], state["truncated"] = detect_scene(scene, source, name, self.max_boxes_per_sample)

        def track() -> None:
            state["rows"] = track_scene_rows(scene, state["boxes"], state["tracker"])

        stages = [("detect", detect)] if tracker_config is None else [("detect", detect), ("track", track)]
        run_stages(scene.name, stages, timings, report)
        if tracker_config is None:
            state["rows"] = detection_rows(scene, state["boxes"])
        counts = {"frames": len(scene.frames), "truncated": state["truncated"]}
        records = scene_records(scene, state["rows"])  # the rows' key order is the file's: not sorted
        return write_part(self.work, scene.name, records, counts, sort_keys=False)


@dataclass(frozen=True)
class RunOptions:
    """How a results job runs: scenes, executor and workers, overwrite, progress (none of it changes a byte)."""

    scenes: Sequence[str] | None = None
    workers: int = 1
    executor: ExecutorSection | str = "local"
    overwrite: bool = False
    observer: RunObserver | None = None
    progress: Progress | None = None


def _run_results(job: ResultsJob, out: Path, source: str, run: RunOptions) -> ResultsSummary:
    """Run ``job`` over the selected scenes, then write the results file from the parts (module docstring)."""
    start = time.perf_counter()
    executor = make_executor(run.executor, run.workers)
    backends.forget("log_reader")  # the log may have changed since an earlier run in this process
    all_scenes = backends.log_reader(job.log_root, job.log_format, job.log_version).scenes()
    tokens = dict(select_scenes([(s.name, s.token) for s in all_scenes], run.scenes, "scenes"))
    frames = {s.name: len(s.frames) for s in all_scenes if s.name in tokens}
    names = list(tokens)
    job = replace(job, tokens=tokens)
    observer = run.observer if run.progress is None else UnitProgress(run.progress, frames, run.observer)
    summary = ResultsSummary(out, source, len(names), sum(frames.values()), 0)

    def finish(outcome: JobOutcome) -> None:
        summary.results = outcome.results
        if outcome.ok:
            records = [r for part in read_parts(job.work, names) for r in part]
            log_tokens = [f.token for s in all_scenes for f in s.frames]
            counts = write_results_file(out, records, job.tracker is not None, log_tokens)
            summary.n_samples, summary.n_tracks = counts.n_samples, counts.n_tracks
            summary.class_counts = counts.class_counts
            parts = [r.shard for r in outcome.results if r.shard is not None]
            summary.truncated = sum(int(part.counts.get("truncated", 0)) for part in parts)

    target = JobTarget(Path(job.work), job.config_hash(names), names)
    run_scene_jobs([SceneJob(target, job, finish)], executor, run.overwrite, observer)
    summary.wall_s = time.perf_counter() - start
    return summary


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
    section = detector_section(detector, options)  # an unknown backend or a bad option fails now
    backends.check_inputs("detector", section.name, backends.detector_options(section, seed))  # nothing built
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
    tracking_source = provides_detections(registry.resolve("tracker", tracker))  # nothing built
    backends.check_inputs("tracker", tracker, tracker_config.factory_options())
    if not tracking_source:
        backends.check_inputs("detector", detector, backends.detector_options(detector_config, seed))
    job = _job(log_root, out, detector_config, tracker_config, seed, log_format, version)
    source = tracker if tracking_source else detector
    return _run_results(job, Path(out), source, RunOptions(scenes, workers, executor, overwrite, observer, progress))
