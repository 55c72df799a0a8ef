"""``grabcut``: OpenCV GrabCut (Rother, Kolmogorov, Blake, SIGGRAPH 2004) initialised from the projected box.

Algorithm, per object (nearest first):

1. Crop: the projected box ``box_xyxy`` padded by ``pad_px + pad_frac * max(box side)`` on every side and
   clipped to the image, resampled so that its longer side is ``work_side`` pixels (INTER_AREA down, bilinear
   up). Downscaling bounds the cost per object; upscaling small objects matters as much: GrabCut's smoothness cost
   grows with an object's perimeter and its colour evidence with its area, so on a 20-pixel object the cut
   prefers labelling everything background.
2. Initial labels (``cv2.GC_INIT_WITH_MASK``): outside the projected box rectangle -> sure background; inside the
   rectangle but outside the hull -> probable background; inside the hull -> probable foreground; the hull shrunk
   by ``core_frac`` about its vertex mean -> sure foreground (without it, box-initialised GrabCut on real images
   often collapses to an empty mask; docs/segmenters.md); pixels of nearer objects' hulls and masks (the
   occlusion rule) -> sure background.
3. ``iterations`` GrabCut iterations with OpenCV's RNG seeded by ``seed`` before each call (the GMM k-means
   initialisation draws from it), so the same input gives the same masks. The crop mask is upscaled back
   (bilinear, threshold 0.5) and pasted into the image; nearer hulls are removed (occlusion rule).

Quality: ``mean_fg_posterior * hull_precision * fill_factor``. ``mean_fg_posterior`` is the mean over the mask's
crop pixels of P(foreground | colour) = p_fg / (p_fg + p_bg) under GrabCut's own final colour GMMs (equal priors):
near 1 when the object's colours are well separated from the surrounding background, near 0.5 when GrabCut had
nothing to go on. ``hull_precision`` = |mask ∩ hull| / |mask| penalises masks that leak beyond the projected box
(an object never lies outside its own box). ``fill_factor`` = min(1, fill / ``fill_min``) with fill the share of
the visible hull (hull minus nearer objects) the mask covers: a mask much smaller than half of the hull is most
likely a fragment (a heuristic; ``fill_min=0`` switches it off). An empty mask scores 0.

Fallback: when the projected box is narrower than ``min_box_px`` on either side, or the crop holds too few pixels
of either label for GrabCut's GMMs (``MIN_SAMPLES``), the mask is the hull (as ``projected_box``) with quality
``fallback_quality`` (0 by default: no image evidence was used).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import cv2
import numpy as np

from stridegen.pipeline.segment.base import SegmentRequest, SegmentResult
from stridegen.pipeline.segment.raster import MaskCrop, Window, polygon_crop
from stridegen.pipeline.segment.request import check_occlusion_mode, segment_in_depth_order

MIN_SAMPLES = 16  # fewest pixels per label class for GrabCut's 5-component GMM k-means initialisation
N_COMPONENTS = 5  # OpenCV's GrabCut GMMs have 5 components; a model row is [5 weights, 5x3 means, 5x3x3 covs]


@dataclass(frozen=True)
class Crop:
    """A window [r0, r1) x [c0, c1) of the image, worked on at ``(hs, ws)`` pixels (downscaled or not)."""

    r0: int
    r1: int
    c0: int
    c1: int
    hs: int
    ws: int

    @classmethod
    def around(
        cls, box_xyxy: np.ndarray, height: int, width: int, pad_frac: float, pad_px: float, work_side: int
    ) -> Crop:
        u0, v0, u1, v1 = (float(x) for x in box_xyxy)
        pad = pad_px + pad_frac * max(u1 - u0, v1 - v0)
        c0 = int(np.clip(np.floor(u0 - pad + 0.5), 0, width - 1))
        c1 = int(np.clip(np.floor(u1 + pad + 0.5), 0, width - 1)) + 1
        r0 = int(np.clip(np.floor(v0 - pad + 0.5), 0, height - 1))
        r1 = int(np.clip(np.floor(v1 + pad + 0.5), 0, height - 1)) + 1
        scale = work_side / max(r1 - r0, c1 - c0)
        hs = max(1, round((r1 - r0) * scale))
        ws = max(1, round((c1 - c0) * scale))
        return cls(r0, r1, c0, c1, hs, ws)

    @property
    def scaled(self) -> bool:
        return (self.hs, self.ws) != (self.r1 - self.r0, self.c1 - self.c0)

    @property
    def window(self) -> Window:
        """(r0, r1, c0, c1) of the crop in the image."""
        return self.r0, self.r1, self.c0, self.c1

    def to_crop(self, uv: np.ndarray) -> np.ndarray:
        """Image pixel coordinates [.., 2] -> crop pixel coordinates (pixel centres at integers in both)."""
        uv = np.asarray(uv, dtype=np.float64)
        sx = self.ws / (self.c1 - self.c0)
        sy = self.hs / (self.r1 - self.r0)
        return np.stack([(uv[..., 0] - self.c0 + 0.5) * sx - 0.5, (uv[..., 1] - self.r0 + 0.5) * sy - 0.5], axis=-1)

    def image(self, image: np.ndarray) -> np.ndarray:
        window = image[self.r0 : self.r1, self.c0 : self.c1]
        if not self.scaled:
            return np.ascontiguousarray(window)
        shrink = self.ws < self.c1 - self.c0  # OpenCV reads the window's rows at the image's stride: no copy first
        return cv2.resize(window, (self.ws, self.hs), interpolation=cv2.INTER_AREA if shrink else cv2.INTER_LINEAR)

    def image_scaled(self, work: np.ndarray, height: int, width: int) -> np.ndarray:
        """``image`` of a ``height`` x ``width`` image given as ``work`` [h, w, 3], the whole image at a reduced
        scale (``SegmentRequest.work_image``): the crop's window mapped onto ``work`` (edges rounded to its
        pixels: within half a ``work`` pixel) and resampled to (hs, ws). ``work`` at full size: ``image``."""
        h, w = int(work.shape[0]), int(work.shape[1])
        if (h, w) == (height, width):
            return self.image(work)
        sy, sx = h / height, w / width
        r0 = min(int(np.floor(self.r0 * sy + 0.5)), h - 1)
        r1 = max(r0 + 1, min(int(np.floor(self.r1 * sy + 0.5)), h))
        c0 = min(int(np.floor(self.c0 * sx + 0.5)), w - 1)
        c1 = max(c0 + 1, min(int(np.floor(self.c1 * sx + 0.5)), w))
        window = work[r0:r1, c0:c1]
        if (r1 - r0, c1 - c0) == (self.hs, self.ws):
            return np.ascontiguousarray(window)
        shrink = self.ws < c1 - c0  # as in ``image``: the window resized where it lies
        return cv2.resize(window, (self.ws, self.hs), interpolation=cv2.INTER_AREA if shrink else cv2.INTER_LINEAR)

    def mask(self, mask: np.ndarray | MaskCrop) -> np.ndarray:
        """A bool mask of the image (full-image [H, W] array or a ``MaskCrop``) sampled into the crop
        (area-weighted, True where more than half covered)."""
        if isinstance(mask, MaskCrop):
            window = mask.within(self.window)
        else:
            window = np.asarray(mask[self.r0 : self.r1, self.c0 : self.c1], dtype=bool)
        if not self.scaled:
            return window.copy()
        if not window.any():  # area averages of 0 are 0, of 1 are 1 within rounding: the threshold needs neither
            return np.zeros((self.hs, self.ws), dtype=bool)
        if window.all():
            return np.ones((self.hs, self.ws), dtype=bool)
        return cv2.resize(window.astype(np.float32), (self.ws, self.hs), interpolation=cv2.INTER_AREA) > 0.5

    def polygon(self, poly_uv: np.ndarray) -> np.ndarray:
        """[hs, ws] raster of an image-space polygon in crop pixels."""
        return polygon_crop(self.to_crop(poly_uv), self.hs, self.ws).within((0, self.hs, 0, self.ws))

    def paste(self, crop_mask: np.ndarray) -> MaskCrop:
        """A crop mask [hs, ws] -> the image mask on the crop's window (bilinear upscaling, threshold 0.5, where it
        was downscaled)."""
        if self.scaled:
            up = (
                cv2.resize(
                    np.asarray(crop_mask, dtype=np.float32),
                    (self.c1 - self.c0, self.r1 - self.r0),
                    interpolation=cv2.INTER_LINEAR,
                )
                >= 0.5
            )
        else:
            up = np.asarray(crop_mask, dtype=bool)
        return MaskCrop(self.r0, self.c0, up)


def rect_polygon(box_xyxy: np.ndarray) -> np.ndarray:
    u0, v0, u1, v1 = (float(x) for x in box_xyxy)
    return np.array([[u0, v0], [u1, v0], [u1, v1], [u0, v1]])


def shrink_polygon(poly_uv: np.ndarray, factor: float) -> np.ndarray:
    """The polygon scaled by ``factor`` about its vertex mean (image pixels)."""
    poly = np.asarray(poly_uv, dtype=np.float64).reshape(-1, 2)
    centre = poly.mean(axis=0)
    return centre + factor * (poly - centre)


def gmm_log_density(pixels: np.ndarray, model: np.ndarray) -> np.ndarray:
    """log p(x) [P] of colours [P, 3] under an OpenCV GrabCut GMM row (1 x 65: weights, means, covariances)."""
    m = np.asarray(model, dtype=np.float64).reshape(-1)
    weights = m[:N_COMPONENTS]
    means = m[N_COMPONENTS : 4 * N_COMPONENTS].reshape(N_COMPONENTS, 3)
    covs = m[4 * N_COMPONENTS :].reshape(N_COMPONENTS, 3, 3)
    x = np.asarray(pixels, dtype=np.float64).reshape(-1, 3)
    logs = []
    for k in range(N_COMPONENTS):
        if weights[k] <= 0:
            continue
        cov = covs[k] + 1e-6 * np.eye(3)
        sign, logdet = np.linalg.slogdet(cov)
        if sign <= 0:
            continue
        d = x - means[k]
        maha = np.einsum("pi,ij,pj->p", d, np.linalg.inv(cov), d)
        logs.append(np.log(weights[k]) - 0.5 * (maha + logdet + 3.0 * np.log(2.0 * np.pi)))
    if not logs:
        return np.full(x.shape[0], -np.inf)
    return np.logaddexp.reduce(np.stack(logs), axis=0)


def foreground_posterior(pixels: np.ndarray, fgd_model: np.ndarray, bgd_model: np.ndarray) -> np.ndarray:
    """P(foreground | colour) [P] under GrabCut's two GMMs with equal priors."""
    lf = gmm_log_density(pixels, fgd_model)
    lb = gmm_log_density(pixels, bgd_model)
    with np.errstate(invalid="ignore"):
        post = 1.0 / (1.0 + np.exp(np.clip(lb - lf, -700.0, 700.0)))
    return np.where(np.isfinite(lf) | np.isfinite(lb), np.nan_to_num(post, nan=0.5), 0.5)


