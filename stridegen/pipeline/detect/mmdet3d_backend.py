"""The ``mmdet3d`` detector: an MMDetection3D model (BEVFusion, CenterPoint, or any mmdet3d config) run in-process.

``detector.name=mmdet3d`` with ``detector.options``:

- ``model``: a built-in name (``BUILTIN_MODELS``: ``bevfusion`` (LiDAR + six cameras, the default),
  ``bevfusion-lidar``, ``centerpoint``, ``centerpoint-pillar``) or the path of any mmdet3d config file;
- ``checkpoint``: the ``.pth`` file of the model's weights (required: nothing is downloaded at run time;
  docs/mmdet3d.md lists the official checkpoints);
- ``device`` (``cpu``, ``cuda``, ``cuda:1``), ``batch_size`` (frames per forward pass in ``detect_batch``),
  ``score_threshold`` (boxes below it are dropped), ``class_map`` (model class -> our detection class, ``""`` to
  drop a class; merged over ``DEFAULT_CLASS_MAP``, which must then cover every class of the model);
- ``mmdet3d_repo``: a checkout of open-mmlab/mmdetection3d (v1.4.0): BEVFusion lives in its ``projects/BEVFusion``,
  not in the pip package (also read from ``$STRIDEGEN_MMDET3D_REPO``);
- ``cameras``: the camera channels in the model's order (default: nuScenes' six in the order of mmdet3d's nuScenes
  infos), ``lidar_channel`` (default: the frame's first LiDAR), ``require_sweeps`` and ``sweep_transform``
  (see below), ``cfg_options`` (overrides merged into the config, as mmdet3d's ``--cfg-options``).

Inputs come from the Scene / Frame API, shaped as the config's test pipeline expects them:

- points: the key LiDAR sweep and, when the pipeline has ``LoadPointsFromMultiSweeps`` (nuScenes configs:
  ``sweeps_num=9``, so 10 sweeps), the previous sweeps (``Frame.lidar_sweeps``), each moved into the key LiDAR
  frame with the time lag ``t_key - t_sweep`` in seconds in column 4, points within 1 m (|x| and |y|) of a sweep's
  sensor removed (``remove_close``), as mmdet3d 1.4's ``LoadPointsFromMultiSweeps`` does
  (mmdet3d/datasets/transforms/loading.py). ``sweep_transform="exact"`` moves sweep points with
  ``T_keylidar_from_sweeplidar`` (R p + t); ``"mmdet3d"`` reproduces what that transform computes from the
  ``lidar2sensor`` matrices of mmdet3d 1.x's nuScenes infos (tools/dataset_converters/update_infos_to_v2.py
  stores [R^T | -R^T t], the transform computes p R^T - (-R^T t) = R p + R^T t), which the checkpoints trained on
  those infos (BEVFusion) saw;
- images (models whose pipeline loads multi-view images, BEVFusion): the six camera images decoded with Pillow as
  RGB (``mmcv.imfrombytes(..., backend="pillow")``, as the project's ``BEVLoadMultiViewImageFromFiles``), with
  ``cam2img`` (intrinsics) and ``lidar2cam`` = T_cam_from_keylidar through the global frame, each camera at its own
  timestamp (mmdet3d's ``obtain_sensor2top``).

The rest of the config's test pipeline (range filter, image resize / crop, packing) and the model run unchanged:
loading transforms are replaced by ``LoadPointsFromDict`` and our in-memory image loader. Boxes come back from
mmdet3d's ``LiDARInstance3DBoxes`` (bottom centre, dims (dx, dy, dz) = (l, w, h), yaw about +z, velocity (vx, vy)
in the LiDAR frame) as ``Boxes`` in the key LiDAR frame (gravity centre, as mmdet3d's ``output_to_nusc_box``), then
moved to the global frame with the key sample's ``T_global_from_sensor``.

Models are built and loaded once per process (``_MODELS``, keyed by config, checkpoint and device), so every
detector of a worker, and every scene it runs, shares one model: the shape a Ray GPU actor needs. Imports of
torch / mmengine / mmdet3d happen only when a detector is built: without them, ``MissingExtraError`` names
``stridegen[mmdet3d]``. BEVFusion's two compiled ops (``bev_pool`` and its voxelization) fall back to the pure-PyTorch
versions of ``stridegen.pipeline.detect.mmdet3d_ops`` when the project's extensions were not built, so BEVFusion
runs on CPU.
"""

