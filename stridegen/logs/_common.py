"""Helpers shared by the log readers: pose validation, the annotation velocity rule, how many built scenes a reader
keeps."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import numpy as np

from stridegen.core.errors import GeometryError, InvalidPoseError, LogFormatError
from stridegen.core.transforms import check_unit_quaternion
from stridegen.logs.bounds import coordinate_problem, coordinates_ok

if TYPE_CHECKING:
    from stridegen.logs.base import LogReader, Scene

# nuscenes-devkit ``NuScenes.box_velocity`` default (python-sdk/nuscenes/nuscenes.py).
MAX_TIME_DIFF_S = 1.5

SCENE_CACHE = 2  # built scenes a reader keeps (a build worker needs one at a time: its check, then its stages)


def validate_pose(rotation: object, translation: object, path: str | Path, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Check a [w, x, y, z] rotation (finite, unit within 1e-3) and a translation (3 finite values, none beyond
    ``bounds.MAX_COORDINATE_M``: no place on Earth).

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
    problem = coordinate_problem(t)
    if problem:
        raise InvalidPoseError(path, f"{what}: {problem}")
    return q, t


def valid_poses(rotation: np.ndarray, translation: np.ndarray) -> np.ndarray:
    """[N] bool, vectorised ``validate_pose``: rotation ([N, 4]) finite and of unit norm within 1e-3, translation
    ([N, 3]) finite and within ``bounds.MAX_COORDINATE_M``."""
    rotation = np.asarray(rotation, dtype=np.float64)
    translation = np.asarray(translation, dtype=np.float64)
    finite_q = np.all(np.isfinite(rotation), axis=1)
    unit_q = np.abs(np.linalg.norm(np.where(finite_q[:, None], rotation, 0.0), axis=1) - 1.0) <= 1e-3
    return np.asarray(finite_q & unit_q & np.all(np.isfinite(translation), axis=1) & coordinates_ok(translation))


def track_neighbours(track_id: np.ndarray, time_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(prev_idx, next_idx) [N] of annotations: the same track's annotation just before / after each in time (-1
    where none), the ``prev`` / ``next`` links of a nuScenes ``sample_annotation`` for ``neighbour_velocity``."""
    track = np.asarray(track_id).astype(str)
    time_s = np.asarray(time_s, dtype=np.float64)
    order = np.lexsort((time_s, track))  # by track, then time
    prev_idx = np.full(track.size, -1, dtype=np.int64)
    next_idx = np.full(track.size, -1, dtype=np.int64)
    if order.size > 1:
        same = track[order[1:]] == track[order[:-1]]
        prev_idx[order[1:][same]] = order[:-1][same]
        next_idx[order[:-1][same]] = order[1:][same]
    return prev_idx, next_idx


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


# ---------------------------------------------------------------------------------------------- files of a log
# A log's sensor files are named relative to its root. A name that leaves the root (an absolute path, '..' parts
# climbing above it) would make a build read another log's data; it is refused unless this variable is "1". Symbolic
# links inside the root are followed (a samples/ folder linked to another disk is a common, deliberate layout): the
# rule is about the names the log's records hold.
FILES_OUTSIDE_ENV = "STRIDEGEN_LOG_FILES_OUTSIDE"


class FileOutsideLogError(LogFormatError):
    """A record names a file outside the log's root folder."""


def log_file(root: Path, name: str, table: str | Path, what: str) -> Path:
    """The file a record of ``table`` names as ``name``, relative to the log ``root``.

    FileOutsideLogError naming ``table`` and ``what`` (the record) when ``name`` is absolute or its ``..`` parts
    climb out of ``root`` (a lexical test: no file-system access, so it costs nothing per sample), unless
    ``STRIDEGEN_LOG_FILES_OUTSIDE=1``. Backslashes count as separators (a name written on Windows).
    """
    text = str(name)
    parts = PurePosixPath(text.replace("\\", "/"))
    if os.environ.get(FILES_OUTSIDE_ENV) == "1":
        return root / text
    depth = 0
    escapes = parts.is_absolute()
    for part in parts.parts:
        if part == "..":
            depth -= 1
            escapes = escapes or depth < 0
        elif part not in (".", "/"):
            depth += 1
    if escapes:
        raise FileOutsideLogError(
            table,
            f"{what}: file {text!r} is outside the log folder {root} (an absolute path or '..' leaving it); files "
            f"must lie inside the log (set {FILES_OUTSIDE_ENV}=1 to allow it)",
        )
    return root / parts


def require_utf8_path(path: Path) -> None:
    """LogFormatError when ``path`` holds bytes that are not UTF-8 (a folder name from another system's encoding):
    paths are written into manifests, shards and reports as UTF-8 text. The message shows the bytes escaped."""
    shown = shown_path(path)
    if shown != str(path):
        raise LogFormatError(
            shown, "the path holds bytes that are not UTF-8 (e.g. a Latin-1 folder name); rename the folder"
        ) from None


def shown_path(path: str | Path) -> str:
    """``path`` as text that any UTF-8 stream can print: bytes that are not UTF-8 escaped (``\\xff``)."""
    text = str(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(text).decode("utf-8", "backslashreplace")
    return text


def require_finite_points(
    points: np.ndarray, path: str | Path, error: type[LogFormatError] = LogFormatError
) -> np.ndarray:
    """``points`` [N, C] when every x, y, z is finite; a LogFormatError naming ``path`` and the first bad point
    otherwise (of class ``error``). Every reader refuses NaN / inf coordinates rather than dropping them: a sweep
    with holes would give other masks and mask qualities without a word (issue 33). A converter from a driver that
    writes NaN for "no return" (an organized ROS cloud) drops those points when it writes the log."""
    xyz = points[:, :3]
    # Fast path, one reduction and no [N, 3] mask: a sum of IEEE floats is finite only if every term is (a NaN or an
    # infinity propagates: inf + finite = inf, inf - inf = NaN). A sum that overflows although every term is finite
    # (|x| near the float's maximum) is found finite by the exact test below.
    with np.errstate(over="ignore", invalid="ignore"):  # no RuntimeWarning for the overflow or inf - inf
        total = np.add.reduce(xyz, axis=None)
    if np.isfinite(total):
        return points
    finite = np.isfinite(xyz).all(axis=1)
    if not finite.all():
        bad = np.flatnonzero(~finite)
        raise error(
            path,
            f"{bad.size} of {len(points)} points have an x, y or z that is not finite (point {int(bad[0])}: "
            f"{xyz[bad[0]].tolist()}); drop no-return points when converting",
        )
    return points


def scenes_named(reader: LogReader, scenes: Sequence[str] | None) -> list[Scene]:
    """The scenes of ``reader`` named (by name or token) in ``scenes``, in the log's order; all of them for None.
    LogFormatError naming the log root for a name that is no scene of it."""
    chosen = reader.scenes()
    if scenes is None:
        return chosen
    wanted = set(scenes)
    chosen = [s for s in chosen if s.name in wanted or s.token in wanted]
    missing = wanted - {s.name for s in chosen} - {s.token for s in chosen}
    if missing:
        raise LogFormatError(reader.root, f"no scenes {sorted(missing)} in the log")
    return chosen
