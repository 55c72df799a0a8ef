"""Secrets never reach a file: redaction of API keys, Authorization headers and key-shaped strings.

Every record the judges store (cache.jsonl, errors.jsonl, verdicts.jsonl, summary.json) and every error
message they raise passes through ``redact``. It removes

- the values registered with ``register_secret`` (the client registers the API key it reads from the
  environment; values shorter than ``MIN_SECRET_CHARS`` are not registered, they would match ordinary text);
- ``Authorization`` / ``Proxy-Authorization`` header values and ``Bearer <token>``;
- ``api_key=...``-style assignments (api-key, x-api-key, access_token, client_secret, password), and the
  ``user:password@`` of a URL;
- key-shaped strings by their documented prefixes: ``sk-`` (OpenAI, also ``sk-proj-``; Anthropic ``sk-ant-``),
  ``AIza`` (Google API keys), ``hf_`` (Hugging Face tokens), ``ghp_`` / ``gho_`` / ``github_pat_`` (GitHub).
"""

from __future__ import annotations

import re
import threading
from typing import Any

REDACTED = "[REDACTED]"
MIN_SECRET_CHARS = 8

_lock = threading.Lock()
_secrets: set[str] = set()

_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"(?i)\b((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)[^\r\n\"',;}]+"), rf"\1{REDACTED}"),
    (re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=\-]{12,}"), f"Bearer {REDACTED}"),
    (
        re.compile(
            r"(?i)\b((?:x-)?api[_-]?key|access[_-]?token|client[_-]?secret|password)([\"']?\s*[:=]\s*[\"']?)"
            r"[A-Za-z0-9._~+/\-]{6,}"
        ),
        rf"\1\2{REDACTED}",
    ),
    (re.compile(r"(?i)\b(https?://)[^/\s:@]+:[^/\s@]+@"), rf"\1{REDACTED}@"),  # user:password@ in a URL
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"), REDACTED),
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}"), REDACTED),
    (re.compile(r"\bhf_[A-Za-z0-9]{30,}"), REDACTED),
    (re.compile(r"\b(?:ghp|gho|ghu|ghs|github_pat)_[A-Za-z0-9_]{20,}"), REDACTED),
]


def register_secret(value: str | None) -> None:
    """Remember a secret value (an API key) so that ``redact`` removes it wherever it appears."""
    if value and len(value) >= MIN_SECRET_CHARS:
        with _lock:
            _secrets.add(value)


def forget_secrets() -> None:
    """Drop every registered value (tests)."""
    with _lock:
        _secrets.clear()


def redact(text: str) -> str:
    """``text`` with registered secrets, auth headers and key-shaped strings replaced by ``[REDACTED]``."""
    with _lock:
        values = sorted(_secrets, key=len, reverse=True)
    for value in values:
        if value in text:
            text = text.replace(value, REDACTED)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def redact_obj(obj: Any) -> Any:
    """A copy of a JSON-like value with every string (keys included) redacted."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {redact(k) if isinstance(k, str) else k: redact_obj(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact_obj(v) for v in obj]
    return obj
