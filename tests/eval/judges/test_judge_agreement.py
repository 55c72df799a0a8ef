"""Agreement metrics: known answers, scipy / scikit-learn references, properties."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from stridegen.eval.judges.agreement import (
    agreement_report,
    bootstrap_ci,
    cohen_kappa,
    kendall,
    pairwise_agreement,
    pearson,
    sample_level_pearson,
    spearman,
    system_level_pearson,
)


def test_kappa_known_answer():
    # 2x2 table [[20, 5], [10, 15]] of 50 ratings: p_o = 0.7, p_e = 0.5*0.6 + 0.5*0.4 = 0.5 -> kappa 0.4.
    a = ["y"] * 25 + ["n"] * 25
    b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert cohen_kappa([1, 2, 3], [1, 2, 3]) == pytest.approx(1.0)
    assert math.isnan(cohen_kappa([1, 1], [1, 1]))


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_kappa_matches_scikit_learn(weights):
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(7)
    for _ in range(20):
        a = rng.integers(1, 6, size=40)
        b = np.clip(a + rng.integers(-1, 2, size=40), 1, 5)
        ours = cohen_kappa(list(a), list(b), weights)
        ref = sklearn_metrics.cohen_kappa_score(a, b, weights=weights)
        assert ours == pytest.approx(ref, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4), st.integers(1, 4)), min_size=2, max_size=30))
def test_kappa_properties(pairs):
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    k = cohen_kappa(a, b)
    if not math.isnan(k):
        assert k == pytest.approx(cohen_kappa(b, a))
        assert -1.0 - 1e-12 <= k <= 1.0 + 1e-12
    if len(set(a)) > 1:
        assert cohen_kappa(a, a) == pytest.approx(1.0)


def test_correlations_match_scipy():
    rng = np.random.default_rng(3)
    x = rng.normal(size=30)
    y = x + rng.normal(scale=0.5, size=30)
    assert pearson(x, y) == pytest.approx(stats.pearsonr(x, y).statistic)
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic)
    assert kendall(x, y) == pytest.approx(stats.kendalltau(x, y).statistic)
    assert math.isnan(pearson([1, 1, 1], [1, 2, 3]))


def test_sample_and_system_level():
    judge_dims = [[1, 2, 3], [3, 2, 1], [5, 5, 5]]
    human_dims = [[2, 4, 6], [1, 2, 3], [1, 2, 3]]
    r, used = sample_level_pearson(judge_dims, human_dims)
    assert used == 2 and r == pytest.approx(0.0)  # +1 and -1; the constant sample is skipped
    # Per-system means: judge (2, 4, 6), human (1, 2, 3.5)
    systems = ["s1", "s1", "s2", "s2", "s3", "s3"]
    judge = [1, 3, 4, 4, 5, 7]
    human = [1, 1, 2, 2, 3, 4]
    assert system_level_pearson(judge, human, systems) == pytest.approx(
        stats.pearsonr([2, 4, 6], [1, 2, 3.5]).statistic
    )


def test_pairwise_agreement_without_ties():
    # Group q1: three answers; group q2: two answers.
    judge = [8, 5, 5, 3, 9]
    human = [7, 6, 2, 4, 4]
    groups = ["q1", "q1", "q1", "q2", "q2"]
    # q1 pairs: (0,1) judge >, human > agree; (0,2) judge >, human > agree; (1,2) judge tie -> skipped.
    # q2 pair: (3,4) judge <, human tie -> skipped.
    value, counted = pairwise_agreement(judge, human, groups)
    assert (value, counted) == (1.0, 2)
    value, counted = pairwise_agreement([1, 2], [2, 1])
    assert (value, counted) == (0.0, 1)


def test_bootstrap_is_deterministic_and_brackets_the_estimate():
    rng = np.random.default_rng(11)
    x = rng.normal(size=60)
    y = x + rng.normal(scale=0.7, size=60)

    def stat(u, v):
        return pearson(np.asarray(u, float), np.asarray(v, float))

    lo, hi = bootstrap_ci(stat, [x, y], n_boot=400, seed=5)
    assert (lo, hi) == bootstrap_ci(stat, [x, y], n_boot=400, seed=5)
    assert lo < pearson(x, y) < hi
    assert 0.0 < hi - lo < 0.5


def test_agreement_report_has_all_metrics():
    rng = np.random.default_rng(0)
    n = 24
    human = rng.integers(1, 11, size=n).astype(float)
    judge = np.clip(human + rng.integers(-2, 3, size=n), 1, 10)
    systems = [f"s{i % 4}" for i in range(n)]
    groups = [f"q{i // 4}" for i in range(n)]
    dims_h = [[h, h - 1, h + 1] for h in human]
    dims_j = [[j, j + 1, j - 1] for j in judge]
    report = agreement_report(judge, human, systems, groups, dims_j, dims_h, n_boot=50, seed=1)
    assert set(report) == {
        "pearson",
        "spearman",
        "kendall_tau_b",
        "cohen_kappa",
        "cohen_kappa_quadratic",
        "pairwise_agreement_wo_tie",
        "system_pearson",
        "sample_pearson",
    }
    assert report["pearson"]["value"] == pytest.approx(stats.pearsonr(judge, human).statistic)
    assert report["pearson"]["low"] <= report["pearson"]["value"] <= report["pearson"]["high"]
    assert report["system_pearson"]["n"] == 4


def test_infer_and_compare_scales():
    from stridegen.eval.judges.agreement import infer_scale, scales_compatible

    assert infer_scale([0, 1, 1, 0]) == "binary"
    assert infer_scale([0, 0.5, 1]) == "pairwise"
    assert infer_scale([1, 7.5, 10]) == "1-10"
    assert infer_scale([0, 55, 100]) == "other (0 to 100)"
    assert scales_compatible("1-10", "1-10") and scales_compatible("pairwise", "binary")
    assert not scales_compatible("binary", "1-10") and not scales_compatible("1-10", "binary")


def test_report_is_strict_json_with_reasons():
    report = agreement_report([5, 5, 5, 5], [1, 2, 3, 4], groups=["q", "q", "q", "q"], n_boot=20)
    text = json.dumps(report, allow_nan=False)  # raises on NaN
    assert "NaN" not in text
    assert report["pearson"]["value"] is None and "same score" in report["pearson"]["reason"]
    assert report["pearson"]["low"] is None and "ci_reason" in report["pearson"]
    assert report["pairwise_agreement_wo_tie"]["value"] is None and report["pairwise_agreement_wo_tie"]["n"] == 0
    no_boot = agreement_report([1, 2, 3], [1, 3, 2], n_boot=0)
    assert no_boot["pearson"]["value"] == pytest.approx(0.5) and no_boot["pearson"]["ci_reason"] == "n_boot is 0"


def test_categorical_kappa_keeps_ties():
    # pairwise scores: 0.5 is a tie, a category of its own (np.rint would make it 0)
    judge = [0.0, 0.5, 1.0, 0.5, 1.0, 0.0]
    human = [0.0, 0.5, 1.0, 0.0, 1.0, 0.5]
    report = agreement_report(judge, human, n_boot=0, categorical=True)
    # labels l(oss) t(ie) w(in): p_o = 4/6, p_e = 3 x (1/3 x 1/3) = 1/3, kappa = (2/3 - 1/3) / (2/3) = 0.5
    assert report["cohen_kappa"]["value"] == pytest.approx(cohen_kappa(list("ltwtwl"), list("ltwlwt")))
    assert report["cohen_kappa"]["value"] == pytest.approx(0.5)


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _agreement_cli(tmp_path, judge_rows, human_rows, *extra):
    from typer.testing import CliRunner

    from stridegen.cli.judge import judge_app

    args = ["agreement", "--judge", str(_write(tmp_path / "v.jsonl", judge_rows))]
    args += ["--human", str(_write(tmp_path / "h.jsonl", human_rows)), "--n-boot", "20", *extra]
    return CliRunner().invoke(judge_app, args)


def test_agreement_refuses_a_scale_mismatch_unless_told(tmp_path):
    # issue 15: CEE 0/1 verdicts against 1-10 human ratings gave kappa -0.04 without a word
    rng = np.random.default_rng(5)
    votes, ratings = rng.integers(0, 2, size=30), rng.integers(1, 11, size=30)
    judge = [{"id": f"i{k}", "status": "ok", "method": "cee", "score": float(v)} for k, v in enumerate(votes)]
    human = [{"id": f"i{k}", "score": float(r)} for k, r in enumerate(ratings)]
    refused = _agreement_cli(tmp_path, judge, human)
    assert refused.exit_code == 2 and refused.stderr.count("\n") == 1
    assert "scale mismatch: judge scores are binary (0/1) (method cee) but human scores are 1-10" in refused.stderr
    assert "--allow-scale-mismatch" in refused.stderr
    out = tmp_path / "a.json"
    allowed = _agreement_cli(tmp_path, judge, human, "--allow-scale-mismatch", "--out", str(out))
    assert allowed.exit_code == 0, allowed.output
    report = json.loads(out.read_text(), parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    assert report["scales"] == {"judge": "binary", "human": "1-10", "compatible": False, "mismatch_allowed": True}
    assert "warning: judge scale binary vs human scale 1-10" in allowed.stderr
    # pairwise verdicts against human preferences without ties (0/1) are the same scale
    pair = [{"id": f"i{k}", "status": "ok", "method": "pairwise", "score": float(v)} for k, v in enumerate(votes)]
    prefs = [{"id": f"i{k}", "score": float(1 - v if k % 4 == 0 else v)} for k, v in enumerate(votes)]
    assert _agreement_cli(tmp_path, pair, prefs).exit_code == 0


def test_agreement_writes_null_not_nan(tmp_path):
    judge = [{"id": f"i{k}", "status": "ok", "method": "general", "score": 7.0} for k in range(5)]
    human = [{"id": f"i{k}", "score": float(k + 3)} for k in range(5)]
    out = tmp_path / "a.json"
    result = _agreement_cli(tmp_path, judge, human, "--out", str(out))
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert "NaN" not in text
    report = json.loads(text)
    assert report["metrics"]["pearson"]["value"] is None and report["metrics"]["pearson"]["reason"]


@pytest.mark.parametrize(
    ("human_line", "message"),
    [
        ({"id": "i1", "score": "good"}, "h.jsonl: line 2: 'score' is not a number: 'good'"),
        ({"id": "i1", "score": None}, "h.jsonl: line 2: 'score' is not a number: None"),
        ([1, 2], "h.jsonl: line 2: expected a JSON object, got list"),
    ],
)
def test_agreement_bad_input_is_one_line(tmp_path, human_line, message):
    judge = [{"id": f"i{k}", "status": "ok", "score": 5.0 + k} for k in range(3)]
    human = [{"id": "i0", "score": 4}, human_line, {"id": "i2", "score": 6}]
    result = _agreement_cli(tmp_path, judge, human)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and message in result.stderr, result.stderr
    missing = _agreement_cli(tmp_path, judge, human, "--human", str(tmp_path / "nope.jsonl"))
    assert missing.exit_code == 2 and "nope.jsonl: file does not exist" in missing.stderr
