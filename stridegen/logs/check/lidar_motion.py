"""Whether the LiDAR scene moves relative to the ego: the log check's evidence on a scene whose ego poses never
change and whose annotations do not say whether the ego moved (``poses.constant_pose_findings``).

A few well-spaced sweep pairs are registered with the odometry of ``stridegen calibrate poses``
(``calibration.odometry.lidar_odometry``: point-to-plane ICP from several start speeds, the start that re-observes
the most structure kept, weak directions replaced by the prediction). Per pair (points in the ego frame of each
sweep; the displacement is the ego's, in the ego frame of the earlier sweep):

1. the points: finite, within ``MAX_RANGE_M`` of the LiDAR, farther than ``NEAR_RANGE_M`` (the ego's own body),
   more than ``odometry.ABOVE_GROUND_M`` above the sweep's RANSAC ground plane (``calibration.ground``): the ground
   constrains only height, roll and pitch, never the motion along the road;
2. the registration of the later sweep onto the earlier one, with ``MOTION_CONFIG``;
3. its support: the share of the later sweep's structure (one point per ``VOXEL_M`` voxel) that lands within
   ``SUPPORT_DISTANCE_M`` of an earlier point once registered. The static world moves by one rigid motion, each
   moving object by its own: where most of the structure follows the motion found, it is the world's.

A pair says **moved** when the ego moved faster than ``MOVED_MPS`` and **still** below ``STILL_MPS``, each only
when the registration is well posed: at least ``MIN_SUPPORT_VOXELS`` supported voxels, a support share of at least
``MIN_SUPPORT_SHARE``, and neither x nor y among the weak directions. A pair whose sweeps have fewer than
``MIN_SUPPORT_VOXELS`` voxels of structure each is not registered at all. Otherwise it cannot tell (too little
structure off the ground, a corridor whose walls fix y only, traffic that moves each its own way).

The scene: **moved** as soon as one pair says so (its poses claim the ego never moved; one well-posed motion
contradicts them; a car that waits at a light and drives on shows it in one pair); **still** when every pair says
so and the first and last sweeps, registered from where they stand (no start speed), lie within
``STILL_SCENE_M`` of each other; else it cannot tell, with the first reason.

Thresholds:

- ``MOVED_MPS`` = 1 m/s, the annotation rule's own (``poses.STATIC_MOVING_MPS``); ``STILL_MPS`` = 0.2 m/s, 10 cm over
  a 0.5 s pair. On the 30 pairs of consecutive frames of the two-scene synthetic log with ``static_scenery`` (seed 5,
  ego at 0.3-10.1 m/s) the speed found is within 0.13 m/s of the generator's analytic one (median 0.01); a parked
  ego's pairs give 0.01 m/s or less. A pair between the two thresholds is a creeping or braking car: no verdict.
  ``STILL_SCENE_M`` = 0.5 m between the first and last sweep.
- ``PAIR_SPACING_S`` = 0.5 s: the frames of nuScenes (2 Hz); long enough that 0.2 m/s is 10 cm, short enough that
  the world the two sweeps see is mostly the same. ``MOTION_CONFIG``'s coarse level searches 4 m around each start
  speed (0, 6, .., 42 m/s: 3 m apart at 0.5 s), so any road speed up to about 45 m/s (162 km/h) is in reach.
- ``MIN_SUPPORT_VOXELS`` = 500 voxels of 0.5 m (about 125 m^2 of surface seen by both sweeps): the 30 pairs above
  have 2,404 to 3,882 (each sweep 2,599 to 4,110 voxels of structure; nuScenes scene-0061's real sweep of a
  Singapore street 3,808); the same log without the scenery (traffic alone: cars, buses, cyclists, pedestrians) 29
  to 153 (each sweep 71 to 425 voxels), and there the registration follows the traffic (0.0 m/s on a lead car at
  the ego's speed, 18 m/s on oncoming cars). A car's side seen from the road is about 4.5 x 1.5 m, some 30 such
  voxels: 500 is more than the traffic around a car gives.
- ``MIN_SUPPORT_SHARE`` = 0.5: "most of the structure" (the pairs above: 0.75 to 0.94).
- ``MAX_RANGE_M`` = 50 m: beyond it a 32-beam LiDAR's rings are metres apart and add little but cost;
  ``NEAR_RANGE_M`` = 3 m: the ego's own roof and bonnet (the nuScenes devkit drops returns within 1 m of the sensor,
  ``LidarPointCloud.remove_close``; 3 m also covers the body of a car whose LiDAR is not centred).

Pairs: from the first sweep and from the last to the one ``PAIR_SPACING_S`` away. Cost: four point files at most
(two when the first pair says moved), each pair registered from at most 8 start speeds (starts that converge
together are run once), the first and last sweeps from one. Units: metres, seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from stridegen.calibration.ground import GroundPlane, fit_ground_plane
from stridegen.calibration.icp import IcpLevel
from stridegen.calibration.odometry import ABOVE_GROUND_M, OdometryConfig, lidar_odometry
from stridegen.core.errors import GeometryError, StrideGenError
from stridegen.core.transforms import transform_points
from stridegen.logs.base import Frame, Scene

MOVED, STILL, UNKNOWN = "moved", "still", "unknown"
MOVED_MPS = 1.0
STILL_MPS = 0.2
STILL_SCENE_M = 0.5
PAIR_SPACING_S = 0.5
MAX_RANGE_M = 50.0
NEAR_RANGE_M = 3.0
VOXEL_M = 0.5  # the finest registration level's voxel: each sweep is reduced to one point per voxel first
SUPPORT_DISTANCE_M = 0.5
MIN_SUPPORT_VOXELS = 500
MIN_SUPPORT_SHARE = 0.5
# Two levels instead of calibrate poses' three: the verdict needs decimetres, not centimetres (module docstring).
MOTION_CONFIG = OdometryConfig(
    levels=(IcpLevel(1.5, 4.0, 8), IcpLevel(0.5, 0.8, 8)),
    start_speeds_mps=tuple(float(v) for v in range(0, 43, 6)),
    start_window=2,
)
STANDING_CONFIG = OdometryConfig(levels=MOTION_CONFIG.levels, start_speeds_mps=(0.0,), start_window=2)


class UnreadableSweep(Exception):
    """A sweep the reader could not give as points [N, >=3] (the message names its file and the reason)."""


@dataclass(frozen=True)
class PairMotion:
    """One registered pair: the sweeps' times ``t0_s`` < ``t1_s`` (s, scene clock), the ego's displacement
    ``shift_m`` [3] (ego frame of the earlier sweep), ``support_voxels`` and ``support_share`` (module docstring,
    step 3), ``weak`` (the directions taken from the prediction), and ``verdict`` with its ``reason``."""

    t0_s: float
    t1_s: float
    shift_m: np.ndarray
    support_voxels: int
    support_share: float
    weak: tuple[str, ...]
    verdict: str
    reason: str

    @property
    def speed_mps(self) -> float:
        """Horizontal speed of the ego over the pair (m/s)."""
        return float(np.linalg.norm(self.shift_m[:2]) / (self.t1_s - self.t0_s))


@dataclass(frozen=True)
class LidarMotion:
    """The scene's verdict (``MOVED``, ``STILL`` or ``UNKNOWN``), a sentence saying why, and the pairs run."""

    verdict: str
    reason: str
    pairs: list[PairMotion] = field(default_factory=list)


