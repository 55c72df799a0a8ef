"""The log doctor (``stridegen check``): what a build would make of a log, scene by scene, and the conversion
mistakes that make a build produce little or nothing, each with its likely cause.

``check_log(reader_or_path, config)`` reads only metadata: the scene list, every frame's timestamps, poses,
sensors and calibration, the annotations, and the size of every sensor file (``os.stat``); with ``deep=True``
also the header of one image per camera (a few hundred bytes). No point cloud or image is decoded.

Findings are errors or warnings (``CODES`` lists every code with what ``build`` does with it; docs/check.md is the
same table). ``run_build`` runs the check with ``deep=False`` before any stage: a scene with an error finding is
recorded as a failed scene with the finding's message, an error of the whole log (``scene is None``) raises
``LogCheckError``, and warnings go into ``BuildResult.warnings`` and the build's summary. Where the reader lists its
sensors' unknown modalities without building scenes, the build finds the whole-log errors first
(``check_log_wide``) and checks each scene in its worker (``check_scene``); ``check_log`` does both, scene by
scene.

Thresholds (each explained where it is defined):

- orientation: a rotation is *tilted* when the body's up axis is more than ``MAX_TILT_DEG`` = 30 degrees from the
  vertical. The steepest public streets have grades of about 35 % (19 degrees), cars bank a few degrees, and the
  ego poses and boxes of nuScenes are within ~2-3 degrees of level, so 30 degrees is beyond anything a road vehicle
  or a road user does, with room for annotation noise. A [w, x, y, z] quaternion stored as [x, y, z, w] and read
  back as [w, x, y, z] turns a heading of ``yaw`` into a 180-degree rotation whose up axis is tilted by ``|yaw|``
  and whose forward axis points backwards along the global x axis; so the mistake shows as tilted poses (most
  headings) or as an ego that drives backwards (headings near 0). The check confirms the cause by reading the same
  numbers in the other order.
- timestamps: frames of a driving log come at roughly 2-20 Hz (50-500 ms apart); a median spacing above 10 s or
  below 1 ms read as microseconds is a unit mistake, and the unit that turns the spacing into 1-50 Hz is named.
- box sizes: every road vehicle is longer than it is wide; when most vehicle boxes have a "length" below their
  "width", the size columns are swapped.
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.core import geometry as geo
from stridegen.core import registry
from stridegen.core.errors import (
    ConfigError,
    DuplicateTokenError,
    InvalidCalibrationError,
    InvalidPoseError,
    LogFormatError,
    MissingFileError,
    PointCloudSizeError,
)
from stridegen.logs import open_log
from stridegen.logs._common import ROTATION_GLOBAL
from stridegen.logs.base import KNOWN_MODALITIES, Frame, LogReader, Scene
from stridegen.pipeline.keyframes import KeyframeConfig, sample_keyframes
from stridegen.run.config import BuildConfig

ERROR, WARNING = "error", "warning"

# code -> (severity, what it detects, what build does). Severity "error|warning": it depends on the config (see
# the finding). docs/check.md holds the same table (a test keeps them in step).
CODES: dict[str, tuple[str, str, str]] = {
    "log_unreadable": (ERROR, "the log cannot be opened (missing or invalid table, unknown layout)", "raises"),
    "no_scenes": (ERROR, "the log has no scene", "raises"),
    "duplicate_scene_name": (ERROR, "two scenes share a name (their shards would collide)", "raises"),
    "unknown_modality": (ERROR, "a sensor modality other than camera / lidar / radar", "raises"),
    "unsafe_scene_name": (ERROR, "a scene name that is not a safe file name", "fails the scene"),
    "invalid_pose": (ERROR, "an ego pose, calibration or box rotation that is NaN or not unit", "fails the scene"),
    "invalid_intrinsics": (ERROR, "camera intrinsics missing, NaN, or a focal length <= 0", "fails the scene"),
    "duplicate_token": (ERROR, "two different records of one table share a token", "fails the scene"),
    "missing_file": (ERROR, "a table record or sensor file the scene refers to does not exist", "fails the scene"),
    "log_format": (ERROR, "another broken record (dangling token, sample loop, ...)", "fails the scene"),
    "no_frames": (ERROR, "a scene without frames", "fails the scene"),
    "timestamps_not_increasing": (ERROR, "two frames with the same (or a decreasing) timestamp", "fails the scene"),
    "timestamp_unit": (ERROR, "frame spacing > 10 s or < 1 ms read as microseconds", "fails the scene"),
    "empty_sensor_file": (ERROR, "a 0-byte camera or LiDAR file of a frame", "fails the scene"),
    "quaternion_order": (
        ERROR,
        "tilted or backwards poses that the [x, y, z, w] reading makes level",
        "fails the scene",
    ),
    "box_size_order": (ERROR, "most vehicle boxes wider than long", "fails the scene"),
    "invalid_box_size": (ERROR, "a box size that is not finite or not positive", "fails the scene"),
    "unknown_camera": (ERROR, "a camera of cameras.channels the scene does not have", "fails the scene"),
    "no_lidar": (ERROR, "no LiDAR channel while the segmenter needs LiDAR", "fails the scene"),
    "no_cameras": (
        "error|warning",
        "no camera channel: no images, masks or QA (a warning with segmenter.name=none)",
        "fails the scene | warns",
    ),
    "image_size_mismatch": (ERROR, "an image whose header size differs from its calibration (check only)", "-"),
    "unreadable_image": (ERROR, "an image whose header is neither JPEG nor PNG (check only)", "-"),
    "no_keyframes": (WARNING, "the keyframe schedule picks no keyframe (the reason given)", "warns"),
    "constant_ego_pose": (WARNING, "the ego pose never changes: ego speeds 0.00 m/s", "warns"),
    "implausible_orientation": (
        WARNING,
        "tilted or backwards poses the [x, y, z, w] reading does not explain",
        "warns",
    ),
    "no_annotations": (WARNING, "a scene without annotations", "warns"),
    "optional_files": (WARNING, "missing or 0-byte sweep or radar files (no stage reads them)", "warns"),
}

# Orientation thresholds (module docstring).
MAX_TILT_DEG = 30.0
EGO_TILTED_SHARE = 0.5  # "most frames"
BOX_TILTED_SHARE = 0.2  # real logs have none; with the [x, y, z, w] mistake every box not heading ~0 deg is tilted
BACKWARDS_SHARE = 0.5  # share of the moving steps (> MOVING_MPS) with the ego going backwards
MOVING_MPS = 1.0
MIN_BOXES = 5
# Timestamps: nominal frame spacing 50-500 ms; flagged outside 1 ms .. 10 s (module docstring).
MAX_SPACING_US = 10e6
MIN_SPACING_US = 1e3
UNITS_US = {"ns": 1e-3, "ms": 1e3, "s": 1e6}  # microseconds per unit
# Classes whose boxes are always longer than wide (nuScenes detection classes).
VEHICLE_LABELS = ("car", "truck", "bus", "trailer", "construction_vehicle", "motorcycle", "bicycle")
# Detectors that make their boxes from the log's annotations: without annotations they detect nothing.
GROUND_TRUTH_DETECTORS = ("oracle", "simulated")
SAFE_NAME = re.compile(r"[A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Finding:
    """One problem: ``scene`` None for the whole log; ``file`` the table or sensor file it is about, if known."""

    severity: str  # "error" | "warning"
    code: str
    message: str
    likely_cause: str
    scene: str | None = None
    file: str | None = None

    def text(self) -> str:
        where = f" ({self.file})" if self.file else ""
        return f"[{self.code}] {self.message}{where}; likely cause: {self.likely_cause}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SceneSummary:
    """What a build of one scene would have to work with."""

    name: str
    token: str
    frames: int = 0
    duration_s: float = 0.0
    frame_rate_hz: float | None = None  # 1 / median frame spacing
    keyframes: int = 0
    keyframes_skipped: dict[str, int] = field(default_factory=dict)  # reason -> targets skipped for it
    cameras: list[str] = field(default_factory=list)
    lidar: list[str] = field(default_factory=list)
    annotations: int = 0
    ego_path_m: float = 0.0
    ego_speed_mps: float | None = None  # mean over the clip
    check_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class CheckReport:
    root: str
    format: str
    version: str
    scenes: list[SceneSummary]
    findings: list[Finding]
    open_s: float = 0.0
    wall_s: float = 0.0

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == WARNING]

    @property
    def log_errors(self) -> list[Finding]:
        """Errors of the whole log (no scene can be built)."""
        return [f for f in self.errors if f.scene is None]

    def scene_errors(self, scene: str) -> list[Finding]:
        return [f for f in self.errors if f.scene == scene]

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "format": self.format,
            "version": self.version,
            "open_s": round(self.open_s, 4),
            "wall_s": round(self.wall_s, 4),
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "scenes": [s.to_json() for s in self.scenes],
            "findings": [f.to_json() for f in self.findings],
        }


def failure_reason(findings: Sequence[Finding]) -> str:
    """The failed-scene reason of a scene stopped by the check: its error findings, one after the other."""
    return "log check: " + " | ".join(f.text() for f in findings)


# ------------------------------------------------------------------------------------------------------ the check
@dataclass
class _Context:
    reader: LogReader
    config: BuildConfig
    needs_lidar: bool
    deep: bool

    def path(self, table: str) -> str | None:
        p = self.reader.metadata_path(table)
        return str(p) if p is not None else None

    def finding(
        self, code: str, message: str, cause: str, scene: str | None, file: str | None = None, severity: str = ""
    ) -> Finding:
        return Finding(severity or CODES[code][0], code, message, cause, scene, file)


def check_log(
    reader_or_path: LogReader | str | Path,
    config: BuildConfig | None = None,
    scenes: Sequence[str] | None = None,
    deep: bool = True,
) -> CheckReport:
    """Check a log (a reader, or a folder opened with ``config.log.format`` / ``version``) against ``config``.

    ``scenes``: names to check (default: ``config.log.scenes``, else every scene). ``deep``: also read one image
    header per camera and scene. Never raises for a bad log (a log that cannot be opened is a ``log_unreadable``
    finding); a ``log.scenes`` entry that is not in the log is a ConfigError, as in ``build``.
    """
    start = time.perf_counter()
    config = config or BuildConfig()
    if isinstance(reader_or_path, LogReader):
        reader = reader_or_path
    else:
        try:
            reader = open_log(reader_or_path, config.log.format, config.log.version)
        except LogFormatError as exc:
            finding = Finding(ERROR, "log_unreadable", str(exc), _open_cause(exc), None, exc.path)
            return CheckReport(str(reader_or_path), config.log.format or "", "", [], [finding], 0.0, _since(start))
    open_s = time.perf_counter() - start
    ctx = _Context(reader, config, _segmenter_needs_lidar(config), deep)
    try:
        ids = reader.scene_ids()
    except Exception as exc:  # a reader that must build every scene to list them, and one is broken
        version = str(getattr(reader, "version", "") or "")
        return CheckReport(str(reader.root), reader.format_name, version, [], [_error_finding(exc, None)], open_s)
    names = _selected(ids, config, scenes)
    findings = _log_findings(ctx, ids)
    summaries = []
    modalities: dict[str, tuple[set[str], set[str]]] = {}  # unknown modality -> (its channels, scenes)
    for name, token in ((n, t) for n, t in ids if n in names):
        t0 = time.perf_counter()
        summary = SceneSummary(name, token)
        findings += _check_scene(ctx, summary, modalities)
        summary.check_s = time.perf_counter() - t0
        summaries.append(summary)
    for modality, (channels, in_scenes) in sorted(modalities.items()):
        findings.append(_unknown_modality(ctx, modality, channels, f"in {len(in_scenes)} scene(s)"))
    version = str(getattr(reader, "version", "") or "")
    return CheckReport(
        str(reader.root), reader.format_name, version, summaries, findings, open_s, time.perf_counter() - start
    )


def check_log_wide(reader: LogReader, config: BuildConfig) -> CheckReport | None:
    """The findings about the whole log (``scene`` None) without building any scene, where the reader can list its
    sensors' unknown modalities so (``LogReader.unknown_modalities``); None where it cannot: ``check_log`` must
    walk the scenes then. With this report, each scene's own findings come from ``check_scene``, scene by scene
    (in the build's workers)."""
    start = time.perf_counter()
    try:
        unknown = reader.unknown_modalities()
        ids = reader.scene_ids()
    except Exception:  # a broken table (or a plugin's own error): check_log turns it into findings, scene by scene
        return None
    if unknown is None:
        return None
    ctx = _Context(reader, config, _segmenter_needs_lidar(config), deep=False)
    findings = _log_findings(ctx, ids)
    for modality, channels in sorted(unknown.items()):
        findings.append(_unknown_modality(ctx, modality, set(channels), "in the log's sensor list"))
    version = str(getattr(reader, "version", "") or "")
    return CheckReport(str(reader.root), reader.format_name, version, [], findings, 0.0, _since(start))


def check_scene(reader: LogReader, config: BuildConfig, name: str, deep: bool = False) -> list[Finding]:
    """One scene's findings, as ``check_log`` gives them (without the whole-log ones: ``check_log_wide``)."""
    ctx = _Context(reader, config, _segmenter_needs_lidar(config), deep)
    return _check_scene(ctx, SceneSummary(name, ""), {})


def _unknown_modality(ctx: _Context, modality: str, channels: set[str], where: str) -> Finding:
    return ctx.finding(
        "unknown_modality",
        f"sensor(s) {sorted(channels)} have modality {modality!r} ({where}); the build knows "
        f"{list(KNOWN_MODALITIES)}, so their data are never used",
        f"the converter spelled the modality its own way (e.g. 'cam' for 'camera'); write one of "
        f"{', '.join(KNOWN_MODALITIES)} in the sensor table",
        None,
        ctx.path("sensor"),
    )


def _since(start: float) -> float:
    return time.perf_counter() - start


def _selected(ids: list[tuple[str, str]], config: BuildConfig, scenes: Sequence[str] | None) -> set[str]:
    if scenes is not None:
        wanted = list(scenes)
    elif config.log.scenes is not None:
        wanted = list(config.log.scenes)
    else:
        return {n for n, _ in ids}
    known = {n for n, _ in ids} | {t for _, t in ids}
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise ConfigError(f"log.scenes: {unknown} not in the log (it has {[n for n, _ in ids]})")
    return {n for n, t in ids if n in wanted or t in wanted}


def _segmenter_needs_lidar(config: BuildConfig) -> bool:
    """Whether the configured segmenter reads LiDAR (its class's ``needs_lidar``; nothing is instantiated)."""
    if config.segmenter.name == "none":
        return False
    return bool(getattr(registry.resolve("segmenter", config.segmenter.name), "needs_lidar", False))


def _log_findings(ctx: _Context, ids: list[tuple[str, str]]) -> list[Finding]:
    out = []
    if not ids:
        out.append(
            ctx.finding(
                "no_scenes",
                "the log has no scene",
                "the scene table is empty (the converter wrote no scene record)",
                None,
                ctx.path("scene"),
            )
        )
    counts = Counter(n for n, _ in ids)
    for name, n in sorted(counts.items()):
        if n > 1:
            out.append(
                ctx.finding(
                    "duplicate_scene_name",
                    f"{n} scenes are named {name!r}: their shards would overwrite each other",
                    "the converter named scenes by something that repeats (a log name, a date); make names unique",
                    None,
                    ctx.path("scene"),
                )
            )
    return out


def _check_scene(
    ctx: _Context, summary: SceneSummary, modalities: dict[str, tuple[set[str], set[str]]]
) -> list[Finding]:
    name = summary.name
    out = _name_findings(ctx, name)
    try:
        scene = ctx.reader.scene(name)
    except Exception as exc:  # a typed LogFormatError, or whatever a plugin reader raises
        return [*out, _error_finding(exc, name)]
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
    out += _file_findings(ctx, scene)
    out += _ego_findings(ctx, scene, summary)
    out += _annotation_findings(ctx, scene, summary)
    return out


def _name_findings(ctx: _Context, name: str) -> list[Finding]:
    if SAFE_NAME.fullmatch(name) and name not in (".", ".."):
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


_ERROR_CODES: tuple[tuple[type[LogFormatError], str, str], ...] = (
    (
        InvalidPoseError,
        "invalid_pose",
        "a rotation that is not a unit [w, x, y, z] quaternion (NaN, zeros, Euler angles or a matrix written as a "
        "quaternion), or a NaN translation",
    ),
    (
        InvalidCalibrationError,
        "invalid_intrinsics",
        "the converter wrote an empty or placeholder camera matrix (NaN, zeros); write the 3x3 pinhole matrix "
        "[[fx, 0, cx], [0, fy, cy], [0, 0, 1]] of the undistorted image",
    ),
    (
        DuplicateTokenError,
        "duplicate_token",
        "tokens made from something that repeats (a rounded timestamp, a frame index per sensor); make every token "
        "unique, e.g. a hash of (table, sensor, timestamp)",
    ),
    (MissingFileError, "missing_file", "the file was not copied, or the record's path is relative to another root"),
    (PointCloudSizeError, "empty_sensor_file", "the converter wrote an empty or truncated point cloud"),
)


def _error_finding(exc: Exception, scene: str | None) -> Finding:
    """The error finding of an error a reader raised: its code from the typed error's class; ``log_format`` for
    another LogFormatError, and for any other exception (a plugin reader's) with its type in the message."""
    if not isinstance(exc, LogFormatError):
        return Finding(
            ERROR,
            "log_format",
            f"the reader raised {type(exc).__name__}: {exc}",
            "a bug or a gap of the reader on this log's data (run the reader on the scene to see the traceback)",
            scene,
        )
    for cls, code, cause in _ERROR_CODES:
        if isinstance(exc, cls):
            return Finding(ERROR, code, exc.reason, cause, scene, exc.path)
    return Finding(
        ERROR,
        "log_format",
        exc.reason,
        "a broken reference between tables (a token that points nowhere, a loop of next/prev tokens)",
        scene,
        exc.path,
    )


def _open_cause(exc: LogFormatError) -> str:
    if isinstance(exc, MissingFileError):
        return "a required table is missing, or the path is not the log root (it holds the version folder)"
    return "a table is not valid JSON or not a list of records with tokens, or the folder is no known layout"


# ---------------------------------------------------------------------------------------------------------- time
def _time_findings(ctx: _Context, scene: Scene, summary: SceneSummary) -> list[Finding]:
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


def _keyframe_findings(ctx: _Context, scene: Scene, summary: SceneSummary, t_us: np.ndarray) -> list[Finding]:
    """Keyframes the configured schedule picks (``sample_keyframes``, as the build's keyframes stage)."""
    kf = ctx.config.keyframes
    selection = sample_keyframes(t_us.astype(np.float64) * 1e-6, kf)
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


def _no_keyframe_cause(kf: KeyframeConfig, summary: SceneSummary) -> str:
    need = kf.start_s + kf.window_after_s
    fixed = getattr(kf, "schedule", "fixed") == "fixed"  # the auto schedule fits its window to the clip
    if fixed and summary.duration_s + kf.tolerance_s < need:
        auto = ", or keyframes.schedule=auto" if "schedule" in KeyframeConfig.model_fields else ""
        return (
            f"clip shorter than the schedule: the first keyframe at keyframes.start_s={kf.start_s:g} s needs frames "
            f"until {need:g} s (window_after_s={kf.window_after_s:g}) but the clip lasts {summary.duration_s:.2f} s; "
            f"lower keyframes.start_s / window_before_s / window_after_s{auto}"
        )
    rate = summary.frame_rate_hz
    spacing = f"frames are {1 / rate:.3g} s apart" if rate else "the frames"
    return (
        f"the schedule does not fit the frame times: {spacing}, the window asks for one every "
        f"{1 / kf.window_rate_hz:g} s within keyframes.tolerance_s={kf.tolerance_s:g} s; match "
        "keyframes.window_rate_hz to the frame rate or raise keyframes.tolerance_s"
    )


# ------------------------------------------------------------------------------------------------------- sensors
def _sensor_findings(
    ctx: _Context, scene: Scene, summary: SceneSummary, modalities: dict[str, tuple[set[str], set[str]]]
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
    wanted = ctx.config.cameras.channels
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
    segmented = ctx.config.segmenter.name != "none"
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
    if not summary.lidar and ctx.needs_lidar:
        out.append(
            ctx.finding(
                "no_lidar",
                f"no LiDAR channel, and segmenter {ctx.config.segmenter.name!r} needs LiDAR points: every mask would "
                "fall back to its box hull with quality 0, so no mask would be visible",
                "the log has no LiDAR (choose segmenter.name=projected_box, grabcut or sam2), or the LiDAR sensor's "
                "modality is not 'lidar'",
                scene.name,
                ctx.path("sensor"),
            )
        )
    out += _intrinsic_findings(ctx, first, scene.name)
    out += _camera_orientation_findings(ctx, first, scene.name)
    if ctx.deep:
        out += _image_header_findings(ctx, first, scene.name)
    return out


def _intrinsic_findings(ctx: _Context, frame: Frame, scene: str) -> list[Finding]:
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
                    _ERROR_CODES[1][2],
                    scene,
                    ctx.path("calibrated_sensor"),
                )
            )
    return out


