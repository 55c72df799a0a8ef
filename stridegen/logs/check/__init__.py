"""The log doctor (``stridegen check``): what a build would make of a log, scene by scene, and the conversion
mistakes that make a build produce little or nothing, each with its likely cause.

``check_log(reader_or_path, settings)`` reads only metadata: the scene list, every frame's timestamps, poses,
sensors and calibration, the annotations, and the size of every sensor file (``os.stat``; LiDAR sizes as whole
numbers of points); with ``deep=True`` also the header of one image per camera and every camera image decoded at 1/8
scale, libjpeg's warnings as errors. No point cloud is read, but for a scene whose ego poses never change and
whose annotations do not say whether it moved (a few sweeps: ``lidar_motion``). Values are held to the plausibility
bounds of ``stridegen.logs.bounds``. ``settings`` are the build config's values the check reads (``CheckSettings``,
made by ``BuildConfig.check_settings()``).

Findings are errors or warnings (``CODES`` lists every code with what ``build`` does with it; docs/check.md is the
same table). ``run_build`` runs the check with ``deep=False`` before any stage: a scene with an error finding is
recorded as a failed scene with the finding's message, an error of the whole log (``scene is None``) raises
``LogCheckError``, and warnings go into ``BuildResult.warnings`` and the build's summary. Where the reader lists its
sensors' unknown modalities without building scenes, the build finds the whole-log errors first
(``check_log_wide``) and checks each scene in its worker (``check_scene``); ``check_log`` does both, scene by
scene.

Modules: ``findings`` (codes, findings, reports), ``settings`` (``CheckSettings``), ``log`` (the whole-log checks
and the entry points), ``scene`` (one scene: names, times and keyframes, sensors, annotations), ``poses`` (ego,
camera and box rotations), ``lidar_motion`` (whether the LiDAR scene moves, for constant ego poses), ``files`` (file
sizes, images), ``bounds`` (plausibility bounds). Each module's docstring gives its thresholds.
"""

from __future__ import annotations

from stridegen.logs.check.files import image_header_size
from stridegen.logs.check.findings import (
    CODES,
    ERROR,
    WARNING,
    CheckReport,
    Finding,
    SceneSummary,
    failure_reason,
    summarize_errors,
)
from stridegen.logs.check.log import check_before_build, check_log, check_log_wide, check_scene, scene_warnings
from stridegen.logs.check.settings import CheckSettings, KeyframePick, KeyframeSchedule

__all__ = [
    "CODES",
    "ERROR",
    "WARNING",
    "CheckReport",
    "CheckSettings",
    "Finding",
    "KeyframePick",
    "KeyframeSchedule",
    "SceneSummary",
    "check_before_build",
    "check_log",
    "check_log_wide",
    "check_scene",
    "failure_reason",
    "image_header_size",
    "scene_warnings",
    "summarize_errors",
]
