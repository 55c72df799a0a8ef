"""One Scene / Frame API over every log format.

A reader indexes a log's metadata (tables, poses, calibration) when it is opened; sensor data (point clouds,
images) and annotations are read only when a frame is asked for them. Every pose is ``T_global_from_ego`` of the
moment that sensor sample was taken; every calibration is ``T_ego_from_sensor``.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from stridegen.core.boxes import Boxes
from stridegen.core.errors import LogFormatError, MissingFileError, UnknownChannelError
from stridegen.core.transforms import transform_points
from stridegen.formats.images import decode_image
from stridegen.logs._common import require_utf8_path

if TYPE_CHECKING:
    from stridegen.logs.check.findings import Finding

# The sensor modalities the pipeline knows (nuScenes ``sensor.modality`` values). A sensor of any other modality is
# neither a camera nor a LiDAR for the build: its images and points are never used (``stridegen check`` flags it).
KNOWN_MODALITIES = ("camera", "lidar", "radar")


@dataclass(frozen=True)
class SensorCalibration:
    """Extrinsics (and, for cameras, intrinsics) of one sensor.

    ``T_ego_from_sensor`` maps sensor-frame points into the ego frame. Camera frames are x right, y down,
    z forward; ``intrinsic`` is the 3x3 pinhole matrix of an undistorted image of ``width`` x ``height``.
    """

    channel: str
    modality: str  # "camera" | "lidar" | "radar"
    T_ego_from_sensor: np.ndarray
    intrinsic: np.ndarray | None = None
    width: int | None = None
    height: int | None = None
    # Where a range sensor's rays start, in its sensor frame: the frame's origin unless the reader says otherwise
    # (AV2 gives its two LiDARs' merged sweep in the ego frame: the LiDARs' mean position); None: unknown.
    ray_origin_m: np.ndarray | None = field(default_factory=lambda: np.zeros(3))

    @property
    def is_camera(self) -> bool:
        return self.modality == "camera"


@dataclass(frozen=True)
class SensorSample:
    """One sensor reading (nuScenes ``sample_data``): a camera image or a LiDAR sweep."""

    token: str
    channel: str
    timestamp_us: int
    path: Path
    T_global_from_ego: np.ndarray
    calibration: SensorCalibration
    is_key_frame: bool = True

    @property
    def T_global_from_sensor(self) -> np.ndarray:
        return self.T_global_from_ego @ self.calibration.T_ego_from_sensor

    @property
    def ray_origin_global(self) -> np.ndarray | None:
        """[3] where a range sensor's rays start, in the global frame (None when the reader does not know)."""
        origin = self.calibration.ray_origin_m
        if origin is None:
            return None
        return transform_points(self.T_global_from_sensor, np.asarray(origin, dtype=np.float64).reshape(1, 3))[0]


@dataclass
class Annotations:
    """Ground-truth boxes of one frame in the global frame, with their per-box metadata.

    ``boxes.track_id`` is the instance id (stable over the scene); ``boxes.label`` the nuScenes detection class
    ("" for categories outside the 10 detection classes); ``category`` the full category name.
    """

    boxes: Boxes
    category: np.ndarray
    token: np.ndarray
    num_lidar_pts: np.ndarray
    num_radar_pts: np.ndarray
    visibility: np.ndarray  # nuScenes visibility bin 1..4 (0-40, 40-60, 60-80, 80-100 %), 0 where unknown
    attribute: np.ndarray  # first attribute name, "" where none

    def __len__(self) -> int:
        return len(self.boxes)

    def select(self, mask: np.ndarray) -> Annotations:
        idx = np.flatnonzero(mask)
        return Annotations(
            self.boxes[idx],
            self.category[idx],
            self.token[idx],
            self.num_lidar_pts[idx],
            self.num_radar_pts[idx],
            self.visibility[idx],
            self.attribute[idx],
        )


