"""OpenAI-compatible chat client (judges and predict): retries, Retry-After, timeouts, rate limits, cost accounting.

Works with any server that speaks the chat-completions protocol (OpenAI and other hosted APIs, vLLM,
llama.cpp server, ollama): set the base URL, the model and the name of the environment variable that holds
the key. The ``openai`` SDK is imported lazily (extra ``judges``); its own retry loop is switched off
(``max_retries=0``) so that every retry goes through our backoff, our rate limiter and our accounting. The SDK's
HTTP clients carry a response hook (stridegen.llm.http_limit) that stops reading a reply body past the size a
reply of ``max_reply_chars`` characters can take, so a huge or endless body is never held in memory.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import email.utils
import math
import mimetypes
import os
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from stridegen.core.errors import ConfigError, require
from stridegen.llm.ratelimit import RateLimiter
from stridegen.llm.records import (
    BudgetExceededError,
    ChatAuthError,
    ChatRequestError,
    Completion,
    ReplyBodyTooLargeError,
    UnsupportedEncodingError,
)
from stridegen.llm.redact import redact, register_secret

# Rough text-token estimate for cost previews and the tokens-per-minute limiter: ~4 characters per token
# for English text (OpenAI's rule of thumb, help.openai.com "What are tokens and how to count them").
CHARS_PER_TOKEN = 4.0
# Per-message framing overhead in tokens (OpenAI cookbook "How to count tokens with tiktoken": 3-4 per message).
TOKENS_PER_MESSAGE = 4
# The longest reply text kept (characters): about 250,000 tokens at CHARS_PER_TOKEN, far above any answer or
# verdict (a judge's reply is a few hundred tokens, a reasoning model's at most tens of thousands). A longer one
# is a failure of its item (kind ``reply_too_large``), recorded in a line, never stored.
DEFAULT_MAX_REPLY_CHARS = 1_000_000
ENV_MAX_REPLY_CHARS = "STRIDEGEN_REPLY_MAX_CHARS"


class ClientSettings(BaseModel):
    """Connection, retry, rate and cost settings of a chat client (a judge's stridegen/resources/judges/*.yaml
    ``client:``, or ``stridegen predict``'s ``openai`` predictor options)."""

    base_url: str | None = None
    model: str = "gpt-4o-2024-08-06"
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 60.0
    max_retries: int = 6
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    max_retry_after_s: float = 300.0
    concurrency: int = 8
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    supports_images: bool = True
    image_tokens_estimate: int = Field(
        default=765, description="per image; 85 + 4 tiles x 170 (OpenAI vision pricing, a 1024x1024 high-detail image)"
    )
    price_input_per_mtok: float = 0.0
    price_output_per_mtok: float = 0.0
    budget_usd: float | None = None
    token_budget: int | None = Field(
        default=None, description="hard cap on prompt + completion tokens of the run (worst case reserved per request)"
    )
    jitter_seed: int = 0
    max_reply_chars: int = Field(
        default=DEFAULT_MAX_REPLY_CHARS,
        gt=0,
        description="a longer reply is a failure of its item, never stored (env STRIDEGEN_REPLY_MAX_CHARS)",
    )


def settings_from_sources(
    config: dict[str, Any] | None = None, overrides: dict[str, Any] | None = None, environ: dict[str, str] | None = None
) -> ClientSettings:
    """Client settings by precedence: explicit ``overrides`` (CLI) > environment > ``config`` (YAML) > defaults.

    Environment: ``STRIDEGEN_JUDGE_BASE_URL`` and ``STRIDEGEN_JUDGE_MODEL``; ``OPENAI_BASE_URL`` is used only
    when neither the config nor ``STRIDEGEN_JUDGE_BASE_URL`` names an endpoint; ``STRIDEGEN_REPLY_MAX_CHARS`` (the
    longest reply kept, ``max_reply_chars``).
    """
    env = os.environ if environ is None else environ
    config = dict(config or {})
    from_env: dict[str, Any] = {}
    if env.get("STRIDEGEN_JUDGE_BASE_URL"):
        from_env["base_url"] = env["STRIDEGEN_JUDGE_BASE_URL"]
    elif not config.get("base_url") and env.get("OPENAI_BASE_URL"):
        from_env["base_url"] = env["OPENAI_BASE_URL"]
    if env.get("STRIDEGEN_JUDGE_MODEL"):
        from_env["model"] = env["STRIDEGEN_JUDGE_MODEL"]
    if env.get(ENV_MAX_REPLY_CHARS):
        from_env["max_reply_chars"] = reply_limit(env)
    return ClientSettings.model_validate({**config, **from_env, **(overrides or {})})


def reply_limit(environ: Mapping[str, str] | None = None) -> int:
    """``max_reply_chars`` when a caller builds ``ClientSettings`` itself: ``STRIDEGEN_REPLY_MAX_CHARS`` when set
    (a whole number > 0, else ConfigError), else the default."""
    raw = (os.environ if environ is None else environ).get(ENV_MAX_REPLY_CHARS, "").strip()
    if not raw:
        return DEFAULT_MAX_REPLY_CHARS
    if not raw.isdigit() or int(raw) <= 0:
        raise ConfigError(f"{ENV_MAX_REPLY_CHARS}={raw!r}: expected a whole number of characters > 0")
    return int(raw)


def apply_pricing(settings: ClientSettings, pricing: dict[str, dict[str, float]]) -> ClientSettings:
    """Take the model's prices from a pricing table unless they were set explicitly."""
    if {"price_input_per_mtok", "price_output_per_mtok"} & settings.model_fields_set:
        return settings
    entry = pricing.get(settings.model)
    if entry is None:  # dated snapshots share the alias's price: "gpt-4o-2024-08-06" -> "gpt-4o"
        matches = [k for k in pricing if settings.model.startswith(k)]
        entry = pricing[max(matches, key=len)] if matches else None
    if entry is None:
        return settings
    return settings.model_copy(
        update={
            "price_input_per_mtok": float(entry.get("input", 0.0)),
            "price_output_per_mtok": float(entry.get("output", 0.0)),
        }
    )


# ----------------------------------------------------------------------------------------------- messages


def image_part(path: str | Path) -> dict[str, Any]:
    """An ``image_url`` content part with the file inlined as a base64 data URL."""
    path = Path(path)
    mime = mimetypes.guess_type(path.name)[0] or "image/jpeg"
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}}


