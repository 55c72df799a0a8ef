"""A log served with new ego poses (``PosedReader``): what ``stridegen calibrate poses`` writes out through
``write_native_log`` once LiDAR odometry has estimated each scene's trajectory."""

from __future__ import annotations

import dataclasses

import numpy as np

from stridegen.calibration.poses import interpolate_poses
from stridegen.core.transforms import invert_transform
from stridegen.logs.base import Annotations, Frame, LogReader, Scene, SensorSample


class PosedReader(LogReader):
    """``reader``'s log with new ego poses: ``poses[scene token]`` = (times [F] s, T_global_from_ego [F, 4, 4]).

    Frame poses are the new poses at the frame times, sample poses the new trajectory interpolated at each
    sample's time; boxes move with the ego of their frame (``T_new @ T_old^-1``), velocities rotate with it.
    Sensor data and everything else comes from ``reader`` unchanged.
    """

    def __init__(self, reader: LogReader, poses: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
        self.root = reader.root
        self.format_name = reader.format_name
        self.source = reader
        self.poses = poses
        self._origin: dict[int, Frame] = {}
        self._scenes: list[Scene] | None = None

    def scenes(self) -> list[Scene]:
        if self._scenes is None:
            self._scenes = [self._scene(s) for s in self.source.scenes() if s.token in self.poses]
        return self._scenes

    def _scene(self, scene: Scene) -> Scene:
        times, new = self.poses[scene.token]
        out = dataclasses.replace(scene, reader=self, frames=[])

        def at(timestamp_us: int) -> np.ndarray:
            return interpolate_poses(times, new, np.array([timestamp_us * 1e-6]))[0]

        for frame in scene.frames:
            sensors = {
                c: dataclasses.replace(s, T_global_from_ego=at(s.timestamp_us)) for c, s in frame.sensors.items()
            }
            sweeps = {
                c: [dataclasses.replace(s, T_global_from_ego=at(s.timestamp_us)) for s in lst]
                for c, lst in frame.sweeps.items()
            }
            copy = dataclasses.replace(
                frame, reader=self, T_global_from_ego=at(frame.timestamp_us), sensors=sensors, sweeps=sweeps
            )
            self._origin[id(copy)] = frame
            out.frames.append(copy)
        return out

    def load_points(self, sample: SensorSample) -> np.ndarray:
        return self.source.load_points(sample)

    def load_bytes(self, sample: SensorSample) -> bytes:
        return self.source.load_bytes(sample)

    def load_annotations(self, frame: Frame) -> Annotations:
        original = self._origin[id(frame)]
        ann = original.annotations()
        if not len(ann):
            return ann
        move = frame.T_global_from_ego @ invert_transform(original.T_global_from_ego)
        boxes = ann.boxes.transform(move, "global")  # moves the full rotation (ROTATION_GLOBAL) too, where kept
        return dataclasses.replace(ann, boxes=boxes)
