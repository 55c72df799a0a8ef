"""nuScenes detection evaluation: configuration and metric data classes.

Reference behaviour (read, not copied): nuscenes-devkit 1.2.0 ``nuscenes/eval/detection/data_classes.py``
(``DetectionConfig``, ``DetectionMetricData``, ``DetectionMetrics``) and ``nuscenes/eval/detection/evaluate.py``
(TP-error exemptions). The metric definitions are those of Caesar et al., "nuScenes: A multimodal dataset for
autonomous driving", CVPR 2020, Sec. 4.1.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from stridegen.core.errors import ConfigError
from stridegen.core.vocabulary import DETECTION_NAMES

TP_METRICS: tuple[str, ...] = ("trans_err", "scale_err", "orient_err", "vel_err", "attr_err")
TP_METRIC_SHORT = {
    "trans_err": "mATE",
    "scale_err": "mASE",
    "orient_err": "mAOE",
    "vel_err": "mAVE",
    "attr_err": "mAAE",
}
PRETTY_CLASS_NAMES = {
    "car": "Car",
    "truck": "Truck",
    "bus": "Bus",
    "trailer": "Trailer",
    "construction_vehicle": "Constr. Veh.",
    "pedestrian": "Pedestrian",
    "motorcycle": "Motorcycle",
    "bicycle": "Bicycle",
    "traffic_cone": "Traffic Cone",
    "barrier": "Barrier",
}
# TP errors that are not defined for a class (devkit evaluate.py, DetectionEval.evaluate): cones have no
# attributes, no velocity and no meaningful orientation; barriers have no attributes and no velocity.
EXEMPT_TP_METRICS: dict[str, tuple[str, ...]] = {
    "traffic_cone": ("attr_err", "vel_err", "orient_err"),
    "barrier": ("attr_err", "vel_err"),
}
# Barrier orientation is only defined up to 180 degrees (devkit algo.py, accumulate).
HALF_PERIOD_CLASSES: tuple[str, ...] = ("barrier",)
N_RECALL_POINTS = 101  # DetectionMetricData.nelem

# The values of nuscenes-devkit 1.2.0 nuscenes/eval/detection/configs/detection_cvpr_2019.json (also written out
# as configs/detection_cvpr_2019.yaml; a test checks that the three agree).
CVPR_2019: dict = {
    "class_range": {
        "car": 50,
        "truck": 50,
        "bus": 50,
        "trailer": 50,
        "construction_vehicle": 50,
        "pedestrian": 40,
        "motorcycle": 40,
        "bicycle": 40,
        "traffic_cone": 30,
        "barrier": 30,
    },
    "dist_fcn": "center_distance",
    "dist_ths": [0.5, 1.0, 2.0, 4.0],
    "dist_th_tp": 2.0,
    "min_recall": 0.1,
    "min_precision": 0.1,
    "max_boxes_per_sample": 500,
    "mean_ap_weight": 5,
}


# ============================================================================================== config


@dataclass(frozen=True)
class DetectionConfig:
    """Detection evaluation settings (the fields of the devkit's ``DetectionConfig``)."""

    class_range: dict[str, float]
    dist_fcn: str = "center_distance"
    dist_ths: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0)
    dist_th_tp: float = 2.0
    min_recall: float = 0.1
    min_precision: float = 0.1
    max_boxes_per_sample: int = 500
    mean_ap_weight: float = 5

    def __post_init__(self) -> None:
        if set(self.class_range) != set(DETECTION_NAMES):
            raise ConfigError(
                f"class_range must name exactly the 10 detection classes {list(DETECTION_NAMES)}, "
                f"got {sorted(self.class_range)}"
            )
        if self.dist_fcn != "center_distance":
            raise ConfigError(f"unknown dist_fcn {self.dist_fcn!r}; only 'center_distance' is supported")
        if len(self.dist_ths) == 0 or any(not np.isfinite(t) or t <= 0 for t in self.dist_ths):
            raise ConfigError(f"dist_ths must be positive finite numbers, got {list(self.dist_ths)}")
        if self.dist_th_tp not in self.dist_ths:
            raise ConfigError(f"dist_th_tp {self.dist_th_tp} must be one of dist_ths {list(self.dist_ths)}")
        if not 0 <= self.min_recall <= 1:
            raise ConfigError(f"min_recall must be in [0, 1], got {self.min_recall}")
        if not 0 <= self.min_precision < 1:
            raise ConfigError(f"min_precision must be in [0, 1), got {self.min_precision}")
        if self.max_boxes_per_sample < 1:
            raise ConfigError(f"max_boxes_per_sample must be >= 1, got {self.max_boxes_per_sample}")

    @property
    def class_names(self) -> tuple[str, ...]:
        return tuple(self.class_range)

    @classmethod
    def from_dict(cls, content: dict) -> DetectionConfig:
        missing = [k for k in CVPR_2019 if k not in content]
        if missing:
            raise ConfigError(f"detection config lacks {missing}")
        unknown = sorted(set(content) - set(CVPR_2019))
        if unknown:
            raise ConfigError(f"detection config has unknown keys {unknown}")
        return cls(
            class_range={str(k): float(v) for k, v in content["class_range"].items()},
            dist_fcn=str(content["dist_fcn"]),
            dist_ths=tuple(float(t) for t in content["dist_ths"]),
            dist_th_tp=float(content["dist_th_tp"]),
            min_recall=float(content["min_recall"]),
            min_precision=float(content["min_precision"]),
            max_boxes_per_sample=int(content["max_boxes_per_sample"]),
            mean_ap_weight=float(content["mean_ap_weight"]),
        )

    @classmethod
    def from_yaml(cls, path: str | Path) -> DetectionConfig:
        from stridegen.formats.textfile import config_error, load_yaml

        content = load_yaml(path, "detection config", config_error)
        if not isinstance(content, dict):
            raise ConfigError(f"{path}: detection config must be a mapping")
        try:
            return cls.from_dict(content)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from exc

    @classmethod
    def cvpr_2019(cls) -> DetectionConfig:
        return cls.from_dict(CVPR_2019)

    def to_dict(self) -> dict:
        return {
            "class_range": dict(self.class_range),
            "dist_fcn": self.dist_fcn,
            "dist_ths": list(self.dist_ths),
            "dist_th_tp": self.dist_th_tp,
            "min_recall": self.min_recall,
            "min_precision": self.min_precision,
            "max_boxes_per_sample": self.max_boxes_per_sample,
            "mean_ap_weight": self.mean_ap_weight,
        }