@dataclass(frozen=True)
class GrabCutOutput:
    """One GrabCut run on a crop: its foreground and the final colour models (OpenCV GMM rows, 1 x 65)."""

    foreground: np.ndarray  # [h, w] bool
    image_rgb: np.ndarray  # [h, w, 3] uint8, the crop GrabCut saw
    fgd_model: np.ndarray
    bgd_model: np.ndarray

    def mean_fg_posterior(self) -> float:
        """Mean of P(fg | colour) (``foreground_posterior``) over the foreground pixels; 0 with no foreground."""
        if not self.foreground.any():
            return 0.0
        return float(np.mean(foreground_posterior(self.image_rgb[self.foreground], self.fgd_model, self.bgd_model)))


def run_grabcut(image_rgb: np.ndarray, labels: np.ndarray, iterations: int, seed: int) -> GrabCutOutput | None:
    """GrabCut in mask mode on a crop (labels [h, w] uint8 ``cv2.GC_*``, updated in place).

    None when either label class has fewer than ``MIN_SAMPLES`` pixels or OpenCV refuses the input.
    """
    labels = np.ascontiguousarray(labels, dtype=np.uint8)
    fg_init = np.count_nonzero((labels == cv2.GC_FGD) | (labels == cv2.GC_PR_FGD))
    bg_init = np.count_nonzero((labels == cv2.GC_BGD) | (labels == cv2.GC_PR_BGD))
    if fg_init < MIN_SAMPLES or bg_init < MIN_SAMPLES:
        return None
    image = np.ascontiguousarray(image_rgb, dtype=np.uint8)
    bgd_model = np.zeros((1, 13 * N_COMPONENTS), np.float64)
    fgd_model = np.zeros((1, 13 * N_COMPONENTS), np.float64)
    cv2.setRNGSeed(int(seed))
    try:
        # rect is unused in mask mode and the bindings accept None for it; the stubs require a sequence
        cv2.grabCut(
            image,
            labels,
            None,
            bgd_model,
            fgd_model,
            int(iterations),  # type: ignore[call-overload]
            cv2.GC_INIT_WITH_MASK,
        )
    except cv2.error:
        return None
    fg = (labels == cv2.GC_FGD) | (labels == cv2.GC_PR_FGD)
    return GrabCutOutput(fg, image, fgd_model, bgd_model)


