"""Blur and resolution corruptions (ImageNet-C blurs, nuScenes-C / DriveBench motion and zoom blur, pixelate,
IntelliCockpitBench low resolution).

The ImageNet-C reference code builds motion and zoom blur from dozens of shifted or rescaled full-image copies;
here motion blur is one correlation with a sparse line kernel (cv2.filter2D) and zoom blur one affine warp per
zoom factor accumulated in float32, which compute the same sums.
"""

from __future__ import annotations

import itertools
import math
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import cv2
import numpy as np

from stridegen.augment.corruptions.base import Corruption, scratch, to_uint8


# --- motion blur (ImageNet-C; imagecorruptions' shift-based `_motion_blur`) --------------------------------------
def motion_blur_kernel(radius: int, sigma: float, angle_deg: float) -> tuple[np.ndarray, tuple[int, int]]:
    """Line kernel and anchor (x, y) for cv2.filter2D reproducing imagecorruptions' `_motion_blur`.

    That code sums width = 2 * radius + 1 copies of the image, copy i weighted by a half Gaussian
    exp(-i^2 / (2 sigma^2)) (normalised) and sampled at offset (ceil(i cos a - 1/2), ceil(i sin a - 1/2)) pixels
    (x right, y down), edges replicated. filter2D correlates: dst(p) = sum_q K(q) src(p + q - anchor).
    """
    width = 2 * int(radius) + 1
    i = np.arange(width, dtype=np.float64)
    weights = np.exp(-(i**2) / (2.0 * sigma**2))
    weights /= weights.sum()
    a = math.radians(angle_deg)
    off_x = np.ceil(i * math.cos(a) - 0.5).astype(np.int64)
    off_y = np.ceil(i * math.sin(a) - 0.5).astype(np.int64)
    x0, y0 = int(off_x.min()), int(off_y.min())
    kernel = np.zeros((int(off_y.max()) - y0 + 1, int(off_x.max()) - x0 + 1), dtype=np.float32)
    np.add.at(kernel, (off_y - y0, off_x - x0), weights.astype(np.float32))
    return kernel, (-x0, -y0)


# OpenCV's filter2D switches to a DFT for kernels of 130 or more entries on 8U / 32F data, except when the source is a
# ROI of a larger matrix (opencv imgproc filter.dispatch.cpp, dftFilter2D). A motion-blur line kernel has only
# 2r + 1 non-zero taps, and the direct path visits only those: 4-8x faster than the DFT at 1600x900.
_DFT_MIN_KERNEL_AREA = 130


class FilterCanvas:
    """An (H, W) work image that cv2.filter2D keeps on its direct (zero-skipping) path for any kernel size.

    ``view`` is the first H rows of an (H + 1)-row cv2.UMat, a ROI, which turns OpenCV's DFT heuristic off; its
    extra row is set to a copy of row H - 1 before filtering (exactly what BORDER_REPLICATE reads below the
    image). OpenCV calls fill ``view`` in place (``cv2.resize(src, (W, H), dst=canvas.view)``), so a layer built
    there is never copied into a padded array. With OpenCL in use a UMat would run on the device, so then
    ``view`` is a plain numpy array (and large kernels take OpenCV's DFT path).
    """

    def __init__(self, shape_hw: tuple[int, int], cv_type: int = cv2.CV_32FC1) -> None:
        h, w = shape_hw
        self._shape = (h, w)
        self._parent: cv2.UMat | None = None
        self.view: Any  # a cv2.UMat ROI or an np.ndarray: the OpenCV stubs type no call for their union
        if cv2.ocl.useOpenCL():
            depth, channels = {cv2.CV_8U: np.uint8, cv2.CV_32F: np.float32}[cv_type & 7], (cv_type >> 3) + 1
            self.view = np.empty((h, w) if channels == 1 else (h, w, channels), dtype=depth)
        else:
            self._parent = cv2.UMat(h + 1, w, cv_type)
            self.view = cv2.UMat(self._parent, [0, h], [0, w])

    @classmethod
    def of(cls, array: np.ndarray) -> FilterCanvas:
        """A canvas holding a copy of an (H, W) or (H, W, C) uint8 / float32 array."""
        channels = 1 if array.ndim == 2 else array.shape[2]
        canvas = cls(
            array.shape[:2], cv2.CV_MAKETYPE({np.uint8: cv2.CV_8U, np.float32: cv2.CV_32F}[array.dtype.type], channels)
        )
        if isinstance(canvas.view, np.ndarray):
            canvas.view[...] = array
        else:
            cv2.copyTo(np.ascontiguousarray(array), None, dst=canvas.view)  # type: ignore[call-overload]
        return canvas

    def filter(self, kernel: np.ndarray, anchor: tuple[int, int]) -> cv2.UMat | np.ndarray:
        """cv2.filter2D(view, -1, kernel, anchor, BORDER_REPLICATE): a UMat (``.get()`` reads it) or an array."""
        if self._parent is not None:
            h, w = self._shape
            last = cv2.UMat(self._parent, [h - 1, h], [0, w])
            cv2.copyTo(last, None, dst=cv2.UMat(self._parent, [h, h + 1], [0, w]))  # type: ignore[call-overload]
        # (the view is typed Any: the stubs lack the mixed UMat-source / ndarray-kernel call the bindings accept)
        return cv2.filter2D(self.view, -1, kernel, anchor=anchor, borderType=cv2.BORDER_REPLICATE)


