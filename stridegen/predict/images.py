"""A question's frames as the model sees them: each stored image resized to the profile's frame size, its masks
resized with nearest-neighbour sampling, the marks drawn by the Set-of-Mark renderer the exports use
(``stridegen.pipeline.som.draw_set_of_marks``), and the result encoded as JPEG.

The order follows the official STRIDE-QA-Bench inference (image resized first, mask resized to it, then drawn), so
the marks keep their size on a small frame. Resizing uses area averaging (OpenCV ``INTER_AREA``, the
alias-free choice for shrinking); the official loop uses PIL's default filter, so pixels differ slightly.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from stridegen.core.cache import LruCache
from stridegen.formats.images import decode_image, encode_jpeg
from stridegen.pipeline.som import draw_set_of_marks
from stridegen.predict.prompts import PromptProfile
from stridegen.predict.questions import Frame

RENDERED_CACHE = 64  # drawn frames a worker keeps: the questions of one keyframe image share theirs


def render_frame(
    image: bytes,
    masks: np.ndarray,
    region_ids: Sequence[int],
    size: tuple[int, int] | None,
    alpha: float,
    jpeg_quality: int,
    what: str = "image",
) -> bytes:
    """The JPEG bytes of ``image`` (stored bytes) resized to ``size`` (width, height; None: as stored) with
    ``masks`` ([N, H, W] bool at the stored size, or any size: they are resized to the frame) marked."""
    rgb = decode_image(image, what)
    if size is not None and (rgb.shape[1], rgb.shape[0]) != tuple(size):
        rgb = cv2.resize(rgb, tuple(size), interpolation=cv2.INTER_AREA)
    h, w = rgb.shape[:2]
    if len(masks) and masks.shape[1:] != (h, w):
        masks = np.stack(
            [cv2.resize(m.astype(np.uint8), (w, h), interpolation=cv2.INTER_NEAREST).astype(bool) for m in masks]
        )
    if len(masks) == 0:
        masks = np.zeros((0, h, w), dtype=bool)
    drawn = draw_set_of_marks(rgb, masks, list(region_ids), alpha=alpha)
    return encode_jpeg(drawn, jpeg_quality).tobytes()


class FrameRenderer:
    """Draws a worker's frames once each (``RENDERED_CACHE`` most recent, keyed by what is drawn)."""

    def __init__(self, profile: PromptProfile) -> None:
        self.size = profile.image.size()
        self.alpha = profile.marks.alpha
        self.quality = profile.image.jpeg_quality
        self._cache: LruCache[tuple[object, ...], bytes] = LruCache(RENDERED_CACHE)

    def render(self, frame: Frame) -> bytes:
        def draw() -> bytes:
            image, masks, ids = frame.load()
            return render_frame(image, masks, ids, self.size, self.alpha, self.quality, what=str(frame.key[:4]))

        return self._cache.get(frame.key, draw)
