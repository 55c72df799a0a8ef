"""The synthetic world: a four-lane main road crossing a two-lane road at a 4-way intersection.

Layout in the *road frame* (u along the main road, v across it, origin at the intersection centre); the global
frame is the road frame shifted by ``ORIGIN_GLOBAL`` (so that every coordinate of a scene is positive, as the
nuScenes map masks expect: their pixel rows count from the map's lower-left corner at global (0, 0)).

Main road (along u), right-hand traffic: eastbound (+u) lanes at v = -1.75 (inner) and -5.25 (outer), westbound
(-u) lanes at v = +1.75 and +5.25; lanes 3.5 m wide; a 2.5 m parking shoulder on each side (|v| in [7, 9.5]);
sidewalks |v| in [9.5, 12.5]. Cross road (along v): northbound (+v) lane at u = +1.75, southbound at u = -1.75,
1.5 m shoulders (|u| in [3.5, 5]), sidewalks |u| in [5, 8]. Markings: double solid yellow centre lines, dashed white
lane dividers (3 m dash, 6 m gap), solid white edge lines, zebra crosswalks on all four arms and stop lines before
them. Everything else is grass. The ground is the plane z = 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

# ---------------------------------------------------------------------------------------------- layout constants

ORIGIN_GLOBAL = np.array([300.0, 300.0])  # global (x, y) of the intersection centre
WORLD_SIZE_M = 600.0  # the map mask covers global [0, WORLD_SIZE_M]^2

LANE_WIDTH = 3.5
MAIN_LANES_HALF = 7.0  # |v| <= 7: the four travel lanes
MAIN_ROAD_HALF = 9.5  # |v| <= 9.5: lanes + parking shoulders
MAIN_SIDEWALK_HALF = 12.5
CROSS_LANES_HALF = 3.5
CROSS_ROAD_HALF = 5.0
CROSS_SIDEWALK_HALF = 8.0

EAST_INNER_V = -1.75
EAST_OUTER_V = -5.25
WEST_INNER_V = 1.75
WEST_OUTER_V = 5.25
NORTH_U = 1.75
SOUTH_U = -1.75
MAIN_SHOULDER_V = 8.25  # centre line of the parking shoulders (+/-)

# Crosswalks: on the main road's arms |u| in [6, 10]; on the cross road's arms |v| in [10.5, 14.5].
MAIN_CROSSWALK_U = (6.0, 10.0)
CROSS_CROSSWALK_V = (10.5, 14.5)
# Stop lines (0.5 m wide) just before the crosswalks, on the approaching half of each arm.
MAIN_STOP_U = (10.5, 11.0)
CROSS_STOP_V = (15.0, 15.5)

MARK_HALF = 0.075  # half width of lane / edge lines
DASH_M, GAP_M = 3.0, 6.0
STRIPE_M = 0.6  # zebra stripe width (and gap)

# Material ids and their base colours (RGB).
GRASS, SIDEWALK, ROAD, WHITE, YELLOW, SHOULDER = range(6)
MATERIAL_RGB = np.array(
    [
        [86, 118, 62],  # grass
        [168, 164, 156],  # sidewalk concrete
        [72, 74, 78],  # asphalt
        [222, 222, 214],  # white paint
        [214, 170, 52],  # yellow paint
        [84, 84, 86],  # shoulder asphalt (slightly lighter)
    ],
    dtype=np.float32,
)
# Texture strength per material (relative brightness std of the fine and coarse noise).
MATERIAL_TEXTURE = np.array(
    [[0.10, 0.10], [0.05, 0.04], [0.06, 0.05], [0.03, 0.02], [0.03, 0.02], [0.06, 0.05]], dtype=np.float32
)


def road_from_global(x_global: np.ndarray | float, y_global: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """Road-frame (u, v) of global (x, y)."""
    return np.asarray(x_global) - ORIGIN_GLOBAL[0], np.asarray(y_global) - ORIGIN_GLOBAL[1]


def global_from_road(u: np.ndarray | float, v: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """Global (x, y) of road-frame (u, v)."""
    return np.asarray(u) + ORIGIN_GLOBAL[0], np.asarray(v) + ORIGIN_GLOBAL[1]


def _band(a: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return (a >= lo) & (a <= hi)


def material_road(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Material id (uint8) of road-frame points, evaluated analytically from the layout constants.

    ``u`` and ``v`` broadcast against each other; every test below depends on u alone or on v alone and the
    results are combined as booleans, so a raster can be evaluated from a row of u and a column of v cheaply.
    """
    u = np.asarray(u, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    shape = np.broadcast_shapes(u.shape, v.shape)
    au, av = np.abs(u), np.abs(v)
    u_pos, u_neg, v_pos, v_neg = u > 0, u < 0, v > 0, v < 0
    on_main = av <= MAIN_ROAD_HALF
    on_cross = au <= CROSS_ROAD_HALF
    main_lanes = av <= MAIN_LANES_HALF
    cross_lanes = au <= CROSS_LANES_HALF
    mat = np.full(shape, GRASS, dtype=np.uint8)
    mat[np.broadcast_to((av <= MAIN_SIDEWALK_HALF) | (au <= CROSS_SIDEWALK_HALF), shape)] = SIDEWALK
    mat[np.broadcast_to(on_main & ~main_lanes & ~on_cross, shape)] = SHOULDER
    mat[np.broadcast_to(on_cross & ~cross_lanes & ~on_main, shape)] = SHOULDER
    mat[np.broadcast_to(main_lanes | (on_cross & (cross_lanes | on_main)), shape)] = ROAD

    # Main-road arms (beyond the crosswalks): double yellow centre line, dashed dividers, solid edge lines.
    main_arm_u = au > MAIN_CROSSWALK_U[1]
    yellow = on_main & _band(av, 0.1, 0.1 + 2 * MARK_HALF) & main_arm_u
    dash_u = (np.mod(au, DASH_M + GAP_M) < DASH_M) & (au > MAIN_STOP_U[1])
    white = (np.abs(av - LANE_WIDTH) <= MARK_HALF) & dash_u
    white = white | ((np.abs(av - MAIN_LANES_HALF) <= 0.1) & main_arm_u)
    # Stop lines: eastbound traffic (v < 0) approaches from u < 0, westbound (v > 0) from u > 0.
    stop_u = _band(au, *MAIN_STOP_U)
    white = white | (stop_u & main_lanes & ((u_neg & v_neg) | (u_pos & v_pos)))
    # Main-road crosswalks: stripes running along u, alternating across v.
    white = white | (on_main & _band(au, *MAIN_CROSSWALK_U) & (np.mod(v + 100.0, 2 * STRIPE_M) < STRIPE_M))

    # Cross-road arms.
    cross_arm_v = av > MAIN_ROAD_HALF
    yellow = yellow | ((au <= 0.1) & (av > CROSS_STOP_V[0]))
    white = white | ((np.abs(au - CROSS_LANES_HALF) <= 0.1) & (av > CROSS_CROSSWALK_V[1]))
    # Northbound traffic (u > 0) approaches from v < 0, southbound (u < 0) from v > 0.
    white = white | (_band(av, *CROSS_STOP_V) & cross_lanes & ((u_pos & v_neg) | (u_neg & v_pos)))
    white = white | (
        on_cross & cross_arm_v & _band(av, *CROSS_CROSSWALK_V) & (np.mod(u + 100.0, 2 * STRIPE_M) < STRIPE_M)
    )

    mat[np.broadcast_to(white, shape)] = WHITE
    mat[np.broadcast_to(yellow, shape)] = YELLOW
    return mat


def drivable_or_sidewalk(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The nuScenes semantic prior (driveable surface and sidewalks) as a boolean, road frame."""
    return (np.abs(v) <= MAIN_SIDEWALK_HALF) | (np.abs(u) <= CROSS_SIDEWALK_HALF)


def _hash_noise(ix: np.ndarray, iy: np.ndarray, salt: int) -> np.ndarray:
    """Deterministic per-cell noise in [-1, 1) from integer cell coordinates (integer hash, no RNG state).

    The mixing constants are the 32-bit multiplicative hashing primes of Teschner et al. 2003 ("Optimized
    spatial hashing for collision detection") followed by a xorshift-multiply finaliser (MurmurHash3 fmix32).
    """
    h = (ix.astype(np.int64) * 73856093) ^ (iy.astype(np.int64) * 19349663) ^ (salt * 83492791)
    h = h.astype(np.uint32)
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return (h.astype(np.float32) / np.float32(2**31)) - np.float32(1.0)


def shade_road(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """RGB float32 [..., 3] in 0..255 of road-frame points: material colour with a mild deterministic texture
    (fine 0.1 m grain and coarse 2 m patches of brightness)."""
    mat = material_road(u, v)
    fine = _hash_noise(np.floor(np.asarray(u) * 10.0), np.floor(np.asarray(v) * 10.0), 1)
    coarse = _hash_noise(np.floor(np.asarray(u) * 0.5), np.floor(np.asarray(v) * 0.5), 2)
    tex = MATERIAL_TEXTURE[mat]
    gain = np.float32(1.0) + tex[..., 0] * fine + tex[..., 1] * coarse
    rgb = MATERIAL_RGB[mat] * gain[..., None]
    return np.clip(rgb, np.float32(0.0), np.float32(255.0))


@dataclass(frozen=True)
class RasterRoadShader:
    """The GroundShader of the synthetic world: colours any global (x, y), vectorised.

    ``shade_road`` is evaluated once on a raster (``resolution_m`` cells over ``extent_road`` = (u0, u1, v0, v1) in
    the road frame) and looked up by nearest cell; points outside the raster take the nearest edge cell, which is
    exact for the main road (invariant along u beyond the markings' period) and the cross road (invariant along v)
    up to the dash phase. A lookup is ~10 numpy operations per point, which keeps per-pixel shading cheap.
    """

    resolution_m: float = 0.1
    extent_road: tuple[float, float, float, float] = (-240.0, 240.0, -64.0, 64.0)

    @cached_property
    def _raster(self) -> np.ndarray:
        u0, u1, v0, v1 = self.extent_road
        nu = round((u1 - u0) / self.resolution_m)
        nv = round((v1 - v0) / self.resolution_m)
        uc = u0 + (np.arange(nu) + 0.5) * self.resolution_m
        vc = v0 + (np.arange(nv) + 0.5) * self.resolution_m
        rgb = shade_road(uc[None, :], vc[:, None])  # [nv, nu, 3]
        raster = (rgb + np.float32(0.5)).astype(np.uint8).reshape(-1, 3)  # row-major: index = iv * nu + iu
        raster.setflags(write=False)
        return raster

    @property
    def shape(self) -> tuple[int, int]:
        u0, u1, v0, v1 = self.extent_road
        return round((v1 - v0) / self.resolution_m), round((u1 - u0) / self.resolution_m)

    def __call__(self, x_global: np.ndarray, y_global: np.ndarray) -> np.ndarray:
        nv, nu = self.shape
        u0, _, v0, _ = self.extent_road
        inv = 1.0 / self.resolution_m
        iu = np.clip(((np.asarray(x_global) - (ORIGIN_GLOBAL[0] + u0)) * inv).astype(np.int64), 0, nu - 1)
        iv = np.clip(((np.asarray(y_global) - (ORIGIN_GLOBAL[1] + v0)) * inv).astype(np.int64), 0, nv - 1)
        return self._raster[iv * nu + iu].astype(np.float32)


def map_mask_image(resolution_m: float = 0.1) -> np.ndarray:
    """The semantic-prior map mask as nuScenes stores it: uint8 [H, W], 255 on road and sidewalk, 0 elsewhere;
    row 0 is the top (largest global y), pixel (col, row) covers global x = col * res, y = (H - row) * res."""
    n = round(WORLD_SIZE_M / resolution_m)
    centres = (np.arange(n) + 0.5) * resolution_m
    u = centres - ORIGIN_GLOBAL[0]
    v = centres[::-1] - ORIGIN_GLOBAL[1]  # row 0 = top
    mask = (np.abs(v)[:, None] <= MAIN_SIDEWALK_HALF) | (np.abs(u)[None, :] <= CROSS_SIDEWALK_HALF)
    return mask.astype(np.uint8) * np.uint8(255)
