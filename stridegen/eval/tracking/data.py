"""nuScenes tracking evaluation: configuration, inputs (timeline, track boxes, bike racks) and result classes.

The devkit's ``TrackingConfig``, ``TrackingMetricData`` and ``TrackingMetrics`` (nuscenes-devkit 1.2.0
``python-sdk/nuscenes/eval/tracking/data_classes.py`` and ``constants.py``, read for behaviour) as plain arrays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from stridegen.core.errors import ConfigError

# ---------------------------------------------------------------------------------------------- configuration

# Values of nuscenes-devkit 1.2.0 ``nuscenes/eval/tracking/configs/tracking_nips_2019.json``.
_CLASS_RANGE_M: dict[str, float] = {
    "car": 50,
    "truck": 50,
    "bus": 50,
    "trailer": 50,
    "pedestrian": 40,
    "motorcycle": 40,
    "bicycle": 40,
}
_METRIC_WORST: dict[str, float] = {
    "amota": 0.0,
    "amotp": 2.0,
    "recall": 0.0,
    "motar": 0.0,
    "mota": 0.0,
    "motp": 2.0,
    "mt": 0.0,
    "ml": -1.0,
    "faf": 500,
    "gt": -1,
    "tp": 0.0,
    "fp": -1.0,
    "fn": -1.0,
    "ids": -1.0,
    "frag": -1.0,
    "tid": 20,
    "lgd": 20,
}

BIKE_RACK_CATEGORY = "static_object.bicycle_rack"
BIKE_RACK_CLASSES = ("bicycle", "motorcycle")

# nuscenes-devkit ``nuscenes/eval/tracking/constants.py``: the reported metrics, in the devkit's order.
AMOT_METRICS = ("amota", "amotp")
INTERNAL_METRICS = ("recall", "motar", "gt")
LEGACY_METRICS = ("mota", "motp", "mt", "ml", "faf", "tp", "fp", "fn", "ids", "frag", "tid", "lgd")
TRACKING_METRICS = (*AMOT_METRICS, *INTERNAL_METRICS, *LEGACY_METRICS)
# Not reported by the devkit; computed from the same counts at the same (best-MOTA) threshold.
EXTRA_METRICS = ("precision", "f1")
# Per-threshold metric data (the devkit's ``TrackingMetricData`` fields, plus the extras).
THRESHOLD_METRICS = (
    "recall",
    "motar",
    "mota",
    "motp",
    "faf",
    "gt",
    "tp",
    "mt",
    "ml",
    "fp",
    "fn",
    "ids",
    "frag",
    "tid",
    "lgd",
    *EXTRA_METRICS,
)
# Summed over classes in the "all" summary; every other metric is the nan-mean over classes (devkit
# ``TrackingMetrics.compute_metric``).
SUMMED_METRICS = ("mt", "ml", "tp", "fp", "fn", "ids", "frag")


@dataclass(frozen=True)
class TrackingConfig:
    """The devkit's ``TrackingConfig`` (defaults: ``tracking_nips_2019``)."""

    class_range: dict[str, float] = field(default_factory=lambda: dict(_CLASS_RANGE_M))
    dist_fcn: str = "center_distance"
    dist_th_tp: float = 2.0
    min_recall: float = 0.1
    max_boxes_per_sample: int = 500
    metric_worst: dict[str, float] = field(default_factory=lambda: dict(_METRIC_WORST))
    num_thresholds: int = 40
    pretty_names: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.dist_fcn != "center_distance":
            raise ConfigError(
                f"tracking dist_fcn must be 'center_distance' (the devkit's only choice), got {self.dist_fcn!r}"
            )
        if not self.class_range:
            raise ConfigError("tracking class_range is empty")
        missing = set(TRACKING_METRICS) - set(self.metric_worst)
        if missing:
            raise ConfigError(f"tracking metric_worst lacks {sorted(missing)}")
        if self.num_thresholds < 1 or not 0.0 <= self.min_recall <= 1.0 or self.dist_th_tp <= 0:
            raise ConfigError("tracking num_thresholds must be >= 1, min_recall in [0, 1], dist_th_tp > 0")

    @property
    def class_names(self) -> tuple[str, ...]:
        """Evaluated classes, sorted (devkit: ``sorted(class_range.keys())``)."""
        return tuple(sorted(self.class_range))

    @classmethod
    def from_dict(cls, content: dict) -> TrackingConfig:
        """Read the devkit's JSON layout (also the layout of ``configs/tracking_nips_2019.yaml``)."""
        try:
            names = content.get("tracking_names")
            class_range = {str(k): float(v) for k, v in content["class_range"].items()}
            if names is not None and set(names) != set(class_range):
                raise ConfigError("tracking_names and class_range name different classes")
            return cls(
                class_range=class_range,
                dist_fcn=str(content.get("dist_fcn", "center_distance")),
                dist_th_tp=float(content["dist_th_tp"]),
                min_recall=float(content["min_recall"]),
                max_boxes_per_sample=int(content.get("max_boxes_per_sample", 500)),
                metric_worst={str(k): float(v) for k, v in content["metric_worst"].items()},
                num_thresholds=int(content["num_thresholds"]),
                pretty_names={str(k): str(v) for k, v in content.get("pretty_tracking_names", {}).items()},
            )
        except KeyError as exc:
            raise ConfigError(f"invalid tracking config: missing key {exc.args[0]!r}") from None
        except (TypeError, ValueError, AttributeError) as exc:
            if isinstance(exc, ConfigError):
                raise
            raise ConfigError(f"invalid tracking config: {exc}") from None

    @classmethod
    def from_yaml(cls, path: str | Path) -> TrackingConfig:
        from stridegen.formats.textfile import config_error, load_yaml

        content = load_yaml(path, "tracking config", config_error)
        if not isinstance(content, dict):
            raise ConfigError(f"{path}: tracking config must be a mapping")
        try:
            return cls.from_dict(content)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None


