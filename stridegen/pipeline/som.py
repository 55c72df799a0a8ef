"""Set-of-Mark overlays (OpenCV only): each region a translucent fill, a contour and its id at the mask's centre.

Set-of-Mark prompting (Yang et al., 2023, "Set-of-Mark Prompting Unleashes Extraordinary Visual Grounding in
GPT-4V") marks image regions with numbered masks so a model can be asked about "Region [2]". Here:

- a region's colour depends only on its id (``region_color``), so region 2 has the same colour in every image;
- the fill blends the colour into the image with weight ``alpha``; the outer contour is drawn opaque (hard
  8-connected lines on the mask's boundary pixels, in the exact colour);
- the label (``"2"`` by default) sits at the mask's interior maximum: the pixel farthest from the mask's boundary
  (the argmax of ``cv2.distanceTransform``, with the image edge counted as boundary), so it lands inside the
  object even for concave or partly cut-off masks; an empty mask gets no label;
- the label's font size scales with the image (``font_scale_for``) and sits on a box of the region's colour with
  black or white text, whichever contrasts more with that colour;
- a label box that would cover more than ``MAX_LABEL_COVER`` of its own region (small, distant objects) is put
  beside the region instead, joined to it by a leader line, so a mark never hides what it marks.

All coordinates are image pixels (x right, y down, pixel centres at integer coordinates).
"""

from __future__ import annotations

import colorsys
from collections.abc import Sequence

import cv2
import numpy as np

from stridegen.core.errors import ConfigError

_FONT = cv2.FONT_HERSHEY_SIMPLEX
PALETTE_SIZE = 24


def _golden_ratio_palette(n: int) -> tuple[tuple[int, int, int], ...]:
    """``n`` RGB colours with hues stepped by the golden-ratio conjugate (0.618...), which spreads consecutive
    ids far apart on the colour wheel; saturation and value alternate between two levels so that ids whose hues
    come close again still differ in brightness."""
    conjugate = (5**0.5 - 1) / 2
    colours = []
    for i in range(n):
        hue = (0.02 + i * conjugate) % 1.0
        sat, val = (0.85, 0.95) if i % 2 == 0 else (0.65, 0.80)
        r, g, b = colorsys.hsv_to_rgb(hue, sat, val)
        colours.append((round(r * 255), round(g * 255), round(b * 255)))
    return tuple(colours)


# The fixed palette: region id i uses PALETTE[i % PALETTE_SIZE].
PALETTE: tuple[tuple[int, int, int], ...] = _golden_ratio_palette(PALETTE_SIZE)


def region_color(region_id: int) -> tuple[int, int, int]:
    """RGB colour of a region id (the same in every image); negative ids are refused."""
    if int(region_id) < 0:
        raise ConfigError(f"region ids are >= 0, got {region_id}")
    return PALETTE[int(region_id) % PALETTE_SIZE]


