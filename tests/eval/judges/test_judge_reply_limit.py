"""A judge server that returns huge replies (issue 33): a reply over ``max_reply_chars`` is an error of its item,
recorded in one line, not retried and never stored (before, a 24 MB reply was kept in cache.jsonl and
verdicts.jsonl alike); cache files with an overlong line are read back without holding it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from judge_fake_server import Reply, ScriptedServer, completion_body, last_user_text

from stridegen.eval.judges.cache import VerdictCache
from stridegen.eval.judges.methods import JudgeContext, get_method
from stridegen.eval.judges.records import JudgeItem
from stridegen.eval.judges.runner import run_judge, write_outputs
from stridegen.llm.client import DEFAULT_MAX_REPLY_CHARS, ChatClient, ClientSettings, settings_from_sources
from stridegen.llm.jsonl import AppendOnlyJsonl
from stridegen.llm.records import ChatRequestError, Completion

QUESTION_ID = re.compile(r"\[Question\]\nQ(\d+)\?")
HUGE = "Rating: [[5]] " + "blah " * 600_000  # 3 MB of text, over the default limit of 1,000,000 characters


def _settings(server: ScriptedServer, **kw: object) -> ClientSettings:
    base: dict[str, object] = {
        "base_url": server.base_url,
        "model": "fake",
        "timeout_s": 10,
        "max_retries": 3,
        "backoff_base_s": 0.001,
        "backoff_max_s": 0.002,
    }
    return ClientSettings.model_validate({**base, **kw})


@pytest.mark.openai
def test_a_reply_over_the_limit_is_one_unretried_error_with_its_cost_counted() -> None:
    with ScriptedServer(lambda body, seen: Reply(200, completion_body(HUGE, completion_tokens=750_000))) as server:
        client = ChatClient(_settings(server, price_output_per_mtok=1.0), sleep=lambda s: None)
        with pytest.raises(ChatRequestError) as info:
            client.complete([{"role": "user", "content": "x"}], {"max_tokens": 8})
        assert len(server.requests) == 1  # not retried: the same server would write as much again
    assert info.value.kind == "reply_too_large"
    assert f"{len(HUGE):,} characters, over the limit of {DEFAULT_MAX_REPLY_CHARS:,}" in str(info.value)
    assert "STRIDEGEN_REPLY_MAX_CHARS" in str(info.value) and len(str(info.value)) < 300
    assert client.meter.requests == 1 and client.meter.spent_usd == pytest.approx(0.75)  # the server did the work


@pytest.mark.openai
def test_huge_replies_become_recorded_errors_and_nothing_stores_them(tmp_path: Path) -> None:
    def script(body: dict, seen: int) -> Reply:
        q = int(QUESTION_ID.search(last_user_text(body)).group(1))  # type: ignore[union-attr]
        return Reply(200, completion_body(HUGE if q == 0 else f"Fine. Rating: [[{q + 6}]]"))

    items = [JudgeItem(id=f"item{i}", question=f"Q{i}?", answer=f"answer {i}", category="c") for i in range(2)]
    with ScriptedServer(script) as server:
        cache = VerdictCache(tmp_path / "cache")
        result = run_judge(
            items, get_method("general"), "robust", JudgeContext(nonce_key=b"n" * 32), cache,
            ChatClient(_settings(server)), concurrency=1,
        )  # fmt: skip
    assert {v["id"]: v["status"] for v in result.verdicts} == {"item0": "error", "item1": "ok"}
    assert [e["kind"] for e in cache.errors()] == ["reply_too_large"]
    write_outputs(result, tmp_path / "out")
    for path in [*(tmp_path / "cache").iterdir(), *(tmp_path / "out").iterdir()]:
        assert path.stat().st_size < 20_000, path  # the 3 MB reply is in none of them


def test_the_reply_limit_comes_from_the_environment_and_is_checked() -> None:
    assert settings_from_sources({}, environ={}).max_reply_chars == DEFAULT_MAX_REPLY_CHARS
    assert settings_from_sources({"max_reply_chars": 50}, environ={}).max_reply_chars == 50
    env = {"STRIDEGEN_REPLY_MAX_CHARS": "2000000"}
    assert settings_from_sources({"max_reply_chars": 50}, environ=env).max_reply_chars == 2_000_000
    from stridegen.core.errors import ConfigError

    with pytest.raises(ConfigError, match="STRIDEGEN_REPLY_MAX_CHARS='-3'"):
        settings_from_sources({}, environ={"STRIDEGEN_REPLY_MAX_CHARS": "-3"})


def test_cache_with_an_overlong_or_too_deep_line_is_read_without_it(tmp_path: Path) -> None:
    cache = VerdictCache(tmp_path)
    cache.put("k1", Completion(text="Rating: [[5]]"), {"rating": 5.0})
    with (tmp_path / "cache.jsonl").open("ab") as f:  # a reply stored before the limit existed, and a deep line
        f.write(b'{"key": "k2", "completion": {"text": "' + b"x" * (17 << 20) + b'"}, "parsed": {}}\n')
        f.write(b'{"key": "k3", "completion": ' + b"[" * 100_000 + b"]" * 100_000 + b', "parsed": {}}\n')
    cache.put("k4", Completion(text="Rating: [[7]]"), {"rating": 7.0})
    reopened = VerdictCache(tmp_path)
    assert set(reopened._entries) == {"k1", "k4"} and reopened.unreadable_lines == 2
    small = AppendOnlyJsonl(tmp_path / "cache.jsonl", max_line_bytes=1000)
    assert [r["key"] for r in small.read()[0]] == ["k1", "k4"]
