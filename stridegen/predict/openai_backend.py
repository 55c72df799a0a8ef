"""The ``openai`` predictor: any OpenAI-compatible chat-completions server (vLLM, SGLang, LMDeploy, TGI, hosted
APIs) through stridegen's one chat client (``stridegen.llm.client.ChatClient``: retries with backoff that honour
Retry-After on 429/503, per-request timeout, rate limits, token and dollar budgets, redaction).

Requests run on one event loop with at most ``concurrency`` in flight. Images travel as base64 JPEG data URLs
before the question text, in one user message after the system prompt. A 401/403 stops the run at once: requests
not yet sent are not sent, and ``ChatAuthError`` (one line, no key in it) is raised after those in flight end.
The key is read from the environment variable ``api_key_env`` and is never part of the identity, the cache or any
file.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Sequence
from typing import Any

from stridegen.llm.client import ChatClient, ClientSettings, reply_limit
from stridegen.llm.records import ChatAuthError, ChatRequestError
from stridegen.predict.base import GenerationSettings, PromptRequest, Reply, ReplyCallback


def chat_messages(request: PromptRequest, detail: str | None = None) -> list[dict[str, Any]]:
    """The chat messages of a request: the system prompt, then one user message with the images (oldest first)
    and the question."""
    parts: list[dict[str, Any]] = []
    for image in request.images:
        url: dict[str, Any] = {"url": "data:image/jpeg;base64," + base64.b64encode(image).decode("ascii")}
        if detail:
            url["detail"] = detail
        parts.append({"type": "image_url", "image_url": url})
    parts.append({"type": "text", "text": request.text})
    return [{"role": "system", "content": request.system}, {"role": "user", "content": parts}]


def sampling_of(generation: GenerationSettings) -> dict[str, Any]:
    """Chat-completions sampling parameters of the generation settings (temperature 0: greedy)."""
    return {
        "max_tokens": generation.max_new_tokens,
        "temperature": generation.temperature,
        "top_p": generation.top_p,
        "seed": generation.seed,
    }


class OpenAIPredictor:
    """Registry ``predictor`` ``openai`` (module docstring). Options are the chat client's settings
    (``stridegen.llm.client.ClientSettings``) plus ``concurrency`` and the image ``detail`` hint."""

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        concurrency: int = 16,
        timeout_s: float = 120.0,
        max_retries: int = 6,
        backoff_base_s: float = 1.0,
        backoff_max_s: float = 60.0,
        max_retry_after_s: float = 300.0,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        price_input_per_mtok: float = 0.0,
        price_output_per_mtok: float = 0.0,
        budget_usd: float | None = None,
        token_budget: int | None = None,
        image_tokens_estimate: int = 765,
        detail: str | None = None,
        max_reply_chars: int | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self.settings = ClientSettings(
            base_url=base_url,
            model=model,
            api_key_env=api_key_env,
            timeout_s=timeout_s,
            max_retries=max_retries,
            backoff_base_s=backoff_base_s,
            backoff_max_s=backoff_max_s,
            max_retry_after_s=max_retry_after_s,
            concurrency=concurrency,
            requests_per_minute=requests_per_minute,
            tokens_per_minute=tokens_per_minute,
            price_input_per_mtok=price_input_per_mtok,
            price_output_per_mtok=price_output_per_mtok,
            budget_usd=budget_usd,
            token_budget=token_budget,
            image_tokens_estimate=image_tokens_estimate,
            max_reply_chars=max_reply_chars or reply_limit(),
        )
        self.concurrency = concurrency
        self.detail = detail
        self._client: ChatClient | None = None

    def identity(self) -> dict[str, Any]:
        return {"backend": "openai", "model": self.settings.model, "base_url": self.settings.base_url or ""}

    @property
    def client(self) -> ChatClient:
        if self._client is None:
            self._client = ChatClient(self.settings)
        return self._client

    def predict(
        self, requests: Sequence[PromptRequest], generation: GenerationSettings, on_reply: ReplyCallback
    ) -> None:
        if requests:
            asyncio.run(self._predict(requests, generation, on_reply))

    async def _predict(
        self, requests: Sequence[PromptRequest], generation: GenerationSettings, on_reply: ReplyCallback
    ) -> None:
        client = self.client
        sampling = sampling_of(generation)
        slots = asyncio.Semaphore(self.concurrency)
        refused: list[ChatAuthError] = []

        async def one(i: int, request: PromptRequest) -> None:
            async with slots:
                if refused:  # the endpoint refused the key: send nothing more
                    return
                try:
                    completion = await client.acomplete(chat_messages(request, self.detail), sampling)
                except ChatAuthError as exc:
                    refused.append(exc)
                    on_reply(i, Reply(None, "auth", str(exc)))
                    return
                except ChatRequestError as exc:
                    on_reply(i, Reply(None, exc.kind, str(exc)))
                    return
                on_reply(
                    i,
                    Reply(
                        completion.text,
                        prompt_tokens=completion.prompt_tokens,
                        completion_tokens=completion.completion_tokens,
                        latency_s=completion.latency_s,
                        cost_usd=completion.cost_usd,
                    ),
                )

        try:
            await asyncio.gather(*(one(i, r) for i, r in enumerate(requests)))
        finally:
            await client.aclose()
        if refused:
            raise refused[0]
