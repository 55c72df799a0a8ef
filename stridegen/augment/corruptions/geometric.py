"""Corruptions that move pixels: lens distortion and elastic deformation.

Both are backward pixel maps (``PixelMap``): ``Corruption.warp`` returns the map, ``Corruption.apply`` samples the
image through it, and ``PixelMap.apply_mask`` samples binary masks through the same map (nearest neighbour), so the
stored object masks stay on their objects.
"""

from __future__ import annotations

import math
from functools import lru_cache

import cv2
import numpy as np

from stridegen.augment.corruptions.base import Corruption, PixelMap


def _pixel_grid(shape_hw: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    h, w = shape_hw
    return np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))


# --- lens distortion (IntelliCockpitBench "lens distortion"; model: Brown-Conrady radial term, table ours) --------
# Radial (barrel) distortion about the image centre, r normalised by the half diagonal: a destination pixel at
# radius r samples the source at r (1 + k r^2) / (1 + k). The 1 / (1 + k) keeps the corners fixed, so the whole frame
# stays filled (no black border) while the centre is magnified and straight lines bow outwards, as through a
# wide-angle lens. Brown (1966) "Decentering distortion of lenses"; the same polynomial as OpenCV's k1 term.
# Table k = [.1, .2, .35, .5, .7].
def lens_distortion_map(shape_hw: tuple[int, int], k: float, rng: np.random.Generator | None = None) -> PixelMap:
    """The barrel-distortion map of an image of ``shape_hw`` (no random draw). Built once per (shape, k) and
    shared: its arrays are read-only (building it costs more than the remap through it)."""
    return _lens_distortion_map(int(shape_hw[0]), int(shape_hw[1]), float(k))


@lru_cache(maxsize=4)  # a few camera sizes x severities; 2 float32 planes each (11.5 MB at 1600x900)
def _lens_distortion_map(h: int, w: int, k: float) -> PixelMap:
    grid_x, grid_y = _pixel_grid((h, w))
    cx, cy = (w - 1) * 0.5, (h - 1) * 0.5
    f = 0.5 * math.hypot(w - 1, h - 1)  # half diagonal between corner pixel centres: those stay fixed
    xn, yn = (grid_x - cx) / f, (grid_y - cy) / f
    scale = (1.0 + k * (xn * xn + yn * yn)) / (1.0 + k)
    map_x, map_y = (cx + f * xn * scale).astype(np.float32), (cy + f * yn * scale).astype(np.float32)
    map_x.flags.writeable = map_y.flags.writeable = False
    return PixelMap(map_x=map_x, map_y=map_y, border=cv2.BORDER_REPLICATE)


LENS_DISTORTION = Corruption(
    name="lens_distortion",
    params=(0.1, 0.2, 0.35, 0.5, 0.7),
    warp_fn=lens_distortion_map,
    random=False,
    sources=("IntelliCockpitBench (category); Brown-Conrady radial model; table: stridegen",),
    description="barrel distortion with the corners fixed (masks warped with it)",
)


# --- elastic deformation (imagecorruptions `elastic_transform`, after Simard et al. 2003) -------------------------
# imagecorruptions: displacements dx, dy ~ U(-0.005 H, 0.005 H) per pixel, smoothed by a Gaussian of sigma
# (0.01 H, 0.01 W) (rows, cols; truncated at 3 sigma, reflected border), scaled by
# alpha = 250 * [.05, .065, .085, .1, .12]; destination (r, c) samples the source at (r + dy, c + dx), bilinear,
# reflected border. Smoothing shrinks the noise by 1 / sqrt(4 pi sigma_x sigma_y), so that formula's displacement
# falls with resolution: at 224 x 224 its standard deviation is 0.0836 alpha px (0.47 % to 1.1 % of the side), at
# 1600 x 900 under 2 px (invisible). We keep its smoothing and alpha table and rescale the smoothed field to the
# relative amplitude it has at 224 px: std = 0.0836 alpha / 224 * min(H, W). (0.0836: measured with the 3-sigma
# truncated kernel; the untruncated value is (0.005 * 224 / sqrt(3)) / sqrt(4 pi (0.01 * 224)^2) = 0.0814.)
_ELASTIC_STD_PER_ALPHA = 0.0836 / 224.0


def elastic_map(shape_hw: tuple[int, int], alpha: float, rng: np.random.Generator) -> PixelMap:
    h, w = shape_hw
    sigma_y, sigma_x = 0.01 * h, 0.01 * w
    ksize = (2 * math.ceil(3.0 * sigma_x) + 1, 2 * math.ceil(3.0 * sigma_y) + 1)
    target_std = _ELASTIC_STD_PER_ALPHA * alpha * min(h, w)
    grid_x, grid_y = _pixel_grid(shape_hw)
    maps = []
    for grid in (grid_x, grid_y):
        noise = rng.uniform(-1.0, 1.0, size=(h, w)).astype(np.float32)
        smooth = cv2.GaussianBlur(noise, ksize, sigmaX=sigma_x, sigmaY=sigma_y, borderType=cv2.BORDER_REFLECT)
        smooth *= np.float32(target_std / max(float(smooth.std()), 1e-12))
        maps.append(grid + smooth)
    return PixelMap(map_x=maps[0], map_y=maps[1], border=cv2.BORDER_REFLECT)


ELASTIC = Corruption(
    name="elastic",
    params=tuple(250.0 * a for a in (0.05, 0.065, 0.085, 0.1, 0.12)),
    warp_fn=elastic_map,
    aliases=("elastic_transform",),
    sources=("ImageNet-C / imagecorruptions elastic_transform (amplitude made resolution-independent)",),
    description="smooth random elastic deformation (masks warped with it)",
)

GEOMETRIC = (LENS_DISTORTION, ELASTIC)
