"""Geometry of 3D boxes: corners (devkit order), edges and faces, BEV rectangles, points inside boxes, and
segments passing through a box. Boxes are yaw-only unless a full rotation matrix is given (``box_corners_rotated``,
the ``rotation`` argument of ``points_in_boxes`` and ``segments_pass_through_box``).

Conventions (see docs/conventions.md): a box is (center, size [l, w, h], yaw about +z), all in one frame; l runs
along the heading; frames are right-handed with z up.
"""

from __future__ import annotations

import numpy as np

# Corner order of the nuScenes devkit ``Box.corners``: the four front corners (+x half) first, then the rear
# ones; within each face: top-left, top-right, bottom-right, bottom-left seen from outside (y left, z up).
_CORNER_SIGNS = np.array(
    [
        [1, 1, 1],
        [1, -1, 1],
        [1, -1, -1],
        [1, 1, -1],
        [-1, 1, 1],
        [-1, -1, 1],
        [-1, -1, -1],
        [-1, 1, -1],
    ],
    dtype=np.float64,
)

# The 12 edges of a box as pairs of corner indices.
BOX_EDGES = np.array(
    [
        [0, 1],
        [1, 2],
        [2, 3],
        [3, 0],
        [4, 5],
        [5, 6],
        [6, 7],
        [7, 4],
        [0, 4],
        [1, 5],
        [2, 6],
        [3, 7],
    ]
)

# The 6 faces as corner quadruples (front, back, left, right, top, bottom).
BOX_FACES = np.array(
    [
        [0, 1, 2, 3],
        [5, 4, 7, 6],
        [4, 0, 3, 7],
        [1, 5, 6, 2],
        [4, 5, 1, 0],
        [3, 2, 6, 7],
    ]
)


def box_corners(center: np.ndarray, size_lwh: np.ndarray, yaw: np.ndarray) -> np.ndarray:
    """Corners [N, 8, 3] of yaw-only boxes: center [N, 3], size [N, 3] as (l, w, h), yaw [N]."""
    center = np.asarray(center, dtype=np.float64).reshape(-1, 3)
    size_lwh = np.asarray(size_lwh, dtype=np.float64).reshape(-1, 3)
    yaw = np.asarray(yaw, dtype=np.float64).reshape(-1)
    local = 0.5 * size_lwh[:, None, :] * _CORNER_SIGNS[None]  # [N, 8, 3]
    c, s = np.cos(yaw)[:, None], np.sin(yaw)[:, None]
    x = c * local[..., 0] - s * local[..., 1]
    y = s * local[..., 0] + c * local[..., 1]
    return np.stack([x, y, local[..., 2]], axis=-1) + center[:, None, :]


def box_corners_rotated(center: np.ndarray, size_lwh: np.ndarray, rotation: np.ndarray) -> np.ndarray:
    """Corners [N, 8, 3] (devkit order) of boxes with a full rotation: ``rotation`` [N, 3, 3] maps box axes
    (x along the length, y the width, z the height) into the boxes' frame; center [N, 3], size [N, 3] (l, w, h)."""
    center = np.asarray(center, dtype=np.float64).reshape(-1, 3)
    size_lwh = np.asarray(size_lwh, dtype=np.float64).reshape(-1, 3)
    rot = np.asarray(rotation, dtype=np.float64).reshape(-1, 3, 3)
    local = 0.5 * size_lwh[:, None, :] * _CORNER_SIGNS[None]  # [N, 8, 3]
    return np.einsum("nij,nkj->nki", rot, local) + center[:, None, :]


def bev_corners(center_xy: np.ndarray, size_lw: np.ndarray, yaw: np.ndarray) -> np.ndarray:
    """Counter-clockwise BEV rectangle corners [N, 4, 2]."""
    center_xy = np.asarray(center_xy, dtype=np.float64).reshape(-1, 2)
    size_lw = np.asarray(size_lw, dtype=np.float64).reshape(-1, 2)
    yaw = np.asarray(yaw, dtype=np.float64).reshape(-1)
    signs = np.array([[1, 1], [-1, 1], [-1, -1], [1, -1]], dtype=np.float64)  # ccw
    local = 0.5 * size_lw[:, None, :] * signs[None]
    c, s = np.cos(yaw)[:, None], np.sin(yaw)[:, None]
    x = c * local[..., 0] - s * local[..., 1]
    y = s * local[..., 0] + c * local[..., 1]
    return np.stack([x, y], axis=-1) + center_xy[:, None, :]


