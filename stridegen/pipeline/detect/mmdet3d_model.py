"""Loading an mmdet3d model for the ``mmdet3d`` detector: config resolution (built-in names, config files, an
mmdetection3d checkout for ``projects/``), the config's test pipeline, the checkpoint, and the model built with
mmdet3d's own builders, on its device in eval mode.

Models are built and loaded once per process (``MODELS``, the house's bounded LRU, keyed by config, checkpoint and
device), so every detector of a worker, and every scene it runs, shares one model: the shape a Ray GPU actor
needs. Imports of
torch / mmengine / mmdet3d / mmcv happen only inside the functions that need them: without them,
``MissingExtraError`` names ``stridegen[mmdet3d]``. BEVFusion's two compiled ops (``bev_pool`` and its
voxelization) fall back to the pure-PyTorch versions of ``stridegen.pipeline.detect.mmdet3d_ops`` when the
project's extensions were not built, so BEVFusion runs on CPU.
"""

from __future__ import annotations

import os
import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stridegen.core.cache import LruCache
from stridegen.core.errors import ConfigError, MissingExtraError, StrideGenError
from stridegen.pipeline.detect.mmdet3d_inputs import PointsSpec, image_loader, inference_pipeline, points_spec

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


class ModelCheckpointError(StrideGenError, ValueError):
    """A checkpoint file is missing, unreadable, or does not fit the model of the config."""

    def __init__(self, path: str | Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        self.reason = reason


def require_extra(module: str) -> Any:
    """The imported ``module`` of the mmdet3d extra; ``MissingExtraError`` naming ``stridegen[mmdet3d]`` without it."""
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
            mmdet3d = require_extra("mmdet3d")
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


def prepare_repo(root: Path | None) -> None:
    """Make a checkout's ``projects`` importable, with the CPU fallbacks for BEVFusion's unbuilt extensions."""
    if root is None:
        return
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    from stridegen.pipeline.detect import mmdet3d_ops

    mmdet3d_ops.install_bevfusion_fallbacks(root)


def load_config(path: Path, cfg_options: dict[str, Any] | None = None) -> Any:
    """The mmengine Config of ``path`` (custom imports done), with ``cfg_options`` merged; ConfigError otherwise."""
    mmengine_config = require_extra("mmengine.config")
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
    torch = require_extra("torch")
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
    """``device`` if torch accepts it and, for a CUDA device, sees one; ConfigError otherwise."""
    torch = require_extra("torch")
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


MODEL_CACHE = 2  # models a process keeps (a worker runs one configuration; a second covers a comparison)
MODELS: LruCache[tuple[str, str, int, int, str, str], LoadedModel] = LruCache(MODEL_CACHE)
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
        return MODELS.get(key, lambda: _build(config_path, checkpoint, device, cfg_options))


def _build(config_path: Path, checkpoint: Path, device: str, cfg_options: dict[str, Any] | None) -> LoadedModel:
    require_extra("torch")
    require_extra("mmcv")
    registry = require_extra("mmdet3d.registry")
    require_extra("mmdet3d.models")
    require_extra("mmdet3d.datasets")
    mmengine_registry = require_extra("mmengine.registry")
    mmengine_dataset = require_extra("mmengine.dataset")
    structures = require_extra("mmdet3d.structures")
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
    drop_pretrained_init(model_cfg)
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


def drop_pretrained_init(cfg: Any) -> None:
    """Remove ``init_cfg`` entries of type ``Pretrained`` (BEVFusion's Swin backbone names a URL, and the model
    initialises itself when built): the checkpoint, loaded strictly afterwards, sets every weight, and nothing may
    be downloaded at run time."""
    if isinstance(cfg, dict):
        init = cfg.get("init_cfg")
        inits = init if isinstance(init, list) else [init]
        if any(isinstance(i, dict) and i.get("type") == "Pretrained" for i in inits):
            cfg["init_cfg"] = None
        for value in cfg.values():
            drop_pretrained_init(value)
    elif isinstance(cfg, list):
        for value in cfg:
            drop_pretrained_init(value)


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
