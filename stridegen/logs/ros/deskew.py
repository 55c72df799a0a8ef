"""De-skew of a ROS sweep with per-point times: each point moved into the sensor frame of the sweep's header stamp,
with the sensor pose interpolated at the point's own time from the recording's pose stream.

A point seen at ``stamp + t`` is ``T_sensor(stamp)^-1 T_sensor(stamp + t) p`` with
``T_sensor(t) = T_global_from_ego(t) T_ego_from_sensor`` and ``T_global_from_ego`` the pose chain's product
(``tf.ChainPoses``: static links and dynamic ones, each a ``poses.PoseTrack``). Between two pose stamps
``t0 < t1`` a track's pose is ``R0 Exp(a log(R0^T R1))``, ``p0 + a (p1 - p0)`` (``a`` the time fraction; the
pose table's slerp, ``PoseTrack.segment_motion``), so over one segment every point turns about one fixed axis
``k`` by the angle ``a theta``, linear in its time.

The work is arranged so that no per-point matrix is built and nothing runs per point in Python. Points are held
as rows ``[x; y; z; 1; a]`` (float64, [5, N]); every rigid part of the chain is folded into one 3x5 affine map,
applied with one matrix product where a per-point rotation needs the coordinates. A track's rotation is applied
in its axis frame ``Q`` (rows ``e1, e2, k``: ``Exp(a theta k) = Q^T Rz(a theta) Q``), where it is a 2-D rotation
of two rows by per-point ``cos`` and ``sin``; those are evaluated by their Taylor series in Horner form, with as
many terms as the largest angle of the sweep needs for double precision (NumPy's ``sin`` / ``cos`` beyond 1 rad).
A sweep that spans several pose segments is handled segment by segment (its points grouped by segment).
"""

from __future__ import annotations

import math

import numpy as np

from stridegen.core.errors import InvalidPoseError
from stridegen.core.transforms import invert_transform
from stridegen.logs.ros.poses import PoseTrack
from stridegen.logs.ros.tf import ChainPoses

# The Taylor series of sin and cos are summed to the first term below this (relative to the result: double
# precision's unit roundoff 2^-53 ~ 1.1e-16, halved). Beyond MAX_SERIES_ANGLE rad NumPy's sin / cos are used.
SERIES_TOLERANCE = 2.0**-54
MAX_SERIES_ANGLE = 1.0


def deskew(
    points: np.ndarray,
    times_s: np.ndarray,
    stamp_ns: int,
    T_ego_from_sensor: np.ndarray,
    poses: ChainPoses,
    extrapolate_ns: int,
    out: np.ndarray | None = None,
    T_global_from_ego: np.ndarray | None = None,
) -> np.ndarray:
    """Points [N, C] (x, y, z first; sensor frame, each seen at ``stamp_ns + times_s`` s) moved into the sensor frame
    at ``stamp_ns`` (module docstring), as float32 [N, C] (the other columns copied). ``out``: the array to write
    into (may be ``points`` itself), else a new one. ``T_global_from_ego``: the ego pose at ``stamp_ns`` when the
    caller has it (``poses.T_global_from_ego(stamp_ns)``). The pose stream must reach the sweep's first and last
    point times, extended by at most ``max(extrapolate_ns, the sweep's reach)`` (InvalidPoseError otherwise)."""
    if out is None:
        out = np.array(points, dtype=np.float32, copy=True)
    elif out is not points:
        out[...] = points
    n = int(out.shape[0])
    if n == 0:
        return out
    # Point times as integer ns relative to the stamp, held exactly in float64 (|t| < 2^53 ns).
    rel_ns = np.rint(np.asarray(times_s, dtype=np.float64) * 1e9)
    lo_rel, hi_rel = int(rel_ns.min()), int(rel_ns.max())
    lo_ns, hi_ns = stamp_ns + lo_rel, stamp_ns + hi_rel
    reach = max(abs(lo_rel), abs(hi_rel), extrapolate_ns)
    # The sweep's first and last point times checked against the pose range, and its reference pose.
    for part in poses.parts:
        if isinstance(part, PoseTrack):
            _check_range(part, lo_ns, hi_ns, reach)
    if T_global_from_ego is None:
        T_global_from_ego = poses.T_global_from_ego(np.array([stamp_ns], dtype=np.int64), reach)[0]
    T_ref = np.asarray(T_global_from_ego, dtype=np.float64) @ T_ego_from_sensor

    rows = np.empty((5, n))  # x, y, z, 1, a (the time fraction of the pending track; module docstring)
    for c in range(3):
        rows[c] = points[:, c]
    rows[3] = 1.0
    G = np.zeros((3, 5))  # pending affine map of the rows: T_ego_from_sensor first
    G[:, :4] = np.asarray(T_ego_from_sensor, dtype=np.float64)[:3, :4]
    for part in reversed(poses.parts):  # T_global_from_sensor = parts[0] ... parts[-1] T_ego_from_sensor
        if isinstance(part, PoseTrack):
            G = _apply_track(part, rows, G, rel_ns, stamp_ns, lo_ns, hi_ns)
        else:
            G = _then(np.asarray(part, dtype=np.float64), G)
    G = _then(invert_transform(T_ref), G)
    moved = G @ rows if np.any(G[:, 4]) else G[:, :4] @ rows[:4]
    for c in range(3):
        out[:, c] = moved[c]
    return out


