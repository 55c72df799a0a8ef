"""Weather and lens-contamination corruptions: fog, snow, rain, water splash, lens obstacle, lens obstruction."""

from __future__ import annotations

import math

import cv2
import numpy as np

from stridegen.augment.corruptions.base import Corruption, scratch
from stridegen.augment.corruptions.blur import FilterCanvas, as_array, motion_blur_kernel
from stridegen.augment.corruptions.photometric import channel_affine, channel_means


# --- fog (ImageNet-C / imagecorruptions `fog`) ---------------------------------------------------------------------
def plasma_fractal(size: int, decay: float, rng: np.random.Generator) -> np.ndarray:
    """Diamond-square height map on a toroidal size x size grid (size a power of two), normalised to [0, 1].

    As in ImageNet-C's `plasma_fractal`: every level sets each new point to the mean of its four parents plus
    U(-w^2, w^2), w starting at 100 and divided by `decay` per level.
    """
    if size < 2 or size & (size - 1):
        raise ValueError(f"plasma size must be a power of two >= 2, got {size}")
    grid = np.zeros((size, size), dtype=np.float64)
    step, wibble = size, 100.0
    while step >= 2:
        half = step // 2
        corners = grid[0::step, 0::step]
        # square step: centres of the squares
        square_sum = corners + np.roll(corners, -1, axis=0)
        square_sum = square_sum + np.roll(square_sum, -1, axis=1)
        grid[half::step, half::step] = square_sum / 4 + wibble * rng.uniform(-wibble, wibble, square_sum.shape)
        # diamond step: edge midpoints, each the mean of two corners and two centres
        centres = grid[half::step, half::step]
        top = centres + np.roll(centres, 1, axis=0) + corners + np.roll(corners, -1, axis=1)
        grid[0::step, half::step] = top / 4 + wibble * rng.uniform(-wibble, wibble, top.shape)
        left = centres + np.roll(centres, 1, axis=1) + corners + np.roll(corners, -1, axis=0)
        grid[half::step, 0::step] = left / 4 + wibble * rng.uniform(-wibble, wibble, left.shape)
        step, wibble = half, wibble / decay
    grid -= grid.min()
    return grid / grid.max()


_FOG_CELL = 8  # px: levels finer than this add < ~1 % of the map's range; bilinear interpolation stands in.


