"""The log check's findings and reports: the codes (``CODES``), one ``Finding``, a scene's ``SceneSummary``, the
``CheckReport`` of a log, and the finding of an error a reader raised (``error_finding``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from stridegen.core.errors import (
    DuplicateTokenError,
    InvalidCalibrationError,
    InvalidPoseError,
    LogFormatError,
    MissingFileError,
    PointCloudSizeError,
)
from stridegen.logs._common import FILES_OUTSIDE_ENV, FileOutsideLogError

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
    "file_outside_log": (ERROR, "a record names a file outside the log folder (absolute or '..')", "fails the scene"),
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
    "point_cloud_size": (
        "error|warning",
        "a LiDAR file whose size is no whole number of points (a warning for sweeps)",
        "fails the scene | warns",
    ),
    "corrupt_image": (ERROR, "a camera image libjpeg / libpng cannot decode cleanly (check only)", "-"),
    "image_size_mismatch": (ERROR, "an image whose header size differs from its calibration (check only)", "-"),
    "unreadable_image": (ERROR, "an image whose header is neither JPEG nor PNG (check only)", "-"),
    "out_of_bounds": (
        ERROR,
        "an impossible value: a position off the Earth, an ego speed or acceleration, box size or speed, timestamp, "
        "intrinsics or sensor offset beyond what exists (stridegen.logs.bounds)",
        "fails the scene",
    ),
    "unlikely_value": (WARNING, "a value within the possible but beyond the usual (stridegen.logs.bounds)", "warns"),
    "no_keyframes": (WARNING, "the keyframe schedule picks no keyframe (the reason given)", "warns"),
    "constant_ego_pose": (
        "error|warning",
        "the ego pose never changes while the boxes, or else the LiDAR sweeps, say the ego moved (a warning where "
        "the sweeps say it stood still or cannot tell; none with log.parked_ego=true)",
        "fails the scene | warns",
    ),
    "implausible_orientation": (
        WARNING,
        "tilted or backwards poses the [x, y, z, w] reading does not explain",
        "warns",
    ),
    "no_annotations": (WARNING, "a scene without annotations", "warns"),
    "optional_files": (WARNING, "missing or 0-byte sweep or radar files (no stage reads them)", "warns"),
}


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

    @classmethod
    def from_json(cls, data: Any) -> Finding:
        """The finding ``to_json`` wrote; ValueError where ``data`` is not one (not an object of these fields, or
        a severity, code or message that is no string)."""
        try:
            finding = cls(**data)
        except TypeError as exc:
            raise ValueError(f"not a finding: {exc}") from None
        if not all(isinstance(getattr(finding, k), str) for k in ("severity", "code", "message")):
            raise ValueError("not a finding: severity, code and message must be strings")
        return finding


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


# Likely causes shared by a reader's typed error and the check's own finding of the same code.
INVALID_INTRINSICS_CAUSE = (
    "the converter wrote an empty or placeholder camera matrix (NaN, zeros); write the 3x3 pinhole matrix "
    "[[fx, 0, cx], [0, fy, cy], [0, 0, 1]] of the undistorted image"
)
MISSING_FILE_CAUSE = "the file was not copied, or the record's path is relative to another root"

# The code and likely cause of each typed error a reader raises (the first class that matches).
READER_ERRORS: tuple[tuple[type[LogFormatError], str, str], ...] = (
    (
        InvalidPoseError,
        "invalid_pose",
        "a rotation that is not a unit [w, x, y, z] quaternion (NaN, zeros, Euler angles or a matrix written as a "
        "quaternion), or a NaN translation, or one beyond any place on Earth (a placeholder, another unit)",
    ),
    (InvalidCalibrationError, "invalid_intrinsics", INVALID_INTRINSICS_CAUSE),
    (
        DuplicateTokenError,
        "duplicate_token",
        "tokens made from something that repeats (a rounded timestamp, a frame index per sensor); make every token "
        "unique, e.g. a hash of (table, sensor, timestamp)",
    ),
    (MissingFileError, "missing_file", MISSING_FILE_CAUSE),
    (
        FileOutsideLogError,
        "file_outside_log",
        "a converter that wrote paths relative to another folder, or a log that names another log's files; copy "
        f"the files into the log (or set {FILES_OUTSIDE_ENV}=1 to read them where they are)",
    ),
    (PointCloudSizeError, "empty_sensor_file", "the converter wrote an empty or truncated point cloud"),
)


def error_finding(exc: Exception, scene: str | None) -> Finding:
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
    for cls, code, cause in READER_ERRORS:
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


def summarize_errors(findings: Sequence[Finding]) -> str:
    """One message for a LogCheckError: every finding's text, one per line."""
    return "\n".join(f"  {f.scene or 'log'}: {f.text()}" for f in findings)