def _check_range(track: PoseTrack, lo_ns: int, hi_ns: int, reach: int) -> None:
    """InvalidPoseError (``PoseTrack.T_global_from_ego``'s) when the track does not reach [lo, hi] within
    ``reach``."""
    stamps = track.timestamp_ns
    inside = stamps.size > 0 and int(stamps[0]) <= lo_ns and hi_ns <= int(stamps[-1])
    near = stamps.size > 1 and int(stamps[0]) - reach <= lo_ns and hi_ns <= int(stamps[-1]) + reach
    if not (inside or near):
        track.T_global_from_ego(np.array([lo_ns, hi_ns], dtype=np.int64), reach)  # raises, naming the stamp


def _then(T: np.ndarray, G: np.ndarray) -> np.ndarray:
    """The affine map ``T`` (4x4) applied after ``G`` (3x5 on rows x, y, z, 1, a)."""
    out = T[:3, :3] @ G
    out[:, 3] += T[:3, 3]
    return out


def _apply_track(
    track: PoseTrack, rows: np.ndarray, G: np.ndarray, rel_ns: np.ndarray, stamp_ns: int, lo_ns: int, hi_ns: int
) -> np.ndarray:
    """One dynamic link of the chain applied to the rows after their pending map ``G``; returns the new pending
    map. The rows are rewritten where the link turns the points (its rotation needs their coordinates)."""
    stamps = track.timestamp_ns
    if stamps.size < 2:
        raise InvalidPoseError(track.source, f"{stamps.size} ego pose(s): a moving sweep needs two")
    first, last = (int(s) for s in track.segments(np.array([lo_ns, hi_ns], dtype=np.int64))[0])
    if first == last:
        frac = _fraction(rel_ns, stamp_ns, stamps, first)
        return _segment(track, first, rows, G, frac)
    # Several segments: the points grouped by segment (PoseTrack.segments: the last stamp <= the point's time).
    inner = (stamps[first + 1 : last + 1] - stamp_ns).astype(np.float64)  # exact: |value| < 2^53
    segment = np.searchsorted(inner, rel_ns, side="right")
    order = np.argsort(segment, kind="stable")
    bounds = np.searchsorted(segment[order], np.arange(last - first + 2))
    moved = np.empty((3, rows.shape[1]))
    for k in range(last - first + 1):
        index = order[bounds[k] : bounds[k + 1]]
        if index.size == 0:
            continue
        part = rows[:, index]
        frac = _fraction(rel_ns[index], stamp_ns, stamps, first + k)
        H = _segment(track, first + k, part, G, frac)
        moved[:, index] = H @ part
    rows[:3] = moved
    G = np.zeros((3, 5))
    G[:, :3] = np.eye(3)
    return G


