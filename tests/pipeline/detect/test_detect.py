"""Detector backends: oracle, simulated (error model statistics, determinism), registry errors."""

from __future__ import annotations

import numpy as np
import pytest

from stridegen.core.angles import wrap_angle
from stridegen.core.boxes import Boxes
from stridegen.core.errors import ConfigError
from stridegen.formats.results_json import LIDAR_ONLY_META
from stridegen.pipeline.detect import make_detector
from stridegen.pipeline.detect.simulated import ClassErrorModel, SimulatedProfile, load_profiles, perturb
from tests.shared_data import NUSCENES_DEMO as DEMO
from tests.shared_data import needs_nuscenes_demo


def _gt(n, label="car", seed=0):
    rng = np.random.default_rng(seed)
    return Boxes(
        np.c_[rng.uniform(-30, 30, (n, 2)), np.ones(n)],
        np.tile([4.5, 1.9, 1.6], (n, 1)),
        rng.uniform(-np.pi, np.pi, n),
        np.c_[rng.normal(0, 5, (n, 2)), np.zeros(n)],
        label=[label] * n,
        track_id=[str(i) for i in range(n)],
    )


def test_perfect_profile_reproduces_ground_truth():
    gt = _gt(50)
    out = perturb(
        gt,
        gt.distance_xy(),
        np.full(50, 100),
        np.full(50, 4),
        load_profiles()["perfect"],
        np.eye(4),
        np.random.default_rng(0),
    )
    order = np.argsort(out.center[:, 0])
    ref = np.argsort(gt.center[:, 0])
    np.testing.assert_allclose(out.center[order], gt.center[ref])
    np.testing.assert_allclose(out.yaw[order], wrap_angle(gt.yaw[ref]))


def test_error_statistics_follow_the_model():
    # GT on a 10 m grid, so each detection's GT is its nearest grid point.
    g = np.arange(100) * 10.0
    xy = np.stack(np.meshgrid(g, g), -1).reshape(-1, 2)
    n = len(xy)
    gt = Boxes(
        np.c_[xy, np.ones(n)], np.tile([4.5, 1.9, 1.6], (n, 1)), np.zeros(n), np.zeros((n, 3)), label=["car"] * n
    )
    model = ClassErrorModel(
        translation_std_m=0.2,
        translation_std_per_m=0.0,
        size_log_std=0.1,
        yaw_std_rad=0.1,
        yaw_flip_prob=0.0,
        velocity_std_mps=1.0,
        detect_bias=50,
        detect_per_m=0,
        detect_per_log_pts=0,
        detect_per_visibility=0,
        false_positives_per_frame=0,
    )
    out = perturb(
        gt,
        np.zeros(n),
        np.zeros(n),
        np.full(n, 4),
        SimulatedProfile(default=model),
        np.eye(4),
        np.random.default_rng(1),
    )
    assert len(out) == n
    nearest = np.round(out.center[:, :2] / 10.0) * 10.0
    err = out.center[:, :2] - nearest
    assert np.std(err) == pytest.approx(0.2, rel=0.05)
    assert np.std(np.log(out.size_lwh / [4.5, 1.9, 1.6])) == pytest.approx(0.1, rel=0.05)
    assert np.std(out.yaw) == pytest.approx(0.1, rel=0.05)
    assert np.std(out.velocity[:, :2]) == pytest.approx(1.0, rel=0.05)


def test_misses_depend_on_distance_and_false_positives_appear():
    n = 4000
    gt = _gt(n)
    model = ClassErrorModel(
        detect_bias=2.0,
        detect_per_m=-0.1,
        detect_per_log_pts=0.0,
        detect_per_visibility=0.0,
        false_positives_per_frame=3.0,
    )
    near = perturb(
        gt,
        np.full(n, 0.0),
        np.zeros(n),
        np.full(n, 4),
        SimulatedProfile(default=model),
        np.eye(4),
        np.random.default_rng(2),
    )
    far = perturb(
        gt,
        np.full(n, 40.0),
        np.zeros(n),
        np.full(n, 4),
        SimulatedProfile(default=model),
        np.eye(4),
        np.random.default_rng(2),
    )
    p_near, p_far = 1 / (1 + np.exp(-2.0)), 1 / (1 + np.exp(2.0))
    assert (len(near) - 3) / n == pytest.approx(p_near, abs=0.03)
    assert (len(far) - 3) / n == pytest.approx(p_far, abs=0.03)
    assert np.all(np.diff(near.score) <= 0)  # sorted by descending score


def test_registry_errors():
    with pytest.raises(ConfigError, match="unknown detector"):
        make_detector("nope")
    with pytest.raises(ConfigError, match="profile"):
        make_detector("simulated", profile="nope")


@needs_nuscenes_demo
def test_oracle_and_simulated_on_nuscenes_demo():
    from stridegen.logs import open_log

    frame = open_log(DEMO).scenes()[0].frames[0]
    gt = frame.annotations()
    oracle = make_detector("oracle").detect(frame)
    assert len(oracle) == int(np.sum(gt.boxes.label != "")) == 68
    assert np.all(oracle.score == 1.0) and oracle.frame == "global"
    a = make_detector("simulated", profile="bevfusion", seed=3).detect(frame)
    b = make_detector("simulated", profile="bevfusion", seed=3).detect(frame)
    c = make_detector("simulated", profile="bevfusion", seed=4).detect(frame)
    np.testing.assert_array_equal(a.center, b.center)
    assert len(a) != len(c) or not np.allclose(a.center, c.center)


@needs_nuscenes_demo
def test_precomputed_round_trips_a_results_file(tmp_path):
    import json

    from stridegen.core.errors import PredictionFormatError
    from stridegen.logs import open_log

    frame = open_log(DEMO).scenes()[0].frames[0]
    gt = make_detector("oracle").detect(frame)
    quat = gt.extras["rotation_global"] if "rotation_global" in gt.extras else gt.rotation_quat()
    results = {
        frame.token: [
            {
                "sample_token": frame.token,
                "translation": gt.center[i].tolist(),
                "size": gt.size_lwh[i, [1, 0, 2]].tolist(),
                "rotation": np.asarray(quat[i]).tolist(),
                "velocity": gt.velocity[i, :2].tolist(),
                "detection_name": str(gt.label[i]),
                "detection_score": 0.5 + 0.001 * i,
                "attribute_name": "",
            }
            for i in range(len(gt))
        ]
    }
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"meta": LIDAR_ONLY_META, "results": results}))
    det = make_detector("precomputed", path=path).detect(frame)
    assert len(det) == len(gt)
    order = np.argsort(det.score)
    np.testing.assert_allclose(det.center[order], gt.center, atol=1e-9)
    np.testing.assert_allclose(det.size_lwh[order], gt.size_lwh, atol=1e-9)
    np.testing.assert_allclose(np.cos(det.yaw[order] - gt.yaw), 1.0, atol=1e-9)
    assert make_detector("precomputed", path=path, min_score=0.55).detect(frame).score.min() >= 0.55
    empty = tmp_path / "other.json"
    empty.write_text(json.dumps({"meta": LIDAR_ONLY_META, "results": {"not-a-sample": []}}))
    with pytest.raises(PredictionFormatError, match="no entry for sample"):
        make_detector("precomputed", path=empty).detect(frame)
    bad = tmp_path / "bad.json"
    results[frame.token][0]["detection_name"] = "spaceship"
    bad.write_text(json.dumps({"meta": LIDAR_ONLY_META, "results": results}))
    with pytest.raises(PredictionFormatError, match=r"bad\.json"):
        make_detector("precomputed", path=bad)