from __future__ import annotations

import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.core import geometry as geo
from stridegen.core.boxes import Boxes
from stridegen.core.errors import (
    ConfigError,
    LogFormatError,
    MissingExtraError,
    StrideGenError,
    UnknownChannelError,
)
from stridegen.core.vocabulary import DETECTION_CLASSES, KITTI_TO_DETECTION
from stridegen.logs.base import Frame, SensorSample

EXTRA = "mmdet3d"
REPO_ENV = "STRIDEGEN_MMDET3D_REPO"

# Built-in model names -> (config, where it lives). "package": mmdet3d's pip package ships its configs under
# mmdet3d/.mim/configs; "repo": only an open-mmlab/mmdetection3d checkout has them (projects/ is not packaged).
BUILTIN_MODELS: dict[str, tuple[str, str]] = {
    "bevfusion": (
        "projects/BEVFusion/configs/bevfusion_lidar-cam_voxel0075_second_secfpn_8xb4-cyclic-20e_nus-3d.py",
        "repo",
    ),
    "bevfusion-lidar": (
        "projects/BEVFusion/configs/bevfusion_lidar_voxel0075_second_secfpn_8xb4-cyclic-20e_nus-3d.py",
        "repo",
    ),
    "centerpoint": (
        "centerpoint/centerpoint_voxel0075_second_secfpn_head-dcn-circlenms_8xb4-cyclic-20e_nus-3d.py",
        "package",
    ),
    "centerpoint-pillar": (
        "centerpoint/centerpoint_pillar02_second_secfpn_head-dcn_8xb4-cyclic-20e_nus-3d.py",
        "package",
    ),
}

# The camera order of mmdet3d's nuScenes infos (tools/dataset_converters/nuscenes_converter.py ``camera_types``).
NUSCENES_CAMERAS: tuple[str, ...] = (
    "CAM_FRONT",
    "CAM_FRONT_RIGHT",
    "CAM_FRONT_LEFT",
    "CAM_BACK",
    "CAM_BACK_LEFT",
    "CAM_BACK_RIGHT",
)

# Model class -> our detection class ("" = dropped). nuScenes' ten classes map to themselves; KITTI, Waymo and Lyft
# names and the STRIDE-QA classes (stridegen.core.vocabulary) to the nearest nuScenes class. A model class missing
# here and in ``class_map`` is a config error: the mapping is total over the model's classes.
DEFAULT_CLASS_MAP: dict[str, str] = {
    **{name: name for name in DETECTION_CLASSES},
    # KITTI (Car, Pedestrian, Cyclist, Van, Truck, ...; Waymo's Car, Pedestrian, Cyclist are among them), Lyft.
    **KITTI_TO_DETECTION,
    "other_vehicle": "truck",
    "emergency_vehicle": "car",
    "animal": "",
    # STRIDE-QA classes.
    "vehicle": "car",
    "large vehicle": "truck",
    "traffic cone": "traffic_cone",
    "kick scooter": "",
}

# Loading transforms of mmdet3d test pipelines that this backend replaces with its in-memory inputs.
POINT_LOADERS = ("LoadPointsFromFile",)
SWEEP_LOADERS = ("LoadPointsFromMultiSweeps",)
IMAGE_LOADERS = ("BEVLoadMultiViewImageFromFiles", "LoadMultiViewImageFromFiles")
DROPPED_LOADERS = ("LoadAnnotations3D", "LoadAnnotations")
IMAGE_TRANSFORM = "StrideGenMultiViewImages"  # our loader, registered in mmdet3d's TRANSFORMS when first needed

REMOVE_CLOSE_RADIUS_M = 1.0  # LoadPointsFromMultiSweeps._remove_close default radius
TIME_COLUMN = 4  # LoadPointsFromMultiSweeps writes the time lag into column 4


