"""Cache and resume: verdicts survive kill -9, cached requests are never sent again, errors are not cached."""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from judge_fake_server import Reply, ScriptedServer, completion_body, last_user_text

from stridegen.eval.judges.cache import VerdictCache
from stridegen.eval.judges.methods import JudgeContext, get_method
from stridegen.eval.judges.records import JudgeItem
from stridegen.eval.judges.runner import run_judge, summarise
from stridegen.llm.client import ChatClient, ClientSettings
from stridegen.llm.records import Completion
from tests.shared_data import REPO

QUESTION_ID = re.compile(r"\[Question\]\nQ(\d+)\?")


def test_cache_survives_a_truncated_tail(tmp_path: Path):
    cache = VerdictCache(tmp_path)
    cache.put("k1", Completion(text="Rating: [[5]]", prompt_tokens=3), {"rating": 5.0}, item_id="a")
    with (tmp_path / "cache.jsonl").open("ab") as f:  # what a kill -9 in the middle of a write leaves
        f.write(b'{"key": "k2", "completion": {"te')
    reopened = VerdictCache(tmp_path)
    assert len(reopened) == 1 and reopened.unreadable_lines == 1
    assert reopened.get("k1")[1] == {"rating": 5.0}
    reopened.put("k3", Completion(text="Rating: [[7]]"), {"rating": 7.0})
    third = VerdictCache(tmp_path)
    assert set(third._entries) == {"k1", "k3"}
    assert third.get("k3")[0].text == "Rating: [[7]]"


def _items(n: int) -> list[JudgeItem]:
    return [JudgeItem(id=f"item{i}", question=f"Q{i}?", answer=f"answer {i}", category="c") for i in range(n)]


@pytest.mark.openai
def test_errors_are_recorded_not_cached_and_not_averaged(tmp_path: Path):
    # item0: unparseable reply on the first run; item1: server errors forever; item2: fine.
    def script(body, seen):
        q = int(QUESTION_ID.search(last_user_text(body)).group(1))
        if q == 0 and seen == 0:
            return Reply(200, completion_body("I would rather not give a number."))
        if q == 1:
            return Reply(500, {"error": {"message": "down"}})
        return Reply(200, completion_body(f"Fine. Rating: [[{q + 6}]]"))

    judge = get_method("general")
    ctx = JudgeContext(nonce_key=b"n" * 32)
    with ScriptedServer(script) as server:
        settings = ClientSettings(
            base_url=server.base_url,
            model="fake",
            timeout_s=5,
            max_retries=1,
            backoff_base_s=0.001,
            backoff_max_s=0.002,
        )
        cache = VerdictCache(tmp_path / "cache")
        first = run_judge(_items(3), judge, "robust", ctx, cache, ChatClient(settings), concurrency=2)
        status = {v["id"]: v["status"] for v in first.verdicts}
        assert status == {"item0": "error", "item1": "error", "item2": "ok"}
        assert first.summary["overall"] == {
            "n": 1,
            "mean_100": 80.0,
            "std_100": None,
            "ci_low_100": None,  # no interval from one score
            "ci_high_100": None,
        }
        assert first.summary["n_error"] == 2
        kinds = sorted(e["kind"] for e in cache.errors())
        assert kinds == ["parse", "server_error"]
        assert len(cache) == 1
        n_before = len(server.requests)
        second = run_judge(
            _items(3), judge, "robust", ctx, VerdictCache(tmp_path / "cache"), ChatClient(settings), concurrency=2
        )
        assert {v["id"]: v["status"] for v in second.verdicts} == {"item0": "ok", "item1": "error", "item2": "ok"}
        resent = [QUESTION_ID.search(last_user_text(r.body)).group(1) for r in server.requests[n_before:]]
        assert sorted(set(resent)) == ["0", "1"]  # item2 was cached: never sent again
        assert second.summary["overall"]["mean_100"] == pytest.approx((60.0 + 80.0) / 2)


def test_summary_ignores_errors():
    verdicts = [
        {"status": "ok", "score_100": 50.0, "category": "a", "groups": ["category:a"]},
        {"status": "error", "category": "a", "error": "x"},
        {"status": "ok", "score_100": 70.0, "category": "b", "groups": ["category:b"], "flags": ["f"]},
    ]
    s = summarise(verdicts)
    assert s["overall"]["mean_100"] == 60.0 and s["n_error"] == 1
    assert s["groups"]["category:a"] == {
        "n": 1,
        "mean_100": 50.0,
        "std_100": None,
        "ci_low_100": None,
        "ci_high_100": None,
        "n_error": 1,
    }
    assert s["flags"] == {"f": 1}


@pytest.mark.slow
def test_kill_dash_nine_then_resume_sends_no_cached_request(tmp_path: Path):
    n_items = 10
    items_path = tmp_path / "items.jsonl"
    items_path.write_text("".join(json.dumps(i.model_dump()) + "\n" for i in _items(n_items)))
    out = tmp_path / "out"

    # The first run's fourth request is held until that run is killed: with one request at a time, each verdict is
    # cached before the next request is sent, so three are cached by then.
    held, release = threading.Event(), threading.Event()
    arrivals = itertools.count()

    def script(body, seen):
        q = int(QUESTION_ID.search(last_user_text(body)).group(1))
        if next(arrivals) == 3:
            held.set()
            release.wait(60)
        return Reply(200, completion_body(f"Rating: [[{1 + q % 10}]]"))

    cmd = [
        sys.executable,
        "-c",
        "from stridegen.cli.judge import judge_app; judge_app()",
        "run",
        "--method",
        "general",
        "--input",
        str(items_path),
        "--out",
        str(out),
        "--model",
        "fake",
        "--concurrency",
        "1",
        "--timeout",
        "5",
        "--max-retries",
        "1",
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OPENAI_API_KEY": "test"}
    with ScriptedServer(script) as server:
        cmd += ["--base-url", server.base_url]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        cache_file = out / "cache" / "cache.jsonl"
        held.wait(30)
        assert proc.poll() is None, proc.stderr.read().decode()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        release.set()
        proc.stderr.close()
        cached_ids = {json.loads(line)["item_id"] for line in cache_file.read_text().splitlines() if line.strip()}
        assert 3 <= len(cached_ids) < n_items
        first_run = len(server.requests)

        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        second_ids = {f"item{QUESTION_ID.search(last_user_text(r.body)).group(1)}" for r in server.requests[first_run:]}
        assert not (second_ids & cached_ids)  # no second request for a cached item
        assert second_ids | cached_ids == {f"item{i}" for i in range(n_items)}
    verdicts = [json.loads(line) for line in (out / "verdicts.jsonl").read_text().splitlines()]
    assert [v["status"] for v in verdicts] == ["ok"] * n_items
    assert [v["score"] for v in verdicts] == [1.0 + i % 10 for i in range(n_items)]
