"""``sensor_msgs/CameraInfo`` -> a camera's intrinsics and lens model, and undistorting its images with the one
implementation the log readers share (``stridegen.logs.av2_cameras.undistort_model``: onto the same ``K``, same
size, as the AV2 reader's ``undistort``).

Models (sensor_msgs/distortion_models.hpp): ``plumb_bob``, ``rational_polynomial``, ``equidistant``; an empty model
with all-zero D is a pinhole camera. Any other model, or a K that is not a pinhole matrix, is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from stridegen.core.errors import LogFormatError
from stridegen.formats.images import decode_image
from stridegen.logs.av2_cameras import DISTORTION_MODELS, UNDISTORTED_JPEG_QUALITY, undistort_model


@dataclass(frozen=True)
class CameraModel:
    """Intrinsics of one camera topic: K [3, 3] of the image of ``width`` x ``height`` and its distortion."""

    K: np.ndarray
    width: int
    height: int
    model: str
    D: np.ndarray

    @property
    def distorted(self) -> bool:
        return bool(np.any(self.D != 0.0))


def _field(msg: Any, name: str) -> Any:
    """ROS 2 spells CameraInfo's matrices in lower case, ROS 1 in upper case."""
    return getattr(msg, name, None) if hasattr(msg, name) else getattr(msg, name.upper())


def camera_model(msg: Any, where: str) -> CameraModel:
    """The CameraModel of a CameraInfo message; LogFormatError naming ``where`` when unusable."""
    K = np.asarray(_field(msg, "k"), dtype=np.float64).reshape(3, 3)
    D = np.asarray(_field(msg, "d"), dtype=np.float64).reshape(-1)
    model = str(msg.distortion_model) or ("plumb_bob" if not np.any(D) else "")
    width, height = int(msg.width), int(msg.height)
    if model not in DISTORTION_MODELS:
        raise LogFormatError(
            where, f"distortion model {msg.distortion_model!r} is not one of {sorted(DISTORTION_MODELS)}"
        )
    if not np.all(np.isfinite(K)) or K[0, 0] <= 0 or K[1, 1] <= 0 or K[2, 2] != 1.0 or K[1, 0] or K[2, 0] or K[2, 1]:
        raise LogFormatError(where, f"K {K.tolist()} is not a pinhole matrix")
    if width <= 0 or height <= 0:
        raise LogFormatError(where, f"image size {width}x{height} is not positive")
    if not np.all(np.isfinite(D)):
        raise LogFormatError(where, f"D {D.tolist()} is not finite")
    padded = np.zeros(DISTORTION_MODELS[model])
    padded[: min(D.size, padded.size)] = D[: padded.size]
    if np.any(D[padded.size :]):
        raise LogFormatError(where, f"{model} takes {padded.size} coefficients, D has {D.size}: {D.tolist()}")
    return CameraModel(K, width, height, model, padded)


def undistort_bytes(data: bytes, camera: CameraModel, where: str) -> bytes:
    """Camera bytes undistorted onto the same K and re-encoded as JPEG of the AV2 reader's quality; the bytes
    unchanged for a pinhole camera."""
    if not camera.distorted:
        return data
    from stridegen.formats.images import encode_jpeg

    rgb = undistort_model(decode_image(data, where), camera.K, camera.model, camera.D)
    return encode_jpeg(rgb, UNDISTORTED_JPEG_QUALITY).tobytes()