def _camera_orientation_findings(ctx: _Context, frame: Frame, scene: str) -> list[Finding]:
    """Car cameras look roughly sideways (optical axis within 45 degrees of the horizon) with the image upright
    (image down = ego down). Surround-view fisheyes can look further down, so this alone is only a warning."""
    channels = frame.camera_channels
    if not channels:
        return []
    rot = np.array([frame.sensors[c].calibration.T_ego_from_sensor[:3, :3] for c in channels])
    bad = _implausible_cameras(rot)
    if not bad.any():
        return []
    alt_bad = _implausible_cameras(geo.quat_to_rotmat(_other_order(geo.rotmat_to_quat(rot))))
    names = [c for c, b in zip(channels, bad, strict=True) if b]
    message = f"cameras {names} look more than 45 degrees up or down, or their images are upside down"
    if bad.mean() >= 0.5 and not alt_bad.any():
        return [
            ctx.finding(
                "quaternion_order",
                message + "; read as [x, y, z, w] every camera is upright and level",
                "calibrated_sensor rotations stored as [x, y, z, w] (scipy / ROS order); nuScenes wants [w, x, y, z]",
                scene,
                ctx.path("calibrated_sensor"),
            )
        ]
    return [
        ctx.finding(
            "implausible_orientation",
            message,
            "a camera-to-ego rotation that is not T_ego_from_sensor (inverted, or in another camera convention "
            "than x right / y down / z forward)",
            scene,
            ctx.path("calibrated_sensor"),
        )
    ]


