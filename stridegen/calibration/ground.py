"""The ground plane under a LiDAR sweep by RANSAC, and the sensor's height, pitch and roll above it.

RANSAC (M. A. Fischler, R. C. Bolles, "Random sample consensus", CACM 24(6), 1981): planes through three random
points, the one with the most points within ``threshold_m`` wins; it is refined by a least-squares fit (the
smallest principal axis of its inliers). Only planes whose normal lies within ``max_tilt_deg`` of the frame's z axis
are candidates, so walls and car sides are never taken for the ground.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stridegen.core.errors import GeometryError


@dataclass(frozen=True)
class GroundPlane:
    """The plane ``normal . p + offset = 0`` in the frame of the points it was fitted to (unit ``normal`` with
    positive z, so ``offset`` is the height of the frame's origin above the plane); ``inliers`` [N] bool."""

    normal: np.ndarray
    offset: float
    inliers: np.ndarray

    @property
    def height_m(self) -> float:
        """Height of the frame's origin above the plane (m)."""
        return float(self.offset)

    @property
    def pitch_deg(self) -> float:
        """Rotation of the frame about its y axis relative to the plane (degrees), positive nose down (the x axis
        dips below the plane's horizon): seen from the frame, the plane normal leans towards -x."""
        return float(np.degrees(np.arctan2(-self.normal[0], self.normal[2])))

    @property
    def roll_deg(self) -> float:
        """Rotation of the frame about its x axis relative to the plane (degrees), positive right side down (a
        positive rotation about x, y left): seen from the frame, the plane normal leans towards +y."""
        return float(np.degrees(np.arctan2(self.normal[1], self.normal[2])))

    def distance(self, points: np.ndarray) -> np.ndarray:
        """Signed height [N] of points above the plane (m)."""
        return np.asarray(points, dtype=np.float64)[:, :3] @ self.normal + self.offset


def fit_ground_plane(
    points: np.ndarray,
    rng: np.random.Generator,
    threshold_m: float = 0.08,
    iterations: int = 200,
    max_tilt_deg: float = 15.0,
    max_height_m: float | None = None,
) -> GroundPlane:
    """RANSAC ground plane of [N, >=3] points (x, y, z in a frame whose z axis is roughly up).

    ``max_height_m``: only points with ``z <= max_height_m`` are sampled and scored (e.g. 0 in a sensor frame
    above the road), which keeps roofs and canopies out of the draw.
    """
    xyz = np.asarray(points, dtype=np.float64)[:, :3]
    candidates = np.flatnonzero(xyz[:, 2] <= max_height_m) if max_height_m is not None else np.arange(len(xyz))
    if candidates.size < 3:
        raise GeometryError(f"ground plane needs at least 3 points, got {candidates.size}")
    cos_tilt = np.cos(np.radians(max_tilt_deg))
    picks = rng.integers(0, candidates.size, size=(iterations, 3))
    a, b, c = (xyz[candidates[picks[:, i]]] for i in range(3))
    normal = np.cross(b - a, c - a)
    norm = np.linalg.norm(normal, axis=1)
    ok = norm > 1e-9
    normal[ok] /= norm[ok, None]
    normal *= np.where(normal[:, 2:3] < 0, -1.0, 1.0)
    ok &= normal[:, 2] >= cos_tilt
    if not ok.any():
        raise GeometryError("no near-horizontal plane among the RANSAC samples")
    normal, a = normal[ok], a[ok]
    offset = -np.einsum("ij,ij->i", normal, a)
    sub = xyz[candidates] if candidates.size <= 20000 else xyz[candidates[:: candidates.size // 20000 + 1]]
    counts = (np.abs(sub @ normal.T + offset) <= threshold_m).sum(axis=0)
    best = int(np.argmax(counts))
    inliers = np.abs(xyz @ normal[best] + offset[best]) <= threshold_m
    return refine_plane(xyz, inliers, threshold_m)


def refine_plane(xyz: np.ndarray, inliers: np.ndarray, threshold_m: float) -> GroundPlane:
    """Least-squares plane of the inlier points (normal: the smallest principal axis), inliers re-selected."""
    pts = xyz[inliers]
    if pts.shape[0] < 3:
        raise GeometryError(f"ground plane has {pts.shape[0]} inliers")
    centroid = pts.mean(axis=0)
    _, _, vt = np.linalg.svd(pts - centroid, full_matrices=False)
    normal = vt[2] if vt[2, 2] >= 0 else -vt[2]
    offset = float(-normal @ centroid)
    return GroundPlane(normal, offset, np.abs(xyz @ normal + offset) <= threshold_m)
