"""Detection metrics: parity with nuscenes-devkit 1.2.0 on randomised inputs, known answers, filtering."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from reference.devkit_detection import to_eval_boxes  # our boxes -> devkit EvalBoxes
from stridegen.core.errors import ConfigError, GeometryError
from stridegen.core.transforms import quat_multiply, yaw_to_quat
from stridegen.core.vocabulary import ATTRIBUTE_NAMES, DETECTION_NAMES
from stridegen.eval.detection.algo import calc_ap, calc_tp, cummean
from stridegen.eval.detection.data import CVPR_2019, TP_METRICS, DetectionConfig
from stridegen.eval.detection.evaluate import evaluate_detection
from stridegen.eval.detection.gt import SampleContext, centers_in_boxes, filter_eval_boxes
from stridegen.formats.detection_boxes import DetectionBoxes
from tests.shared_data import NUSCENES_DEMO as DEMO
from tests.shared_data import REPO, needs_nuscenes_demo

try:  # nuscenes-devkit is the reference: the tests that use it are marked `devkit`, the others run without it
    from nuscenes.eval.common.data_classes import EvalBoxes
    from nuscenes.eval.detection import algo as devkit_algo
    from nuscenes.eval.detection.data_classes import DetectionBox
    from nuscenes.eval.detection.data_classes import DetectionConfig as DevkitConfig
    from nuscenes.eval.detection.evaluate import DetectionEval
except ImportError:
    pass

TOL = 1e-9

ATTRS_OF_CLASS = {
    "pedestrian": ATTRIBUTE_NAMES[0:3],
    "bicycle": ATTRIBUTE_NAMES[3:5],
    "motorcycle": ATTRIBUTE_NAMES[3:5],
    "barrier": (),
    "traffic_cone": (),
}


# ---------------------------------------------------------------------------------------------- devkit reference


def devkit_evaluate(gt: DetectionBoxes, pred: DetectionBoxes, cfg_dict: dict = CVPR_2019):
    """The devkit's own DetectionEval.evaluate on EvalBoxes (bypassing __init__, which needs a NuScenes db)."""
    ev = DetectionEval.__new__(DetectionEval)
    ev.cfg = DevkitConfig.deserialize(cfg_dict)
    ev.gt_boxes, ev.pred_boxes, ev.verbose = to_eval_boxes(gt), to_eval_boxes(pred), False
    with np.errstate(all="ignore"):
        return ev.evaluate()


def assert_parity(gt: DetectionBoxes, pred: DetectionBoxes, cfg_dict: dict = CVPR_2019) -> None:
    cfg = DetectionConfig.from_dict(cfg_dict)
    ours, ours_md = evaluate_detection(gt, pred, cfg)
    theirs, theirs_md = devkit_evaluate(gt, pred, cfg_dict)
    for c in cfg.class_names:
        for th in cfg.dist_ths:
            assert ours.label_aps[c][th] == pytest.approx(theirs.get_label_ap(c, th), abs=TOL), (c, th)
            for key in ("precision", "confidence", *TP_METRICS):
                np.testing.assert_allclose(
                    getattr(ours_md[(c, th)], key),
                    getattr(theirs_md[(c, th)], key),
                    atol=TOL,
                    rtol=0,
                    err_msg=f"{c} {th} {key}",
                )
        for m in TP_METRICS:
            a, b = ours.label_tp_errors[c][m], theirs.get_label_tp(c, m)
            assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=TOL), (c, m, a, b)
    for m in TP_METRICS:
        a, b = ours.tp_errors[m], theirs.tp_errors[m]
        assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=TOL), m
    assert ours.mean_ap == pytest.approx(theirs.mean_ap, abs=TOL)
    assert ours.nd_score == pytest.approx(theirs.nd_score, abs=TOL)


# ---------------------------------------------------------------------------------------------- random scenes


def random_quaternions(rng: np.random.Generator, n: int, tilt: float) -> np.ndarray:
    """Yaw rotations with a small roll/pitch (nuScenes annotations carry a little of both)."""
    yaw = rng.uniform(-np.pi, np.pi, n)
    q_yaw = yaw_to_quat(yaw)
    axis = np.concatenate([rng.normal(size=(n, 2)), np.zeros((n, 1))], axis=1)
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    angle = rng.uniform(0, tilt, n)
    q_tilt = np.concatenate([np.cos(angle / 2)[:, None], np.sin(angle / 2)[:, None] * axis], axis=1)
    return quat_multiply(q_yaw, q_tilt)


