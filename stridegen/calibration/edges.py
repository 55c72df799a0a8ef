"""LiDAR-camera extrinsic check and refinement by edge alignment.

After J. Levinson, S. Thrun, "Automatic Online Calibration of Cameras and Lasers", RSS 2013 (section III): LiDAR
depth discontinuities projected into the image should fall on image edges, over many frames. What differs from the
paper, and why (measured on the synthetic logs, docs/calibrate.md):

- LiDAR silhouettes from the sweep's range image (rings sorted by elevation x azimuth steps), ``depth_edges``:
  side silhouettes (a jump between azimuth neighbours of a ring), top silhouettes (between a ring and the one
  above it in the same column) and bottom edges (where a vertical face meets the ground: exact, not sampled).
  Each silhouette point is put on the ray halfway between the two returns, at the range the surface reaches
  there: the near return alone lies half a step inside the object, a bias the paper's points have.
- Image: the exact Euclidean distance transform of the Canny edges (``edge_distance_map``).
- Sampling intervals: a side (top) silhouette lies anywhere within half an azimuth step (half a ring spacing) of
  its point, across the edge; its distance is read from ``interval_distance``, the distance map's minimum over
  that interval (horizontal for side points, vertical for top ones; ``INTERVAL_SHARE`` times its width in pixels):
  zero wherever an image edge lies within it. Against the plain distance, the interval removes a bias of the
  forward translation: the truncated squared distance of a point spread uniformly over +-1.8 px (the HDL-32E's
  0.33 deg step at f = 633 px) around an edge favoured a scale of the projected silhouettes 2-4 cm off along the
  optical axis (CAM_FRONT of the synthetic log, docs/calibrate.md).
- Objective: the weighted mean of the truncated squared distance from each projected silhouette point (or its
  interval) to the nearest image edge (``edge_cost``), minimised by an exhaustive rotation grid, then Nelder-Mead
  over rotation and then all six parameters with a truncation that narrows from 10 to 1.5 pixels
  (``refine_extrinsic``). The paper's score ``J`` (its blurred edge image ``alpha E + (1 - alpha) gamma ** d``,
  ``edge_score``) peaked away from the true extrinsic on these logs and is kept as a reported figure only.

The misalignment reported in pixels is the mean distance from each projected silhouette point to the nearest
Canny edge, truncated at ``TRUNCATE_PX``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from stridegen.core.projection import project_points
from stridegen.core.transforms import make_transform, transform_points

TRUNCATE_PX = 10.0
DEPTH_JUMP_M = 0.5
GAP_STEPS = 3.5  # an azimuth gap wider than this many of the ring's median steps is sky, not a dropout
RANGE_LIMIT_SHARE = 0.9  # a gap next to a return beyond this share of the farthest return is the range limit
RAMP_FACTOR = 3.0  # a jump must exceed this many times the near point's range step on its other side
TOP_MIN_HEIGHT_M = 0.3  # a top edge (between rings) must lie this far above the LiDAR (and so above the cameras)
# Weight of a top edge: its position is known to +-half the ring spacing (1.33 deg on a 32-beam LiDAR), a side
# edge's to +-half the azimuth step (0.33 deg); 1 / variance gives (0.33 / 1.33) ** 2 = 0.06; 0.1 did better than 0
# and 1 on three cameras of the synthetic log while this was developed.
TOP_WEIGHT = 0.1
FACE_TOLERANCE_M = 0.15  # two returns of a column on one vertical face differ this little in horizontal distance
GROUND_GAP_M = 0.3  # a ground return lies this much nearer (horizontally) than the face behind it
ALPHA = 1.0 / 3.0  # Levinson and Thrun 2013, eq. (2)
GAMMA = 0.9  # the paper has 0.98 at 640x480; 0.9 measured better on the synthetic 800x450 log (docs/calibrate.md)
CANNY_LOW, CANNY_HIGH = 50, 150  # OpenCV Canny hysteresis thresholds on the 8-bit grey image
SIDE, TOP, BOTTOM = 0, 1, 2  # ``DepthEdges.kind``
# Share of the sampling interval's width used by ``interval_distance``: 1 is the interval itself; 1.5 and 2 (room
# for the Canny edges' own half-pixel quantisation) left CAM_FRONT_RIGHT 2.5 and 5.7 cm off on the synthetic log.
INTERVAL_SHARE = 1.0


@dataclass(frozen=True)
class DepthEdges:
    """Silhouette points [M, 3] of one sweep (sensor frame, m), their weights [M], kinds [M] (``SIDE``, ``TOP``,
    ``BOTTOM``) and half sampling intervals [M] (rad: the edge lies within this angle of the point, across the
    edge: half the azimuth step for a side point, half the ring spacing for a top one, 0 for an exact bottom one)
    (``depth_edges``)."""

    points: np.ndarray
    weight: np.ndarray
    kind: np.ndarray
    half_interval_rad: np.ndarray


def _rotate_toward(xyz: np.ndarray, d_az: np.ndarray | float, elevation: np.ndarray | None = None) -> np.ndarray:
    """``xyz`` [M, 3] turned about the sensor's z axis by ``d_az`` (rad) and, when given, set to ``elevation``
    (rad), at the same range."""
    r = np.linalg.norm(xyz, axis=1)
    az = np.arctan2(xyz[:, 1], xyz[:, 0]) + d_az
    el = np.arcsin(np.clip(xyz[:, 2] / np.maximum(r, 1e-9), -1, 1)) if elevation is None else elevation
    return np.stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)], axis=1) * r[:, None]


def _extend(xyz: np.ndarray, a: np.ndarray, c: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """Where the surface through returns ``c`` and ``a`` (indices into ``xyz``; ``c`` < 0: none), continued past
    ``a``, meets the ray along ``direction`` [M, 3] from the sensor: the closest point of the two lines, its range
    kept within one step of the surface (``|a - c|``) of ``a``'s; without ``c``, at ``a``'s range. The edge lies
    between the rays, so a surface seen obliquely reaches it farther than ``a``: at ``a``'s range the points would
    be too near, which moves them away from the epipole in the image of a camera ahead of the LiDAR."""
    p = xyz[a]
    r_a = np.linalg.norm(p, axis=1)
    d = direction / np.linalg.norm(direction, axis=1, keepdims=True)
    e = p - xyz[np.maximum(c, 0)]
    ee, ed, ad, ae = (np.einsum("ij,ij->i", x, y) for x, y in ((e, e), (e, d), (p, d), (p, e)))
    det = ee - ed**2  # |d| = 1
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (ee * ad - ed * ae) / det  # range along d of the closest point to the line p + s e
    step = np.sqrt(ee)
    t = np.where((c >= 0) & (det > 1e-12 * np.maximum(ee, 1e-12)), np.clip(t, r_a - step, r_a + step), r_a)
    return d * t[:, None]


def depth_edges(
    points_lidar: np.ndarray,
    ring: np.ndarray | None = None,
    jump_m: float = DEPTH_JUMP_M,
    top_weight: float = TOP_WEIGHT,
    bottom_weight: float = 1.0,
) -> DepthEdges:
    """Silhouettes of a sweep (sensor frame) on its range image: rows are the rings (``ring`` [N]; elevation bins
    of 0.5 deg when absent) sorted by elevation, columns the azimuth steps (the median step of the rings).

    - Side silhouettes: a ring's point whose azimuth neighbour is farther by more than ``jump_m`` and by more than
      ``RAMP_FACTOR`` times the point's range step to its other neighbour (a surface seen at a grazing angle grows
      steadily and is no silhouette), or whose neighbour is missing (an azimuth gap of more than ``GAP_STEPS``
      steps: sky; a shorter gap is a dropout, bridged; a gap next to the range limit is no silhouette).
    - Top silhouettes: a point whose neighbour in the ring above at the same column is farther (same test against
      the ring below) or missing, ``TOP_MIN_HEIGHT_M`` above the sensor (seen from below by the LiDAR and the
      cameras alike, so that both see the same edge), weighted ``top_weight``.

    The edge is between the two rays: each point is put at the near range on the bisecting direction, so the
    sampling does not pull the silhouette inwards by half a step (which the near point alone would). Each point
    comes with its kind and the half-width of its sampling interval (``DepthEdges``)."""
    xyz = np.asarray(points_lidar, dtype=np.float64)[:, :3]
    rng_m = np.linalg.norm(xyz, axis=1)
    keep = rng_m > 1e-6
    xyz, rng_m = xyz[keep], rng_m[keep]
    el = np.arcsin(np.clip(xyz[:, 2] / np.maximum(rng_m, 1e-9), -1, 1))
    ring = np.round(np.degrees(el) / 0.5) if ring is None else np.asarray(ring)[keep]
    rings, ring_index = np.unique(ring, return_inverse=True)
    ring_el = np.array([np.median(el[ring_index == k]) for k in range(rings.size)])
    rank = np.argsort(np.argsort(ring_el))[ring_index]  # ring position by elevation, lowest first
    ring_el = np.sort(ring_el)
    az = np.arctan2(xyz[:, 1], xyz[:, 0])
    order = np.lexsort((az, rank))
    xyz, r, az, rank = xyz[order], rng_m[order], az[order], rank[order]
    same = rank[1:] == rank[:-1]
    if not same.any():
        return DepthEdges(np.zeros((0, 3)), np.zeros(0), np.zeros(0, np.int8), np.zeros(0))
    d_az = np.diff(az)
    step = float(np.median(d_az[same]))
    limit = RANGE_LIMIT_SHARE * r.max()

    # Side silhouettes: pairs (i, i + 1) of one ring.
    i = np.nonzero(same)[0]
    j = i + 1
    gap = d_az[i] > GAP_STEPS * step
    linked_i, linked_j = i[~gap], j[~gap]
    prev, nxt = np.full(r.size, -1), np.full(r.size, -1)
    nxt[linked_i], prev[linked_j] = linked_j, linked_i

    def ramp(a: np.ndarray, other: np.ndarray) -> np.ndarray:
        """Range step of ``a`` from its ``other`` neighbour (0 without one): the surface's slope per step."""
        o = other[a]
        return np.where(o >= 0, r[a] - r[np.maximum(o, 0)], 0.0)

    pts, wts, kinds, halves = [], [], [], []
    for near, far, other in ((linked_i, linked_j, prev), (linked_j, linked_i, nxt)):
        m = r[far] - r[near] > np.maximum(jump_m, RAMP_FACTOR * np.maximum(ramp(near, other), 0.0))
        a, b = near[m], far[m]
        pts.append(_extend(xyz, a, other[a], xyz[a] / r[a, None] + xyz[b] / r[b, None]))
        halves.append(0.5 * np.abs(np.angle(np.exp(1j * (az[b] - az[a])))))
    for near, sign, other in ((i[gap], 1.0, prev), (j[gap], -1.0, nxt)):
        a = near[r[near] < limit]
        pts.append(_extend(xyz, a, other[a], _rotate_toward(xyz[a], sign * step / 2)))
        halves.append(np.full(a.size, 0.5 * step))
    n_side = sum(len(x) for x in pts)
    wts.append(np.ones(n_side))
    kinds.append(np.full(n_side, SIDE, np.int8))

    # Top silhouettes: the point of the ring above in the same azimuth column.
    col = np.round((az - az.min()) / step).astype(np.int64)
    grid = np.full((rings.size + 2, int(col.max()) + 1), -1)  # two rows of "no return" above the top ring
    grid[rank, col] = np.arange(r.size)
    above, below = grid[np.minimum(rank + 1, rings.size), col], grid[np.maximum(rank - 1, 0), col]
    below = np.where(rank > 0, below, -1)
    r_above = np.where(above >= 0, r[np.maximum(above, 0)], np.inf)
    step_below = np.where(below >= 0, r - r[np.maximum(below, 0)], 0.0)
    top = (r_above - r > np.maximum(jump_m, RAMP_FACTOR * np.maximum(step_below, 0.0))) & (r < limit)
    top &= (rank < rings.size - 1) & (xyz[:, 2] > TOP_MIN_HEIGHT_M)
    a = np.nonzero(top)[0]
    upper_el = ring_el[np.minimum(rank[a] + 1, rings.size - 1)]
    bisect = _rotate_toward(xyz[a], 0.0, 0.5 * (np.arcsin(xyz[a, 2] / r[a]) + upper_el))
    pts.append(_extend(xyz, a, below[a], bisect))
    wts.append(np.full(a.size, float(top_weight)))
    kinds.append(np.full(a.size, TOP, np.int8))
    halves.append(0.5 * (upper_el - np.arcsin(xyz[a, 2] / r[a])))

    # Bottom edges: a ground return in front of a vertical face (the two returns above it in the column lie at
    # the same horizontal distance); the face meets the ground right below its lowest return.
    rho = np.hypot(xyz[:, 0], xyz[:, 1])
    up1, up2 = above, grid[rank + 2, col]
    ok = (up1 >= 0) & (up2 >= 0) & (below >= 0)
    u1, u2, b0 = np.maximum(up1, 0), np.maximum(up2, 0), np.maximum(below, 0)
    ok &= np.abs(rho[u2] - rho[u1]) < FACE_TOLERANCE_M  # a vertical face above
    ok &= rho[u1] - rho > GROUND_GAP_M  # the point lies in front of it
    ok &= (np.abs(xyz[b0, 2] - xyz[:, 2]) < FACE_TOLERANCE_M) & (rho - rho[b0] > GROUND_GAP_M)  # on the ground
    ok &= xyz[u2, 2] - xyz[:, 2] > FACE_TOLERANCE_M  # the face rises above the ground
    a = np.nonzero(ok)[0]
    foot = xyz[up1[a]].copy()
    foot[:, 2] = xyz[a, 2]
    pts.append(foot)
    wts.append(np.full(a.size, float(bottom_weight)))
    kinds.append(np.full(a.size, BOTTOM, np.int8))
    halves.append(np.zeros(a.size))
    return DepthEdges(np.concatenate(pts), np.concatenate(wts), np.concatenate(kinds), np.concatenate(halves))


