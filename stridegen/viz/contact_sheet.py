"""Contact sheet of corruptions x severities, so a person can see what each level does to an image.

Each corruption is applied to the image at its own resolution (severity tables are defined in pixels of the
dataset's images) and each result is then shrunk to a tile. Rows are corruptions, columns are the clean image and
the chosen severities. Camera-set corruptions (camera crash, frame lost) act on the cameras of a frame, not on one
image, and are left out of the sheet.

``synthetic_road_scene`` renders a road scene with shapes and text, used for the sheet in docs/ (the real
nuScenes images may not be redistributed inside the project).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import cv2
import numpy as np

from stridegen.augment.corruptions import (
    CAMERA_CORRUPTIONS,
    SEVERITIES,
    check_severity,
    get_corruption,
)
from stridegen.augment.corruptions.base import check_image
from stridegen.core.errors import ConfigError

_FONT = cv2.FONT_HERSHEY_SIMPLEX
_INK = (30, 30, 30)
_PAPER = (255, 255, 255)


def tile_rng(seed: int, name: str, severity: int) -> np.random.Generator:
    """The generator for one (corruption, severity) tile: independent of the sheet's other tiles."""
    return np.random.default_rng([int(seed), zlib.crc32(name.encode("utf-8")), int(severity)])


def _fit_text(text: str, max_width: int, scale: float, thickness: int) -> float:
    width = cv2.getTextSize(text, _FONT, scale, thickness)[0][0]
    return scale if width <= max_width else scale * max_width / width


