"""A log served with new ego poses (``PosedReader``): what ``stridegen calibrate poses`` writes out through
``write_native_log`` once LiDAR odometry has estimated each scene's trajectory."""

from __future__ import annotations

import dataclasses

import numpy as np

from stridegen.calibration.poses import interpolate_poses
from stridegen.core.cache import LruCache
from stridegen.core.transforms import invert_transform
from stridegen.logs._common import SCENE_CACHE, neighbour_velocity, track_neighbours
from stridegen.logs.base import Annotations, Frame, LogReader, Scene, SensorSample


class PosedReader(LogReader):
    """``reader``'s log with new ego poses: ``poses[scene token]`` = (times [F] s, T_global_from_ego [F, 4, 4]).

    Frame poses are the new poses at the frame times, sample poses the new trajectory interpolated at each
    sample's time; boxes move with the ego of their frame (``T_new @ T_old^-1``). Their velocities are taken anew in
    the new global frame, as nuScenes defines an annotation's velocity: the finite difference of the box's global
    positions over its track's neighbouring annotations (nuscenes-devkit ``NuScenes.box_velocity``,
    ``_common.neighbour_velocity``). Rotating the old velocities would keep the motion relative to the old ego: a log
    without poses has boxes in the ego's frame, and their velocities relative to it (issue 33). Sensor data and
    everything else comes from ``reader`` unchanged.
    """

    def __init__(self, reader: LogReader, poses: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
        self.root = reader.root
        self.format_name = reader.format_name
        self.source = reader
        self.poses = poses
        self._origin: dict[int, Frame] = {}
        self._scenes: list[Scene] | None = None
        self._annotations: LruCache[str, list[Annotations]] = LruCache(SCENE_CACHE)

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
        per_frame = self._annotations.get(frame.scene_token, lambda: self._scene_annotations(frame.scene_token))
        ann = per_frame[frame.index]
        return ann.select(np.ones(len(ann), dtype=bool))  # a copy: callers may change arrays in place

    def _scene_annotations(self, token: str) -> list[Annotations]:
        """Every frame's boxes of the scene ``token`` moved to the new poses, with velocities from the moved
        positions (class docstring)."""
        [scene] = [s for s in self.scenes() if s.token == token]
        per_frame = [self._moved(f) for f in scene.frames]
        if not any(len(a) for a in per_frame):
            return per_frame
        time_s = np.concatenate(
            [np.full(len(a), f.timestamp_us * 1e-6) for f, a in zip(scene.frames, per_frame, strict=True)]
        )
        track = np.concatenate([np.asarray(a.boxes.track_id).astype(str) for a in per_frame])
        centre = np.concatenate([a.boxes.center for a in per_frame])
        velocity = neighbour_velocity(centre, time_s, *track_neighbours(track, time_s))
        velocity[track == ""] = np.nan  # no instance: no neighbours to difference with
        start = 0
        for a in per_frame:
            a.boxes.velocity = velocity[start : start + len(a)]
            start += len(a)
        return per_frame

    def _moved(self, frame: Frame) -> Annotations:
        original = self._origin[id(frame)]
        ann = original.annotations()
        if not len(ann):
            return ann
        move = frame.T_global_from_ego @ invert_transform(original.T_global_from_ego)
        boxes = ann.boxes.transform(move, "global")  # moves the full rotation (ROTATION_GLOBAL) too, where kept
        return dataclasses.replace(ann, boxes=boxes)
