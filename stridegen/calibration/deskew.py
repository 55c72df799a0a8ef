"""De-skew of a spinning LiDAR's sweep: every point moved to where it would have been seen at the sweep's
reference time, assuming constant velocity over the sweep.

A point measured at time ``tau`` (seconds relative to the reference time, negative before it) was seen by the
sensor at pose ``T_ref_from_tau = exp(tau / dt * log(Delta))`` where ``Delta = T_ref_from_next`` is the sensor's
motion over ``dt`` (the previous motion estimate: constant velocity); the de-skewed point is
``T_ref_from_tau @ p``. Rotations are interpolated on SO(3) (rotation vector scaled by ``tau / dt``), translations
linearly, which is the first-order screw motion for the short sweep interval.
"""

from __future__ import annotations

import numpy as np


def azimuth_times(points_sensor: np.ndarray, period_s: float, clockwise: bool = True) -> np.ndarray:
    """Per-point times [N] (s, relative to the end of the sweep, so all <= 0) of a spinning LiDAR whose sweep ends
    at azimuth 0 (the sensor's +x axis), from each point's azimuth: a full turn takes ``period_s``."""
    az = np.arctan2(points_sensor[:, 1], points_sensor[:, 0])
    turned = np.mod(az if clockwise else -az, 2.0 * np.pi)  # angle still to turn before reaching azimuth 0
    return -turned / (2.0 * np.pi) * period_s


def deskew_points(
    points_sensor: np.ndarray, times_s: np.ndarray, T_ref_from_next: np.ndarray, dt_s: float
) -> np.ndarray:
    """Points [N, 3] of one sweep (sensor frame, each seen at ``times_s`` [N] s relative to the reference time)
    moved into the sensor frame of the reference time, with the constant-velocity motion ``T_ref_from_next``
    (4x4) of the sensor over ``dt_s`` seconds (positive)."""
    from scipy.spatial.transform import Rotation

    xyz = np.asarray(points_sensor, dtype=np.float64)[:, :3]
    frac = np.asarray(times_s, dtype=np.float64) / float(dt_s)
    rotvec = Rotation.from_matrix(np.asarray(T_ref_from_next)[:3, :3]).as_rotvec()
    rot = Rotation.from_rotvec(frac[:, None] * rotvec[None, :])
    return rot.apply(xyz) + frac[:, None] * np.asarray(T_ref_from_next)[None, :3, 3]
