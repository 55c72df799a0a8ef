"""Exact per-pixel sampling of a random uint8 -> uint8 map: a "random lookup table".

Every noise corruption here turns each channel value x (0..255) into a random output value y (0..255) whose law
depends on x only: additive Gaussian noise rounded and clipped, Poisson photon counts scaled back to 0..255,
salt-and-pepper. ``LevelLaw`` holds that law as a 256 x 256 table of cumulative probabilities
``cdf[x, y] = P(out <= y | in = x)``, and ``sample_levels`` draws one output per channel value by inversion
(y = min{y : U < cdf[x, y]}, U uniform on [0, 1)), which has exactly the tabled law.

Inversion is made fast with a guide table (Chen & Asau 1974, "On generating random variates from an empirical
distribution"; Devroye 1986, "Non-Uniform Random Variate Generation", section III.2.4): [0, 1) is cut into
M = 2^bits equal bins; ``guide[x, b]`` is the output for every U in bin b when no cdf step falls inside the bin,
else 256 + the first candidate. Per channel value the sampler draws 16 random bits (the bin), gathers the guide
entry with one ``cv2.remap`` (an integer gather at (column b, row x)), and only the few values in a bin holding a
step (at most 255 of the M bins of a row) draw a fresh float64 V for U = (b + V) / M and step through the cdf.
U's position inside its bin is uniform and independent of the bin, so the result has the law of the table, exactly
up to float64 rounding of the cdf.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from stridegen.augment.corruptions.base import scratch

LEVELS = 256
GUIDE_BITS = 14  # 256 x 16384 uint16 guide (8 MiB): at most 255 / 16384 = 1.6 % of the bins need the refinement
IN_LEVELS = np.arange(LEVELS, dtype=np.float64)[:, None]  # input level x, one row each
OUT_LEVELS = np.arange(LEVELS, dtype=np.float64)[None, :]  # output level y, one column each
_REMAP_MAX_SIDE = 16384  # cv2.remap takes images (and maps) under 32767 px a side


@dataclass(frozen=True)
class LevelLaw:
    """Per-level output law: ``cdf[x, y] = P(out <= y | in = x)`` (256 x 256 float64, last column 1) and its guide
    table (256 x 2^bits uint16, see the module docstring)."""

    cdf: np.ndarray
    guide: np.ndarray

    @property
    def bits(self) -> int:
        return int(self.guide.shape[1]).bit_length() - 1


def level_law(cdf: np.ndarray, bits: int = GUIDE_BITS) -> LevelLaw:
    """Build a ``LevelLaw`` from ``cdf[x, y] = P(out <= y | in = x)`` (256 x 256, non-decreasing along y; the last
    column is taken as 1). ``bits`` (<= 14: remap takes coordinates under 32767) sets the guide table's 2^bits bins
    per row."""
    cdf = np.clip(np.asarray(cdf, dtype=np.float64), 0.0, 1.0)
    if cdf.shape != (LEVELS, LEVELS) or not 1 <= bits <= 14:
        raise ValueError(f"expected a 256 x 256 cdf and 1 <= bits <= 14, got {cdf.shape} and {bits}")
    cdf = np.maximum.accumulate(cdf, axis=1)  # rounding in a caller's formula never makes it decrease
    cdf[:, -1] = 1.0  # U < 1 always stops at the last value
    m = 1 << bits
    scaled = cdf[:, :-1] * m  # exact: m is a power of two
    # X(b) = #{y : cdf[y] <= b / m} = #{y : ceil(m cdf[y]) <= b}: a histogram of the ceilings, accumulated.
    ceil = np.minimum(np.ceil(scaled), m).astype(np.int64)
    rows = np.arange(LEVELS, dtype=np.int64)[:, None]
    hist = np.bincount((rows * (m + 1) + ceil).ravel(), minlength=LEVELS * (m + 1)).reshape(LEVELS, m + 1)
    guide = np.cumsum(hist[:, :m], axis=1).astype(np.uint16)
    # A bin b is ambiguous when a step lies strictly inside it: b < m cdf[y] < b + 1.
    floor = np.floor(scaled)
    inside = (floor < scaled) & (floor < m)
    r, y = np.nonzero(inside)
    b = floor[r, y].astype(np.int64)
    guide[r, b] |= np.uint16(LEVELS)  # 256 + first candidate (the count, < 256, keeps its bits)
    return LevelLaw(cdf=cdf, guide=guide)


def _gather(guide: np.ndarray, bins: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """guide[levels, bins] for (rows, cols) uint16 bins and uint8 levels, gathered by cv2.remap (nearest neighbour
    at integer coordinates), in blocks that keep remap's sides under 32767. The result is a reused work buffer
    (``base.scratch``), as is the coordinate map."""
    out = scratch("gather-out", bins.shape, guide.dtype)
    rows, cols = bins.shape
    for r in range(0, rows, _REMAP_MAX_SIDE):
        for c in range(0, cols, _REMAP_MAX_SIDE):
            block = np.s_[r : r + _REMAP_MAX_SIDE, c : c + _REMAP_MAX_SIDE]
            xy = scratch("gather-xy", (*bins[block].shape, 2), np.int16)
            cv2.merge([bins[block].view(np.int16), levels[block].astype(np.int16)], dst=xy)
            # the stubs want a map2; OpenCV takes None for a CV_16SC2 map used with nearest neighbour
            cv2.remap(guide, xy, None, cv2.INTER_NEAREST, dst=out[block])  # type: ignore[call-overload]
    return out


def sample_levels(image: np.ndarray, law: LevelLaw, rng: np.random.Generator) -> np.ndarray:
    """Replace every uint8 value x of ``image`` by an independent draw from ``law``'s row x (same shape, uint8).

    Draws, in order: 16 random bits per value (C order), then one float64 per value whose bin holds a cdf step.
    """
    levels = np.ascontiguousarray(image).reshape(image.shape[0], -1)  # (H, W * channels)
    bins = rng.integers(0, 1 << 16, size=levels.shape, dtype=np.uint16)
    bins &= np.uint16((1 << law.bits) - 1)
    out = _gather(law.guide, bins, levels).reshape(-1)  # a work buffer: only its uint8 copy below is returned
    flat, bins = levels.reshape(-1), bins.reshape(-1)
    todo = np.flatnonzero(out >= LEVELS)
    if todo.size:
        u = (bins[todo] + rng.random(todo.size)) * (1.0 / (1 << law.bits))
        level = flat[todo].astype(np.intp)
        y = (out[todo] - LEVELS).astype(np.intp)
        active = np.arange(todo.size)
        while active.size:  # step while cdf[y] <= U; cdf[x, 255] = 1 > U stops every value
            step = law.cdf[level[active], y[active]] <= u[active]
            active = active[step]
            y[active] += 1
        out[todo] = y
    return out.astype(np.uint8).reshape(image.shape)


# Bit generators whose raw output (BitGenerator.random_raw) is 64 independent uniform bits. (MT19937's raw
# output is 32 bits wide, in a uint64.)
_FULL_64_BIT = (np.random.PCG64, np.random.PCG64DXSM, np.random.Philox, np.random.SFC64)


def random_uint16(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Independent uniform 16-bit values of ``shape`` (uint16, C order), deterministic for the generator's state.

    With a 64-bit bit generator (``default_rng``'s PCG64) each raw 64-bit word is cut into four 16-bit values
    (little-endian order: low 16 bits first): every bit is uniform and independent, so the law is exactly that of
    ``rng.integers(0, 2**16, dtype=np.uint16)`` (which draws them one call per value, 5x slower), but the values
    differ. Other bit generators take ``rng.integers``.
    """
    n = math.prod(shape)
    if not isinstance(rng.bit_generator, _FULL_64_BIT):
        return rng.integers(0, 1 << 16, size=shape, dtype=np.uint16)
    words = rng.bit_generator.random_raw(-(-n // 4))
    return words.astype("<u8", copy=False).view("<u2")[:n].astype(np.uint16, copy=False).reshape(shape)


def rounded_gaussian_cdf(mean: np.ndarray, sigma: float) -> np.ndarray:
    """P(clip(rint(mean + sigma Z)) <= y) for Z ~ N(0, 1), y = 0..255: Phi((y + 1/2 - mean) / sigma), last column 1.

    ``mean`` broadcasts against the 256 output levels along the last axis (a column of per-row means)."""
    from scipy.special import ndtr

    cdf = ndtr((OUT_LEVELS + 0.5 - mean) / sigma)
    cdf[..., -1] = 1.0
    return cdf


def rounded_scaled_poisson_cdf(lam: np.ndarray, scale: float) -> np.ndarray:
    """P(clip(rint(scale P)) <= y) for P ~ Poisson(lam) (one row per entry of the 1-D ``lam``), y = 0..255.

    rint(scale k) is non-decreasing in k, so the event is P <= k_max(y) = max{k : rint(scale k) <= y}: the Poisson
    cdf (scipy.special.pdtr) at k_max(y). Counts with rint(scale k) >= 255 all give 255."""
    from scipy.special import pdtr

    k = np.arange(int(np.ceil(255.0 / scale)) + 1, dtype=np.float64)
    y_of_k = np.minimum(np.rint(k * scale), 255.0)
    k_max = np.searchsorted(y_of_k, OUT_LEVELS[0], side="right") - 1  # >= 0: rint(0) = 0
    return pdtr(k[k_max][None, :], np.asarray(lam, dtype=np.float64)[:, None])


# --- iid integer offsets: out = clip(x + N) ------------------------------------------------------------------------
# When the law of the output is that of x + N clipped, N independent of x (additive noise), one table of N serves
# every level: 16 random bits r = 256 hi + lo per value pick bin r of [0, 1), a 256 x 256 int16 table (128 KiB, it
# stays in cache, unlike the 8 MiB per-level guide) gives N for that bin, gathered by cv2.remap at (column lo, row
# hi), and cv2.add saturates x + N to 0..255 in the same pass as the conversion. As above, a bin holding a cdf step
# is marked (OFFSET_REFINE) and only its values draw a float64 V for U = (r + V) / 2^16.
OFFSET_REFINE = np.iinfo(np.int16).max  # table mark: a cdf step lies inside this bin
_OFFSET_BITS = 16


@dataclass(frozen=True)
class OffsetLaw:
    """Law of an integer offset N: ``cdf[j] = P(N <= first + j)`` (float64, last entry 1) and the 256 x 256 int16
    table of N per 16-bit bin (``OFFSET_REFINE`` where the bin holds a step)."""

    first: int
    cdf: np.ndarray
    table: np.ndarray


def offset_law(cdf: np.ndarray, first: int) -> OffsetLaw:
    """Build an ``OffsetLaw`` from ``cdf[j] = P(N <= first + j)`` (non-decreasing; the last entry is taken as 1).
    Offsets must fit in int16 below ``OFFSET_REFINE``."""
    cdf = np.maximum.accumulate(np.clip(np.asarray(cdf, dtype=np.float64), 0.0, 1.0))
    cdf[-1] = 1.0
    if first < np.iinfo(np.int16).min or first + cdf.size - 1 >= OFFSET_REFINE:
        raise ValueError(f"offsets {first}..{first + cdf.size - 1} do not fit in int16")
    m = 1 << _OFFSET_BITS
    edges = np.arange(m, dtype=np.float64) / m  # left edge b / m of every bin
    table = (first + np.searchsorted(cdf, edges, side="right")).astype(np.int16)  # #{j : cdf[j] <= b / m}
    scaled = cdf[:-1] * m
    inside = np.floor(scaled) < scaled  # b < m cdf[j] < b + 1 for b = floor(m cdf[j]) (< m: cdf[j] < 1 here)
    table[np.floor(scaled[inside]).astype(np.int64)] = OFFSET_REFINE
    return OffsetLaw(first=int(first), cdf=cdf, table=table.reshape(256, 256))


def add_offsets(image: np.ndarray, law: OffsetLaw, rng: np.random.Generator) -> np.ndarray:
    """clip(x + N) for every uint8 value x of ``image``, N drawn independently from ``law`` (same shape, uint8).

    Draws, in order: 16 random bits per value (``random_uint16``, read as a plane of high bytes then a plane of low
    bytes, C order), then one float64 per value whose bin holds a cdf step.
    """
    levels = np.ascontiguousarray(image).reshape(image.shape[0], -1)  # (H, W * channels)
    bits = random_uint16(rng, levels.shape)
    hi, lo = bits.view(np.uint8).reshape(2, *levels.shape)  # the 2 n random bytes as two planes
    zero = scratch("add_offsets-zero", lo.shape, np.uint8)
    zero.fill(0)
    # int16 pairs (x = lo, y = hi): little-endian bytes (lo, 0, hi, 0), the CV_16SC2 map cv2.remap takes. The map and
    # the offsets live in reused work buffers (base.scratch: no fresh 8-17 MB temporaries and their page faults).
    xy = cv2.merge([lo, zero, hi, zero], dst=scratch("add_offsets-xy", (*levels.shape, 4), np.uint8)).view(np.int16)
    offsets = scratch("add_offsets-offsets", levels.shape, np.int16)
    rows, cols = levels.shape
    for r in range(0, rows, _REMAP_MAX_SIDE):
        for c in range(0, cols, _REMAP_MAX_SIDE):
            block = np.s_[r : r + _REMAP_MAX_SIDE, c : c + _REMAP_MAX_SIDE]
            # the stubs want a map2; OpenCV takes None for a CV_16SC2 map used with nearest neighbour
            block_xy = np.ascontiguousarray(xy[block])
            cv2.remap(law.table, block_xy, None, cv2.INTER_NEAREST, dst=offsets[block])  # type: ignore[call-overload]
    out = cv2.add(levels, offsets, dst=np.empty_like(levels), dtype=cv2.CV_8U)  # saturates x + N to 0..255
    todo = np.flatnonzero(offsets == OFFSET_REFINE)
    if todo.size:
        r16 = hi.reshape(-1)[todo].astype(np.float64) * 256.0 + lo.reshape(-1)[todo]
        u = (r16 + rng.random(todo.size)) * (1.0 / (1 << _OFFSET_BITS))
        n = law.first + np.searchsorted(law.cdf, u, side="right")
        out.reshape(-1)[todo] = np.clip(levels.reshape(-1)[todo] + n, 0, 255)
    return out.reshape(image.shape)


def rounded_gaussian_offsets(sigma: float) -> OffsetLaw:
    """The law of rint(sigma Z), Z ~ N(0, 1), with the tails beyond +-255 lumped (x + N clipped to 0..255 cannot
    tell them apart): P(N <= n) = Phi((n + 1/2) / sigma), n = -255..255."""
    from scipy.special import ndtr

    n = np.arange(-255, 256, dtype=np.float64)
    return offset_law(ndtr((n + 0.5) / sigma), -255)
