"""Static scenery of the synthetic world (opt-in: ``generate_dataset(..., static_scenery=True)``): unannotated
building facades, poles and low walls along the roads, which the LiDAR ray caster hits and the cameras draw.

Why: the bare world is a flat ground plane, which constrains only z, roll and pitch of a LiDAR registration; the
agents are mostly moving. Facades parallel to the main road fix v (across the road) and yaw, their ends and the
gaps between them, the poles and the walls across the road fix u (along it), so LiDAR odometry
(``stridegen.calibration.odometry``) is well posed on these logs.

Layout (road frame, see ``world``; every item is a yaw-only box standing on the ground z = 0):

- buildings: in each of the four quadrants of the intersection, a row of blocks along the main road from
  ``|u| = CROSS_SIDEWALK_HALF + setback`` out to ``SCENERY_EXTENT_U``; each block has a length, gap to the next,
  setback of its facade from the sidewalk's outer edge, depth and height drawn uniformly from the ranges below;
  blocks are axis-aligned (facades parallel to the main road);
- poles (street lights, sign posts): on the grass just beyond each main-road sidewalk, ``POLE_OFFSET_M`` outside
  it, one every ``POLE_SPACING_M`` (uniform), and likewise along the cross road's sidewalks;
- low walls: some of the gaps between blocks are closed by a low wall on the facade line.

Nothing stands on the roads, shoulders or sidewalks (|v| <= ``MAIN_SIDEWALK_HALF`` or |u| <= ``CROSS_SIDEWALK_HALF``),
where every agent of ``scenario`` moves, so the scenery never intersects an agent.

Every draw comes from ``default_rng([seed, scene_index, SCENERY_RNG_TAG])``: the scene's own random stream is not
touched, so the agents and the ego are the same with or without scenery.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from stridegen.logs.synthetic import world as W

SCENERY_RNG_TAG = 5153
SCENERY_EXTENT_U = 240.0  # |u| of the far end of the rows (the ground raster's extent)
BUILDING_LENGTH_M = (8.0, 28.0)
BUILDING_GAP_M = (3.0, 12.0)
BUILDING_SETBACK_M = (1.0, 7.0)  # facade distance from the sidewalk's outer edge
BUILDING_DEPTH_M = (8.0, 16.0)
BUILDING_HEIGHT_M = (4.5, 18.0)
POLE_OFFSET_M = 0.5  # pole centre beyond the sidewalk's outer edge
POLE_SIZE_M = 0.25  # square section
POLE_HEIGHT_M = (3.0, 8.0)
POLE_SPACING_M = (12.0, 30.0)
CROSS_POLE_EXTENT_V = 80.0  # poles along the cross road's sidewalks out to this |v|
WALL_PROBABILITY = 0.4  # share of the gaps closed by a low wall
WALL_THICKNESS_M = 0.3
WALL_HEIGHT_M = (0.6, 1.4)
BUILDING_RGB = np.array(
    [[178, 112, 86], [196, 184, 160], [150, 150, 152], [210, 200, 178], [120, 96, 80], [188, 160, 120]], np.uint8
)
POLE_RGB = (70, 72, 76)
WALL_RGB = (160, 156, 148)
# LiDAR reflectivities (0..1) of the materials: brick / plaster, painted steel, concrete.
BUILDING_REFLECTIVITY = 0.35
POLE_REFLECTIVITY = 0.5
WALL_REFLECTIVITY = 0.3


@dataclass(frozen=True)
class StaticScenery:
    """The scenery boxes of one scene, global frame: ``center`` [N, 3] (m, box centre), ``size_lwh`` [N, 3] (m;
    length along the box's heading), ``yaw`` [N] (rad about +z), ``color_rgb`` uint8 [N, 3], ``reflectivity`` [N]
    (0..1, LiDAR intensity) and ``kind`` [N] (``building``, ``pole`` or ``wall``)."""

    center: np.ndarray
    size_lwh: np.ndarray
    yaw: np.ndarray
    color_rgb: np.ndarray
    reflectivity: np.ndarray
    kind: tuple[str, ...]

    def __len__(self) -> int:
        return int(self.center.shape[0])

    def near(self, xy_global: np.ndarray, radius_m: float) -> np.ndarray:
        """Indices of the boxes whose footprint's bounding circle comes within ``radius_m`` (BEV) of ``xy_global``."""
        reach = 0.5 * np.hypot(self.size_lwh[:, 0], self.size_lwh[:, 1])
        dist = np.hypot(self.center[:, 0] - xy_global[0], self.center[:, 1] - xy_global[1])
        return np.nonzero(dist - reach <= radius_m)[0]


class _Builder:
    """Collects axis-aligned boxes given in the road frame by their (u, v) extents."""

    def __init__(self) -> None:
        self.rows: list[tuple[float, float, float, float, float, tuple[int, int, int], float, str]] = []

    def add(
        self, u0: float, u1: float, v0: float, v1: float, height: float, rgb: Sequence[int], refl: float, kind: str
    ) -> None:
        """A box over road-frame u in [u0, u1], v in [v0, v1] (either order, m), ``height`` m tall."""
        u_lo, u_hi, v_lo, v_hi = min(u0, u1), max(u0, u1), min(v0, v1), max(v0, v1)
        red, green, blue = (int(c) for c in rgb)
        self.rows.append((u_lo, u_hi, v_lo, v_hi, height, (red, green, blue), refl, kind))

    def build(self) -> StaticScenery:
        a = np.array([r[:5] for r in self.rows], dtype=np.float64).reshape(-1, 5)
        x, y = W.global_from_road(0.5 * (a[:, 0] + a[:, 1]), 0.5 * (a[:, 2] + a[:, 3]))
        center = np.stack([x, y, 0.5 * a[:, 4]], axis=1)
        size = np.stack([a[:, 1] - a[:, 0], a[:, 3] - a[:, 2], a[:, 4]], axis=1)
        return StaticScenery(
            center=center,
            size_lwh=size,
            yaw=np.zeros(len(self.rows)),
            color_rgb=np.array([r[5] for r in self.rows], dtype=np.uint8).reshape(-1, 3),
            reflectivity=np.array([r[6] for r in self.rows], dtype=np.float64),
            kind=tuple(r[7] for r in self.rows),
        )


def compose_scenery(seed: int, scene_index: int) -> StaticScenery:
    """The static scenery of scene (seed, scene_index); deterministic, independent of the scene's own draws."""
    rng = np.random.default_rng([seed, scene_index, SCENERY_RNG_TAG])
    b = _Builder()
    edge_v = W.MAIN_SIDEWALK_HALF
    edge_u = W.CROSS_SIDEWALK_HALF
    for side_v in (-1.0, 1.0):
        for side_u in (-1.0, 1.0):
            # A row of blocks (and low walls in some gaps) from the cross road outwards.
            at = edge_u + float(rng.uniform(*BUILDING_SETBACK_M))
            while at < SCENERY_EXTENT_U:
                length = float(rng.uniform(*BUILDING_LENGTH_M))
                setback = float(rng.uniform(*BUILDING_SETBACK_M))
                depth = float(rng.uniform(*BUILDING_DEPTH_M))
                height = float(rng.uniform(*BUILDING_HEIGHT_M))
                rgb = BUILDING_RGB[int(rng.integers(len(BUILDING_RGB)))]
                v_face = edge_v + setback
                u_span = (side_u * at, side_u * (at + length))
                b.add(
                    *u_span, side_v * v_face, side_v * (v_face + depth), height, rgb, BUILDING_REFLECTIVITY, "building"
                )
                gap = float(rng.uniform(*BUILDING_GAP_M))
                wall = rng.random() < WALL_PROBABILITY
                wall_h = float(rng.uniform(*WALL_HEIGHT_M))
                if wall:
                    v_wall = edge_v + BUILDING_SETBACK_M[0]
                    u_span = (side_u * (at + length), side_u * (at + length + gap))
                    v_span = (side_v * v_wall, side_v * (v_wall + WALL_THICKNESS_M))
                    b.add(*u_span, *v_span, wall_h, WALL_RGB, WALL_REFLECTIVITY, "wall")
                at += length + gap
            # Poles beyond the main road's sidewalk.
            at = edge_u + float(rng.uniform(1.0, POLE_SPACING_M[0]))
            v_pole = side_v * (edge_v + POLE_OFFSET_M)
            while at < SCENERY_EXTENT_U:
                _pole(b, side_u * at, v_pole, float(rng.uniform(*POLE_HEIGHT_M)))
                at += float(rng.uniform(*POLE_SPACING_M))
            # Poles beyond the cross road's sidewalk (u side), outwards along v.
            at = edge_v + float(rng.uniform(1.0, POLE_SPACING_M[0]))
            u_pole = side_u * (edge_u + POLE_OFFSET_M)
            while at < CROSS_POLE_EXTENT_V:
                _pole(b, u_pole, side_v * at, float(rng.uniform(*POLE_HEIGHT_M)))
                at += float(rng.uniform(*POLE_SPACING_M))
    return b.build()


def _pole(b: _Builder, u: float, v: float, height: float) -> None:
    h = 0.5 * POLE_SIZE_M
    b.add(u - h, u + h, v - h, v + h, height, POLE_RGB, POLE_REFLECTIVITY, "pole")
