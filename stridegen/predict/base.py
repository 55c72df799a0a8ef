"""What every predictor shares: the request it answers, the reply it gives, the generation settings, and the
``Predictor`` protocol of the registry kind ``predictor``."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from stridegen.core.canonical import sha256_canonical


class GenerationSettings(BaseModel):
    """How answers are decoded. Greedy by default, as the official STRIDE-QA-Bench inference does (its
    ``InferenceArguments``: ``do_sample`` False, ``max_new_tokens`` 200, seed 42)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_new_tokens: int = Field(200, ge=1)
    temperature: float = Field(0.0, ge=0.0)  # 0: greedy
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    seed: int = 42


@dataclass(frozen=True)
class PromptRequest:
    """One question as a model sees it: the system prompt, the question text and its images (JPEG bytes, oldest
    first; none for a blind run)."""

    system: str
    text: str
    images: tuple[bytes, ...]

    def content_key(self, predictor: dict[str, Any], generation: GenerationSettings) -> str:
        """The cache key: sha256 over the predictor's identity, the prompt, every image's bytes and the generation
        settings (canonical JSON), so any change that could change the answer misses the cache."""
        return sha256_canonical(
            {
                "predictor": predictor,
                "system": self.system,
                "text": self.text,
                "images": [hashlib.sha256(image).hexdigest() for image in self.images],
                "generation": generation.model_dump(),
            }
        )


@dataclass
class Reply:
    """A predictor's answer to one request, or why there is none (``error_kind``: timeout, rate_limit,
    server_error, auth, budget, client_error, ...). A failed reply is recorded, never scored as an answer."""

    text: str | None
    error_kind: str = ""
    error: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0

    @property
    def ok(self) -> bool:
        return self.text is not None


ReplyCallback = Callable[[int, Reply], None]  # (index of the request, its reply), called as each one finishes


class Predictor(Protocol):
    """A model that answers prompt requests (the registry kind ``predictor``).

    ``identity()`` is what names the model and every setting of the backend that can change an answer (it goes
    into the cache key and ``predict.json``; never a secret). ``predict`` answers every request and calls
    ``on_reply(i, reply)`` as soon as request i is answered or has failed for good, in any order; it raises only
    for what stops the whole run (``stridegen.llm.records.ChatAuthError``: the endpoint refused the key).
    """

    def identity(self) -> dict[str, Any]: ...

    def predict(
        self, requests: Sequence[PromptRequest], generation: GenerationSettings, on_reply: ReplyCallback
    ) -> None: ...
