"""De-skew of a ROS sweep with per-point times: each point moved into the sensor frame of the sweep's header stamp,
with the sensor pose interpolated at the point's own time from the recording's pose stream.

Frames: ``sensor(t)`` is the LiDAR at time ``t``, ``ego(t)`` the vehicle (``base_link``), ``global`` the chain's
fixed frame (``map`` / ``odom`` / the GNSS local frame). A point ``p`` seen at ``stamp + t`` in ``sensor(stamp +
t)`` is ``T_sensor(stamp)^-1 T_sensor(stamp + t) p`` in ``sensor(stamp)``, with ``T_sensor(t) = T_global_from_ego(t)
T_ego_from_sensor`` and ``T_global_from_ego`` the pose chain's product (``tf.ChainPoses``: static links and dynamic
ones, each a ``poses.PoseTrack``).

Interpolation (the pose table's own rule, ``PoseTrack`` / ``logs.av2.slerp``): between two pose stamps
``t0 < t1`` a track's pose at the time fraction ``a = (t - t0) / (t1 - t0)`` is ``R0 Exp(a theta k)``,
``p0 + a (p1 - p0)``: spherical linear interpolation of the rotation (K. Shoemake, "Animating rotation with
quaternion curves", SIGGRAPH 1985, eq. for slerp(q0, q1; a) = q0 (q0^-1 q1)^a) written as the exponential map of
the relative rotation's axis-angle ``theta k`` (``log(R0^T R1)``), and linear interpolation of the position. So over
one segment every point turns about one fixed axis ``k`` by ``a theta``, linear in its time. In the axis frame ``Q``
(rows ``e1, e2, k``: ``Exp(a theta k) = Q^T Rz(a theta) Q``, Rodrigues' formula in a basis where the axis is +z;
R. M. Murray, Z. Li, S. S. Sastry, "A Mathematical Introduction to Robotic Manipulation", 1994, eq. 2.14) the turn
is a 2-D rotation of two coordinates by the point's ``cos`` and ``sin``.

The arithmetic, for the common chain (one dynamic link, the sweep inside one of its pose segments):

    q = (Q G) [p; 1]                           one 3x4 product (G: every rigid link between the sensor and the track)
    u = cos(a theta) q_e1 - sin(a theta) q_e2  the turn (4 multiplies, 2 adds)
    v = sin(a theta) q_e1 + cos(a theta) q_e2
    p' = H [u; v; q_k; 1; a]                   one 3x5 product (H: R0 Q^T, p0, p1 - p0 and every link after the
                                               track up to T_sensor(stamp)^-1)

Every rigid part of the chain is folded into the two small matrices (the sensor -> ego -> global -> reference-sensor
chain is one map on each side of the turn), so each point costs two matrix products, the turn and its time terms.
The time terms (``a``, ``cos``, ``sin``) are evaluated once per distinct point time when the times repeat (a
spinning LiDAR fires a column of channels at one time: runs of equal consecutive times, or an organised cloud whose
rows repeat the column times) and spread to the points (one ``repeat`` of the three rows, or a broadcast copy each);
otherwise per point. ``sin`` / ``cos`` are their Taylor series in Horner form (Abramowitz & Stegun 4.3.65 / 4.3.66),
with as many terms as the sweep's largest angle needs for an error below ``SERIES_TOLERANCE``: the series alternate
with decreasing terms there, so the first omitted term bounds the error (Leibniz); NumPy's ``sin`` / ``cos`` beyond
``MAX_SERIES_ANGLE``. A point exactly at a pose stamp belongs to the segment ending there (fraction 1), so a sweep
stamped at its last point with a pose at that stamp is one segment. A sweep that spans several pose segments is
handled segment by segment (its points grouped by segment), and a chain of several dynamic links link by link.

Precision: float64 throughout; the result differs from the per-point 4x4 formula by rounding and the series' bound
(1e-13 of the distance from the turn's axis: 1e-10 m at 1 km), far below the float32 output's resolution.

Cost (benchmarks/bench_deskew.py, 20,000 points, one CPU): about 5.2 M instructions a sweep (callgrind), half
of them in the two products: OpenBLAS's kernel is built for blocks of 4-8 rows, so a 3xK product over N points
costs several times its 3KN multiply-adds, and it first zeroes its output. The rest is about 20 elementwise passes
(time terms, the turn, reading and writing the float32 columns) and some 60 small NumPy calls of set-up. Terms per
distinct time save little at a column of 20-128 points: finding the repeats and spreading three rows costs about
what the 14 per-point passes they replace cost. One compiled pass would be several times cheaper; no compiler is a
dependency of the ``ros`` extra.

Memory: points go through in blocks of ``BLOCK`` with every intermediate in a per-thread workspace reused from
sweep to sweep (fresh temporaries of this size would be new pages from the kernel, a page fault per 4 KiB).
"""

