"""Runner: bounded concurrency, no item lost under faults, budget refusals and unexpected failures as errors."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from judge_fake_server import Reply, ScriptedServer, completion_body

from stridegen.eval.judges.cache import VerdictCache
from stridegen.eval.judges.methods import JudgeContext, get_method
from stridegen.eval.judges.records import JudgeItem
from stridegen.eval.judges.runner import load_items, run_judge
from stridegen.llm.client import ChatClient, ClientSettings


def _items(n: int) -> list[JudgeItem]:
    return [
        JudgeItem(id=f"i{k}", question=f"Q{k}?", answer=f"A{k}", reference="R", category=f"c{k % 2}") for k in range(n)
    ]


def _client(server: ScriptedServer, **kw) -> ChatClient:
    base = {
        "base_url": server.base_url,
        "model": "fake",
        "timeout_s": 0.4,
        "max_retries": 5,
        "backoff_base_s": 0.005,
        "backoff_max_s": 0.01,
    }
    return ChatClient(ClientSettings(**{**base, **kw}))


@pytest.mark.openai
def test_concurrency_is_bounded_and_no_item_is_lost_under_faults(tmp_path: Path):
    lock = threading.Lock()
    state = {"in_flight": 0, "peak": 0}
    faults = [
        Reply(500, {"error": {"message": "x"}}),
        Reply(429, {}, {"Retry-After": "0.01"}),
        Reply(200, "{oops"),
        Reply(200, completion_body("x", choices=False)),
        Reply(200, completion_body("late"), delay_s=0.6),
    ]

    def script(body, seen):
        with lock:
            state["in_flight"] += 1
            state["peak"] = max(state["peak"], state["in_flight"])
        try:
            # Each request first meets two different faults, then succeeds.
            k = len(body["messages"][-1]["content"]) % len(faults)
            if seen < 2:
                reply = faults[(k + seen) % len(faults)]
                if reply.delay_s:  # a timeout: the client gives up at 0.4 s; count it in flight until ~then
                    threading.Event().wait(0.35)
                    with lock:
                        state["in_flight"] -= 1
                    threading.Event().wait(reply.delay_s - 0.35)
                    with lock:
                        state["in_flight"] += 1  # balanced by the finally clause
                    return Reply(200, completion_body("late"))
                return reply
            threading.Event().wait(0.02)
            return Reply(200, completion_body("Rating: [[7]]"))
        finally:
            with lock:
                state["in_flight"] -= 1

    with ScriptedServer(script) as server:
        result = run_judge(
            _items(12),
            get_method("general"),
            "robust",
            JudgeContext(nonce_key=b"q" * 32),
            VerdictCache(tmp_path),
            _client(server),
            concurrency=3,
        )
    assert [v["status"] for v in result.verdicts] == ["ok"] * 12
    assert state["peak"] <= 3
    assert result.summary["overall"]["mean_100"] == 70.0
    assert result.summary["groups"]["category:c0"]["n"] == 6


@pytest.mark.openai
def test_budget_refusals_are_errors_not_zeros(tmp_path: Path):
    with ScriptedServer(lambda body, seen: Reply(200, completion_body("Rating: [[9]]", 10, 5))) as server:
        client = _client(server, price_input_per_mtok=1e6, price_output_per_mtok=1e6, budget_usd=1e-9)
        result = run_judge(
            _items(3),
            get_method("general"),
            "robust",
            JudgeContext(nonce_key=b"q" * 32),
            VerdictCache(tmp_path),
            client,
            concurrency=1,
        )
        assert server.requests == []
    assert {v["status"] for v in result.verdicts} == {"error"}
    assert all("budget" in v["error"] or "budget" in str(v.get("failed")) for v in result.verdicts)
    assert result.summary["overall"]["mean_100"] is None
    assert {e["kind"] for e in VerdictCache(tmp_path).errors()} == {"budget"}


@pytest.mark.openai
def test_unexpected_exception_loses_one_request_not_the_run(tmp_path: Path):
    calls = {"n": 0}

    def script(body, seen):
        return Reply(200, completion_body("Rating: [[5]]"))

    judge = get_method("general")
    original = judge.requests

    def requests_with_a_broken_parser(item, mode, ctx):
        specs = original(item, mode, ctx)
        if item.id == "i1":

            def broken(text):
                calls["n"] += 1
                raise RuntimeError("parser bug")

            specs[0].parse = broken
        return specs

    judge.requests = requests_with_a_broken_parser
    with ScriptedServer(script) as server:
        result = run_judge(
            _items(3),
            judge,
            "robust",
            JudgeContext(nonce_key=b"q" * 32),
            VerdictCache(tmp_path),
            _client(server),
            concurrency=2,
        )
    assert [v["status"] for v in result.verdicts] == ["ok", "error", "ok"]
    assert "RuntimeError: parser bug" in str(result.verdicts[1]["failed"])
    assert calls["n"] == 1


def test_load_items_validates(tmp_path: Path):
    from stridegen.core.errors import PredictionFormatError

    good = tmp_path / "good.jsonl"
    good.write_text('{"id": 1, "answer": "a"}\n\n{"id": "2", "answer": "b", "extra_field": 3}\n')
    items = load_items(good)
    assert [i.id for i in items] == ["1", "2"] and items[1].model_extra == {"extra_field": 3}
    for text in ['{"id": "1"}\n', '{"id": "1", "answer": "a"}\n{"id": "1", "answer": "b"}\n', "{nope\n"]:
        bad = tmp_path / "bad.jsonl"
        bad.write_text(text)
        with pytest.raises(PredictionFormatError):
            load_items(bad)
