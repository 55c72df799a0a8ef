"""Ego poses of a recording: a time-sorted track of ``T_global_from_ego`` queried at each sensor's own timestamp,
with the AV2 reader's interpolation (``stridegen.logs.av2._PoseTable``: exact stamp, else slerp between the two
neighbours); and GNSS fixes turned into a local metric frame.

Outside the track a query is refused (InvalidPoseError) unless it lies within ``extrapolate_ns`` of an end: a
sweep's first points are seen before its stamp, and the pose stream may start with the sweep. There the end
segment is extended at its constant velocity (the same slerp with a fraction outside [0, 1]).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from stridegen.core.errors import InvalidPoseError
from stridegen.core.transforms import make_transform, quat_to_rotmat, rotmat_to_quat
from stridegen.logs.av2 import PoseTable, slerp

# WGS84 ellipsoid (NIMA TR8350.2, "Department of Defense World Geodetic System 1984", 3rd ed., table 3.1):
# semi-major axis a and flattening f; e^2 = f (2 - f).
WGS84_A_M = 6_378_137.0
WGS84_F = 1.0 / 298.257223563
WGS84_E2 = WGS84_F * (2.0 - WGS84_F)


class PoseTrack:
    """``T_global_from_ego`` at stamps (ns, strictly increasing after dropping duplicates: the first one wins)."""

    def __init__(self, source: Path, timestamp_ns: np.ndarray, T_global_from_ego: np.ndarray) -> None:
        ts = np.asarray(timestamp_ns, dtype=np.int64).reshape(-1)
        T = np.asarray(T_global_from_ego, dtype=np.float64).reshape(-1, 4, 4)
        order = np.argsort(ts, kind="stable")
        ts, T = ts[order], T[order]
        ts, first = np.unique(ts, return_index=True)
        T = T[first]
        self.source = source
        self.table = PoseTable(source, ts, rotmat_to_quat(T[:, :3, :3]).reshape(-1, 4), T[:, :3, 3].copy())
        self._motions: SegmentMotions | None = None

    @property
    def timestamp_ns(self) -> np.ndarray:
        return np.asarray(self.table.timestamp_ns)

    def __len__(self) -> int:
        return int(self.table.timestamp_ns.size)

    def T_global_from_ego(self, timestamp_ns: np.ndarray, extrapolate_ns: int = 0) -> np.ndarray:
        """Poses [Q, 4, 4] at the given stamps (module docstring for the rule)."""
        ts = np.asarray(timestamp_ns, dtype=np.int64).reshape(-1)
        stamps = self.table.timestamp_ns
        if stamps.size == 0:
            raise InvalidPoseError(self.source, "no ego poses")
        out = np.empty((ts.size, 4, 4))
        inside = (ts >= stamps[0]) & (ts <= stamps[-1])
        if np.any(inside):
            out[inside] = self.table.T_city_from_ego(ts[inside])
        if np.all(inside):
            return out
        outside = ~inside
        gap = np.where(ts < stamps[0], stamps[0] - ts, ts - stamps[-1])
        if stamps.size < 2 or np.any(gap[outside] > extrapolate_ns):
            bad = int(ts[np.flatnonzero(outside)[np.argmax(gap[outside])]])
            raise InvalidPoseError(
                self.source,
                f"timestamp {bad} ns is outside the pose range [{stamps[0]}, {stamps[-1]}] ns "
                f"(by more than {extrapolate_ns} ns)",
            )
        before = ts < stamps[0]
        lo = np.where(before, 0, stamps.size - 2)
        hi = lo + 1
        frac = (ts - stamps[lo]).astype(np.float64) / (stamps[hi] - stamps[lo]).astype(np.float64)
        rot = slerp(self.table.rotation[lo[outside]], self.table.rotation[hi[outside]], frac[outside])
        f = frac[outside][:, None]
        trans = (1.0 - f) * self.table.translation[lo[outside]] + f * self.table.translation[hi[outside]]
        out[outside] = make_transform(quat_to_rotmat(rot), trans)
        return out

    def segments(self, timestamp_ns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(segment index ``lo``, time fraction ``a``) of each stamp: the pose lies between stamps ``lo`` and
        ``lo + 1`` at fraction ``a`` (outside [0, 1] beyond the ends, the end segment extended)."""
        stamps = self.table.timestamp_ns
        if stamps.size < 2:
            raise InvalidPoseError(self.source, f"{stamps.size} ego pose(s): a moving sweep needs two")
        ts = np.asarray(timestamp_ns, dtype=np.int64).reshape(-1)
        lo = np.clip(np.searchsorted(stamps, ts, side="right") - 1, 0, stamps.size - 2)
        frac = (ts - stamps[lo]).astype(np.float64) / (stamps[lo + 1] - stamps[lo]).astype(np.float64)
        return lo, frac

    def segment_motion(self, lo: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(R0 [3, 3], p0 [3], rotation vector of R0^T R1 [3], p1 - p0 [3]) of segment ``lo``: the pose at
        fraction a is ``R0 Exp(a rotvec)``, ``p0 + a (p1 - p0)`` (the shortest arc, as ``slerp``)."""
        m = self.motions()
        return m.R0[lo], self.table.translation[lo], m.rotvec[lo], m.dp[lo]

    def motions(self) -> SegmentMotions:
        """Every segment's motion (``segment_motion``), computed once for the track (vectorised)."""
        if self._motions is None:
            self._motions = SegmentMotions.of(self.table.rotation, self.table.translation)
        return self._motions


@dataclass
class SegmentMotions:
    """The motion over each segment ``lo`` (between stamps ``lo`` and ``lo + 1``) of a pose track: the pose at
    fraction ``a`` is ``R0 Exp(a theta k)``, ``p0 + a dp``. ``axes``: a rotation Q per segment (rows e1, e2, k,
    right-handed) taking the unit axis k to +z, so that ``Exp(a theta k) = Q^T Rz(a theta) Q``; the identity where
    theta is 0."""

    R0: np.ndarray  # [S, 3, 3]
    rotvec: np.ndarray  # [S, 3] theta k
    theta: np.ndarray  # [S]
    dp: np.ndarray  # [S, 3]
    axes: np.ndarray  # [S, 3, 3]

    @classmethod
    def of(cls, rotation: np.ndarray, translation: np.ndarray) -> SegmentMotions:
        """From [P, 4] quaternions [w, x, y, z] and [P, 3] translations at the stamps."""
        q = np.asarray(rotation, dtype=np.float64)
        q = q / np.linalg.norm(q, axis=-1, keepdims=True)
        q0, q1 = q[:-1], q[1:]
        w0, v0, w1, v1 = q0[:, 0], q0[:, 1:], q1[:, 0], q1[:, 1:]
        w = w0 * w1 + np.einsum("ij,ij->i", v0, v1)  # conj(q0) * q1 (Hamilton product)
        v = w0[:, None] * v1 - w1[:, None] * v0 - np.cross(v0, v1)
        flip = w < 0  # shortest arc
        w = np.where(flip, -w, w)
        v = np.where(flip[:, None], -v, v)
        norm = np.linalg.norm(v, axis=-1)
        moving = norm >= 1e-15
        safe = np.where(moving, norm, 1.0)
        theta = np.where(moving, 2.0 * np.arctan2(norm, w), 0.0)
        k = np.where(moving[:, None], v / safe[:, None], np.array([0.0, 0.0, 1.0]))
        helper = np.zeros_like(k)  # the coordinate axis least aligned with k
        helper[np.arange(len(k)), np.argmin(np.abs(k), axis=-1)] = 1.0
        e1 = np.cross(k, helper)
        e1 /= np.linalg.norm(e1, axis=-1, keepdims=True)
        e2 = np.cross(k, e1)
        axes = np.where(moving[:, None, None], np.stack([e1, e2, k], axis=1), np.eye(3))
        t = np.asarray(translation, dtype=np.float64)
        return cls(quat_to_rotmat(q0), k * theta[:, None], theta, t[1:] - t[:-1], axes)


def geodetic_to_ecef(lat_deg: np.ndarray, lon_deg: np.ndarray, alt_m: np.ndarray) -> np.ndarray:
    """[N, 3] Earth-centred Earth-fixed coordinates (m) of WGS84 latitude, longitude (degrees) and ellipsoidal
    height (m). Formula: NIMA TR8350.2 eq. 4-14 (N = a / sqrt(1 - e^2 sin^2 phi))."""
    lat = np.radians(np.asarray(lat_deg, dtype=np.float64))
    lon = np.radians(np.asarray(lon_deg, dtype=np.float64))
    alt = np.asarray(alt_m, dtype=np.float64)
    n = WGS84_A_M / np.sqrt(1.0 - WGS84_E2 * np.sin(lat) ** 2)
    x = (n + alt) * np.cos(lat) * np.cos(lon)
    y = (n + alt) * np.cos(lat) * np.sin(lon)
    z = (n * (1.0 - WGS84_E2) + alt) * np.sin(lat)
    return np.stack([x, y, z], axis=-1)


def enu_from_geodetic(lat_deg: np.ndarray, lon_deg: np.ndarray, alt_m: np.ndarray) -> np.ndarray:
    """[N, 3] east, north, up (m) of each fix in the local tangent frame about the first fix (ECEF difference
    rotated by the first fix's latitude and longitude: the standard ECEF -> ENU rotation)."""
    ecef = geodetic_to_ecef(lat_deg, lon_deg, alt_m)
    lat0 = np.radians(float(np.asarray(lat_deg).reshape(-1)[0]))
    lon0 = np.radians(float(np.asarray(lon_deg).reshape(-1)[0]))
    sl, cl, so, co = np.sin(lat0), np.cos(lat0), np.sin(lon0), np.cos(lon0)
    R = np.array([[-so, co, 0.0], [-sl * co, -sl * so, cl], [cl * co, cl * so, sl]])
    return (ecef - ecef[0]) @ R.T
