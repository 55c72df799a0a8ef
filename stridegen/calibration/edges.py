"""LiDAR-camera extrinsic check and refinement by edge alignment.

The objective of J. Levinson, S. Thrun, "Automatic Online Calibration of Cameras and Lasers", RSS 2013 (section
III):

- LiDAR depth edges: along each laser ring in azimuth order, a point whose neighbour is farther by more than
  ``DEPTH_JUMP_M`` (or missing: a gap in the ring, e.g. sky next to an object) is on the near side of a
  silhouette; its weight is ``X_i = max(r_{i-1} - r_i, r_{i+1} - r_i, 0) ** 0.5`` (the paper's exponent), the
  jump capped at ``JUMP_CAP_M``.
- Image edges: ``E`` = the largest absolute grey difference between a pixel and its 8 neighbours (/255), blurred by
  an inverse distance transform ``D = alpha E + (1 - alpha) max_{x, y} E_{x, y} gamma ** max(|x - i|, |y - j|)``
  (the paper's alpha = 1/3, gamma = 0.98), so that the score decays smoothly with the distance to an edge.
- Score: ``J = sum_f sum_i X_i D_f(project(T p_i))`` over many frames (bilinear look-up; points outside the image
  score 0), divided by the total weight: a number in [0, 1], larger is better aligned.

The refinement maximises J by a coarse-to-fine pattern search: rotation alone first (a 1 deg error moves a point
at any range by ~1 deg of view, a 5 cm one moves a point at 20 m by 0.14 deg only), then all six parameters. The
misalignment reported in pixels is a separate, readable figure: the mean distance from each projected edge point
to the nearest Canny edge, truncated at ``TRUNCATE_PX``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from stridegen.core.geometry import make_transform, project_points, transform_points

TRUNCATE_PX = 10.0
DEPTH_JUMP_M = 0.5
JUMP_CAP_M = 10.0  # a gap in the ring (no return) counts as a jump this large
GAP_STEPS = 3.0  # an azimuth gap wider than this many of the ring's median steps is a missing neighbour
WEIGHT_EXPONENT = 0.5  # Levinson and Thrun 2013, eq. (1)
ALPHA = 1.0 / 3.0  # Levinson and Thrun 2013, eq. (2)
GAMMA = 0.9  # the paper has 0.98 at 640x480; 0.9 measured better on the synthetic 800x450 log (docs/calibrate.md)
CANNY_LOW, CANNY_HIGH = 50, 150  # OpenCV Canny hysteresis thresholds on the 8-bit grey image


@dataclass(frozen=True)
class DepthEdges:
    """Depth-edge points [M, 3] of one sweep (sensor frame, m) and their weights [M] (``X_i`` above)."""

    points: np.ndarray
    weight: np.ndarray


def depth_edges(points_lidar: np.ndarray, ring: np.ndarray | None = None, jump_m: float = DEPTH_JUMP_M) -> DepthEdges:
    """Depth edges of a sweep (sensor frame): along each ring (``ring`` [N]; elevation bins of 0.5 deg when absent)
    in azimuth order, the points whose range is smaller than a neighbour's by more than ``jump_m`` (or whose
    neighbour is missing: an azimuth gap of more than ``GAP_STEPS`` median steps of the ring), unless the other
    neighbour is nearer by more than a third of that jump (a surface seen at a grazing angle, whose ranges grow
    steadily, is no silhouette). A gap next to a return within 10 % of the sweep's farthest return is the range
    limit, not a silhouette, and is not counted."""
    xyz = np.asarray(points_lidar, dtype=np.float64)[:, :3]
    rng_m = np.linalg.norm(xyz, axis=1)
    if ring is None:
        ring = np.round(np.degrees(np.arctan2(xyz[:, 2], np.hypot(xyz[:, 0], xyz[:, 1]))) / 0.5)
    ring = np.asarray(ring)
    az = np.arctan2(xyz[:, 1], xyz[:, 0])
    order = np.lexsort((az, ring))
    r_s, ring_s, az_s = rng_m[order], ring[order], az[order]
    same = ring_s[1:] == ring_s[:-1]
    d_az = np.diff(az_s)
    step = np.median(d_az[same]) if same.any() else 0.0
    linked = same & (d_az <= GAP_STEPS * step)
    # Range difference to the previous / next point of the same ring; a missing neighbour is JUMP_CAP_M farther,
    # except at the range limit, where it is as near as the point itself.
    at_limit = r_s > 0.9 * r_s.max(initial=0.0)
    missing = np.where(at_limit, 0.0, JUMP_CAP_M)
    d_prev, d_next = missing.copy(), missing.copy()
    d_prev[0], d_next[-1] = 0.0, 0.0  # a ring's two ends (the seam of the revolution) are no silhouette
    d_prev[1:][~same], d_next[:-1][~same] = 0.0, 0.0
    d_prev[1:][linked] = (r_s[:-1] - r_s[1:])[linked]
    d_next[:-1][linked] = (r_s[1:] - r_s[:-1])[linked]
    jump = np.minimum(np.maximum(d_prev, d_next), JUMP_CAP_M)
    other = np.minimum(d_prev, d_next)
    edge = (jump > jump_m) & (other > -jump / 3.0)
    return DepthEdges(xyz[order[edge]], jump[edge] ** WEIGHT_EXPONENT)


def depth_edge_points(
    points_lidar: np.ndarray, ring: np.ndarray | None = None, jump_m: float = DEPTH_JUMP_M
) -> np.ndarray:
    """The points [M, 3] of ``depth_edges`` (sensor frame, m), without their weights."""
    return depth_edges(points_lidar, ring, jump_m).points


def _grey(image_rgb: np.ndarray) -> np.ndarray:
    import cv2

    return np.asarray(cv2.cvtColor(np.ascontiguousarray(image_rgb), cv2.COLOR_RGB2GRAY))


def edge_strength_map(image_rgb: np.ndarray, alpha: float = ALPHA, gamma: float = GAMMA) -> np.ndarray:
    """Blurred edge image ``D`` (float32 [H, W], in [0, 1]) of an RGB image: ``alpha E + (1 - alpha) gamma ** d``
    with ``E`` the Canny edges (0 or 1) and ``d`` the Euclidean distance (pixels) to the nearest one. This is
    Levinson and Thrun's inverse distance transform with binary edges: a grey-difference ``E`` also marks the
    texture of road and sky, whose blur then floods the image."""
    dist = edge_distance_map(image_rgb, vertical_only=True)
    return (alpha * (dist == 0) + (1.0 - alpha) * np.power(np.float32(gamma), dist)).astype(np.float32)


def edge_distance_map(image_rgb: np.ndarray, vertical_only: bool = False) -> np.ndarray:
    """Distance (pixels, float32 [H, W]) from every pixel to the nearest Canny edge of an RGB image;
    ``vertical_only``: to the nearest edge pixel whose grey gradient is more horizontal than vertical (an edge
    line steeper than 45 deg)."""
    import cv2

    grey = _grey(image_rgb)
    edges = cv2.Canny(grey, CANNY_LOW, CANNY_HIGH) > 0
    if vertical_only:
        gx = cv2.Sobel(grey, cv2.CV_32F, 1, 0)
        gy = cv2.Sobel(grey, cv2.CV_32F, 0, 1)
        edges &= np.abs(gx) > np.abs(gy)
    return np.asarray(cv2.distanceTransform((~edges).astype(np.uint8), cv2.DIST_L2, 5))


@dataclass(frozen=True)
class EdgeViews:
    """The frames of one camera for the edge objective, stacked: ``strength`` [F, H, W] (``edge_strength_map``),
    ``distance_px`` [F, H, W] (``edge_distance_map``), and the LiDAR depth edges of all frames, ``points_lidar``
    [N, 3] (LiDAR frame at each image's time, m), ``weight`` [N] and ``view`` [N] (frame index)."""

    strength: np.ndarray
    distance_px: np.ndarray
    points_lidar: np.ndarray
    weight: np.ndarray
    view: np.ndarray

    @classmethod
    def build(
        cls,
        images_rgb: Sequence[np.ndarray],
        edges: Sequence[DepthEdges],
        T_cam_from_lidar: np.ndarray,
        intrinsic: np.ndarray,
        margin_px: float = 80.0,
        gamma: float = GAMMA,
    ) -> EdgeViews:
        """Stack frames (``edges[f]`` in the LiDAR frame at image ``f``'s time), keeping the edge points that
        project within ``margin_px`` of the image at ``T_cam_from_lidar`` (the rest cannot reach it in a small
        search); ``gamma``: the decay of ``edge_strength_map``."""
        strength = np.stack([edge_strength_map(im, gamma=gamma) for im in images_rgb])
        distance = np.stack([edge_distance_map(im) for im in images_rgb])
        h, w = strength.shape[1:]
        keep_pts, keep_w, keep_v = [], [], []
        for f, e in enumerate(edges):
            uv, _, valid = project_points(transform_points(T_cam_from_lidar, e.points), intrinsic)
            uv = np.where(valid[:, None], uv, -1e9)
            near = valid & (uv[:, 0] > -margin_px) & (uv[:, 0] < w + margin_px)
            near &= (uv[:, 1] > -margin_px) & (uv[:, 1] < h + margin_px)
            keep_pts.append(e.points[near])
            keep_w.append(e.weight[near])
            keep_v.append(np.full(int(near.sum()), f, dtype=np.int64))
        return cls(strength, distance, np.concatenate(keep_pts), np.concatenate(keep_w), np.concatenate(keep_v))


def _project(
    T_cam_from_lidar: np.ndarray, intrinsic: np.ndarray, views: EdgeViews
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pixel coordinates u, v [N] of the edge points and whether each lands inside the image (with a one-pixel
    border for the bilinear look-up)."""
    h, w = views.strength.shape[1:]
    uv, _, valid = project_points(transform_points(T_cam_from_lidar, views.points_lidar), intrinsic)
    u, v = np.where(valid, uv[:, 0], -1.0), np.where(valid, uv[:, 1], -1.0)
    inside = valid & (u >= 0) & (u < w - 1) & (v >= 0) & (v < h - 1)
    return u, v, inside


def edge_score(T_cam_from_lidar: np.ndarray, intrinsic: np.ndarray, views: EdgeViews) -> float:
    """Levinson and Thrun's alignment score J (weighted mean of the blurred edge image at the projected depth
    edges, bilinear; points outside the image score 0): in [0, 1], larger is better."""
    total = float(views.weight.sum())
    if total <= 0:
        return 0.0
    u, v, inside = _project(T_cam_from_lidar, intrinsic, views)
    u, v, f, wt = u[inside], v[inside], views.view[inside], views.weight[inside]
    u0, v0 = np.floor(u).astype(np.int64), np.floor(v).astype(np.int64)
    du, dv = u - u0, v - v0
    s = views.strength
    val = (
        s[f, v0, u0] * (1 - du) * (1 - dv)
        + s[f, v0, u0 + 1] * du * (1 - dv)
        + s[f, v0 + 1, u0] * (1 - du) * dv
        + s[f, v0 + 1, u0 + 1] * du * dv
    )
    return float((wt * val).sum()) / total


def edge_misalignment_px(T_cam_from_lidar: np.ndarray, intrinsic: np.ndarray, views: EdgeViews) -> float:
    """Mean distance (pixels, each truncated at ``TRUNCATE_PX``) from the projected LiDAR depth edges to the
    nearest Canny edge of their image; NaN when no edge point falls inside any image."""
    u, v, inside = _project(T_cam_from_lidar, intrinsic, views)
    if not inside.any():
        return float("nan")
    ui, vi = np.round(u[inside]).astype(np.int64), np.round(v[inside]).astype(np.int64)
    d = views.distance_px[views.view[inside], vi, ui]
    return float(np.minimum(d, TRUNCATE_PX).mean())


def perturb(T: np.ndarray, rotation_deg: np.ndarray, translation_m: np.ndarray) -> np.ndarray:
    """``T`` (4x4) moved by a small rotation (rotation vector, degrees) and a translation (m), both applied in the
    target frame of ``T``: ``[R(r) | t] @ T``."""
    from scipy.spatial.transform import Rotation

    R = Rotation.from_rotvec(np.radians(np.asarray(rotation_deg, dtype=np.float64))).as_matrix()
    return make_transform(R, np.asarray(translation_m, dtype=np.float64)) @ np.asarray(T, dtype=np.float64)


@dataclass(frozen=True)
class ExtrinsicRefinement:
    """``T_cam_from_lidar`` after the search; misalignment (pixels) and score J before and after; evaluations."""

    T_cam_from_lidar: np.ndarray
    before_px: float
    after_px: float
    score_before: float
    score_after: float
    evaluations: int


# (rotation step deg, translation step m; 0 = that block is held) per level of the coarse-to-fine search.
SEARCH_LEVELS: tuple[tuple[float, float], ...] = (
    (0.5, 0.0),
    (0.1, 0.0),
    (0.1, 0.05),
    (0.02, 0.01),
    (0.02, 0.002),
)


def refine_extrinsic(
    T_cam_from_lidar: np.ndarray,
    intrinsic: np.ndarray,
    views: EdgeViews,
    levels: Sequence[tuple[float, float]] = SEARCH_LEVELS,
    max_moves: int = 200,
) -> ExtrinsicRefinement:
    """Maximise ``edge_score`` over the six extrinsic parameters (rotation vector and translation in the camera
    frame, ``perturb``) by a pattern search per level of ``levels``: of the moves +-step along each free
    parameter, take the best while it raises the score (at most ``max_moves`` per level)."""
    T = np.asarray(T_cam_from_lidar, dtype=np.float64).copy()
    best = edge_score(T, intrinsic, views)
    before, evaluations = best, 1
    for rot_step, trans_step in levels:
        axes = [a for a in range(6) if (rot_step if a < 3 else trans_step) > 0]
        for _ in range(max_moves):
            candidates = []
            for axis in axes:
                for sign in (1.0, -1.0):
                    delta = np.zeros(6)
                    delta[axis] = sign * (rot_step if axis < 3 else trans_step)
                    moved = perturb(T, delta[:3], delta[3:])
                    candidates.append((edge_score(moved, intrinsic, views), moved))
            evaluations += len(candidates)
            score, moved = max(candidates, key=lambda c: c[0])
            if score <= best + 1e-12:
                break
            T, best = moved, score
    return ExtrinsicRefinement(
        T,
        edge_misalignment_px(np.asarray(T_cam_from_lidar, dtype=np.float64), intrinsic, views),
        edge_misalignment_px(T, intrinsic, views),
        before,
        best,
        evaluations,
    )