def as_array(image: cv2.UMat | np.ndarray) -> np.ndarray:
    """A numpy array of an OpenCV result (``UMat.get()`` copies it out; arrays pass through)."""
    return image.get() if isinstance(image, cv2.UMat) else image


def sparse_filter2d(array: np.ndarray, kernel: np.ndarray, anchor: tuple[int, int]) -> np.ndarray:
    """cv2.filter2D(array, -1, kernel, anchor, BORDER_REPLICATE) kept on OpenCV's direct (zero-skipping) path
    (through a ``FilterCanvas`` when the kernel would otherwise take the DFT)."""
    if kernel.size < _DFT_MIN_KERNEL_AREA or cv2.ocl.useOpenCL():
        return cv2.filter2D(array, -1, kernel, anchor=anchor, borderType=cv2.BORDER_REPLICATE)
    return as_array(FilterCanvas.of(array).filter(kernel, anchor))


def motion_blur_array(array: np.ndarray, radius: int, sigma: float, angle_deg: float) -> np.ndarray:
    """Motion-blur an image (uint8 in, uint8 out) or a float32 layer with the line kernel."""
    kernel, anchor = motion_blur_kernel(radius, sigma, angle_deg)
    return sparse_filter2d(array, kernel, anchor)


# Table (radius, sigma) = [(10, 3), (15, 5), (15, 8), (15, 12), (20, 15)], angle ~ U(-45, 45) degrees.
def _motion_blur(image_rgb: np.ndarray, params: tuple[int, float], rng: np.random.Generator) -> np.ndarray:
    radius, sigma = params
    return motion_blur_array(image_rgb, radius, sigma, float(rng.uniform(-45.0, 45.0)))


MOTION_BLUR = Corruption(
    name="motion_blur",
    params=((10, 3.0), (15, 5.0), (15, 8.0), (15, 12.0), (20, 15.0)),
    fn=_motion_blur,
    sources=(
        "ImageNet-C / imagecorruptions motion_blur",
        "nuScenes-C (RoboBEV)",
        "DriveBench",
        "IntelliCockpitBench (category)",
    ),
    description="linear camera-motion blur at a random angle in [-45, 45] degrees",
)


# --- zoom blur (ImageNet-C / imagecorruptions `zoom_blur`) --------------------------------------------------------
# Mean of the image and of copies zoomed about the centre by each factor z in the level's range (the range starts
# at 1, so the unzoomed image is counted twice, as in the reference).
def _zoom_factors(stop: float, step: float) -> tuple[float, ...]:
    return tuple(float(z) for z in np.arange(1.0, stop, step))


