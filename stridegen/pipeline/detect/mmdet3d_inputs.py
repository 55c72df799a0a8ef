"""The model inputs of the ``mmdet3d`` detector: a frame's LiDAR sweeps and cameras as the arrays an mmdet3d config's
test pipeline loads, and that pipeline with its loading steps replaced by in-memory ones.

- points: the key LiDAR sweep and, when the pipeline has ``LoadPointsFromMultiSweeps`` (nuScenes configs:
  ``sweeps_num=9``, so 10 sweeps), the previous sweeps (``Frame.lidar_sweeps``), each moved into the key LiDAR
  frame with the time lag ``t_key - t_sweep`` in seconds in column 4, points within 1 m (|x| and |y|) of a sweep's
  sensor removed (``remove_close``), as mmdet3d 1.4's ``LoadPointsFromMultiSweeps`` does
  (mmdet3d/datasets/transforms/loading.py). ``sweep_transform="exact"`` moves sweep points with
  ``T_keylidar_from_sweeplidar`` (R p + t); ``"mmdet3d"`` reproduces what that transform computes from the
  ``lidar2sensor`` matrices of mmdet3d 1.x's nuScenes infos (tools/dataset_converters/update_infos_to_v2.py
  stores [R^T | -R^T t], the transform computes p R^T - (-R^T t) = R p + R^T t), which the checkpoints trained on
  those infos (BEVFusion) saw;
- images (models whose pipeline loads multi-view images, BEVFusion): the six camera images, decoded with Pillow as
  RGB by our in-memory loader (``IMAGE_TRANSFORM``, stridegen.pipeline.detect.mmdet3d_ops:
  ``mmcv.imfrombytes(..., backend="pillow")``, as the project's ``BEVLoadMultiViewImageFromFiles``), with
  ``cam2img`` (intrinsics) and ``lidar2cam`` = T_cam_from_keylidar through the global frame, each camera at its own
  timestamp (mmdet3d's ``obtain_sensor2top``).

The rest of the config's test pipeline (range filter, image resize / crop, packing) runs unchanged: loading
transforms are replaced by ``LoadPointsFromDict`` and our image loader (``inference_pipeline``). Plain numpy; no
mmdet3d import.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from stridegen.core.errors import ConfigError, LogFormatError, UnknownChannelError
from stridegen.core.transforms import invert_transform
from stridegen.logs.base import Frame, SensorSample

# The camera order of mmdet3d's nuScenes infos (tools/dataset_converters/nuscenes_converter.py ``camera_types``).
NUSCENES_CAMERAS: tuple[str, ...] = (
    "CAM_FRONT",
    "CAM_FRONT_RIGHT",
    "CAM_FRONT_LEFT",
    "CAM_BACK",
    "CAM_BACK_LEFT",
    "CAM_BACK_RIGHT",
)

# Loading transforms of mmdet3d test pipelines that the backend replaces with its in-memory inputs.
POINT_LOADERS = ("LoadPointsFromFile",)
SWEEP_LOADERS = ("LoadPointsFromMultiSweeps",)
IMAGE_LOADERS = ("BEVLoadMultiViewImageFromFiles", "LoadMultiViewImageFromFiles")
DROPPED_LOADERS = ("LoadAnnotations3D", "LoadAnnotations")
IMAGE_TRANSFORM = "StrideGenMultiViewImages"  # our loader, registered in mmdet3d's TRANSFORMS when first needed

REMOVE_CLOSE_RADIUS_M = 1.0  # LoadPointsFromMultiSweeps._remove_close default radius
TIME_COLUMN = 4  # LoadPointsFromMultiSweeps writes the time lag into column 4


class MissingSweepsError(LogFormatError):
    """The model's config reads previous LiDAR sweeps, and a frame that should have them has none."""


# ------------------------------------------------------------------------------------------------ input specs
@dataclass(frozen=True)
class PointsSpec:
    """What a config's test pipeline loads as points (``LoadPointsFromFile`` + ``LoadPointsFromMultiSweeps``)."""

    coord_type: str = "LIDAR"
    load_dim: int = 5
    use_dim: tuple[int, ...] = (0, 1, 2, 3, 4)
    sweeps_num: int = 0  # previous sweeps; 0 without LoadPointsFromMultiSweeps
    sweep_load_dim: int = 5
    sweep_use_dim: tuple[int, ...] = (0, 1, 2, 3, 4)
    remove_close: bool = False
    pad_empty_sweeps: bool = False

    @property
    def multi_sweep(self) -> bool:
        return self.sweeps_num > 0


def _dims(value: Any, load_dim: int) -> tuple[int, ...]:
    """``use_dim`` as mmdet3d reads it: an int n means the first n columns."""
    if isinstance(value, int):
        return tuple(range(value))
    return tuple(int(v) for v in value)