_ANNOTATION_ARRAYS = ("category", "token", "num_lidar_pts", "num_radar_pts", "visibility", "attribute")
_BOX_ARRAYS = ("center", "size_lwh", "yaw", "velocity", "label", "score", "track_id")


def read_only(annotations: Annotations) -> Annotations:
    """``annotations`` with every array (its boxes' and their extras' included) made read-only, in place; a
    plugin reader's list becomes an array first."""
    boxes = annotations.boxes
    for owner, names in ((annotations, _ANNOTATION_ARRAYS), (boxes, _BOX_ARRAYS)):
        for name in names:
            setattr(owner, name, np.asarray(getattr(owner, name)))
            getattr(owner, name).setflags(write=False)
    for key, values in boxes.extras.items():
        boxes.extras[key] = np.asarray(values)
        boxes.extras[key].setflags(write=False)
    return annotations


@dataclass(eq=False)
class Frame:
    """One annotated moment of a scene (a nuScenes ``sample``; an AV2 annotation timestamp)."""

    reader: LogReader = field(repr=False)
    token: str
    scene_token: str
    index: int
    timestamp_us: int
    T_global_from_ego: np.ndarray  # ego pose of the reference (LiDAR) sample of this frame
    sensors: dict[str, SensorSample]
    sweeps: dict[str, list[SensorSample]] = field(default_factory=dict)  # earlier non-key sweeps, newest first
    _annotations: Annotations | None = field(default=None, init=False, repr=False)

    @property
    def timestamp_s(self) -> float:
        return self.timestamp_us * 1e-6

    @property
    def camera_channels(self) -> list[str]:
        return [c for c, s in self.sensors.items() if s.calibration.is_camera]

    @property
    def lidar_channels(self) -> list[str]:
        return [c for c, s in self.sensors.items() if s.calibration.modality == "lidar"]

    def sensor(self, channel: str) -> SensorSample:
        try:
            return self.sensors[channel]
        except KeyError:
            raise UnknownChannelError(
                self.reader.root, f"frame {self.token} has no channel {channel!r}; it has {sorted(self.sensors)}"
            ) from None

    def image_bytes(self, channel: str) -> bytes:
        """The camera file's bytes, unchanged (JPEG for nuScenes)."""
        sample = self.sensor(channel)
        if not sample.calibration.is_camera:
            raise UnknownChannelError(sample.path, f"channel {channel!r} is not a camera")
        return self.reader.load_bytes(sample)

    def image(self, channel: str) -> np.ndarray:
        """Decoded RGB image [H, W, 3] uint8."""
        data = self.image_bytes(channel)
        return decode_image(data, self.sensor(channel).path)

    def lidar(self, channel: str | None = None) -> np.ndarray:
        """Point cloud [N, C] float32 in the sensor frame (x, y, z, intensity, ...)."""
        channel = channel or self._default_lidar()
        return self.reader.load_points(self.sensor(channel))

    def lidar_sweeps(self, nsweeps: int, channel: str | None = None) -> list[tuple[np.ndarray, SensorSample]]:
        """The key sweep and up to ``nsweeps - 1`` earlier sweeps, newest first, each with its sample."""
        channel = channel or self._default_lidar()
        samples = [self.sensor(channel)] + self.sweeps.get(channel, [])[: max(nsweeps - 1, 0)]
        return [(self.reader.load_points(s), s) for s in samples]

    def annotations(self) -> Annotations:
        """The frame's ground truth, read once and kept with the frame (a build reads it three times: its check,
        the ground-truth table and the oracle detector). Its arrays are read-only: copy before changing them."""
        if self._annotations is None:
            self._annotations = read_only(self.reader.load_annotations(self))
        return self._annotations

    def _default_lidar(self) -> str:
        channels = self.lidar_channels
        if not channels:
            raise UnknownChannelError(self.reader.root, f"frame {self.token} has no LiDAR channel")
        return channels[0]