class CropGrabCut:
    """What the GrabCut-based backends (``grabcut``, ``lidar``) share: the crop, GrabCut and occlusion options and
    one object's crop -> labels -> cut -> paste routine (``_cut``)."""

    def __init__(
        self,
        iterations: int,
        work_side: int,
        pad_frac: float,
        pad_px: float,
        seed: int,
        occlusion: str,
        fallback_quality: float,
    ) -> None:
        self.iterations = int(iterations)
        self.work_side = int(work_side)
        self.pad_frac = float(pad_frac)
        self.pad_px = float(pad_px)
        self.seed = int(seed)
        self.occlusion = check_occlusion_mode(occlusion)
        self.fallback_quality = float(fallback_quality)

    def _cut(
        self,
        image_rgb: np.ndarray,
        box_xyxy: np.ndarray,
        occluder: np.ndarray,
        paint: Callable[[Crop, np.ndarray], None],
    ) -> tuple[MaskCrop, GrabCutOutput] | None:
        """GrabCut of one object on the crop around its projected box ``box_xyxy`` (image pixels).

        The crop's labels start as sure background; ``paint(crop, labels)`` writes the backend's initial labels
        into that [hs, ws] uint8 array, then the pixels of ``occluder`` ([H, W] bool: nearer objects) are set to
        sure background. Returns (the crop's foreground pasted back into the image, on the crop's window; the
        GrabCut run on the resampled crop); None where ``run_grabcut`` is.
        """
        h, w = occluder.shape
        crop = Crop.around(box_xyxy, h, w, self.pad_frac, self.pad_px, self.work_side)
        labels = np.full((crop.hs, crop.ws), cv2.GC_BGD, dtype=np.uint8)
        paint(crop, labels)
        labels[crop.mask(occluder)] = cv2.GC_BGD
        result = run_grabcut(crop.image(image_rgb), labels, self.iterations, self.seed)
        if result is None:
            return None
        return crop.paste(result.foreground), result


