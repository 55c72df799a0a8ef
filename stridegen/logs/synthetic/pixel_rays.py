"""Pixel rays of a pinhole camera rotated into a target frame: ray(u, v) = K^-1 [u, v, 1] (camera z = 1, so a
hit's ray parameter is its z-depth), evaluated in float32 over grids of pixel coordinates centred on the principal
point. Used by the synthetic renderer (``stridegen.logs.synthetic.render``) and its background."""

from __future__ import annotations

import numpy as np


def pixel_ray_basis(intrinsic: np.ndarray, R_to_from_cam: np.ndarray) -> np.ndarray:
    """[3, 3] matrix M with ray(u, v) = M[:, 0] * (u - cx) + M[:, 1] * (v - cy) + M[:, 2] in the target frame.

    The ray is K^-1 [u, v, 1] rotated into the target frame; its camera z component is 1, so the ray parameter
    of a hit is its z-depth. Pixel coordinates are taken relative to the principal point so that float32
    evaluation does not lose precision to cancellation near the optical axis.
    """
    k = np.asarray(intrinsic, dtype=np.float64)
    centring = np.array([[1.0, 0.0, k[0, 2]], [0.0, 1.0, k[1, 2]], [0.0, 0.0, 1.0]])
    return R_to_from_cam @ np.linalg.inv(k) @ centring


def centred_grid(c0: int, c1: int, r0: int, r1: int, intrinsic: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float32 (u - cx for columns c0..c1, v - cy for rows r0..r1), inclusive ranges."""
    u = (np.arange(c0, c1 + 1, dtype=np.float64) - intrinsic[0, 2]).astype(np.float32)
    v = (np.arange(r0, r1 + 1, dtype=np.float64) - intrinsic[1, 2]).astype(np.float32)
    return u, v


def ray_component(basis_row: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """One component of the pixel rays over a centred grid (rows v, cols u): a * u + b * v + c, [len(v), len(u)].

    The dtype is that of ``u`` and ``v``.
    """
    dtype = u.dtype.type
    a, b, c = (dtype(x) for x in basis_row)
    return (a * u)[None, :] + (b * v + c)[:, None]