def random_gt(rng: np.random.Generator, n_samples: int, n_per_sample: int, classes: tuple[str, ...]) -> DetectionBoxes:
    n = n_samples * n_per_sample
    names = rng.choice(classes, n)
    attrs = np.array([rng.choice(("", *ATTRS_OF_CLASS.get(c, ATTRIBUTE_NAMES[5:8]))) for c in names], dtype=object)
    attrs[rng.random(n) < 0.1] = ""
    velocity = rng.normal(0, 3, (n, 2))
    velocity[rng.random(n) < 0.1] = np.nan
    tokens = np.repeat([f"sample-{i:03d}" for i in range(n_samples)], n_per_sample)
    return DetectionBoxes(
        tokens,
        rng.uniform(-20, 20, (n, 3)),
        rng.uniform(0.3, 5, (n, 3)),
        random_quaternions(rng, n, 0.05),
        velocity,
        names,
        None,
        attrs,
        rng.integers(0, 50, n),
    )


def noisy_predictions(
    rng: np.random.Generator, gt: DetectionBoxes, noise: float, n_false: int, score_decimals: int | None
) -> DetectionBoxes:
    """Perturbed copies of most GT boxes plus false positives, shuffled, with optionally heavily tied scores."""
    keep = rng.random(len(gt)) < 0.8
    tp = gt.select(keep)
    n = len(tp)
    names = tp.detection_name.copy()
    names[rng.random(n) < 0.05] = rng.choice(DETECTION_NAMES)  # some class confusion
    attrs = tp.attribute_name.copy()
    flip = rng.random(n) < 0.3
    attrs[flip] = [rng.choice(("", *ATTRS_OF_CLASS.get(c, ATTRIBUTE_NAMES[5:8]))) for c in names[flip]]
    velocity = tp.velocity + rng.normal(0, 0.5, (n, 2))
    velocity[np.isnan(velocity)] = 0.0
    velocity[rng.random(n) < 0.05] = np.nan
    yaw_noise = yaw_to_quat(rng.normal(0, 0.3, n) + np.pi * (rng.random(n) < 0.1))
    tps = DetectionBoxes(
        tp.sample_token,
        tp.translation + rng.normal(0, noise, (n, 3)),
        tp.size * rng.uniform(0.7, 1.3, (n, 3)),
        quat_multiply(tp.rotation, yaw_noise),
        velocity,
        names,
        rng.random(n),
        attrs,
    )
    samples = np.unique(gt.sample_token) if len(gt) else np.array(["sample-000"], dtype=object)
    fps = DetectionBoxes(
        rng.choice(samples, n_false),
        rng.uniform(-20, 20, (n_false, 3)),
        rng.uniform(0.3, 5, (n_false, 3)),
        random_quaternions(rng, n_false, 0.0),
        rng.normal(0, 2, (n_false, 2)),
        rng.choice(DETECTION_NAMES, n_false),
        rng.random(n_false) * 0.7,
        rng.choice(("", *ATTRIBUTE_NAMES), n_false),
    )
    pred = DetectionBoxes.concat([tps, fps])
    pred = pred.select(rng.permutation(len(pred)))
    if score_decimals is not None:
        pred.detection_score = np.round(pred.detection_score, score_decimals)
    return pred


# ---------------------------------------------------------------------------------------------- parity tests


@pytest.mark.devkit
@pytest.mark.parametrize("seed, noise, score_decimals", [(0, 0.4, None), (1, 0.8, 1), (2, 1.5, 2), (3, 0.2, 0)])
def test_parity_random_scenes(seed: int, noise: float, score_decimals: int | None) -> None:
    rng = np.random.default_rng(seed)
    # truck and trailer never appear in the GT; classes get confused, so some have predictions but no GT.
    classes = ("car", "bus", "construction_vehicle", "pedestrian", "motorcycle", "bicycle", "traffic_cone", "barrier")
    gt = random_gt(rng, n_samples=12, n_per_sample=25, classes=classes)
    pred = noisy_predictions(rng, gt, noise, n_false=150, score_decimals=score_decimals)
    assert_parity(gt, pred)


