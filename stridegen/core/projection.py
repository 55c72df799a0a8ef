"""Pinhole projection into a camera: points to pixels, the view frustum's candidate points, segments clipped at
the near plane, and the projected edges and 2D boxes of 3D boxes.

The camera frame has x right, y down, z forward (metres); ``intrinsic`` is the 3x3 pinhole matrix.
"""

from __future__ import annotations

import numpy as np

from stridegen.core.box_geometry import BOX_EDGES


def project_points(
    points_cam: np.ndarray, intrinsic: np.ndarray, near: float = 0.1
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pinhole projection of [N, 3] camera-frame points (x right, y down, z forward).

    Returns (uv [N, 2] pixels, depth [N], in_front [N] = depth >= near). uv of points behind the near plane is NaN.
    """
    points_cam = np.asarray(points_cam, dtype=np.float64).reshape(-1, 3)
    k = np.asarray(intrinsic, dtype=np.float64)
    depth = points_cam[:, 2]
    in_front = depth >= near
    homog = points_cam @ k.T
    uv = np.empty((homog.shape[0], 2))
    with np.errstate(divide="ignore", invalid="ignore"):  # column by column, as in ``transform_points``
        np.divide(homog[:, 0], homog[:, 2], out=uv[:, 0])
        np.divide(homog[:, 1], homog[:, 2], out=uv[:, 1])
    behind = ~in_front
    uv[:, 0][behind] = np.nan  # per column: a row mask on [N, 2] takes numpy's slower path
    uv[:, 1][behind] = np.nan
    return uv, depth, in_front


def frustum_candidates(
    T_cam_from_frame: np.ndarray,
    intrinsic: np.ndarray,
    near: float,
    rect: tuple[float, float, float, float],
    points: np.ndarray,
    margin_px: float = 1.0,
    margin_m: float = 1e-3,
) -> np.ndarray:
    """Indices of the [N, 3] points (in the frame ``T_cam_from_frame`` maps into the camera) that may project into
    ``rect`` = (u0, v0, u1, v1) at depth >= ``near``: a superset of those ``project_points`` puts there, found
    without moving every point into the camera.

    The camera's view is the intersection of five half-spaces, each linear in the point: with h = K q the
    homogeneous pixel of the camera point q = R p + t (K's last row (0, 0, 1), so h_2 = z), u >= u0 is
    (k_0 - u0 k_2) . q >= 0 (z > 0), and likewise for u <= u1, v >= v0, v <= v1; depth: k_2 . q >= near. Each is
    widened (the rectangle by ``margin_px`` pixels, the near plane by ``margin_m``), so rounding (the tests here
    group the products differently from the projection) cannot drop a point the projection keeps. A matrix with
    another last row gets every index.
    """
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    k = np.asarray(intrinsic, dtype=np.float64)
    if not np.array_equal(k[2], [0.0, 0.0, 1.0]):
        return np.arange(pts.shape[0])
    u0, v0, u1, v1 = rect
    planes_cam = np.stack(  # rows a with a . q >= 0 inside (the near plane with its offset below)
        [
            k[0] - (u0 - margin_px) * k[2],
            (u1 + margin_px) * k[2] - k[0],
            k[1] - (v0 - margin_px) * k[2],
            (v1 + margin_px) * k[2] - k[1],
            k[2],
        ]
    )
    t = np.asarray(T_cam_from_frame, dtype=np.float64)
    normals = planes_cam @ t[:3, :3]  # a . (R p + t) = (a R) . p + a . t
    offsets = planes_cam @ t[:3, 3]
    offsets[4] -= near - margin_m
    side = normals @ pts.T  # [5, N]: one row per half-space
    keep = side[0] >= -offsets[0]
    for j in range(1, 5):
        keep &= side[j] >= -offsets[j]
    return np.flatnonzero(keep)


def clip_segments_near(p0: np.ndarray, p1: np.ndarray, near: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Clip camera-frame segments [..., 3] to the half space z >= near.

    Returns (q0, q1, keep): clipped end points and whether any part of the segment survives.
    """
    z0, z1 = p0[..., 2], p1[..., 2]
    in0, in1 = z0 >= near, z1 >= near
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (near - z0) / (z1 - z0)
    t = np.where(np.isfinite(t), t, 0.0)  # only used where the segment crosses the plane (z0 != z1)
    hit = p0 + t[..., None] * (p1 - p0)
    q0 = np.where((~in0 & in1)[..., None], hit, p0)
    q1 = np.where((in0 & ~in1)[..., None], hit, p1)
    return q0, q1, in0 | in1


def project_clipped_edges(
    corners_cam: np.ndarray, intrinsic: np.ndarray, near: float = 0.1
) -> tuple[np.ndarray, np.ndarray]:
    """End points of the 12 edges of each 3D box, clipped at the near plane ``z >= near`` and projected to pixels.

    ``corners_cam`` is [N, 8, 3] in the camera frame (metres), ``intrinsic`` the 3x3 pinhole matrix, or [N, 3, 3]
    one per box (boxes of several cameras in one call; each box's numbers are the ones of its camera alone). Returns
    (uv [N, 24, 2] pixels: the first end point of each edge, then the second; NaN for edges wholly behind the near
    plane, keep [N, 24] bool). Every vertex of the near-clipped box is among the kept points, so their extent is
    the box's 2D box and their convex hull its silhouette.
    """
    corners_cam = np.asarray(corners_cam, dtype=np.float64).reshape(-1, 8, 3)
    p0 = corners_cam[:, BOX_EDGES[:, 0]]
    p1 = corners_cam[:, BOX_EDGES[:, 1]]
    q0, q1, keep = clip_segments_near(p0, p1, near)
    pts = np.concatenate([q0, q1], axis=1)  # [N, 24, 3]
    keep2 = np.concatenate([keep, keep], axis=1)
    k = np.asarray(intrinsic, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        homog = pts @ (k.T if k.ndim == 2 else k.transpose(0, 2, 1))
        uv = homog[..., :2] / homog[..., 2:3]
    uv[~keep2] = np.nan
    return uv, keep2


def project_boxes_2d(
    corners_cam: np.ndarray, intrinsic: np.ndarray, image_size: tuple[int, int] | None = None, near: float = 0.1
) -> tuple[np.ndarray, np.ndarray]:
    """2D boxes [N, 4] (x0, y0, x1, y1) of projected 3D boxes, edges clipped at the near plane.

    ``corners_cam`` is [N, 8, 3] in the camera frame. With ``image_size = (width, height)`` the boxes are also
    clipped to the image. Returns (boxes_xyxy, valid): ``valid`` is False for boxes wholly behind the near plane
    or (with an image size) wholly outside the image; their rows are NaN.
    """
    uv, keep = project_clipped_edges(corners_cam, intrinsic, near)
    valid = np.asarray(keep.any(axis=1))
    out = np.full((uv.shape[0], 4), np.nan)
    if np.any(valid):
        out[valid, 0] = np.nanmin(uv[valid, :, 0], axis=1)
        out[valid, 1] = np.nanmin(uv[valid, :, 1], axis=1)
        out[valid, 2] = np.nanmax(uv[valid, :, 0], axis=1)
        out[valid, 3] = np.nanmax(uv[valid, :, 1], axis=1)
    if image_size is not None:
        width, height = image_size
        inside = valid & (out[:, 2] > 0) & (out[:, 0] < width) & (out[:, 3] > 0) & (out[:, 1] < height)
        out[:, [0, 2]] = np.clip(out[:, [0, 2]], 0, width)
        out[:, [1, 3]] = np.clip(out[:, [1, 3]], 0, height)
        out[~inside] = np.nan
        valid = inside
    return out, valid
