"""The log check of one scene: its name, frame times and the keyframes the configured schedule picks, sensors and
cameras, files, poses and annotations.

Thresholds: frames of a driving log come at roughly 2-20 Hz (50-500 ms apart); a median spacing above 10 s or below
1 ms read as microseconds is a unit mistake, and the unit that turns the spacing into 1-50 Hz is named. Every road
vehicle is longer than it is wide; when most vehicle boxes have a "length" below their "width", the size columns are
swapped.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from stridegen.logs.base import KNOWN_MODALITIES, Annotations, Frame, Scene
from stridegen.logs.bounds import MAX_FRAME_SPACING_US, MIN_FRAME_SPACING_US
from stridegen.logs.box_rotation import ROTATION_GLOBAL
from stridegen.logs.check.bounds import bounds_findings
from stridegen.logs.check.files import file_findings, image_data_findings, image_header_findings
from stridegen.logs.check.findings import ERROR, INVALID_INTRINSICS_CAUSE, WARNING, Finding, SceneSummary, error_finding
from stridegen.logs.check.poses import (
    box_orientation_findings,
    camera_orientation_findings,
    constant_pose_findings,
    ego_findings,
)
from stridegen.logs.check.settings import CheckContext, KeyframeSchedule
from stridegen.logs.names import is_safe_name

# Timestamps: nominal frame spacing 50-500 ms; flagged outside 1 ms .. 10 s (module docstring).
MAX_SPACING_US = MAX_FRAME_SPACING_US
MIN_SPACING_US = MIN_FRAME_SPACING_US
UNITS_US = {"ns": 1e-3, "ms": 1e3, "s": 1e6}  # microseconds per unit
# Classes whose boxes are always longer than wide (nuScenes detection classes).
VEHICLE_LABELS = ("car", "truck", "bus", "trailer", "construction_vehicle", "motorcycle", "bicycle")


def scene_findings(
    ctx: CheckContext, summary: SceneSummary, modalities: dict[str, tuple[set[str], set[str]]]
) -> list[Finding]:
    """The findings of the scene ``summary.name`` (read through the reader), filling in ``summary``; sensors of an
    unknown modality go into ``modalities`` (modality -> its channels, the scenes), the whole log's finding."""
    name = summary.name
    out = _name_findings(ctx, name)
    try:
        scene = ctx.reader.scene(name)
    except Exception as exc:  # a typed LogFormatError, or whatever a plugin reader raises
        return [*out, error_finding(exc, name)]
    summary.frames = len(scene.frames)
    if not scene.frames:
        out.append(
            ctx.finding(
                "no_frames",
                "the scene has no frames",
                "the scene's first sample token is empty or points to no sample",
                name,
                ctx.path("sample"),
            )
        )
        return out
    out += _time_findings(ctx, scene, summary)
    out += _sensor_findings(ctx, scene, summary, modalities)
    out += file_findings(ctx, scene)
    if ctx.deep:
        out += image_data_findings(ctx, scene)
    out += ego_findings(ctx, scene, summary)
    annotation_findings, per_frame = _annotation_findings(ctx, scene, summary)
    out += annotation_findings
    out += constant_pose_findings(ctx, scene, summary, per_frame)
    out += bounds_findings(ctx, scene, per_frame)
    return out


def _name_findings(ctx: CheckContext, name: str) -> list[Finding]:
    if is_safe_name(name):
        return []
    return [
        ctx.finding(
            "unsafe_scene_name",
            f"scene name {name!r} is not a safe file name: the shard is named after the scene, so only letters, "
            "digits, '.', '_' and '-' are allowed",
            "the converter used a path or a free-text description as the scene name; rename the scene in the scene "
            "table",
            name,
            ctx.path("scene"),
        )
    ]


