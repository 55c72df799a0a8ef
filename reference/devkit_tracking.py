"""nuScenes tracking evaluation by nuscenes-devkit 1.2.0 itself, as the reference of stridegen.eval.tracking.

Synthetic nuScenes-like records (``make_synthetic``: births, deaths, occlusion gaps, ID switches, false positives,
bike racks) go through the devkit's own loaders (``add_center_dist``, ``filter_eval_boxes``, ``create_tracks``)
and ``TrackingEval.evaluate`` (``run_devkit``) and through stridegen's evaluator (``run_stridegen``); ``compare``
lists every metric that differs. The devkit needs a ``NuScenes`` object only to look up samples, scenes, ego poses
and bike racks: a small stand-in (``FakeNuScenes``) serves those tables. The devkit is imported when called.
Used by the tracking parity tests (tests/eval/tracking/test_tracking.py) and benchmarks/bench_tracking.py.
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass, field

import numpy as np

from stridegen.core.vocabulary import TRACKING_CLASSES
from stridegen.eval.tracking.data import (
    TRACKING_METRICS,
    RackBoxes,
    Timeline,
    TrackBoxes,
    TrackingConfig,
    TrackingResult,
)
from stridegen.eval.tracking.evaluate import evaluate_tracking

_CLASS_WEIGHTS = np.array([0.08, 0.06, 0.4, 0.06, 0.25, 0.05, 0.1])  # order of TRACKING_CLASSES


@dataclass
class SyntheticTracking:
    """Raw nuScenes-like records: samples per scene, GT boxes, predicted boxes, bike racks."""

    scene_names: list[str]
    samples: list[dict] = field(default_factory=list)  # token, scene, timestamp, ego (3,)
    gt: list[dict] = field(default_factory=list)  # sample_token, translation, tracking_id, tracking_name, num_pts
    pred: list[dict] = field(default_factory=list)  # sample_token, translation, tracking_id, tracking_name, score
    racks: list[dict] = field(default_factory=list)  # sample_token, translation, size (wlh), rotation


def make_synthetic(
    seed: int, n_scenes: int, n_frames: int, n_tracks: int, classes_without_pred: tuple[str, ...] = ("trailer",)
) -> SyntheticTracking:
    """Scenes with births, deaths, occlusion gaps (zero-point GT boxes), ID switches, false positives, dropped
    predictions, whole samples without predictions, tracks leaving the class range and bikes in racks."""
    from nuscenes.utils.splits import create_splits_scenes

    rng = np.random.default_rng(seed)
    names = create_splits_scenes()["val"][:n_scenes]
    data = SyntheticTracking(scene_names=list(names))
    for s in range(n_scenes):
        _make_scene(rng, data, s, n_frames, n_tracks, classes_without_pred)
    return data


def _make_scene(
    rng: np.random.Generator,
    data: SyntheticTracking,
    s: int,
    n_frames: int,
    n_tracks: int,
    classes_without_pred: tuple[str, ...],
) -> None:
    t0 = 1_500_000_000_000_000 + s * 100_000_000
    steps = rng.integers(450_000, 550_001, size=n_frames)
    steps[0] = 0
    timestamps = t0 + np.cumsum(steps)
    ego_v = rng.uniform(-6, 6, size=2)
    ego0 = rng.uniform(-500, 2000, size=2)
    tokens = [f"s{s:03d}f{f:03d}" for f in range(n_frames)]
    ego = np.zeros((n_frames, 3))
    ego[:, :2] = ego0 + ego_v * ((timestamps - t0) * 1e-6)[:, None]
    for f in range(n_frames):
        data.samples.append({"token": tokens[f], "scene": s, "timestamp": int(timestamps[f]), "ego": ego[f]})
    empty_pred_frames = set(rng.choice(n_frames, size=max(1, n_frames // 15), replace=False).tolist())
    # Bike rack near the ego path, with parked bicycles in it.
    rack_center = np.r_[ego[n_frames // 2, :2] + rng.uniform(-15, 15, size=2), 0.5]
    rack_yaw = rng.uniform(-np.pi, np.pi)
    rack_rot = [math.cos(rack_yaw / 2), 0.0, 0.0, math.sin(rack_yaw / 2)]
    for f in range(n_frames):
        data.racks.append(
            {
                "sample_token": tokens[f],
                "translation": rack_center.tolist(),
                "size": [2.0, 6.0, 1.5],
                "rotation": rack_rot,
            }
        )
    next_pred_id = [0]

    def new_pred_id() -> str:
        next_pred_id[0] += 1
        return f"p{s}_{next_pred_id[0]}"

    for k in range(n_tracks):
        cls = str(rng.choice(TRACKING_CLASSES, p=_CLASS_WEIGHTS / _CLASS_WEIGHTS.sum()))
        if rng.random() < 0.5:  # present for (almost) the whole scene
            birth = int(rng.integers(0, max(1, n_frames // 8)))
            death = n_frames - int(rng.integers(0, max(1, n_frames // 8)))
        else:  # born and gone within the scene
            birth = int(rng.integers(0, n_frames - 2))
            death = int(rng.integers(birth + 2, n_frames + 1))
        in_rack = cls == "bicycle" and k % 3 == 0
        speed = 0.0 if in_rack else {"pedestrian": 1.4, "bicycle": 4.0}.get(cls, 8.0)
        heading = rng.uniform(-np.pi, np.pi)
        if in_rack:
            start = rack_center[:2] + rng.uniform(-0.5, 0.5, size=2)
        else:
            start = ego[birth, :2] + rng.uniform(-55, 55, size=2)
        vel = speed * np.array([math.cos(heading), math.sin(heading)])
        gid = f"g{s}_{k}"
        pid = new_pred_id()
        base_score = rng.uniform(0.2, 1.0)
        swap_at = int(rng.integers(birth + 1, death)) if rng.random() < 0.25 and death - birth > 2 else -1
        for f in range(birth, death):
            dt = (timestamps[f] - timestamps[birth]) * 1e-6
            pos = np.r_[start + vel * dt + rng.normal(0, 0.05, size=2), 1.0]
            occluded = rng.random() < 0.1
            if rng.random() >= 0.04:  # GT boxes missing from a sample (interpolated)
                data.gt.append(
                    {
                        "sample_token": tokens[f],
                        "translation": pos.tolist(),
                        "tracking_id": gid,
                        "tracking_name": cls,
                        "num_pts": 0 if occluded else int(rng.integers(1, 300)),
                    }
                )
            if cls in classes_without_pred or f in empty_pred_frames:
                continue
            if f == swap_at:
                pid = new_pred_id()  # identity switch: the tracker starts a new id on the same object
            if rng.random() < 0.12:  # missed detection
                continue
            noise = rng.normal(0, 0.35, size=2) if rng.random() > 0.05 else rng.normal(0, 2.5, size=2)
            pcls = cls if rng.random() > 0.03 else str(rng.choice(TRACKING_CLASSES))
            data.pred.append(
                {
                    "sample_token": tokens[f],
                    "translation": (pos + np.r_[noise, 0]).tolist(),
                    "tracking_id": pid,
                    "tracking_name": pcls,
                    "score": float(np.clip(base_score + rng.normal(0, 0.1), 0.01, 1.0)),
                }
            )
    # False-positive tracks.
    for _ in range(max(1, n_tracks // 5)):
        cls = str(rng.choice(TRACKING_CLASSES, p=_CLASS_WEIGHTS / _CLASS_WEIGHTS.sum()))
        if cls in classes_without_pred:
            continue
        birth = int(rng.integers(0, n_frames - 1))
        death = int(rng.integers(birth + 1, min(n_frames, birth + 8) + 1))
        start = ego[birth, :2] + rng.uniform(-45, 45, size=2)
        pid = new_pred_id()
        score = rng.uniform(0.05, 0.6)
        for f in range(birth, death):
            if f in empty_pred_frames or rng.random() < 0.2:
                continue
            pos = np.r_[start + rng.normal(0, 0.3, size=2), 1.0]
            data.pred.append(
                {
                    "sample_token": tokens[f],
                    "translation": pos.tolist(),
                    "tracking_id": pid,
                    "tracking_name": cls,
                    "score": float(np.clip(score + rng.normal(0, 0.05), 0.01, 1)),
                }
            )


# ---------------------------------------------------------------------------------------------- stridegen side


def to_stridegen(data: SyntheticTracking) -> tuple[TrackBoxes, TrackBoxes, Timeline, RackBoxes]:
    frame_of = {smp["token"]: i for i, smp in enumerate(data.samples)}
    # Timeline.__post_init__ turns the lists into arrays.
    timeline = Timeline(
        scene=[smp["scene"] for smp in data.samples],  # type: ignore[arg-type]
        timestamp_us=[smp["timestamp"] for smp in data.samples],  # type: ignore[arg-type]
        ego_translation_global=np.array([smp["ego"] for smp in data.samples]).reshape(-1, 3),
        token=np.array([smp["token"] for smp in data.samples], dtype=object),
    )
    gt = TrackBoxes.create(
        frame=[frame_of[b["sample_token"]] for b in data.gt],
        track_id=[b["tracking_id"] for b in data.gt],
        class_name=[b["tracking_name"] for b in data.gt],
        translation_global=np.array([b["translation"] for b in data.gt]).reshape(-1, 3),
        num_pts=[b["num_pts"] for b in data.gt],
    )
    pred = TrackBoxes.create(
        frame=[frame_of[b["sample_token"]] for b in data.pred],
        track_id=[b["tracking_id"] for b in data.pred],
        class_name=[b["tracking_name"] for b in data.pred],
        translation_global=np.array([b["translation"] for b in data.pred]).reshape(-1, 3),
        score=[b["score"] for b in data.pred],
    )
    racks = RackBoxes(
        frame=np.array([frame_of[r["sample_token"]] for r in data.racks], dtype=np.int64),
        center_global=np.array([r["translation"] for r in data.racks]).reshape(-1, 3),
        size_wlh=np.array([r["size"] for r in data.racks]).reshape(-1, 3),
        rotation_global=np.array([r["rotation"] for r in data.racks]).reshape(-1, 4),
    )
    return gt, pred, timeline, racks


def run_stridegen(data: SyntheticTracking, cfg: TrackingConfig | None = None) -> TrackingResult:
    gt, pred, timeline, racks = to_stridegen(data)
    return evaluate_tracking(gt, pred, timeline, cfg or TrackingConfig(), racks)


# ---------------------------------------------------------------------------------------------- devkit side


class FakeNuScenes:
    """The few ``NuScenes`` tables the devkit's tracking loaders read: sample, scene, sample_data, ego_pose,
    sample_annotation (bike racks only)."""

    def __init__(self, data: SyntheticTracking) -> None:
        self.version = "v1.0-trainval"
        self.dataroot = "/nonexistent"
        self.tables: dict[str, dict[str, dict]] = {
            k: {} for k in ("sample", "scene", "sample_data", "ego_pose", "sample_annotation")
        }
        by_scene: dict[int, list[dict]] = {}
        for smp in data.samples:
            by_scene.setdefault(smp["scene"], []).append(smp)
        racks_by_sample: dict[str, list[str]] = {}
        for i, r in enumerate(data.racks):
            token = f"rack{i}"
            self.tables["sample_annotation"][token] = {
                "token": token,
                "category_name": "static_object.bicycle_rack",
                "translation": r["translation"],
                "size": r["size"],
                "rotation": r["rotation"],
            }
            racks_by_sample.setdefault(r["sample_token"], []).append(token)
        for s, samples in by_scene.items():
            scene_token = f"scene{s}"
            self.tables["scene"][scene_token] = {
                "token": scene_token,
                "name": data.scene_names[s],
                "first_sample_token": samples[0]["token"],
                "last_sample_token": samples[-1]["token"],
            }
            for f, smp in enumerate(samples):
                tok = smp["token"]
                self.tables["sample"][tok] = {
                    "token": tok,
                    "scene_token": scene_token,
                    "timestamp": smp["timestamp"],
                    "next": samples[f + 1]["token"] if f + 1 < len(samples) else "",
                    "prev": samples[f - 1]["token"] if f else "",
                    "data": {"LIDAR_TOP": "sd" + tok},
                    "anns": racks_by_sample.get(tok, []),
                }
                self.tables["sample_data"]["sd" + tok] = {"token": "sd" + tok, "ego_pose_token": "ep" + tok}
                self.tables["ego_pose"]["ep" + tok] = {
                    "token": "ep" + tok,
                    "translation": list(smp["ego"]),
                    "rotation": [1.0, 0.0, 0.0, 0.0],
                }

    def get(self, table: str, token: str) -> dict:
        return self.tables[table][token]


def run_devkit(data: SyntheticTracking, cfg_dict: dict | None = None):
    """The devkit's own pipeline on the same records; returns (TrackingMetrics, TrackingMetricDataList)."""
    from nuscenes.eval.common.config import config_factory
    from nuscenes.eval.common.data_classes import EvalBoxes
    from nuscenes.eval.common.loaders import add_center_dist, filter_eval_boxes
    from nuscenes.eval.tracking.data_classes import TrackingBox
    from nuscenes.eval.tracking.data_classes import TrackingConfig as DevkitConfig
    from nuscenes.eval.tracking.evaluate import TrackingEval
    from nuscenes.eval.tracking.loaders import create_tracks

    cfg = DevkitConfig.deserialize(cfg_dict) if cfg_dict else config_factory("tracking_nips_2019")
    nusc = FakeNuScenes(data)
    gt_boxes, pred_boxes = EvalBoxes(), EvalBoxes()
    gt_by_sample: dict[str, list] = {smp["token"]: [] for smp in data.samples}
    pred_by_sample: dict[str, list] = {smp["token"]: [] for smp in data.samples}
    for b in data.gt:
        gt_by_sample[b["sample_token"]].append(
            TrackingBox(
                sample_token=b["sample_token"],
                translation=tuple(b["translation"]),
                size=(2.0, 4.0, 1.5),
                rotation=(1.0, 0.0, 0.0, 0.0),
                velocity=(0.0, 0.0),
                num_pts=b["num_pts"],
                tracking_id=b["tracking_id"],
                tracking_name=b["tracking_name"],
                tracking_score=-1.0,
            )
        )
    for b in data.pred:
        pred_by_sample[b["sample_token"]].append(
            TrackingBox(
                sample_token=b["sample_token"],
                translation=tuple(b["translation"]),
                size=(2.0, 4.0, 1.5),
                rotation=(1.0, 0.0, 0.0, 0.0),
                velocity=(0.0, 0.0),
                tracking_id=b["tracking_id"],
                tracking_name=b["tracking_name"],
                tracking_score=float(b["score"]),
            )
        )
    for token in gt_by_sample:
        gt_boxes.add_boxes(token, gt_by_sample[token])
        pred_boxes.add_boxes(token, pred_by_sample[token])
    gt_boxes = filter_eval_boxes(nusc, add_center_dist(nusc, gt_boxes), cfg.class_range)
    pred_boxes = filter_eval_boxes(nusc, add_center_dist(nusc, pred_boxes), cfg.class_range)
    evaluator = TrackingEval.__new__(TrackingEval)
    evaluator.cfg = cfg
    evaluator.verbose = False
    evaluator.render_classes = None
    evaluator.output_dir = tempfile.gettempdir()
    evaluator.tracks_gt = create_tracks(gt_boxes, nusc, "val", gt=True)
    evaluator.tracks_pred = create_tracks(pred_boxes, nusc, "val", gt=False)
    return evaluator.evaluate()