@pytest.mark.devkit
def test_parity_dense_clusters_and_ties() -> None:
    """Many GT within a metre of each other (competition for the same GT), all scores equal."""
    rng = np.random.default_rng(7)
    n = 120
    tokens = rng.choice(["a", "b", "c"], n)
    gt = DetectionBoxes(
        tokens,
        rng.uniform(0, 3, (n, 3)),
        np.ones((n, 3)),
        yaw_to_quat(np.zeros(n)),
        np.zeros((n, 2)),
        rng.choice(["car", "pedestrian"], n),
        None,
        np.full(n, "", dtype=object),
    )
    pred = DetectionBoxes(
        rng.choice(["a", "b", "c", "d"], 150),
        rng.uniform(0, 3, (150, 3)),
        np.ones((150, 3)),
        yaw_to_quat(rng.uniform(-3, 3, 150)),
        np.zeros((150, 2)),
        rng.choice(["car", "pedestrian"], 150),
        np.full(150, 0.5),
        None,
    )
    assert_parity(gt, pred)


@pytest.mark.devkit
def test_parity_exact_distance_ties_and_thresholds() -> None:
    """Distances exactly on a threshold (not a match: strict <) and GT equidistant from a prediction."""
    tokens = ["s"] * 4
    gt = DetectionBoxes(
        tokens,
        [[1, 0, 0], [0, 1, 0], [10, 0, 0], [20, 0, 0]],
        np.ones((4, 3)),
        np.tile([1.0, 0, 0, 0], (4, 1)),
        np.zeros((4, 2)),
        ["car"] * 4,
    )
    pred = DetectionBoxes(
        ["s"] * 4,
        [[0, 0, 0], [10.5, 0, 0], [20.3, 0.4, 0], [0.6, 0.8, 0]],
        np.ones((4, 3)),
        np.tile([1.0, 0, 0, 0], (4, 1)),
        np.zeros((4, 2)),
        ["car"] * 4,
        [0.9, 0.8, 0.7, 0.6],
    )
    assert_parity(gt, pred)


@pytest.mark.devkit
def test_parity_rounding_at_threshold() -> None:
    """A distance one ulp from the 0.5 m threshold, where sqrt(dx*dx + dy*dy) and the devkit's np.linalg.norm
    (a BLAS dot product, fused multiply-add on many CPUs) can round to different sides: the match decision must
    follow the devkit's arithmetic."""
    dx, dy = 0.06638940957447788, 0.4955728466092066
    gt = DetectionBoxes(["s"], [[0.0, 0.0, 0.0]], np.ones((1, 3)), [[1.0, 0, 0, 0]], np.zeros((1, 2)), ["car"])
    pred = DetectionBoxes(["s"], [[dx, dy, 0.0]], np.ones((1, 3)), [[1.0, 0, 0, 0]], np.zeros((1, 2)), ["car"], [0.5])
    assert_parity(gt, pred)
    metrics, _ = evaluate_detection(gt, pred)
    devkit_dist = float(np.linalg.norm(np.array([dx, dy]) - np.array([0.0, 0.0])))
    assert metrics.label_aps["car"][0.5] == pytest.approx(1.0 if devkit_dist < 0.5 else 0.0)


@pytest.mark.devkit
def test_parity_perfect_and_empty() -> None:
    rng = np.random.default_rng(11)
    gt = random_gt(rng, 5, 20, DETECTION_NAMES)
    perfect = DetectionBoxes(
        gt.sample_token,
        gt.translation,
        gt.size,
        gt.rotation,
        np.nan_to_num(gt.velocity),
        gt.detection_name,
        rng.random(len(gt)),
        gt.attribute_name,
    )
    assert_parity(gt, perfect)
    assert_parity(gt, DetectionBoxes.empty())
    assert_parity(DetectionBoxes.empty(), perfect)
    assert_parity(DetectionBoxes.empty(), DetectionBoxes.empty())


@pytest.mark.devkit
@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_samples=st.integers(1, 4),
    n_per_sample=st.integers(0, 12),
    n_false=st.integers(0, 15),
    noise=st.floats(0.05, 3.0),
    decimals=st.sampled_from([None, 0, 1]),
)
def test_parity_hypothesis(
    seed: int, n_samples: int, n_per_sample: int, n_false: int, noise: float, decimals: int | None
) -> None:
    rng = np.random.default_rng(seed)
    gt = random_gt(rng, n_samples, n_per_sample, DETECTION_NAMES)
    assert_parity(gt, noisy_predictions(rng, gt, noise, n_false, decimals))


