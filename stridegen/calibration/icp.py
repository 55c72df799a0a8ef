"""Coarse-to-fine point-to-plane ICP with open3d (imported lazily: the ``open3d`` extra).

Point-to-plane ICP (Y. Chen, G. Medioni, "Object modelling by registration of multiple range images", Image and
Vision Computing 10(3), 1992) minimises sum ((T p - q) . n_q)^2 over nearest-neighbour pairs within a distance;
each level runs open3d's ``registration_icp`` on voxel-downsampled clouds with a Tukey kernel of the level's
correspondence distance, so points on objects that moved (no partner within that distance) carry no weight.

The result carries the information matrix of the last level's inlier pairs, ``H = sum J^T J`` with the Jacobian
of the point-to-plane residual ``r = n . (T p - q)`` under a small motion of the source, ``T exp(xi)`` with
``xi = (omega, v)`` (rotation vector, translation; source frame): ``J = [p x n_s, n_s]`` where ``n_s = R^T n`` is the
target normal in the source frame. Its small eigenvalues are the directions the registration barely constrains
(A. Censi, "An accurate closed-form estimate of ICP's covariance", ICRA 2007; J. Zhang, M. Kaess, S. Singh, "On
degeneracy of optimization-based state estimation problems", ICRA 2016).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stridegen.core.errors import ConfigError, MissingExtraError


@dataclass(frozen=True)
class IcpLevel:
    """One level: voxel size of the downsampling (m), maximum correspondence distance (m), iterations."""

    voxel_m: float
    max_distance_m: float
    iterations: int = 30


# Coarse to fine: a 1.5 m search absorbs the error of a constant-velocity prediction at 2 Hz (0.5 a dt^2 = 0.7 m
# at 5.6 m/s^2), the last level fits at the LiDAR's range noise.
DEFAULT_LEVELS = (IcpLevel(0.8, 1.5, 15), IcpLevel(0.4, 0.6, 15), IcpLevel(0.2, 0.25, 20))
NORMAL_RADIUS_FACTOR = 3.0  # normals from neighbours within 3 voxels (at most NORMAL_MAX_NN of them)
NORMAL_MAX_NN = 30


@dataclass(frozen=True)
class IcpResult:
    """``T_target_from_source`` maps source points onto the target; ``fitness``: fraction of downsampled source
    points with a partner within the last level's distance; ``rmse_m``: RMS point-to-point distance of those pairs;
    ``correspondences``: their number; ``information`` [6, 6]: ``sum J^T J`` over those pairs (module docstring;
    order omega_x, omega_y, omega_z, v_x, v_y, v_z in the source frame; units m^2 for the rotation block, m for
    the mixed block, 1 for the translation block), zeros when no level ran."""

    T_target_from_source: np.ndarray
    fitness: float
    rmse_m: float
    correspondences: int
    information: np.ndarray = field(default_factory=lambda: np.zeros((6, 6)))


def open3d_module() -> Any:
    """The ``open3d`` module, or MissingExtraError naming the extra (ConfigError when it is installed but a shared
    library it loads is missing)."""
    try:
        import open3d
    except ModuleNotFoundError as exc:
        raise MissingExtraError("open3d", "open3d") from exc
    except ImportError as exc:
        raise ConfigError(
            f"open3d is installed but does not import ({exc}); on Debian it needs libusb: apt-get install libusb-1.0-0"
        ) from exc
    return open3d


def _cloud(o3d: Any, xyz: np.ndarray) -> Any:
    cloud = o3d.geometry.PointCloud()
    cloud.points = o3d.utility.Vector3dVector(np.ascontiguousarray(xyz[:, :3], dtype=np.float64))
    return cloud


def point_to_plane_icp(
    source_xyz: np.ndarray,
    target_xyz: np.ndarray,
    T_init: np.ndarray | None = None,
    levels: tuple[IcpLevel, ...] = DEFAULT_LEVELS,
) -> IcpResult:
    """Register ``source_xyz`` [N, 3] onto ``target_xyz`` [M, 3] (any common units: metres), starting from
    ``T_init`` (4x4 ``T_target_from_source``, identity by default), level by level (``levels``)."""
    o3d = open3d_module()
    reg = o3d.pipelines.registration
    T = np.eye(4) if T_init is None else np.asarray(T_init, dtype=np.float64).copy()
    source, target = _cloud(o3d, source_xyz), _cloud(o3d, target_xyz)
    result = None
    for level in levels:
        src = source.voxel_down_sample(level.voxel_m)
        tgt = target.voxel_down_sample(level.voxel_m)
        if len(src.points) < 3 or len(tgt.points) < 3:
            break
        tgt.estimate_normals(
            o3d.geometry.KDTreeSearchParamHybrid(radius=NORMAL_RADIUS_FACTOR * level.voxel_m, max_nn=NORMAL_MAX_NN)
        )
        estimation = reg.TransformationEstimationPointToPlane(reg.TukeyLoss(k=level.max_distance_m))
        result = reg.registration_icp(
            src, tgt, level.max_distance_m, T, estimation, reg.ICPConvergenceCriteria(max_iteration=level.iterations)
        )
        T = np.asarray(result.transformation, dtype=np.float64).copy()
    if result is None:
        return IcpResult(T, 0.0, float("nan"), 0)
    pairs = np.asarray(result.correspondence_set, dtype=np.int64).reshape(-1, 2)
    info = point_to_plane_information(
        np.asarray(src.points)[pairs[:, 0]], np.asarray(tgt.normals)[pairs[:, 1]], T[:3, :3]
    )
    return IcpResult(T, float(result.fitness), float(result.inlier_rmse), len(pairs), info)


def point_to_plane_information(source_xyz: np.ndarray, target_normals: np.ndarray, R: np.ndarray) -> np.ndarray:
    """``sum J^T J`` [6, 6] of point-to-plane pairs (module docstring): source points [N, 3] (source frame),
    their partners' unit normals [N, 3] (target frame), ``R`` the rotation target <- source."""
    n_s = np.asarray(target_normals, dtype=np.float64) @ np.asarray(R, dtype=np.float64)  # rows R^T n
    J = np.concatenate([np.cross(np.asarray(source_xyz, dtype=np.float64), n_s), n_s], axis=1)
    return np.asarray(J.T @ J)