def lidar_scene_motion(scene: Scene) -> LidarMotion:
    """Whether the ego of ``scene`` moved, from its LiDAR sweeps alone (module docstring)."""
    channel = next((f.lidar_channels[0] for f in scene.frames if f.lidar_channels), None)
    if channel is None:
        return LidarMotion(UNKNOWN, "the scene has no LiDAR sweeps")
    frames = [f for f in scene.frames if channel in f.sensors]
    if len(frames) < 2:
        return LidarMotion(UNKNOWN, f"the scene has {len(frames)} {channel} sweep(s), and a comparison needs two")
    times = np.array([f.sensors[channel].timestamp_us for f in frames], dtype=np.float64) * 1e-6
    cache: dict[int, np.ndarray] = {}
    pairs: list[PairMotion] = []
    try:
        for i, j in sweep_pairs(times):
            pair = _register(frames, channel, times, i, j, cache, MOTION_CONFIG)
            pairs.append(pair)
            if pair.verdict == MOVED:
                return LidarMotion(MOVED, _describe(pair), pairs)
        unknown = [p for p in pairs if p.verdict == UNKNOWN]
        if unknown:
            return LidarMotion(UNKNOWN, unknown[0].reason, pairs)
        last = len(frames) - 1
        if any((p.t0_s, p.t1_s) == (times[0], times[last]) for p in pairs):
            return LidarMotion(STILL, _describe_still(pairs, None), pairs)
        whole = _register(frames, channel, times, 0, last, cache, STANDING_CONFIG)
    except (UnreadableSweep, StrideGenError) as exc:  # a sweep that cannot be read; open3d missing
        return LidarMotion(UNKNOWN, f"the sweeps could not be compared: {exc}", pairs)
    if whole.verdict == UNKNOWN:
        return LidarMotion(UNKNOWN, whole.reason, pairs)
    shift = float(np.linalg.norm(whole.shift_m[:2]))
    if shift > STILL_SCENE_M:
        return LidarMotion(
            UNKNOWN,
            f"the sweeps at {whole.t0_s - times[0]:.2f} s and {whole.t1_s - times[0]:.2f} s lie {shift:.2f} m apart "
            f"(more than {STILL_SCENE_M:g} m) although every pair of close sweeps stands still",
            pairs,
        )
    return LidarMotion(STILL, _describe_still(pairs, whole), pairs)