def points_spec(pipeline: Sequence[dict[str, Any]]) -> PointsSpec:
    """The point loading of a test pipeline (list of transform dicts), with mmdet3d 1.4's defaults."""
    file_step = next((t for t in pipeline if t.get("type") in POINT_LOADERS), None)
    if file_step is None:
        raise ConfigError("the config's test pipeline has no LoadPointsFromFile: not a LiDAR model")
    unsupported = [k for k in ("shift_height", "use_color", "norm_intensity", "norm_elongation") if file_step.get(k)]
    if unsupported:
        raise ConfigError(f"LoadPointsFromFile options {unsupported} are not supported by the mmdet3d backend")
    load_dim = int(file_step.get("load_dim", 6))
    spec: dict[str, Any] = {
        "coord_type": str(file_step.get("coord_type", "LIDAR")),
        "load_dim": load_dim,
        "use_dim": _dims(file_step.get("use_dim", [0, 1, 2]), load_dim),
    }
    sweep_step = next((t for t in pipeline if t.get("type") in SWEEP_LOADERS), None)
    if sweep_step is not None:
        sweep_dim = int(sweep_step.get("load_dim", 5))
        spec.update(
            sweeps_num=int(sweep_step.get("sweeps_num", 10)),
            sweep_load_dim=sweep_dim,
            sweep_use_dim=_dims(sweep_step.get("use_dim", [0, 1, 2, 4]), sweep_dim),
            remove_close=bool(sweep_step.get("remove_close", False)),
            pad_empty_sweeps=bool(sweep_step.get("pad_empty_sweeps", False)),
        )
    return PointsSpec(**spec)