def hull_precision(mask: MaskCrop, hull: MaskCrop) -> float:
    """|mask ∩ hull| / |mask| (0 for an empty mask)."""
    area = mask.area
    return mask.overlap(hull) / area if area else 0.0


class GrabCutSegmenter(CropGrabCut):
    """GrabCut per object on a padded, size-bounded crop. Options (config keywords) as in ``__init__``."""

    name = "grabcut"
    needs_lidar = False

    def __init__(
        self,
        iterations: int = 3,
        work_side: int = 96,
        pad_frac: float = 0.15,
        pad_px: float = 4.0,
        min_box_px: float = 6.0,
        core_frac: float = 0.5,
        fill_min: float = 0.5,
        seed: int = 0,
        occlusion: str = "hull",
        fallback_quality: float = 0.0,
    ) -> None:
        super().__init__(iterations, work_side, pad_frac, pad_px, seed, occlusion, fallback_quality)
        self.core_frac = float(core_frac)
        self.fill_min = float(fill_min)
        self.min_box_px = float(min_box_px)

    def segment(self, request: SegmentRequest) -> SegmentResult:
        image = np.asarray(request.image_rgb, dtype=np.uint8)

        def one(i: int, hull: MaskCrop, occluder: np.ndarray) -> tuple[MaskCrop, float]:
            box = np.asarray(request.box_xyxy[i], dtype=np.float64)
            if min(box[2] - box[0], box[3] - box[1]) < self.min_box_px:
                return hull, self.fallback_quality
            hull_uv = np.asarray(request.hull_uv[i], dtype=np.float64)

            def paint(crop: Crop, labels: np.ndarray) -> None:
                labels[crop.polygon(rect_polygon(box))] = cv2.GC_PR_BGD
                labels[crop.polygon(hull_uv)] = cv2.GC_PR_FGD
                if self.core_frac > 0:
                    labels[crop.polygon(shrink_polygon(hull_uv, self.core_frac))] = cv2.GC_FGD

            result = self._cut(image, box, occluder, paint)
            if result is None:
                return hull, self.fallback_quality
            pasted, cut = result
            mask = pasted.minus(occluder)
            if not mask.any():
                return mask, 0.0
            fill = self._fill_factor(mask, hull.minus(occluder))
            return mask, cut.mean_fg_posterior() * hull_precision(mask, hull) * fill

        return segment_in_depth_order(request, one, self.occlusion)

    def _fill_factor(self, mask: MaskCrop, visible_hull: MaskCrop) -> float:
        """min(1, fill / fill_min) with fill = |mask ∩ hull| / |visible hull|."""
        area = visible_hull.area
        if area == 0 or self.fill_min <= 0:
            return 1.0
        return min(1.0, mask.overlap(visible_hull) / area / self.fill_min)
