"""What the log check reads of a build config: ``CheckSettings`` (``BuildConfig.check_settings()`` makes it, with
the backends' capabilities resolved from the registry), and ``CheckContext``, one check's reader, settings and
depth."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from stridegen.logs.base import LogReader
from stridegen.logs.check.findings import CODES, Finding


class KeyframeSchedule(Protocol):
    """The configured keyframe schedule (``stridegen.pipeline.keyframes.KeyframeConfig``): the parameters a
    ``no_keyframes`` finding names in its likely cause."""

    @property
    def schedule(self) -> str: ...  # "fixed" | "auto"

    @property
    def start_s(self) -> float: ...

    @property
    def window_after_s(self) -> float: ...

    @property
    def window_rate_hz(self) -> float: ...

    @property
    def tolerance_s(self) -> float: ...


class KeyframePick(Protocol):
    """What the build's keyframe selection makes of one clip (``stridegen.pipeline.keyframes.KeyframeSelection``):
    the keyframes, and each skipped target with the reason."""

    @property
    def keyframes(self) -> Sequence[object]: ...

    @property
    def skipped(self) -> Sequence[tuple[float, str]]: ...


@dataclass(frozen=True, kw_only=True)
class CheckSettings:
    """The build config's values the log check reads, each named after its config key (no defaults here: the
    build config's are the defaults)."""

    keyframes: KeyframeSchedule  # keyframes
    # The build's keyframe selection with that schedule: frame timestamps (seconds, any origin) -> its pick.
    select_keyframes: Callable[[np.ndarray], KeyframePick]
    log_format: str | None  # log.format: the reader a folder is opened with (None: detected from the folder)
    log_version: str | None  # log.version
    scenes: tuple[str, ...] | None  # log.scenes: names or tokens to check (None: every scene)
    cameras: tuple[str, ...] | None  # cameras.channels (None: every camera of the log)
    segmenter: str  # segmenter.name ("none": no masks)
    segmenter_needs_lidar: bool  # the segmenter backend's needs_lidar
    detector: str  # detector.name
    detector_uses_ground_truth: bool  # the detector backend's uses_ground_truth: it makes its boxes from annotations
    tracker_provides_detections: bool  # the tracker backend's provides_detections: it is the detect stage's source
    parked_ego: bool = False  # log.parked_ego: constant ego poses are a car that stood still, not missing poses


@dataclass
class CheckContext:
    """One check: the log's reader, the settings, and whether image headers are read (``deep``)."""

    reader: LogReader
    settings: CheckSettings
    deep: bool

    def path(self, table: str) -> str | None:
        """The file a kind of metadata is read from (``LogReader.metadata_path``), as the finding's ``file``."""
        p = self.reader.metadata_path(table)
        return str(p) if p is not None else None

    def finding(
        self, code: str, message: str, cause: str, scene: str | None, file: str | None = None, severity: str = ""
    ) -> Finding:
        """A finding of ``code`` with the code's severity (``CODES``) unless ``severity`` is given."""
        return Finding(severity or CODES[code][0], code, message, cause, scene, file)
