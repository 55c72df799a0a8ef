"""2D polygons: area (shoelace), clipping to a rectangle, and convex hulls of one or many point sets
(Andrew's monotone chain)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def polygon_area(poly: np.ndarray) -> float:
    """Area of a simple polygon [V, 2] (shoelace)."""
    p = np.asarray(poly, dtype=np.float64).reshape(-1, 2)
    if p.shape[0] < 3:
        return 0.0
    x, y = p[:, 0], p[:, 1]
    y_next = np.concatenate((y[1:], y[:1]))  # np.roll(y, -1), without np.roll's generic overhead
    x_next = np.concatenate((x[1:], x[:1]))
    return float(abs(np.dot(x, y_next) - np.dot(y, x_next)) / 2.0)


def clip_polygon_to_rect(poly: np.ndarray, x0: float, y0: float, x1: float, y1: float) -> np.ndarray:
    """Sutherland-Hodgman clipping of a polygon [V, 2] to the rectangle [x0, x1] x [y0, y1] (exact for convex
    polygons)."""
    pts = [tuple(p) for p in np.asarray(poly, dtype=np.float64).reshape(-1, 2)]
    for axis, bound, keep_above in ((0, x0, True), (0, x1, False), (1, y0, True), (1, y1, False)):
        if not pts:
            break
        out: list[tuple[float, float]] = []
        for i, cur in enumerate(pts):
            prev = pts[i - 1]
            cur_in = cur[axis] >= bound if keep_above else cur[axis] <= bound
            prev_in = prev[axis] >= bound if keep_above else prev[axis] <= bound
            if cur_in != prev_in:
                t = (bound - prev[axis]) / (cur[axis] - prev[axis])
                out.append((prev[0] + t * (cur[0] - prev[0]), prev[1] + t * (cur[1] - prev[1])))
            if cur_in:
                out.append(cur)
        pts = out
    return np.asarray(pts, dtype=np.float64).reshape(-1, 2)


def convex_hull_2d(points: np.ndarray) -> np.ndarray:
    """Convex hull [V, 2] of [P, 2] points, counter-clockwise in (u, v) maths orientation, no repeated vertex.

    Andrew's monotone chain (A. M. Andrew, Inf. Proc. Letters 9(5), 1979) in float64: the points are sorted by u,
    then v, and deduplicated with numpy (``_sorted_unique``); the two chains run on Python floats, whose
    arithmetic is the same IEEE double arithmetic as numpy's, at a fraction of the per-point cost of numpy scalars.
    The hull starts at the smallest (u, v). Collinear points are dropped; fewer than three distinct points give
    those points (a degenerate hull of area 0). Rows with a non-finite coordinate are ignored. For many small sets
    at once (projected boxes) use ``convex_hulls_2d``.
    """
    pts = np.asarray(points, dtype=np.float64).reshape(1, -1, 2)
    return convex_hulls_2d(pts)[0] if pts.shape[1] else np.zeros((0, 2))


def convex_hulls_2d(points: np.ndarray, valid: np.ndarray | None = None) -> list[np.ndarray]:
    """``convex_hull_2d`` of each of N point sets at once: points [N, P, 2], ``valid`` [N, P] bool (which points
    belong to each set; default all). Returns N arrays [V_i, 2], equal element for element to ``convex_hull_2d``
    of each set's valid points.

    The sets are sorted and deduplicated in one numpy batch (``_sorted_unique``); each set's chains then run on
    Python floats (``_monotone_chain``). A set of a projected box has at most 24 points, so a chain is a few
    dozen float operations: far cheaper than the numpy calls of one step of the sets in lockstep, the way this
    ran before (issue 35: same vertices, the same turn tests on the same operands).
    """
    pts = np.asarray(points, dtype=np.float64).reshape(-1, np.shape(points)[-2], 2)
    ok = np.ones(pts.shape[:2], dtype=bool) if valid is None else np.asarray(valid, dtype=bool).reshape(pts.shape[:2])
    if pts.shape[0] == 0:
        return []
    su, sv, count = _sorted_unique(pts, ok)
    out: list[np.ndarray] = []
    for u, v, m in zip(su.tolist(), sv.tolist(), count.tolist(), strict=True):
        ordered = [[a, b] for a, b in zip(u[:m], v[:m], strict=True)]
        if m < 3:
            out.append(np.asarray(ordered, dtype=np.float64).reshape(-1, 2))
            continue
        lower = _monotone_chain(ordered)
        upper = _monotone_chain(ordered[::-1])
        out.append(np.asarray(lower[:-1] + upper[:-1], dtype=np.float64))
    return out


def _sorted_unique(pts: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each set's distinct finite valid points sorted by u, then v: (u [N, P], v [N, P], count [N]); the first
    count[i] entries of row i are set i's points (the rest is padding)."""
    valid = valid & np.isfinite(pts).all(axis=-1)
    u = np.where(valid, pts[..., 0], 0.0)
    v = np.where(valid, pts[..., 1], 0.0)
    order = np.lexsort((v, u, ~valid), axis=-1)  # valid points first, by u then v
    rows = np.arange(pts.shape[0])[:, None]
    u, v, valid = u[rows, order], v[rows, order], valid[rows, order]
    fresh = valid.copy()
    fresh[:, 1:] &= (u[:, 1:] != u[:, :-1]) | (v[:, 1:] != v[:, :-1])
    pack = np.argsort(~fresh, axis=1, kind="stable")
    return u[rows, pack], v[rows, pack], fresh.sum(axis=1)


def _monotone_chain(ordered: list[list[float]]) -> list[list[float]]:
    """One half of Andrew's hull: the points in order, keeping only strict left turns (cross product > 0)."""
    chain: list[list[float]] = []
    for b in ordered:
        while len(chain) >= 2 and _cross(chain[-2], chain[-1], b) <= 0:
            chain.pop()
        chain.append(b)
    return chain


def _cross(o: Sequence[Any], a: Sequence[Any], b: Sequence[Any]) -> Any:
    """z of (a - o) x (b - o) for points given as (u, v) pairs of floats (or of arrays): > 0 for a left turn
    o -> a -> b."""
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])