def points_in_boxes(
    points: np.ndarray,
    center: np.ndarray,
    size_lwh: np.ndarray,
    yaw: np.ndarray,
    rotation: np.ndarray | None = None,
) -> np.ndarray:
    """Boolean [N_boxes, N_points]: whether each point lies inside each box (boundary inclusive). Yaw-only boxes
    by default; ``rotation`` [N, 3, 3] (box axes -> frame, ``box_corners_rotated``) gives full rotations instead
    (``yaw`` is then unused)."""
    points = np.asarray(points, dtype=np.float64)[:, :3]
    center = np.asarray(center, dtype=np.float64).reshape(-1, 3)
    size_lwh = np.asarray(size_lwh, dtype=np.float64).reshape(-1, 3)
    dx, dy, dz = (points[None, :, k] - center[:, None, k] for k in range(3))  # [N_boxes, N_points] each
    half = 0.5 * size_lwh
    if rotation is not None:
        r = np.asarray(rotation, dtype=np.float64).reshape(-1, 3, 3)
        # local = R^T (p - c): component i is the dot product with the box's axis i (column i of R)
        lx, ly, lz = (r[:, 0, i, None] * dx + r[:, 1, i, None] * dy + r[:, 2, i, None] * dz for i in range(3))
        return (np.abs(lx) <= half[:, None, 0]) & (np.abs(ly) <= half[:, None, 1]) & (np.abs(lz) <= half[:, None, 2])
    yaw = np.asarray(yaw, dtype=np.float64).reshape(-1)
    c, s = np.cos(yaw)[:, None], np.sin(yaw)[:, None]
    lx = c * dx + s * dy
    ly = -s * dx + c * dy
    return (np.abs(lx) <= half[:, None, 0]) & (np.abs(ly) <= half[:, None, 1]) & (np.abs(dz) <= half[:, None, 2])


def segments_pass_through_box(
    origin: np.ndarray,
    points: np.ndarray,
    center: np.ndarray,
    size_lwh: np.ndarray,
    yaw: float,
    rotation: np.ndarray | None = None,
) -> np.ndarray:
    """[P] bool: whether the segment from ``origin`` [3] to each point [P, 3] enters the box and leaves it before
    reaching the point (a range sensor at ``origin`` measured the point *through* the box). A yaw-only box, or
    with ``rotation`` [3, 3] (box axes -> frame) a fully rotated one (``yaw`` unused).

    Slab method (Kay and Kajiya, SIGGRAPH 1986) in the box frame: the segment ``origin + t (p - origin)``,
    t in [0, 1], meets the box for t in [max of the slabs' entries, min of their exits]; the segment passes
    through when that interval is non-empty, starts before t = 1 and ends before t = 1 (a point inside the box
    or on its far face is not measured through it).
    """
    points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    if rotation is not None:
        to_box = np.asarray(rotation, dtype=np.float64).reshape(3, 3).T
    else:
        c, s = np.cos(float(yaw)), np.sin(float(yaw))
        to_box = np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])
    o = to_box @ (np.asarray(origin, dtype=np.float64).reshape(3) - np.asarray(center, dtype=np.float64).reshape(3))
    rel = (points - np.asarray(center, dtype=np.float64).reshape(1, 3)) @ to_box.T
    half = 0.5 * np.asarray(size_lwh, dtype=np.float64).reshape(3)
    # The three slabs at once, one row each: C-ordered [3, P], so that the reductions over the slabs run over whole
    # rows (numpy reduces a length-3 last axis row by row, several times slower).
    direction = np.subtract(rel.T, o[:, None], order="C")
    with np.errstate(divide="ignore", invalid="ignore"):
        t_a = (-half - o)[:, None] / direction
        t_b = (half - o)[:, None] / direction
    parallel = direction == 0.0  # the slab holds the whole line or none of it
    outside = None
    if parallel.any():
        outside = (parallel & (np.abs(o) > half)[:, None]).any(axis=0)
        t_a = np.where(parallel, -np.inf, t_a)
        t_b = np.where(parallel, np.inf, t_b)
    t_enter = np.minimum(t_a, t_b).max(axis=0, initial=0.0)
    t_exit = np.maximum(t_a, t_b).min(axis=0, initial=np.inf)
    passes = (t_enter <= t_exit) & (t_exit < 1.0)
    return passes if outside is None else passes & ~outside