def _grey(image_rgb: np.ndarray) -> np.ndarray:
    import cv2

    return np.asarray(cv2.cvtColor(np.ascontiguousarray(image_rgb), cv2.COLOR_RGB2GRAY))


def edge_strength_map(image_rgb: np.ndarray, alpha: float = ALPHA, gamma: float = GAMMA) -> np.ndarray:
    """Blurred edge image ``D`` (float32 [H, W], in [0, 1]) of an RGB image: ``alpha E + (1 - alpha) gamma ** d``
    with ``E`` the Canny edges (0 or 1) and ``d`` the Euclidean distance (pixels) to the nearest one. This is
    Levinson and Thrun's inverse distance transform with binary edges: a grey-difference ``E`` also marks the
    texture of road and sky, whose blur then floods the image."""
    return _strength(edge_distance_map(image_rgb), alpha, gamma)


def _strength(dist: np.ndarray, alpha: float = ALPHA, gamma: float = GAMMA) -> np.ndarray:
    return (alpha * (dist == 0) + (1.0 - alpha) * np.power(np.float32(gamma), dist)).astype(np.float32)


def _distance(edges: np.ndarray) -> np.ndarray:
    import cv2

    return np.asarray(cv2.distanceTransform((~edges).astype(np.uint8), cv2.DIST_L2, cv2.DIST_MASK_PRECISE))