def test_chunked_matching_equals_one_pass() -> None:
    """Matching in sample chunks (bounded memory) gives exactly the matches of one pass."""
    from stridegen.eval.detection.algo import match_boxes

    rng = np.random.default_rng(9)
    gt = random_gt(rng, 15, 30, DETECTION_NAMES)
    pred = noisy_predictions(rng, gt, 0.7, 100, 1)
    gt, pred = gt.select(gt.canonical_order()), pred.select(pred.canonical_order())
    one = match_boxes(gt, pred, DETECTION_NAMES, (0.5, 1.0, 2.0, 4.0))
    chunked = match_boxes(gt, pred, DETECTION_NAMES, (0.5, 1.0, 2.0, 4.0), max_pairs=50)
    assert (one.match_gt >= 0).sum() > 100
    np.testing.assert_array_equal(one.match_gt, chunked.match_gt)
    np.testing.assert_array_equal(one.match_dist, chunked.match_dist)


@pytest.mark.devkit
def test_parity_other_config() -> None:
    cfg = dict(
        CVPR_2019, dist_ths=[0.25, 1.0, 3.0], dist_th_tp=1.0, min_recall=0.2, min_precision=0.3, mean_ap_weight=3
    )
    rng = np.random.default_rng(5)
    gt = random_gt(rng, 6, 20, DETECTION_NAMES)
    assert_parity(gt, noisy_predictions(rng, gt, 0.6, 40, 1), cfg)


# ---------------------------------------------------------------------------------------------- known answers


def test_perfect_predictions_score_one() -> None:
    rng = np.random.default_rng(3)
    gt = random_gt(rng, 4, 30, DETECTION_NAMES)
    gt.velocity = np.nan_to_num(gt.velocity)
    assert set(gt.detection_name) == set(DETECTION_NAMES)
    pred = DetectionBoxes(
        gt.sample_token,
        gt.translation,
        gt.size,
        gt.rotation,
        gt.velocity,
        gt.detection_name,
        np.linspace(1, 0.1, len(gt)),
        gt.attribute_name,
    )
    metrics, _ = evaluate_detection(gt, pred)
    assert metrics.mean_ap == pytest.approx(1.0)
    for m, err in metrics.tp_errors.items():
        assert err == pytest.approx(0.0, abs=1e-12), m
    assert metrics.nd_score == pytest.approx(1.0)


def _hand_case() -> tuple[DetectionBoxes, DetectionBoxes]:
    """3 cars; a hit at 0.2 m (score .9), a false positive (.8), a hit at 0.6 m turned by 0.3 rad (.7)."""
    gt = DetectionBoxes(
        ["s"] * 3,
        [[0, 0, 0], [10, 0, 0], [20, 0, 0]],
        np.ones((3, 3)),
        np.tile([1.0, 0, 0, 0], (3, 1)),
        np.zeros((3, 2)),
        ["car"] * 3,
    )
    pred = DetectionBoxes(
        ["s"] * 3,
        [[0.2, 0, 0], [30, 0, 0], [10, 0.6, 0]],
        np.ones((3, 3)),
        [[1.0, 0, 0, 0], [1.0, 0, 0, 0], yaw_to_quat(0.3)],
        np.zeros((3, 2)),
        ["car"] * 3,
        [0.9, 0.8, 0.7],
    )
    return gt, pred