def user_message(text: str, image: str | Path | None = None) -> dict[str, Any]:
    """A user message; with an image, content is ``[image part, text part]``."""
    if image is None:
        return {"role": "user", "content": text}
    return {"role": "user", "content": [image_part(image), {"type": "text", "text": text}]}


def count_images(messages: list[dict[str, Any]]) -> int:
    return sum(
        1 for m in messages if isinstance(m.get("content"), list) for p in m["content"] if p.get("type") == "image_url"
    )


def message_text(messages: list[dict[str, Any]]) -> str:
    parts: list[str] = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            parts.extend(p.get("text", "") for p in content if p.get("type") == "text")
        else:
            parts.append(str(content or ""))
    return "\n".join(parts)


def estimate_prompt_tokens(messages: list[dict[str, Any]], image_tokens: int = 765) -> int:
    text = message_text(messages)
    return (
        math.ceil(len(text) / CHARS_PER_TOKEN)
        + TOKENS_PER_MESSAGE * len(messages)
        + image_tokens * count_images(messages)
    )


# ----------------------------------------------------------------------------------------------- accounting


class CostMeter:
    """Thread-safe token and cost totals with optional hard budgets (dollars and tokens).

    Before a request is sent its worst case (estimated prompt + ``max_tokens`` output) is reserved; a reservation
    that would push spent + reserved above a budget is refused. After the reply the real usage replaces the
    reservation.
    """

    def __init__(
        self,
        price_input_per_mtok: float,
        price_output_per_mtok: float,
        budget_usd: float | None = None,
        token_budget: int | None = None,
    ) -> None:
        self.price_in = price_input_per_mtok
        self.price_out = price_output_per_mtok
        self.budget_usd = budget_usd
        self.token_budget = token_budget
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.requests = 0
        self.spent_usd = 0.0
        self._reserved = 0.0
        self._reserved_tokens = 0
        self._lock = threading.Lock()

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.price_in + completion_tokens * self.price_out) / 1e6

    def reserve(self, usd: float, tokens: int = 0) -> float:
        """Reserve ``usd`` dollars and ``tokens`` tokens for a request; returns the dollar reservation."""
        with self._lock:
            if self.budget_usd is not None and self.spent_usd + self._reserved + usd > self.budget_usd:
                raise BudgetExceededError(
                    f"request needs up to ${usd:.4f}; spent ${self.spent_usd:.4f}, reserved ${self._reserved:.4f},"
                    f" budget ${self.budget_usd:.4f}"
                )
            used = self.prompt_tokens + self.completion_tokens
            if self.token_budget is not None and used + self._reserved_tokens + tokens > self.token_budget:
                raise BudgetExceededError(
                    f"request needs up to {tokens} tokens; used {used}, reserved {self._reserved_tokens},"
                    f" token budget {self.token_budget}"
                )
            self._reserved += usd
            self._reserved_tokens += tokens
            return usd

    def settle(self, reservation: float, prompt_tokens: int, completion_tokens: int, tokens: int = 0) -> float:
        """Replace a reservation (``reservation`` dollars, ``tokens`` tokens) by the real usage."""
        usd = self.cost(prompt_tokens, completion_tokens)
        with self._lock:
            self._reserved -= reservation
            self._reserved_tokens -= tokens
            self.spent_usd += usd
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens
            self.requests += 1
        return usd

    def release(self, reservation: float, tokens: int = 0) -> None:
        with self._lock:
            self._reserved -= reservation
            self._reserved_tokens -= tokens

    def summary(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": round(self.spent_usd, 6),
        }