def edge_distance_map(image_rgb: np.ndarray) -> np.ndarray:
    """Distance (pixels, float32 [H, W]) from every pixel to the nearest Canny edge of an RGB image (exact
    Euclidean distance transform)."""
    import cv2

    return _distance(cv2.Canny(_grey(image_rgb), CANNY_LOW, CANNY_HIGH) > 0)


def interval_distance(distance_px: np.ndarray, half_px: float, axis: int) -> np.ndarray:
    """Distance (pixels) from every pixel's interval ``+-half_px`` along ``axis`` (of ``distance_px``, [..., H, W])
    to the nearest edge: the minimum of the distance map over the interval (shifts by whole pixels, and linear
    interpolation for the fractional ends; the border replicated)."""
    whole = int(np.floor(half_px))
    frac = half_px - whole
    n = distance_px.shape[axis]
    pad = [(0, 0)] * distance_px.ndim
    pad[axis] = (whole + 1, whole + 1)
    padded = np.pad(distance_px, pad, mode="edge")

    def shifted(k: int) -> np.ndarray:
        return np.take(padded, np.arange(n) + whole + 1 + k, axis=axis)

    out = distance_px.copy()
    for k in range(1, whole + 1):
        out = np.minimum(out, np.minimum(shifted(k), shifted(-k)))
    if frac > 0:
        for sign in (1, -1):
            out = np.minimum(out, (1 - frac) * shifted(sign * whole) + frac * shifted(sign * (whole + 1)))
    return out


