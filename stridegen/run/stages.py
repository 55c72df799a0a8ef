"""The stages of one scene, in order (``SCENE_STAGES``): read (frames, calibration, ground truth), keyframes,
detect, track, attributes, images, segment (with visibility, timed apart), qa, anonymize. Each is a thin step over
one ``SceneState``: it calls the pipeline's functions over arrays, with the backends of ``stridegen.run.backends``,
and stores what they return through ``stridegen.shards.adapters`` (the storage tables). ``build_scene_record``
runs them and gathers the ``SceneRecord`` that ``write`` stores.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from stridegen.core.errors import LogFormatError
from stridegen.core.seeding import rng_for
from stridegen.logs.base import Scene
from stridegen.pipeline.attributes import dense_tracks, extract_attributes
from stridegen.pipeline.keyframes import image_frame_indices, sample_keyframes
from stridegen.pipeline.qa.stage import QAScene, generate_scene_qa
from stridegen.pipeline.segment.stage import SegmentScene, assign_regions, context_frames, segment_images
from stridegen.pipeline.track_base import detect_global, detection_track_ids, with_rows
from stridegen.pipeline.visibility import min_region_area_px
from stridegen.run import backends
from stridegen.run.config import BuildConfig, is_synthetic_source
from stridegen.run.runner import StageCallback, run_stages
from stridegen.run.state import SceneState
from stridegen.shards import adapters
from stridegen.shards.scenarios import scenarios_table
from stridegen.shards.schema import SceneMeta, SceneRecord

# Every timed step of a scene, in order: the stages, plus visibility (measured inside segment, per image).
STAGES = (
    "read", "keyframes", "detect", "track", "attributes", "images", "segment", "visibility", "qa", "anonymize", "write"
)  # fmt: skip
SUB_STAGES: dict[str, Sequence[str]] = {"segment": ("visibility",)}


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
    config = st.config
    st.tracker = backends.tracker(config.tracker)  # one per scene: it starts fresh, and track_stage uses it
    source, name = backends.detection_source(st.tracker, config.detector, config.tracker, config.seed)
    st.detections = []
    for frame in st.scene.frames:
        st.detections.append(with_rows(detect_global(source, frame, name)))


def track_stage(st: SceneState) -> None:
    st.tracked = st.need("tracker").track(st.detections, st.times_s.tolist())
    st.track_ids = detection_track_ids(st.detections, st.tracked)


def attributes_stage(st: SceneState) -> None:
    st.scene_tracks = dense_tracks(st.tracked, st.times_s.tolist(), st.need("frames").T_global_from_ego)
    st.attributes = extract_attributes(st.scene_tracks)


def images_stage(st: SceneState) -> None:
    keyframes = st.need("keyframes")
    frames = image_frame_indices(keyframes, len(st.scene.frames), st.config.output.images)
    # Checked in segment_stage: an image the segmenter decodes strictly is not decoded a second time (issue 35).
    st.images = adapters.images_table(st.scene, [str(c) for c in st.need("cameras").channel], frames, check=False)


def segment_stage(st: SceneState) -> None:
    """Masks of the tracked objects in the keyframe and context images, the visibility filter, the regions (visible
    masks of keyframe images of at least ``visibility.min_region_area_frac`` of the image area). Then the integrity
    check of the stored images (``adapters.check_images``) that the segmenter did not decode strictly itself."""
    scene, keyframes, images, cameras = st.scene, st.need("keyframes"), st.need("images"), st.need("cameras")
    channels = [str(c) for c in cameras.channel]
    segmenter = backends.segmenter(st.config)
    if segmenter is None:
        adapters.check_images(scene, images, channels)
        return
    ctx = context_frames(keyframes.window, keyframes.offsets_s, st.config.context_offsets_s())
    wanted = {int(f) for f in np.asarray(keyframes.frame_index)} | {int(f) for f in ctx.ravel() if f >= 0}
    rows = [i for i, f in enumerate(np.asarray(images.frame_index).tolist()) if f in wanted]
    tracked_ok = [b[np.flatnonzero(np.asarray(b.track_id, dtype=object) != "")] if len(b) else b for b in st.tracked]
    inputs = SegmentScene(
        name=scene.name,
        images=images,
        cameras=cameras,
        rows=rows,
        tracked=tracked_ok,
        track_ids=st.need("scene_tracks").track_id,
        frames=scene.frames,
        decoded=set(),
    )
    try:
        st.masks = segment_images(inputs, segmenter, st.config.visibility, st.timings)
    except LogFormatError:
        adapters.check_images(scene, images, channels)  # the first bad image in table order, named by its file
        raise
    adapters.check_images(scene, images, channels, skip=inputs.decoded or ())
    min_area = min_region_area_px(cameras.width, cameras.height, st.config.visibility.min_region_area_frac)
    st.regions = assign_regions(np.asarray(keyframes.frame_index), images, st.masks, min_area)


def qa_stage(st: SceneState) -> None:
    if st.regions is None:  # no segmenter: no regions, no QA
        return
    rng = rng_for(st.config.seed, st.scene.token, "qa")
    scene = QAScene(
        name=st.scene.name,
        keyframes=st.need("keyframes"),
        cameras=st.need("cameras"),
        times_s=st.times_s,
        attrs=st.need("attributes"),
        regions=st.regions,
    )
    result = generate_scene_qa(scene, st.config.qa, rng)
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
    record = SceneRecord(
        meta=meta,
        frames=st.need("frames"),
        cameras=st.need("cameras"),
        images=st.need("images"),
        keyframes=st.need("keyframes"),
        skipped_keyframes=st.need("skipped"),
        detections=st.detections_table(),
        tracks=adapters.tracks_table(st.need("scene_tracks")),
        attributes=adapters.attributes_table(st.need("attributes")),
        ground_truth=st.ground_truth,
        masks=adapters.masks_table(st.need("masks")) if segmented else None,
        regions=adapters.regions_table(st.need("regions")) if segmented else None,
        qa=adapters.qa_table(st.qa_rows) if segmented and st.qa_rows is not None else None,
        qa_skipped=st.qa_skipped,
        extra=st.extra_tables,
    )
    record.scenarios = scenarios_table(record)  # the groups' scenario relations (schema v4, docs/scenarios.md)
    return record


def anonymize_stage(st: SceneState) -> None:
    """The privacy pass over the scene's stored images and times (``stridegen.pipeline.anonymize.scene``), after
    the QA, so masks and QA see the raw pixels; when the config's (resolved) section is active."""
    section = st.config.anonymize.resolved(is_synthetic_source(st.source_format, st.source_version))
    if not section.active():
        return
    from stridegen.pipeline.anonymize.scene import anonymize_scene  # only a build that anonymizes (issue 35)

    frames, cameras, images = st.need("frames"), st.need("cameras"), st.need("images")
    out = anonymize_scene(
        st.scene.name,
        st.scene.log_name,
        frames.timestamp_us,
        cameras,
        images,
        [st.detections_table(), st.ground_truth],
        section.image_options(),
        backends.face_detector(section),
        st.masks,
        st.regions,
    )
    st.frames, st.images, extra = adapters.anonymized_tables(frames, images, out)
    st.scene = replace(st.scene, log_name=out.log_name)
    st.extra_tables.update(extra)


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
    ("anonymize", anonymize_stage),  # after the QA, so masks and QA see the raw pixels
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
    segmented = backends.segmenter(config) is not None
    if not segmented:  # no masks: neither segment, visibility nor qa runs
        steps = [(name, step) for name, step in steps if name not in ("segment", "qa")]
    run_stages(scene.name, steps, state.timings, report, SUB_STAGES if segmented else {})
    return scene_record(state)