from __future__ import annotations

import math
import threading

import numpy as np

from stridegen.core.errors import InvalidPoseError
from stridegen.logs.ros.poses import PoseTrack
from stridegen.logs.ros.tf import ChainPoses

# The series of the turn's sin and cos are summed to the first term below SERIES_TOLERANCE (absolute, on values of
# magnitude <= 1: a point's position is then off by at most that fraction of its distance from the axis). Beyond
# MAX_SERIES_ANGLE rad NumPy's sin / cos are used.
SERIES_TOLERANCE = 1e-13
MAX_SERIES_ANGLE = 1.0
BLOCK = 65536  # points per block (workspace: 15 float64 rows of this, 7.9 MB at most per thread)
# Workspace rows: two banks of basis rows (three coordinates, the constant 1, the time fraction a); a link's turn
# reads one bank and writes the other. Then the block's point times (integer ns from the stamp), cos, sin, scratch.
_BANKS = (0, 5)
_ONE, _A = 3, 4  # offsets in a bank
_REL, _COS, _SIN, _T1, _T2 = 10, 11, 12, 13, 14
_WS_ROWS = 15
_scratch = threading.local()
# Series coefficients: (-1)^j / (2j+1)! and (-1)^j / (2j)!; k! for the term bound.
_SIN_COEF = [(-1) ** j / math.factorial(2 * j + 1) for j in range(24)]
_COS_COEF = [(-1) ** j / math.factorial(2 * j) for j in range(24)]
_FACTORIAL = [float(math.factorial(k)) for k in range(48)]
REPEAT_RATIO = 4  # time terms per distinct time when a block has at most 1/REPEAT_RATIO as many as points
_PROBE = 4096  # points looked at before a full test for repeats (_Repeats.of)


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
    reach = max(abs(lo_rel), abs(hi_rel), extrapolate_ns)
    for part in poses.parts:  # the sweep's first and last point times against the pose range
        if isinstance(part, PoseTrack):
            _check_range(part, stamp_ns + lo_rel, stamp_ns + hi_rel, reach)
    if T_global_from_ego is None:
        T_global_from_ego = poses.T_global_from_ego(np.array([stamp_ns], dtype=np.int64), reach)[0]
    T_ref = np.asarray(T_global_from_ego, dtype=np.float64) @ T_ego_from_sensor  # T_global_from_sensor(stamp)
    T_sensor_from_global = np.eye(4)
    T_sensor_from_global[:3, :3] = T_ref[:3, :3].T
    T_sensor_from_global[:3, 3] = -(T_ref[:3, :3].T @ T_ref[:3, 3])
    sweep = _Sweep(stamp_ns, (float(lo_rel), float(hi_rel)), np.asarray(T_ego_from_sensor, dtype=np.float64), poses)
    for start in range(0, n, BLOCK):
        block = slice(start, min(start + BLOCK, n))
        _deskew_block(points[block], times[block], out[block], sweep, T_sensor_from_global)
    return out


class _Sweep:
    """What every block of a sweep shares: the stamp, the least and greatest point time (ns from the stamp, as
    floats), ``T_ego_from_sensor`` and the pose chain."""

    __slots__ = ("T_ego_from_sensor", "bounds", "poses", "stamp_ns")

    def __init__(
        self, stamp_ns: int, bounds: tuple[float, float], T_ego_from_sensor: np.ndarray, poses: ChainPoses
    ) -> None:
        self.stamp_ns, self.bounds, self.T_ego_from_sensor, self.poses = stamp_ns, bounds, T_ego_from_sensor, poses