@dataclass(frozen=True)
class EdgeViews:
    """The frames of one camera for the edge objective, stacked: ``strength`` [F, H, W] (``edge_strength_map``),
    ``maps`` [3, F, H, W], the distance (pixels) to the nearest edge that a point of each kind reads (``SIDE``:
    ``interval_distance`` across its interval, horizontal; ``TOP``: vertical; ``BOTTOM``: ``edge_distance_map``
    itself, also ``distance_px``), and the LiDAR depth edges of all frames, ``points_lidar`` [N, 3] (LiDAR frame at
    each image's time, m), ``weight`` [N], ``view`` [N] (frame index) and ``kind`` [N]."""

    strength: np.ndarray
    maps: np.ndarray
    points_lidar: np.ndarray
    weight: np.ndarray
    view: np.ndarray
    kind: np.ndarray

    @property
    def distance_px(self) -> np.ndarray:
        """Distance (pixels) from every pixel to the nearest Canny edge, [F, H, W]."""
        return self.maps[BOTTOM]

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
        distance = np.stack([edge_distance_map(im) for im in images_rgb])
        strength = _strength(distance, gamma=gamma)
        h, w = strength.shape[1:]
        keep_pts, keep_w, keep_v, keep_k, keep_half = [], [], [], [], []
        for f, e in enumerate(edges):
            uv, _, valid = project_points(transform_points(T_cam_from_lidar, e.points), intrinsic)
            uv = np.where(valid[:, None], uv, -1e9)
            near = valid & (uv[:, 0] > -margin_px) & (uv[:, 0] < w + margin_px)
            near &= (uv[:, 1] > -margin_px) & (uv[:, 1] < h + margin_px)
            keep_pts.append(e.points[near])
            keep_w.append(e.weight[near])
            keep_v.append(np.full(int(near.sum()), f, dtype=np.int64))
            keep_k.append(e.kind[near])
            keep_half.append(e.half_interval_rad[near])
        kind, half = np.concatenate(keep_k), np.concatenate(keep_half)
        maps = np.empty((3, *distance.shape), np.float32)
        maps[BOTTOM] = distance
        for k, axis, focal in ((SIDE, 2, intrinsic[0, 0]), (TOP, 1, intrinsic[1, 1])):
            # The interval's width in pixels at the image centre (the median of the kind's points).
            half_px = float(focal * np.tan(np.median(half[kind == k]))) * INTERVAL_SHARE if (kind == k).any() else 0.0
            maps[k] = interval_distance(distance, half_px, axis)
        pts, wts, view = np.concatenate(keep_pts), np.concatenate(keep_w), np.concatenate(keep_v)
        return cls(strength, maps, pts, wts, view, kind)


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


