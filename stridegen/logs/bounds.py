"""Plausibility bounds of a driving log's values (issue 33): the limits past which a value is impossible (an error:
the scene is not built) or unlikely (a warning), shared by the readers (``coordinate_problem``: a position no place
on Earth has) and the log check (stridegen.logs.check.bounds: every bound, per scene). docs/check.md holds the
same table. Frames: positions in the log's global frame (metres), velocities in m/s, times in microseconds.

Sources of the bounds:

- Coordinates: an Earth-fixed frame holds no coordinate beyond ~1e7 m: the WGS-84 semi-major axis is 6,378,137 m
  (ECEF), UTM northings stay below 10,000,000 m (the southern hemisphere's false northing), local ENU frames are
  smaller still. 1e8 m leaves a factor of 10.
- Speeds: the fastest production car reached 490.48 km/h = 136.2 m/s (Bugatti Chiron Super Sport 300+, 2019): a
  road vehicle at 150 m/s does not exist. 70 m/s = 252 km/h is above every posted limit (the highest, 140-160 km/h)
  and the unrestricted Autobahn's traffic; pedestrians: the fastest human sprint peaked at 12.4 m/s (U. Bolt, 2009).
- Accelerations: tyre-road friction (mu ~1 on dry asphalt) bounds a car's braking and cornering to ~10 m/s^2 (1 g;
  J. Y. Wong, Theory of Ground Vehicles, ch. 3); 15 m/s^2 is beyond it (a crash, or pose jumps); 100 m/s^2 (~10 g,
  crash pulses) is not driving at all. Taken over frames at least ``SPAN_S`` apart, so that pose noise of a few
  centimetres (0.2 m/s^2 at 0.5 s) cannot reach either bound.
- Box sizes, per class: the mean sizes are nuScenes' per-class statistics, the train set's means that
  mmdetection3d's nuScenes configs use as anchor sizes (configs/pointpillars/pointpillars_hv_secfpn_sbn-all_8xb4-2x_
  nus-3d.py, configs/ssn/ssn_hv_secfpn_sbn-all_16xb2-2x_nus-3d.py; length, width, height). Legal vehicle limits:
  EU Directive 96/53/EC Annex I (width 2.55 m, height 4 m, length 12 m rigid / 18.75 m road train), US 23 CFR
  658.15 (width 2.6 m), the EU's modular combinations 25.25 m, bi-articulated buses ~25 m, double-deckers up to
  ~4.95 m; Australian road trains up to 53.5 m (NHVR) are the longest road vehicles. The tallest person measured
  was 2.72 m (R. Wadlow).
- Timestamps: microseconds since 1970 (nuScenes); a time after 2100-01-01 is a unit mistake (ns read as us), a
  negative one a sign or overflow mistake.
- Intrinsics: a driving camera's horizontal field of view lies between ~10 degrees (long-range telephoto) and ~120
  (undistorted wide angle); a pinhole focal length above 100 x the image width (FoV < 0.6 degrees) or a principal
  point more than an image size outside the image is no camera.
- Sensor offsets: sensors sit on the vehicle: within ~10 m of the ego origin (the longest rigid vehicles are 12-15
  m); 50 m is no mounting.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_COORDINATE_M = 1e8  # error: |x|, |y| or |z| of any position in the global frame
UNLIKELY_BOX_DISTANCE_M = 1000.0  # warning: a box this far from the ego of its frame (LiDARs reach 200-300 m)
MAX_SPEED_MPS = 150.0  # error: ego or box speed
UNLIKELY_SPEED_MPS = 70.0  # warning
UNLIKELY_PEDESTRIAN_SPEED_MPS = 12.5  # warning
MAX_ACCEL_MPS2 = 100.0  # error: ego acceleration
UNLIKELY_ACCEL_MPS2 = 15.0  # warning
SPAN_S = 0.5  # speeds and accelerations are taken over frames at least this far apart
MAX_TIMESTAMP_US = 4_102_444_800 * 10**6  # 2100-01-01T00:00:00Z
# Frames of a driving log come at 2-20 Hz (50-500 ms apart); a median spacing outside 1 ms .. 10 s is a unit mistake
# (stridegen.logs.check.scene: timestamp_unit).
MIN_FRAME_SPACING_US = 1e3
MAX_FRAME_SPACING_US = 10e6
MAX_FOCAL_PER_WIDTH = 100.0  # error: fx / width (horizontal FoV below 0.6 degrees)
UNLIKELY_FOV_DEG = (10.0, 150.0)  # warning outside
MAX_SENSOR_OFFSET_M = 50.0  # error: |T_ego_from_sensor translation|
UNLIKELY_SENSOR_OFFSET_M = 10.0  # warning
MIN_BOX_SIDE_M = 0.05  # warning: a side shorter than 5 cm


@dataclass(frozen=True)
class SizeBounds:
    """Box sizes of a class: ``mean`` (length, width, height) from nuScenes, the largest plausible ``unlikely``
    (a warning above) and the largest possible ``impossible`` (an error above), metres."""

    mean: tuple[float, float, float]
    unlikely: tuple[float, float, float]
    impossible: tuple[float, float, float]


_ROAD_VEHICLE_MAX = (60.0, 10.0, 10.0)  # longer than a road train, wider or taller than any oversize load
_SMALL_MAX = (5.0, 3.0, 3.0)  # two-wheelers
# Per nuScenes detection class; ``mean`` from the nuScenes statistics (module docstring), limits from the legal
# limits with room for annotation slack: boxes drawn around the mirrors make real trucks and buses up to 3.3 and 3.9 m
# wide (the AV2 logs of the shared test data), hence 4.5 m.
BOX_SIZES: dict[str, SizeBounds] = {
    "car": SizeBounds((4.61, 1.95, 1.72), (10.0, 3.5, 4.0), _ROAD_VEHICLE_MAX),
    "truck": SizeBounds((6.74, 2.46, 2.73), (25.5, 4.5, 5.0), _ROAD_VEHICLE_MAX),
    "bus": SizeBounds((11.19, 2.94, 3.47), (25.5, 4.5, 5.0), _ROAD_VEHICLE_MAX),
    "trailer": SizeBounds((12.01, 2.87, 3.82), (20.0, 4.5, 5.0), _ROAD_VEHICLE_MAX),
    "construction_vehicle": SizeBounds((6.38, 2.73, 3.13), (25.0, 6.0, 7.0), _ROAD_VEHICLE_MAX),
    "motorcycle": SizeBounds((2.10, 0.76, 1.44), (3.5, 1.5, 2.2), _SMALL_MAX),
    "bicycle": SizeBounds((1.68, 0.60, 1.27), (3.0, 1.5, 2.5), _SMALL_MAX),
    "pedestrian": SizeBounds((0.73, 0.66, 1.76), (2.5, 2.5, 2.3), (5.0, 5.0, 3.0)),
    "traffic_cone": SizeBounds((0.40, 0.40, 1.06), (1.5, 1.5, 1.5), (5.0, 5.0, 5.0)),
    "barrier": SizeBounds((0.49, 2.49, 0.98), (30.0, 30.0, 3.0), (100.0, 100.0, 10.0)),
}
# Any other class (a plugin's labels, static objects): only what no object on a road is.
OTHER_SIZE_MAX = (100.0, 100.0, 30.0)


def coordinate_problem(position: object) -> str | None:
    """Why a position (x, y, z in metres, global frame) is no place on Earth (``MAX_COORDINATE_M``), or None."""
    p = np.asarray(position, dtype=np.float64).reshape(-1)
    if p.size and np.all(np.isfinite(p)) and np.max(np.abs(p)) > MAX_COORDINATE_M:
        return f"translation {p.tolist()} is beyond {MAX_COORDINATE_M:g} m: no place on or near the Earth"
    return None


def coordinates_ok(positions: np.ndarray) -> np.ndarray:
    """[N] bool, vectorised ``coordinate_problem``: every finite coordinate within ``MAX_COORDINATE_M``."""
    p = np.asarray(positions, dtype=np.float64)
    return np.asarray(~np.any(np.isfinite(p) & (np.abs(p) > MAX_COORDINATE_M), axis=-1))


def size_limits(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """([N, 3] unlikely, [N, 3] impossible) size limits (length, width, height) per box label; unknown labels get
    ``OTHER_SIZE_MAX`` for both (no warning)."""
    unlikely = np.array([BOX_SIZES[str(x)].unlikely if str(x) in BOX_SIZES else OTHER_SIZE_MAX for x in labels])
    impossible = np.array([BOX_SIZES[str(x)].impossible if str(x) in BOX_SIZES else OTHER_SIZE_MAX for x in labels])
    return unlikely.reshape(-1, 3), impossible.reshape(-1, 3)


def span_rates(position: np.ndarray, time_s: np.ndarray, span_s: float = SPAN_S) -> tuple[np.ndarray, np.ndarray]:
    """(speeds [M], accelerations [K]) of a track (positions [N, 3], strictly increasing times [N] s) from finite
    differences over the nearest later frame at least ``span_s`` later: speed |p_j - p_i| / (t_j - t_i), then the
    acceleration |v_j - v_i| / (t_j - t_i) of those velocities (at their mid times) the same way."""
    position = np.asarray(position, dtype=np.float64).reshape(-1, 3)
    time_s = np.asarray(time_s, dtype=np.float64).reshape(-1)
    velocity, mid = _span_diff(position, time_s, span_s)
    if len(velocity) < 2:
        return np.linalg.norm(velocity, axis=1), np.zeros(0)
    accel, _ = _span_diff(velocity, mid, span_s)
    return np.linalg.norm(velocity, axis=1), np.linalg.norm(accel, axis=1)


def _span_diff(values: np.ndarray, time_s: np.ndarray, span_s: float) -> tuple[np.ndarray, np.ndarray]:
    """(d values / dt over the nearest later sample >= span_s later [M, D], mid times [M])."""
    later = np.searchsorted(time_s, time_s + span_s - 1e-6, side="left")  # 1 us: times that round below the span
    ok = later < len(time_s)
    i, j = np.flatnonzero(ok), later[ok]
    dt = time_s[j] - time_s[i]
    good = dt > 0
    i, j, dt = i[good], j[good], dt[good]
    return (values[j] - values[i]) / dt[:, None], 0.5 * (time_s[i] + time_s[j])