# ---------------------------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class Timeline:
    """The evaluated frames (nuScenes samples), scene after scene, each scene in time order.

    ``scene`` [F] scene index (non-decreasing), ``timestamp_us`` [F] (strictly increasing within a scene),
    ``ego_translation_global`` [F, 3] ego position of the frame's LiDAR sample, ``token`` [F] sample tokens.
    """

    scene: np.ndarray
    timestamp_us: np.ndarray
    ego_translation_global: np.ndarray
    token: np.ndarray | None = None

    def __post_init__(self) -> None:
        scene = np.asarray(self.scene, dtype=np.int64).reshape(-1)
        n = scene.shape[0]
        object.__setattr__(self, "scene", scene)
        object.__setattr__(self, "timestamp_us", np.asarray(self.timestamp_us, dtype=np.int64).reshape(n))
        object.__setattr__(
            self, "ego_translation_global", np.asarray(self.ego_translation_global, dtype=np.float64).reshape(n, 3)
        )
        if n and np.any(np.diff(scene) < 0):
            raise ValueError("Timeline: frames must be grouped by scene in non-decreasing scene order")
        same = np.diff(scene) == 0
        if np.any(np.diff(self.timestamp_us)[same] <= 0):
            raise ValueError("Timeline: timestamps must be strictly increasing within each scene")

    def __len__(self) -> int:
        return self.scene.shape[0]

    @property
    def scene_start(self) -> np.ndarray:
        """[F] index of the first frame of each frame's scene."""
        n = len(self)
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        new = np.r_[True, np.diff(self.scene) != 0]
        return np.maximum.accumulate(np.where(new, np.arange(n), 0))

    @property
    def local_index(self) -> np.ndarray:
        """[F] index of each frame within its scene."""
        return np.arange(len(self)) - self.scene_start


@dataclass(frozen=True)
class TrackBoxes:
    """Boxes of GT or predicted tracks: one row per box; rows of one frame keep their input order.

    ``frame`` indexes the ``Timeline``; ``score`` is -1 for GT; ``num_pts`` is LiDAR + radar points (-1: unknown,
    never filtered).
    """

    frame: np.ndarray
    track_id: np.ndarray
    class_name: np.ndarray
    translation_global: np.ndarray
    score: np.ndarray
    num_pts: np.ndarray

    def __post_init__(self) -> None:
        frame = np.asarray(self.frame, dtype=np.int64).reshape(-1)
        n = frame.shape[0]
        object.__setattr__(self, "frame", frame)
        object.__setattr__(self, "track_id", _str_array(self.track_id, n))
        object.__setattr__(self, "class_name", _str_array(self.class_name, n))
        object.__setattr__(
            self, "translation_global", np.asarray(self.translation_global, dtype=np.float64).reshape(n, 3)
        )
        object.__setattr__(self, "score", np.asarray(self.score, dtype=np.float64).reshape(n))
        object.__setattr__(self, "num_pts", np.asarray(self.num_pts, dtype=np.int64).reshape(n))

    @classmethod
    def create(cls, frame, track_id, class_name, translation_global, score=None, num_pts=None) -> TrackBoxes:
        n = len(frame)
        return cls(
            frame,
            track_id,
            class_name,
            translation_global,
            np.full(n, -1.0) if score is None else score,
            np.full(n, -1, dtype=np.int64) if num_pts is None else num_pts,
        )

    def __len__(self) -> int:
        return self.frame.shape[0]

    def take(self, index: np.ndarray) -> TrackBoxes:
        return TrackBoxes(
            self.frame[index],
            self.track_id[index],
            self.class_name[index],
            self.translation_global[index],
            self.score[index],
            self.num_pts[index],
        )

    @staticmethod
    def concat(parts: list[TrackBoxes]) -> TrackBoxes:
        return TrackBoxes(
            *(
                np.concatenate([getattr(p, name) for p in parts])
                for name in ("frame", "track_id", "class_name", "translation_global", "score", "num_pts")
            )
        )


