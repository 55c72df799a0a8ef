"""2D polygons: area (shoelace), clipping to a rectangle, and convex hulls of one or many point sets
(Andrew's monotone chain, sequential and in lockstep)."""

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
    arithmetic is the same IEEE double arithmetic as numpy's, so every turn test (``_cross``) is decided exactly
    as ``convex_hulls_2d`` decides it for the same set, at a fraction of the per-point cost of numpy scalars. The
    hull starts at the smallest (u, v). Collinear points are dropped; fewer than three distinct points give those
    points (a degenerate hull of area 0). Rows with a non-finite coordinate are ignored. For many small sets at
    once (projected boxes) use ``convex_hulls_2d``.
    """
    pts = np.asarray(points, dtype=np.float64).reshape(1, -1, 2)
    su, sv, count = _sorted_unique(pts, np.ones(pts.shape[:2], dtype=bool))
    m = int(count[0])
    ordered: list[list[float]] = np.stack([su[0, :m], sv[0, :m]], axis=1).tolist()
    if m < 3:
        return np.asarray(ordered, dtype=np.float64).reshape(-1, 2)
    lower = _monotone_chain(ordered)
    upper = _monotone_chain(ordered[::-1])
    return np.asarray(lower[:-1] + upper[:-1], dtype=np.float64)


def convex_hulls_2d(points: np.ndarray, valid: np.ndarray | None = None) -> list[np.ndarray]:
    """``convex_hull_2d`` of each of N point sets at once: points [N, P, 2], ``valid`` [N, P] bool (which points
    belong to each set; default all). Returns N arrays [V_i, 2], equal element for element to ``convex_hull_2d``
    of each set's valid points.

    The monotone chains run in lockstep over the N sets as numpy arrays: step t offers every set its t-th sorted
    point, and the sets whose last turn is not a strict left turn pop their chain's top until none does. The turn
    tests are the same float64 expressions (``_cross``) on the same operands as the sequential chain, so every
    decision and every vertex is the same; the cost is O(P) numpy steps whatever N is.
    """
    pts = np.asarray(points, dtype=np.float64).reshape(-1, np.shape(points)[-2], 2)
    ok = np.ones(pts.shape[:2], dtype=bool) if valid is None else np.asarray(valid, dtype=bool).reshape(pts.shape[:2])
    n = pts.shape[0]
    if n == 0:
        return []
    su, sv, count = _sorted_unique(pts, ok)
    lu, lv, nl = _lockstep_chain(su, sv, count)
    rev = np.clip(count[:, None] - 1 - np.arange(su.shape[1])[None, :], 0, None)  # each set's points reversed
    rows = np.arange(n)[:, None]
    uu, uv, nu = _lockstep_chain(su[rows, rev], sv[rows, rev], count)
    out: list[np.ndarray] = []
    for i in range(n):
        m = int(count[i])
        if m < 3:
            out.append(np.stack([su[i, :m], sv[i, :m]], axis=1))
            continue
        a, b = int(nl[i]) - 1, int(nu[i]) - 1
        out.append(np.stack([np.concatenate([lu[i, :a], uu[i, :b]]), np.concatenate([lv[i, :a], uv[i, :b]])], axis=1))
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


def _lockstep_chain(su: np.ndarray, sv: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``_monotone_chain`` over N sets at once: points (su, sv) [N, P] in chain order, the first count[i] of row i.
    Returns the chains' (u [N, P], v [N, P], length [N])."""
    n, p = su.shape
    cu, cv = np.zeros((n, p)), np.zeros((n, p))
    length = np.zeros(n, dtype=np.int64)
    rows = np.arange(n)
    for t in range(int(count.max(initial=0))):
        offered = t < count
        b = (su[:, t], sv[:, t])
        while True:
            check = offered & (length >= 2)
            if not check.any():
                break
            i1, i2 = np.maximum(length - 1, 0), np.maximum(length - 2, 0)
            turn = _cross((cu[rows, i2], cv[rows, i2]), (cu[rows, i1], cv[rows, i1]), b)
            pop = check & (turn <= 0)
            if not pop.any():
                break
            length -= pop
        at = rows[offered]
        cu[at, length[at]] = b[0][at]
        cv[at, length[at]] = b[1][at]
        length += offered
    return cu, cv, length


def _monotone_chain(ordered: list[list[float]]) -> list[list[float]]:
    """One half of Andrew's hull: the points in order, keeping only strict left turns (cross product > 0)."""
    chain: list[list[float]] = []
    for b in ordered:
        while len(chain) >= 2 and _cross(chain[-2], chain[-1], b) <= 0:
            chain.pop()
        chain.append(b)
    return chain


def _cross(o: Sequence[Any], a: Sequence[Any], b: Sequence[Any]) -> Any:
    """z of (a - o) x (b - o) for points given as (u, v) pairs of floats or of [N] arrays: > 0 for a left turn
    o -> a -> b. One expression for the sequential and the lockstep chain, so both round alike."""
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])