def _implausible_cameras(rot: np.ndarray) -> np.ndarray:
    axis, down = rot[:, :, 2], rot[:, :, 1]  # camera z (optical axis) and y (image down) in the ego frame
    elevation = np.degrees(np.arcsin(np.clip(axis[:, 2], -1.0, 1.0)))
    return np.asarray((np.abs(elevation) > 45.0) | (down[:, 2] > 0.0))


def _other_order(q: np.ndarray) -> np.ndarray:
    """The rotations [w, x, y, z] a reader got from stored numbers, read in the other order: the numbers were
    [x, y, z, w], so w is the last one read as z."""
    return np.asarray(q)[..., [3, 0, 1, 2]]


# --------------------------------------------------------------------------------------------------------- files
def _file_findings(ctx: _Context, scene: Scene) -> list[Finding]:
    """Sizes (``os.stat``) of every sensor file of the scene's frames: camera and LiDAR key files (errors), sweeps
    and other modalities (a warning: the build's own stages never read them, a plugin detector may)."""
    out: list[Finding] = []
    empty: list[str] = []
    missing: list[str] = []
    optional_bad = 0
    for frame in scene.frames:
        for sample in frame.sensors.values():
            size = _size(sample.path)
            if sample.calibration.modality not in ("camera", "lidar"):
                optional_bad += not size
            elif size is None:
                missing.append(str(sample.path))
            elif size == 0:
                empty.append(str(sample.path))
        for samples in frame.sweeps.values():
            optional_bad += sum(1 for s in samples if not _size(s.path))
    if missing:
        out.append(
            ctx.finding(
                "missing_file",
                f"{len(missing)} sensor file(s) of the scene's frames are missing, e.g. {Path(missing[0]).name}",
                _ERROR_CODES[3][2],
                scene.name,
                missing[0],
            )
        )
    if empty:
        out.append(
            ctx.finding(
                "empty_sensor_file",
                f"{len(empty)} sensor file(s) are empty (0 bytes), e.g. {Path(empty[0]).name}: an empty point cloud "
                "or image is no data",
                "the converter opened the output file but wrote nothing (an exception or a skipped frame)",
                scene.name,
                empty[0],
            )
        )
    if optional_bad:
        out.append(
            ctx.finding(
                "optional_files",
                f"{optional_bad} sweep or radar file(s) are missing or empty: detectors that read them will fail",
                "only the key camera and LiDAR files were downloaded or converted (samples/, not sweeps/ or radar)",
                scene.name,
            )
        )
    return out


