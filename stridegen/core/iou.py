"""Overlap of boxes: IoU of axis-aligned 2D boxes (x0, y0, x1, y1) and rotated bird's-eye-view IoU of yaw-only
boxes (convex quadrilateral intersection, Sutherland-Hodgman)."""

from __future__ import annotations

import numpy as np

from stridegen.core.box_geometry import bev_corners
from stridegen.core.errors import GeometryError


def box_area_xyxy(boxes: np.ndarray) -> np.ndarray:
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    return np.clip(boxes[:, 2] - boxes[:, 0], 0, None) * np.clip(boxes[:, 3] - boxes[:, 1], 0, None)


def iou_2d(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairwise IoU [N, M] of axis-aligned boxes (x0, y0, x1, y1). Empty unions give 0."""
    a = np.asarray(a, dtype=np.float64).reshape(-1, 4)
    b = np.asarray(b, dtype=np.float64).reshape(-1, 4)
    return _iou_xyxy(a[:, None, :], b[None, :, :], box_area_xyxy(a)[:, None], box_area_xyxy(b)[None, :])


def iou_2d_rowwise(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """[N] IoU of box ``a[i]`` with box ``b[i]``: ``iou_2d(a, b).diagonal()``, the same numbers, without the
    N x N matrix."""
    a = np.asarray(a, dtype=np.float64).reshape(-1, 4)
    b = np.asarray(b, dtype=np.float64).reshape(-1, 4)
    if a.shape != b.shape:
        raise GeometryError(f"iou_2d_rowwise needs as many boxes on both sides, got {a.shape[0]} and {b.shape[0]}")
    # _iou_xyxy's operations, element for element, on (x, y) column pairs: a few boxes per call (an image's), so
    # the cost is numpy's per-call overhead. np.clip(v, 0, None) is np.maximum(v, 0) (numpy's _clip), and a divide
    # where union > 0 into zeros is np.where(union > 0, inter / union, 0.0) without the errstate context.
    wh = np.maximum(np.minimum(a[:, 2:], b[:, 2:]) - np.maximum(a[:, :2], b[:, :2]), 0.0)
    size_a = np.maximum(a[:, 2:] - a[:, :2], 0.0)
    size_b = np.maximum(b[:, 2:] - b[:, :2], 0.0)
    inter = wh[:, 0] * wh[:, 1]
    union = size_a[:, 0] * size_a[:, 1] + size_b[:, 0] * size_b[:, 1] - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def _iou_xyxy(a: np.ndarray, b: np.ndarray, area_a: np.ndarray, area_b: np.ndarray) -> np.ndarray:
    """IoU of broadcast boxes [..., 4] with their areas (elementwise: each pair gets the same operations)."""
    ix0 = np.maximum(a[..., 0], b[..., 0])
    iy0 = np.maximum(a[..., 1], b[..., 1])
    ix1 = np.minimum(a[..., 2], b[..., 2])
    iy1 = np.minimum(a[..., 3], b[..., 3])
    inter = np.clip(ix1 - ix0, 0, None) * np.clip(iy1 - iy0, 0, None)
    union = area_a + area_b - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, inter / union, 0.0)


# ---------------------------------------------------------------------------------------------- rotated BEV IoU


def _polygon_area(poly: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Shoelace area of padded polygons [P, V, 2] whose first ``count`` vertices are valid (ccw)."""
    v = poly.shape[1]
    idx = np.arange(v)
    valid = idx[None, :] < count[:, None]
    nxt = np.where(idx[None, :] + 1 < count[:, None], idx[None, :] + 1, 0)
    pn = np.take_along_axis(poly, nxt[..., None].repeat(2, axis=-1), axis=1)
    cross = poly[..., 0] * pn[..., 1] - poly[..., 1] * pn[..., 0]
    return 0.5 * np.abs(np.sum(np.where(valid, cross, 0.0), axis=1))


def convex_intersection_area(subject: np.ndarray, clip: np.ndarray) -> np.ndarray:
    """Area of the intersection of pairs of convex ccw quadrilaterals, [P, 4, 2] each (Sutherland-Hodgman).

    Vectorised over pairs: polygons are padded to 8 vertices with a per-pair vertex count.
    """
    p = subject.shape[0]
    max_v = 8
    poly = np.zeros((p, max_v, 2))
    poly[:, :4] = subject
    count = np.full(p, 4)
    rows = np.arange(p)
    for e in range(4):
        a = clip[:, e]
        b = clip[:, (e + 1) % 4]
        edge = b - a

        def side(pt: np.ndarray, a: np.ndarray = a, edge: np.ndarray = edge) -> np.ndarray:
            # > 0: left of the edge (inside for a ccw clip polygon)
            return edge[:, None, 0] * (pt[..., 1] - a[:, None, 1]) - edge[:, None, 1] * (pt[..., 0] - a[:, None, 0])

        idx = np.arange(max_v)
        valid = idx[None, :] < count[:, None]
        nxt = np.where(idx[None, :] + 1 < count[:, None], idx[None, :] + 1, 0)
        cur = poly
        nex = poly[rows[:, None], nxt]
        s_cur = side(cur)
        s_nex = side(nex)
        in_cur = s_cur >= 0
        in_nex = s_nex >= 0
        with np.errstate(divide="ignore", invalid="ignore"):
            t = s_cur / (s_cur - s_nex)
        t = np.where(np.isfinite(t), t, 0.0)  # only used where the edge crosses (s_cur, s_nex differ in sign)
        inter = cur + t[..., None] * (nex - cur)
        # Each input vertex emits up to two output vertices: [cur if inside] + [intersection if the edge crosses].
        emit_cur = valid & in_cur
        emit_int = valid & (in_cur != in_nex)
        out_pts = np.stack([cur, inter], axis=2).reshape(p, 2 * max_v, 2)
        emit = np.stack([emit_cur, emit_int], axis=2).reshape(p, 2 * max_v)
        order = np.argsort(~emit, axis=1, kind="stable")
        packed = np.take_along_axis(out_pts, order[..., None].repeat(2, axis=-1), axis=1)
        count = np.minimum(emit.sum(axis=1), max_v)
        poly = np.where((np.arange(max_v)[None, :] < count[:, None])[..., None], packed[:, :max_v], 0.0)
    area = _polygon_area(poly, count)
    return np.where(count >= 3, area, 0.0)


def bev_iou(
    center_xy_a: np.ndarray,
    size_lw_a: np.ndarray,
    yaw_a: np.ndarray,
    center_xy_b: np.ndarray,
    size_lw_b: np.ndarray,
    yaw_b: np.ndarray,
) -> np.ndarray:
    """Pairwise rotated bird's-eye-view IoU [N, M] of yaw-only boxes."""
    ca = bev_corners(center_xy_a, size_lw_a, yaw_a)
    cb = bev_corners(center_xy_b, size_lw_b, yaw_b)
    n, m = ca.shape[0], cb.shape[0]
    if n == 0 or m == 0:
        return np.zeros((n, m))
    area_a = np.prod(np.asarray(size_lw_a, dtype=np.float64).reshape(-1, 2), axis=1)
    area_b = np.prod(np.asarray(size_lw_b, dtype=np.float64).reshape(-1, 2), axis=1)
    # Only pairs whose bounding circles overlap can intersect.
    ra = 0.5 * np.hypot(*np.asarray(size_lw_a, dtype=np.float64).reshape(-1, 2).T)
    rb = 0.5 * np.hypot(*np.asarray(size_lw_b, dtype=np.float64).reshape(-1, 2).T)
    da = np.asarray(center_xy_a, dtype=np.float64).reshape(-1, 2)
    db = np.asarray(center_xy_b, dtype=np.float64).reshape(-1, 2)
    dist = np.linalg.norm(da[:, None] - db[None], axis=-1)
    ii, jj = np.nonzero(dist <= ra[:, None] + rb[None, :])
    out = np.zeros((n, m))
    if ii.size:
        inter = convex_intersection_area(ca[ii], cb[jj])
        union = area_a[ii] + area_b[jj] - inter
        with np.errstate(divide="ignore", invalid="ignore"):
            out[ii, jj] = np.where(union > 0, inter / union, 0.0)
    return out
