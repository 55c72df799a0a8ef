"""The background of a synthetic camera image: the procedural ground (a ``GroundShader`` at each ray's hit on
``z = ground_z``, hazed into the horizon sky with distance) and the sky gradient, with their z-depth (``inf`` for
sky). Boxes are drawn over it by ``stridegen.logs.synthetic.render`` (module docstring there: conventions and
method)."""

from __future__ import annotations

from functools import lru_cache
from typing import Protocol

import numpy as np

from stridegen.calibration.rig import CameraSpec
from stridegen.logs.synthetic.pixel_rays import centred_grid, pixel_ray_basis, ray_component

SKY_ZENITH_DARKENING = 0.45  # zenith colour = sky_rgb * (1 - this)


class GroundShader(Protocol):
    """RGB (float32, 0..255, shape ``x.shape + (3,)``) of the ground at global ``(x, y)``; vectorised."""

    def __call__(self, x_global: np.ndarray, y_global: np.ndarray) -> np.ndarray: ...


@lru_cache(maxsize=32)
def _ray_norm(intrinsic: tuple[float, ...], width: int, height: int) -> np.ndarray:
    """|K^-1 [u, v, 1]| per pixel, float32 [H, W] (a rotation does not change it, so it is cached per camera)."""
    k = np.asarray(intrinsic, dtype=np.float64).reshape(3, 3)
    basis = pixel_ray_basis(k, np.eye(3))
    u, v = centred_grid(0, width - 1, 0, height - 1, k)
    sq = sum(ray_component(basis[j], u.astype(np.float64), v.astype(np.float64)) ** 2 for j in range(3))
    norm = np.sqrt(sq).astype(np.float32)
    norm.setflags(write=False)
    return norm


# ---------------------------------------------------------------------------------------------- background


def _row_span(mask: np.ndarray) -> tuple[int, int]:
    """(first, last + 1) of the rows holding any True (0, 0 if none). The rows of a pixel-ray half space are
    contiguous because the ray components are linear in the row index."""
    rows = np.nonzero(mask.any(axis=1))[0]
    return (int(rows[0]), int(rows[-1]) + 1) if rows.size else (0, 0)


def render_background(
    camera: CameraSpec,
    basis: np.ndarray,
    origin: np.ndarray,
    ground: GroundShader,
    ground_z: float,
    sky_rgb: np.ndarray,
    haze_distance_m: float | None,
) -> tuple[np.ndarray, np.ndarray]:
    """(rgb uint8 [H, W, 3], z-depth float32 [H, W]) of ground and sky.

    Works on uint8 colour planes and in place where it can: numpy is slow on a trailing axis of 3, and every
    fresh image-sized temporary costs page faults comparable to the arithmetic. OpenCV's ``convertScaleAbs``
    scales, rounds and saturates to uint8 in one pass; ``merge`` interleaves the planes.
    """
    import cv2

    h, w = camera.height, camera.width
    f32 = np.float32
    u, v = centred_grid(0, w - 1, 0, h - 1, camera.intrinsic)
    dz = ray_component(basis[2], u, v)
    height = f32(origin[2] - ground_z)
    sees_ground = dz < 0 if height > 0 else np.zeros((h, w), dtype=bool)
    planes = np.empty((3, h, w), dtype=np.uint8)
    depth = np.empty((h, w), dtype=np.float32)
    norm = _ray_norm(tuple(camera.intrinsic.ravel()), w, h)

    s0, s1 = _row_span(~sees_ground)
    if s1 > s0:
        # Vertical gradient on the ray's elevation: sky_rgb at the horizon, darker towards the zenith.
        shade = np.divide(dz[s0:s1], norm[s0:s1])
        np.clip(shade, 0.0, 1.0, out=shade)
        np.multiply(shade, -SKY_ZENITH_DARKENING, out=shade)
        shade += f32(1.0)
        for c in range(3):
            _convert_u8(shade, planes[c, s0:s1], alpha=float(sky_rgb[c]))
        depth[s0:s1] = np.inf

    g0, g1 = _row_span(sees_ground)
    if g1 > g0:
        mask = sees_ground[g0:g1]
        all_ground = bool(mask.all())
        t = np.divide(-height, dz[g0:g1], out=np.zeros((g1 - g0, w), dtype=f32), where=mask)  # z-depth of hit
        x = ray_component(basis[0], u, v[g0:g1])
        x *= t
        x += f32(origin[0])
        y = ray_component(basis[1], u, v[g0:g1])
        y *= t
        y += f32(origin[1])
        colour = np.asarray(ground(x, y), dtype=f32)
        fog = None
        if haze_distance_m:  # fog = 1 - exp(-range / haze_distance_m)
            fog = np.multiply(t, norm[g0:g1])
            fog *= f32(-1.0 / haze_distance_m)
            np.exp(fog, out=fog)
            np.subtract(f32(1.0), fog, out=fog)
        for c in range(3):
            plane = colour[..., c]
            if fog is not None:
                hazy = np.subtract(f32(sky_rgb[c]), plane)
                hazy *= fog
                hazy += plane
                plane = hazy
            if all_ground:
                _convert_u8(plane, planes[c, g0:g1])
            else:
                plane_u8 = cv2.convertScaleAbs(np.ascontiguousarray(plane))
                planes[c, g0:g1] = np.where(mask, plane_u8, planes[c, g0:g1])
        depth[g0:g1] = t if all_ground else np.where(mask, t, np.inf)
    rgb = np.empty((h, w, 3), dtype=np.uint8)
    merged = cv2.merge(list(planes), dst=rgb)
    return (rgb if merged is rgb else merged), depth


def _convert_u8(src: np.ndarray, dst: np.ndarray, alpha: float = 1.0) -> None:
    """dst = saturate(round(alpha * src)) as uint8, written into ``dst`` (a contiguous block of rows)."""
    import cv2

    out = cv2.convertScaleAbs(np.ascontiguousarray(src), dst=dst, alpha=alpha)
    if out is not dst:
        dst[...] = out
