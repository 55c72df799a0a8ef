"""Plain data types shared by the judge client, the methods and the runner."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from stridegen.core.errors import StrideGenError


class JudgeError(StrideGenError):
    """Base class of judge errors."""


class VerdictParseError(JudgeError, ValueError):
    """The judge's reply holds no final verdict in the expected format."""


class JudgeRequestError(JudgeError):
    """A chat request failed for good (retries exhausted or a non-retryable status).

    ``kind`` is a short machine-readable cause: timeout, rate_limit, server_error, malformed_response,
    empty_choices, connection, client_error, auth, budget.
    """

    def __init__(self, kind: str, message: str, attempts: int = 0) -> None:
        super().__init__(f"{kind}: {message} (after {attempts} attempt(s))")
        self.kind = kind
        self.attempts = attempts


class JudgeAuthError(JudgeRequestError):
    """The endpoint refused the credentials (HTTP 401) or the access (HTTP 403): the run stops at once.

    ``status`` is the HTTP status; the message is one line, already redacted (redact.py).
    """

    def __init__(self, status: int, message: str) -> None:
        super().__init__("auth", message, 1)
        self.status = status


class BudgetExceededError(JudgeRequestError):
    """Sending the request would exceed the configured hard cost budget."""

    def __init__(self, message: str) -> None:
        super().__init__("budget", message, 0)


class JudgeItem(BaseModel):
    """One answer to judge (one line of items.jsonl).

    ``answer_b`` is the second answer of a pairwise comparison. ``meta`` carries method-specific fields, e.g.
    ``object_class`` for CODA-LM regional perception or ``human`` scores for agreement studies.
    """

    model_config = ConfigDict(extra="allow")

    id: str
    question: str = ""
    reference: str | None = None
    answer: str
    category: str = "default"
    subcategory: str | None = None
    image: str | None = Field(default=None, description="path to an image file, relative to the items file")
    answer_b: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)


def canonical_json(obj: Any) -> str:
    """Deterministic JSON text (sorted keys, no whitespace) used for hashing requests."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass
class RequestSpec:
    """One chat request that a method needs for an item, and how to read its reply.

    ``parse`` maps the judge's reply text to a dict of parsed values or raises VerdictParseError.
    """

    tag: str
    messages: list[dict[str, Any]]
    sampling: dict[str, Any]
    parse: Callable[[str], dict[str, Any]]
    template_version: str

    def payload(self, model: str) -> dict[str, Any]:
        """Everything that determines the reply: hashed into the cache key."""
        return {
            "model": model,
            "messages": self.messages,
            "sampling": self.sampling,
            "template_version": self.template_version,
        }

    def cache_key(self, model: str) -> str:
        return hashlib.sha256(canonical_json(self.payload(model)).encode("utf-8")).hexdigest()


@dataclass
class Completion:
    """A judge reply with its accounting."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str = ""
    finish_reason: str | None = None
    attempts: int = 1
    latency_s: float = 0.0
    cost_usd: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "model": self.model,
            "finish_reason": self.finish_reason,
            "attempts": self.attempts,
            "latency_s": round(self.latency_s, 4),
            "cost_usd": self.cost_usd,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Completion:
        return cls(
            text=d["text"],
            prompt_tokens=int(d.get("prompt_tokens", 0)),
            completion_tokens=int(d.get("completion_tokens", 0)),
            model=d.get("model", ""),
            finish_reason=d.get("finish_reason"),
            attempts=int(d.get("attempts", 1)),
            latency_s=float(d.get("latency_s", 0.0)),
            cost_usd=float(d.get("cost_usd", 0.0)),
        )
