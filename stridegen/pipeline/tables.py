"""The tables a stage reads, as typed views: the columns it reads by attribute, nothing more.

The pipeline does not know the storage (``stridegen.shards.schema``); its entry points take these Protocols, and the
storage tables (``ImagesTable``, ``CamerasTable``, ``KeyframesTable``, ``RegionsTable``, ``DetectionsTable``,
``GroundTruthTable``) and the pipeline's own ``SceneRegions`` satisfy them structurally. Shapes and frames of every
column are those of the storage schema.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np


class ImageRows(Protocol):
    """Stored camera images, one row each: encoded bytes, frame and camera index, sample time (us), ego pose."""

    data: np.ndarray  # [I] variable-length uint8: the camera file's bytes (JPEG or PNG)
    frame_index: np.ndarray  # [I] int into the scene's frames
    channel_index: np.ndarray  # [I] int into the cameras (``CameraRows``)
    timestamp_us: np.ndarray  # [I] int64, the camera sample's own timestamp
    T_global_from_ego: np.ndarray  # [I, 4, 4] float64, ego pose at the camera sample's timestamp

    def __len__(self) -> int: ...


class CameraRows(Protocol):
    """Cameras, one row each: channel name, extrinsics (ego from sensor), intrinsics, image size."""

    channel: np.ndarray  # [C] str
    T_ego_from_sensor: np.ndarray  # [C, 4, 4] float64; camera frame x right, y down, z forward
    intrinsic: np.ndarray  # [C, 3, 3] float64, pixels
    width: np.ndarray  # [C] int pixels
    height: np.ndarray  # [C] int pixels


class KeyframeRows(Protocol):
    """Keyframes, one row each: the frame each keyframe is."""

    frame_index: np.ndarray  # [K] int into the scene's frames


class KeyframeWindowRows(KeyframeRows, Protocol):
    """Keyframes with their temporal windows."""

    window: np.ndarray  # [K, W] int frame index per window offset, -1 where no frame was close enough


class RegionRows(Protocol):
    """Marked regions, one row each: the keyframe image (keyframe, camera) that numbers it, its number, its track."""

    keyframe_index: np.ndarray  # [R] int into the keyframes
    channel_index: np.ndarray  # [R] int into the cameras
    region_id: np.ndarray  # [R] int, 0..n-1 within one (keyframe, camera)
    track_index: np.ndarray  # [R] int into the scene's tracks


class BoxRows(Protocol):
    """Boxes of every frame of a scene (detections or ground truth), global frame."""

    frame_index: np.ndarray  # [B] int into the scene's frames
    center_global: np.ndarray  # [B, 3] float64 metres
    size_lwh: np.ndarray  # [B, 3] float64 metres
    yaw_global: np.ndarray  # [B] float64 radians about +z
    velocity_global: np.ndarray  # [B, 3] float64 m/s (NaN where unknown)
    label: np.ndarray  # [B] str, nuScenes detection class

    def __len__(self) -> int: ...