# ============================================================================================== metric data


@dataclass
class DetectionMetricData:
    """Precision, confidence and TP errors of one class at one distance threshold, on 101 recall points."""

    recall: np.ndarray
    precision: np.ndarray
    confidence: np.ndarray
    trans_err: np.ndarray
    vel_err: np.ndarray
    scale_err: np.ndarray
    orient_err: np.ndarray
    attr_err: np.ndarray

    @classmethod
    def no_predictions(cls) -> DetectionMetricData:
        """The devkit's result for a class without ground truth or without any match."""
        ones = np.ones(N_RECALL_POINTS)
        return cls(
            np.linspace(0, 1, N_RECALL_POINTS),
            np.zeros(N_RECALL_POINTS),
            np.zeros(N_RECALL_POINTS),
            ones.copy(),
            ones.copy(),
            ones.copy(),
            ones.copy(),
            ones.copy(),
        )

    @property
    def max_recall_ind(self) -> int:
        """Index of the last recall point with a non-zero confidence (0 when there is none)."""
        nonzero = np.flatnonzero(self.confidence)
        return int(nonzero[-1]) if len(nonzero) else 0

    @property
    def max_recall(self) -> float:
        return float(self.recall[self.max_recall_ind])

    def to_dict(self) -> dict:
        return {name: getattr(self, name).tolist() for name in ("recall", "precision", "confidence", *TP_METRICS)}


# ============================================================================================== metrics


@dataclass
class DetectionMetrics:
    """Per-class APs and TP errors, and their summaries (mAP, mTP errors, NDS) as the devkit defines them."""

    cfg: DetectionConfig
    label_aps: dict[str, dict[float, float]] = field(default_factory=dict)
    label_tp_errors: dict[str, dict[str, float]] = field(default_factory=dict)
    eval_time_s: float | None = None

    @property
    def mean_dist_aps(self) -> dict[str, float]:
        return {c: float(np.mean(list(d.values()))) for c, d in self.label_aps.items()}

    @property
    def mean_ap(self) -> float:
        return float(np.mean(list(self.mean_dist_aps.values())))

    @property
    def tp_errors(self) -> dict[str, float]:
        """Mean over classes of each TP error, ignoring NaN (exempt classes); NaN if every class is exempt."""
        out = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # nanmean of all-NaN -> NaN, as in the devkit
            for metric in TP_METRICS:
                values = [self.label_tp_errors[c][metric] for c in self.cfg.class_names]
                out[metric] = float(np.nanmean(values))
        return out

    @property
    def tp_scores(self) -> dict[str, float]:
        """1 - error, bounded below by 0; a NaN error scores 0 (devkit: Python max(0.0, nan) is 0.0)."""
        scores = {}
        for metric, err in self.tp_errors.items():
            score = 1.0 - err
            scores[metric] = score if score > 0.0 else 0.0
        return scores

    @property
    def nd_score(self) -> float:
        """NDS = (w * mAP + sum over the 5 TP metrics of max(0, 1 - mTP)) / (w + 5)."""
        scores = self.tp_scores
        total = float(self.cfg.mean_ap_weight * self.mean_ap + np.sum(list(scores.values())))
        return total / float(self.cfg.mean_ap_weight + len(scores))

    def to_dict(self) -> dict:
        return {
            "label_aps": {c: {str(t): v for t, v in d.items()} for c, d in self.label_aps.items()},
            "mean_dist_aps": self.mean_dist_aps,
            "mean_ap": self.mean_ap,
            "label_tp_errors": self.label_tp_errors,
            "tp_errors": self.tp_errors,
            "tp_scores": self.tp_scores,
            "nd_score": self.nd_score,
            "eval_time": self.eval_time_s,
            "cfg": self.cfg.to_dict(),
        }

    def class_table(self) -> list[dict]:
        """One row per class: AP at each threshold, mean AP and the five TP errors (NaN where exempt)."""
        rows = []
        for c in self.cfg.class_names:
            row: dict = {"class": c}
            row.update({f"AP@{t:g}": self.label_aps[c][t] for t in self.cfg.dist_ths})
            row["AP"] = self.mean_dist_aps[c]
            row.update({TP_METRIC_SHORT[m][1:]: self.label_tp_errors[c][m] for m in TP_METRICS})
            rows.append(row)
        return rows

    def summary_row(self) -> dict[str, float]:
        """The short row of nuScenes papers' tables (e.g. STRIDE-QA Table 6): mAP, mATE..mAAE, NDS."""
        row = {"mAP": self.mean_ap}
        row.update({TP_METRIC_SHORT[m]: v for m, v in self.tp_errors.items()})
        row["NDS"] = self.nd_score
        return row
