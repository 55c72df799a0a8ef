"""Test oracle: the ROS de-skew as it was at caac907 (stridegen/logs/ros/deskew.py before issue 34's rewrite into
fewer passes), kept verbatim below this note so that tests can hold the current implementation to its results. Not
imported by the package."""

from __future__ import annotations

import math
import threading

import numpy as np

from stridegen.core.errors import InvalidPoseError
from stridegen.logs.ros.poses import PoseTrack
from stridegen.logs.ros.tf import ChainPoses

# The Taylor series of sin and cos are summed to the first term below this (relative to the result: double
# precision's unit roundoff 2^-53 ~ 1.1e-16, halved). Beyond MAX_SERIES_ANGLE rad NumPy's sin / cos are used.
SERIES_TOLERANCE = 2.0**-54
MAX_SERIES_ANGLE = 1.0
BLOCK = 65536  # points per block (workspace: 13 float64 rows of this, 6.8 MB at most per thread)
_ROWS, _MOVED, _REL, _COS, _SIN, _TMP, _TMP2 = slice(0, 5), slice(5, 8), 8, 9, 10, 11, 12
_scratch = threading.local()
# The series' coefficients, computed once as the loops computed them ((-1)^j / (2j+1)!, (-1)^j / (2j)!; k! for
# the term bound): up to 1 rad, 2^-54 needs 11 terms.
_SIN_COEF = [(-1) ** j / math.factorial(2 * j + 1) for j in range(24)]
_COS_COEF = [(-1) ** j / math.factorial(2 * j) for j in range(24)]
_FACTORIAL = [float(math.factorial(k)) for k in range(48)]  # float / int divides by the int as a float
REPEAT_RATIO = 4  # the repeated-time path when a block has at most 1/REPEAT_RATIO as many distinct times as points
_PROBE = 4096  # points looked at before a full test for repeats (module docstring)


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
    point times, extended by at most ``max(extrapolate_ns, the sweep's reach)`` (InvalidPoseError otherwise);
    ValueError when a point time is not finite."""
    if out is None:
        out = np.array(points, dtype=np.float32, copy=True)
    elif out is not points:
        out[...] = points
    n = int(out.shape[0])
    if n == 0:
        return out
    times = np.asarray(times_s)
    # Point times as integer ns relative to the stamp, held exactly in float64 (|t| < 2^53 ns): rint(t 1e9),
    # monotone in t, so its extremes are those of t's.
    lo, hi = np.float64(times.min()), np.float64(times.max())
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError("per-point times are not all finite")
    lo_rel, hi_rel = int(np.rint(lo * 1e9)), int(np.rint(hi * 1e9))
    lo_ns, hi_ns = stamp_ns + lo_rel, stamp_ns + hi_rel
    reach = max(abs(lo_rel), abs(hi_rel), extrapolate_ns)
    # The sweep's first and last point times checked against the pose range, and its reference pose.
    for part in poses.parts:
        if isinstance(part, PoseTrack):
            _check_range(part, lo_ns, hi_ns, reach)
    if T_global_from_ego is None:
        T_global_from_ego = poses.T_global_from_ego(np.array([stamp_ns], dtype=np.int64), reach)[0]
    T_ref = np.asarray(T_global_from_ego, dtype=np.float64) @ T_ego_from_sensor
    T_to_sensor = np.eye(4)  # T_sensor_from_global at the stamp
    T_to_sensor[:3, :3] = T_ref[:3, :3].T
    T_to_sensor[:3, 3] = -(T_ref[:3, :3].T @ T_ref[:3, 3])
    for start in range(0, n, BLOCK):
        block = slice(start, min(start + BLOCK, n))
        ends = (float(lo_rel), float(hi_rel))
        _deskew_block(points[block], times[block], out[block], stamp_ns, ends, T_ego_from_sensor, poses, T_to_sensor)
    return out


def _workspace(n: int) -> np.ndarray:
    """[13, n] float64 rows of this thread's workspace (module docstring)."""
    buf = getattr(_scratch, "buf", None)
    if buf is None or buf.shape[1] < n:
        buf = np.empty((13, max(n, 1024)))
        buf[3] = 1.0  # the rows' constant 1 (never written again)
        _scratch.buf = buf
    return buf[:, :n]


def _deskew_block(
    points: np.ndarray,
    times: np.ndarray,
    out: np.ndarray,
    stamp_ns: int,
    bounds: tuple[float, float],
    T_ego_from_sensor: np.ndarray,
    poses: ChainPoses,
    T_sensor_from_global: np.ndarray,
) -> None:
    """One block of a sweep (``deskew``); ``bounds``: the sweep's least and greatest point time (ns from the
    stamp)."""
    ws = _workspace(points.shape[0])
    rows = ws[_ROWS]  # x, y, z, 1, a (the time fraction of the pending track; module docstring)
    for c in range(3):
        rows[c] = points[:, c]
    repeats = _Repeats.of(times)
    if repeats is None:
        rel_ns = ws[_REL]
        np.multiply(times, 1e9, out=rel_ns, dtype=np.float64)
        np.rint(rel_ns, out=rel_ns)
    else:  # per distinct time (same operations as the per-point path's)
        repeats.rel_ns = np.multiply(repeats.values, 1e9, dtype=np.float64)
        np.rint(repeats.rel_ns, out=repeats.rel_ns)
    G = np.zeros((3, 5))  # pending affine map of the rows: T_ego_from_sensor first
    G[:, :4] = np.asarray(T_ego_from_sensor, dtype=np.float64)[:3, :4]
    for part in reversed(poses.parts):  # T_global_from_sensor = parts[0] ... parts[-1] T_ego_from_sensor
        if isinstance(part, PoseTrack):
            G = _apply_track(part, ws, G, stamp_ns, bounds, repeats)
        else:
            G = _then(np.asarray(part, dtype=np.float64), G)
    G = _then(T_sensor_from_global, G)
    moved = ws[_MOVED]
    if G[0, 4] != 0.0 or G[1, 4] != 0.0 or G[2, 4] != 0.0:
        np.matmul(G, rows, out=moved)
    else:
        np.matmul(G[:, :4], rows[:4], out=moved)
    for c in range(3):
        out[:, c] = moved[c]


class _Repeats:
    """A block's point times as ``values`` (one per run or per column) and the spread back to the points:
    ``counts`` (the length of each run of equal consecutive times) or ``width`` (``times[i] == values[i mod
    width]``: rows repeating). ``rel_ns``: the values as integer ns from the stamp (set by the caller)."""

    __slots__ = ("counts", "rel_ns", "values", "width")

    def __init__(self, values: np.ndarray, counts: np.ndarray | None, width: int) -> None:
        self.values, self.counts, self.width = values, counts, width
        self.rel_ns = values

    @classmethod
    def of(cls, times: np.ndarray) -> _Repeats | None:
        """The repeats of ``times`` when there are at most ``1 / REPEAT_RATIO`` as many distinct values, else
        None (module docstring: the prefix ``_PROBE`` is tested first)."""
        n = times.shape[0]
        if n < 2 * REPEAT_RATIO:
            return None
        probe = times[: min(n, _PROBE)]
        if np.count_nonzero(probe[1:] != probe[:-1]) * REPEAT_RATIO < probe.shape[0]:  # runs of equal times
            change = times[1:] != times[:-1]
            runs = np.count_nonzero(change) + 1
            if runs * REPEAT_RATIO > n:
                return None
            starts = np.empty(runs + 1, dtype=np.intp)
            starts[0], starts[-1] = 0, n
            np.add(np.flatnonzero(change), 1, out=starts[1:-1])
            return cls(times[starts[:-1]], np.diff(starts), 0)
        again = np.flatnonzero(probe[1:] == probe[0])  # rows: the first time comes back after one row
        if again.size == 0:
            return None
        width = int(again[0]) + 1
        if (
            width * REPEAT_RATIO > n
            or n % width
            or not np.array_equal(times.reshape(-1, width), np.broadcast_to(times[:width], (n // width, width)))
        ):
            return None
        return cls(times[:width], None, width)

    def spread(self, values: np.ndarray, out: np.ndarray) -> None:
        """``out[i]`` = ``values`` at point ``i``'s distinct time."""
        if self.counts is not None:  # np.repeat: several times faster than a take of a per-point index
            out[...] = np.repeat(values, self.counts)
        else:
            np.copyto(out.reshape(-1, self.width), values)


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


def _identity_map() -> np.ndarray:
    G = np.zeros((3, 5))
    G[0, 0] = G[1, 1] = G[2, 2] = 1.0
    return G


def _apply_track(
    track: PoseTrack,
    ws: np.ndarray,
    G: np.ndarray,
    stamp_ns: int,
    bounds: tuple[float, float],
    repeats: _Repeats | None = None,
) -> np.ndarray:
    """One dynamic link of the chain applied to the workspace's rows after their pending map ``G``; returns the
    new pending map. The rows are rewritten where the link turns the points (its rotation needs their
    coordinates). ``bounds``: the least and greatest point time (ns relative to the stamp). ``repeats``: the
    block's distinct times when it has few (the workspace's times row is then not filled yet)."""
    stamps = track.timestamp_ns
    if stamps.size < 2:
        raise InvalidPoseError(track.source, f"{stamps.size} ego pose(s): a moving sweep needs two")
    rows, rel_ns = ws[_ROWS], ws[_REL]
    if G[0, 4] != 0.0 or G[1, 4] != 0.0 or G[2, 4] != 0.0:  # a previous track's a-term: applied before its
        moved = ws[_MOVED]  # fraction (row 4) is replaced by this track's
        np.matmul(G, rows, out=moved)
        rows[:3] = moved
        G = _identity_map()
    lo_rel, hi_rel = bounds
    # A point exactly at a pose stamp is taken at the end (fraction 1) of the segment that ends there, not at the
    # start of the next: a sweep stamped at its last point's time, with a pose at that stamp, stays one segment.
    ends = np.searchsorted(stamps, [stamp_ns + int(lo_rel), stamp_ns + int(hi_rel)], side="left") - 1
    first, last = (min(max(int(s), 0), stamps.size - 2) for s in ends)  # clipped (np.clip: ~10 us of set-up)
    if first == last:
        bound = _fraction_bound(bounds, stamp_ns, stamps, first)
        if repeats is not None:
            frac_u = np.empty_like(repeats.rel_ns)
            _fraction(repeats.rel_ns, stamp_ns, stamps, first, frac_u)
            return _segment(track, first, ws, G, frac_u, bound, repeats)
        frac = ws[_ROWS][4]
        _fraction(rel_ns, stamp_ns, stamps, first, frac)
        return _segment(track, first, ws, G, frac, bound)
    if repeats is not None:  # the per-point path, its times row filled first
        repeats.spread(repeats.rel_ns, rel_ns)
    # Several segments: the points grouped by segment (the last stamp < the point's time, or the first segment),
    # each group through its own segment in a workspace of its own size.
    inner = (stamps[first + 1 : last + 1] - stamp_ns).astype(np.float64)  # exact: |value| < 2^53
    segment = np.searchsorted(inner, rel_ns, side="left")
    order = np.argsort(segment, kind="stable")
    starts = np.searchsorted(segment[order], np.arange(last - first + 2))
    moved = np.empty((3, rows.shape[1]))
    for k in range(last - first + 1):
        index = order[starts[k] : starts[k + 1]]
        if index.size == 0:
            continue
        part = np.empty((13, index.size))
        part[_ROWS] = rows[:, index]  # with the constant row 3
        part[_REL] = rel_ns[index]
        frac = part[_ROWS][4]
        _fraction(part[_REL], stamp_ns, stamps, first + k, frac)
        H = _segment(track, first + k, part, G, frac, _fraction_bound(bounds, stamp_ns, stamps, first + k))
        moved[:, index] = H @ part[_ROWS]
    rows[:3] = moved
    return _identity_map()


def _fraction(rel_ns: np.ndarray, stamp_ns: int, stamps: np.ndarray, lo: int, out: np.ndarray) -> None:
    """Time fraction of each point in segment ``lo``: ``(t - t_lo) / (t_hi - t_lo)``, as ``PoseTrack.segments``
    (integer ns differences, exact in float64, divided once)."""
    np.add(rel_ns, float(stamp_ns - int(stamps[lo])), out=out)
    np.divide(out, float(int(stamps[lo + 1]) - int(stamps[lo])), out=out)


def _fraction_bound(bounds: tuple[float, float], stamp_ns: int, stamps: np.ndarray, lo: int) -> float:
    """The greatest ``|fraction|`` in segment ``lo`` of points within ``bounds`` (the fraction is linear in time)."""
    span = float(int(stamps[lo + 1]) - int(stamps[lo]))
    offset = float(stamp_ns - int(stamps[lo]))
    return max(abs((bounds[0] + offset) / span), abs((bounds[1] + offset) / span))


def _segment(
    track: PoseTrack,
    lo: int,
    ws: np.ndarray,
    G: np.ndarray,
    frac: np.ndarray,
    frac_bound: float,
    repeats: _Repeats | None = None,
) -> np.ndarray:
    """Segment ``lo`` of a track applied after ``G`` (with no a-term) to the workspace's rows, whose row 4 holds
    ``frac`` (at most ``frac_bound`` in magnitude); returns the new pending map. With ``repeats``, ``frac`` is per
    distinct time and is spread into row 4 here (and the angle terms computed per distinct time)."""
    motions = track.motions()
    R0, theta, Q = motions.R0[lo], float(motions.theta[lo]), motions.axes[lo]
    rows = ws[_ROWS]
    if repeats is not None:
        repeats.spread(frac, rows[4])
    out = np.empty((3, 5))
    out[:, 4] = motions.dp[lo]
    if theta == 0.0:  # no rotation over the segment: a translation along dp, linear in a
        out[:, :4] = R0 @ G[:, :4]
        out[:, 3] += track.table.translation[lo]
        return out
    out[:, 3] = track.table.translation[lo]
    moved = ws[_MOVED]
    np.matmul(Q @ G[:, :4], rows[:4], out=moved)  # in the axis frame: the turn is about +z
    cos, sin, tmp = ws[_COS], ws[_SIN], ws[_TMP]
    angle_bound = theta * frac_bound * (1.0 + 1e-12)
    if repeats is None:
        np.multiply(frac, theta, out=tmp)
        _sin_cos_into(tmp, angle_bound, cos, sin, ws[_TMP2])
    else:
        cos_u, sin_u = sin_cos(np.multiply(frac, theta), angle_bound)
        repeats.spread(cos_u, cos)
        repeats.spread(sin_u, sin)
    np.multiply(moved[0], cos, out=rows[0])
    np.multiply(moved[1], sin, out=tmp)
    rows[0] -= tmp
    np.multiply(moved[0], sin, out=rows[1])
    np.multiply(moved[1], cos, out=tmp)
    rows[1] += tmp
    rows[2] = moved[2]
    out[:, :3] = R0 @ Q.T
    return out


def sin_cos(x: np.ndarray, bound: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(cos x, sin x)`` of a float64 array: the Taylor series (Horner form) to double precision when every
    ``|x| <= bound <= MAX_SERIES_ANGLE`` (``bound`` computed when not given), else NumPy's. The series are
    alternating with decreasing terms there, so the first omitted term bounds the error (relative to sin x / x and
    to cos x >= cos 1)."""
    x = np.asarray(x, dtype=np.float64)
    if bound is None:
        bound = float(np.max(np.abs(x))) if x.size else 0.0
    cos, sin = np.empty_like(x), np.empty_like(x)
    _sin_cos_into(x, bound, cos, sin, np.empty_like(x))
    return cos, sin


def _sin_cos_into(x: np.ndarray, bound: float, cos: np.ndarray, sin: np.ndarray, x2: np.ndarray) -> None:
    """``sin_cos`` written into ``cos`` and ``sin`` (``x2``: scratch)."""
    if bound > MAX_SERIES_ANGLE:
        np.cos(x, out=cos)
        np.sin(x, out=sin)
        return
    terms = 1
    while bound ** (2 * terms) / _FACTORIAL[2 * terms] > SERIES_TOLERANCE:
        terms += 1
    if terms == 1:
        cos.fill(1.0)
        sin[...] = x
        return
    np.multiply(x, x, out=x2)
    # sin x = x sum_j (-1)^j x^2j / (2j + 1)!, cos x = sum_j (-1)^j x^2j / (2j)!, j < terms (Horner in x^2).
    np.multiply(x2, _SIN_COEF[terms - 1], out=sin)
    np.multiply(x2, _COS_COEF[terms - 1], out=cos)
    for j in range(terms - 2, -1, -1):
        sin += _SIN_COEF[j]
        cos += _COS_COEF[j]
        if j:
            sin *= x2
            cos *= x2
    sin *= x
