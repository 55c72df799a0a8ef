"""Augmenters: image corruptions for robustness splits (same QA on degraded images).

``stridegen.augment.corruptions`` holds the registry; ``stridegen.augment.scene`` corrupts the images of a scene
and warps their masks; ``stridegen.viz.contact_sheet`` draws a corruption x severity contact sheet;
``stridegen.jobs.augment`` builds robustness splits of a built dataset (docs/augment.md).
"""

from stridegen.augment.corruptions import (
    CAMERA_CORRUPTIONS,
    CORRUPTIONS,
    GROUPS,
    SEVERITIES,
    CameraSetCorruption,
    Corruption,
    PixelMap,
    get_camera_corruption,
    get_corruption,
    resolve_names,
    resolve_severities,
)

__all__ = [
    "CAMERA_CORRUPTIONS",
    "CORRUPTIONS",
    "GROUPS",
    "SEVERITIES",
    "CameraSetCorruption",
    "Corruption",
    "PixelMap",
    "get_camera_corruption",
    "get_corruption",
    "resolve_names",
    "resolve_severities",
]