def _label(canvas: np.ndarray, text: str, x0: int, y0: int, width: int, height: int, scale: float) -> None:
    thickness = max(1, round(scale * 2))
    scale = _fit_text(text, width - 8, scale, thickness)
    (tw, th), _ = cv2.getTextSize(text, _FONT, scale, thickness)
    org = (x0 + (width - tw) // 2, y0 + (height + th) // 2)
    cv2.putText(canvas, text, org, _FONT, scale, _INK, thickness, cv2.LINE_AA)


def contact_sheet(
    image_rgb: np.ndarray,
    names: Sequence[str],
    severities: Sequence[int] = SEVERITIES,
    seed: int = 0,
    tile_width: int = 320,
    gap: int = 4,
) -> np.ndarray:
    """An RGB uint8 contact sheet: one row per image corruption in ``names``, columns clean + ``severities``.

    Camera-set names are skipped (see the module docstring); unknown names raise ConfigError.
    """
    check_image(image_rgb)
    levels = [check_severity(s) for s in severities]
    rows = [n for n in names if n not in CAMERA_CORRUPTIONS]
    if not rows:
        raise ConfigError("no image corruption to show (camera-set corruptions have no single-image preview)")
    corruptions = [get_corruption(n) for n in rows]
    h, w = image_rgb.shape[:2]
    tile_w = int(tile_width)
    tile_h = max(1, round(h * tile_w / w))
    scale = tile_w / 320.0
    label_w, header_h = int(200 * scale), int(44 * scale)
    cols = 1 + len(levels)
    sheet_h = header_h + len(rows) * (tile_h + gap) + gap
    sheet_w = label_w + cols * (tile_w + gap) + gap
    canvas = np.full((sheet_h, sheet_w, 3), _PAPER, dtype=np.uint8)

    def shrink(img: np.ndarray) -> np.ndarray:
        return cv2.resize(img, (tile_w, tile_h), interpolation=cv2.INTER_AREA)

    clean_tile = shrink(image_rgb)
    for col, title in enumerate(["clean", *[f"severity {s}" for s in levels]]):
        _label(canvas, title, label_w + gap + col * (tile_w + gap), 0, tile_w, header_h, 0.8 * scale)
    for row, corruption in enumerate(corruptions):
        y = header_h + row * (tile_h + gap)
        _label(canvas, corruption.name.replace("_", " "), 0, y, label_w, tile_h, 0.75 * scale)
        x = label_w + gap
        canvas[y : y + tile_h, x : x + tile_w] = clean_tile
        for col, severity in enumerate(levels, start=1):
            x = label_w + gap + col * (tile_w + gap)
            out = corruption.apply(image_rgb, severity, tile_rng(seed, corruption.name, severity))
            canvas[y : y + tile_h, x : x + tile_w] = shrink(out)
    return canvas


# --- synthetic scene for the documentation sheet -------------------------------------------------------------------
def _car(canvas: np.ndarray, x: int, y: int, width: int, colour: tuple[int, int, int]) -> None:
    """A car seen from behind, bottom-centre at (x, y)."""
    h = int(width * 0.75)
    x0, x1, y0 = x - width // 2, x + width // 2, y - h
    cv2.rectangle(canvas, (x0, y0 + h // 3), (x1, y - h // 8), colour, -1, cv2.LINE_AA)
    cv2.rectangle(canvas, (x0 + width // 8, y0), (x1 - width // 8, y0 + h // 3), colour, -1, cv2.LINE_AA)
    cv2.rectangle(canvas, (x0 + width // 5, y0 + h // 12), (x1 - width // 5, y0 + h // 3), (60, 70, 80), -1)
    wheel = max(2, width // 7)
    for wx in (x0 + wheel, x1 - wheel):
        cv2.rectangle(canvas, (wx - wheel // 2 - 2, y - h // 8), (wx + wheel // 2 + 2, y), (20, 20, 20), -1)
    lamp = max(2, width // 10)
    for lx in (x0 + lamp, x1 - 2 * lamp):
        cv2.rectangle(canvas, (lx, y0 + h // 2), (lx + lamp, y0 + h // 2 + lamp), (220, 30, 30), -1)
    plate_w = width // 4
    cv2.rectangle(
        canvas, (x - plate_w // 2, y - h // 4), (x + plate_w // 2, y - h // 4 + max(3, h // 10)), (235, 235, 235), -1
    )


def synthetic_road_scene(width: int = 1600, height: int = 900) -> np.ndarray:
    """Render a deterministic RGB road scene (sky, buildings, road with lane marks, cars, a pedestrian, a sign)."""
    canvas = np.zeros((height, width, 3), dtype=np.uint8)
    horizon = int(height * 0.45)
    # sky: vertical gradient
    t = np.linspace(0.0, 1.0, horizon, dtype=np.float32)[:, None]
    sky = (1 - t) * np.array([90, 150, 220], np.float32) + t * np.array([200, 225, 245], np.float32)
    canvas[:horizon] = sky[:, None, :].astype(np.uint8)
    # ground
    canvas[horizon:] = (70, 120, 60)
    # buildings with window grids (fine texture for the blurs)
    palette = [(150, 120, 100), (120, 130, 150), (170, 160, 140), (110, 100, 120), (160, 140, 120)]
    x, i = 0, 0
    while x < width:
        bw = int(width * (0.07 + 0.03 * ((i * 7) % 5) / 4))
        bh = int(horizon * (0.35 + 0.5 * ((i * 3) % 7) / 6))
        colour = palette[i % len(palette)]
        cv2.rectangle(canvas, (x, horizon - bh), (x + bw - 3, horizon), colour, -1)
        step = max(6, bw // 8)
        for wy in range(horizon - bh + step, horizon - step, step):
            for wx in range(x + step // 2, x + bw - step, step):
                cv2.rectangle(canvas, (wx, wy), (wx + step // 2, wy + step // 2), (235, 225, 150), -1)
        x += bw
        i += 1
    # road: trapezoid to the vanishing point
    cx = width // 2
    road = np.array(
        [
            [int(width * 0.02), height],
            [int(width * 0.98), height],
            [cx + width // 40, horizon],
            [cx - width // 40, horizon],
        ],
        np.int32,
    )
    cv2.fillPoly(canvas, [road], (85, 85, 90), cv2.LINE_AA)
    for side in (-1, 1):  # edge lines
        cv2.line(
            canvas,
            (cx + side * width // 40, horizon),
            (cx + side * int(width * 0.46), height),
            (240, 240, 240),
            max(2, width // 300),
            cv2.LINE_AA,
        )
    for k in range(12):  # dashed centre line, perspective spacing
        a, b = (k / 12) ** 1.8, ((k + 0.5) / 12) ** 1.8
        ya, yb = int(horizon + a * (height - horizon)), int(horizon + b * (height - horizon))
        cv2.line(canvas, (cx, ya), (cx, yb), (245, 220, 60), max(2, int(width / 200 * (0.2 + b))), cv2.LINE_AA)
    # cars at several depths
    for frac, dx, colour in (
        (0.85, -0.18, (200, 40, 40)),
        (0.62, 0.12, (40, 90, 200)),
        (0.52, -0.06, (235, 235, 235)),
        (0.47, 0.04, (40, 160, 80)),
    ):
        y = int(horizon + (frac - 0.45) / 0.55 * (height - horizon))
        depth = (y - horizon) / (height - horizon)
        _car(canvas, int(cx + dx * width * depth * 1.6), y, max(12, int(width * 0.28 * depth)), colour)
    # pedestrian on the right verge
    px, py, ph = int(width * 0.82), int(height * 0.8), int(height * 0.22)
    cv2.circle(canvas, (px, py - ph), ph // 10, (230, 190, 160), -1, cv2.LINE_AA)
    cv2.line(canvas, (px, py - ph + ph // 10), (px, py - ph // 2), (200, 60, 140), max(3, ph // 12), cv2.LINE_AA)
    for leg in (-1, 1):
        cv2.line(canvas, (px, py - ph // 2), (px + leg * ph // 8, py), (40, 40, 90), max(3, ph // 16), cv2.LINE_AA)
        cv2.line(
            canvas,
            (px, py - ph * 4 // 5),
            (px + leg * ph // 6, py - ph // 2),
            (200, 60, 140),
            max(2, ph // 20),
            cv2.LINE_AA,
        )
    # stop sign with text (edges and letters for blur / compression)
    sx, sy, sr = int(width * 0.12), int(height * 0.5), int(height * 0.06)
    cv2.line(canvas, (sx, sy), (sx, int(height * 0.75)), (120, 120, 120), max(3, sr // 6), cv2.LINE_AA)
    octagon = np.array(
        [[sx + sr * np.cos(np.pi / 8 + k * np.pi / 4), sy + sr * np.sin(np.pi / 8 + k * np.pi / 4)] for k in range(8)],
        np.int32,
    )
    cv2.fillPoly(canvas, [octagon], (200, 20, 30), cv2.LINE_AA)
    cv2.putText(
        canvas,
        "STOP",
        (sx - int(sr * 0.78), sy + int(sr * 0.22)),
        _FONT,
        sr / 48,
        (255, 255, 255),
        max(1, sr // 20),
        cv2.LINE_AA,
    )
    return canvas
