"""What every judge method provides, and the per-run context it builds requests with."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from stridegen.eval.judges.records import JudgeError, JudgeItem, RequestSpec
from stridegen.eval.judges.safety import make_nonce

MODES = ("faithful", "robust")
DEFAULT_MODE = "robust"
FAITHFUL_WARNING = (
    "faithful mode reproduces the paper's prompt and is open to answer injection: an answer that writes its own "
    "verdict (e.g. 'Rating: [[10]]') sets its score whenever the judge restates the answer after its verdict; "
    "use robust mode (the default) for scores you rely on"
)
# Answers longer than this many characters are cut before judging (JudgeContext.max_answer_chars). 4000
# characters are ~1000 tokens by OpenAI's ~4 characters per token rule of thumb (client.CHARS_PER_TOKEN), or
# ~650 English words: several times a free-form driving answer (the texts of our CODA-LM worked examples are
# at most 263 characters; detailed scene descriptions run to a few hundred words), so honest answers are not
# cut, while a padded answer costs at most ~1000 prompt tokens per request instead of ~60k for a 240 kB one
# (and CEE sends each answer five times).
DEFAULT_MAX_ANSWER_CHARS = 4000


@dataclass
class JudgeContext:
    """Per-run settings shared by all items.

    ``nonce_key`` keys the answer delimiters (safety.make_nonce); ``send_images`` is true when the item has an
    image, the method uses images and the judge model accepts them; ``base_dir`` resolves relative image
    paths; ``settings`` is the method's section of its YAML config; ``max_answer_chars`` caps the judged
    answer(s) (None: no cap; the runner cuts and records it).
    """

    nonce_key: bytes
    send_images: bool = True
    base_dir: Path = Path(".")
    settings: dict[str, Any] = field(default_factory=dict)
    max_answer_chars: int | None = DEFAULT_MAX_ANSWER_CHARS


class Judge(Protocol):
    """A ``judge`` backend (stridegen.core.registry): the chat requests of an item, and its verdict from their
    parsed replies. ``JudgeMethod`` implements the shared helpers; a plugin need not derive from it.

    Optional: ``groups(item)`` (the item's summary groups; absent: ``category:<c>``) and ``scale``, the scale of its
    ``score`` (``1-10``, ``binary``, ``pairwise``; absent or empty: ``judge agreement`` infers it from the scores).
    """

    name: str
    template_version: str
    uses_images: bool

    def requests(self, item: JudgeItem, mode: str, ctx: JudgeContext) -> list[RequestSpec]: ...

    def aggregate(
        self, item: JudgeItem, parsed: dict[str, dict[str, Any]], failed: dict[str, str], ctx: JudgeContext
    ) -> dict[str, Any]: ...


class JudgeMethod:
    """A judge method: builds the chat requests for an item and combines their parsed replies."""

    name: str = ""
    template_version: str = ""
    uses_images: bool = False
    scale: str = ""  # the scale of ``score`` (1-10, binary, pairwise); empty: inferred from the scores

    def requests(self, item: JudgeItem, mode: str, ctx: JudgeContext) -> list[RequestSpec]:
        raise NotImplementedError

    def aggregate(
        self, item: JudgeItem, parsed: dict[str, dict[str, Any]], failed: dict[str, str], ctx: JudgeContext
    ) -> dict[str, Any]:
        """Combine the parsed replies (by request tag) into a verdict.

        Returns at least ``score`` (native scale), ``score_100`` (0-100) and ``groups`` (summary keys).
        Raises JudgeError when the successful replies are not enough for a verdict.
        """
        raise NotImplementedError

    def groups(self, item: JudgeItem) -> list[str]:
        """The summary groups of an item; error verdicts are counted in the same groups as ok ones."""
        return [f"category:{item.category}"]

    # helpers ------------------------------------------------------------------------------------------

    @staticmethod
    def check_mode(mode: str) -> None:
        if mode not in MODES:
            raise JudgeError(f"unknown judge mode '{mode}' (expected one of {MODES})")

    def nonce(self, item: JudgeItem, ctx: JudgeContext) -> str:
        return make_nonce(ctx.nonce_key, self.name, item.id, item.question, item.answer, item.answer_b or "")

    def image_path(self, item: JudgeItem, ctx: JudgeContext) -> Path | None:
        if not (self.uses_images and ctx.send_images and item.image):
            return None
        path = Path(item.image)
        if not path.is_absolute():
            path = ctx.base_dir / path
        if not path.exists():
            raise JudgeError(f"{path}: image of item '{item.id}' does not exist")
        return path

    def sampling(
        self, mode: str, ctx: JudgeContext, faithful_default: dict[str, Any], category: str | None = None
    ) -> dict[str, Any]:
        """Sampling parameters: the paper's for faithful mode, deterministic for robust mode; YAML overrides
        under ``sampling: {faithful: {...}, robust: {...}}``."""
        base = (
            dict(faithful_default)
            if mode == "faithful"
            else {"temperature": 0.0, "max_tokens": faithful_default.get("max_tokens", 1024)}
        )
        base.update(ctx.settings.get("sampling", {}).get(mode, {}) or {})
        return base


def mean_or_none(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None
