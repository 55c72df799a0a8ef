"""The key LiDAR sweeps of a scene as the calibration algorithms read them: ego-frame points per sweep, their
times, optionally de-skewed (``DeskewOptions``) with the motion of a previous odometry pass."""

from __future__ import annotations

import dataclasses

import numpy as np

from stridegen.calibration.deskew import azimuth_times, deskew_points
from stridegen.calibration.odometry import OdometryResult
from stridegen.core.errors import ConfigError
from stridegen.core.transforms import invert_transform, transform_points
from stridegen.logs.base import Frame, Scene

DESKEW_MODES = ("auto", "none", "times", "azimuth")
TIME_UNITS_S = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


@dataclasses.dataclass(frozen=True)
class DeskewOptions:
    """How sweeps are de-skewed. ``mode``: ``none``; ``times`` (the per-point time column ``time_column``, in
    ``time_unit``, relative to the sweep's timestamp); ``azimuth`` (times from each point's azimuth over one turn
    of ``period_s``); ``auto``: ``times`` when ``time_column`` is given, else ``none`` (a stridegen-log's clouds
    are motion-compensated by definition, docs/log-format.md)."""

    mode: str = "auto"
    time_column: int | None = None
    time_unit: str = "ns"
    period_s: float = 0.1

    def resolved(self) -> str:
        if self.mode not in DESKEW_MODES:
            raise ConfigError(f"deskew mode {self.mode!r} is not one of {list(DESKEW_MODES)}")
        if self.mode == "auto":
            return "times" if self.time_column is not None else "none"
        if self.mode == "times" and self.time_column is None:
            raise ConfigError("deskew mode 'times' needs the per-point time column (--time-column)")
        return self.mode


def lidar_channel(scene: Scene, channel: str | None) -> str:
    """The LiDAR channel to use: ``channel``, or the first LiDAR of the scene's first frame."""
    if channel:
        return channel
    for frame in scene.frames:
        if frame.lidar_channels:
            return frame.lidar_channels[0]
    raise ConfigError(f"scene {scene.name!r} has no LiDAR channel")


def scene_sweeps(
    scene: Scene, channel: str, deskew: DeskewOptions, motion: OdometryResult | None = None
) -> tuple[list[np.ndarray], np.ndarray]:
    """Key sweeps of a scene (its frames that have ``channel``: ``lidar_frames``) as ego-frame points [N_k, 3] and
    their times [F] (s). De-skew needs the motion
    over each interval: ``motion`` (a previous odometry pass: constant velocity from the previous interval) or,
    without it, no correction (the first pass)."""
    mode = deskew.resolved()
    pts: list[np.ndarray] = []
    times: list[float] = []
    for k, frame in enumerate(lidar_frames(scene, channel)):
        sample = frame.sensor(channel)
        raw = np.asarray(frame.reader.load_points(sample))
        xyz = raw[:, :3].astype(np.float64)
        if mode != "none" and motion is not None and k >= 1:
            T_prev = invert_transform(motion.T_world_from_ego[k - 1]) @ motion.T_world_from_ego[k]
            dt = sample.timestamp_us * 1e-6 - times[k - 1]
            T_es = sample.calibration.T_ego_from_sensor
            T_sensor_motion = invert_transform(T_es) @ T_prev @ T_es  # sensor at k-1 <- sensor at k
            tau = (
                raw[:, deskew.time_column].astype(np.float64) * TIME_UNITS_S[deskew.time_unit]
                if mode == "times" and deskew.time_column is not None
                else azimuth_times(xyz, deskew.period_s)
            )
            # A point seen tau (< 0) before the reference time: motion from k to then is the reverse motion.
            xyz = deskew_points(xyz, -tau, invert_transform(T_sensor_motion), dt)
        pts.append(transform_points(sample.calibration.T_ego_from_sensor, xyz))
        times.append(sample.timestamp_us * 1e-6)
    return pts, np.asarray(times)


def lidar_frames(scene: Scene, channel: str) -> list[Frame]:
    """The frames of ``scene`` that have a sample of ``channel`` (AV2 logs also have camera-only frames)."""
    return [f for f in scene.frames if channel in f.sensors]
