"""Vectorised ray casting of a spinning multi-beam LiDAR against yaw-only boxes and a flat ground plane.

Model (kept deliberately simple, every choice is deterministic given the ``rng``):

- One full revolution per sweep, all rays fired from the sensor origin at one instant by default: **no motion
  distortion** (the ego and the agents do not move during the sweep), as in a motion-compensated sweep whose
  boxes are given at the camera's time. With a ``SweepTiming`` and the boxes' velocities the sweep is **not
  motion-compensated** for the agents: azimuth column ``a`` fires at its own time (``SweepTiming.column_times``,
  relative to the time of the given boxes) and each box is met where it is at that time, moved at its constant
  velocity (the ego stays put: its own motion counts as compensated). The points of a moving agent then lag (or
  lead) the position the camera sees it at, as the returns of a real spinning LiDAR do where the log compensates
  only the ego's motion.
- Rays: one per (azimuth column, beam). Beams sit at ``spec.beam_elevations_deg``; azimuth columns are spaced
  ``360 / round(360 / spec.azimuth_resolution_deg)`` degrees apart (so that a revolution closes exactly), starting
  at ``azimuth_offset_deg``, azimuth measured counter-clockwise from the sensor's +x axis.
- Each ray returns the nearest of: the entry point into any box (slab test in the box's local frame), the ground
  plane ``z = ground_z`` (global frame). Rays with no surface within ``spec.max_range_m`` give no point. A ray
  starting inside a box does not see that box (pass the ego's own box nowhere).
- Range noise: additive gaussian on the range along the ray (``range_noise_std_m``); dropout: each return is lost
  independently with probability ``dropout``. Both are drawn for every return in firing order, so the result is
  a pure function of the geometry and the generator state.
- Intensity: Lambertian ``255 * reflectivity * |cos(incidence)|``, reflectivity 0.12 for asphalt and 0.45 for
  boxes unless a per-box ``reflectivity`` is given.
- Points are written like a nuScenes ``.pcd.bin`` row: (x, y, z, intensity, ring index) in the sensor frame,
  float32, in firing order (azimuth column major, then beam). The ring index is the beam's position in
  ``spec.beam_elevations_deg`` (0 = first entry, the lowest beam for rigs built from a vertical FOV).

Speed: every ray is tested against the ground, but a box only against the rays of its angular footprint (a block
of azimuth columns times a run of beams, from its bounding sphere and, for a level sensor, its footprint
corners and height; boxes out of range are dropped), so the cost grows with the boxes' apparent size rather than
with rays x boxes. The pruning is conservative: it is checked against the brute-force all-pairs cast in the tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from stridegen.calibration.rig import LidarSpec
from stridegen.core.transforms import invert_transform, transform_points

GROUND_REFLECTIVITY = 0.12
BOX_REFLECTIVITY = 0.45
_EPS_T = 1e-9  # a hit closer than this to the origin counts as "origin on the surface" and is ignored


@dataclass(frozen=True)
class SweepTiming:
    """When each azimuth column of a revolution is fired, relative to the time the boxes are given at (seconds).

    The revolution takes ``period_s`` (1 / rotation rate: 0.05 s for a 20 Hz LiDAR) and ends ``end_s`` after that
    time (negative: before). Column ``a`` of ``n`` fires at ``end_s - period_s + period_s * (a + 1) / n``, so the
    last column fires at ``end_s`` (nuScenes stamps a LIDAR_TOP sweep at the end of its revolution; nuScenes
    devkit, ``LidarPointCloud.from_file_multisweep`` uses that timestamp for the whole sweep).
    """

    period_s: float = 0.05
    end_s: float = 0.0

    def column_times(self, n_az: int) -> np.ndarray:
        """[n_az] firing time of each azimuth column, seconds relative to the boxes' time."""
        return self.end_s - self.period_s + self.period_s * (np.arange(n_az, dtype=np.float64) + 1.0) / n_az

    def max_abs_s(self) -> float:
        """The largest |firing time| of any column (bounds how far a box moves during the sweep)."""
        return max(abs(self.end_s), abs(self.end_s - self.period_s))


@dataclass(frozen=True)
class LidarSweep:
    """The returns of one revolution.

    ``points_sensor``: float32 [M, 5] (x, y, z, intensity, ring) in the sensor frame; ``hits_per_box``: int64 [N]
    returns on each box; ``hit_box``: int64 [M] index of the box each point lies on, -1 for the ground.
    """

    points_sensor: np.ndarray
    hits_per_box: np.ndarray
    hit_box: np.ndarray

    @property
    def num_points(self) -> int:
        return int(self.points_sensor.shape[0])


