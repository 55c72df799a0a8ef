"""Least-squares similarity alignment of two point sets (trajectories): Umeyama's closed form.

S. Umeyama, "Least-squares estimation of transformation parameters between two point patterns", IEEE TPAMI 13(4),
pp. 376-380, 1991: with the centred sets' covariance ``Sigma = Y_c^T X_c / n`` and its SVD ``U D V^T``, the
rotation is ``R = U S V^T`` (``S = diag(1, .., 1, det(U V^T))`` keeps it proper), the scale
``c = trace(D S) / sigma_x^2`` (eq. 42) and the translation ``t = mu_y - c R mu_x`` (eq. 41).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stridegen.core.errors import GeometryError


@dataclass(frozen=True)
class Similarity:
    """``p_dst = scale * R @ p_src + t``; ``residuals_m`` [N]: |aligned source - destination| per point."""

    rotation: np.ndarray
    translation: np.ndarray
    scale: float
    residuals_m: np.ndarray

    @property
    def matrix(self) -> np.ndarray:
        """The 4x4 matrix [[s R, t], [0, 1]] (a rigid transform when ``scale == 1``)."""
        out = np.eye(4)
        out[:3, :3] = self.scale * self.rotation
        out[:3, 3] = self.translation
        return out

    @property
    def rmse_m(self) -> float:
        return float(np.sqrt(np.mean(self.residuals_m**2))) if self.residuals_m.size else 0.0

    def apply(self, points: np.ndarray) -> np.ndarray:
        """Map [N, 3] source points into the destination frame."""
        return self.scale * np.asarray(points, dtype=np.float64) @ self.rotation.T + self.translation


def umeyama(source: np.ndarray, destination: np.ndarray, with_scale: bool = False) -> Similarity:
    """The SE(3) (``with_scale=False``) or Sim(3) transform minimising sum |dst - (s R src + t)|^2 over paired
    [N, 3] points (Umeyama 1991). Raises GeometryError for fewer than 3 pairs or a degenerate (collinear) set
    when the rotation about the line is undetermined."""
    x = np.asarray(source, dtype=np.float64)
    y = np.asarray(destination, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 2 or x.shape[1] != 3:
        raise GeometryError(f"umeyama needs two [N, 3] arrays of the same shape, got {x.shape} and {y.shape}")
    if x.shape[0] < 3:
        raise GeometryError(f"umeyama needs at least 3 point pairs, got {x.shape[0]}")
    mu_x, mu_y = x.mean(axis=0), y.mean(axis=0)
    xc, yc = x - mu_x, y - mu_y
    sigma = yc.T @ xc / x.shape[0]
    U, D, Vt = np.linalg.svd(sigma)
    if D[1] < 1e-12 * max(D[0], 1e-300):
        raise GeometryError("the source points are collinear (or all equal): the rotation is not determined")
    S = np.eye(3)
    if np.linalg.det(U) * np.linalg.det(Vt) < 0:
        S[2, 2] = -1.0
    R = U @ S @ Vt
    var_x = float((xc**2).sum() / x.shape[0])
    scale = float(np.trace(np.diag(D) @ S) / var_x) if with_scale else 1.0
    t = mu_y - scale * R @ mu_x
    residuals = np.linalg.norm(scale * x @ R.T + t - y, axis=1)
    return Similarity(R, t, scale, residuals)
