"""Photometric corruptions: pixel values change, geometry does not.

Most are per-pixel functions evaluated through 256-entry lookup tables (cv2.LUT), or HSV edits done in closed
form on RGB (an HSV edit that keeps hue and changes V or S is a per-pixel affine map of the RGB channels), which
is what makes them fast at 1600x900.
"""

from __future__ import annotations

import cv2
import numpy as np

from stridegen.augment.corruptions.base import Corruption, to_uint8
from stridegen.formats.images import encode_jpeg

_LEVELS = np.arange(256, dtype=np.float32)


def _lut(image_rgb: np.ndarray, table: np.ndarray) -> np.ndarray:
    return cv2.LUT(image_rgb, to_uint8(table))


def _channel_max_min(image_rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r, g, b = cv2.split(image_rgb)
    return cv2.max(cv2.max(r, g), b), cv2.min(cv2.min(r, g), b)


# --- brightness (ImageNet-C, Hendrycks & Dietterich 2019; imagecorruptions `brightness`) -------------------------
# Formula: convert to HSV, V <- clip(V + c, 0, 1), convert back. With hue and saturation fixed, every channel is
# proportional to V (RGB = V * (1 - S * f(H))), so the edit is RGB * V'/V; a black pixel (V = 0, S = 0) becomes the
# grey V'. Severity table c = [.1, .2, .3, .4, .5] from imagecorruptions.
def _brightness(image_rgb: np.ndarray, c: float, rng: np.random.Generator) -> np.ndarray:
    v_max, _ = _channel_max_min(image_rgb)
    v_new = np.minimum(_LEVELS + 255.0 * c, 255.0)
    ratio_lut = v_new / np.maximum(_LEVELS, 1.0)
    ratio = ratio_lut[v_max]
    out = cv2.multiply(image_rgb, cv2.merge([ratio, ratio, ratio]), dtype=cv2.CV_8U)  # rounds, saturates
    out[v_max == 0] = np.uint8(round(float(v_new[0])))
    return out


BRIGHTNESS = Corruption(
    name="brightness",
    params=(0.1, 0.2, 0.3, 0.4, 0.5),
    fn=_brightness,
    random=False,
    sources=("ImageNet-C / imagecorruptions brightness", "nuScenes-C (RoboBEV)", "DriveBench"),
    description="HSV value + c (brighter, washed out)",
)


# --- reduced brightness (IntelliCockpitBench "reduced brightness"; table ours) ------------------------------------
# An exposure cut in linear light: lin = (x/255)^2.2 (sRGB approximated by gamma 2.2, IEC 61966-2-1), lin *= g,
# back to gamma space. g = [0.5, 0.35, 0.22, 0.13, 0.07] is about -1 to -3.8 EV. Noise-free (low_light adds noise).
_GAMMA = 2.2


def _exposure_lut(gain: float) -> np.ndarray:
    linear = (_LEVELS / 255.0) ** _GAMMA
    return np.clip(linear * gain, 0.0, 1.0) ** (1.0 / _GAMMA) * 255.0


def _reduced_brightness(image_rgb: np.ndarray, gain: float, rng: np.random.Generator) -> np.ndarray:
    return _lut(image_rgb, _exposure_lut(gain))


REDUCED_BRIGHTNESS = Corruption(
    name="reduced_brightness",
    params=(0.5, 0.35, 0.22, 0.13, 0.07),
    fn=_reduced_brightness,
    random=False,
    sources=("IntelliCockpitBench (category); exposure model and table: stridegen",),
    description="exposure cut in linear light (-1 to -3.8 EV)",
)


# --- overexposure (IntelliCockpitBench "overexposure"; table ours) -----------------------------------------------
# Exposure gain in linear light with sensor clipping: highlights saturate to white. g = [1.6, 2.2, 3.2, 4.8, 7]
# (about +0.7 to +2.8 EV).
def _overexposure(image_rgb: np.ndarray, gain: float, rng: np.random.Generator) -> np.ndarray:
    return _lut(image_rgb, _exposure_lut(gain))


OVEREXPOSURE = Corruption(
    name="overexposure",
    params=(1.6, 2.2, 3.2, 4.8, 7.0),
    fn=_overexposure,
    random=False,
    sources=("IntelliCockpitBench (category); exposure model and table: stridegen",),
    description="exposure gain in linear light with clipped highlights (+0.7 to +2.8 EV)",
)


# --- low light (nuScenes-C / RoboBEV `LowLight`, also DriveBench "dark") -----------------------------------------
# RoboBEV: y = ((x - min) / (max - min))^2 * c (MATLAB-style imadjust to [0, c] with gamma 2), then
# Poisson-Gaussian sensor noise: Poisson(y * k) / k with k = 10 * [60, 25, 12, 5, 3], plus N(0, 0.1 * s) with
# s = [.08, .12, .18, .26, .38]; c = [.6, .5, .4, .3, .2]. (RoboBEV indexes these lists with the 1-based severity,
# which skips the first entry and overruns at 5; we index them with severity - 1.)
def _low_light(image_rgb: np.ndarray, params: tuple[float, float, float], rng: np.random.Generator) -> np.ndarray:
    c, k_poisson, sigma = params
    lo, hi = float(image_rgb.min()), float(image_rgb.max())
    stretched = ((_LEVELS - lo) / max(hi - lo, 1.0)).clip(0.0, 1.0) ** 2 * np.float32(c * k_poisson)
    noisy = rng.poisson(stretched[image_rgb]).astype(np.float32) / np.float32(k_poisson)  # Poisson(k y) / k
    np.clip(noisy, 0.0, 1.0, out=noisy)
    noisy += rng.standard_normal(noisy.shape, dtype=np.float32) * np.float32(sigma)
    return to_uint8(noisy, 255.0)


LOW_LIGHT = Corruption(
    name="low_light",
    params=((0.6, 600.0, 0.008), (0.5, 250.0, 0.012), (0.4, 120.0, 0.018), (0.3, 50.0, 0.026), (0.2, 30.0, 0.038)),
    fn=_low_light,
    aliases=("dark",),
    sources=("nuScenes-C (RoboBEV LowLight)", "DriveBench dark"),
    description="gamma-2 darkening to [0, c] plus Poisson-Gaussian sensor noise",
)


# --- contrast (ImageNet-C / imagecorruptions `contrast`) -----------------------------------------------------------
# (x - mean_channel) * c + mean_channel, c = [.4, .3, .2, .1, .05].
def _contrast(image_rgb: np.ndarray, c: float, rng: np.random.Generator) -> np.ndarray:
    means = cv2.mean(image_rgb)[:3]
    tables = [(_LEVELS - m) * c + m for m in means]
    return cv2.LUT(image_rgb, to_uint8(np.stack(tables, axis=1)).reshape(256, 1, 3))


CONTRAST = Corruption(
    name="contrast",
    params=(0.4, 0.3, 0.2, 0.1, 0.05),
    fn=_contrast,
    random=False,
    sources=("ImageNet-C / imagecorruptions contrast",),
    description="contrast scaled towards the channel means",
)


# --- saturation (ImageNet-C extra `saturate`, used by DriveBench "saturate") -------------------------------------
# HSV S <- clip(S * a + b, 0, 1). With V and H fixed, V - channel is proportional to S, so each channel becomes
# V - (V - channel) * S'/S. A grey pixel (S = 0) has hue 0 (red) in the HSV convention, so it becomes
# (V, V(1 - S'), V(1 - S')). Table (a, b) = [(.3, 0), (.1, 0), (2, 0), (5, .1), (20, .2)]: levels 1-2 wash colours
# out, 3-5 oversaturate.
def _saturation(image_rgb: np.ndarray, params: tuple[float, float], rng: np.random.Generator) -> np.ndarray:
    a, b = params
    v_max, v_min = _channel_max_min(image_rgb)
    v = v_max.astype(np.float32)
    s = (v - v_min.astype(np.float32)) / np.maximum(v, 1.0)
    s_new = np.clip(s * a + b, 0.0, 1.0)
    grey = s <= 0
    ratio = np.where(grey, 0.0, s_new / np.where(grey, 1.0, s)).astype(np.float32)
    x = image_rgb.astype(np.float32)
    v3 = v[..., None]
    out = v3 - (v3 - x) * ratio[..., None]
    if b > 0:
        grey_new = v[grey] * (1.0 - s_new[grey])
        out[grey, 1] = grey_new
        out[grey, 2] = grey_new
    return to_uint8(out)


SATURATION = Corruption(
    name="saturation",
    params=((0.3, 0.0), (0.1, 0.0), (2.0, 0.0), (5.0, 0.1), (20.0, 0.2)),
    fn=_saturation,
    random=False,
    aliases=("saturate",),
    sources=("ImageNet-C extra / imagecorruptions saturate", "DriveBench saturate"),
    description="HSV saturation scaled (washed out at 1-2, oversaturated at 3-5)",
)


# --- grayscale (IntelliCockpitBench "grayscale"; table ours) -----------------------------------------------------
# Blend towards ITU-R BT.601 luma (what cv2.COLOR_RGB2GRAY computes); level 5 is the full grayscale image.
def _grayscale(image_rgb: np.ndarray, alpha: float, rng: np.random.Generator) -> np.ndarray:
    grey = cv2.cvtColor(cv2.cvtColor(image_rgb, cv2.COLOR_RGB2GRAY), cv2.COLOR_GRAY2RGB)
    if alpha >= 1.0:
        return grey
    return cv2.addWeighted(image_rgb, 1.0 - alpha, grey, alpha, 0.0)


GRAYSCALE = Corruption(
    name="grayscale",
    params=(0.2, 0.4, 0.6, 0.8, 1.0),
    fn=_grayscale,
    random=False,
    sources=("IntelliCockpitBench (category); blend table: stridegen",),
    description="colour removed (blend to BT.601 luma; 5 = grayscale)",
)


# --- colour quantization (nuScenes-C / RoboBEV `ColorQuant`, DriveBench) -----------------------------------------
# PIL-style posterize: keep the top `bits` bits of each channel. RoboBEV uses bits = 5 - severity, which gives
# 0 bits (a black image) at severity 5; we use bits = 6 - severity = [5, 4, 3, 2, 1].
def _color_quantization(image_rgb: np.ndarray, bits: int, rng: np.random.Generator) -> np.ndarray:
    keep = np.uint8((0xFF << (8 - bits)) & 0xFF)
    return cv2.LUT(image_rgb, np.arange(256, dtype=np.uint8) & keep)


COLOR_QUANTIZATION = Corruption(
    name="color_quantization",
    params=(5, 4, 3, 2, 1),
    fn=_color_quantization,
    random=False,
    aliases=("color_quant",),
    sources=("nuScenes-C (RoboBEV ColorQuant)", "DriveBench color quant"),
    description="posterize to 5..1 bits per channel",
)


# --- JPEG compression (ImageNet-C / imagecorruptions `jpeg_compression`) -----------------------------------------
# Encode and decode at quality [25, 18, 15, 10, 7]. DriveBench's video codec corruptions (H.265, bit errors) need
# ffmpeg; JPEG is the still-image compression artefact.
def _jpeg(image_rgb: np.ndarray, quality: int, rng: np.random.Generator) -> np.ndarray:
    decoded = cv2.imdecode(encode_jpeg(image_rgb, quality), cv2.IMREAD_COLOR)
    if decoded is None:  # pragma: no cover - OpenCV decodes what it has just encoded
        raise RuntimeError("JPEG decoding failed")
    return cv2.cvtColor(decoded, cv2.COLOR_BGR2RGB)


JPEG_COMPRESSION = Corruption(
    name="jpeg_compression",
    params=(25, 18, 15, 10, 7),
    fn=_jpeg,
    random=False,
    aliases=("jpeg",),
    sources=("ImageNet-C / imagecorruptions jpeg_compression", "DriveBench (compression family)"),
    description="JPEG re-encoding at quality 25..7",
)

PHOTOMETRIC = (
    BRIGHTNESS,
    REDUCED_BRIGHTNESS,
    OVEREXPOSURE,
    LOW_LIGHT,
    CONTRAST,
    SATURATION,
    GRAYSCALE,
    COLOR_QUANTIZATION,
    JPEG_COMPRESSION,
)