def _size(path: Path) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def _image_header_findings(ctx: _Context, frame: Frame, scene: str) -> list[Finding]:
    """One image per camera: its header's size against the calibrated width x height."""
    out = []
    for channel in frame.camera_channels:
        sample = frame.sensors[channel]
        if not _size(sample.path):
            continue  # the file findings report it
        size = image_header_size(sample.path)
        cal = sample.calibration
        if size is None:
            out.append(
                ctx.finding(
                    "unreadable_image",
                    f"camera {channel}: {sample.path.name} has no JPEG or PNG header",
                    "the file is not an image (or another format: convert images to JPEG or PNG)",
                    scene,
                    str(sample.path),
                )
            )
        elif cal.width and cal.height and size != (cal.width, cal.height):
            out.append(
                ctx.finding(
                    "image_size_mismatch",
                    f"camera {channel}: the image is {size[0]}x{size[1]} but its record says "
                    f"{cal.width}x{cal.height}: boxes would be projected for the wrong size",
                    "images resized (or cropped) after calibration without scaling the intrinsics, or width and "
                    "height swapped in the sample_data record",
                    scene,
                    str(sample.path),
                )
            )
    return out


# JPEG start-of-frame markers (ITU-T T.81 table B.1: SOF0-SOF15 except DHT C4, JPG C8, DAC CC).
_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def image_header_size(path: Path, limit: int = 1 << 16) -> tuple[int, int] | None:
    """(width, height) from a JPEG's start-of-frame segment or a PNG's IHDR chunk; None if neither is found in
    the first ``limit`` bytes."""
    with open(path, "rb") as fh:
        data = fh.read(limit)
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:  # PNG spec 11.2.2: IHDR width, height (big-endian)
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    if data[:2] != b"\xff\xd8":
        return None
    i = 2
    while i + 9 <= len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        length = int.from_bytes(data[i + 2 : i + 4], "big")
        if marker in _SOF:  # segment: length (2), precision (1), height (2), width (2)
            return int.from_bytes(data[i + 7 : i + 9], "big"), int.from_bytes(data[i + 5 : i + 7], "big")
        i += 2 + length
    return None


