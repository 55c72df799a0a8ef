"""Sensor noise corruptions (ImageNet-C, Hendrycks & Dietterich 2019; tables from imagecorruptions).

Each output channel value depends on its input value only, through a random law, and is rounded (half to even)
and clipped to 0..255 as the reference's ``np.clip(x, 0, 1) * 255`` followed by uint8 storage does (the reference
truncates; we round). So each corruption is the exact per-level law of that rounded output, a 256 x 256 table
(``stridegen.augment.corruptions.sampling``), built once per severity and sampled by inversion (Gaussian noise,
whose output is clip(x + N) with N independent of x, uses one 256 x 256 offset table instead): the same
distribution as drawing the float noise and rounding it, at a fraction of the cost (4.3 million Poisson or
Gaussian draws at 1600x900 take 40-220 ms; 16 random bits and one table gather per value take about 10 ms).
"""

from __future__ import annotations

import math
from functools import lru_cache

import cv2
import numpy as np

from stridegen.augment.corruptions.base import Corruption
from stridegen.augment.corruptions.sampling import (
    IN_LEVELS,
    LevelLaw,
    OffsetLaw,
    add_offsets,
    level_law,
    rounded_gaussian_offsets,
    rounded_scaled_poisson_cdf,
    sample_levels,
)


# Gaussian noise: x/255 + N(0, c), c = [.08, .12, .18, .26, .38]; out = rint(x + 255 c Z) clipped
# = clip(x + rint(255 c Z)) (x is an integer): one offset law for every level, sampled by ``add_offsets``.
@lru_cache(maxsize=8)
def _gaussian_law(c: float) -> OffsetLaw:
    return rounded_gaussian_offsets(255.0 * c)


def _gaussian_noise(image_rgb: np.ndarray, c: float, rng: np.random.Generator) -> np.ndarray:
    return add_offsets(image_rgb, _gaussian_law(c), rng)


# Shot (Poisson) noise: Poisson(x/255 * c) / c, c = [60, 25, 12, 5, 3] photons at full scale;
# out = rint(255 P / c) clipped.
@lru_cache(maxsize=8)
def _shot_law(c: float) -> LevelLaw:
    return level_law(rounded_scaled_poisson_cdf(IN_LEVELS[:, 0] * (c / 255.0), 255.0 / c))


def _shot_noise(image_rgb: np.ndarray, c: float, rng: np.random.Generator) -> np.ndarray:
    return sample_levels(image_rgb, _shot_law(c), rng)


# Impulse (salt-and-pepper) noise, as skimage.util.random_noise(mode="s&p"): each channel value is replaced with
# probability c, by 0 or 255 with equal odds; c = [.03, .06, .09, .17, .27]. With U uniform on [0, 1): pepper (0)
# when U < c/2, salt (255) when c/2 <= U < c. U = (r + V) / 2^16 with r 16 random bits per value; r alone decides
# unless r is the bin holding c/2 or c, and only those values (2 in 65536) draw V (float64): the exact law.
def _impulse_noise(image_rgb: np.ndarray, c: float, rng: np.random.Generator) -> np.ndarray:
    values = image_rgb.reshape(image_rgb.shape[0], -1)  # (H, W * 3)
    r = rng.integers(0, 1 << 16, size=values.shape, dtype=np.uint16)
    half, full = 0.5 * c * 65536.0, c * 65536.0
    pepper = cv2.inRange(r, 0, math.floor(half) - 1)  # 255 where surely U < c/2
    salt = cv2.inRange(r, math.ceil(half), math.floor(full) - 1)  # 255 where surely c/2 <= U < c
    out = cv2.bitwise_or(cv2.bitwise_and(values, cv2.bitwise_not(pepper)), salt)
    edge = np.flatnonzero((r == math.floor(half)) | (r == math.floor(full)))
    if edge.size:
        u = (r.reshape(-1)[edge] + rng.random(edge.size)) * (1.0 / 65536.0)
        flat = out.reshape(-1)
        flat[edge] = np.where(u < 0.5 * c, 0, np.where(u < c, 255, values.reshape(-1)[edge]))
    return out.reshape(image_rgb.shape)


GAUSSIAN_NOISE = Corruption(
    name="gaussian_noise",
    params=(0.08, 0.12, 0.18, 0.26, 0.38),
    fn=_gaussian_noise,
    sources=("ImageNet-C / imagecorruptions gaussian_noise",),
    description="additive Gaussian noise",
)
SHOT_NOISE = Corruption(
    name="shot_noise",
    params=(60.0, 25.0, 12.0, 5.0, 3.0),
    fn=_shot_noise,
    sources=("ImageNet-C / imagecorruptions shot_noise",),
    description="Poisson photon noise",
)
IMPULSE_NOISE = Corruption(
    name="impulse_noise",
    params=(0.03, 0.06, 0.09, 0.17, 0.27),
    fn=_impulse_noise,
    sources=("ImageNet-C / imagecorruptions impulse_noise",),
    description="salt-and-pepper noise",
)

NOISE = (GAUSSIAN_NOISE, SHOT_NOISE, IMPULSE_NOISE)
