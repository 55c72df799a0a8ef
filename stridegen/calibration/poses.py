"""Small SE(3) helpers for trajectories: interpolation at sample times, headings, trajectory errors.

Poses are 4x4 ``T_world_from_body`` matrices (docs/conventions.md); trajectories are [F, 4, 4] arrays with times in
seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stridegen.core.transforms import invert_transform


def yaw_rad(T: np.ndarray) -> np.ndarray:
    """Heading [...] (radians) of the body x axis projected onto the world xy plane."""
    T = np.asarray(T, dtype=np.float64)
    return np.arctan2(T[..., 1, 0], T[..., 0, 0])


def rotation_angle_rad(R: np.ndarray) -> np.ndarray:
    """Angle [...] (radians) of rotation matrices [..., 3, 3] (axis-angle magnitude)."""
    R = np.asarray(R, dtype=np.float64)
    cos = (np.trace(R, axis1=-2, axis2=-1) - 1.0) / 2.0
    return np.arccos(np.clip(cos, -1.0, 1.0))


def interpolate_poses(times_s: np.ndarray, poses: np.ndarray, query_s: np.ndarray) -> np.ndarray:
    """Poses [Q, 4, 4] at ``query_s``: rotations by spherical linear interpolation (scipy ``Slerp``), translations
    linearly, between the two surrounding poses of ``times_s`` (strictly increasing); outside the range the first
    or last segment is extended at its constant velocity (a single pose is held)."""
    from scipy.spatial.transform import Rotation

    times_s = np.asarray(times_s, dtype=np.float64)
    poses = np.asarray(poses, dtype=np.float64)
    query_s = np.atleast_1d(np.asarray(query_s, dtype=np.float64))
    if times_s.size == 1:
        return np.broadcast_to(poses[0], (query_s.size, 4, 4)).copy()
    seg = np.clip(np.searchsorted(times_s, query_s, side="right") - 1, 0, times_s.size - 2)
    alpha = (query_s - times_s[seg]) / (times_s[seg + 1] - times_s[seg])
    T0, T1 = poses[seg], poses[seg + 1]
    delta = Rotation.from_matrix(np.einsum("qji,qjk->qik", T0[:, :3, :3], T1[:, :3, :3]))  # R0^T R1
    rot = Rotation.from_rotvec(delta.as_rotvec() * alpha[:, None])
    out = np.zeros((query_s.size, 4, 4))
    out[:, :3, :3] = T0[:, :3, :3] @ rot.as_matrix()
    out[:, :3, 3] = T0[:, :3, 3] + alpha[:, None] * (T1[:, :3, 3] - T0[:, :3, 3])
    out[:, 3, 3] = 1.0
    return out


def relative_to_first(poses: np.ndarray) -> np.ndarray:
    """Poses [F, 4, 4] expressed in the body frame of the first one (``T_0^-1 T_k``)."""
    poses = np.asarray(poses, dtype=np.float64)
    return invert_transform(poses[0])[None] @ poses


@dataclass(frozen=True)
class TrajectoryError:
    """How far an estimated trajectory lies from a reference, both anchored at their first pose.

    ``translation_m`` [F]: position error of each pose; ``yaw_deg`` [F]: heading error (wrapped); ``rotation_deg``
    [F]: full rotation error; ``distance_m``: path length of the reference; ``max_translation_ratio``: the largest
    position error as a fraction of the distance travelled up to the end of the scene.
    """

    translation_m: np.ndarray
    yaw_deg: np.ndarray
    rotation_deg: np.ndarray
    distance_m: float

    @property
    def max_translation_ratio(self) -> float:
        return float(self.translation_m.max() / self.distance_m) if self.distance_m > 0 else float("nan")


def trajectory_error(estimate: np.ndarray, reference: np.ndarray) -> TrajectoryError:
    """Errors of ``estimate`` against ``reference`` ([F, 4, 4] each, same times), both re-anchored at their first
    pose (the world frame of an odometry is arbitrary up to that pose)."""
    est, ref = relative_to_first(estimate), relative_to_first(reference)
    diff = invert_transform(ref) @ est
    yaw = np.degrees(np.angle(np.exp(1j * (yaw_rad(est) - yaw_rad(ref)))))
    distance = float(np.linalg.norm(np.diff(ref[:, :3, 3], axis=0), axis=1).sum())
    return TrajectoryError(
        np.linalg.norm(est[:, :3, 3] - ref[:, :3, 3], axis=1),
        yaw,
        np.degrees(rotation_angle_rad(diff[:, :3, :3])),
        distance,
    )
