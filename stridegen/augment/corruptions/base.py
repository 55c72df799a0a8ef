"""Corruption protocol: a named image degradation with five severity levels.

A ``Corruption`` holds a severity table (one parameter set per level 1..5) and a function
``fn(image_rgb, params, rng) -> image_rgb``. Every random draw comes from the ``numpy.random.Generator`` passed in,
so the same (image, severity, seed) always gives the same bytes.

Corruptions that move pixels (lens distortion, elastic) are built from a ``PixelMap``: ``warp`` returns the map
(for each destination pixel, the source coordinate it samples) and ``apply`` samples the image through the same
map, so a binary mask sampled through ``PixelMap.apply_mask`` (nearest neighbour) lines up with the image.
Camera-set corruptions (camera crash, frame lost) act on all the cameras of one frame and report which channels
they removed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np

from stridegen.core.errors import ConfigError

SEVERITIES: tuple[int, ...] = (1, 2, 3, 4, 5)

ImageFn = Callable[[np.ndarray, Any, np.random.Generator], np.ndarray]
WarpFn = Callable[[tuple[int, int], Any, np.random.Generator], "PixelMap"]


def check_severity(severity: int) -> int:
    """Return ``severity`` as an int in 1..5, or raise ConfigError."""
    if isinstance(severity, bool) or not isinstance(severity, (int, np.integer)):
        raise ConfigError(f"severity must be an integer in 1..5, got {severity!r}")
    if int(severity) not in SEVERITIES:
        raise ConfigError(f"severity must be in 1..5, got {severity}")
    return int(severity)


def check_image(image_rgb: np.ndarray) -> np.ndarray:
    """Validate an RGB uint8 image of shape (H, W, 3); returns it C-contiguous (OpenCV needs that)."""
    if not isinstance(image_rgb, np.ndarray) or image_rgb.dtype != np.uint8:
        raise ConfigError(f"expected a uint8 numpy image, got {getattr(image_rgb, 'dtype', type(image_rgb))}")
    if image_rgb.ndim != 3 or image_rgb.shape[2] != 3 or image_rgb.shape[0] < 2 or image_rgb.shape[1] < 2:
        raise ConfigError(f"expected an RGB image of shape (H, W, 3), got {image_rgb.shape}")
    return np.ascontiguousarray(image_rgb)


def to_uint8(image: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """Round ``image * scale`` (scale > 0) to uint8 with saturation (values outside [0, 255] are clipped).

    Rounds half to even, like np.rint. Large arrays go through cv2.convertScaleAbs (one SIMD pass, 4x faster
    than numpy's rint / clip / astype); negatives are zeroed first since it takes the absolute value.
    """
    if image.size < 4096 or image.ndim not in (2, 3) or (image.ndim == 3 and image.shape[2] > 4):
        return np.clip(np.rint(image * np.float32(scale)), 0, 255).astype(np.uint8)
    return cv2.convertScaleAbs(np.maximum(image, 0), alpha=float(scale))


def lookup_uint8(image: np.ndarray, table: np.ndarray) -> np.ndarray:
    """``table[image]`` for a uint8 image and a 256-entry uint8 table, as a fresh array (``cv2.LUT``'s result).

    StringZilla's SIMD byte translation (~0.1 ms for a 1600x900 RGB image against ~0.85 ms for cv2.LUT): the bytes
    are translated in one pass. Equal to cv2.LUT by definition (a table lookup per byte; tested)."""
    import stringzilla

    image = np.ascontiguousarray(image, dtype=np.uint8)
    table = np.ascontiguousarray(table, dtype=np.uint8).reshape(256)
    out = np.empty_like(image)
    if image.size:
        stringzilla.translate(image.reshape(-1).data, table.tobytes(), out=out.reshape(-1).data)
    return out


# --- work buffers -------------------------------------------------------------------------------------------------
# A corruption of a 1600x900 image makes several full-size intermediates. Allocated afresh on every call, each one is
# page-faulted in 4 KiB pages once the allocator has handed the memory back to the kernel between calls (it does, with
# several multi-megabyte temporaries alive at once): ~2 us a page, 1-2 ms per 4 MB buffer, often more than the
# arithmetic itself. ``scratch`` instead keeps, per thread, the last buffers of each use site and shape, so the same
# pages serve every call. Only intermediates live there: a corruption's result is always a fresh array.
_SCRATCH_BYTES = 256 << 20  # per thread; least recently used buffers are dropped beyond it


class _ScratchPool(threading.local):
    def __init__(self) -> None:
        self.buffers: OrderedDict[tuple[str, tuple[int, ...], str], np.ndarray] = OrderedDict()
        self.nbytes = 0


_SCRATCH = _ScratchPool()

# What ``scratch`` cannot hold (results, OpenCV's own outputs and temporaries) glibc's malloc returns to the kernel
# when the freed top of its heap exceeds the trim threshold, and it maps blocks above the mmap threshold afresh on
# every call: both thresholds adapt to the process's history, so a process that applies one corruption to image
# after image (a `stridegen augment` worker) page-faults its big temporaries on every call. Fixed thresholds keep
# them: measured in a fresh process, 1600x900, severity 3: motion_blur 11.5 -> 6.4 ms (1508 -> 0 page faults a
# call), gaussian_noise 16.2 -> 11.7 ms (1572 -> 0), lens_obstacle 12.1 -> 8.9 ms; peak memory unchanged.
# mallopt parameters: glibc malloc.h / mallopt(3).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_KEEP_FREED_BYTES = 256 << 20  # freed memory at the heap's top kept for reuse, as the scratch pool's bound
_MAP_ABOVE_BYTES = 32 << 20  # blocks above this are still mapped afresh (glibc's largest mmap threshold)
_kept_freed_memory = False


def keep_freed_memory() -> bool:
    """Make glibc's malloc keep freed memory for the next call (the module comment above); once per process, a
    no-op where the C library is not glibc. Returns whether the thresholds are set."""
    global _kept_freed_memory
    if _kept_freed_memory:
        return True
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        libc = None
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None or not hasattr(libc, "gnu_get_libc_version"):  # musl and macOS have no such thresholds
        return False
    _kept_freed_memory = bool(mallopt(_M_MMAP_THRESHOLD, _MAP_ABOVE_BYTES)) and bool(
        mallopt(_M_TRIM_THRESHOLD, _KEEP_FREED_BYTES)
    )
    return _kept_freed_memory


def scratch(site: str, shape: tuple[int, ...], dtype: np.dtype[Any] | type) -> np.ndarray:
    """An uninitialised C-contiguous work buffer, reused by later calls with the same ``site`` (a name unique to the
    calling code), shape and dtype in this thread. Its contents are undefined and are overwritten by the next call
    with the same key: never return it (or a view of it) from a corruption."""
    key = (site, tuple(int(n) for n in shape), np.dtype(dtype).str)
    buffers = _SCRATCH.buffers
    found = buffers.get(key)
    if found is not None:
        buffers.move_to_end(key)
        return found
    buffer = np.empty(key[1], dtype=dtype)
    buffers[key] = buffer
    _SCRATCH.nbytes += buffer.nbytes
    while _SCRATCH.nbytes > _SCRATCH_BYTES and len(buffers) > 1:
        _, dropped = buffers.popitem(last=False)
        _SCRATCH.nbytes -= dropped.nbytes
    return buffer


@dataclass(frozen=True)
class PixelMap:
    """A backward pixel mapping: destination pixel (row r, col c) samples the source at (map_y[r,c], map_x[r,c]).

    Coordinates are pixel centres, as in ``cv2.remap``. ``border`` is the OpenCV border mode used for the image
    (masks always use a zero border: a mask pixel mapped from outside the image is "not the object").
    """

    map_x: np.ndarray  # (H, W) float32, source column of each destination pixel
    map_y: np.ndarray  # (H, W) float32, source row of each destination pixel
    border: int = cv2.BORDER_CONSTANT

    @property
    def shape(self) -> tuple[int, int]:
        return self.map_x.shape

    def _check(self, array: np.ndarray) -> None:
        if array.shape[:2] != self.shape:
            raise ConfigError(f"pixel map is {self.shape}, array is {array.shape[:2]}")

    def apply_image(self, image: np.ndarray) -> np.ndarray:
        """Sample an image through the map (bilinear)."""
        self._check(image)
        return cv2.remap(np.ascontiguousarray(image), self.map_x, self.map_y, cv2.INTER_LINEAR, borderMode=self.border)

    def apply_mask(self, mask: np.ndarray) -> np.ndarray:
        """Sample a binary HxW mask (bool or uint8) through the map with nearest neighbour; keeps the dtype."""
        self._check(mask)
        if mask.ndim != 2:
            raise ConfigError(f"masks must be HxW, got shape {mask.shape}")
        as_u8 = mask.astype(np.uint8) if mask.dtype == np.bool_ else np.ascontiguousarray(mask)
        # cv2.remap's nearest rounds the source coordinate; BORDER_CONSTANT 0 = outside the image is empty.
        out = cv2.remap(as_u8, self.map_x, self.map_y, cv2.INTER_NEAREST, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
        return out.astype(np.bool_) if mask.dtype == np.bool_ else out


@dataclass(frozen=True)
class Corruption:
    """One named corruption with a five-level severity table.

    ``params[s - 1]`` are the parameters of severity ``s``. ``sources`` names where the formula and the table come
    from (documented in docs/augment.md). ``random`` says whether ``apply`` draws from the generator.
    """

    name: str
    params: tuple[Any, ...]
    sources: tuple[str, ...]
    description: str
    fn: ImageFn | None = None
    warp_fn: WarpFn | None = None
    random: bool = True
    aliases: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if len(self.params) != len(SEVERITIES):
            raise ConfigError(f"corruption {self.name!r} needs {len(SEVERITIES)} severity levels")
        if (self.fn is None) == (self.warp_fn is None):
            raise ConfigError(f"corruption {self.name!r} needs exactly one of fn / warp_fn")

    @property
    def moves_pixels(self) -> bool:
        return self.warp_fn is not None

    def level(self, severity: int) -> Any:
        """The parameters of one severity level."""
        return self.params[check_severity(severity) - 1]

    def apply(self, image_rgb: np.ndarray, severity: int, rng: np.random.Generator) -> np.ndarray:
        """Corrupt an RGB uint8 image; returns a new RGB uint8 image of the same shape."""
        params = self.level(severity)
        image_rgb = check_image(image_rgb)
        if self.warp_fn is not None:
            return self.warp_fn(image_rgb.shape[:2], params, rng).apply_image(image_rgb)
        assert self.fn is not None
        out = self.fn(image_rgb, params, rng)
        assert out.shape == image_rgb.shape and out.dtype == np.uint8, self.name
        return out

    def warp(self, shape_hw: tuple[int, int], severity: int, rng: np.random.Generator) -> PixelMap:
        """The pixel map ``apply`` uses for an image of ``shape_hw`` given a generator in the same state.

        Raises ConfigError for corruptions that do not move pixels (their masks are unchanged).
        """
        if self.warp_fn is None:
            raise ConfigError(f"corruption {self.name!r} does not move pixels: masks stay as they are")
        return self.warp_fn((int(shape_hw[0]), int(shape_hw[1])), self.level(severity), rng)

    def apply_with_masks(
        self, image_rgb: np.ndarray, masks: Sequence[np.ndarray], severity: int, rng: np.random.Generator
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """Corrupt an image and transform its masks consistently (masks are returned unchanged where no pixel
        moves)."""
        if self.warp_fn is None:
            return self.apply(image_rgb, severity, rng), [np.asarray(m) for m in masks]
        image_rgb = check_image(image_rgb)
        pixel_map = self.warp(image_rgb.shape[:2], severity, rng)
        return pixel_map.apply_image(image_rgb), [pixel_map.apply_mask(np.asarray(m)) for m in masks]


CameraFn = Callable[[Sequence[str], Any, np.random.Generator], list[str]]


@dataclass(frozen=True)
class CameraSetCorruption:
    """A corruption of the set of cameras of one frame: some cameras deliver no image.

    ``choose(channels_sorted, params, rng)`` returns the channels to drop; a dropped camera's image is replaced by
    a black image of the same shape (the nuScenes-C convention), and its QA has no visual evidence.
    """

    name: str
    params: tuple[Any, ...]
    sources: tuple[str, ...]
    description: str
    choose: CameraFn
    random: bool = True

    def __post_init__(self) -> None:
        if len(self.params) != len(SEVERITIES):
            raise ConfigError(f"corruption {self.name!r} needs {len(SEVERITIES)} severity levels")

    def level(self, severity: int) -> Any:
        return self.params[check_severity(severity) - 1]

    def dropped(self, channels: Sequence[str], severity: int, rng: np.random.Generator) -> list[str]:
        """The channels dropped at this severity. Draws follow the sorted channel names, so the result does not
        depend on the order of ``channels``."""
        params = self.level(severity)
        ordered = sorted(set(channels))
        if len(ordered) != len(channels):
            raise ConfigError(f"duplicate camera channels: {list(channels)}")
        return sorted(self.choose(ordered, params, rng))

    def apply_to_cameras(
        self, images: Mapping[str, np.ndarray], severity: int, rng: np.random.Generator
    ) -> tuple[dict[str, np.ndarray], list[str]]:
        """Return (images with the dropped cameras blacked out, sorted dropped channel names)."""
        for image in images.values():
            check_image(image)  # validation only: the kept images are copied below
        dropped = set(self.dropped(list(images), severity, rng))
        out = {ch: (np.zeros_like(img) if ch in dropped else img.copy()) for ch, img in images.items()}
        return out, sorted(dropped)