@dataclass(frozen=True)
class RackBoxes:
    """Bicycle racks per frame (global frame): centre [R, 3], size [R, 3] as nuScenes [w, l, h], rotation [R, 4]
    quaternion [w, x, y, z]."""

    frame: np.ndarray
    center_global: np.ndarray
    size_wlh: np.ndarray
    rotation_global: np.ndarray

    @classmethod
    def empty(cls) -> RackBoxes:
        return cls(np.zeros(0, dtype=np.int64), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 4)))


def _str_array(values, n: int) -> np.ndarray:
    """Object array of ``n`` strings (an object array is taken as is)."""
    if isinstance(values, np.ndarray) and values.dtype == object and values.shape == (n,):
        return values
    arr = np.empty(n, dtype=object)
    arr[:] = [str(v) for v in values]
    return arr


# ---------------------------------------------------------------------------------------------- results


@dataclass
class ClassMetricData:
    """Per recall threshold values of one class (the devkit's ``TrackingMetricData``): arrays [num_thresholds]."""

    confidence: np.ndarray
    recall_hypo: np.ndarray
    metrics: dict[str, np.ndarray]

    def serialize(self) -> dict[str, list[float | None]]:
        out = {"confidence": _json_list(self.confidence), "recall_hypo": _json_list(self.recall_hypo)}
        out.update({k: _json_list(v) for k, v in self.metrics.items()})
        return out


@dataclass
class TrackingResult:
    """Per-class metrics (``label_metrics[metric][class]``), the class aggregate and the per-threshold data."""

    cfg: TrackingConfig
    label_metrics: dict[str, dict[str, float]]
    metric_data: dict[str, ClassMetricData]
    eval_time_s: float = 0.0
    info: dict[str, object] = field(default_factory=dict)

    def summary(self, metric: str) -> float:
        """Aggregate over classes: a sum (NaN ignored) for counts, else the mean of the non-NaN classes."""
        values = np.array(list(self.label_metrics[metric].values()), dtype=np.float64)
        if values.size == 0:
            return math.nan
        if metric in SUMMED_METRICS:
            return float(np.nansum(values))
        finite = values[~np.isnan(values)]
        return float(finite.mean()) if finite.size else math.nan

    def serialize(self) -> dict[str, object]:
        out: dict[str, object] = {
            "label_metrics": {m: {c: _json_float(v) for c, v in per.items()} for m, per in self.label_metrics.items()},
            "eval_time": self.eval_time_s,
            "cfg": {
                "class_range": dict(self.cfg.class_range),
                "dist_fcn": self.cfg.dist_fcn,
                "dist_th_tp": self.cfg.dist_th_tp,
                "min_recall": self.cfg.min_recall,
                "max_boxes_per_sample": self.cfg.max_boxes_per_sample,
                "metric_worst": dict(self.cfg.metric_worst),
                "num_thresholds": self.cfg.num_thresholds,
            },
            "metrics_details": {c: md.serialize() for c, md in self.metric_data.items()},
            "info": self.info,
        }
        for metric in self.label_metrics:
            out[metric] = _json_float(self.summary(metric))
        return out


def _json_float(v: float) -> float | None:
    v = float(v)
    return None if math.isnan(v) else v


def _json_list(values: np.ndarray) -> list[float | None]:
    return [_json_float(v) for v in np.asarray(values, dtype=np.float64)]