def _zoom_blur(image_rgb: np.ndarray, factors: tuple[float, ...], rng: np.random.Generator) -> np.ndarray:
    h, w = image_rgb.shape[:2]
    cx, cy = (w - 1) * 0.5, (h - 1) * 0.5
    acc = scratch("zoom_blur-acc", image_rgb.shape, np.float32)  # work buffers reused between calls
    np.copyto(acc, image_rgb)
    zoomed = scratch("zoom_blur-zoomed", image_rgb.shape, np.uint8)
    for z in factors:
        if z == 1.0:
            cv2.accumulate(image_rgb, acc)
            continue
        # dst = z * (src - centre) + centre: a zoom by z about the image centre.
        m = np.array([[z, 0.0, (1.0 - z) * cx], [0.0, z, (1.0 - z) * cy]], dtype=np.float64)
        cv2.warpAffine(image_rgb, m, (w, h), dst=zoomed, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        cv2.accumulate(zoomed, acc)
    return to_uint8(acc, 1.0 / (len(factors) + 1))


ZOOM_BLUR = Corruption(
    name="zoom_blur",
    params=(
        _zoom_factors(1.11, 0.01),
        _zoom_factors(1.16, 0.01),
        _zoom_factors(1.21, 0.02),
        _zoom_factors(1.26, 0.02),
        _zoom_factors(1.31, 0.03),
    ),
    fn=_zoom_blur,
    random=False,
    sources=("ImageNet-C / imagecorruptions zoom_blur", "DriveBench"),
    description="radial blur: mean of copies zoomed 1.0..1.3x about the centre",
)


# --- defocus blur (ImageNet-C / imagecorruptions `defocus_blur`) --------------------------------------------------
def _alias_size(radius: float) -> int:
    return 3 if radius <= 8 else 5  # ImageNet-C's anti-aliasing kernel: 3x3 up to radius 8, else 5x5


def disk_kernel(radius: float, alias_blur: float) -> np.ndarray:
    """The defocus kernel: the disk x^2 + y^2 <= radius^2 (integer offsets) normalised to sum 1, anti-aliased by a
    Gaussian of sigma `alias_blur` (3x3 for radius <= 8, else 5x5), as ImageNet-C's `disk`.

    Returned on the grid of its full support (half-size radius + Gaussian half-size), so it sums to 1 exactly;
    ImageNet-C crops it to a half-size max(8, radius) grid with reflected borders, which at radius 8 and 10 folds
    the outermost ring back inside (1.1-1.3 % gain, which it keeps).
    """
    half = int(radius) + _alias_size(radius) // 2
    coords = np.arange(-half, half + 1, dtype=np.float32)
    xx, yy = np.meshgrid(coords, coords)
    disk = (xx**2 + yy**2 <= radius**2).astype(np.float32)
    g = cv2.getGaussianKernel(_alias_size(radius), alias_blur, cv2.CV_32F)
    kernel = cv2.sepFilter2D(disk, -1, g, g, borderType=cv2.BORDER_CONSTANT)  # disk zero beyond its support
    return kernel / kernel.sum()


def disk_sum(image: np.ndarray, radius: float, margin: int = 0, out: np.ndarray | None = None) -> np.ndarray:
    """Sum of the image over the disk x^2 + y^2 <= radius^2 around every pixel (reflect-101 borders), uint16 (or
    float32, exact, where the sum can pass 65535; ``disk_sum_depth``), extended by `margin` pixels on each side (the
    sums a reflect-101 border would give there, since the disk is symmetric). Written into ``out`` if given (the
    right shape and dtype), else into a new array.
    """
    pad = int(radius) + margin
    padded = scratch("disk_sum-padded", _padded_shape(image.shape, pad), disk_sum_depth(radius))
    _pad_reflect(image, pad, padded)
    h, w = image.shape[0] + 2 * margin, image.shape[1] + 2 * margin
    total = np.empty((h, w, *image.shape[2:]), disk_sum_depth(radius)) if out is None else out
    return _disk_sum_valid(padded, radius, total)


def disk_sum_depth(radius: float) -> type:
    """uint16 where the disk's sum of 255s fits, else float32 (exact integers below 2^24)."""
    return np.uint16 if disk_area(radius) * 255 <= np.iinfo(np.uint16).max else np.float32


def _padded_shape(shape: tuple[int, ...], pad: int) -> tuple[int, ...]:
    return (shape[0] + 2 * pad, shape[1] + 2 * pad, *shape[2:])


def _pad_reflect(image: np.ndarray, pad: int, out: np.ndarray) -> np.ndarray:
    """``image`` with a reflect-101 border of ``pad`` pixels, converted into ``out`` (its dtype)."""
    padded8 = scratch("pad_reflect", _padded_shape(image.shape, pad), image.dtype)
    cv2.copyMakeBorder(image, pad, pad, pad, pad, cv2.BORDER_REFLECT_101, dst=padded8)
    np.copyto(out, padded8)
    return out


def _disk_sum_valid(padded: np.ndarray, radius: float, out: np.ndarray) -> np.ndarray:
    """The disk sums of every pixel of ``padded`` whose disk lies inside it, into ``out`` (the padded array less
    floor(radius) pixels on each side; same dtype).

    The disk is a stack of horizontal runs, row dy of half-width a(dy) = floor(sqrt(r^2 - dy^2)): the horizontal
    run sum H_a is grown in place (H_a = H_(a-1) + two columns), and as soon as it reaches the half-width of some
    rows dy, the rows +-dy of it are added into the total: all saturating-free cv2.add passes over views, about 4r
    passes of one image, with no copy of any run. At radius 6 on 1600x900 RGB, 3-4x faster than OpenCV's DFT
    filter. The run buffer is reused between calls (``base.scratch``).
    """
    r = int(radius)
    half_width = _half_widths(radius)
    h, w = out.shape[:2]

    def cols(dx: int) -> np.ndarray:  # the w columns centred on output column x + dx
        return padded[:, r + dx : r + dx + w]

    run = scratch("disk_sum-run", (padded.shape[0], w, *padded.shape[2:]), padded.dtype)
    np.copyto(run, cols(0))  # H_0
    started = False
    for a in range(max(half_width) + 1):
        if a:
            cv2.add(run, cols(-a), dst=run)
            cv2.add(run, cols(a), dst=run)
        for dy in (d for d in range(r + 1) if half_width[d] == a):
            for row in sorted({r - dy, r + dy}):
                if started:
                    cv2.add(out, run[row : row + h], dst=out)
                else:
                    np.copyto(out, run[row : row + h])
                    started = True
    return out


# Table (radius, alias_blur) = [(3, .1), (4, .5), (6, .5), (8, .5), (10, .5)]: the disk sum (integer, exact), the
# anti-aliasing Gaussian on it in float32 (cv2.GaussianBlur, reflect-101: what the sums' reflected margin holds),
# scaled by 1 / disk area and rounded once. The image is cut into horizontal bands, one per OpenCV thread
# (cv2.getNumThreads(), which the scene runner sets to each worker's share of the cores), blurred in a thread pool:
# every step but the Gaussian is a single-threaded OpenCV pass, and OpenCV releases the GIL. Single-threaded too,
# the image is cut into bands of about _CACHE_BAND_ROWS output rows: the ~4r passes of a band then read and write
# a few hundred KB that stay in the core's L2 cache instead of streaming the whole image from memory each pass
# (1600x900, one thread, issue 35: 1.3-1.6x faster than one band; bands of 64-128 rows measured best, 16 worse).
# The bands' sums are exact integers and the Gaussian reads only their margins: the output is the same, bit for bit.
_MIN_BAND_ROWS = 64
_CACHE_BAND_ROWS = 128


def _defocus_blur(image_rgb: np.ndarray, params: tuple[float, float], rng: np.random.Generator) -> np.ndarray:
    radius, alias_blur = params
    m = _alias_size(radius) // 2
    pad = int(radius) + m  # the disk and the sums' margin of m (what the Gaussian reads around each band)
    padded = scratch("defocus-padded", _padded_shape(image_rgb.shape, pad), disk_sum_depth(radius))
    _pad_reflect(image_rgb, pad, padded)
    out = np.empty_like(image_rgb)
    h = image_rgb.shape[0]
    threads = max(1, min(cv2.getNumThreads(), h // _MIN_BAND_ROWS))
    bands = max(threads, -(-h // _CACHE_BAND_ROWS))
    edges = [h * i // bands for i in range(bands + 1)]

    def band(y0: int, y1: int) -> None:
        # output rows [y0, y1) read padded rows [y0, y1 + 2 pad); their sums carry a margin of m on every side,
        # which the Gaussian reads (its own border reaches only into that margin, which is dropped)
        sums = scratch("defocus-sums", (y1 - y0 + 2 * m, image_rgb.shape[1] + 2 * m, 3), padded.dtype)
        _disk_sum_valid(padded[y0 : y1 + 2 * pad], radius, sums)
        blurred = scratch("defocus-blurred", sums.shape, np.float32)
        np.copyto(blurred, sums)
        k = 2 * m + 1
        cv2.GaussianBlur(blurred, (k, k), alias_blur, dst=blurred, borderType=cv2.BORDER_REFLECT_101)
        inner = blurred[m : m + y1 - y0, m : m + image_rgb.shape[1]]
        cv2.convertScaleAbs(inner, dst=out[y0:y1], alpha=1.0 / disk_area(radius))

    if threads == 1:
        for y0, y1 in itertools.pairwise(edges):
            band(y0, y1)
    else:
        list(_band_pool().map(band, edges[:-1], edges[1:]))
    return out


_POOL: list[ThreadPoolExecutor] = []


def _band_pool() -> ThreadPoolExecutor:
    """The process's thread pool for banded filters (made on first use; threads idle between calls)."""
    if not _POOL:
        _POOL.append(ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2), thread_name_prefix="stridegen-band"))
    return _POOL[0]


def _half_widths(radius: float) -> list[int]:
    """a(dy) = max{a : a^2 + dy^2 <= radius^2} for dy = 0..floor(radius): the disk's run half-widths."""
    return [int(math.sqrt(radius**2 - dy * dy)) for dy in range(int(radius) + 1)]


def disk_area(radius: float) -> int:
    """Number of integer offsets (x, y) with x^2 + y^2 <= radius^2."""
    a = _half_widths(radius)
    return 2 * a[0] + 1 + 2 * sum(2 * v + 1 for v in a[1:])


DEFOCUS_BLUR = Corruption(
    name="defocus_blur",
    params=((3, 0.1), (4, 0.5), (6, 0.5), (8, 0.5), (10, 0.5)),
    fn=_defocus_blur,
    random=False,
    sources=("ImageNet-C / imagecorruptions defocus_blur",),
    description="out-of-focus disk blur, radius 3..10 px",
)


# --- glass blur (ImageNet-C / imagecorruptions `glass_blur`) ------------------------------------------------------
# Gaussian blur (sigma), `iterations` rounds of local pixel scrambling within max_delta px, Gaussian blur again.
# Table (sigma, max_delta, iterations) = [(.7, 1, 2), (.9, 2, 1), (1, 2, 3), (1.1, 3, 2), (1.5, 4, 2)].
# The reference swaps pixel pairs one at a time in a Python loop (minutes at 1600x900); here each round is one
# vectorised gather: every pixel takes the value at a random offset in [-max_delta, max_delta) (the reference's
# randint range), which scrambles the same neighbourhoods.
def _gaussian_sigma(image: np.ndarray, sigma: float) -> np.ndarray:
    ksize = 2 * math.ceil(4.0 * sigma) + 1  # skimage.filters.gaussian truncates at 4 sigma
    return cv2.GaussianBlur(image, (ksize, ksize), sigmaX=sigma, borderType=cv2.BORDER_REFLECT_101)


def _glass_blur(image_rgb: np.ndarray, params: tuple[float, int, int], rng: np.random.Generator) -> np.ndarray:
    sigma, max_delta, iterations = params
    h, w = image_rgb.shape[:2]
    out = _gaussian_sigma(image_rgb, sigma)
    grid_x, grid_y = np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))
    for _ in range(iterations):
        dx, dy = rng.integers(-max_delta, max_delta, size=(2, h, w), dtype=np.int16)
        map_x = np.clip(grid_x + dx, 0, w - 1)
        map_y = np.clip(grid_y + dy, 0, h - 1)
        out = cv2.remap(out, map_x, map_y, cv2.INTER_NEAREST)
    return _gaussian_sigma(out, sigma)


GLASS_BLUR = Corruption(
    name="glass_blur",
    params=((0.7, 1, 2), (0.9, 2, 1), (1.0, 2, 3), (1.1, 3, 2), (1.5, 4, 2)),
    fn=_glass_blur,
    sources=("ImageNet-C / imagecorruptions glass_blur",),
    description="frosted-glass blur (local scrambling)",
)


# --- pixelate (ImageNet-C / imagecorruptions `pixelate`) ----------------------------------------------------------
# Box-downsample by c = [.6, .5, .4, .3, .25] (PIL BOX ~ cv2.INTER_AREA), nearest-neighbour upsample.
def _area_crop(shape_hw: tuple[int, int], factor: float) -> tuple[int, int]:
    """(rows, cols) of the top-left crop that an area downsample by ``factor`` to (int(H factor), int(W factor))
    reads.

    OpenCV's INTER_AREA runs a fast block mean when the source is exactly k times the output (k integer) and a
    general weighted path otherwise, 2-3x slower. When 1 / factor is an integer k, the crop is k times the output
    (a remainder of fewer than k rows / columns dropped at the bottom / right: 1600 / 3 -> 533 reads 1599
    columns), which keeps OpenCV on the fast path; otherwise it is the whole image.
    """
    h, w = shape_hw
    dh, dw = max(1, int(h * factor)), max(1, int(w * factor))
    k = round(1.0 / factor)
    if k >= 2 and abs(k * factor - 1.0) < 1e-9 and dh * k <= h and dw * k <= w:
        return dh * k, dw * k
    return h, w


def _resample(image_rgb: np.ndarray, factor: float, up: int) -> np.ndarray:
    """Area-downsample by ``factor`` and upsample back with ``up``: the crop ``_area_crop`` reads comes back at its
    own size (each k x k block over its own pixels), and the dropped remainder repeats the last row / column."""
    h, w = image_rgb.shape[:2]
    ch, cw = _area_crop((h, w), factor)
    small = cv2.resize(
        image_rgb[:ch, :cw], (max(1, int(w * factor)), max(1, int(h * factor))), interpolation=cv2.INTER_AREA
    )
    out = cv2.resize(small, (cw, ch), interpolation=up)
    if (ch, cw) != (h, w):
        out = cv2.copyMakeBorder(out, 0, h - ch, 0, w - cw, cv2.BORDER_REPLICATE)
    return out


def _pixelate(image_rgb: np.ndarray, factor: float, rng: np.random.Generator) -> np.ndarray:
    return _resample(image_rgb, factor, cv2.INTER_NEAREST)


PIXELATE = Corruption(
    name="pixelate",
    params=(0.6, 0.5, 0.4, 0.3, 0.25),
    fn=_pixelate,
    random=False,
    sources=("ImageNet-C / imagecorruptions pixelate",),
    description="blocky downsample / nearest upsample",
)


# --- low resolution (IntelliCockpitBench "low resolution"; table ours) --------------------------------------------
# Area-downsample by 1/2, 1/3, 1/4, 1/6, 1/8 and bilinear upsample: a low-resolution sensor shown at full size.
def _low_resolution(image_rgb: np.ndarray, factor: float, rng: np.random.Generator) -> np.ndarray:
    return _resample(image_rgb, factor, cv2.INTER_LINEAR)


LOW_RESOLUTION = Corruption(
    name="low_resolution",
    params=(1 / 2, 1 / 3, 1 / 4, 1 / 6, 1 / 8),
    fn=_low_resolution,
    random=False,
    sources=("IntelliCockpitBench (category); factors: stridegen",),
    description="downsample 2..8x, bilinear upsample",
)

BLUR = (MOTION_BLUR, ZOOM_BLUR, DEFOCUS_BLUR, GLASS_BLUR, PIXELATE, LOW_RESOLUTION)
