"""The run summary: bootstrap intervals of the mean, and error counts in every group an item belongs to."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from judge_fake_server import Reply, ScriptedServer, completion_body, last_user_text

from stridegen.eval.judges.cache import VerdictCache
from stridegen.eval.judges.methods import JudgeContext, get_method
from stridegen.eval.judges.records import JudgeItem
from stridegen.eval.judges.runner import bootstrap_mean_ci, run_judge, summarise
from stridegen.llm.client import ChatClient, ClientSettings


def test_bootstrap_interval_known_cases():
    # Two scores 0 and 100: a resample's mean is 0, 50 or 100 with probabilities 1/4, 1/2, 1/4, so the 2.5% and
    # 97.5% quantiles of 2000 resampled means are 0 and 100.
    assert bootstrap_mean_ci([0.0, 100.0]) == (0.0, 100.0)
    assert bootstrap_mean_ci([70.0] * 9) == (70.0, 70.0)
    assert bootstrap_mean_ci([42.0]) == (None, None)  # no interval from one score
    assert bootstrap_mean_ci([1.0, 2.0], n_boot=0) == (None, None)
    # 100 binary scores, half of them 100: the interval is the normal approximation 50 +- 1.96 * 50 / sqrt(100)
    # = 50 +- 9.8 (within Monte Carlo and discreteness error).
    lo, hi = bootstrap_mean_ci([0.0, 100.0] * 50)
    assert lo == pytest.approx(40.2, abs=1.5) and hi == pytest.approx(59.8, abs=1.5)


def test_bootstrap_interval_is_seeded_and_matches_the_t_interval_for_large_samples():
    x = np.random.default_rng(4).normal(60.0, 12.0, size=400).tolist()
    a = bootstrap_mean_ci(x, seed=3)
    assert a == bootstrap_mean_ci(x, seed=3) and a != bootstrap_mean_ci(x, seed=4)
    half = 1.966 * np.std(x, ddof=1) / math.sqrt(len(x))  # t(0.975, 399) = 1.966
    mean = float(np.mean(x))
    assert a[0] == pytest.approx(mean - half, abs=0.1 * half) and a[1] == pytest.approx(mean + half, abs=0.1 * half)


def test_summary_reports_the_interval_of_every_group():
    verdicts = [{"status": "ok", "score_100": s, "category": "a", "groups": ["category:a"]} for s in (0.0, 100.0)] + [
        {"status": "error", "category": "b", "groups": ["category:b"], "error": "x"}
    ]
    s = summarise(verdicts)
    assert (s["overall"]["ci_low_100"], s["overall"]["ci_high_100"]) == (0.0, 100.0)
    assert s["groups"]["category:b"] == {
        "n": 0,
        "mean_100": None,
        "std_100": None,
        "ci_low_100": None,
        "ci_high_100": None,
        "n_error": 1,
    }
    assert s["ci"] == {"method": "percentile bootstrap of the mean", "level": 0.95, "n_boot": 2000, "seed": 0}


QUESTION_NO = re.compile(r"Question (\d+)\b")


@pytest.mark.openai
def test_codalm_error_counts_land_in_their_task_and_class_groups(tmp_path: Path):
    # 30 items, 10 per task (task = k % 3); regional items are cars (vehicle) for odd k, pedestrians (vru) for
    # even k. Eight items get a reply without a rating and fail: 3 general, 3 driving, 2 regional (k=2 vru,
    # k=5 vehicle).
    tasks = ["general_perception", "driving_suggestion", "region_perception"]
    items = [
        JudgeItem(
            id=f"q{k}",
            question=f"Question {k}",
            reference=f"Reference {k}: brake for the obstacle.",
            answer=f"Prediction {k}: Question {k} answered, brake.",
            category=tasks[k % 3],
            meta={"object_class": "car" if k % 2 else "pedestrian"},
        )
        for k in range(30)
    ]
    failing = {0, 1, 2, 3, 4, 5, 9, 10}

    def script(body, seen):
        k = int(QUESTION_NO.search(last_user_text(body)).group(1))
        return Reply(200, completion_body("I cannot rate this." if k in failing else "Rating: [[7]]"))

    with ScriptedServer(script) as server:
        client = ChatClient(ClientSettings(base_url=server.base_url, model="m", timeout_s=5, max_retries=0))
        result = run_judge(
            items, get_method("codalm"), "robust", JudgeContext(nonce_key=b"g" * 32), VerdictCache(tmp_path), client
        )
    s = result.summary
    assert s["n_error"] == 8 and s["n_ok"] == 22
    groups = s["groups"]
    expected = {  # group: (n ok, n error)
        "task:general_perception": (7, 3),
        "task:driving_suggestion": (7, 3),
        "task:region_perception": (8, 2),
        "class:vru": (4, 1),
        "class:vehicle": (4, 1),
    }
    assert {g: (groups[g]["n"], groups[g]["n_error"]) for g in expected} == expected
    assert sum(g["n_error"] for name, g in groups.items() if name.startswith("task:")) == 8
    assert s["errors_by_category"] == {
        "category:general_perception": 3,
        "category:driving_suggestion": 3,
        "category:region_perception": 2,
    }


@pytest.mark.openai
def test_regional_errors_count_in_their_class_group(tmp_path: Path):
    items = [
        JudgeItem(
            id=f"r{k}",
            question=f"Question {k}",
            reference="A pedestrian waits at the kerb.",
            answer=f"Question {k}: a person.",
            category="region_perception",
            meta={"object_class": ["car", "pedestrian", "traffic_cone"][k % 3]},
        )
        for k in range(9)
    ]

    def script(body, seen):
        k = int(QUESTION_NO.search(last_user_text(body)).group(1))
        return Reply(200, completion_body("no rating" if k in (1, 4, 5) else "Rating: [[3]]"))

    with ScriptedServer(script) as server:
        client = ChatClient(ClientSettings(base_url=server.base_url, model="m", timeout_s=5, max_retries=0))
        result = run_judge(
            items, get_method("codalm"), "robust", JudgeContext(nonce_key=b"g" * 32), VerdictCache(tmp_path), client
        )
    groups = result.summary["groups"]
    # k=1, 4: pedestrian (vru); k=5: traffic_cone
    assert groups["class:vru"]["n_error"] == 2 and groups["class:vru"]["n"] == 1
    assert groups["class:traffic_cone"]["n_error"] == 1 and groups["class:vehicle"]["n_error"] == 0
    assert groups["task:region_perception"]["n_error"] == 3 and groups["task:region_perception"]["n"] == 6
