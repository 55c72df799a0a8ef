"""Plain data types shared by the judge client, the methods and the runner."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from stridegen.core.errors import StrideGenError


class JudgeError(StrideGenError):
    """Base class of judge errors."""


class VerdictParseError(JudgeError, ValueError):
    """The judge's reply holds no final verdict in the expected format."""


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
