"""The ``simulated`` detector: ground truth passed through a configurable error model.

It answers "how does detector error propagate into QA answers?" without a GPU. Per class, the model has

- localisation noise: gaussian translation error per axis with a standard deviation growing with distance,
  multiplicative log-normal size error, gaussian yaw error plus occasional heading flips by pi, gaussian velocity
  error;
- misses: a detection probability ``sigmoid(bias + per_m * distance + per_log_pts * log1p(lidar points)
  + per_visibility * (visibility bin - 4))``;
- false positives: a Poisson number per frame, placed uniformly in the ego's surroundings with class-typical sizes;
- scores: ``sigmoid(score_bias + score_per_logit * detection logit + noise)`` for true positives and
  ``sigmoid(fp_score_bias + noise)`` for false positives, so that confident detections are the easy ones.

Profiles live in stridegen/resources/detector_profiles/simulated.yaml (shipped in the package); ``bevfusion`` is
calibrated so that our own detection validation on the synthetic default reports figures close to STRIDE-QA table 6
(see docs and the calibration benchmark).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from stridegen.core.angles import wrap_angle
from stridegen.core.boxes import ROTATION_GLOBAL, Boxes
from stridegen.core.errors import ConfigError
from stridegen.core.resources import resource_path
from stridegen.core.seeding import rng_for
from stridegen.core.transforms import invert_transform, quat_multiply, transform_points, yaw_to_quat
from stridegen.formats.textfile import config_error, load_yaml
from stridegen.logs.base import Frame
from stridegen.pipeline.detect.oracle import gt_detections

PROFILES_PATH = resource_path("detector_profiles", "simulated.yaml")

# Typical sizes (l, w, h) in metres for false positives, roughly the nuScenes class means.
TYPICAL_SIZE_LWH = {
    "car": (4.6, 1.9, 1.7),
    "truck": (6.9, 2.5, 2.9),
    "bus": (11.0, 2.9, 3.5),
    "trailer": (12.0, 2.9, 3.9),
    "construction_vehicle": (6.4, 2.8, 3.2),
    "pedestrian": (0.7, 0.7, 1.8),
    "motorcycle": (2.1, 0.8, 1.5),
    "bicycle": (1.7, 0.6, 1.3),
    "traffic_cone": (0.4, 0.4, 1.1),
    "barrier": (0.5, 2.5, 1.0),
}


class ClassErrorModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    translation_std_m: float = 0.1
    translation_std_per_m: float = 0.002
    size_log_std: float = 0.08
    yaw_std_rad: float = 0.1
    yaw_flip_prob: float = 0.01
    velocity_std_mps: float = 0.5
    detect_bias: float = 4.0
    detect_per_m: float = -0.05
    detect_per_log_pts: float = 0.5
    detect_per_visibility: float = 0.5
    false_positives_per_frame: float = 0.5
    fp_range_m: float = 50.0
    score_bias: float = 0.0
    score_per_logit: float = 0.5
    score_noise: float = 0.5
    fp_score_bias: float = -2.0


class SimulatedProfile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str = ""
    default: ClassErrorModel = ClassErrorModel()
    classes: dict[str, dict[str, float]] = {}

    def for_class(self, label: str) -> ClassErrorModel:
        return self.default.model_copy(update=self.classes.get(label, {}))


def load_profiles(path: str | Path = PROFILES_PATH) -> dict[str, SimulatedProfile]:
    try:
        data = load_yaml(path, "simulated-detector profiles", config_error)  # bounded: a clear error, never exit 4
        return {name: SimulatedProfile.model_validate(p) for name, p in data["profiles"].items()}
    except (OSError, KeyError, TypeError, yaml.YAMLError, ValidationError) as exc:
        raise ConfigError(f"{path}: invalid simulated-detector profiles: {exc}") from exc


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def perturb(
    gt_global: Boxes,
    distance_m: np.ndarray,
    num_lidar_pts: np.ndarray,
    visibility: np.ndarray,
    profile: SimulatedProfile,
    T_global_from_ego: np.ndarray,
    rng: np.random.Generator,
) -> Boxes:
    """Apply the error model to ground-truth boxes of one frame (global frame) and add false positives."""
    parts = []
    labels = gt_global.label
    for label in sorted(set(labels.tolist()) | set(profile.classes)):
        if label not in TYPICAL_SIZE_LWH:
            continue
        m = profile.for_class(label)
        idx = np.flatnonzero(labels == label)
        n = idx.size
        # Draw every random number for the class up front, in a fixed order, so streams stay aligned.
        u_detect = rng.random(n)
        noise = rng.standard_normal((n, 9))
        u_flip = rng.random(n)
        vis = np.where(visibility[idx] > 0, visibility[idx], 4)
        logit = (
            m.detect_bias
            + m.detect_per_m * distance_m[idx]
            + m.detect_per_log_pts * np.log1p(num_lidar_pts[idx])
            + m.detect_per_visibility * (vis - 4)
        )
        hit = u_detect < _sigmoid(logit)
        if np.any(hit):
            b = gt_global[idx[hit]]
            z = noise[hit]
            std_t = m.translation_std_m + m.translation_std_per_m * distance_m[idx[hit]]
            center = b.center + z[:, 0:3] * std_t[:, None] * np.array([1.0, 1.0, 0.5])
            size = b.size_lwh * np.exp(z[:, 3:6] * m.size_log_std)
            yaw = b.yaw + z[:, 6] * m.yaw_std_rad + np.pi * (u_flip[hit] < m.yaw_flip_prob)
            velocity = np.nan_to_num(b.velocity) + np.c_[z[:, 7:9] * m.velocity_std_mps, np.zeros(hit.sum())]
            velocity[:, 2] = 0.0
            score = _sigmoid(
                m.score_bias + m.score_per_logit * logit[hit] + m.score_noise * rng.standard_normal(hit.sum())
            )
            keep_extras = {k: v for k, v in b.extras.items() if k in ("attribute", "category")}
            if b.full_rotation is not None:  # pitch and roll kept, the heading turned by the yaw error (about z)
                turn = yaw_to_quat(np.asarray(wrap_angle(yaw) - b.yaw, dtype=np.float64).reshape(-1))
                keep_extras[ROTATION_GLOBAL] = quat_multiply(turn.reshape(-1, 4), b.full_rotation)
            parts.append(
                b.replace(
                    center=center,
                    size_lwh=size,
                    yaw=wrap_angle(yaw),
                    velocity=velocity,
                    score=score,
                    track_id=np.full(len(b), "", dtype=object),
                    extras=keep_extras,
                )
            )
        n_fp = int(rng.poisson(m.false_positives_per_frame))
        if n_fp:
            r = m.fp_range_m * np.sqrt(rng.random(n_fp))
            phi = rng.uniform(-np.pi, np.pi, n_fp)
            size = np.asarray(TYPICAL_SIZE_LWH[label]) * np.exp(rng.standard_normal((n_fp, 3)) * 0.1)
            center_ego = np.c_[r * np.cos(phi), r * np.sin(phi), size[:, 2] / 2]
            fp_ego = Boxes(
                center_ego,
                size,
                rng.uniform(-np.pi, np.pi, n_fp),
                np.c_[rng.standard_normal((n_fp, 2)) * m.velocity_std_mps, np.zeros(n_fp)],
                label=[label] * n_fp,
                score=_sigmoid(m.fp_score_bias + m.score_noise * rng.standard_normal(n_fp)),
                frame="ego",
            )
            parts.append(fp_ego.transform(T_global_from_ego, "global"))
    if not parts:
        return Boxes.empty("global")
    out = Boxes.concat(parts)
    return out[np.argsort(-out.score, kind="stable")]


class SimulatedDetector:
    name = "simulated"
    uses_ground_truth = True  # its boxes are the log's annotations passed through an error model

    def __init__(
        self,
        profile: str = "bevfusion",
        seed: int = 0,
        profiles_path: str | Path = PROFILES_PATH,
        min_lidar_points: int = 0,
    ) -> None:
        profiles = load_profiles(profiles_path)
        if profile not in profiles:
            raise ConfigError(f"unknown simulated-detector profile {profile!r}; available: {sorted(profiles)}")
        self.profile_name = profile
        self.profile = profiles[profile]
        self.seed = seed
        self.min_lidar_points = min_lidar_points

    def detect(self, frame: Frame) -> Boxes:
        ann = frame.annotations()
        keep = (ann.boxes.label != "") & (ann.num_lidar_pts >= self.min_lidar_points)
        ann = ann.select(keep)
        gt = gt_detections(ann)
        center_ego = transform_points(invert_transform(frame.T_global_from_ego), gt.center)
        distance = np.hypot(center_ego[:, 0], center_ego[:, 1])
        rng = rng_for(self.seed, frame.scene_token, "detect", self.profile_name, frame.token)
        return perturb(gt, distance, ann.num_lidar_pts, ann.visibility, self.profile, frame.T_global_from_ego, rng)