@dataclass(eq=False)
class Scene:
    """One continuous clip: its frames in time order."""

    reader: LogReader = field(repr=False)
    token: str
    name: str
    frames: list[Frame]
    description: str = ""
    log_name: str = ""

    def __len__(self) -> int:
        return len(self.frames)

    def __iter__(self):
        return iter(self.frames)

    @property
    def duration_s(self) -> float:
        if not self.frames:
            return 0.0
        return (self.frames[-1].timestamp_us - self.frames[0].timestamp_us) * 1e-6

    @property
    def timestamps_s(self) -> np.ndarray:
        return np.array([f.timestamp_us for f in self.frames], dtype=np.int64) * 1e-6


class LogReader(ABC):
    """A log format. Subclasses index metadata in ``__init__`` and read sensor data on demand."""

    format_name: str = ""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        if not self.root.exists():
            raise MissingFileError(self.root, "log root does not exist")
        require_utf8_path(self.root)

    @abstractmethod
    def scenes(self) -> list[Scene]:
        """All scenes of the log, in a stable order."""

    @abstractmethod
    def load_points(self, sample: SensorSample) -> np.ndarray:
        """Point cloud of a LiDAR sample in its sensor frame."""

    @abstractmethod
    def load_annotations(self, frame: Frame) -> Annotations:
        """Ground-truth boxes of a frame in the global frame."""

    def load_bytes(self, sample: SensorSample) -> bytes:
        try:
            return sample.path.read_bytes()
        except FileNotFoundError:
            raise MissingFileError(
                sample.path, f"{sample.channel} file of sample_data {sample.token} is missing"
            ) from None

    def sample_size(self, sample: SensorSample) -> int | None:
        """Bytes of a sample's data for the log check: its file's size, None where the file is missing. A reader
        whose samples are not files (ROS recordings: messages) overrides it with ``sample_head``."""
        try:
            return os.stat(sample.path).st_size
        except OSError:
            return None

    def log_findings(self) -> list[Finding]:
        """Findings about the whole log that only the reader can make (``stridegen.logs.check``: added to its
        log-wide findings; a ROS recording's topics, stamps and tf); none by default."""
        return []

    def sample_head(self, sample: SensorSample, limit: int) -> bytes:
        """The first ``limit`` bytes of a sample's data (the log check reads image headers from them)."""
        with open(sample.path, "rb") as fh:
            return fh.read(limit)

    def point_file_problem(self, sample: SensorSample, size: int) -> str | None:
        """Why a point-cloud file of ``size`` bytes cannot be a whole number of points, as this reader reads it
        (e.g. nuScenes ``.pcd.bin``: 5 float32 per point); None where it can, or where its size says nothing."""
        return None

    def scene_ids(self) -> list[tuple[str, str]]:
        """(name, token) of every scene, in ``scenes()`` order. Readers that can list scenes without building their
        frames override it, so that one broken scene does not stop the listing (the build fails that scene alone)."""
        return [(s.name, s.token) for s in self.scenes()]

    def unknown_modalities(self) -> dict[str, list[str]] | None:
        """modality -> channels of the log's sensors whose modality is not in ``KNOWN_MODALITIES``, found without
        building a scene; {} where the reader's scenes cannot hold such a sensor (it refuses them, or its rig is
        fixed). None where it cannot tell without building every scene (the default): a build then checks every
        scene before it starts, instead of each scene in its worker (``stridegen.logs.check.check_log_wide``)."""
        return None

    def metadata_path(self, table: str) -> Path | None:
        """The file a kind of metadata is read from, for messages: ``table`` is a nuScenes table name ("ego_pose",
        "sample_annotation", "calibrated_sensor", "sensor", "sample", "scene"). None where the reader has no such
        file (the default)."""
        return None

    def scene(self, name_or_token: str) -> Scene:
        for s in self.scenes():
            if name_or_token in (s.name, s.token):
                return s
        raise LogFormatError(self.root, f"no scene named {name_or_token!r}")
