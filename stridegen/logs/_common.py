"""Helpers shared by the log readers: pose validation, the annotation velocity rule, how many built scenes a reader
keeps."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stridegen.core.errors import GeometryError, InvalidPoseError
from stridegen.core.transforms import check_unit_quaternion

# nuscenes-devkit ``NuScenes.box_velocity`` default (python-sdk/nuscenes/nuscenes.py).
MAX_TIME_DIFF_S = 1.5

SCENE_CACHE = 2  # built scenes a reader keeps (a build worker needs one at a time: its check, then its stages)


def validate_pose(rotation: object, translation: object, path: str | Path, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Check a [w, x, y, z] rotation (finite, unit within 1e-3) and a translation (3 finite values).

    Returns them as float64 arrays; raises InvalidPoseError naming ``path`` and ``what`` (e.g. the record token).
    """
    try:
        q = np.asarray(rotation, dtype=np.float64)
        t = np.asarray(translation, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidPoseError(path, f"{what}: rotation/translation are not numbers ({exc})") from None
    if q.shape != (4,):
        raise InvalidPoseError(path, f"{what}: rotation must have 4 values [w, x, y, z], got shape {q.shape}")
    try:
        check_unit_quaternion(q, atol=1e-3)
    except GeometryError as exc:
        raise InvalidPoseError(path, f"{what}: rotation {q.tolist()} is invalid: {exc}") from None
    if t.shape != (3,):
        raise InvalidPoseError(path, f"{what}: translation must have 3 values, got shape {t.shape}")
    if not np.all(np.isfinite(t)):
        raise InvalidPoseError(path, f"{what}: translation {t.tolist()} is not finite")
    return q, t


def valid_poses(rotation: np.ndarray, translation: np.ndarray) -> np.ndarray:
    """[N] bool, vectorised ``validate_pose``: rotation ([N, 4]) finite and of unit norm within 1e-3, translation
    ([N, 3]) finite."""
    rotation = np.asarray(rotation, dtype=np.float64)
    translation = np.asarray(translation, dtype=np.float64)
    finite_q = np.all(np.isfinite(rotation), axis=1)
    unit_q = np.abs(np.linalg.norm(np.where(finite_q[:, None], rotation, 0.0), axis=1) - 1.0) <= 1e-3
    return np.asarray(finite_q & unit_q & np.all(np.isfinite(translation), axis=1))


def validate_pose_table(rotation: np.ndarray, translation: np.ndarray, path: str | Path, keys: np.ndarray) -> None:
    """Vectorised check of [N, 4] rotations and [N, 3] translations; the error names the first bad row's key."""
    rotation = np.asarray(rotation, dtype=np.float64)
    translation = np.asarray(translation, dtype=np.float64)
    bad = np.flatnonzero(~valid_poses(rotation, translation))
    if bad.size:
        i = int(bad[0])
        validate_pose(rotation[i], translation[i], path, f"row {i} ({keys[i]})")
        raise InvalidPoseError(path, f"row {i} ({keys[i]}): invalid pose")  # not reached: validate_pose raised


def neighbour_velocity(
    position: np.ndarray,
    time_s: np.ndarray,
    prev_idx: np.ndarray,
    next_idx: np.ndarray,
    max_time_diff_s: float = MAX_TIME_DIFF_S,
) -> np.ndarray:
    """Velocities [N, 3] of annotations from their track neighbours, vectorised.

    Same rule as nuscenes-devkit ``NuScenes.box_velocity`` (python-sdk/nuscenes/nuscenes.py): the centred
    difference (next - prev) when both neighbours exist, else the one-sided difference to the one that exists;
    NaN when the annotation has no neighbour or when the time span exceeds ``max_time_diff_s`` (doubled for the
    centred difference). ``prev_idx`` / ``next_idx`` index into ``position`` / ``time_s``, -1 where none.
    A non-positive time span (duplicated timestamps) gives NaN where the devkit would divide by zero.
    """
    position = np.asarray(position, dtype=np.float64).reshape(-1, 3)
    time_s = np.asarray(time_s, dtype=np.float64).reshape(-1)
    prev_idx = np.asarray(prev_idx, dtype=np.int64)
    next_idx = np.asarray(next_idx, dtype=np.int64)
    own = np.arange(position.shape[0])
    has_prev, has_next = prev_idx >= 0, next_idx >= 0
    first = np.where(has_prev, prev_idx, own)
    last = np.where(has_next, next_idx, own)
    time_diff = time_s[last] - time_s[first]
    limit = np.where(has_prev & has_next, 2.0 * max_time_diff_s, max_time_diff_s)
    ok = (has_prev | has_next) & (time_diff <= limit) & (time_diff > 0)
    velocity = np.full(position.shape, np.nan)
    velocity[ok] = (position[last[ok]] - position[first[ok]]) / time_diff[ok, None]
    return velocity