def sweep_pairs(times_s: np.ndarray) -> list[tuple[int, int]]:
    """Index pairs (i < j) of the sweeps to compare: from the first sweep to the one closest to ``PAIR_SPACING_S``
    later, and from the last to the one closest to that much earlier; each pair once, in time order. A scene that
    stands at both ends but drives in between fails the comparison of its first and last sweeps (no verdict)."""
    times = np.asarray(times_s, dtype=np.float64)
    n = times.size
    out: list[tuple[int, int]] = []
    for a in dict.fromkeys((0, n - 1)):
        target = times[a] + (PAIR_SPACING_S if a < n - 1 else -PAIR_SPACING_S)
        gap = np.abs(times - target)
        gap[a] = np.inf
        b = int(np.argmin(gap))
        pair = (min(a, b), max(a, b))
        if pair not in out:
            out.append(pair)
    return sorted(out)


def structure_points(frame: Frame, channel: str, rng: np.random.Generator) -> np.ndarray:
    """The sweep's points [N, 3] in the ego frame that count as structure (module docstring, step 1)."""
    sample = frame.sensors[channel]
    try:
        raw = np.asarray(frame.reader.load_points(sample))
    except Exception as exc:  # a typed LogFormatError, or whatever a plugin reader raises
        raise UnreadableSweep(f"{sample.path}: {type(exc).__name__}: {exc}") from exc
    if raw.ndim != 2 or raw.shape[1] < 3:
        raise UnreadableSweep(f"{sample.path}: points of shape {raw.shape}, not [N, >=3]")
    xyz = raw[:, :3].astype(np.float64)
    xyz = xyz[np.all(np.isfinite(xyz), axis=1)]
    reach = np.hypot(xyz[:, 0], xyz[:, 1])  # sensor frame: distance from the LiDAR
    xyz = transform_points(sample.calibration.T_ego_from_sensor, xyz[(reach <= MAX_RANGE_M) & (reach > NEAR_RANGE_M)])
    try:
        xyz = xyz[fit_ground(xyz, rng).distance(xyz) > ABOVE_GROUND_M]
    except GeometryError:
        pass  # no ground seen: every point is structure
    return voxel_centroids(xyz, VOXEL_M)


def voxel_centroids(xyz: np.ndarray, voxel_m: float) -> np.ndarray:
    """The centroid [K, 3] of the points [N, 3] of each occupied ``voxel_m`` cube (in order of the voxels' keys)."""
    if not len(xyz):
        return xyz.reshape(0, 3)
    keys = np.floor(xyz / voxel_m).astype(np.int64)
    keys -= keys.min(axis=0)
    span = keys.max(axis=0) + 1
    flat = (keys[:, 0] * span[1] + keys[:, 1]) * span[2] + keys[:, 2]  # one integer per voxel: a 1-D unique
    _, inverse, counts = np.unique(flat, return_inverse=True, return_counts=True)
    sums = np.stack([np.bincount(inverse, weights=xyz[:, d]) for d in range(3)], axis=1)
    return np.asarray(sums / counts[:, None])