def _fraction(rel_ns: np.ndarray, stamp_ns: int, stamps: np.ndarray, lo: int) -> np.ndarray:
    """Time fraction of each point in segment ``lo``: ``(t - t_lo) / (t_hi - t_lo)``, as ``PoseTrack.segments``
    (integer ns differences, exact in float64, divided once)."""
    offset = float(stamp_ns - int(stamps[lo]))
    return (rel_ns + offset) / float(int(stamps[lo + 1]) - int(stamps[lo]))


def _segment(track: PoseTrack, lo: int, rows: np.ndarray, G: np.ndarray, frac: np.ndarray) -> np.ndarray:
    """Segment ``lo`` of a track applied after ``G`` to ``rows`` (whose row 4 becomes ``frac``); returns the new
    pending map."""
    R0, p0, rotvec, dp = track.segment_motion(lo)
    theta = float(np.linalg.norm(rotvec))
    if np.any(G[:, 4]):  # a previous track's a-term is pending: apply it before this track's fraction replaces it
        rows[:3] = G @ rows
        G = np.zeros((3, 5))
        G[:, :3] = np.eye(3)
    if theta < 1e-15:  # no rotation over the segment: a translation along dp, linear in a
        out = R0 @ G
        out[:, 3] += p0
        out[:, 4] = dp
        rows[4] = frac
        return out
    Q = _axis_frame(rotvec / theta)
    rows[:3] = (Q @ G[:, :4]) @ rows[:4]
    cos, sin = sin_cos(frac * theta, theta * max(abs(float(frac.min())), abs(float(frac.max()))))
    x, y = rows[0], rows[1]
    rx = x * cos
    rx -= y * sin
    y *= cos
    y += x * sin
    rows[0] = rx
    rows[4] = frac
    out = np.zeros((3, 5))
    out[:, :3] = R0 @ Q.T
    out[:, 3] = p0
    out[:, 4] = dp
    return out


def _axis_frame(k: np.ndarray) -> np.ndarray:
    """A rotation Q (rows e1, e2, k) taking the unit axis ``k`` to +z, right-handed (e1 x e2 = k)."""
    helper = np.zeros(3)
    helper[int(np.argmin(np.abs(k)))] = 1.0  # the coordinate axis least aligned with k
    e1 = np.cross(k, helper)
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(k, e1)
    return np.stack([e1, e2, k])


def sin_cos(x: np.ndarray, bound: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(cos x, sin x)`` of a float64 array: the Taylor series (Horner form) to double precision when every
    ``|x| <= bound <= MAX_SERIES_ANGLE`` (``bound`` computed when not given), else NumPy's. The series are
    alternating with decreasing terms there, so the first omitted term bounds the error (relative to sin x / x and
    to cos x >= cos 1)."""
    if bound is None:
        bound = float(np.max(np.abs(x))) if x.size else 0.0
    if bound > MAX_SERIES_ANGLE:
        return np.cos(x), np.sin(x)
    terms = 1
    while bound ** (2 * terms) / math.factorial(2 * terms) > SERIES_TOLERANCE:
        terms += 1
    x2 = x * x
    # sin x = x sum_j (-1)^j x^2j / (2j + 1)!, cos x = sum_j (-1)^j x^2j / (2j)!, j < terms.
    sin = np.full_like(x, (-1) ** (terms - 1) / math.factorial(2 * terms - 1))
    cos = np.full_like(x, (-1) ** (terms - 1) / math.factorial(2 * terms - 2))
    for j in range(terms - 2, -1, -1):
        sin *= x2
        sin += (-1) ** j / math.factorial(2 * j + 1)
        cos *= x2
        cos += (-1) ** j / math.factorial(2 * j)
    sin *= x
    return cos, sin
