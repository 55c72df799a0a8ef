"""``sensor_msgs/CameraInfo`` -> a camera's intrinsics and lens model, and undistorting its images with the one
implementation the log readers share (``stridegen.logs.av2_cameras.undistort_model``: onto the same ``K``, same
size, as the AV2 reader's ``undistort``).

Models (sensor_msgs/distortion_models.hpp): ``plumb_bob``, ``rational_polynomial``, ``equidistant``; an empty model
with all-zero D is a pinhole camera. Any other model, or a K that is not a pinhole matrix, is refused.

A CameraInfo that changes during a recording (a recalibration, a resolution switch). The recording's index keeps
every CameraInfo message whose content differs from the topic's previous one (``recording.Recording._build``). A
scene's camera model is the CameraInfo in force at its first sweep (the last change stamped at or before it, else
the topic's first message), and must stay in force up to its last sweep: a change inside the scene beyond
``K_TOLERANCE_PX`` / ``D_TOLERANCE`` (or of the image size or lens model) fails the scene with
``CameraInfoChangedError``, since a scene has one calibration per camera (docs/ros.md, "CameraInfo that changes").
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from stridegen.core.errors import LogFormatError
from stridegen.formats.images import decode_image
from stridegen.logs.av2_cameras import DISTORTION_MODELS, UNDISTORTED_JPEG_QUALITY, undistort_model

if TYPE_CHECKING:
    from stridegen.logs.ros.recording import Recording

# Two CameraInfo messages hold the same calibration when their size and model are equal, their K entries differ by
# at most 0.01 px (a republished calibration converted through float32 differs by ~1e-4 px at f = 2000 px) and
# their distortion coefficients by at most 1e-6 (dimensionless; a radial term of 1e-6 moves a corner pixel of a
# 1600 px image by far less than 0.01 px).
K_TOLERANCE_PX = 0.01
D_TOLERANCE = 1e-6


class CameraInfoChangedError(LogFormatError):
    """A camera's CameraInfo changes inside a scene."""


@dataclass(frozen=True)
class CameraModel:
    """Intrinsics of one camera topic: K [3, 3] of the image of ``width`` x ``height`` and its distortion."""

    K: np.ndarray
    width: int
    height: int
    model: str
    D: np.ndarray

    @cached_property
    def distorted(self) -> bool:
        """Whether any distortion coefficient is non-zero (asked for every image: computed once)."""
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


def calibration_change(a: CameraModel, b: CameraModel) -> str | None:
    """What differs between two camera models beyond the tolerances (``K_TOLERANCE_PX``, ``D_TOLERANCE``), in
    words; None when they are the same calibration."""
    if (a.width, a.height) != (b.width, b.height):
        return f"image size {a.width}x{a.height} -> {b.width}x{b.height}"
    if a.model != b.model:
        return f"distortion model {a.model} -> {b.model}"
    dK = np.abs(a.K - b.K)
    if dK.max() > K_TOLERANCE_PX:
        names = {(0, 0): "fx", (1, 1): "fy", (0, 2): "cx", (1, 2): "cy", (0, 1): "skew"}
        parts = [f"{n} {a.K[ij]:.4f} -> {b.K[ij]:.4f} px" for ij, n in names.items() if dK[ij] > K_TOLERANCE_PX]
        return ", ".join(parts)
    dD = np.abs(a.D - b.D)
    if dD.max(initial=0.0) > D_TOLERANCE:
        k = int(np.argmax(dD))
        return f"D[{k}] {a.D[k]:.6g} -> {b.D[k]:.6g}"
    return None


def camera_info_messages(rec: Recording, info_topic: str) -> list[tuple[int, Any]]:
    """(header stamp ns, message) of every CameraInfo the index kept for a topic (its first message and each
    change), in stamp order."""
    return sorted(rec.blobs(info_topic), key=lambda row: row[0])


def scene_camera_model(rec: Recording, info_topic: str, image_topic: str, start_ns: int, stop_ns: int) -> CameraModel:
    """The model of ``image_topic`` for the scene whose sweeps span ``start_ns`` .. ``stop_ns`` (module
    docstring); CameraInfoChangedError when its CameraInfo changes in between, naming the stamp and the change.
    Only the messages in force in the scene are read (an unusable one elsewhere fails its own scenes)."""
    messages = camera_info_messages(rec, info_topic)
    if not messages:
        raise LogFormatError(rec.path, f"CameraInfo topic {info_topic} of {image_topic} has no message")
    first = max((k for k, (stamp, _m) in enumerate(messages) if stamp <= start_ns), default=0)
    stamp, msg = messages[first]
    model = camera_model(msg, f"{rec.path} {info_topic} at {stamp} ns")
    for stamp, msg in messages[first + 1 :]:
        if stamp > stop_ns:
            break
        change = calibration_change(model, camera_model(msg, f"{rec.path} {info_topic} at {stamp} ns"))
        if change is not None:
            raise CameraInfoChangedError(
                rec.path,
                f"{info_topic} (camera {image_topic}) changes at {stamp} ns, inside the scene from {start_ns} to "
                f"{stop_ns} ns: {change}; a scene has one calibration per camera (scenes before and after the "
                "change build with their own)",
            )
    return model