@pytest.mark.devkit
def test_hand_computed_case() -> None:
    """Worked by hand on the 101-point grid (recall 1/3 and 2/3 fall between grid points).

    th >= 1 m: precision 1 up to recall .33, then .5 + (r - 1/3) / 2 up to .66, then 0:
      AP = (23 * .9 + sum_{k=34..66} (.4 + (k/100 - 1/3) / 2)) / 90 / .9 = 36.65 / 81.
    th = 0.5 m: only the first hit counts: AP = 23 * .9 / 81.
    ATE at 2 m: (23 * .2 + sum_{k=34..66} (.3 + .3 (k/100 - 1/3))) / 56 = 16.15 / 56.
    AOE at 2 m: (sum_{k=34..66} (.075 + .225 (k/100 - 1/3))) / 56 = 3.7125 / 56.
    """
    gt, pred = _hand_case()
    metrics, md = evaluate_detection(gt, pred)
    assert metrics.label_aps["car"][0.5] == pytest.approx(20.7 / 81, abs=1e-12)
    for th in (1.0, 2.0, 4.0):
        assert metrics.label_aps["car"][th] == pytest.approx(36.65 / 81, abs=1e-12)
    assert metrics.label_tp_errors["car"]["trans_err"] == pytest.approx(16.15 / 56, abs=1e-12)
    assert metrics.label_tp_errors["car"]["orient_err"] == pytest.approx(3.7125 / 56, abs=1e-12)
    assert metrics.label_tp_errors["car"]["scale_err"] == pytest.approx(0.0, abs=1e-12)
    assert metrics.label_tp_errors["car"]["attr_err"] == 1.0  # all GT attributes empty -> cummean gives ones
    assert md[("car", 2.0)].max_recall_ind == 66
    # Other classes have no GT: AP 0, TP errors 1 (NaN where exempt).
    assert metrics.label_aps["bus"][2.0] == 0.0
    assert metrics.label_tp_errors["bus"]["trans_err"] == 1.0
    assert math.isnan(metrics.label_tp_errors["traffic_cone"]["orient_err"])
    assert metrics.mean_ap == pytest.approx((20.7 + 3 * 36.65) / 81 / 4 / 10, abs=1e-12)
    ate = (16.15 / 56 + 9) / 10  # the 9 classes without GT score error 1
    ase = 9 / 10
    aoe = (3.7125 / 56 + 8) / 9  # cones are exempt from AOE
    ave = 7 / 8  # cones and barriers exempt; car 0 (all velocities 0)
    aae = 1.0  # car: no GT attribute at all -> 1; the other classes 1 or exempt
    nds = (5 * metrics.mean_ap + (1 - ate) + (1 - ase) + (1 - aoe) + (1 - ave) + (1 - aae)) / 10
    assert metrics.nd_score == pytest.approx(nds, abs=1e-12)
    assert_parity(gt, pred)


@pytest.mark.devkit
def test_tie_order_follows_devkit() -> None:
    """Equal scores: the devkit sorts (score, index) ascending and reverses, so the later row goes first."""
    gt = DetectionBoxes(["s"], [[0, 0, 0]], np.ones((1, 3)), [[1.0, 0, 0, 0]], np.zeros((1, 2)), ["car"])
    pred = DetectionBoxes(
        ["s", "s"],
        [[0.4, 0, 0], [0.3, 0, 0]],
        np.ones((2, 3)),
        np.tile([1.0, 0, 0, 0], (2, 1)),
        np.zeros((2, 2)),
        ["car", "car"],
        [0.5, 0.5],
    )
    metrics, _ = evaluate_detection(gt, pred)
    assert metrics.label_tp_errors["car"]["trans_err"] == pytest.approx(0.3, abs=1e-12)
    assert_parity(gt, pred)


def test_barrier_orientation_has_period_pi() -> None:
    gt = DetectionBoxes(
        ["s", "s"],
        [[0, 0, 0], [5, 0, 0]],
        np.ones((2, 3)),
        yaw_to_quat(np.zeros(2)),
        np.zeros((2, 2)),
        ["barrier", "car"],
    )
    pred = DetectionBoxes(
        ["s", "s"],
        [[0, 0, 0], [5, 0, 0]],
        np.ones((2, 3)),
        yaw_to_quat(np.full(2, np.pi)),
        np.zeros((2, 2)),
        ["barrier", "car"],
        [0.5, 0.5],
    )
    metrics, _ = evaluate_detection(gt, pred)
    assert metrics.label_tp_errors["barrier"]["orient_err"] == pytest.approx(0.0, abs=1e-12)
    assert metrics.label_tp_errors["car"]["orient_err"] == pytest.approx(np.pi, abs=1e-12)
    assert math.isnan(metrics.label_tp_errors["barrier"]["vel_err"])


@pytest.mark.devkit
def test_cummean_and_calc_functions() -> None:
    np.testing.assert_allclose(cummean(np.array([np.nan, 1.0, np.nan, 3.0])), [0.0, 1.0, 1.0, 2.0])
    np.testing.assert_array_equal(cummean(np.array([np.nan, np.nan])), [1.0, 1.0])
    gt, pred = _hand_case()
    _, md = evaluate_detection(gt, pred)
    theirs = devkit_algo.calc_tp(md[("car", 2.0)], 0.1, "trans_err")
    assert calc_tp(md[("car", 2.0)], 0.1, "trans_err") == pytest.approx(theirs, abs=1e-15)
    assert calc_ap(md[("car", 1.0)], 0.0, 0.0) == pytest.approx(devkit_algo.calc_ap(md[("car", 1.0)], 0.0, 0.0))