def _workspace(n: int) -> np.ndarray:
    """[_WS_ROWS, n] float64 rows of this thread's workspace (the constant rows of both banks set once)."""
    buf = getattr(_scratch, "buf", None)
    if buf is None or buf.shape[1] < n:
        buf = np.empty((_WS_ROWS, max(n, 1024)))
        for bank in _BANKS:
            buf[bank + _ONE] = 1.0  # never written again
        _scratch.buf = buf
    return buf[:, :n]


def _deskew_block(
    points: np.ndarray, times: np.ndarray, out: np.ndarray, sweep: _Sweep, T_sensor_from_global: np.ndarray
) -> None:
    """One block of a sweep (``deskew``): x, y, z read into bank 0 (sensor frame at each point's time), the chain
    applied from the sensor up (``_apply_track`` per dynamic link, rigid links folded into the pending map ``P``:
    3x5 on the current bank's rows), and the pending map applied once at the end (sensor frame at the stamp)."""
    ws = _workspace(points.shape[0])
    bank = _BANKS[0]
    np.copyto(ws[bank : bank + 3], points[:, :3].T)
    repeats = _Repeats.of(times)
    if repeats is None:
        rel_ns = ws[_REL]
        np.multiply(times, 1e9, out=rel_ns, dtype=np.float64)
        np.rint(rel_ns, out=rel_ns)
    else:  # per distinct time (the same operations)
        repeats.rel_ns = np.rint(np.multiply(repeats.values, 1e9, dtype=np.float64))
    P = np.zeros((3, 5))  # x, y, z, 1, a -> ego frame: T_ego_from_sensor
    P[:, :4] = sweep.T_ego_from_sensor[:3, :4]
    for part in reversed(sweep.poses.parts):  # T_global_from_sensor = parts[0] ... parts[-1] T_ego_from_sensor
        if isinstance(part, PoseTrack):
            P, bank = _apply_track(part, ws, bank, P, sweep, repeats)
        else:
            P = _then(np.asarray(part, dtype=np.float64), P)
    P = _then(T_sensor_from_global, P)
    other = _BANKS[1] if bank == _BANKS[0] else _BANKS[0]
    result = ws[other : other + 3]
    _affine(P, ws, bank, result)
    for c in range(3):
        out[:, c] = result[c]


def _then(T: np.ndarray, P: np.ndarray) -> np.ndarray:
    """The affine map ``T`` (4x4) applied after ``P`` (3x5 on a bank's rows: three coordinates, 1, a)."""
    out = T[:3, :3] @ P
    out[:, 3] += T[:3, 3]
    return out


def _reads_a(P: np.ndarray) -> bool:
    """Whether the pending map ``P`` reads the time fraction row (scalar tests: ``np.any`` costs microseconds)."""
    return bool(P[0, 4] != 0.0 or P[1, 4] != 0.0 or P[2, 4] != 0.0)


