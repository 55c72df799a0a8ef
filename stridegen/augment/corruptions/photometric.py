"""Photometric corruptions: pixel values change, geometry does not.

Everything runs on uint8 with single OpenCV / StringZilla passes: per-level tables (byte translation, see
``base.lookup_uint8``), per-channel affine maps (one table plus per-channel integer offsets), and HSV edits done in
closed form on RGB (an HSV edit that keeps hue and changes V or S is a per-pixel scaling of the RGB channels,
written as a saturating uint8 division or a per-level table). No float64 image. Channel planes come from one
cv2.split into reused buffers (~0.1 ms at 1600x900, a third of one cv2.extractChannel) and go back with cv2.merge
into the result.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache

import cv2
import numpy as np

from stridegen.augment.corruptions.base import Corruption, lookup_uint8, scratch, to_uint8
from stridegen.augment.corruptions.sampling import IN_LEVELS, LevelLaw, level_law, rounded_gaussian_cdf, sample_levels
from stridegen.formats.images import decode_image, encode_jpeg

_LEVELS = np.arange(256, dtype=np.float32)
_LEVELS_U8 = np.arange(256, dtype=np.uint8)[None, :]  # the 256 levels as a 1 x 256 image (``_per_level``)


def _broadcast3(plane: np.ndarray, dst: np.ndarray | None = None) -> np.ndarray:
    """(H, W) -> (H, W, 3), the plane in every channel (uint8 or float32), into ``dst`` if given."""
    return cv2.cvtColor(plane, cv2.COLOR_GRAY2RGB, dst=dst)


def _planes(site: str, shape_hw: tuple[int, ...], count: int, dtype: type) -> list[np.ndarray]:
    """``count`` (H, W) work planes of one reusable block (``scratch``): every intermediate of the photometric edits
    is written into such buffers (``dst=``) instead of letting OpenCV allocate a fresh result per step."""
    return list(scratch(site, (count, *shape_hw), dtype))


def _split(image_rgb: np.ndarray, site: str, extra: int = 0) -> list[np.ndarray]:
    """The three channel planes of ``image_rgb`` in reused buffers (one cv2.split), plus ``extra`` work planes."""
    planes = _planes(site, image_rgb.shape[:2], 3 + extra, np.uint8)
    cv2.split(image_rgb, planes[:3])
    return planes


def _per_level(op: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """The 256-entry uint8 table of an element-wise OpenCV op, computed by the op itself on the levels 0..255, so a
    table lookup gives the very bytes the op gives on an image (same SIMD rounding)."""
    return np.ascontiguousarray(op(_LEVELS_U8)).reshape(256)


def channel_affine(
    image_rgb: np.ndarray, scale: float, offsets: tuple[float, float, float], dst: np.ndarray | None = None
) -> np.ndarray:
    """round(scale * x + offsets[c]) per channel c, saturated to uint8 (scale >= 0); into the C-contiguous ``dst``
    if given (which may be ``image_rgb`` itself: both passes are element-wise).

    y = convertScaleAbs(x, scale, f) with f the fractional part of offsets[0], then + round(offsets[c] - f) per
    channel, saturated. Offsets whose fractional parts differ from f are thereby moved by at most 1/2 level (before
    the final rounding). The first step is one byte translation with the table convertScaleAbs gives on the levels
    0..255 (~0.1 ms at 1600x900 against ~0.5 ms); the offsets are added in one numpy pass over the rows (a tiled row
    of the three offsets, ~0.1 ms against ~0.2 ms for cv2.add's Scalar), which wraps around instead of saturating:
    taken only when the table's range plus the offsets stays within 0..255 (contrast's and rain's convex blends),
    cv2.add otherwise. Same bytes as the two OpenCV passes (tested).
    """
    frac = offsets[0] - math.floor(offsets[0])
    ints = [round(o - frac) for o in offsets]
    table = _per_level(lambda levels: cv2.convertScaleAbs(levels, alpha=float(scale), beta=frac))  # >= 0: no abs
    scaled = lookup_uint8(image_rgb, table)
    out = scaled if dst is None else dst
    in_range = int(table.min()) + min(ints) >= 0 and int(table.max()) + max(ints) <= 255
    if in_range and out.flags.c_contiguous:  # sums in 0..255: wrap = saturate; a row view needs contiguous rows
        row = np.tile(np.array(ints, dtype=np.int64) % 256, image_rgb.shape[1]).astype(np.uint8)
        h = image_rgb.shape[0]
        return np.add(scaled.reshape(h, -1), row, out=out.reshape(h, -1)).reshape(image_rgb.shape)
    return cv2.add(scaled, (*map(float, ints), 0.0), dst=out)  # type: ignore[call-overload]  # a Scalar


def channel_means(image_rgb: np.ndarray) -> tuple[float, float, float]:
    """Mean of each channel, exact (cv2.sumElems accumulates in float64; 25x faster than cv2.mean on 3 channels)."""
    sums = cv2.sumElems(image_rgb)
    n = image_rgb.shape[0] * image_rgb.shape[1]
    return sums[0] / n, sums[1] / n, sums[2] / n


# --- brightness (ImageNet-C, Hendrycks & Dietterich 2019; imagecorruptions `brightness`) -------------------------
# Formula: convert to HSV, V <- clip(V + c, 0, 1), convert back. With hue and saturation fixed, every channel is
# proportional to V (RGB = V * (1 - S * f(H))), so the edit is RGB * V'/V; a black pixel (V = 0, S = 0) becomes the
# grey V'. Severity table c = [.1, .2, .3, .4, .5] from imagecorruptions.
#
# With V' = min(V + k, 255), k = 255 c, x V'/V = min(x + k x/V, 255 x/V); rounding is monotone, so
# out = min(x + round(k x/V), round(255 x/V)): two saturating uint8 divisions (cv2.divide rounds a * scale / b).
def _brightness(image_rgb: np.ndarray, c: float, rng: np.random.Generator) -> np.ndarray:
    planes = _split(image_rgb, "brightness", extra=1)
    v_max = cv2.max(cv2.max(planes[0], planes[1], dst=planes[3]), planes[2], dst=planes[3])
    v3 = _broadcast3(v_max, scratch("brightness-v3", image_rgb.shape, np.uint8))
    k = 255.0 * c
    out = cv2.divide(image_rgb, v3, dst=np.empty_like(image_rgb), scale=k)
    cv2.add(image_rgb, out, dst=out)
    cv2.min(out, cv2.divide(image_rgb, v3, dst=v3, scale=255.0), dst=out)
    black = cv2.compare(v_max, 0, cv2.CMP_EQ, dst=planes[0])  # type: ignore[call-overload]  # V = 0: cv2.divide gives 0; the grey V' = round(k) is meant
    if cv2.countNonZero(black):
        grey = float(round(k))
        out = cv2.add(out, (grey, grey, grey, 0.0), dst=out, mask=black)  # type: ignore[call-overload]
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


@lru_cache(maxsize=16)
def _exposure_lut(gain: float) -> np.ndarray:
    """The uint8 table of an exposure gain in linear light (built once per gain)."""
    linear = (_LEVELS / 255.0) ** _GAMMA
    return to_uint8(np.clip(linear * gain, 0.0, 1.0) ** (1.0 / _GAMMA) * 255.0)


def _reduced_brightness(image_rgb: np.ndarray, gain: float, rng: np.random.Generator) -> np.ndarray:
    return lookup_uint8(image_rgb, _exposure_lut(gain))


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
    return lookup_uint8(image_rgb, _exposure_lut(gain))


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
# The output rint(255 (min(P / k, 1) + sigma Z)), clipped, depends on x alone, so it is drawn from its exact law
# (stridegen.augment.corruptions.sampling): P(out <= y | x) = sum_p Poisson(p; lambda_x) Phi((y + 1/2 - 255 min(p/k,
# 1)) / (255 sigma)), lambda_x = c k stretch(x)^2, counts p >= k lumped (they all give 1 before the Gaussian).
@lru_cache(maxsize=32)
def low_light_law(lo: int, hi: int, params: tuple[float, float, float]) -> LevelLaw:
    """The per-level output law of ``low_light`` for an image whose values span [lo, hi]."""
    from scipy.special import gammaln, xlogy

    c, k_poisson, sigma = params
    stretch = np.clip((IN_LEVELS[:, 0] - lo) / max(hi - lo, 1.0), 0.0, 1.0)
    lam = (stretch**2 * (c * k_poisson))[:, None]
    counts = np.arange(math.ceil(k_poisson) + 1, dtype=np.float64)  # 0..K, K = ceil(k): P >= K gives 1
    pmf = np.exp(xlogy(counts, lam) - lam - gammaln(counts + 1.0))  # Poisson pmf, p log(lam) - lam - log(p!)
    pmf[:, -1] = np.maximum(1.0 - pmf[:, :-1].sum(axis=1), 0.0)  # P(P >= K)
    signal = 255.0 * np.minimum(counts / k_poisson, 1.0)[:, None]
    return level_law(pmf @ rounded_gaussian_cdf(signal, 255.0 * sigma), bits=12)


def _low_light(image_rgb: np.ndarray, params: tuple[float, float, float], rng: np.random.Generator) -> np.ndarray:
    lo, hi = cv2.minMaxLoc(image_rgb.reshape(image_rgb.shape[0], -1))[:2]
    return sample_levels(image_rgb, low_light_law(int(lo), int(hi), params), rng)


LOW_LIGHT = Corruption(
    name="low_light",
    params=((0.6, 600.0, 0.008), (0.5, 250.0, 0.012), (0.4, 120.0, 0.018), (0.3, 50.0, 0.026), (0.2, 30.0, 0.038)),
    fn=_low_light,
    aliases=("dark",),
    sources=("nuScenes-C (RoboBEV LowLight)", "DriveBench dark"),
    description="gamma-2 darkening to [0, c] plus Poisson-Gaussian sensor noise",
)


# --- contrast (ImageNet-C / imagecorruptions `contrast`) -----------------------------------------------------------
# (x - mean_channel) * c + mean_channel, c = [.4, .3, .2, .1, .05]: c x + (1 - c) mean_channel per channel.
def _contrast(image_rgb: np.ndarray, c: float, rng: np.random.Generator) -> np.ndarray:
    offsets = tuple((1.0 - c) * m for m in channel_means(image_rgb))
    return channel_affine(image_rgb, c, offsets)  # type: ignore[arg-type]


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
#
# Per pixel, with R = V - min (the chroma) and S = R / V: out = V - (V - x) S'/S, and
# S'/S = clip(a S + b, 0, 1) / S = min(a + b V/R, V/R) (a, b >= 0). That ratio is computed once per pixel in float32
# (one plane) and applied per channel plane as one rounding uint8 x float32 product.
#
# With b = 0 the ratio is the constant a wherever a S <= 1, i.e. V >= a R: there out = V - round(a (V - x)), a table
# of V - x (the same float32 product, tabled on the levels 0..255: same bytes). Below 1 (levels 1-2) that is every
# pixel; above (level 3, a = 2) only the pixels with V <= a R (1 + 1e-6) (0.02-0.3 % of the nuscenes-demo
# images) take the float32 formula, gathered; the margin keeps every tabled pixel where the float32 ratio is >= a.
def _saturation(image_rgb: np.ndarray, params: tuple[float, float], rng: np.random.Generator) -> np.ndarray:
    a, b = params
    planes = _split(image_rgb, "saturation", extra=3)
    v_max, chroma = cv2.max(planes[0], planes[1], dst=planes[3]), cv2.min(planes[0], planes[1], dst=planes[4])
    cv2.max(v_max, planes[2], dst=v_max)
    cv2.subtract(v_max, cv2.min(chroma, planes[2], dst=chroma), dst=chroma)
    if b == 0:
        return _saturation_tabled(image_rgb, a, planes)
    # ratio = min(a + b q, q), q = V / R, and 0 for grey (R = 0)
    ratio, work = _planes("saturation-ratio", image_rgb.shape[:2], 2, np.float32)
    cv2.LUT(v_max, _LEVELS, dst=ratio)
    cv2.multiply(ratio, cv2.LUT(chroma, _INV_LEVELS, dst=work), dst=ratio)
    cv2.min(cv2.addWeighted(ratio, b, ratio, 0.0, a, dst=work), ratio, dst=ratio)
    # per plane (no 17 MB float32 broadcast of the ratio): x' = V - round((V - x) ratio), in place
    for x in planes[:3]:
        cv2.subtract(v_max, x, dst=x)
        cv2.multiply(x, ratio, dst=x, dtype=cv2.CV_8U)
        cv2.subtract(v_max, x, dst=x)
    out = cv2.merge(planes[:3], dst=np.empty_like(image_rgb))
    # a grey pixel has hue 0 (red): it becomes (V, V (1 - S'), V (1 - S')) with S' = min(b, 1)
    grey = cv2.compare(chroma, 0, cv2.CMP_EQ, dst=planes[5])  # type: ignore[call-overload]
    if cv2.countNonZero(grey):
        faded = cv2.convertScaleAbs(v_max, alpha=1.0 - min(b, 1.0))
        out = cv2.copyTo(cv2.merge([v_max, faded, faded]), grey, out)
    return out


def _saturation_tabled(image_rgb: np.ndarray, a: float, planes: list[np.ndarray]) -> np.ndarray:
    """Saturation with b = 0 from the planes of ``_saturation`` (R, G, B, V, chroma R, one work plane)."""
    v_max, chroma, work = planes[3:6]
    table = _per_level(lambda levels: cv2.multiply(levels, np.full(levels.shape, a, np.float32), dtype=cv2.CV_8U))
    for x in planes[:3]:  # x' = V - table[V - x], back into x's plane
        cv2.subtract(v_max, lookup_uint8(cv2.subtract(v_max, x, dst=x), table), dst=x)
    out = cv2.merge(planes[:3], dst=np.empty_like(image_rgb))
    if a <= 1.0:  # V >= R >= a R: the ratio is a everywhere (grey pixels: V - x = 0 either way)
        return out
    bound = np.minimum(np.floor(_LEVELS.astype(np.float64) * (a * (1.0 + 1e-6))), 255.0).astype(np.uint8)
    flags = cv2.compare(v_max, lookup_uint8(chroma, bound), cv2.CMP_LE, dst=work)
    if cv2.countNonZero(flags):  # the float32 formula of the b > 0 branch, on these pixels only
        # 0/1 bytes read as bool: numpy's nonzero on bool is ~12x faster than on uint8
        clipped = np.flatnonzero(cv2.min(flags, 1, dst=flags).view(np.bool_))  # type: ignore[call-overload]
        v = v_max.reshape(-1).take(clipped)
        ratio = np.minimum(_LEVELS.take(v) * _INV_LEVELS.take(chroma.reshape(-1).take(clipped)), np.float32(a))
        scaled = (v[:, None] - image_rgb.reshape(-1, 3).take(clipped, axis=0)).astype(np.float32)  # V - x >= 0
        scaled *= ratio[:, None]
        moved = np.minimum(np.rint(scaled, out=scaled), 255.0).astype(np.uint8)
        out.reshape(-1, 3)[clipped] = np.where(moved > v[:, None], 0, v[:, None] - moved)  # V - moved, saturated
    return out


_INV_LEVELS = np.concatenate([[0.0], 1.0 / _LEVELS[1:]]).astype(np.float32)


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
# Blend towards ITU-R BT.601 luma Y = .299 R + .587 G + .114 B; level 5 is the full grayscale image (what
# cv2.COLOR_RGB2GRAY computes, broadcast to the channels). Levels 1-4, out = (1 - a) x + a Y, are one 3x3 colour
# matrix (1 - a) I + a [w; w; w] applied by cv2.transform in a single pass (~0.55 ms at 1600x900; the luma plus
# addWeighted took ~1 ms). Its uint8 path works in 10-bit fixed point, out = (sum_j M_ij x_j + 512) >> 10 with integer
# weights M_ij ~ 1024 m_ij; we pass weights whose rows sum to exactly 1024 (largest remainders), so a grey pixel
# stays exactly grey. Within one level of the exactly rounded blend (tested).
_LUMA_BT601 = np.array([0.299, 0.587, 0.114])
_BLEND_BITS = 10  # cv2.transform's fixed-point fraction for uint8 images (OpenCV's transform_8u)


@lru_cache(maxsize=16)
def grey_blend_weights(alpha: float) -> np.ndarray:
    """Integer weights M (3 x 3, rows summing to 2^10) of the blend (1 - alpha) x + alpha Y: the floors of
    2^10 m_ij plus one for the largest fractional parts of each row."""
    scale = 1 << _BLEND_BITS
    exact = ((1.0 - alpha) * np.eye(3) + alpha * _LUMA_BT601[None, :]) * scale
    weights = np.floor(exact).astype(np.int64)
    for row, frac in zip(weights, exact - weights, strict=True):
        row[np.argsort(-frac, kind="stable")[: scale - int(row.sum())]] += 1
    return weights


def _grayscale(image_rgb: np.ndarray, alpha: float, rng: np.random.Generator) -> np.ndarray:
    if alpha >= 1.0:
        luma = cv2.cvtColor(image_rgb, cv2.COLOR_RGB2GRAY, dst=scratch("grayscale", image_rgb.shape[:2], np.uint8))
        return _broadcast3(luma, np.empty_like(image_rgb))
    matrix = (grey_blend_weights(alpha) / (1 << _BLEND_BITS)).astype(np.float32)  # k / 1024: exact in float32
    return cv2.transform(image_rgb, matrix, dst=np.empty_like(image_rgb))


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
    keep = (0xFF << (8 - bits)) & 0xFF
    return np.bitwise_and(image_rgb, np.uint8(keep))  # ~0.1 ms at 1600x900: 2x cv2.bitwise_and, 8x cv2.LUT


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
# OpenCV's encoder passes its BGR rows to libjpeg-turbo as they are (optimised Huffman tables are already off by
# default: IMWRITE_JPEG_OPTIMIZE=1 would cost 3x the encode); ``decode_image`` decodes the result as every camera
# image is decoded (libjpeg-turbo through simplejpeg: OpenCV's pixels, 1.86 against 2.23 ms at 1600x900).
def _jpeg(image_rgb: np.ndarray, quality: int, rng: np.random.Generator) -> np.ndarray:
    return decode_image(encode_jpeg(image_rgb, quality).tobytes(), f"jpeg_compression at quality {quality}")


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