def _bilinear(maps: np.ndarray, f: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Bilinear look-up of ``maps`` [F, H, W] at (frame ``f``, column ``u``, row ``v``), all inside the image.

    The four neighbours are read by one flat index into the C-ordered maps (``take`` on the flat view costs a
    third of three-axis fancy indexing); the arithmetic, and so every bit of the result, is that of indexing
    ``maps[f, v0, u0]`` and its three neighbours."""
    u0, v0 = np.floor(u).astype(np.int64), np.floor(v).astype(np.int64)
    du, dv = u - u0, v - v0
    width = maps.shape[2]
    flat = maps.reshape(-1)
    at = (np.asarray(f, dtype=np.int64) * maps.shape[1] + v0) * width + u0
    return (
        flat.take(at) * (1 - du) * (1 - dv)
        + flat.take(at + 1) * du * (1 - dv)
        + flat.take(at + width) * (1 - du) * dv
        + flat.take(at + width + 1) * du * dv
    )


def edge_score(T_cam_from_lidar: np.ndarray, intrinsic: np.ndarray, views: EdgeViews) -> float:
    """Levinson and Thrun's alignment score J (weighted mean of the blurred edge image at the projected depth
    edges, bilinear; points outside the image score 0): in [0, 1], larger is better."""
    total = float(views.weight.sum())
    if total <= 0:
        return 0.0
    u, v, inside = _project(T_cam_from_lidar, intrinsic, views)
    val = _bilinear(views.strength, views.view[inside], u[inside], v[inside])
    return float((views.weight[inside] * val).sum()) / total


def edge_cost(T_cam_from_lidar: np.ndarray, intrinsic: np.ndarray, views: EdgeViews, truncate_px: float) -> float:
    """Weighted mean of the truncated squared distance (px^2) from each projected silhouette point to the nearest
    image edge (bilinear in the distance transform; a point outside the image costs ``truncate_px ** 2``):
    smaller is better aligned. Truncation makes it a robust (redescending) cost: an edge point that has no
    image edge within ``truncate_px`` (an unseen silhouette, a wrong match) pulls no more than a constant."""
    total = float(views.weight.sum())
    if total <= 0:
        return 0.0
    u, v, inside = _project(T_cam_from_lidar, intrinsic, views)
    cost = np.full(u.size, float(truncate_px) ** 2)
    maps = views.maps.reshape(-1, *views.maps.shape[2:])  # [3 F, H, W]: map of kind k, frame f at k F + f
    at = views.kind[inside].astype(np.int64) * views.maps.shape[1] + views.view[inside]
    cost[inside] = np.minimum(_bilinear(maps, at, u[inside], v[inside]), truncate_px) ** 2
    return float((views.weight * cost).sum()) / total


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


# (truncation px, initial simplex step: rotation deg, translation m; 0 = held) per level of the coarse-to-fine
# search: rotation alone while the truncation is wide (a wrong match of a horizontal edge would otherwise pull the
# translation by decimetres), then all six parameters.
SEARCH_LEVELS: tuple[tuple[float, float, float], ...] = (
    (10.0, 0.5, 0.0),
    (5.0, 0.3, 0.0),
    (5.0, 0.1, 0.03),
    (3.0, 0.1, 0.01),
    (2.0, 0.05, 0.005),
    (1.5, 0.05, 0.005),
)


ROTATION_GRID_DEG = (1.5, 0.5)  # half-width and step of the first, exhaustive search over the rotation vector
GRID_STARTS = 3  # descents from this many distinct best grid rotations: the wide first level can pick a wrong basin


def _moved(T: np.ndarray, x: np.ndarray, free: np.ndarray) -> np.ndarray:
    """``perturb`` by the free parameters ``x`` (of rotation vector deg, translation m: ``free`` [6])."""
    delta = np.zeros(6)
    delta[free] = x
    return perturb(T, delta[:3], delta[3:])


def _grid_starts(
    T0: np.ndarray, intrinsic: np.ndarray, views: EdgeViews, truncate_px: float, grid_deg: tuple[float, float], n: int
) -> list[np.ndarray]:
    """The ``n`` best rotations of a grid about ``T0`` (``grid_deg``: half-width and step, deg) by ``edge_cost``,
    no two within one step of each other (distinct basins), best first."""
    half, step = grid_deg
    ticks = np.arange(-half, half + 1e-9, step)
    rotations = np.stack(np.meshgrid(ticks, ticks, ticks, indexing="ij"), axis=-1).reshape(-1, 3)
    costs = np.array([edge_cost(perturb(T0, rv, np.zeros(3)), intrinsic, views, truncate_px) for rv in rotations])
    chosen: list[np.ndarray] = []
    for k in np.argsort(costs, kind="stable"):
        if all(np.abs(rotations[k] - c).max() > step + 1e-9 for c in chosen):
            chosen.append(rotations[k])
        if len(chosen) == n:
            break
    return [perturb(T0, rv, np.zeros(3)) for rv in chosen]


def _descend(
    T: np.ndarray,
    intrinsic: np.ndarray,
    views: EdgeViews,
    levels: Sequence[tuple[float, float, float]],
    max_evaluations: int,
    restarts: int,
) -> tuple[np.ndarray, float, int]:
    """Nelder-Mead (scipy) per level of ``levels`` from ``T``: (result, its cost at the last level, evaluations)."""
    from scipy.optimize import minimize

    evaluations, best = 0, np.inf
    for truncate_px, rot_deg, trans_m in levels:
        free = np.array([rot_deg] * 3 + [trans_m] * 3) > 0
        simplex_step = np.array([rot_deg] * 3 + [trans_m] * 3)[free]
        best = edge_cost(T, intrinsic, views, truncate_px)
        for _ in range(restarts + 1):  # Nelder-Mead stalls on a collapsed simplex: restart from its result
            base = T

            def cost(
                x: np.ndarray, base: np.ndarray = base, free: np.ndarray = free, truncate_px: float = truncate_px
            ) -> float:
                return edge_cost(_moved(base, x, free), intrinsic, views, truncate_px)

            res = minimize(
                cost,
                np.zeros(free.sum()),
                method="Nelder-Mead",
                options={
                    "initial_simplex": np.vstack([np.zeros(free.sum()), np.diag(simplex_step)]),
                    "xatol": 1e-4,
                    "fatol": 1e-7,
                    "maxfev": max_evaluations,
                },
            )
            evaluations += int(res.nfev)
            if res.fun >= best - 1e-9:
                break
            T, best = _moved(base, res.x, free), float(res.fun)
    return T, best, evaluations


def refine_extrinsic(
    T_cam_from_lidar: np.ndarray,
    intrinsic: np.ndarray,
    views: EdgeViews,
    levels: Sequence[tuple[float, float, float]] = SEARCH_LEVELS,
    max_evaluations: int = 3000,
    restarts: int = 3,
    grid_deg: tuple[float, float] = ROTATION_GRID_DEG,
    starts: int = GRID_STARTS,
) -> ExtrinsicRefinement:
    """Minimise ``edge_cost`` over the six extrinsic parameters (rotation vector and translation in the camera
    frame, ``perturb``): from each of the ``starts`` best rotations of a grid (``grid_deg``: half-width and step,
    deg; at the first level's truncation; none when the half-width is 0: from the start alone), Nelder-Mead
    (scipy) once per level of ``levels`` over its free parameters, restarted from its own result (at most
    ``restarts`` times) while that lowers the cost; the result of lowest final cost wins. Each level tightens the
    truncation (a wide one first, so that a point still finds its edge from a degree away; a tight one last, so
    that only the matched edges decide) and starts from the previous level's result with a smaller simplex."""
    T0 = np.asarray(T_cam_from_lidar, dtype=np.float64).copy()
    evaluations = 0
    begin = [T0]
    if grid_deg[0] > 0:
        begin = _grid_starts(T0, intrinsic, views, levels[0][0], grid_deg, starts)
        evaluations += round((2 * grid_deg[0] / grid_deg[1] + 1) ** 3)
    T, best = T0, np.inf
    for start in begin:
        moved, cost, n = _descend(start, intrinsic, views, levels, max_evaluations, restarts)
        evaluations += n
        if cost < best:
            T, best = moved, cost
    return ExtrinsicRefinement(
        T,
        edge_misalignment_px(T0, intrinsic, views),
        edge_misalignment_px(T, intrinsic, views),
        edge_score(T0, intrinsic, views),
        edge_score(T, intrinsic, views),
        evaluations,
    )