# ----------------------------------------------------------------------------------------------------------- ego
def _ego_findings(ctx: _Context, scene: Scene, summary: SceneSummary) -> list[Finding]:
    poses = np.array([f.T_global_from_ego for f in scene.frames], dtype=np.float64)
    t_s = np.array([f.timestamp_us for f in scene.frames], dtype=np.float64) * 1e-6
    steps = np.diff(poses[:, :3, 3], axis=0)
    summary.ego_path_m = float(np.linalg.norm(steps[:, :2], axis=1).sum())
    if summary.duration_s > 0:
        summary.ego_speed_mps = summary.ego_path_m / summary.duration_s
    file = ctx.path("ego_pose")
    out: list[Finding] = []
    if len(poses) >= 2 and np.allclose(poses, poses[0], atol=1e-6):
        identity = np.allclose(poses[0], np.eye(4), atol=1e-9)
        out.append(
            ctx.finding(
                "constant_ego_pose",
                ("every ego pose is the identity" if identity else "the ego pose is the same in every frame")
                + f" over {summary.duration_s:.2f} s: ego speeds are 0.00 m/s, and target speeds are relative to "
                "the ego",
                "the log has no ego poses (the converter wrote a constant placeholder) or the car stood still; "
                "boxes must then be in a fixed global frame, not ego-relative",
                scene.name,
                file,
            )
        )
        return out
    rot = poses[:, :3, :3]
    tilted = _tilt_deg(rot) > MAX_TILT_DEG
    backwards, moving = _backwards(rot, steps, np.diff(t_s))
    alt = geo.quat_to_rotmat(_other_order(geo.rotmat_to_quat(rot)))
    alt_backwards, _ = _backwards(alt, steps, np.diff(t_s))
    problem = ""
    if tilted.mean() > EGO_TILTED_SHARE:
        problem = f"the ego is tilted more than {MAX_TILT_DEG:g} degrees in {tilted.mean():.0%} of the frames"
    elif moving >= 3 and backwards > BACKWARDS_SHARE:
        problem = f"the ego drives backwards in {backwards:.0%} of the {moving} moving steps"
    if not problem:
        return out
    explained = (_tilt_deg(alt) > MAX_TILT_DEG).mean() <= 0.1 and (moving < 3 or alt_backwards <= BACKWARDS_SHARE)
    if explained:
        out.append(
            ctx.finding(
                "quaternion_order",
                problem + "; read as [x, y, z, w] the ego is level and drives forwards",
                "ego_pose rotations stored as [x, y, z, w] (scipy / ROS order); nuScenes wants [w, x, y, z]",
                scene.name,
                file,
            )
        )
    else:
        out.append(
            ctx.finding(
                "implausible_orientation",
                problem,
                "poses that are not T_global_from_ego (inverted: T_ego_from_global), or a heading off by 180 degrees",
                scene.name,
                file,
            )
        )
    return out


