"""One corruption at one severity applied to the images of a scene, and the warp of their masks (arrays in, arrays
out; ``stridegen.shards.augmented`` applies it to a stored scene, ``stridegen.jobs.augment`` runs it as a job).

- **image corruptions**: each stored image is decoded, corrupted and re-encoded as JPEG at ``jpeg_quality``
  (OpenCV, deterministic). Image row ``i`` of scene ``s`` draws from ``rng_for(seed, corruption, severity, s, i)``,
  so every image has its own stream, independent of the executor and of the other images.
- **corruptions that move pixels** (``Corruption.moves_pixels``: lens distortion, elastic) hand back the
  ``PixelMap`` each image went through; ``warp_masks`` samples that image's masks through the very same map.
- **camera-set corruptions** (camera crash, frame lost): a dropped camera's image becomes a black JPEG of the same
  size (nuScenes-C convention) and kept images keep their bytes unchanged. Camera crash draws the failed cameras
  once per scene (they stay down for the clip: ``rng_for(seed, corruption, severity, scene, "cameras")``); frame
  lost draws each frame's lost cameras independently (``rng_for(seed, corruption, severity, scene, "frame",
  frame_index)``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from stridegen.augment.corruptions import lookup
from stridegen.augment.corruptions.base import CameraSetCorruption, Corruption, PixelMap
from stridegen.core.seeding import rng_for
from stridegen.formats.images import decode_image, encode_jpeg
from stridegen.formats.rle import decode_rle

# Draw scope of the camera-set corruptions (module docstring); unknown ones draw per frame.
CAMERA_SCOPE: dict[str, str] = {"camera_crash": "scene", "frame_lost": "frame"}


@dataclass(frozen=True)
class SceneCorruption:
    """One corruption at one severity as it is applied to the images of a scene (module docstring)."""

    corruption: str  # canonical name
    severity: int
    seed: int = 0
    jpeg_quality: int = 95

    def corruption_object(self) -> Corruption | CameraSetCorruption:
        return lookup(self.corruption)

    @property
    def camera_set(self) -> bool:
        """Whether the corruption drops whole cameras instead of degrading each image."""
        return isinstance(self.corruption_object(), CameraSetCorruption)

    @property
    def moves_pixels(self) -> bool:
        """Whether the corruption samples each image through a ``PixelMap`` (its masks have to follow)."""
        corruption = self.corruption_object()
        return isinstance(corruption, Corruption) and corruption.moves_pixels

    @property
    def draw_scope(self) -> str:
        """``"scene"`` (a camera-set corruption's cameras drawn once per scene) or ``"frame"`` (per frame)."""
        return CAMERA_SCOPE.get(self.corruption, "frame")


def draw_dropped(
    spec: SceneCorruption,
    scene: str,
    channels: Sequence[str],
    channel_of_row: np.ndarray,
    frame_of_row: np.ndarray,
) -> np.ndarray:
    """[I] bool: the image rows (camera ``channels[channel_of_row[i]]`` at frame ``frame_of_row[i]``) of ``scene``
    that a camera-set corruption removes (all False for image corruptions; draws in the module docstring)."""
    n = len(channel_of_row)
    corruption = spec.corruption_object()
    if not isinstance(corruption, CameraSetCorruption) or n == 0:
        return np.zeros(n, dtype=bool)
    name, sev = spec.corruption, spec.severity
    if spec.draw_scope == "scene":
        gone = set(corruption.dropped(channels, sev, rng_for(spec.seed, name, sev, scene, "cameras")))
        return np.array([channels[c] in gone for c in channel_of_row], dtype=bool)
    out = np.zeros(n, dtype=bool)
    for frame in np.unique(frame_of_row):
        gone = set(corruption.dropped(channels, sev, rng_for(spec.seed, name, sev, scene, "frame", int(frame))))
        rows = np.flatnonzero(frame_of_row == frame)
        out[rows] = [channels[channel_of_row[r]] in gone for r in rows]
    return out


def corrupt_images(
    spec: SceneCorruption, scene: str, data: Iterable[np.ndarray], dropped: np.ndarray
) -> Iterator[tuple[np.ndarray, PixelMap | None]]:
    """Each stored image of ``scene`` (``data[i]``: JPEG / PNG bytes as uint8) under ``spec``, in row order: its new
    bytes and the pixel map it was sampled through (None unless the corruption moves pixels). One image at a time,
    so the caller moves that image's masks through its map before the next image is made; ``dropped`` ([I] bool,
    ``draw_dropped``) says which images a camera-set corruption blacks out."""
    corruption = spec.corruption_object()
    for i, stored in enumerate(data):
        raw = np.asarray(stored, dtype=np.uint8)
        if isinstance(corruption, CameraSetCorruption) and not dropped[i]:
            yield raw.copy(), None  # a camera that still delivers keeps its bytes
            continue
        rgb = decode_image(raw.tobytes(), f"{scene}:images/{i}")
        if isinstance(corruption, CameraSetCorruption):
            yield encode_jpeg(np.zeros_like(rgb), spec.jpeg_quality), None
            continue
        rng = rng_for(spec.seed, spec.corruption, spec.severity, scene, i)
        if corruption.moves_pixels:
            pixel_map = corruption.warp(rgb.shape[:2], spec.severity, rng)
            yield encode_jpeg(pixel_map.apply_image(rgb), spec.jpeg_quality), pixel_map
        else:
            yield encode_jpeg(corruption.apply(rgb, spec.severity, rng), spec.jpeg_quality), None


def warp_masks(rle_counts: Sequence[str], pixel_map: PixelMap) -> np.ndarray:
    """[N, H, W] bool: the COCO-RLE masks ``rle_counts`` of one image (stored at the map's H x W) sampled through
    ``pixel_map`` (nearest neighbour; a pixel mapped from outside the image is empty)."""
    h, w = pixel_map.shape
    return np.stack([pixel_map.apply_mask(decode_rle(str(counts), h, w)) for counts in rle_counts])
