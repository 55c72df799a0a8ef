"""Sensor noise corruptions (ImageNet-C, Hendrycks & Dietterich 2019; tables from imagecorruptions)."""

from __future__ import annotations

import numpy as np

from stridegen.augment.corruptions.base import Corruption, to_uint8


# Gaussian noise: x/255 + N(0, c), c = [.08, .12, .18, .26, .38].
def _gaussian_noise(image_rgb: np.ndarray, c: float, rng: np.random.Generator) -> np.ndarray:
    noise = rng.standard_normal(image_rgb.shape, dtype=np.float32)
    noise *= np.float32(255.0 * c)
    noise += image_rgb
    return to_uint8(noise)


# Shot (Poisson) noise: Poisson(x/255 * c) / c, c = [60, 25, 12, 5, 3] photons at full scale.
def _shot_noise(image_rgb: np.ndarray, c: float, rng: np.random.Generator) -> np.ndarray:
    lam = image_rgb.astype(np.float32) * np.float32(c / 255.0)
    return to_uint8(rng.poisson(lam).astype(np.float32), 255.0 / c)


# Impulse (salt-and-pepper) noise, as skimage.util.random_noise(mode="s&p"): each channel value is replaced with
# probability c, by 0 or 255 with equal odds; c = [.03, .06, .09, .17, .27].
def _impulse_noise(image_rgb: np.ndarray, c: float, rng: np.random.Generator) -> np.ndarray:
    u = rng.random(image_rgb.shape, dtype=np.float32)
    out = image_rgb.copy()
    out[u < c * 0.5] = 0
    out[(u >= c * 0.5) & (u < c)] = 255
    return out


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