def _tilt_deg(rot: np.ndarray) -> np.ndarray:
    """Angle between the body's up axis and the global vertical, per rotation [N, 3, 3]."""
    return np.asarray(np.degrees(np.arccos(np.clip(rot[:, 2, 2], -1.0, 1.0))))


def _backwards(rot: np.ndarray, steps: np.ndarray, dt: np.ndarray) -> tuple[float, int]:
    """(share of the moving steps whose motion is more than 120 degrees from the body's forward axis, number of
    moving steps). A step is moving above ``MOVING_MPS``."""
    if not len(steps):
        return 0.0, 0
    dist = np.linalg.norm(steps[:, :2], axis=1)
    moving = (dt > 0) & (dist > MOVING_MPS * np.where(dt > 0, dt, np.inf))
    if not moving.any():
        return 0.0, 0
    local = np.einsum("nji,nj->ni", rot[:-1][moving], steps[moving])  # R^T d: the step in the body frame
    forward = local[:, 0] / np.maximum(np.linalg.norm(local, axis=1), 1e-12)
    return float(np.mean(forward < -0.5)), int(moving.sum())


# --------------------------------------------------------------------------------------------------- annotations
def _annotation_findings(ctx: _Context, scene: Scene, summary: SceneSummary) -> list[Finding]:
    try:
        per_frame = [f.annotations() for f in scene.frames]
    except Exception as exc:  # a typed LogFormatError, or whatever a plugin reader raises
        return [_error_finding(exc, scene.name)]
    summary.annotations = sum(len(a) for a in per_frame)
    file = ctx.path("sample_annotation")
    if not summary.annotations:
        detector = ctx.config.detector.name
        uses_gt = detector in GROUND_TRUTH_DETECTORS and not _tracker_detects(ctx.config)
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
        ]
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
        out += _box_orientation_findings(ctx, np.concatenate(rotations), scene.name, file)
    return out