# ---------------------------------------------------------------------------------------------- config and input


@pytest.mark.devkit
def test_config_yaml_matches_devkit_json() -> None:
    import nuscenes

    devkit_json = Path(nuscenes.__file__).parent / "eval" / "detection" / "configs" / "detection_cvpr_2019.json"
    devkit = json.loads(devkit_json.read_text())
    ours_yaml = yaml.safe_load((REPO / "configs" / "detection_cvpr_2019.yaml").read_text())
    assert ours_yaml == devkit == CVPR_2019
    assert DetectionConfig.from_yaml(REPO / "configs" / "detection_cvpr_2019.yaml") == DetectionConfig.cvpr_2019()


def test_config_rejects_bad_values(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="dist_th_tp"):
        DetectionConfig.from_dict(dict(CVPR_2019, dist_th_tp=3.0))
    with pytest.raises(ConfigError, match="class_range"):
        DetectionConfig.from_dict(dict(CVPR_2019, class_range={"car": 50}))
    bad = tmp_path / "bad.yaml"
    bad.write_text("dist_fcn: center_distance\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml"):
        DetectionConfig.from_yaml(bad)


def test_core_rejects_invalid_boxes() -> None:
    gt, pred = _hand_case()
    pred.translation[1, 0] = np.nan
    with pytest.raises(GeometryError, match="translation"):
        evaluate_detection(gt, pred)
    gt, pred = _hand_case()
    pred.size[0, 2] = 0.0
    with pytest.raises(GeometryError, match="sizes"):
        evaluate_detection(gt, pred)
    gt, pred = _hand_case()
    pred.detection_name[0] = "cat"
    with pytest.raises(GeometryError, match="cat"):
        evaluate_detection(gt, pred)


# ---------------------------------------------------------------------------------------------- filtering


class FakeNusc:
    """Just enough of a NuScenes db for the devkit's add_center_dist and filter_eval_boxes."""

    def __init__(self, context: SampleContext, extra_anns: dict[str, list[dict]]) -> None:
        self.tables: dict[tuple[str, str], dict] = {}
        for i, token in enumerate(context.sample_tokens):
            anns = extra_anns.get(token, [])
            for a in anns:
                self.tables[("sample_annotation", a["token"])] = a
            self.tables[("sample", token)] = {"data": {"LIDAR_TOP": f"sd-{token}"}, "anns": [a["token"] for a in anns]}
            self.tables[("sample_data", f"sd-{token}")] = {"ego_pose_token": f"ep-{token}"}
            self.tables[("ego_pose", f"ep-{token}")] = {"translation": context.ego_translation_global[i].tolist()}

    def get(self, table: str, token: str) -> dict:
        return self.tables[(table, token)]


