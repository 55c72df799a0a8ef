"""The judge client against a real loopback HTTP server with scripted faults."""

from __future__ import annotations

import threading
import time

import pytest
from judge_fake_server import Reply, ScriptedServer, completion_body, last_user_text

from stridegen.llm.client import (
    ChatClient,
    ClientSettings,
    CostMeter,
    apply_pricing,
    estimate_prompt_tokens,
    parse_retry_after,
    settings_from_sources,
)
from stridegen.llm.ratelimit import RateLimiter
from stridegen.llm.records import BudgetExceededError, ChatRequestError


def _settings(server: ScriptedServer, **kw) -> ClientSettings:
    base = {
        "base_url": server.base_url,
        "model": "scripted-judge",
        "timeout_s": 0.5,
        "max_retries": 4,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
    }
    return ClientSettings(**{**base, **kw})


def _msgs(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


class SleepRecorder:
    """The client's sleep: records each wait and returns at once."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, s: float) -> None:
        self.calls.append(s)


@pytest.mark.openai
def test_each_fault_is_retried_until_success():
    # First reply for each request is a fault chosen by the request text; the second is a good completion.
    faults = {
        "timeout": Reply(200, completion_body("late"), delay_s=1.0),
        "429": Reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "0.2"}),
        "500": Reply(500, {"error": {"message": "boom"}}),
        "503": Reply(503, "service unavailable"),
        "malformed": Reply(200, "{this is not json"),
        "empty": Reply(200, completion_body("x", choices=False)),
        "nullcontent": Reply(200, completion_body(None)),
    }

    def script(body, seen):
        text = last_user_text(body)
        if seen == 0:
            return faults[text]
        return Reply(200, completion_body(f"ok {text}", prompt_tokens=100, completion_tokens=10))

    with ScriptedServer(script) as server:
        sleeper = SleepRecorder()
        client = ChatClient(_settings(server, price_input_per_mtok=1.0, price_output_per_mtok=2.0), sleep=sleeper)
        for name in faults:
            completion = client.complete(_msgs(name), {"temperature": 0.0, "max_tokens": 16})
            assert completion.text == f"ok {name}"
            assert completion.attempts == 2
        # Retry-After of the 429 was honoured (0.2 s), the others used the small exponential backoff.
        assert any(abs(s - 0.2) < 1e-9 for s in sleeper.calls)
        assert client.meter.requests == len(faults)
        assert client.meter.prompt_tokens == 100 * len(faults)
        assert client.meter.spent_usd == pytest.approx(len(faults) * (100 * 1.0 + 10 * 2.0) / 1e6)
        assert len(server.requests) == 2 * len(faults)


@pytest.mark.openai
def test_retries_exhausted_raise_typed_error_with_kind():
    with ScriptedServer(lambda body, seen: Reply(500, {"error": {"message": "down"}})) as server:
        client = ChatClient(_settings(server, max_retries=2), sleep=lambda s: None)
        with pytest.raises(ChatRequestError) as info:
            client.complete(_msgs("x"), {"max_tokens": 8})
        assert info.value.kind == "server_error"
        assert info.value.attempts == 3
        assert len(server.requests) == 3


@pytest.mark.openai
def test_client_errors_are_not_retried():
    with ScriptedServer(lambda body, seen: Reply(400, {"error": {"message": "bad request"}})) as server:
        client = ChatClient(_settings(server), sleep=lambda s: None)
        with pytest.raises(ChatRequestError) as info:
            client.complete(_msgs("x"), {"max_tokens": 8})
        assert info.value.kind == "client_error"
        assert len(server.requests) == 1


@pytest.mark.openai
def test_timeout_is_enforced():
    with ScriptedServer(lambda body, seen: Reply(200, completion_body("late"), delay_s=1.0)) as server:
        client = ChatClient(_settings(server, timeout_s=0.2, max_retries=0), sleep=lambda s: None)
        t0 = time.monotonic()
        with pytest.raises(ChatRequestError) as info:
            client.complete(_msgs("x"), {"max_tokens": 8})
        assert info.value.kind == "timeout"
        assert time.monotonic() - t0 < 0.9


@pytest.mark.openai
def test_budget_refuses_before_sending():
    with ScriptedServer(lambda body, seen: Reply(200, completion_body("ok", 1000, 1000))) as server:
        # 1 $/token in, 1 $/token out (absurd prices make the arithmetic obvious): budget $0.01 buys nothing.
        client = ChatClient(
            _settings(server, price_input_per_mtok=1e6, price_output_per_mtok=1e6, budget_usd=0.01),
            sleep=lambda s: None,
        )
        with pytest.raises(BudgetExceededError):
            client.complete(_msgs("hello"), {"max_tokens": 8})
        assert server.requests == []


def test_budget_counts_real_usage():
    meter = CostMeter(price_input_per_mtok=10.0, price_output_per_mtok=20.0, budget_usd=0.05)
    r = meter.reserve(0.03)
    assert meter.settle(r, prompt_tokens=1000, completion_tokens=500) == pytest.approx(0.02)
    with pytest.raises(BudgetExceededError):
        meter.reserve(0.031)
    meter.release(meter.reserve(0.03))
    assert meter.summary()["cost_usd"] == pytest.approx(0.02)


def test_parse_retry_after_forms():
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({}) is None
    future = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 <= parse_retry_after({"retry-after": future}) <= 31


def test_rate_limiter_spaces_requests_with_fake_clock():
    now = [0.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    limiter = RateLimiter(requests_per_minute=60, tokens_per_minute=600, clock=lambda: now[0], sleep=sleep)
    for _ in range(60):  # the bucket starts full: a minute's worth passes at once
        assert limiter.acquire(1) == 0.0
    assert limiter.acquire(1) == pytest.approx(1.0)  # then one per second
    limiter.cool_down(5.0)
    assert limiter.acquire(1) == pytest.approx(5.0)
    # Tokens: 600/min = 10/s; a 300-token request after the bucket is drained waits 30 s.
    limiter2 = RateLimiter(tokens_per_minute=600, clock=lambda: now[0], sleep=sleep)
    assert limiter2.acquire(600) == 0.0
    assert limiter2.acquire(300) == pytest.approx(30.0)


def test_rate_limiter_is_thread_safe():
    limiter = RateLimiter(requests_per_minute=600)  # 10/s, bucket of 600: no waiting for 200 calls
    counter = []

    def worker():
        for _ in range(50):
            limiter.acquire(0)
            counter.append(1)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(counter) == 200
    assert limiter._requests.level < 401  # 200 taken from 600 (plus a little refill)


def test_settings_precedence_and_pricing():
    env = {
        "STRIDEGEN_JUDGE_BASE_URL": "http://127.0.0.1:9/v1",
        "STRIDEGEN_JUDGE_MODEL": "gpt-4o-mini-2024-07-18",
        "OPENAI_BASE_URL": "http://ignored/v1",
    }
    s = settings_from_sources({"model": "gpt-4o", "timeout_s": 7}, {}, env)
    assert (s.base_url, s.model, s.timeout_s) == ("http://127.0.0.1:9/v1", "gpt-4o-mini-2024-07-18", 7)
    assert settings_from_sources({"model": "gpt-4o"}, {"model": "cli-model"}, env).model == "cli-model"
    assert settings_from_sources({}, {}, {"OPENAI_BASE_URL": "http://o/v1"}).base_url == "http://o/v1"
    assert (
        settings_from_sources({"base_url": "http://yaml/v1"}, {}, {"OPENAI_BASE_URL": "http://o/v1"}).base_url
        == "http://yaml/v1"
    )
    priced = apply_pricing(s, {"gpt-4o": {"input": 2.5, "output": 10}, "gpt-4o-mini": {"input": 0.15, "output": 0.6}})
    assert (priced.price_input_per_mtok, priced.price_output_per_mtok) == (0.15, 0.6)
    explicit = apply_pricing(
        settings_from_sources({"model": "gpt-4o", "price_input_per_mtok": 1.0}, {}, {}),
        {"gpt-4o": {"input": 2.5, "output": 10}},
    )
    assert explicit.price_input_per_mtok == 1.0


def test_token_estimate_counts_text_and_images():
    text_only = estimate_prompt_tokens([{"role": "user", "content": "a" * 400}], image_tokens=765)
    assert text_only == 100 + 4
    with_image = estimate_prompt_tokens(
        [
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                    {"type": "text", "text": "a" * 400},
                ],
            }
        ],
        image_tokens=765,
    )
    assert with_image == text_only + 765
