"""The full rotation of logged boxes: ``Boxes`` are yaw-only, but a reader may keep each annotation's full
rotation in the ``ROTATION_GLOBAL`` extra, and exact corners (projections, the devkit's bike-rack test) use it."""

from __future__ import annotations

import numpy as np

from stridegen.core.box_geometry import box_corners
from stridegen.core.boxes import Boxes
from stridegen.core.errors import GeometryError
from stridegen.core.transforms import quat_to_rotmat

# Extra of ``Boxes`` that readers fill with each annotation's full rotation ([N, 4] quaternion [w, x, y, z]) in
# the global frame. Boxes are yaw-only, but logged cuboids can carry a small pitch/roll (every nuScenes
# annotation of the demo log is tilted by ~2 degrees); exact corners need the full rotation.
# ``Boxes.transform`` does not update extras: the key names the frame its values are in.
ROTATION_GLOBAL = "rotation_global"


def box_corners_quat(center: np.ndarray, size_lwh: np.ndarray, rotation: np.ndarray) -> np.ndarray:
    """Corners [N, 8, 3] of boxes with a full rotation ([N, 4] quaternions), in the devkit corner order."""
    center = np.asarray(center, dtype=np.float64).reshape(-1, 3)
    n = center.shape[0]
    local = box_corners(np.zeros((n, 3)), size_lwh, np.zeros(n))  # [N, 8, 3] axis-aligned at the origin
    rot = quat_to_rotmat(np.asarray(rotation, dtype=np.float64).reshape(-1, 4))
    return np.einsum("nij,nkj->nki", rot, local) + center[:, None, :]


def corners_global(boxes: Boxes) -> np.ndarray:
    """Corners [N, 8, 3] of global-frame boxes, using the full logged rotation when the reader kept it."""
    if boxes.frame != "global":
        raise GeometryError(f"corners_global needs boxes in the global frame, got {boxes.frame!r}")
    if ROTATION_GLOBAL in boxes.extras:
        return box_corners_quat(boxes.center, boxes.size_lwh, boxes.extras[ROTATION_GLOBAL])
    return boxes.corners()