def image_loader(pipeline: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The multi-view image loading step of a test pipeline, or None for a LiDAR-only model."""
    return next((dict(t) for t in pipeline if t.get("type") in IMAGE_LOADERS), None)


def inference_pipeline(pipeline: Sequence[dict[str, Any]], spec: PointsSpec) -> list[dict[str, Any]]:
    """The test pipeline with its loading steps replaced: points arrive as an array (``LoadPointsFromDict``, the
    columns already chosen), images through ``IMAGE_TRANSFORM``; every other step is kept as configured."""
    out: list[dict[str, Any]] = []
    for step in pipeline:
        kind = step.get("type")
        if kind in POINT_LOADERS:
            width = len(spec.sweep_use_dim) if spec.multi_sweep else len(spec.use_dim)
            out.append(
                {"type": "LoadPointsFromDict", "coord_type": spec.coord_type, "load_dim": width, "use_dim": width}
            )
        elif kind in SWEEP_LOADERS or kind in DROPPED_LOADERS:
            continue
        elif kind in IMAGE_LOADERS:
            image_step = {k: v for k, v in step.items() if k in ("to_float32", "color_type")}
            out.append({"type": IMAGE_TRANSFORM, **image_step})
        else:
            out.append(dict(step))
    return out


# --------------------------------------------------------------------------------------------------- points
def _check_columns(points: np.ndarray, sample: SensorSample, needed: int) -> None:
    if points.ndim != 2 or points.shape[1] < needed:
        raise LogFormatError(
            sample.path,
            f"LiDAR sample {sample.token} has {points.shape[1] if points.ndim == 2 else 0} values per point; "
            f"the model's config reads {needed} (x, y, z, intensity, ...)",
        )


def _padded(points: np.ndarray, width: int) -> np.ndarray:
    """``points`` with exactly ``width`` columns: extra columns cut, missing ones (the time column) zero."""
    out = np.zeros((points.shape[0], width), dtype=np.float32)
    n = min(width, points.shape[1])
    out[:, :n] = points[:, :n]
    return out


def sweep_transform_matrix(key: SensorSample, sweep: SensorSample, mode: str = "exact") -> np.ndarray:
    """The 4x4 that moves a sweep's points into the key LiDAR frame: T_keylidar_from_sweeplidar through the global
    frame (``exact``), or the transform mmdet3d 1.x applies with its infos' ``lidar2sensor`` (``mmdet3d``, see the
    module docstring: rotation R, translation R^T t)."""
    t = invert_transform(key.T_global_from_sensor) @ sweep.T_global_from_sensor
    if mode == "exact":
        return t
    if mode == "mmdet3d":
        quirk = t.copy()
        quirk[:3, 3] = t[:3, :3].T @ t[:3, 3]
        return quirk
    raise ConfigError(f"sweep_transform must be 'exact' or 'mmdet3d', got {mode!r}")


def remove_close(points: np.ndarray, radius: float = REMOVE_CLOSE_RADIUS_M) -> np.ndarray:
    """Points outside the square |x| < radius and |y| < radius (LoadPointsFromMultiSweeps._remove_close)."""
    close = (np.abs(points[:, 0]) < radius) & (np.abs(points[:, 1]) < radius)
    return points[~close]


def multi_sweep_points(
    sweeps: Sequence[tuple[np.ndarray, SensorSample]], spec: PointsSpec, mode: str = "exact"
) -> np.ndarray:
    """The model's input points from (points, sample) pairs, key sweep first then older ones (``lidar_sweeps``).

    Without multi-sweep loading: the key sweep's ``use_dim`` columns. With it: the key sweep (time column 0) and
    up to ``sweeps_num`` earlier sweeps (close points removed if configured, moved into the key LiDAR frame, time
    lag in seconds in column 4), concatenated in that order, then the sweep loader's ``use_dim`` columns.
    """
    key_points, key = sweeps[0]
    if not spec.multi_sweep:
        _check_columns(key_points, key, max(spec.use_dim) + 1)
        return np.ascontiguousarray(_padded(key_points, spec.load_dim)[:, list(spec.use_dim)], dtype=np.float32)
    # Column 4 is overwritten with the time lag, so a 4-column cloud (x, y, z, intensity) is enough.
    needed = max([c for c in spec.use_dim if c != TIME_COLUMN] + [3]) + 1
    _check_columns(key_points, key, needed)
    first = _padded(key_points, spec.load_dim)[:, list(spec.use_dim)]
    first[:, TIME_COLUMN] = 0.0
    parts = [first]
    for points, sample in sweeps[1 : spec.sweeps_num + 1]:
        if sample.timestamp_us > key.timestamp_us:
            raise LogFormatError(
                sample.path,
                f"sweep {sample.token} ({sample.timestamp_us} us) is newer than its key sample {key.token} "
                f"({key.timestamp_us} us): sweeps must be earlier",
            )
        _check_columns(points, sample, needed)
        p = _padded(points, spec.sweep_load_dim)
        if spec.remove_close:
            p = remove_close(p)
        t = sweep_transform_matrix(key, sample, mode)
        p[:, :3] = (p[:, :3].astype(np.float64) @ t[:3, :3].T + t[:3, 3]).astype(np.float32)
        p[:, TIME_COLUMN] = (key.timestamp_us - sample.timestamp_us) * 1e-6
        parts.append(p)
    return np.ascontiguousarray(np.concatenate(parts)[:, list(spec.sweep_use_dim)], dtype=np.float32)


def check_sweeps(
    frame: Frame, sweeps: Sequence[tuple[np.ndarray, SensorSample]], spec: PointsSpec, require: bool = True
) -> None:
    """MissingSweepsError when the config reads earlier sweeps and a frame past its scene's first has none (a log
    written without sweeps): the model would silently see one sweep where it was trained on ``sweeps_num + 1``.
    The first frame of a scene has none in nuScenes either (mmdet3d then uses the key sweep alone)."""
    if spec.multi_sweep and require and len(sweeps) == 1 and frame.index > 0:
        key = sweeps[0][1]
        raise MissingSweepsError(
            frame.reader.root,
            f"frame {frame.token} (index {frame.index} of scene {frame.scene_token}) has no LiDAR sweeps before its "
            f"key sample on {key.channel}, and the model's config reads {spec.sweeps_num} (a log written without "
            f"sweeps?); set detector.options.require_sweeps=false to run on key sweeps alone",
        )


# --------------------------------------------------------------------------------------------------- cameras
def camera_matrices(frame: Frame, key: SensorSample, cameras: Sequence[str]) -> list[dict[str, Any]]:
    """Per camera (in ``cameras`` order): channel, ``cam2img`` 3x3 and ``lidar2cam`` 4x4 (T_cam_from_keylidar:
    the key LiDAR at its timestamp, each camera at its own, through the global frame)."""
    missing = [c for c in cameras if c not in frame.sensors]
    if missing:
        raise UnknownChannelError(
            frame.reader.root,
            f"frame {frame.token} has no camera {missing}; the model reads {list(cameras)} "
            f"(set detector.options.cameras to the log's channels)",
        )
    out = []
    for channel in cameras:
        sample = frame.sensors[channel]
        calib = sample.calibration
        if not calib.is_camera or calib.intrinsic is None:
            raise UnknownChannelError(sample.path, f"channel {channel!r} is not a calibrated camera")
        lidar2cam = invert_transform(sample.T_global_from_sensor) @ key.T_global_from_sensor
        out.append(
            {"channel": channel, "cam2img": np.asarray(calib.intrinsic, dtype=np.float64), "lidar2cam": lidar2cam}
        )
    return out