@pytest.mark.devkit
def test_filter_parity_with_devkit() -> None:
    from nuscenes.eval.common.loaders import add_center_dist
    from nuscenes.eval.common.loaders import filter_eval_boxes as devkit_filter

    rng = np.random.default_rng(21)
    tokens = [f"s{i}" for i in range(6)]
    ego = np.concatenate([rng.uniform(-100, 100, (6, 2)), np.zeros((6, 1))], axis=1)
    n = 400
    sample = rng.integers(0, 6, n)
    center = ego[sample] + np.concatenate([rng.uniform(-60, 60, (n, 2)), rng.normal(0, 1, (n, 1))], axis=1)
    names = rng.choice(["car", "pedestrian", "bicycle", "motorcycle", "traffic_cone", "barrier"], n)
    boxes = DetectionBoxes(
        np.array(tokens, dtype=object)[sample],
        center,
        rng.uniform(0.5, 3, (n, 3)),
        random_quaternions(rng, n, 0.05),
        np.zeros((n, 2)),
        names,
        None,
        None,
        rng.integers(0, 3, n),
    )
    # Racks around some of the cycles (so that some centres fall inside), with roll/pitch.
    cyc = np.flatnonzero(np.isin(names, ["bicycle", "motorcycle"]))[:40]
    racks = []
    rack_q = random_quaternions(rng, len(cyc), 0.1)
    for j, i in enumerate(cyc):
        racks.append(
            {
                "token": f"rack{j}",
                "category_name": "static_object.bicycle_rack",
                "translation": (center[i] + rng.normal(0, 0.8, 3)).tolist(),
                "size": [2.0, 3.0, 1.5],
                "rotation": rack_q[j].tolist(),
            }
        )
    context = SampleContext(
        tokens,
        ego,
        [tokens[sample[i]] for i in cyc],
        [r["translation"] for r in racks],
        [r["size"] for r in racks],
        [r["rotation"] for r in racks],
    )
    by_sample: dict[str, list[dict]] = {}
    for r, i in zip(racks, cyc, strict=True):
        by_sample.setdefault(tokens[sample[i]], []).append(r)
    nusc = FakeNusc(context, by_sample)

    ours, counts = filter_eval_boxes(boxes, context, CVPR_2019["class_range"])
    eb = add_center_dist(nusc, to_eval_boxes(boxes))
    theirs = devkit_filter(nusc, eb, CVPR_2019["class_range"])
    theirs_all = theirs.all
    assert len(ours) == len(theirs_all) == counts.after_bike_rack
    assert counts.after_bike_rack < counts.after_points < counts.after_distance < counts.total
    # Same boxes survive (compared as sorted rows: the two keep rows in different sample orders).
    ours_rows = np.concatenate([ours.translation, ours.ego_translation], axis=1)
    theirs_rows = np.array([list(b.translation) + list(b.ego_translation) for b in theirs_all])
    np.testing.assert_array_equal(ours_rows[np.lexsort(ours_rows.T)], theirs_rows[np.lexsort(theirs_rows.T)])


@pytest.mark.devkit
def test_centers_in_boxes_matches_devkit_points_in_box() -> None:
    from nuscenes.utils.data_classes import Box
    from nuscenes.utils.geometry_utils import points_in_box
    from pyquaternion import Quaternion

    rng = np.random.default_rng(2)
    k = 300
    center = rng.normal(0, 5, (k, 3))
    size = rng.uniform(0.5, 4, (k, 3))
    rot = random_quaternions(rng, k, 0.5)
    pts = center + rng.normal(0, 1.5, (k, 3))
    ours = centers_in_boxes(pts, center, size, rot)
    theirs = [bool(points_in_box(Box(center[i], size[i], Quaternion(rot[i])), pts[i][:, None])[0]) for i in range(k)]
    np.testing.assert_array_equal(ours, theirs)
    assert 30 < ours.sum() < k - 30