def _affine(P: np.ndarray, ws: np.ndarray, bank: int, out: np.ndarray) -> None:
    """``out`` = ``P`` (3x5, or fewer rows) applied to the rows of ``bank``; the time fraction row is left out
    of the product when ``P`` does not read it (the product's cost is linear in the rows read)."""
    if _reads_a(P):
        np.matmul(P, ws[bank : bank + 5], out=out)
    else:
        np.matmul(P[:, :4], ws[bank : bank + 4], out=out)


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
        None. A prefix of ``_PROBE`` times is tested first, so a sweep of distinct times pays a few thousand
        comparisons."""
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


def _apply_track(
    track: PoseTrack, ws: np.ndarray, bank: int, P: np.ndarray, sweep: _Sweep, repeats: _Repeats | None
) -> tuple[np.ndarray, int]:
    """One dynamic link of the chain applied after the pending map ``P`` (3x5 on the rows of ``bank``); returns
    the new pending map and the bank it reads. ``repeats``: the block's distinct times when it has few (the
    workspace's per-point times row is then not filled yet)."""
    stamps = track.timestamp_ns
    if stamps.size < 2:
        raise InvalidPoseError(track.source, f"{stamps.size} ego pose(s): a moving sweep needs two")
    lo_rel, hi_rel = sweep.bounds
    # A point exactly at a pose stamp is taken at the end (fraction 1) of the segment that ends there, not at the
    # start of the next: a sweep stamped at its last point's time, with a pose at that stamp, stays one segment.
    ends = np.searchsorted(stamps, [sweep.stamp_ns + int(lo_rel), sweep.stamp_ns + int(hi_rel)], side="left") - 1
    first, last = (min(max(int(s), 0), stamps.size - 2) for s in ends)  # clipped (np.clip: ~10 us of set-up)
    if first == last:
        return _turn(track, first, ws, bank, P, sweep, repeats)
    # Several segments: the points grouped by segment (the last stamp < the point's time, or the first segment),
    # each group through its own segment in a workspace of its own size, its result written back as coordinates.
    rel_ns = ws[_REL]
    if repeats is not None:
        repeats.spread(repeats.rel_ns, rel_ns)
    inner = (stamps[first + 1 : last + 1] - sweep.stamp_ns).astype(np.float64)  # exact: |value| < 2^53
    segment = np.searchsorted(inner, rel_ns, side="left")
    order = np.argsort(segment, kind="stable")
    starts = np.searchsorted(segment[order], np.arange(last - first + 2))
    other = _BANKS[1] if bank == _BANKS[0] else _BANKS[0]
    coords = np.empty((3, rel_ns.shape[0]))
    for k in range(last - first + 1):
        index = order[starts[k] : starts[k + 1]]
        if index.size == 0:
            continue
        part = np.empty((_WS_ROWS, index.size))
        part[_BANKS[0] : _BANKS[0] + 5] = ws[bank : bank + 5][:, index]  # with the constant row
        part[_BANKS[1] + _ONE] = 1.0
        part[_REL] = rel_ns[index]
        H, b = _turn(track, first + k, part, _BANKS[0], P, sweep, None)
        free = _BANKS[1] if b == _BANKS[0] else _BANKS[0]
        _affine(H, part, b, part[free : free + 3])
        coords[:, index] = part[free : free + 3]
    ws[other : other + 3] = coords
    return _identity_map(), other


def _identity_map() -> np.ndarray:
    P = np.zeros((3, 5))
    P[0, 0] = P[1, 1] = P[2, 2] = 1.0
    return P


def _turn(
    track: PoseTrack, lo: int, ws: np.ndarray, bank: int, P: np.ndarray, sweep: _Sweep, repeats: _Repeats | None
) -> tuple[np.ndarray, int]:
    """Segment ``lo`` of ``track`` applied after ``P`` to the rows of ``bank`` (module docstring: ``q``, ``u``,
    ``v``): the result is written to the other bank as rows ``[u, v, q_k, 1, a]`` and the pending map returned
    is ``[R0 Q^T | p0 | p1 - p0]`` on them (the track's parent frame). Without a turn (theta 0) only the time
    fraction row is written."""
    motions = track.motions()
    R0, theta, Q = motions.R0[lo], float(motions.theta[lo]), motions.axes[lo]
    p0, dp = track.table.translation[lo], motions.dp[lo]
    stamps = track.timestamp_ns
    span = float(int(stamps[lo + 1]) - int(stamps[lo]))
    offset = float(sweep.stamp_ns - int(stamps[lo]))  # a = (rel_ns + offset) / span (PoseTrack.segments)
    frac_bound = max(abs((sweep.bounds[0] + offset) / span), abs((sweep.bounds[1] + offset) / span))
    other = _BANKS[1] if bank == _BANKS[0] else _BANKS[0]
    out = np.empty((3, 5))
    out[:, 4] = dp
    if theta == 0.0:  # no turn over the segment: a translation along dp, linear in a
        if _reads_a(P):  # a previous link's a-term: applied before its fraction row is replaced by this one's
            _affine(P, ws, bank, ws[other : other + 3])
            P = _identity_map()
            bank = other
        _time_terms(ws, bank, offset, span, None, repeats)
        out[:, :4] = R0 @ P[:, :4]
        out[:, 3] += p0
        return out, bank
    rows = ws[other : other + 5]
    _affine(Q @ P, ws, bank, rows[:3])  # q: e1, e2, k (the axis frame: the turn is about +z)
    cos, sin = _time_terms(ws, other, offset, span, (theta, theta * frac_bound * (1.0 + 1e-12)), repeats)
    t1, t2 = ws[_T1], ws[_T2]
    q1, q2 = rows[0], rows[1]
    np.multiply(sin, q2, out=t1)
    np.multiply(cos, q2, out=q2)
    np.multiply(sin, q1, out=t2)
    q2 += t2  # v = sin q1 + cos q2
    q1 *= cos
    q1 -= t1  # u = cos q1 - sin q2
    out[:, :3] = R0 @ Q.T
    out[:, 3] = p0
    return out, other