# ---------------------------------------------------------------------------------------------- rays


def azimuth_columns(spec: LidarSpec) -> int:
    """Number of azimuth columns in one revolution (``360 / resolution`` rounded, at least 1)."""
    return max(1, round(360.0 / spec.azimuth_resolution_deg))


@lru_cache(maxsize=16)
def _ray_table(
    elevations_deg: tuple[float, ...], n_az: int, azimuth_offset_deg: float
) -> tuple[np.ndarray, np.ndarray]:
    """Unit ray directions [n_az * B, 3] in the sensor frame (azimuth major) and their ring index [n_az * B]."""
    elev = np.radians(np.asarray(elevations_deg, dtype=np.float64))
    az = np.radians(azimuth_offset_deg + np.arange(n_az) * (360.0 / n_az))
    ce, se = np.cos(elev)[None, :], np.sin(elev)[None, :]
    dirs = np.stack(
        [np.cos(az)[:, None] * ce, np.sin(az)[:, None] * ce, np.broadcast_to(se, (n_az, elev.size))], axis=-1
    ).reshape(-1, 3)
    ring = np.tile(np.arange(elev.size, dtype=np.int64), n_az)
    dirs.setflags(write=False)
    ring.setflags(write=False)
    return dirs, ring


def lidar_rays_sensor(spec: LidarSpec, azimuth_offset_deg: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(unit directions [R, 3] in the sensor frame, ring index [R]) of every ray of one revolution."""
    elevations = tuple(float(e) for e in np.asarray(spec.beam_elevations_deg, dtype=np.float64))
    return _ray_table(elevations, azimuth_columns(spec), float(azimuth_offset_deg))


# ---------------------------------------------------------------------------------------------- pruning


def _angular_bounds(
    center_sensor: np.ndarray,
    size_lwh: np.ndarray,
    yaw_sensor: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Conservative (azimuth lo, azimuth hi, elevation lo, elevation hi) [N] of the rays that can meet each box.

    Azimuths are relative to the azimuth of the box centre. Bounding sphere (any sensor orientation): a ray can
    only meet the sphere if its azimuth lies within ``asin(r / d_xy)`` of the centre's (the sphere's shadow on the
    xy plane is a disk of radius r) and its elevation within ``asin(r / d)`` of the centre's (the angle between
    the ray and the centre direction is at most asin(r / d), and the elevation difference is at most that angle).
    For a level sensor (``yaw_sensor``: box yaw in the sensor frame) the box itself tightens this: seen from
    outside its footprint, the azimuths span the footprint corners' azimuths; elevations lie between
    ``atan2(z_bottom, d)`` and ``atan2(z_top, d)`` for the nearest or farthest footprint distance d.
    """
    c = center_sensor
    radius = 0.5 * np.linalg.norm(size_lwh, axis=1)
    d = np.linalg.norm(c, axis=1)
    d_xy = np.hypot(c[:, 0], c[:, 1])
    with np.errstate(divide="ignore", invalid="ignore"):
        az_half = np.where(d_xy > radius, np.arcsin(np.clip(radius / d_xy, 0.0, 1.0)), np.pi)
        el_half = np.where(d > radius, np.arcsin(np.clip(radius / d, 0.0, 1.0)), np.pi)
    el_c = np.arctan2(c[:, 2], d_xy)
    az_lo, az_hi, el_lo, el_hi = -az_half, az_half, el_c - el_half, el_c + el_half
    if yaw_sensor is None:
        return az_lo, az_hi, el_lo, el_hi

    # Footprint corners in the sensor's xy plane and the sensor origin in box coordinates.
    half = 0.5 * size_lwh
    cos_y, sin_y = np.cos(yaw_sensor), np.sin(yaw_sensor)
    signs = np.array([[1, 1], [1, -1], [-1, -1], [-1, 1]], dtype=np.float64)
    lx, ly = half[:, None, 0] * signs[None, :, 0], half[:, None, 1] * signs[None, :, 1]
    corner_x = c[:, None, 0] + cos_y[:, None] * lx - sin_y[:, None] * ly
    corner_y = c[:, None, 1] + sin_y[:, None] * lx + cos_y[:, None] * ly
    origin_x = -(cos_y * c[:, 0] + sin_y * c[:, 1])
    origin_y = -(-sin_y * c[:, 0] + cos_y * c[:, 1])
    gap_x = np.maximum(np.abs(origin_x) - half[:, 0], 0.0)
    gap_y = np.maximum(np.abs(origin_y) - half[:, 1], 0.0)
    outside = (gap_x > 0) | (gap_y > 0)
    rel = np.mod(np.arctan2(corner_y, corner_x) - np.arctan2(c[:, 1], c[:, 0])[:, None] + np.pi, 2.0 * np.pi) - np.pi
    az_lo = np.where(outside, np.maximum(az_lo, rel.min(axis=1)), az_lo)
    az_hi = np.where(outside, np.minimum(az_hi, rel.max(axis=1)), az_hi)
    d_min = np.hypot(gap_x, gap_y)
    d_max = np.hypot(corner_x, corner_y).max(axis=1)
    z_bottom, z_top = c[:, 2] - half[:, 2], c[:, 2] + half[:, 2]
    el_lo = np.maximum(el_lo, np.arctan2(z_bottom, np.where(z_bottom < 0, d_min, d_max)))
    el_hi = np.minimum(el_hi, np.arctan2(z_top, np.where(z_top > 0, d_min, d_max)))
    return az_lo, az_hi, el_lo, el_hi


def _candidate_pairs(
    center_sensor: np.ndarray,
    size_lwh: np.ndarray,
    yaw_sensor: np.ndarray | None,
    spec: LidarSpec,
    azimuth_offset_deg: float,
) -> tuple[np.ndarray, np.ndarray]:
    """(box index [P], ray index [P]) of the ray/box pairs that can intersect (see ``_angular_bounds``).

    Boxes whose bounding sphere lies beyond the maximum range are dropped. Each box's rays form a block of
    contiguous azimuth columns (modulo a revolution) times a contiguous run of beams sorted by elevation, so
    the pairs are enumerated with repeat / arange arithmetic, without a Python loop.
    """
    n_az = azimuth_columns(spec)
    step = 2.0 * np.pi / n_az
    elev = np.radians(np.asarray(spec.beam_elevations_deg, dtype=np.float64))
    n_beams = elev.size
    beam_order = np.argsort(elev, kind="stable")
    elev_sorted = elev[beam_order]

    radius = 0.5 * np.linalg.norm(size_lwh, axis=1)
    boxes = np.nonzero(np.linalg.norm(center_sensor, axis=1) - radius <= spec.max_range_m)[0]
    if boxes.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    c = center_sensor[boxes]
    rel_lo, rel_hi, el_lo, el_hi = _angular_bounds(
        c, size_lwh[boxes], None if yaw_sensor is None else yaw_sensor[boxes]
    )
    eps = 1e-9
    az_c = np.arctan2(c[:, 1], c[:, 0]) - np.radians(azimuth_offset_deg)
    az_lo = np.ceil((az_c + rel_lo - eps) / step).astype(np.int64)
    az_count = np.floor((az_c + rel_hi + eps) / step).astype(np.int64) - az_lo + 1
    full = (rel_hi - rel_lo >= 2.0 * np.pi - eps) | (az_count >= n_az)
    az_lo = np.where(full, 0, az_lo)
    az_count = np.where(full, n_az, np.maximum(az_count, 0))

    el_first = np.searchsorted(elev_sorted, el_lo - eps, side="left")
    el_count = np.maximum(np.searchsorted(elev_sorted, el_hi + eps, side="right") - el_first, 0)

    counts = az_count * el_count
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    pair_box = np.repeat(np.arange(boxes.size), counts)
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    local = np.arange(total, dtype=np.int64) - starts
    n_el = el_count[pair_box]
    col = np.mod(az_lo[pair_box] + local // n_el, n_az)
    beam = beam_order[el_first[pair_box] + local % n_el]
    return boxes[pair_box], col * n_beams + beam


# ---------------------------------------------------------------------------------------------- intersection


def _slab_entry(
    origin_local: tuple[np.ndarray, ...], dir_local: tuple[np.ndarray, ...], half: tuple[np.ndarray, ...]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ray / axis-aligned box entry: (t_near [P], t_far [P], |d| along the entry axis [P]) for rays o + t d and
    boxes +-half, each given as (x, y, z) component arrays [P] (numpy is slow on a trailing axis of 3).

    Kay-Kajiya slab method; ``np.fmin`` / ``np.fmax`` drop the NaN of 0/0 (a ray parallel to a slab, starting on
    its plane), and a ray parallel to a slab and outside it gets (+inf, +inf) or (-inf, -inf): no hit.
    """
    t_near: np.ndarray | None = None
    t_far: np.ndarray | None = None
    entry_cos: np.ndarray | None = None
    with np.errstate(divide="ignore", invalid="ignore"):
        for o, d, h in zip(origin_local, dir_local, half, strict=True):
            inv = 1.0 / d
            t1 = (-h - o) * inv
            t2 = (h - o) * inv
            t_min, t_max = np.fmin(t1, t2), np.fmax(t1, t2)
            if t_near is None or t_far is None or entry_cos is None:  # the first axis
                t_near, t_far, entry_cos = t_min, t_max, np.abs(d)
            else:
                later = t_min > t_near
                t_near = np.where(later, t_min, t_near)
                entry_cos = np.where(later, np.abs(d), entry_cos)
                t_far = np.fmin(t_far, t_max)
    if t_near is None or t_far is None or entry_cos is None:
        raise ValueError("ray / box entry needs at least one axis")
    return t_near, t_far, entry_cos


def _box_hits(
    origin_global: np.ndarray,
    dirs_global: np.ndarray,
    center_global: np.ndarray,
    size_lwh: np.ndarray,
    yaw_global: np.ndarray,
    pair_box: np.ndarray,
    pair_ray: np.ndarray,
    max_range: float,
    shift_global: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Nearest box hit per ray: (ray [K], box [K], range [K], |cos incidence| [K]) for the rays that hit a box,
    each ray once, in no particular order. ``shift_global`` = (velocity [N, 3] m/s, firing time [R] s): box n is
    met by ray r at ``center_global[n] + velocity[n] * time[r]`` (a sweep that is not motion-compensated)."""
    c, s = np.cos(yaw_global), np.sin(yaw_global)
    rel = origin_global[None, :] - center_global  # [N, 3]
    cp, sp = c[pair_box], s[pair_box]
    if shift_global is None:
        ox, oy = c * rel[:, 0] + s * rel[:, 1], -s * rel[:, 0] + c * rel[:, 1]
        rel_x, rel_y, rel_z = ox[pair_box], oy[pair_box], rel[:, 2][pair_box]
    else:
        velocity, ray_time = shift_global
        t_pair = ray_time[pair_ray]
        px = rel[:, 0][pair_box] - velocity[:, 0][pair_box] * t_pair
        py = rel[:, 1][pair_box] - velocity[:, 1][pair_box] * t_pair
        rel_z = rel[:, 2][pair_box] - velocity[:, 2][pair_box] * t_pair
        rel_x, rel_y = cp * px + sp * py, -sp * px + cp * py
    dx, dy, dz = dirs_global[:, 0][pair_ray], dirs_global[:, 1][pair_ray], dirs_global[:, 2][pair_ray]
    half = 0.5 * size_lwh
    t_near, t_far, cos_inc = _slab_entry(
        (rel_x, rel_y, rel_z),
        (cp * dx + sp * dy, -sp * dx + cp * dy, dz),
        (half[:, 0][pair_box], half[:, 1][pair_box], half[:, 2][pair_box]),
    )
    hit = np.nonzero((t_near <= t_far) & (t_near > _EPS_T) & (t_near <= max_range))[0]
    ray, box, t, cos_inc = pair_ray[hit], pair_box[hit], t_near[hit], cos_inc[hit]
    # Nearest box per ray (unbuffered ufunc.at: far cheaper than sorting); exact ties go to the lower box index.
    nearest_t = np.full(dirs_global.shape[0], np.inf)
    np.minimum.at(nearest_t, ray, t)
    winner = t == nearest_t[ray]
    ray, box, t, cos_inc = ray[winner], box[winner], t[winner], cos_inc[winner]
    first_box = np.full(dirs_global.shape[0], np.iinfo(np.int64).max)
    np.minimum.at(first_box, ray, box)
    keep = box == first_box[ray]
    return ray[keep], box[keep], t[keep], cos_inc[keep]


def cast_lidar(
    T_global_from_sensor: np.ndarray,
    spec: LidarSpec,
    center_global: np.ndarray,
    size_lwh: np.ndarray,
    yaw_global: np.ndarray,
    rng: np.random.Generator,
    ground_z: float = 0.0,
    range_noise_std_m: float = 0.02,
    dropout: float = 0.05,
    azimuth_offset_deg: float = 0.0,
    reflectivity: np.ndarray | None = None,
    velocity_global: np.ndarray | None = None,
    timing: SweepTiming | None = None,
) -> LidarSweep:
    """Cast one revolution of ``spec`` mounted at ``T_global_from_sensor`` against N boxes and the ground.

    Boxes: ``center_global`` [N, 3], ``size_lwh`` [N, 3], ``yaw_global`` [N] (rotation about global +z).
    ``reflectivity`` [N] in 0..1 overrides the default box reflectivity used for the intensity channel.
    ``timing`` with ``velocity_global`` [N, 3] (m/s; NaN counts as 0) casts a sweep that is not
    motion-compensated: each column fires at its ``SweepTiming.column_times`` and meets the boxes moved by their
    velocity times that time (module docstring). Without them (or with all velocities 0) the result is the
    instantaneous sweep, bit for bit.
    """
    T = np.asarray(T_global_from_sensor, dtype=np.float64)
    center_global = np.asarray(center_global, dtype=np.float64).reshape(-1, 3)
    size_lwh = np.asarray(size_lwh, dtype=np.float64).reshape(-1, 3)
    yaw_global = np.asarray(yaw_global, dtype=np.float64).reshape(-1)
    n_boxes = center_global.shape[0]
    refl_box = (
        np.full(n_boxes, BOX_REFLECTIVITY)
        if reflectivity is None
        else np.asarray(reflectivity, dtype=np.float64).reshape(-1)
    )

    dirs_sensor, ring = lidar_rays_sensor(spec, azimuth_offset_deg)
    dirs_global = dirs_sensor @ T[:3, :3].T
    shift: tuple[np.ndarray, np.ndarray] | None = None
    prune_size = size_lwh
    if timing is not None and velocity_global is not None and n_boxes:
        velocity = np.nan_to_num(np.asarray(velocity_global, dtype=np.float64).reshape(n_boxes, 3))
        if np.any(velocity != 0.0):
            n_beams = np.size(spec.beam_elevations_deg)
            shift = (velocity, np.repeat(timing.column_times(azimuth_columns(spec)), n_beams))
            # A box moved by at most |v| * max|t| stays inside itself grown by that much along each of its axes,
            # so pruning with the grown box keeps every ray that can meet the moving one.
            reach = np.linalg.norm(velocity, axis=1) * timing.max_abs_s()
            prune_size = size_lwh + 2.0 * reach[:, None]
    origin = T[:3, 3]
    max_range = float(spec.max_range_m)

    # Ground plane z = ground_z (global).
    with np.errstate(divide="ignore", invalid="ignore"):
        t_ground = (ground_z - origin[2]) / dirs_global[:, 2]
    best_t = np.where((t_ground > _EPS_T) & (t_ground <= max_range), t_ground, np.inf)
    best_box = np.full(best_t.size, -1, dtype=np.int64)
    cos_inc = np.abs(dirs_global[:, 2])

    if n_boxes:
        centers_sensor = transform_points(invert_transform(T), center_global)
        # A level sensor (its z axis the global z axis) sees yaw-only boxes as yaw-only boxes: tighter pruning.
        level = abs(T[2, 2] - 1.0) < 1e-9
        yaw_sensor = yaw_global - np.arctan2(T[1, 0], T[0, 0]) if level else None
        pair_box, pair_ray = _candidate_pairs(centers_sensor, prune_size, yaw_sensor, spec, azimuth_offset_deg)
        if pair_box.size:
            ray, box, t, cos_box = _box_hits(
                origin, dirs_global, center_global, size_lwh, yaw_global, pair_box, pair_ray, max_range, shift
            )
            closer = t < best_t[ray]
            ray, box, t, cos_box = ray[closer], box[closer], t[closer], cos_box[closer]
            best_t[ray] = t
            best_box[ray] = box
            cos_inc[ray] = cos_box

    returned = np.nonzero(np.isfinite(best_t))[0]
    # Both draws cover every return in firing order, whatever the settings, so results depend only on the seed.
    lost = rng.random(returned.size) < dropout
    noise = rng.normal(0.0, 1.0, returned.size) * range_noise_std_m
    keep = returned[~lost]
    rng_m = np.maximum(best_t[keep] + noise[~lost], 0.0)
    hit_box = best_box[keep]
    refl = np.where(hit_box >= 0, refl_box[np.maximum(hit_box, 0)] if n_boxes else 0.0, GROUND_REFLECTIVITY)
    intensity = np.clip(255.0 * refl * cos_inc[keep], 0.0, 255.0)

    points = np.empty((keep.size, 5), dtype=np.float32)
    points[:, :3] = dirs_sensor[keep] * rng_m[:, None]
    points[:, 3] = intensity
    points[:, 4] = ring[keep]
    hits_per_box = np.bincount(hit_box[hit_box >= 0], minlength=n_boxes).astype(np.int64)
    return LidarSweep(points_sensor=points, hits_per_box=hits_per_box, hit_box=hit_box.astype(np.int64))