@pytest.mark.devkit
@needs_nuscenes_demo
def test_demo_log_end_to_end_matches_devkit(tmp_path: Path) -> None:
    """Real nuScenes keyframe: our GT gathering + filtering + metrics vs the devkit on its own NuScenes db."""
    from nuscenes import NuScenes
    from nuscenes.eval.common.loaders import add_center_dist
    from nuscenes.eval.common.loaders import filter_eval_boxes as devkit_filter
    from nuscenes.eval.detection.utils import category_to_detection_name

    from stridegen.eval.detection.evaluate import evaluate_log
    from stridegen.eval.detection.gt import load_detection_gt
    from stridegen.formats.nuscenes_results import CLASS_ATTRIBUTES, load_results, write_results

    gt, context = load_detection_gt(DEMO)
    nusc = NuScenes(version="v1.0-demo", dataroot=str(DEMO), verbose=False)
    sample = nusc.sample[0]
    attr = {a["token"]: a["name"] for a in nusc.attribute}
    gt_dk = EvalBoxes()
    for ann_token in sample["anns"]:
        a = nusc.get("sample_annotation", ann_token)
        name = category_to_detection_name(a["category_name"])
        if name is None:
            continue
        gt_dk.add_boxes(
            sample["token"],
            [
                DetectionBox(
                    sample_token=sample["token"],
                    translation=a["translation"],
                    size=a["size"],
                    rotation=a["rotation"],
                    velocity=nusc.box_velocity(a["token"])[:2],
                    num_pts=a["num_lidar_pts"] + a["num_radar_pts"],
                    detection_name=name,
                    attribute_name=attr[a["attribute_tokens"][0]] if a["attribute_tokens"] else "",
                )
            ],
        )
    assert len(gt) == len(gt_dk.all) == 68
    np.testing.assert_array_equal(gt.translation, [b.translation for b in gt_dk.all])
    np.testing.assert_array_equal(gt.rotation, [b.rotation for b in gt_dk.all])

    # Noisy predictions written as a results file, evaluated by us end to end and by the devkit.
    rng = np.random.default_rng(0)
    pred = noisy_predictions(rng, gt, 0.5, 20, None)
    pred.velocity[np.isnan(pred.velocity)] = 0.0
    pred.rotation = pred.rotation / np.linalg.norm(pred.rotation, axis=1, keepdims=True)
    # A results file holds only attributes of the box's own class (the class confusion keeps the GT's attribute).
    own = [
        a == "" or not CLASS_ATTRIBUTES[c] or a in CLASS_ATTRIBUTES[c]
        for c, a in zip(pred.detection_name, pred.attribute_name, strict=True)
    ]
    pred.attribute_name[~np.array(own)] = ""
    path = write_results(tmp_path / "results.json", pred, sample_tokens=context.sample_tokens)
    report = evaluate_log(DEMO, path)

    pred_dk = to_eval_boxes(load_results(path).boxes)
    gt_dk = devkit_filter(nusc, add_center_dist(nusc, gt_dk), CVPR_2019["class_range"])
    pred_dk = devkit_filter(nusc, add_center_dist(nusc, pred_dk), CVPR_2019["class_range"])
    assert report.gt_counts.after_bike_rack == len(gt_dk.all)
    assert report.pred_counts.after_bike_rack == len(pred_dk.all)
    ev = DetectionEval.__new__(DetectionEval)
    ev.cfg, ev.gt_boxes, ev.pred_boxes, ev.verbose = DevkitConfig.deserialize(CVPR_2019), gt_dk, pred_dk, False
    theirs, _ = ev.evaluate()
    assert report.metrics.mean_ap == pytest.approx(theirs.mean_ap, abs=TOL)
    assert report.metrics.nd_score == pytest.approx(theirs.nd_score, abs=TOL)
    assert 0 < report.metrics.mean_ap < 1


@needs_nuscenes_demo
def test_cli_command_writes_summary(tmp_path: Path) -> None:
    import typer
    from typer.testing import CliRunner

    from stridegen.cli.eval_detection import eval_detection
    from stridegen.eval.detection.gt import load_detection_gt
    from stridegen.formats.nuscenes_results import write_results
    from stridegen.formats.results_json import LIDAR_ONLY_META

    gt, context = load_detection_gt(DEMO)
    kept, _ = filter_eval_boxes(gt, context, CVPR_2019["class_range"])
    perfect = DetectionBoxes(
        kept.sample_token,
        kept.translation,
        kept.size,
        kept.rotation,
        np.nan_to_num(kept.velocity),
        kept.detection_name,
        np.linspace(0.9, 0.2, len(kept)),
        kept.attribute_name,
    )
    path = write_results(tmp_path / "perfect.json", perfect, sample_tokens=context.sample_tokens)
    app = typer.Typer()
    app.command()(eval_detection)
    out = tmp_path / "summary.json"
    result = CliRunner().invoke(app, ["--gt", str(DEMO), "--pred", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "NDS" in result.output and "mAP" in result.output
    text = " ".join(result.output.split())  # footnote: absent classes count as AP 0, validate leaves them out
    assert "absent from the ground truth counts as AP 0" in text and "`stridegen validate` leaves such" in text
    summary = json.loads(out.read_text())
    present = set(kept.detection_name)
    assert len(present) >= 3
    for c in DETECTION_NAMES:
        assert summary["mean_dist_aps"][c] == pytest.approx(1.0 if c in present else 0.0)
    assert summary["summary_row"]["mATE"] == pytest.approx(
        sum(c not in present for c in DETECTION_NAMES) / 10, abs=1e-12
    )
    assert summary["label_tp_errors"]["traffic_cone"]["orient_err"] is None  # exempt: NaN written as null
    # A results file with an unknown sample token: exit code 2 and a message naming the file.
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"meta": LIDAR_ONLY_META, "results": {"nope": []}}))
    result = CliRunner().invoke(app, ["--gt", str(DEMO), "--pred", str(bad)])
    assert result.exit_code == 2
    assert "bad.json" in result.output
