"""The full rotation of logged boxes: a reader keeps each annotation's full rotation in the ``ROTATION_GLOBAL``
extra of its ``Boxes`` (defined in stridegen.core.boxes, which uses it for corners and carries it through
``Boxes.transform``); the helpers here give exact corners from it."""

from __future__ import annotations

import numpy as np

from stridegen.core.box_geometry import box_corners_rotated
from stridegen.core.boxes import ROTATION_GLOBAL, Boxes
from stridegen.core.errors import GeometryError
from stridegen.core.transforms import quat_to_rotmat

__all__ = ["ROTATION_GLOBAL", "box_corners_quat", "corners_global"]


def box_corners_quat(center: np.ndarray, size_lwh: np.ndarray, rotation: np.ndarray) -> np.ndarray:
    """Corners [N, 8, 3] of boxes with a full rotation ([N, 4] quaternions), in the devkit corner order."""
    rot = quat_to_rotmat(np.asarray(rotation, dtype=np.float64).reshape(-1, 4)).reshape(-1, 3, 3)
    return box_corners_rotated(center, size_lwh, rot)


def corners_global(boxes: Boxes) -> np.ndarray:
    """Corners [N, 8, 3] of global-frame boxes, using the full logged rotation when the reader kept it."""
    if boxes.frame != "global":
        raise GeometryError(f"corners_global needs boxes in the global frame, got {boxes.frame!r}")
    return boxes.corners()
