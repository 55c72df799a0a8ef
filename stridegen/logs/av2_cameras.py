"""The cameras of an Argoverse 2 log: the rig's camera names, matching images to frames by time (each camera's
period, the nearest image within half of it), the radial distortion model and undistorting an image, and
``AV2Camera`` (a camera's calibration, distortion and image timestamps). Module docstring of ``stridegen.logs.av2``:
why released AV2 images are not undistorted by default."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from stridegen.core.errors import LogFormatError
from stridegen.formats.images import decode_image, encode_jpeg
from stridegen.logs.base import SensorCalibration

# Camera names of the AV2 sensor rig (av2-api src/av2/datasets/sensor/constants.py RingCameras, StereoCameras).
RING_CAMERAS = (
    "ring_front_center",
    "ring_front_left",
    "ring_front_right",
    "ring_rear_left",
    "ring_rear_right",
    "ring_side_left",
    "ring_side_right",
)
STEREO_CAMERAS = ("stereo_front_left", "stereo_front_right")
AV2_CAMERAS = RING_CAMERAS + STEREO_CAMERAS
# Ring and stereo cameras run at 20 Hz (av2-api sensor_dataloader.py CAM_FPS); used when a camera has < 2 images.
NOMINAL_CAMERA_PERIOD_NS = 50_000_000
IMAGE_SUFFIX = ".jpg"
UNDISTORTED_JPEG_QUALITY = 95


def camera_period_ns(timestamp_ns: np.ndarray) -> int:
    """A camera's period: the median interval of its sorted image timestamps (robust to a few dropped images);
    ``NOMINAL_CAMERA_PERIOD_NS`` (20 Hz) when it has fewer than two images."""
    ts = np.asarray(timestamp_ns, dtype=np.int64)
    if ts.size < 2:
        return NOMINAL_CAMERA_PERIOD_NS
    return max(int(np.median(np.diff(ts))), 1)


def match_nearest(frame_ns: np.ndarray, image_ns: np.ndarray, period_ns: int) -> np.ndarray:
    """For each frame time, the index of the nearest image time, or -1 when none is within half the period.

    ``image_ns`` must be sorted. "Within" is inclusive (``2 * |dt| <= period_ns``, exact in integers); of two images
    equally near, the earlier one wins.
    """
    frames = np.asarray(frame_ns, dtype=np.int64).reshape(-1)
    images = np.asarray(image_ns, dtype=np.int64).reshape(-1)
    out = np.full(frames.shape, -1, dtype=np.int64)
    if images.size == 0:
        return out
    after = np.searchsorted(images, frames, side="left")  # images[after - 1] < frame <= images[after]
    lo = np.clip(after - 1, 0, images.size - 1)
    hi = np.clip(after, 0, images.size - 1)
    d_lo = np.abs(frames - images[lo])
    d_hi = np.abs(images[hi] - frames)
    best = np.where(d_hi < d_lo, hi, lo)
    ok = 2 * np.minimum(d_lo, d_hi) <= period_ns
    out[ok] = best[ok]
    return out


def image_timestamps(folder: Path) -> np.ndarray:
    """Sorted timestamps (ns) of the ``<timestamp_ns>.jpg`` images of one camera folder; other files are ignored."""
    stamps: list[int] = []
    for path in folder.iterdir():
        if path.suffix != IMAGE_SUFFIX:
            continue
        if not path.stem.isdigit():
            raise LogFormatError(path, "AV2 camera image name is not <timestamp_ns>.jpg")
        stamps.append(int(path.stem))
    return np.array(sorted(stamps), dtype=np.int64)


def opencv_distortion(k: np.ndarray) -> np.ndarray:
    """AV2 radial ``(k1, k2, k3)`` as OpenCV's coefficient vector ``(k1, k2, p1, p2, k3)``: no tangential terms
    (argoverse-api issue 81: p1 = p2 = 0)."""
    k1, k2, k3 = (float(v) for v in np.asarray(k, dtype=np.float64).reshape(3))
    return np.array([k1, k2, 0.0, 0.0, k3], dtype=np.float64)


def undistort_image(image: np.ndarray, intrinsic: np.ndarray, k: np.ndarray) -> np.ndarray:
    """The pinhole image (same ``K``, same size) of an image with AV2 radial distortion ``k = (k1, k2, k3)``.

    ``cv2.undistort``: for each output pixel, the distorted position of its ray is sampled bilinearly; pixels whose
    source falls outside the image are black. Returns the input unchanged when every ``k`` is zero.
    """
    if not np.any(np.asarray(k, dtype=np.float64)):
        return image
    return undistort_model(image, intrinsic, "plumb_bob", opencv_distortion(k))


# Distortion models of sensor_msgs/CameraInfo (sensor_msgs/distortion_models.hpp) -> coefficient count OpenCV takes.
DISTORTION_MODELS = {"plumb_bob": 5, "rational_polynomial": 8, "equidistant": 4}


def undistort_model(image: np.ndarray, intrinsic: np.ndarray, model: str, coefficients: np.ndarray) -> np.ndarray:
    """The pinhole image onto the same ``K`` and size of an image with lens distortion ``coefficients`` of
    ``model`` (the one undistortion of the log readers: AV2's radial model is ``plumb_bob`` with p1 = p2 = 0).

    ``plumb_bob`` (k1, k2, p1, p2, k3) and ``rational_polynomial`` (k1, k2, p1, p2, k3, k4, k5, k6): OpenCV's
    pinhole model, ``cv2.undistort``; ``equidistant`` (k1..k4): OpenCV's fisheye model,
    ``cv2.fisheye.undistortImage``. Each output pixel samples the distorted position of its ray bilinearly; pixels
    whose source falls outside the image are black. The input is returned unchanged when every coefficient is 0.
    """
    import cv2

    d = np.asarray(coefficients, dtype=np.float64).reshape(-1)
    if model not in DISTORTION_MODELS:
        raise ValueError(f"unknown distortion model {model!r}: one of {sorted(DISTORTION_MODELS)}")
    if not np.any(d):
        return image
    K = np.asarray(intrinsic, dtype=np.float64)
    if model == "equidistant":
        return cv2.fisheye.undistortImage(image, K, d[:4].reshape(4, 1), Knew=K)
    return cv2.undistort(image, K, d[: DISTORTION_MODELS[model]], None, K)


def undistort_jpeg(data: bytes, intrinsic: np.ndarray, k: np.ndarray, path: str | Path) -> bytes:
    """Camera bytes undistorted (``undistort_image``) and re-encoded as JPEG of quality
    ``UNDISTORTED_JPEG_QUALITY``; the same bytes object when every ``k`` is zero."""
    if not np.any(np.asarray(k, dtype=np.float64)):
        return data
    rgb = undistort_image(decode_image(data, path), intrinsic, k)
    return encode_jpeg(rgb, UNDISTORTED_JPEG_QUALITY).tobytes()


@dataclass(frozen=True)
class AV2Camera:
    """One camera of a log: its calibration, radial distortion and image timestamps."""

    name: str
    calibration: SensorCalibration
    distortion: np.ndarray  # [3] k1, k2, k3
    folder: Path
    timestamp_ns: np.ndarray  # [I] sorted
    period_ns: int

    @property
    def distorted(self) -> bool:
        return bool(np.any(self.distortion != 0.0))

    def image_path(self, timestamp_ns: int) -> Path:
        return self.folder / f"{int(timestamp_ns)}{IMAGE_SUFFIX}"
