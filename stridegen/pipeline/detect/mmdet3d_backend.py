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

Inputs come from the Scene / Frame API, shaped as the config's test pipeline expects them
(stridegen.pipeline.detect.mmdet3d_inputs: the key and previous LiDAR sweeps in the key LiDAR frame, the camera
images with ``cam2img`` and ``lidar2cam``); the rest of the config's test pipeline and the model run unchanged. The
model is built and loaded once per process (stridegen.pipeline.detect.mmdet3d_model), which also imports torch /
mmengine / mmdet3d only when a detector is built. Boxes come back from mmdet3d's ``LiDARInstance3DBoxes`` (bottom
centre, dims (dx, dy, dz) = (l, w, h), yaw about +z, velocity (vx, vy) in the LiDAR frame) as ``Boxes`` in the key
LiDAR frame (gravity centre, as mmdet3d's ``output_to_nusc_box``), then moved to the global frame with the key
sample's ``T_global_from_sensor``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from stridegen.core.boxes import Boxes
from stridegen.core.cache_dir import expand_cache_path
from stridegen.core.errors import ConfigError
from stridegen.core.vocabulary import DETECTION_CLASSES, KITTI_TO_DETECTION
from stridegen.logs.base import Frame, SensorSample
from stridegen.pipeline.detect.mmdet3d_inputs import (
    NUSCENES_CAMERAS,
    camera_matrices,
    check_sweeps,
    multi_sweep_points,
)
from stridegen.pipeline.detect.mmdet3d_model import (
    check_device,
    load_model,
    prepare_repo,
    require_extra,
    resolve_config_path,
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
        require_extra("torch")
        require_extra("mmdet3d")
        config_path, root = resolve_config_path(model, mmdet3d_repo)
        prepare_repo(root)
        self.device = check_device(device)
        self.loaded = load_model(config_path, expand_cache_path(checkpoint), self.device, cfg_options)
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
        torch = require_extra("torch")
        mmengine_dataset = require_extra("mmengine.dataset")
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
