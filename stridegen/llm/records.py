"""What a chat request returns or raises: the reply with its accounting, and the request errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stridegen.core.errors import StrideGenError


class ChatRequestError(StrideGenError):
    """A chat request failed for good (retries exhausted or a non-retryable status).

    ``kind`` is a short machine-readable cause: timeout, rate_limit, server_error, malformed_response,
    empty_choices, connection, client_error, auth, budget, reply_too_large.
    """

    def __init__(self, kind: str, message: str, attempts: int = 0) -> None:
        super().__init__(f"{kind}: {message} (after {attempts} attempt(s))")
        self.kind = kind
        self.attempts = attempts


class ChatAuthError(ChatRequestError):
    """The endpoint refused the credentials (HTTP 401) or the access (HTTP 403): the run stops at once.

    ``status`` is the HTTP status; the message is one line, already redacted (redact.py).
    """

    def __init__(self, status: int, message: str) -> None:
        super().__init__("auth", message, 1)
        self.status = status


class BudgetExceededError(ChatRequestError):
    """Sending the request would exceed the configured hard cost budget."""

    def __init__(self, message: str) -> None:
        super().__init__("budget", message, 0)


class ReplyBodyTooLargeError(StrideGenError):
    """A server's HTTP reply body is (or declares itself) longer than the limit (stridegen.llm.http_limit); ``read``:
    the bytes read before giving up (0 when the Content-Length said so), ``limit``: the limit in bytes. The chat
    client turns it into a ``reply_too_large`` ChatRequestError."""

    def __init__(self, message: str, read: int, limit: int) -> None:
        super().__init__(message)
        self.read = read
        self.limit = limit


class UnsupportedEncodingError(StrideGenError):
    """The server compressed its reply with a coding that was not asked for (so it cannot be read within the
    bound), or the compressed data is damaged."""


@dataclass
class Completion:
    """A chat reply with its accounting."""

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