class ModelCheckpointError(StrideGenError, ValueError):
    """A checkpoint file is missing, unreadable, or does not fit the model of the config."""

    def __init__(self, path: str | Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        self.reason = reason


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
    t = geo.invert_transform(key.T_global_from_sensor) @ sweep.T_global_from_sensor
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
        lidar2cam = geo.invert_transform(sample.T_global_from_sensor) @ key.T_global_from_sensor
        out.append(
            {"channel": channel, "cam2img": np.asarray(calib.intrinsic, dtype=np.float64), "lidar2cam": lidar2cam}
        )
    return out


# ------------------------------------------------------------------------------------------------- classes
def resolve_class_map(model_classes: Sequence[str], class_map: dict[str, str] | None = None) -> dict[str, str]:
    """Model class -> our detection class ("" = dropped): ``class_map`` over ``DEFAULT_CLASS_MAP``, checked total
    over ``model_classes`` with every target a detection class (stridegen.core.vocabulary) or ""."""
    user = dict(class_map or {})
    unknown_keys = sorted(set(user) - set(model_classes))
    if unknown_keys:
        raise ConfigError(
            f"detector.options.class_map names {unknown_keys}, not classes of the model {list(model_classes)}"
        )
    merged = {**DEFAULT_CLASS_MAP, **user}
    unmapped = [c for c in model_classes if c not in merged]
    if unmapped:
        raise ConfigError(
            f"model classes {unmapped} have no detection class: set detector.options.class_map "
            f"(targets: {list(DETECTION_CLASSES)} or '' to drop)"
        )
    result = {c: merged[c] for c in model_classes}
    bad = {c: t for c, t in result.items() if t and t not in DETECTION_CLASSES}
    if bad:
        raise ConfigError(f"class_map targets {bad} are not detection classes {list(DETECTION_CLASSES)} (or '')")
    return result


# ------------------------------------------------------------------------------------------------- results
def lidar_boxes_to_global(
    bboxes: np.ndarray, scores: np.ndarray, labels: np.ndarray, T_global_from_lidar: np.ndarray
) -> Boxes:
    """mmdet3d LiDAR boxes [N, 7 or 9] (x, y, z_bottom, dx, dy, dz, yaw[, vx, vy]) -> ``Boxes`` in the global frame
    (gravity centre; ``labels`` our class names). Velocities are free vectors (rotated, not translated)."""
    b = np.asarray(bboxes, dtype=np.float64).reshape(-1, bboxes.shape[-1] if bboxes.size else 9)
    n = b.shape[0]
    center = b[:, :3].copy()
    center[:, 2] += b[:, 5] / 2.0
    velocity = np.zeros((n, 3))
    if b.shape[1] >= 9:
        velocity[:, :2] = b[:, 7:9]
    lidar = Boxes(center, b[:, 3:6], b[:, 6], velocity, label=labels, score=scores, frame="lidar")
    return lidar.transform(T_global_from_lidar, "global")


# ---------------------------------------------------------------------------------------------- model loading
def _require(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(EXTRA, module) from exc


def resolve_config_path(model: str, repo: str = "") -> tuple[Path, Path | None]:
    """(config file, repository root to put on sys.path or None) for a built-in name or a config path."""
    if model in BUILTIN_MODELS:
        rel, where = BUILTIN_MODELS[model]
        if where == "package":
            mmdet3d = _require("mmdet3d")
            path = Path(mmdet3d.__file__).parent / ".mim" / "configs" / rel
            if not path.is_file():
                raise ConfigError(f"model {model!r}: {path} is missing from the installed mmdet3d package")
            return path, None
        root = repo or os.environ.get(REPO_ENV, "")
        if not root:
            raise ConfigError(
                f"model {model!r} lives in projects/ of an open-mmlab/mmdetection3d checkout (v1.4.0), not in the "
                f"pip package: set detector.options.mmdet3d_repo (or ${REPO_ENV}) to it (docs/mmdet3d.md)"
            )
        path = Path(root).expanduser() / rel
        if not path.is_file():
            raise ConfigError(f"model {model!r}: {path} not found; is {root} an mmdetection3d v1.4.0 checkout?")
        return path, Path(root).expanduser().resolve()
    path = Path(model).expanduser()
    if path.suffix != ".py" or not path.is_file():
        raise ConfigError(
            f"detector.options.model={model!r} is neither a built-in model {sorted(BUILTIN_MODELS)} "
            f"nor an existing mmdet3d config file (.py)"
        )
    root = repo or os.environ.get(REPO_ENV, "")
    return path, Path(root).expanduser().resolve() if root else None


def _prepare_repo(root: Path | None) -> None:
    """Make a checkout's ``projects`` importable, with the CPU fallbacks for BEVFusion's unbuilt extensions."""
    if root is None:
        return
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    from stridegen.pipeline.detect import mmdet3d_ops

    mmdet3d_ops.install_bevfusion_fallbacks(root)


def load_config(path: Path, cfg_options: dict[str, Any] | None = None) -> Any:
    """The mmengine Config of ``path`` (custom imports done), with ``cfg_options`` merged; ConfigError otherwise."""
    mmengine_config = _require("mmengine.config")
    try:
        cfg = mmengine_config.Config.fromfile(str(path))
        if cfg_options:
            cfg.merge_from_dict(dict(cfg_options))
    except ImportError as exc:
        raise ConfigError(f"{path}: a module the config imports is missing: {exc}") from exc
    except Exception as exc:  # mmengine raises many kinds for a broken config (syntax, missing base file, ...)
        raise ConfigError(f"{path}: not a loadable mmdet3d config: {type(exc).__name__}: {exc}") from exc
    if "model" not in cfg:
        raise ConfigError(f"{path}: the config has no 'model'")
    return cfg


def config_test_pipeline(cfg: Any, path: Path | str = "config") -> list[dict[str, Any]]:
    """The test pipeline of a config (``test_dataloader.dataset.pipeline``, else ``test_pipeline``)."""
    try:
        dataset = cfg.test_dataloader.dataset
        while "pipeline" not in dataset and "dataset" in dataset:  # wrappers (CBGSDataset, ...)
            dataset = dataset.dataset
        pipeline = dataset.pipeline
    except (AttributeError, KeyError):
        pipeline = cfg.get("test_pipeline")
    if not pipeline:
        raise ConfigError(f"{path}: the config has no test pipeline (test_dataloader.dataset.pipeline)")
    return [dict(step) for step in pipeline]


def _model_classes(cfg: Any, checkpoint_meta: dict[str, Any]) -> list[str]:
    meta = checkpoint_meta.get("dataset_meta") or {}
    classes = meta.get("classes") or checkpoint_meta.get("CLASSES") or cfg.get("class_names")
    if not classes:
        classes = (cfg.get("metainfo") or {}).get("classes")
    if not classes:
        raise ConfigError("neither the checkpoint's meta nor the config (class_names) names the model's classes")
    return [str(c) for c in classes]


def load_checkpoint_state(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(state dict, meta) of an mmengine / PyTorch checkpoint. A checkpoint is pickled code: load only trusted files."""
    torch = _require("torch")
    if not path.is_file():
        raise ModelCheckpointError(path, "checkpoint file does not exist")
    try:
        ckpt = torch.load(str(path), map_location="cpu", weights_only=False)
    except Exception as exc:  # torch raises UnpicklingError, RuntimeError, EOFError... for a bad file
        raise ModelCheckpointError(path, f"not a readable PyTorch checkpoint: {type(exc).__name__}: {exc}") from exc
    if not isinstance(ckpt, dict):
        raise ModelCheckpointError(path, f"holds a {type(ckpt).__name__}, expected a dict with a state_dict")
    state = ckpt.get("state_dict", ckpt)
    if not isinstance(state, dict) or not all(hasattr(v, "shape") for v in state.values()):
        raise ModelCheckpointError(path, "has no state_dict of tensors")
    # Keep the per-module ``_metadata`` (versions): mmdet3d's spconv 2 layers read it to tell spconv 1 / mmcv kernel
    # layouts (D, H, W, in, out) of older checkpoints from their own (out, D, H, W, in).
    metadata = getattr(state, "_metadata", None)
    state = OrderedDict((k[len("module.") :] if k.startswith("module.") else k, v) for k, v in state.items())
    if metadata is not None:
        state._metadata = OrderedDict(  # type: ignore[attr-defined]
            (k[len("module.") :] if k.startswith("module.") else k, v) for k, v in metadata.items()
        )
    raw_meta = ckpt.get("meta")
    meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    return state, meta


def load_weights(model: Any, path: Path, config: Path | str) -> dict[str, Any]:
    """Load a checkpoint into ``model`` strictly; every missing, unexpected or mis-shaped key is an error."""
    state, meta = load_checkpoint_state(path)
    own = model.state_dict()
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    problems = []
    if missing:
        problems.append(f"{len(missing)} missing keys (e.g. {missing[:3]})")
    if unexpected:
        problems.append(f"{len(unexpected)} unexpected keys (e.g. {unexpected[:3]})")
    if not problems:
        try:
            model.load_state_dict(state, strict=True)
        except RuntimeError as exc:  # torch lists every size mismatch, one per line
            lines = [line.strip() for line in str(exc).splitlines()[1:] if line.strip()]
            problems.append(f"{len(lines)} keys of another shape (e.g. {lines[0] if lines else exc})")
    if problems:
        raise ModelCheckpointError(path, f"does not fit the model of {config}: " + "; ".join(problems))
    return meta


def check_device(device: str) -> str:
    torch = _require("torch")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ConfigError(f"detector.options.device={device!r} is not a torch device: {exc}") from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"detector.options.device={device!r} but torch sees no CUDA device (use device=cpu)")
    return device


@dataclass
class LoadedModel:
    """A model built from its config with its weights, on its device, in eval mode, and what inference needs."""

    model: Any
    config: Any
    config_path: Path
    classes: list[str]
    pipeline: Any  # mmengine Compose of the inference pipeline
    points: PointsSpec
    images: dict[str, Any] | None  # the config's image loading step (None: LiDAR only)
    box_type_3d: Any
    box_mode_3d: Any


_MODELS: dict[tuple[str, str, int, int, str, str], LoadedModel] = {}
_MODELS_LOCK = threading.Lock()


def load_model(
    config_path: Path, checkpoint: Path, device: str, cfg_options: dict[str, Any] | None = None
) -> LoadedModel:
    """The model of ``config_path`` with ``checkpoint`` on ``device``, built once per process and shared."""
    try:
        stat = checkpoint.stat()
    except OSError:
        raise ModelCheckpointError(checkpoint, "checkpoint file does not exist") from None
    key = (
        str(config_path.resolve()),
        str(checkpoint.resolve()),
        stat.st_mtime_ns,
        stat.st_size,
        device,
        repr(sorted((cfg_options or {}).items())),
    )
    with _MODELS_LOCK:
        if key not in _MODELS:
            _MODELS[key] = _build(config_path, checkpoint, device, cfg_options)
        return _MODELS[key]


def _build(config_path: Path, checkpoint: Path, device: str, cfg_options: dict[str, Any] | None) -> LoadedModel:
    _require("torch")
    _require("mmcv")
    registry = _require("mmdet3d.registry")
    _require("mmdet3d.models")
    _require("mmdet3d.datasets")
    mmengine_registry = _require("mmengine.registry")
    mmengine_dataset = _require("mmengine.dataset")
    structures = _require("mmdet3d.structures")
    from stridegen.pipeline.detect import mmdet3d_ops

    cfg = load_config(config_path, cfg_options)
    pipeline_cfg = config_test_pipeline(cfg, config_path)
    spec = points_spec(pipeline_cfg)
    images = image_loader(pipeline_cfg)
    mmdet3d_ops.register_image_transform()
    mmengine_registry.init_default_scope(cfg.get("default_scope", "mmdet3d"))
    model_cfg = cfg.model.copy()
    model_cfg.train_cfg = None
    _sync_bn_to_bn(model_cfg)
    _drop_pretrained_init(model_cfg)
    try:
        model = registry.MODELS.build(model_cfg)
    except Exception as exc:  # registry KeyError for an unknown type, TypeError for a wrong argument, ...
        raise ConfigError(f"{config_path}: mmdet3d could not build the model: {type(exc).__name__}: {exc}") from exc
    meta = load_weights(model, checkpoint, config_path)
    classes = _model_classes(cfg, meta)
    model.to(device)
    model.eval()
    try:
        compose = mmengine_dataset.Compose(inference_pipeline(pipeline_cfg, spec))
    except Exception as exc:
        raise ConfigError(f"{config_path}: its test pipeline could not be built: {type(exc).__name__}: {exc}") from exc
    box_type_name = _dataset_value(cfg, "box_type_3d", "LiDAR")
    box_type, box_mode = structures.get_box_type(box_type_name)
    if box_type_name.lower() != "lidar":
        raise ConfigError(f"{config_path}: box_type_3d={box_type_name!r}; only LiDAR-frame detectors are supported")
    return LoadedModel(model, cfg, config_path, classes, compose, spec, images, box_type, box_mode)


def _dataset_value(cfg: Any, key: str, default: str) -> str:
    try:
        dataset = cfg.test_dataloader.dataset
        while key not in dataset and "dataset" in dataset:
            dataset = dataset.dataset
        return str(dataset.get(key, default))
    except (AttributeError, KeyError):
        return default


def _drop_pretrained_init(cfg: Any) -> None:
    """Remove ``init_cfg`` entries of type ``Pretrained`` (BEVFusion's Swin backbone names a URL, and the model
    initialises itself when built): the checkpoint, loaded strictly afterwards, sets every weight, and nothing may
    be downloaded at run time."""
    if isinstance(cfg, dict):
        init = cfg.get("init_cfg")
        inits = init if isinstance(init, list) else [init]
        if any(isinstance(i, dict) and i.get("type") == "Pretrained" for i in inits):
            cfg["init_cfg"] = None
        for value in cfg.values():
            _drop_pretrained_init(value)
    elif isinstance(cfg, list):
        for value in cfg:
            _drop_pretrained_init(value)


def _sync_bn_to_bn(cfg: Any) -> None:
    """naiveSyncBN -> BN in every norm_cfg (mmdet3d.apis.inference.convert_SyncBN does the same for init_model)."""
    if isinstance(cfg, dict):
        for key, value in cfg.items():
            if key == "norm_cfg" and isinstance(value, dict) and "type" in value:
                value["type"] = str(value["type"]).replace("naiveSyncBN", "BN")
            else:
                _sync_bn_to_bn(value)
    elif isinstance(cfg, list):
        for value in cfg:
            _sync_bn_to_bn(value)


# ------------------------------------------------------------------------------------------------- detector
class Mmdet3dDetector:
    """An mmdet3d model as a ``detector`` backend (options: module docstring)."""

    name = "mmdet3d"

    def __init__(
        self,
        model: str = "bevfusion",
        checkpoint: str = "",
        device: str = "cpu",
        batch_size: int = 1,
        score_threshold: float = 0.1,
        class_map: dict[str, str] | None = None,
        cameras: list[str] | None = None,
        lidar_channel: str = "",
        mmdet3d_repo: str = "",
        require_sweeps: bool = True,
        sweep_transform: str = "exact",
        cfg_options: dict[str, Any] | None = None,
    ) -> None:
        if batch_size < 1:
            raise ConfigError(f"detector.options.batch_size must be >= 1, got {batch_size}")
        if sweep_transform not in ("exact", "mmdet3d"):
            raise ConfigError(f"detector.options.sweep_transform must be 'exact' or 'mmdet3d', got {sweep_transform!r}")
        if not checkpoint:
            raise ConfigError(
                "detector 'mmdet3d' needs detector.options.checkpoint (a .pth file; docs/mmdet3d.md lists the "
                "official checkpoints; nothing is downloaded at run time)"
            )
        self.model_name = model
        self.batch_size = batch_size
        self.score_threshold = score_threshold
        self.cameras = tuple(cameras) if cameras else NUSCENES_CAMERAS
        self.lidar_channel = lidar_channel or None
        self.require_sweeps = require_sweeps
        self.sweep_transform = sweep_transform
        _require("torch")
        _require("mmdet3d")
        config_path, root = resolve_config_path(model, mmdet3d_repo)
        _prepare_repo(root)
        self.device = check_device(device)
        self.loaded = load_model(config_path, Path(checkpoint).expanduser(), self.device, cfg_options)
        self.class_map = resolve_class_map(self.loaded.classes, class_map)
        self._labels = np.array([self.class_map[c] for c in self.loaded.classes] + [""], dtype=object)
        self._model_labels = np.array(list(self.loaded.classes) + [""], dtype=object)

    # ---------------------------------------------------------------------------------------- inputs
    def lidar_inputs(self, frame: Frame) -> tuple[np.ndarray, SensorSample]:
        """The model's input points for ``frame`` (key LiDAR frame) and the key LiDAR sample."""
        spec = self.loaded.points
        sweeps = frame.lidar_sweeps(spec.sweeps_num + 1, self.lidar_channel)
        check_sweeps(frame, sweeps, spec, self.require_sweeps)
        key = sweeps[0][1]
        return multi_sweep_points(sweeps, spec, self.sweep_transform), key

    def data_sample(self, frame: Frame) -> tuple[dict[str, Any], SensorSample]:
        """The dict the inference pipeline starts from (as mmdet3d.apis.inference_detector builds it)."""
        points, key = self.lidar_inputs(frame)
        data: dict[str, Any] = {
            "points": points,
            "timestamp": key.timestamp_us * 1e-6,
            "axis_align_matrix": np.eye(4),
            "box_type_3d": self.loaded.box_type_3d,
            "box_mode_3d": self.loaded.box_mode_3d,
            "sample_idx": frame.token,
            "lidar_path": str(key.path),
            "num_pts_feats": points.shape[1],
        }
        if self.loaded.images is not None:
            data["stridegen_cameras"] = [
                {
                    **cam,
                    "image_bytes": frame.image_bytes(cam["channel"]),
                    "img_path": str(frame.sensors[cam["channel"]].path),
                }
                for cam in camera_matrices(frame, key, self.cameras)
            ]
        return data, key

    # ---------------------------------------------------------------------------------------- inference
    def detect(self, frame: Frame) -> Boxes:
        return self.detect_batch([frame])[0]

    def detect_batch(self, frames: Sequence[Frame]) -> list[Boxes]:
        """Boxes (global frame) of every frame, ``batch_size`` frames per forward pass."""
        out: list[Boxes] = []
        for start in range(0, len(frames), self.batch_size):
            out.extend(self._run(frames[start : start + self.batch_size]))
        return out

    def raw_predictions(self, frames: Sequence[Frame]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """mmdet3d's own output per frame: (bboxes [N, 7 or 9] LiDAR frame, scores [N], label indices [N])."""
        return [p for p, _ in self._forward(frames)]

    def _forward(self, frames: Sequence[Frame]) -> list[tuple[tuple[np.ndarray, np.ndarray, np.ndarray], SensorSample]]:
        torch = _require("torch")
        mmengine_dataset = _require("mmengine.dataset")
        keys, batch = [], []
        for frame in frames:
            data, key = self.data_sample(frame)
            keys.append(key)
            batch.append(self.loaded.pipeline(data))
        with torch.no_grad():
            results = self.loaded.model.test_step(mmengine_dataset.pseudo_collate(batch))
        out = []
        for result, key in zip(results, keys, strict=True):
            pred = result.pred_instances_3d
            bboxes = pred.bboxes_3d.tensor.detach().cpu().numpy()
            scores = pred.scores_3d.detach().cpu().numpy()
            labels = pred.labels_3d.detach().cpu().numpy()
            out.append(((bboxes, scores, labels), key))
        return out

    def _run(self, frames: Sequence[Frame]) -> list[Boxes]:
        out = []
        for (bboxes, scores, labels), key in self._forward(frames):
            idx = np.where((labels >= 0) & (labels < len(self.loaded.classes)), labels, len(self.loaded.classes))
            names = self._labels[idx]
            keep = (scores >= self.score_threshold) & (names != "")
            boxes = lidar_boxes_to_global(bboxes[keep], scores[keep], names[keep], key.T_global_from_sensor)
            boxes.extras["model_label"] = self._model_labels[idx[keep]]
            out.append(boxes)
        return out
