"""LiDAR odometry: ego poses from consecutive sweeps by scan-to-local-map point-to-plane ICP (``icp``).

Per sweep k (points in the ego frame, de-skewed by the caller):

1. prediction: the previous motion repeated over this interval (constant velocity, rotation vector and translation
   scaled by the time ratio); with a speed prior (radar Doppler, wheel speed) the predicted translation is rescaled
   to ``speed * dt`` along the predicted direction (the ego's +x axis when the prediction is a standstill);
2. registration: the sweep onto the union of the last ``map_sweeps`` registered sweeps (world frame), coarse to
   fine, from the prediction; objects that moved further than a level's correspondence distance get no weight.

3. degeneracy: the information matrix of the registration (``icp``), its rotation part scaled by
   ``lever_m`` (a rotation of ``a / lever_m`` radians moves a point ``lever_m`` away by ``a`` metres) so that every
   eigenvalue counts "unit normals' worth" of constraint along one direction; along eigen-directions below
   ``min_eigenvalue`` the registration is replaced by the prediction (solution remapping of J. Zhang, M. Kaess,
   S. Singh, "On degeneracy of optimization-based state estimation problems", ICRA 2016, with the prediction as
   the fallback). A flat road with few static objects constrains z, roll and pitch only: x, y and yaw then follow
   the constant-velocity prediction.

Points on moving objects should be removed before (``points_outside_boxes``): a car that drives at the ego's
speed looks static and pulls the registration to a standstill.

The first interval has no previous motion. Without a speed prior every start speed of ``start_speeds_mps`` is
tried (starts that converge to the same first motion are run once): each start is run over the first
``start_window`` sweeps and scored by the number of distinct
``score_voxel_m`` voxels of above-ground points seen by at least two sweeps (static structure re-observed). A car
driving ahead at the ego's own speed matches perfectly under a "standing still" start, but it is one compact
object, whereas the static world the true start re-observes is spread out: counting voxels, not points, keeps
the co-moving car from winning.

World frame: the ego frame of the first sweep. Units: metres, seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from stridegen.calibration.ground import fit_ground_plane
from stridegen.calibration.icp import DEFAULT_LEVELS, IcpLevel, point_to_plane_icp
from stridegen.core.errors import GeometryError
from stridegen.core.transforms import invert_transform, transform_points

ABOVE_GROUND_M = 0.3  # points this far above the sweep's ground plane are "structure" for the start score
DEFAULT_LEVER_M = 10.0  # rotation scale of the degeneracy test: radians x 10 m
DEFAULT_MIN_EIGENVALUE = 20.0  # directions with less information than 20 aligned unit normals are weak
DIRECTION_NAMES = ("roll", "pitch", "yaw", "x", "y", "z")  # order of the twist (omega, v), ego frame
# Eigenvalues within this fraction of the largest one are zero: ``eigh`` of a rank-deficient matrix returns its
# zero eigenvalues as rounding noise of either sign, about 1e-16 x the largest (LAPACK's backward error, a small
# multiple of machine epsilon times the matrix norm; numpy.linalg.matrix_rank draws the same line at
# n x eps x the largest singular value). 1e-10 sits far above that noise and far below any real constraint: with
# the largest direction at 1e5 unit normals, it is 1e-5 of one normal.
EIGENVALUE_RTOL = 1e-10


@dataclass(frozen=True)
class OdometryConfig:
    """Odometry settings (see the module docstring)."""

    levels: tuple[IcpLevel, ...] = DEFAULT_LEVELS
    map_sweeps: int = 3
    start_speeds_mps: tuple[float, ...] = tuple(float(v) for v in range(0, 18, 2))
    start_window: int = 12
    score_voxel_m: float = 0.5
    seed: int = 0  # RANSAC draws of the ground planes
    min_eigenvalue: float = DEFAULT_MIN_EIGENVALUE  # 0: no degeneracy handling (``weak_directions``)
    lever_m: float = DEFAULT_LEVER_M


@dataclass
class OdometryResult:
    """``T_world_from_ego`` [F, 4, 4] (world: ego frame of sweep 0); per sweep ``fitness`` [F] and ``rmse_m`` [F]
    of its registration (NaN for sweep 0), ``eigenvalues`` [F, 6] of its scaled information matrix (ascending;
    NaN for sweep 0) and ``weak`` [F] the names (``weak_axis_names``) of the directions taken from the
    prediction; ``start_speed_mps``: the start speed chosen (NaN
    with a speed prior); ``start_scores``: start speed -> score."""

    T_world_from_ego: np.ndarray
    fitness: np.ndarray
    rmse_m: np.ndarray
    start_speed_mps: float = float("nan")
    start_scores: dict[float, int] = field(default_factory=dict)
    eigenvalues: np.ndarray = field(default_factory=lambda: np.full((0, 6), np.nan))
    weak: list[tuple[str, ...]] = field(default_factory=list)


@dataclass(frozen=True)
class Remapped:
    """A registration with its weak directions replaced by the prediction: ``T_world_from_ego`` (4x4),
    ``eigenvalues`` [6] ascending (scaled information), ``weak``: names of the replaced directions."""

    T_world_from_ego: np.ndarray
    eigenvalues: np.ndarray
    weak: tuple[str, ...]


def weak_directions(eigenvalues: np.ndarray, min_eigenvalue: float) -> tuple[np.ndarray, np.ndarray]:
    """The degeneracy rule: ``(values, weak)`` for the ascending ``eigenvalues`` of a symmetric positive
    semi-definite matrix. ``values`` has every eigenvalue within ``EIGENVALUE_RTOL`` of the largest one's magnitude
    set to exactly 0 (rounding noise, whose sign differs between LAPACK builds); ``weak`` marks the values below
    ``min_eigenvalue``. So ``min_eigenvalue=0`` means "never weak" on every machine, and a direction is weak
    only when it carries less than ``min_eigenvalue`` of information. A negative or non-finite
    ``min_eigenvalue`` is an error (it would silently mean the same as 0)."""
    if not np.isfinite(min_eigenvalue) or min_eigenvalue < 0:
        raise ValueError(f"min_eigenvalue must be a finite number >= 0, got {min_eigenvalue}")
    values = np.asarray(eigenvalues, dtype=np.float64)
    largest = float(np.max(np.abs(values))) if values.size else 0.0
    values = np.where(np.abs(values) <= EIGENVALUE_RTOL * largest, 0.0, values)
    return values, values < min_eigenvalue


def remap_degenerate(
    T_pred: np.ndarray, T_icp: np.ndarray, information: np.ndarray, min_eigenvalue: float, lever_m: float
) -> Remapped:
    """``T_icp`` with its component along the weak eigen-directions of ``information`` (6x6, ``icp`` order, at
    ``T_icp``) replaced by the prediction ``T_pred`` (module docstring, step 3; the rule: ``weak_directions``).
    The correction
    ``xi = (rotvec, translation)`` of ``T_pred^-1 T_icp`` (ego frame) is projected onto the strong directions."""
    from scipy.spatial.transform import Rotation

    scale = np.array([1.0 / lever_m] * 3 + [1.0] * 3)  # twist -> metres-like coordinates: xi' = xi / scale
    scaled = np.asarray(information, dtype=np.float64) * scale[:, None] * scale[None, :]
    raw_values, vectors = np.linalg.eigh(scaled)
    values, weak_mask = weak_directions(raw_values, min_eigenvalue)
    if not weak_mask.any():
        return Remapped(np.asarray(T_icp, dtype=np.float64), values, ())
    delta = invert_transform(T_pred) @ T_icp
    xi = np.concatenate([Rotation.from_matrix(delta[:3, :3]).as_rotvec(), delta[:3, 3]]) / scale
    strong = vectors[:, ~weak_mask]
    kept = (strong @ (strong.T @ xi)) * scale
    step = np.eye(4)
    step[:3, :3] = Rotation.from_rotvec(kept[:3]).as_matrix()
    step[:3, 3] = kept[3:]
    return Remapped(T_pred @ step, values, weak_axis_names(vectors[:, weak_mask]))


def weak_axis_names(weak_vectors: np.ndarray) -> tuple[str, ...]:
    """Names (``DIRECTION_NAMES`` order) of the k twist axes that lie most in the span of the k orthonormal
    columns of ``weak_vectors`` [6, k]: the k largest diagonal entries of the projector onto that span. Inside a
    repeated eigenvalue (a flat ground leaves x, y and yaw all at 0) ``eigh`` may return any rotation of the
    eigenvectors, so naming each eigenvector by its own largest entry would depend on the LAPACK build; the
    projector does not."""
    share = np.einsum("ik,ik->i", weak_vectors, weak_vectors)  # diag(W W^T): each axis's squared length in the span
    chosen = np.sort(np.argsort(-share, kind="stable")[: weak_vectors.shape[1]])
    return tuple(DIRECTION_NAMES[int(i)] for i in chosen)


def scale_motion(delta: np.ndarray, ratio: float) -> np.ndarray:
    """The motion ``delta`` (4x4) scaled in time by ``ratio``: rotation vector and translation times ``ratio``."""
    from scipy.spatial.transform import Rotation

    out = np.eye(4)
    out[:3, :3] = Rotation.from_rotvec(Rotation.from_matrix(delta[:3, :3]).as_rotvec() * ratio).as_matrix()
    out[:3, 3] = delta[:3, 3] * ratio
    return out


def _with_speed(delta: np.ndarray, speed_mps: float, dt: float) -> np.ndarray:
    out = delta.copy()
    norm = float(np.linalg.norm(delta[:3, 3]))
    direction = delta[:3, 3] / norm if norm > 1e-6 else np.array([1.0, 0.0, 0.0])
    out[:3, 3] = direction * speed_mps * dt
    return out


class _Run:
    """One odometry run: poses so far and the local map."""

    def __init__(self, points: list[np.ndarray], times: np.ndarray, config: OdometryConfig) -> None:
        self.points, self.times, self.config = points, times, config
        self.poses: list[np.ndarray] = [np.eye(4)]
        self.fitness: list[float] = [float("nan")]
        self.rmse: list[float] = [float("nan")]
        self.eigenvalues: list[np.ndarray] = [np.full(6, np.nan)]
        self.weak: list[tuple[str, ...]] = [()]

    def step(self, delta_guess: np.ndarray | None, speed_prior: float | None) -> None:
        k = len(self.poses)
        dt = float(self.times[k] - self.times[k - 1])
        if delta_guess is None:
            if k >= 2:
                prev = invert_transform(self.poses[k - 2]) @ self.poses[k - 1]
                delta_guess = scale_motion(prev, dt / float(self.times[k - 1] - self.times[k - 2]))
            else:
                delta_guess = np.eye(4)
        if speed_prior is not None and np.isfinite(speed_prior):
            delta_guess = _with_speed(delta_guess, float(speed_prior), dt)
        first = max(0, k - self.config.map_sweeps)
        target = np.concatenate([transform_points(self.poses[j], self.points[j]) for j in range(first, k)])
        T_pred = self.poses[k - 1] @ delta_guess
        result = point_to_plane_icp(self.points[k], target, T_pred, self.config.levels)
        remapped = remap_degenerate(
            T_pred, result.T_target_from_source, result.information, self.config.min_eigenvalue, self.config.lever_m
        )
        self.poses.append(remapped.T_world_from_ego)
        self.fitness.append(result.fitness)
        self.rmse.append(result.rmse_m)
        self.eigenvalues.append(remapped.eigenvalues)
        self.weak.append(remapped.weak)

    def result(self, start_speed: float = float("nan"), start_scores: dict[float, int] | None = None) -> OdometryResult:
        return OdometryResult(
            np.stack(self.poses),
            np.array(self.fitness),
            np.array(self.rmse),
            start_speed,
            start_scores or {},
            np.stack(self.eigenvalues),
            list(self.weak),
        )


def _structure_score(run: _Run, above: list[np.ndarray], voxel: float) -> int:
    """Distinct voxels (world frame) of above-ground points hit by at least two sweeps of the run."""
    keys = []
    for k, pose in enumerate(run.poses):
        idx = np.unique(np.floor(transform_points(pose, run.points[k][above[k]]) / voxel).astype(np.int64), axis=0)
        keys.append(np.concatenate([idx, np.full((len(idx), 1), k)], axis=1))
    allk = np.concatenate(keys)
    _, counts = np.unique(allk[:, :3], axis=0, return_counts=True)
    return int((counts >= 2).sum())


def lidar_odometry(
    points_ego: list[np.ndarray],
    times_s: np.ndarray,
    config: OdometryConfig | None = None,
    speed_prior_mps: np.ndarray | None = None,
) -> OdometryResult:
    """Ego poses of a sequence of sweeps: ``points_ego`` [F] arrays [N_k, >=3] in the ego frame (de-skewed),
    ``times_s`` [F] strictly increasing; ``speed_prior_mps`` [F] optional ego speeds (NaN where unknown)."""
    config = config or OdometryConfig()
    times = np.asarray(times_s, dtype=np.float64)
    pts = [np.ascontiguousarray(np.asarray(p, dtype=np.float64)[:, :3]) for p in points_ego]
    if len(pts) != times.size or times.size == 0:
        raise GeometryError(f"{len(pts)} sweeps but {times.size} times")
    if np.any(np.diff(times) <= 0):
        raise GeometryError("sweep times are not strictly increasing")
    prior = None if speed_prior_mps is None else np.asarray(speed_prior_mps, dtype=np.float64)

    def prior_at(k: int) -> float | None:
        return None if prior is None or not np.isfinite(prior[k]) else float(prior[k])

    if times.size == 1:
        return _Run(pts, times, config).result()
    start_scores: dict[float, int] = {}
    start_speed = float("nan")
    if prior_at(1) is not None:
        run = _Run(pts, times, config)
    else:
        rng = np.random.default_rng(config.seed)
        window = min(config.start_window, times.size)
        above = []
        for p in pts[:window]:
            try:
                above.append(fit_ground_plane(p, rng, max_height_m=0.5).distance(p) > ABOVE_GROUND_M)
            except GeometryError:
                above.append(np.ones(len(p), dtype=bool))
        best: tuple[int, float, _Run] | None = None
        firsts: list[np.ndarray] = []
        dt = float(times[1] - times[0])
        for v in config.start_speeds_mps:
            guess = np.eye(4)
            guess[0, 3] = v * dt
            candidate = _Run(pts, times, config)
            candidate.step(guess, None)
            if any(np.abs(candidate.poses[1] - seen).max() < 0.05 for seen in firsts):
                continue  # converged to a start already tried: the same run
            firsts.append(candidate.poses[1])
            for _ in range(2, window):
                candidate.step(None, prior_at(len(candidate.poses)))
            score = _structure_score(candidate, above, config.score_voxel_m)
            start_scores[float(v)] = score
            if best is None or score > best[0]:
                best = (score, float(v), candidate)
        assert best is not None
        _, start_speed, run = best
    while len(run.poses) < times.size:
        run.step(None, prior_at(len(run.poses)))
    return run.result(start_speed, start_scores)


def points_outside_boxes(
    points: np.ndarray, center: np.ndarray, size_lwh: np.ndarray, yaw: np.ndarray, margin_m: float
) -> np.ndarray:
    """Boolean [N]: points [N, >=3] outside every yaw-only box (``center`` [B, 3], ``size_lwh`` [B, 3], ``yaw``
    [B]; same frame as the points) grown by ``margin_m`` on every side (box-edge and timing slack)."""
    from stridegen.core.box_geometry import points_in_boxes

    keep = np.ones(len(points), dtype=bool)
    size = np.asarray(size_lwh, dtype=np.float64).reshape(-1, 3) + 2.0 * margin_m
    for i in range(size.shape[0]):  # one box at a time: [B, N] would be large for dense sweeps
        keep &= ~points_in_boxes(points, np.asarray(center)[i : i + 1], size[i : i + 1], np.asarray(yaw)[i : i + 1])[0]
    return keep