def _tracker_detects(config: BuildConfig) -> bool:
    """Whether the tracker backend is the detect stage's source (``provides_detections``), not the detector."""
    return bool(getattr(registry.resolve("tracker", config.tracker.name), "provides_detections", False))


def _box_orientation_findings(ctx: _Context, q: np.ndarray, scene: str, file: str | None) -> list[Finding]:
    q = np.asarray(q, dtype=np.float64).reshape(-1, 4)
    q = q[np.all(np.isfinite(q), axis=1)]
    if len(q) < MIN_BOXES:
        return []
    tilted = _tilt_deg(geo.quat_to_rotmat(q)) > MAX_TILT_DEG
    if tilted.mean() <= BOX_TILTED_SHARE:
        return []
    alt_tilted = _tilt_deg(geo.quat_to_rotmat(_other_order(q))) > MAX_TILT_DEG
    message = f"{tilted.mean():.0%} of the {len(q)} boxes are tilted more than {MAX_TILT_DEG:g} degrees"
    if alt_tilted.mean() <= 0.05:
        return [
            ctx.finding(
                "quaternion_order",
                message + "; read as [x, y, z, w] they are level",
                "sample_annotation rotations stored as [x, y, z, w] (scipy / ROS order); nuScenes wants [w, x, y, z]",
                scene,
                file,
            )
        ]
    return [
        ctx.finding(
            "implausible_orientation",
            message,
            "box rotations in another frame than global (ego or sensor frame), or Euler angles converted wrongly",
            scene,
            file,
        )
    ]


def summarize_errors(findings: Sequence[Finding]) -> str:
    """One message for a LogCheckError: every finding's text, one per line."""
    return "\n".join(f"  {f.scene or 'log'}: {f.text()}" for f in findings)


__all__ = [
    "CODES",
    "CheckReport",
    "Finding",
    "SceneSummary",
    "check_log",
    "failure_reason",
    "image_header_size",
    "summarize_errors",
]