def _time_findings(ctx: CheckContext, scene: Scene, summary: SceneSummary) -> list[Finding]:
    t_us = np.array([f.timestamp_us for f in scene.frames], dtype=np.int64)
    summary.duration_s = float(t_us[-1] - t_us[0]) * 1e-6
    file = ctx.path("sample")
    if t_us.size < 2:
        return _keyframe_findings(ctx, scene, summary, t_us)
    spacing = np.diff(t_us)
    if np.any(spacing <= 0):
        i = int(np.flatnonzero(spacing <= 0)[0])
        return [
            ctx.finding(
                "timestamps_not_increasing",
                f"frames {i} and {i + 1} have timestamps {t_us[i]} and {t_us[i + 1]}: keyframes need strictly "
                "increasing times",
                "timestamps in seconds rounded to integers, or two samples written for one moment",
                scene.name,
                file,
            )
        ]
    median = float(np.median(spacing))
    summary.frame_rate_hz = 1e6 / median
    if MIN_SPACING_US <= median <= MAX_SPACING_US:
        return _keyframe_findings(ctx, scene, summary, t_us)
    _keyframe_findings(ctx, scene, summary, t_us)  # the counts for the table; the unit is the finding
    guesses = [u for u, us in UNITS_US.items() if 1.0 <= 1e6 / (median * us) <= 50.0]
    unit = guesses[0] if guesses else ("ns" if median > MAX_SPACING_US else "ms")
    return [
        ctx.finding(
            "timestamp_unit",
            f"frames are {median:g} us apart (median): {median * 1e-6:g} s, i.e. {summary.frame_rate_hz:.3g} Hz, "
            f"where driving logs run at 2-20 Hz; read as {unit} they are {1e6 / (median * UNITS_US[unit]):.3g} Hz",
            f"timestamps look like {unit}; the reader wants microseconds (nuScenes: integer microseconds)",
            scene.name,
            file,
        )
    ]


def _keyframe_findings(ctx: CheckContext, scene: Scene, summary: SceneSummary, t_us: np.ndarray) -> list[Finding]:
    """Keyframes the configured schedule picks (the build's keyframe selection, ``select_keyframes``)."""
    kf = ctx.settings.keyframes
    selection = ctx.settings.select_keyframes(t_us.astype(np.float64) * 1e-6)
    summary.keyframes = len(selection.keyframes)
    summary.keyframes_skipped = dict(Counter(reason for _, reason in selection.skipped).most_common())
    if selection.keyframes:
        return []
    reasons = "; ".join(f"{n} x {r}" for r, n in list(summary.keyframes_skipped.items())[:3]) or "no target"
    return [
        ctx.finding(
            "no_keyframes",
            f"0 keyframes: {summary.frames} frame(s) over {summary.duration_s:.2f} s; the schedule skipped its "
            f"targets ({reasons})",
            _no_keyframe_cause(kf, summary),
            scene.name,
        )
    ]


def _no_keyframe_cause(kf: KeyframeSchedule, summary: SceneSummary) -> str:
    need = kf.start_s + kf.window_after_s
    fixed = kf.schedule == "fixed"  # the auto schedule fits its window to the clip
    if fixed and summary.duration_s + kf.tolerance_s < need:
        return (
            f"clip shorter than the schedule: the first keyframe at keyframes.start_s={kf.start_s:g} s needs frames "
            f"until {need:g} s (window_after_s={kf.window_after_s:g}) but the clip lasts {summary.duration_s:.2f} s; "
            "lower keyframes.start_s / window_before_s / window_after_s, or keyframes.schedule=auto"
        )
    rate = summary.frame_rate_hz
    spacing = f"frames are {1 / rate:.3g} s apart" if rate else "the frames"
    return (
        f"the schedule does not fit the frame times: {spacing}, the window asks for one every "
        f"{1 / kf.window_rate_hz:g} s within keyframes.tolerance_s={kf.tolerance_s:g} s; match "
        "keyframes.window_rate_hz to the frame rate or raise keyframes.tolerance_s"
    )


def _sensor_findings(
    ctx: CheckContext, scene: Scene, summary: SceneSummary, modalities: dict[str, tuple[set[str], set[str]]]
) -> list[Finding]:
    out: list[Finding] = []
    channels: dict[str, str] = {}
    for frame in scene.frames:
        for channel, sample in frame.sensors.items():
            channels.setdefault(channel, sample.calibration.modality)
    for channel, modality in channels.items():
        if modality not in KNOWN_MODALITIES:
            channels_of, scenes_of = modalities.setdefault(modality, (set(), set()))
            channels_of.add(channel)
            scenes_of.add(scene.name)
    summary.cameras = [c for c, m in channels.items() if m == "camera"]
    summary.lidar = [c for c, m in channels.items() if m == "lidar"]
    first = scene.frames[0]
    wanted = ctx.settings.cameras
    if wanted is not None:
        missing = [c for c in wanted if c not in first.camera_channels]
        if missing:
            out.append(
                ctx.finding(
                    "unknown_camera",
                    f"cameras.channels asks for {missing}; the scene's first frame has cameras {first.camera_channels}",
                    "a channel name of another log in the config, or the camera's modality is not 'camera'",
                    scene.name,
                )
            )
    segmented = ctx.settings.segmenter != "none"
    if not summary.cameras:
        out.append(
            ctx.finding(
                "no_cameras",
                f"no camera channel (channels: {channels}): no images" + (", no masks, no QA" if segmented else ""),
                "the sensor modality of the cameras is not 'camera', or the converter wrote no camera sample_data",
                scene.name,
                ctx.path("sensor"),
                ERROR if segmented else WARNING,
            )
        )
    if not summary.lidar and ctx.settings.segmenter_needs_lidar:
        out.append(
            ctx.finding(
                "no_lidar",
                f"no LiDAR channel, and segmenter {ctx.settings.segmenter!r} needs LiDAR points: every mask would "
                "fall back to its box hull with quality 0, so no mask would be visible",
                "the log has no LiDAR (choose segmenter.name=projected_box, grabcut or sam2), or the LiDAR sensor's "
                "modality is not 'lidar'",
                scene.name,
                ctx.path("sensor"),
            )
        )
    out += _intrinsic_findings(ctx, first, scene.name)
    out += camera_orientation_findings(ctx, first, scene.name)
    if ctx.deep:
        out += image_header_findings(ctx, first, scene.name)
    return out