# ---------------------------------------------------------------------------------------------- comparison


def _close(a: float, b: float, atol: float) -> bool:
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= atol


def compare(ours: TrackingResult, devkit_metrics, devkit_md, atol: float = 1e-6) -> list[str]:
    """Every reported metric (per class and aggregated) and every per-threshold value; returns mismatches."""
    bad = []
    for metric in TRACKING_METRICS:
        for cls in ours.cfg.class_names:
            a, b = ours.label_metrics[metric][cls], devkit_metrics.label_metrics[metric][cls]
            if not _close(a, b, atol):
                bad.append(f"{metric}/{cls}: ours {a} devkit {b}")
        a, b = ours.summary(metric), devkit_metrics.compute_metric(metric, "all")
        if not _close(a, b, atol):
            bad.append(f"{metric}/all: ours {a} devkit {b}")
    for cls in ours.cfg.class_names:
        md = devkit_md[cls]
        ours_md = ours.metric_data[cls]
        fields = {"confidence": ours_md.confidence, "recall_hypo": ours_md.recall_hypo, **ours_md.metrics}
        for name, values in fields.items():
            if name not in ("confidence", "recall_hypo") and name not in md.metrics:
                continue
            theirs = md.get_metric(name)
            for k, (a, b) in enumerate(zip(values, theirs, strict=True)):
                if not _close(a, b, atol):
                    bad.append(f"{cls}.{name}[{k}]: ours {a} devkit {b}")
                    break
    return bad