def _time_terms(
    ws: np.ndarray,
    bank: int,
    offset: float,
    span: float,
    turn: tuple[float, float] | None,
    repeats: _Repeats | None,
) -> tuple[np.ndarray, np.ndarray]:
    """The time fraction ``a = (rel_ns + offset) / span`` into the bank's ``a`` row and, with ``turn`` (theta,
    the largest |a theta|), ``cos`` / ``sin`` of ``a theta``, returned as per-point rows (the workspace's, or one
    spread array): per distinct time and spread when ``repeats``, else per point (from the ``_REL`` row)."""
    a_row, cos, sin = ws[bank + _A], ws[_COS], ws[_SIN]
    if repeats is not None:
        a = np.add(repeats.rel_ns, offset)
        a /= span
        if turn is None:
            repeats.spread(a, a_row)
            return cos, sin
        terms = np.empty((3, a.shape[0]))
        terms[0] = a
        _sin_cos_into(np.multiply(a, turn[0]), turn[1], SERIES_TOLERANCE, terms[1], terms[2], np.empty_like(a))
        if repeats.counts is not None:  # one repeat of the three rows (a repeat's cost is mostly per call)
            spread = np.repeat(terms, repeats.counts, axis=1)
            a_row[...] = spread[0]
            return spread[1], spread[2]
        for row, values in zip((a_row, cos, sin), terms, strict=True):
            repeats.spread(values, row)
        return cos, sin
    np.add(ws[_REL], offset, out=a_row)
    a_row /= span
    if turn is not None:
        angle = ws[_T2]
        np.multiply(a_row, turn[0], out=angle)
        _sin_cos_into(angle, turn[1], SERIES_TOLERANCE, cos, sin, ws[_T1])
    return cos, sin


def sin_cos(x: np.ndarray, bound: float | None = None, tolerance: float = 2.0**-54) -> tuple[np.ndarray, np.ndarray]:
    """``(cos x, sin x)`` of a float64 array: the Taylor series (Horner form) summed to the first term below
    ``tolerance`` (default: half of double precision's unit roundoff, so to double precision) when every ``|x| <=
    bound <= MAX_SERIES_ANGLE`` (``bound`` computed when not given), else NumPy's. The series alternate with
    decreasing terms there, so the first omitted term bounds the error (relative to sin x / x and to cos x)."""
    x = np.asarray(x, dtype=np.float64)
    if bound is None:
        bound = float(np.max(np.abs(x))) if x.size else 0.0
    cos, sin = np.empty_like(x), np.empty_like(x)
    _sin_cos_into(x, bound, tolerance, cos, sin, np.empty_like(x))
    return cos, sin


def _sin_cos_into(
    x: np.ndarray, bound: float, tolerance: float, cos: np.ndarray, sin: np.ndarray, x2: np.ndarray
) -> None:
    """``sin_cos`` written into ``cos`` and ``sin`` (``x2``: scratch)."""
    if bound > MAX_SERIES_ANGLE:
        np.cos(x, out=cos)
        np.sin(x, out=sin)
        return
    terms = 1
    while bound ** (2 * terms) / _FACTORIAL[2 * terms] > tolerance:
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