# ----------------------------------------------------------------------------------------------- retries


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms``, ``retry-after`` (seconds or HTTP date); None if absent."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    parsed = email.utils.parsedate_to_datetime(value) if value else None
    if parsed is None:
        return None
    return max(0.0, parsed.timestamp() - time.time())


class _Retryable(Exception):
    def __init__(self, kind: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after


class _Call:
    """The bookkeeping of one request across its attempts: the cost reservation, the token estimate, the last
    retryable failure and the wait before the next attempt. The sync and async paths of ``ChatClient`` share it,
    so the retry policy is written once."""

    def __init__(self, client: ChatClient, messages: list[dict[str, Any]], sampling: dict[str, Any]) -> None:
        s = client.settings
        self.client = client
        est_prompt = estimate_prompt_tokens(messages, s.image_tokens_estimate)
        self.est_prompt = est_prompt
        self.budget_tokens = est_prompt + int(sampling.get("max_tokens") or 1024)
        self.reservation = client.meter.reserve(
            client.meter.cost(est_prompt, self.budget_tokens - est_prompt), self.budget_tokens
        )
        self.reserved_tokens = self.budget_tokens
        self.t0 = time.monotonic()

    def attempts(self) -> range:
        return range(self.client.settings.max_retries + 1)

    def wait_after(self, exc: _Retryable, attempt: int) -> float:
        """Seconds to wait before the next attempt; raises ChatRequestError after the last one."""
        s = self.client.settings
        if attempt == s.max_retries:
            raise ChatRequestError(exc.kind, str(exc), s.max_retries + 1)
        if exc.retry_after is not None:
            wait = min(exc.retry_after, s.max_retry_after_s)
            self.client.limiter.cool_down(wait)  # every worker holds, not only this one
            return wait
        return self.client.backoff_s(attempt)

    def succeeded(self, completion: Completion, attempt: int) -> Completion:
        completion.attempts = attempt + 1
        completion.latency_s = time.monotonic() - self.t0
        used = completion.prompt_tokens + completion.completion_tokens
        self.client.limiter.refund_tokens(self.budget_tokens, used)
        completion.cost_usd = self.client.meter.settle(
            self.reservation, completion.prompt_tokens, completion.completion_tokens, self.reserved_tokens
        )
        self.reservation, self.reserved_tokens = 0.0, 0
        return completion

    def body_too_large(self, exc: ReplyBodyTooLargeError, attempt: int) -> ChatRequestError:
        """The ``reply_too_large`` error of a reply whose HTTP body was given up part-way (http_limit). The usage
        it would have stated is unread, so the request is charged its reservation, the most it can cost (the
        estimated prompt and ``max_tokens`` of output): a budget is never overrun by replies nobody read."""
        s = self.client.settings
        self.client.meter.settle(
            self.reservation, self.est_prompt, self.budget_tokens - self.est_prompt, self.reserved_tokens
        )
        self.reservation, self.reserved_tokens = 0.0, 0
        return ChatRequestError(
            "reply_too_large",
            f"{exc} by max_reply_chars {s.max_reply_chars:,}; not read further, not stored, charged as max_tokens "
            f"(raise it with {ENV_MAX_REPLY_CHARS}=<characters> or the client setting)",
            attempt + 1,
        )

    def release(self) -> None:
        if self.reservation or self.reserved_tokens:
            self.client.meter.release(self.reservation, self.reserved_tokens)
            self.reservation, self.reserved_tokens = 0.0, 0


class ChatClient:
    """One chat-completions endpoint. ``complete`` (blocking, thread-safe: the judges call it from a thread pool)
    and ``acomplete`` (a coroutine: ``stridegen predict`` keeps N requests in flight on one event loop) share the
    retry policy, the rate limiter, the cost meter and the error mapping; each uses the SDK's client of its kind,
    made on first use (the async one per event loop)."""

    def __init__(
        self,
        settings: ClientSettings,
        limiter: RateLimiter | None = None,
        meter: CostMeter | None = None,
        sleep: Callable[[float], None] = time.sleep,
        async_sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        openai = require("openai", "judges")
        self.settings = settings
        self._openai = openai
        self._api_key = os.environ.get(settings.api_key_env) or "EMPTY"  # local servers accept any key
        register_secret(os.environ.get(settings.api_key_env))  # never stored: see redact.py
        from stridegen.llm.http_limit import http_client_options  # imports httpx2, which comes with the SDK

        self._http_options = http_client_options
        self._sdk = openai.OpenAI(
            base_url=settings.base_url,
            api_key=self._api_key,
            timeout=settings.timeout_s,
            max_retries=0,
            http_client=openai.DefaultHttpxClient(**http_client_options(settings.max_reply_chars, asynchronous=False)),
        )
        self._async_sdk: Any = None
        self._async_loop: asyncio.AbstractEventLoop | None = None
        self.limiter = limiter or RateLimiter(settings.requests_per_minute, settings.tokens_per_minute)
        self.meter = meter or CostMeter(
            settings.price_input_per_mtok,
            settings.price_output_per_mtok,
            settings.budget_usd,
            settings.token_budget,
        )
        self._sleep = sleep
        self._async_sleep = async_sleep
        self._rng = np.random.default_rng(settings.jitter_seed)
        self._rng_lock = threading.Lock()

    def backoff_s(self, attempt: int) -> float:
        """Exponential backoff with jitter in [0.5, 1] x base x 2^attempt, capped (AWS architecture blog,
        "Exponential Backoff And Jitter", equal-jitter variant)."""
        with self._rng_lock:
            u = float(self._rng.random())
        return min(self.settings.backoff_max_s, self.settings.backoff_base_s * 2.0**attempt) * (0.5 + 0.5 * u)

    def complete(self, messages: list[dict[str, Any]], sampling: dict[str, Any]) -> Completion:
        """The reply to ``messages``, retried as configured (blocking)."""
        call = _Call(self, messages, sampling)
        try:
            for attempt in call.attempts():
                self.limiter.acquire(call.budget_tokens)
                try:
                    with self._mapped_errors():
                        response = self._sdk.post(**self._request(messages, sampling))
                    return self._within_limit(call.succeeded(self._completion_of(response, messages), attempt))
                except _Retryable as exc:
                    self._sleep(call.wait_after(exc, attempt))
                except ReplyBodyTooLargeError as exc:  # not retried: a server that writes that much once will again
                    raise call.body_too_large(exc, attempt) from None
        finally:
            call.release()
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def acomplete(self, messages: list[dict[str, Any]], sampling: dict[str, Any]) -> Completion:
        """``complete`` as a coroutine: waits (rate limits, backoff) without blocking the event loop."""
        call = _Call(self, messages, sampling)
        sdk = self._async_client()
        try:
            for attempt in call.attempts():
                while (delay := self.limiter.try_acquire(call.budget_tokens)) > 0.0:
                    await self._async_sleep(delay)
                try:
                    with self._mapped_errors():
                        response = await sdk.post(**self._request(messages, sampling))
                    return self._within_limit(call.succeeded(self._completion_of(response, messages), attempt))
                except _Retryable as exc:
                    await self._async_sleep(call.wait_after(exc, attempt))
                except ReplyBodyTooLargeError as exc:
                    raise call.body_too_large(exc, attempt) from None
        finally:
            call.release()
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _request(self, messages: list[dict[str, Any]], sampling: dict[str, Any]) -> dict[str, Any]:
        """The chat-completions POST as the SDK's ``post`` takes it. The messages are plain JSON already, so the
        SDK's typed-parameter transform that ``chat.completions.create`` runs first (a third of the client's CPU
        time per request at 64 in flight, benchmarks/bench_predict.py) is skipped; the reply is parsed and the
        errors raised as ``create`` does."""
        from openai.types.chat import ChatCompletion

        body = {"model": self.settings.model, "messages": messages, **sampling}
        return {"path": "/chat/completions", "body": body, "cast_to": ChatCompletion}

    def _async_client(self) -> Any:
        """The SDK's async client of the running event loop (its connection pool belongs to that loop)."""
        loop = asyncio.get_running_loop()
        if self._async_sdk is None or self._async_loop is not loop:
            options = self._http_options(self.settings.max_reply_chars, asynchronous=True)
            self._async_sdk = self._openai.AsyncOpenAI(
                base_url=self.settings.base_url,
                api_key=self._api_key,
                timeout=self.settings.timeout_s,
                max_retries=0,
                http_client=self._openai.DefaultAsyncHttpxClient(**options),
            )
            self._async_loop = loop
        return self._async_sdk

    async def aclose(self) -> None:
        """Close the async client's connections (end of a predict run)."""
        if self._async_sdk is not None:
            await self._async_sdk.close()
            self._async_sdk = None

    def _auth_message(self, status: int, detail: str) -> str:
        """One redacted line: which endpoint refused what, and where the key comes from."""
        s = self.settings
        what = "refused the API key" if status == 401 else "denied access"
        endpoint = s.base_url or "the default OpenAI endpoint"
        detail = " ".join(redact(detail).split())[:300]
        return (
            f"HTTP {status}: {endpoint} {what} (model {s.model}; key from ${s.api_key_env}); "
            f"check the key and its permissions. Server said: {detail}"
        )

    @contextlib.contextmanager
    def _mapped_errors(self) -> Iterator[None]:
        """The SDK's exceptions as ours: retryable ones as ``_Retryable``, 401/403 as ``ChatAuthError``, other
        client errors as ``ChatRequestError``; every message redacted."""
        oa = self._openai
        try:
            yield
        except oa.RateLimitError as exc:
            raise _Retryable("rate_limit", redact(str(exc)), parse_retry_after(exc.response.headers)) from exc
        except oa.APITimeoutError as exc:
            raise _Retryable("timeout", redact(str(exc))) from exc
        except oa.APIConnectionError as exc:
            raise _Retryable("connection", redact(str(exc))) from exc
        except oa.APIStatusError as exc:
            if exc.status_code in (401, 403):
                raise ChatAuthError(exc.status_code, self._auth_message(exc.status_code, str(exc))) from None
            if exc.status_code >= 500 or exc.status_code in (408, 409):
                raise _Retryable(
                    "server_error", redact(f"HTTP {exc.status_code}: {exc}"), parse_retry_after(exc.response.headers)
                ) from exc
            raise ChatRequestError("client_error", redact(f"HTTP {exc.status_code}: {exc}"), 1) from exc
        except UnsupportedEncodingError as exc:  # a coding not asked for: the same server sends it again
            raise ChatRequestError("malformed_response", redact(str(exc)), 1) from None
        except (ValueError, oa.APIResponseValidationError) as exc:  # body that is not JSON / not a completion
            raise _Retryable("malformed_response", redact(f"{type(exc).__name__}: {exc}")) from exc

    def _within_limit(self, completion: Completion) -> Completion:
        """``completion``, or ChatRequestError ``reply_too_large`` when its text is longer than
        ``max_reply_chars`` (its cost is counted: the server did the work; the text is dropped, so no cache, error
        log or output holds it). Not retried: a server that writes that much once will again."""
        limit = self.settings.max_reply_chars
        if len(completion.text) <= limit:
            return completion
        raise ChatRequestError(
            "reply_too_large",
            f"the reply is {len(completion.text):,} characters, over the limit of {limit:,} (max_reply_chars; raise "
            f"it with {ENV_MAX_REPLY_CHARS}=<characters> or the client setting); not stored",
            completion.attempts,
        )

    def _completion_of(self, response: Any, messages: list[dict[str, Any]]) -> Completion:
        choices = getattr(response, "choices", None)
        if not choices:
            raise _Retryable("empty_choices", "the reply has no choices")
        content = choices[0].message.content
        if content is None or not str(content).strip():
            raise _Retryable("empty_content", "the reply's message has no content")
        usage = getattr(response, "usage", None)
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        if usage is None:  # some local servers omit usage: fall back to estimates
            prompt_tokens = estimate_prompt_tokens(messages, self.settings.image_tokens_estimate)
            completion_tokens = math.ceil(len(content) / CHARS_PER_TOKEN)
        return Completion(
            text=str(content),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            model=str(getattr(response, "model", "") or self.settings.model),
            finish_reason=choices[0].finish_reason,
        )