def relative_luminance(rgb: Sequence[int]) -> float:
    """WCAG 2.x relative luminance of an sRGB colour (0 black .. 1 white): linearise each channel with the sRGB
    transfer function, then weight 0.2126 R + 0.7152 G + 0.0722 B (ITU-R BT.709 primaries)."""

    def lin(c: float) -> float:
        c = c / 255.0
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (lin(float(v)) for v in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def text_color_on(rgb: Sequence[int]) -> tuple[int, int, int]:
    """Black or white, whichever has the higher WCAG contrast ratio (L1 + 0.05) / (L2 + 0.05) against ``rgb``."""
    lum = relative_luminance(rgb)
    on_black = (lum + 0.05) / 0.05
    on_white = 1.05 / (lum + 0.05)
    return (0, 0, 0) if on_black >= on_white else (255, 255, 255)


def font_scale_for(height: int, width: int) -> float:
    """OpenCV font scale for labels: 1.2 on a 900-pixel-high (nuScenes, 1600x900) image (digits about 27 px
    high), proportional to the shorter side, never below 0.4 (still legible on thumbnails)."""
    return max(0.4, 1.2 * min(int(height), int(width)) / 900.0)


def label_anchor(mask: np.ndarray) -> tuple[int, int] | None:
    """(x, y) of the mask pixel farthest from the mask's boundary, or None for an empty mask.

    The mask is padded with one background pixel so the image edge counts as boundary (a car cut by the image
    edge gets its label inside the visible part, away from the edge). Elongated masks have a ridge of maxima
    (a 200x100 rectangle: a 100-pixel line): among the pixels within 1e-3 px of the maximum, the one nearest to
    their centroid is taken (the middle of the ridge), the first in row-major order on a further tie.
    """
    region = _Region.of(mask)
    return None if region is None else region.anchor()


class _Region:
    """One mask cut to its bounding box (``crop``, at ``x0, y0`` in the image): every per-region step works on the
    crop, which gives the same pixels as the whole image (outside the box the mask is empty) at a fraction of the
    cost for the small regions that make up most of a driving image."""

    def __init__(self, crop: np.ndarray, x0: int, y0: int, image_shape: tuple[int, int]) -> None:
        self.crop, self.x0, self.y0 = crop, x0, y0
        self.h, self.w = image_shape

    @classmethod
    def of(cls, mask: np.ndarray) -> _Region | None:
        mask = np.ascontiguousarray(mask)
        mask_u8 = mask.view(np.uint8) if mask.dtype == bool else np.ascontiguousarray(mask != 0, dtype=np.uint8)
        x, y, bw, bh = cv2.boundingRect(mask_u8)
        if bw == 0 or bh == 0:
            return None
        return cls(np.ascontiguousarray(mask_u8[y : y + bh, x : x + bw]), x, y, (mask_u8.shape[0], mask_u8.shape[1]))

    def anchor(self) -> tuple[int, int]:
        """label_anchor's pixel: the distance transform of the crop padded with one background pixel is the
        distance transform of the padded image inside the box (every pixel beyond the box is background)."""
        padded = cv2.copyMakeBorder(self.crop, 1, 1, 1, 1, cv2.BORDER_CONSTANT, value=0)
        dist = cv2.distanceTransform(padded, cv2.DIST_L2, cv2.DIST_MASK_PRECISE)[1:-1, 1:-1]
        ys, xs = np.nonzero(dist >= float(dist.max()) - 1e-3)
        k = int(np.argmin((xs - xs.mean()) ** 2 + (ys - ys.mean()) ** 2))
        return int(xs[k]) + self.x0, int(ys[k]) + self.y0

    def contours(self) -> Sequence[np.ndarray]:
        """Outer contours in image coordinates; the crop gets a one-pixel background margin so that contour
        tracing sees the same neighbourhood as in the whole image (where the box does not reach the image edge)."""
        top, left = int(self.y0 > 0), int(self.x0 > 0)
        bottom = int(self.y0 + self.crop.shape[0] < self.h)
        right = int(self.x0 + self.crop.shape[1] < self.w)
        padded = cv2.copyMakeBorder(self.crop, top, bottom, left, right, cv2.BORDER_CONSTANT, value=0)
        contours, _ = cv2.findContours(
            padded, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE, offset=(self.x0 - left, self.y0 - top)
        )
        return contours

    def area(self) -> int:
        return int(np.count_nonzero(self.crop))

    def covered(self, x0: int, y0: int, box_w: int, box_h: int) -> int:
        """Mask pixels inside the image box (x0, y0, box_w, box_h)."""
        cx0, cy0 = max(x0 - self.x0, 0), max(y0 - self.y0, 0)
        cx1, cy1 = x0 + box_w - self.x0, y0 + box_h - self.y0
        if cx1 <= 0 or cy1 <= 0:
            return 0
        return int(np.count_nonzero(self.crop[cy0:cy1, cx0:cx1]))

    def blend(self, out: np.ndarray, colour: tuple[int, int, int], alpha: float) -> None:
        """Blend ``colour`` into ``out`` under the mask with weight ``alpha``, rounded to nearest, in place.

        The blend of one channel value depends on nothing else, so it is a 256-entry table per channel (computed
        with the same float32 arithmetic as blending the pixels one by one), applied to the box and copied back
        where the mask is set."""
        h, w = self.crop.shape
        window = out[self.y0 : self.y0 + h, self.x0 : self.x0 + w]
        levels = np.arange(256, dtype=np.float32)
        table = np.stack([levels * (1.0 - alpha) + np.float32(c) * alpha for c in colour], axis=-1)  # [256, 3]
        lut = np.clip(np.rint(table), 0, 255).astype(np.uint8).reshape(256, 1, 3)
        blended = cv2.copyTo(cv2.LUT(window, lut), self.crop, window)  # writes into ``window``, a view of ``out``
        if not np.shares_memory(blended, out):  # OpenCV had to allocate: copy the result back
            window[...] = blended


def _check_inputs(image_rgb: np.ndarray, masks: np.ndarray, region_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    image = np.asarray(image_rgb)
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise ConfigError(f"expected an RGB uint8 image [H, W, 3], got {image.dtype} {image.shape}")
    masks = np.asarray(masks, dtype=bool)
    if masks.ndim == 2:
        masks = masks[None]
    if masks.ndim != 3 or masks.shape[1:] != image.shape[:2]:
        raise ConfigError(
            f"masks must be [N, {image.shape[0]}, {image.shape[1]}] to match the image, got {masks.shape}"
        )
    ids = np.asarray(list(region_ids), dtype=np.int64).reshape(-1)
    if ids.shape[0] != masks.shape[0]:
        raise ConfigError(f"{masks.shape[0]} masks but {ids.shape[0]} region ids")
    if ids.size and ids.min() < 0:
        raise ConfigError(f"region ids are >= 0, got {ids.tolist()}")
    return masks, ids


# A label box that would cover more than this share of its own region's pixels goes outside the region, joined to it
# by a leader line: a mark must never hide what it marks (small and distant objects).
MAX_LABEL_COVER = 0.4


def _label_box(text: str, scale: float) -> tuple[int, int, int, int, int]:
    """(box width, box height, padding, text height, thickness) of a label at ``scale``."""
    thickness = max(1, round(scale * 2))
    (tw, th), baseline = cv2.getTextSize(text, _FONT, scale, thickness)
    pad = max(2, round(4 * scale))
    return tw + 2 * pad, th + baseline + 2 * pad, pad, th, thickness


def _clamped(x0: int, y0: int, box_w: int, box_h: int, w: int, h: int) -> tuple[int, int]:
    return int(np.clip(x0, 0, max(0, w - box_w))), int(np.clip(y0, 0, max(0, h - box_h)))


def _region(mask: np.ndarray) -> _Region:
    """The _Region of a non-empty mask."""
    region = _Region.of(mask)
    if region is None:
        raise ConfigError("an empty mask has no region to label")
    return region


def _label_origin(region: _Region, anchor: tuple[int, int], box_w: int, box_h: int) -> tuple[int, int, bool]:
    """Top-left corner of the label box and whether it sits outside the region (with a leader line).

    Centred on ``anchor`` when the box covers at most ``MAX_LABEL_COVER`` of the mask; otherwise the candidate
    beside the mask's bounding box (above, below, right, left, each clamped into the image) that covers the fewest
    mask pixels, the first in that order on a tie."""
    h, w = region.h, region.w
    x0, y0 = _clamped(anchor[0] - box_w // 2, anchor[1] - box_h // 2, box_w, box_h, w, h)
    if region.covered(x0, y0, box_w, box_h) <= MAX_LABEL_COVER * region.area():
        return x0, y0, False
    top, left = region.y0, region.x0
    bottom, right = top + region.crop.shape[0] - 1, left + region.crop.shape[1] - 1
    gap = 3
    candidates = [
        (anchor[0] - box_w // 2, top - gap - box_h),
        (anchor[0] - box_w // 2, bottom + 1 + gap),
        (right + 1 + gap, anchor[1] - box_h // 2),
        (left - gap - box_w, anchor[1] - box_h // 2),
    ]
    placed = [_clamped(cx, cy, box_w, box_h, w, h) for cx, cy in candidates]
    best = min(range(len(placed)), key=lambda i: (region.covered(*placed[i], box_w, box_h), i))
    return placed[best][0], placed[best][1], True


def _draw_label(
    canvas: np.ndarray, region: _Region, text: str, anchor: tuple[int, int], colour: tuple[int, int, int], scale: float
) -> None:
    """Text on a filled box of ``colour``, centred on ``anchor`` or, for a region the box would hide, beside the
    region with a leader line to ``anchor`` (``_label_origin``); the box always stays inside the image."""
    box_w, box_h, pad, th, thickness = _label_box(text, scale)
    x0, y0, outside = _label_origin(region, anchor, box_w, box_h)
    if outside:
        cx = int(np.clip(anchor[0], x0, x0 + box_w - 1))
        cy = int(np.clip(anchor[1], y0, y0 + box_h - 1))
        cv2.line(canvas, (cx, cy), anchor, colour, max(1, thickness // 2), cv2.LINE_AA)
    cv2.rectangle(canvas, (x0, y0), (x0 + box_w - 1, y0 + box_h - 1), colour, -1)
    cv2.rectangle(canvas, (x0, y0), (x0 + box_w - 1, y0 + box_h - 1), text_color_on(colour), 1)
    cv2.putText(canvas, text, (x0 + pad, y0 + pad + th), _FONT, scale, text_color_on(colour), thickness, cv2.LINE_AA)


def draw_set_of_marks(
    image_rgb: np.ndarray,
    masks: np.ndarray,
    region_ids: Sequence[int],
    alpha: float = 0.4,
    label_format: str = "{id}",
    contour_thickness: int | None = None,
    font_scale: float | None = None,
) -> np.ndarray:
    """A copy of ``image_rgb`` (RGB uint8 [H, W, 3]) with the Set-of-Mark overlay of ``masks`` ([N, H, W] bool).

    ``region_ids[i]`` names mask i: it picks the colour (``region_color``) and the label
    (``label_format.format(id=...)``, e.g. ``"[{id}]"`` for bracketed labels). Fills are drawn first, then every
    contour, then every label, so labels are never hidden by another region's fill. ``alpha`` in [0, 1] is the
    fill's weight; contour thickness and font scale default to values scaled to the image size.
    """
    if not 0.0 <= float(alpha) <= 1.0:
        raise ConfigError(f"alpha must be in [0, 1], got {alpha}")
    masks, ids = _check_inputs(image_rgb, masks, region_ids)
    out = np.array(image_rgb, dtype=np.uint8, copy=True, order="C")
    h, w = out.shape[:2]
    scale = float(font_scale) if font_scale is not None else font_scale_for(h, w)
    thickness = int(contour_thickness) if contour_thickness is not None else max(1, round(min(h, w) / 300))
    colours = [region_color(int(i)) for i in ids]
    regions = [_Region.of(mask) for mask in masks]
    for region, colour in zip(regions, colours, strict=True):
        if region is not None:
            region.blend(out, colour, float(alpha))
    for region, colour in zip(regions, colours, strict=True):
        if region is not None:
            cv2.drawContours(out, region.contours(), -1, colour, thickness, cv2.LINE_8)
    for region, colour, rid in zip(regions, colours, ids, strict=True):
        if region is not None:
            _draw_label(out, region, label_format.format(id=int(rid)), region.anchor(), colour, scale)
    return out