def fog_layer(shape_hw: tuple[int, int], decay: float, rng: np.random.Generator) -> np.ndarray:
    """(H, W) float32 fog density in [0, 1]: the plasma fractal of the next power of two >= max(H, W), cropped.

    The diamond-square levels coarser than `_FOG_CELL` px are computed on a grid `_FOG_CELL` times smaller (those
    levels only ever touch points on that sub-grid, so they are exact); the finer levels, whose amplitude has
    decayed by decay^(2k), are replaced by bilinear interpolation.
    """
    h, w = shape_hw
    size = 1 << max(1, (max(h, w) - 1).bit_length())
    cell = min(_FOG_CELL, size // 2)
    coarse = plasma_fractal(size // cell, decay, rng).astype(np.float32)
    hc, wc = -(-h // cell) + 1, -(-w // cell) + 1
    tile = np.pad(coarse, ((0, 1), (0, 1)), mode="wrap")[:hc, :wc]
    dense = cv2.resize(tile, (wc * cell, hc * cell), interpolation=cv2.INTER_LINEAR)
    return dense[:h, :w]


# x/255 + c * fog, rescaled by max / (max + c). Table (c, decay) = [(1.5, 2), (2, 2), (2.5, 1.7), (2.5, 1.5),
# (3, 1.4)].
def _fog(image_rgb: np.ndarray, params: tuple[float, float], rng: np.random.Generator) -> np.ndarray:
    c, decay = params
    max_val = float(image_rgb.max()) / 255.0
    scale = max_val / (max_val + c)
    fog = fog_layer(image_rgb.shape[:2], decay, rng)
    fog *= np.float32(255.0 * c * scale)
    # x * scale + fog in one rounding, saturating pass
    return cv2.addWeighted(image_rgb, scale, cv2.merge([fog, fog, fog]), 1.0, 0.0, dtype=cv2.CV_8U)


FOG = Corruption(
    name="fog",
    params=((1.5, 2.0), (2.0, 2.0), (2.5, 1.7), (2.5, 1.5), (3.0, 1.4)),
    fn=_fog,
    sources=("ImageNet-C / imagecorruptions fog", "nuScenes-C (RoboBEV)", "DriveBench"),
    description="fractal fog veil, contrast reduced",
)


# --- snow (ImageNet-C / imagecorruptions `snow`) ------------------------------------------------------------------
# Flakes: N(loc, scale) noise zoomed by `zoom` (the reference zooms a centre crop of a full-size field; a fresh
# field of size H/zoom x W/zoom has the same distribution), values below `threshold` cut, motion-blurred
# (radius, sigma) at an angle ~ U(-135, -45) degrees, rounded to 1/255. Image: blend * x + (1 - blend) *
# max(x, 1.5 * grey + 0.5), plus the flake layer L and its 180-degree rotation, clipped.
# Table (loc, scale, zoom, threshold, radius, sigma, blend):
#   [(.1, .3, 3, .5, 10, 4, .8), (.2, .3, 2, .5, 12, 4, .7), (.55, .3, 4, .9, 12, 8, .7),
#    (.55, .3, 4.5, .85, 12, 8, .65), (.55, .3, 2.5, .85, 12, 12, .55)]
def _snow_layer(shape_hw: tuple[int, int], params: tuple[float, ...], rng: np.random.Generator) -> np.ndarray:
    """(H, W) uint8 flake layer (0..255 = 0..1), before adding its 180-degree turn.

    Built in a FilterCanvas (resize, cut and clip in place, then the sparse motion blur). The cut keeps values
    v >= float32(threshold), as numpy's float32 comparison did: THRESH_TOZERO keeps v > t for t the float32 just
    below it.
    """
    loc, scale, zoom, threshold, radius, sigma, _ = params
    h, w = shape_hw
    hs, ws = max(1, math.ceil(h / zoom)), max(1, math.ceil(w / zoom))
    field = rng.standard_normal((hs, ws), dtype=np.float32) * np.float32(scale) + np.float32(loc)
    canvas = FilterCanvas((h, w), cv2.CV_32FC1)
    cut = float(np.nextafter(np.float32(threshold), np.float32(-np.inf)))
    cv2.resize(field, (w, h), dst=canvas.view, interpolation=cv2.INTER_LINEAR)
    cv2.threshold(canvas.view, cut, 0.0, cv2.THRESH_TOZERO, dst=canvas.view)
    cv2.min(canvas.view, 1.0, dst=canvas.view)  # type: ignore[call-overload]  # a scalar: the stubs lack it
    kernel, anchor = motion_blur_kernel(int(radius), sigma, float(rng.uniform(-135.0, -45.0)))
    # the reference rounds the layer to 1/255; the blurred layer is >= 0, so the absolute value is a no-op
    return as_array(cv2.convertScaleAbs(canvas.filter(kernel, anchor), alpha=255.0))


# BT.601 luma weights of cv2.COLOR_RGB2GRAY, which the reference applies to the float image.
_LUMA_RGB = np.array([0.299, 0.587, 0.114])


def _snow(image_rgb: np.ndarray, params: tuple[float, ...], rng: np.random.Generator) -> np.ndarray:
    blend = params[-1]
    flakes = _snow_layer(image_rgb.shape[:2], params, rng)
    turned = cv2.flip(flakes, -1, dst=scratch("snow-turned", flakes.shape, np.uint8))
    cv2.add(flakes, turned, dst=flakes)  # L + its 180-degree turn, saturated (the output is too)

    # blend x + (1 - blend) max(x, b) = max(x, blend x + (1 - blend) b) for b = 1.5 g + 127.5 (g the float grey on
    # the 0..255 scale, as in the reference; b reaches 510). The inner term is one cv2.transform of the image (a
    # 3 x 4 matrix: blend I + 1.5 (1 - blend) luma, offset 127.5 (1 - blend)), rounded once and saturated: every
    # term is >= 0 and the output saturates at 255, so that saturation changes nothing. Then in place: max, + L.
    m = np.zeros((3, 4))
    m[:, :3] = blend * np.eye(3) + 1.5 * (1.0 - blend) * _LUMA_RGB
    m[:, 3] = 127.5 * (1.0 - blend)
    out = cv2.transform(image_rgb, m)
    cv2.max(image_rgb, out, dst=out)
    flakes3 = cv2.cvtColor(flakes, cv2.COLOR_GRAY2RGB, dst=scratch("snow-flakes3", image_rgb.shape, np.uint8))
    return cv2.add(out, flakes3, dst=out)


SNOW = Corruption(
    name="snow",
    params=(
        (0.1, 0.3, 3.0, 0.5, 10, 4.0, 0.8),
        (0.2, 0.3, 2.0, 0.5, 12, 4.0, 0.7),
        (0.55, 0.3, 4.0, 0.9, 12, 8.0, 0.7),
        (0.55, 0.3, 4.5, 0.85, 12, 8.0, 0.65),
        (0.55, 0.3, 2.5, 0.85, 12, 12.0, 0.55),
    ),
    fn=_snow,
    sources=(
        "ImageNet-C / imagecorruptions snow",
        "nuScenes-C (RoboBEV)",
        "DriveBench",
        "IntelliCockpitBench (snow / lens obstruction)",
    ),
    description="falling snow flakes and a whitened scene",
)


# --- rain (DriveBench `Rain`, after the Automold rain streak model) ----------------------------------------------
# `area // n` streaks of `length` px, slant ~ U{-10..9} px, drawn 1 px wide at grey 220 into a mask m; the streak
# colour is x + m (1 - x/255)(1 - mean/255), 3x3 box-blurred, alpha-composited with m/255; finally the contrast is
# scaled by k around the channel means. Table (n, length, k) = [(770, 10, .8), (770, 30, .8), (770, 60, .7),
# (500, 60, .6), (400, 80, .5)].
_RAIN_GREY = 220.0


def _rain_off_mask(shape_hw: tuple[int, int], area_per_drop: int, length: int, rng: np.random.Generator) -> np.ndarray:
    """(H, W) uint8 mask of the pixels off the streaks: 0 on the streaks (drawn 1 px wide, 8-connected), 255
    elsewhere."""
    h, w = shape_hw
    length = min(length, h - 1)
    slant = int(rng.integers(-10, 10))
    n = (h * w) // area_per_drop
    x0 = rng.integers(min(slant, 0), w - max(slant, 0), size=n)
    y0 = rng.integers(0, h - length, size=n)
    segments = np.stack([np.stack([x0, y0], 1), np.stack([x0 + slant, y0 + length], 1)], 1).astype(np.int32)
    off = np.full((h, w), 255, dtype=np.uint8)
    cv2.polylines(off, list(segments), isClosed=False, color=0, thickness=1)
    return off


def _rain(image_rgb: np.ndarray, params: tuple[int, int, float], rng: np.random.Generator) -> np.ndarray:
    area_per_drop, length, k = params
    off = _rain_off_mask(image_rgb.shape[:2], area_per_drop, length, rng)
    # The streak mask m is 0 or 220, so every step is one uint8 pass over the image, each rounded once as the
    # reference's uint8 steps are, and the pixels off the streaks are put back with a masked copy (cv2.copyTo takes
    # a one-channel mask for a three-channel image). Streak colour: x + 220 (255 - x) f / 255 = (1 - c) x + 255 c,
    # c = 220 f / 255, f = 1 - mean / 255.
    c = _RAIN_GREY / 255.0 * (1.0 - float(np.mean(channel_means(image_rgb))) / 255.0)
    streak = cv2.convertScaleAbs(image_rgb, alpha=1.0 - c, beta=255.0 * c)
    cv2.copyTo(image_rgb, off, dst=streak)
    # On a streak: its 3x3 box blur at alpha a = 220 / 255 over the image; elsewhere the image (in place from here).
    out = cv2.blur(streak, (3, 3))
    a = _RAIN_GREY / 255.0
    cv2.addWeighted(out, a, image_rgb, 1.0 - a, 0.0, dst=out)
    cv2.copyTo(image_rgb, off, dst=out)
    offsets = tuple((1.0 - k) * m for m in channel_means(out))  # (x - m) k + m
    return channel_affine(out, k, offsets, dst=out)  # type: ignore[arg-type]


RAIN = Corruption(
    name="rain",
    params=((770, 10, 0.8), (770, 30, 0.8), (770, 60, 0.7), (500, 60, 0.6), (400, 80, 0.5)),
    fn=_rain,
    sources=("DriveBench rain",),
    description="rain streaks and lowered contrast",
)


# --- water splash (DriveBench `WaterSplashCorruption`) -------------------------------------------------------------
# n droplets (discs of radius ~ U{r_min..r_max}, centre uniform and at least r from the border), each composited
# as white at alpha 0.2 (so a pixel under j droplets becomes 255 - (255 - x) 0.8^j), then a Gaussian blur of the
# whole image with a k x k kernel. Table (n, k, r_min, r_max) = [(10, 7, 5, 15), (20, 15, 10, 20),
# (30, 21, 15, 25), (40, 31, 20, 30), (50, 51, 25, 35)].
def _disc_counts(shape_hw: tuple[int, int], centres: np.ndarray, radii: np.ndarray) -> np.ndarray:
    counts = np.zeros(shape_hw, dtype=np.uint8)
    for (cx, cy), r in zip(centres, radii, strict=True):
        disc = np.zeros((2 * r + 1, 2 * r + 1), dtype=np.uint8)
        cv2.circle(disc, (int(r), int(r)), int(r), 1, thickness=-1)
        counts[cy - r : cy + r + 1, cx - r : cx + r + 1] += disc
    return counts


def _water_splash(image_rgb: np.ndarray, params: tuple[int, int, int, int], rng: np.random.Generator) -> np.ndarray:
    n, ksize, r_min, r_max = params
    h, w = image_rgb.shape[:2]
    r_max = max(1, min(r_max, (min(h, w) - 1) // 2))
    radii = rng.integers(min(r_min, r_max), r_max + 1, size=n)
    cx = rng.integers(radii, w - radii)
    cy = rng.integers(radii, h - radii)
    counts = _disc_counts((h, w), np.stack([cx, cy], 1), radii)
    keep = (np.float32(0.8) ** np.arange(n + 1, dtype=np.float32))[counts]  # 0.8^j per pixel
    inverted = cv2.multiply(cv2.bitwise_not(image_rgb), cv2.merge([keep, keep, keep]), dtype=cv2.CV_8U)
    return cv2.GaussianBlur(cv2.bitwise_not(inverted), (ksize, ksize), 0)  # 255 - (255 - x) 0.8^j, blurred


WATER_SPLASH = Corruption(
    name="water_splash",
    params=((10, 7, 5, 15), (20, 15, 10, 20), (30, 21, 15, 25), (40, 31, 20, 30), (50, 51, 25, 35)),
    fn=_water_splash,
    sources=("DriveBench water splash",),
    description="pale droplets and an overall blur",
)


# --- lens obstacle (DriveBench `LensObstacleCorruption`) ------------------------------------------------------------
# One ellipse (centre ~ N(image centre, (std W, std H)) clipped to the image, semi-axes U(.1, max) W and
# U(.1, max) H, angle U{0..360}) is replaced by a k x k Gaussian blur of the image. Table (k, max, std) =
# [(11, .1, .3), (21, .2, .25), (31, .3, .2), (51, .4, .15), (71, .5, .1)]. Only the ellipse's bounding box (plus the
# kernel margin) is blurred, which gives the same pixels as blurring the whole image.
def _lens_obstacle(image_rgb: np.ndarray, params: tuple[int, float, float], rng: np.random.Generator) -> np.ndarray:
    ksize, max_size, std = params
    h, w = image_rgb.shape[:2]
    cx = int(np.clip(rng.normal(w // 2, std * w), 0, w))
    cy = int(np.clip(rng.normal(h // 2, std * h), 0, h))
    ax = int(rng.uniform(0.1, max_size) * w)
    ay = int(rng.uniform(0.1, max_size) * h)
    angle = int(rng.integers(0, 361))
    mask = np.zeros((h, w), dtype=np.uint8)
    cv2.ellipse(mask, (cx, cy), (ax, ay), angle, 0, 360, 255, thickness=-1)
    ys, xs = np.nonzero(mask.any(axis=1))[0], np.nonzero(mask.any(axis=0))[0]
    out = image_rgb.copy()
    if ys.size == 0:
        return out
    pad = ksize // 2 + 1
    y0, y1 = max(0, ys[0] - pad), min(h, ys[-1] + 1 + pad)
    x0, x1 = max(0, xs[0] - pad), min(w, xs[-1] + 1 + pad)
    blurred = cv2.GaussianBlur(np.ascontiguousarray(image_rgb[y0:y1, x0:x1]), (ksize, ksize), 0)
    inside = mask[y0:y1, x0:x1] == 255
    out[y0:y1, x0:x1][inside] = blurred[inside]
    return out


LENS_OBSTACLE = Corruption(
    name="lens_obstacle",
    params=((11, 0.1, 0.3), (21, 0.2, 0.25), (31, 0.3, 0.2), (51, 0.4, 0.15), (71, 0.5, 0.1)),
    fn=_lens_obstacle,
    sources=("DriveBench lens obstacle",),
    description="a blurred elliptical smear on the lens",
)


# --- lens obstruction (IntelliCockpitBench "lens obstruction"; model and table ours) ------------------------------
# Opaque dirt on the lens: `n` random ellipses whose areas add up to about `coverage` of the image (each U(.6, 1.4)
# times its share, aspect U(.5, 1), random angle), edges feathered by a Gaussian of sigma 1 % of the shorter side,
# composited at opacity .95 in ImageNet-C's mud colour (63, 42, 20) (imagecorruptions `spatter`, mud branch).
# Table (n, coverage) = [(3, .04), (4, .08), (5, .15), (6, .25), (8, .4)].
_MUD_RGB = np.array([63, 42, 20], dtype=np.uint8)


def _lens_obstruction(image_rgb: np.ndarray, params: tuple[int, float], rng: np.random.Generator) -> np.ndarray:
    n, coverage = params
    h, w = image_rgb.shape[:2]
    share = coverage * h * w / n * rng.uniform(0.6, 1.4, size=n)
    aspect = rng.uniform(0.5, 1.0, size=n)
    centres = rng.uniform((0.0, 0.0), (w, h), size=(n, 2))
    angles = rng.uniform(0.0, 180.0, size=n)
    mask = np.zeros((h, w), dtype=np.uint8)
    for area, asp, (cx, cy), ang in zip(share, aspect, centres, angles, strict=True):
        a = math.sqrt(area / (math.pi * asp))  # semi-axes a, a * asp: pi a^2 asp = area
        cv2.ellipse(mask, (int(cx), int(cy)), (max(1, int(a)), max(1, int(a * asp))), float(ang), 0, 360, 255, -1)
    sigma = max(1.0, 0.01 * min(h, w))
    alpha = cv2.GaussianBlur(mask.astype(np.float32) * np.float32(0.95 / 255.0), (0, 0), sigma)
    mud = np.empty_like(image_rgb)
    mud[:] = _MUD_RGB
    return cv2.blendLinear(image_rgb, mud, 1.0 - alpha, alpha)


LENS_OBSTRUCTION = Corruption(
    name="lens_obstruction",
    params=((3, 0.04), (4, 0.08), (5, 0.15), (6, 0.25), (8, 0.4)),
    fn=_lens_obstruction,
    sources=("IntelliCockpitBench (category); mud colour from imagecorruptions spatter; coverage table: stridegen",),
    description="opaque dirt blobs covering 4..40 % of the lens",
)

WEATHER = (FOG, SNOW, RAIN, WATER_SPLASH, LENS_OBSTACLE, LENS_OBSTRUCTION)