def _intrinsic_findings(ctx: CheckContext, frame: Frame, scene: str) -> list[Finding]:
    """Readers that do not check intrinsics themselves (the nuScenes reader raises InvalidCalibrationError)."""
    out = []
    for channel in frame.camera_channels:
        k = frame.sensors[channel].calibration.intrinsic
        ok = k is not None and k.shape == (3, 3) and np.all(np.isfinite(k)) and k[0, 0] > 0 and k[1, 1] > 0
        if not ok:
            out.append(
                ctx.finding(
                    "invalid_intrinsics",
                    f"camera {channel}: intrinsic {None if k is None else k.tolist()} is missing, not finite or has "
                    "a focal length <= 0",
                    INVALID_INTRINSICS_CAUSE,
                    scene,
                    ctx.path("calibrated_sensor"),
                )
            )
    return out


def _annotation_findings(
    ctx: CheckContext, scene: Scene, summary: SceneSummary
) -> tuple[list[Finding], list[Annotations] | None]:
    """The annotations' findings, and every frame's annotations (None where the reader failed on them)."""
    try:
        per_frame = [f.annotations() for f in scene.frames]
    except Exception as exc:  # a typed LogFormatError, or whatever a plugin reader raises
        return [error_finding(exc, scene.name)], None
    summary.annotations = sum(len(a) for a in per_frame)
    file = ctx.path("sample_annotation")
    if not summary.annotations:
        detector = ctx.settings.detector
        uses_gt = ctx.settings.detector_uses_ground_truth and not ctx.settings.tracker_provides_detections
        return [
            ctx.finding(
                "no_annotations",
                f"no annotations in any of the {summary.frames} frames"
                + (
                    f": detector {detector!r} makes its boxes from them, so no detections, no tracks, no QA"
                    if uses_gt
                    else " (no ground-truth table)"
                ),
                "an empty annotation table, or annotations whose sample tokens point to no frame of this scene",
                scene.name,
                file,
            )
        ], per_frame
    out: list[Finding] = []
    boxes = [a.boxes for a in per_frame if len(a)]
    size = np.concatenate([b.size_lwh for b in boxes])
    label = np.concatenate([np.asarray(b.label, dtype=object) for b in boxes])
    bad_size = ~np.all(np.isfinite(size) & (size > 0), axis=1)
    if bad_size.any():
        out.append(
            ctx.finding(
                "invalid_box_size",
                f"{int(bad_size.sum())} box(es) have sizes that are not finite and positive, e.g. "
                f"{size[bad_size][0].tolist()}",
                "sizes missing in the source (written as NaN or 0) or a column shifted in the converter",
                scene.name,
                file,
            )
        )
    vehicle = np.isin(label, VEHICLE_LABELS) & ~bad_size
    if vehicle.sum() >= 3:
        wider = size[vehicle, 0] < size[vehicle, 1]
        if wider.mean() > 0.5:
            out.append(
                ctx.finding(
                    "box_size_order",
                    f"{wider.mean():.0%} of the {int(vehicle.sum())} vehicle boxes are wider than long "
                    f"(median length x width {np.median(size[vehicle, 0]):.2f} x {np.median(size[vehicle, 1]):.2f} m)",
                    "sizes written as [length, width, height]; nuScenes sample_annotation.size is [width, length, "
                    "height] (devkit Box wlh)",
                    scene.name,
                    file,
                )
            )
    rotations = [b.extras[ROTATION_GLOBAL] for b in boxes if ROTATION_GLOBAL in b.extras]
    if rotations:
        out += box_orientation_findings(ctx, np.concatenate(rotations), scene.name, file)
    return out, per_frame