def fit_ground(xyz: np.ndarray, rng: np.random.Generator) -> GroundPlane:
    """The ground plane of an ego-frame sweep, sampled among the points at most 0.5 m above the ego origin (which
    lies on the ground: docs/conventions.md), as the odometry's start score does."""
    return fit_ground_plane(xyz, rng, max_height_m=0.5)


def _register(
    frames: list[Frame],
    channel: str,
    times: np.ndarray,
    i: int,
    j: int,
    cache: dict[int, np.ndarray],
    config: OdometryConfig,
) -> PairMotion:
    for k in (i, j):
        if k not in cache:
            cache[k] = structure_points(frames[k], channel, np.random.default_rng(k))
    a, b = cache[i], cache[j]
    t0, t1 = float(times[i]), float(times[j])
    when = f"the sweeps at {t0 - times[0]:.2f} s and {t1 - times[0]:.2f} s"
    if min(len(a), len(b)) < MIN_SUPPORT_VOXELS:  # no registration can have that support: none is run
        reason = (
            f"{when} have too little structure off the ground: {len(a)} and {len(b)} voxels of {VOXEL_M:g} m (at "
            f"least {MIN_SUPPORT_VOXELS} each needed: buildings, walls, poles, parked cars)"
        )
        return PairMotion(t0, t1, np.zeros(3), 0, 0.0, (), UNKNOWN, reason)
    result = lidar_odometry([a, b], np.array([0.0, t1 - t0]), config)
    T = result.T_world_from_ego[1]
    voxels, share = support(a, transform_points(T, b))
    pair = PairMotion(t0, t1, T[:3, 3].copy(), voxels, share, tuple(result.weak[1]), UNKNOWN, "")
    speed = pair.speed_mps
    weak = [w for w in pair.weak if w in ("x", "y")]
    if voxels < MIN_SUPPORT_VOXELS:
        reason = (
            f"{when} share too little structure off the ground: {voxels} voxels of {VOXEL_M:g} m seen by "
            f"both (at least {MIN_SUPPORT_VOXELS} needed: buildings, walls, poles, parked cars)"
        )
    elif share < MIN_SUPPORT_SHARE:
        reason = (
            f"{when} match in only {share:.0%} of their structure (at least {MIN_SUPPORT_SHARE:.0%} needed): "
            "objects that move each their own way"
        )
    elif weak:
        reason = (
            f"{when} do not fix the motion along {' and '.join(weak)} (a degenerate match: walls parallel to the "
            "road, say)"
        )
    elif speed > MOVED_MPS:
        return replace(pair, verdict=MOVED)
    elif speed < STILL_MPS:
        return replace(pair, verdict=STILL)
    else:
        reason = f"{when} give {speed:.2f} m/s, between the {STILL_MPS:g} m/s of a standing car and {MOVED_MPS:g} m/s"
    return replace(pair, reason=reason)


def support(reference: np.ndarray, moved: np.ndarray) -> tuple[int, float]:
    """(supported points, their share): the points of ``moved`` [N, 3] (voxel centroids) within
    ``SUPPORT_DISTANCE_M`` of a ``reference`` point [M, 3] (both in one frame)."""
    from scipy.spatial import cKDTree

    if not len(moved) or not len(reference):
        return 0, 0.0
    distance, _ = cKDTree(reference).query(moved, distance_upper_bound=SUPPORT_DISTANCE_M)
    hit = int(np.isfinite(distance).sum())
    return hit, hit / len(moved)


def _describe(pair: PairMotion) -> str:
    return (
        f"registering two of its LiDAR sweeps {pair.t1_s - pair.t0_s:.2f} s apart (the scan matching of `stridegen "
        f"calibrate poses`) moves the ego {np.linalg.norm(pair.shift_m[:2]):.2f} m ({pair.speed_mps:.2f} m/s), "
        f"{pair.support_share:.0%} of the structure off the ground agreeing"
    )


def _describe_still(pairs: list[PairMotion], whole: PairMotion | None) -> str:
    fastest = max(p.speed_mps for p in pairs)
    text = f"{len(pairs)} pair(s) of close LiDAR sweeps register at {fastest:.2f} m/s or less"
    if whole is not None:
        text += (
            f", and the first and last sweeps, {whole.t1_s - whole.t0_s:.2f} s apart, lie "
            f"{np.linalg.norm(whole.shift_m[:2]):.2f} m apart"
        )
    return text
