"""Tiny LVLM-eHub CEE: five 0/1 prompts from two rules, combined by majority vote.

Tie rule (documented in docs/judges.md): votes are counted over the prompts whose reply parsed; the item
scores 1 when more than half of the counted votes are 1, else 0, so a tie (possible only when some prompts
failed) scores 0 and is flagged ``tie``. An item with fewer than ``min_votes`` (default 3) counted votes is an
error, not a 0. The public code instead takes ``Counter.most_common`` over all five including unparsed
replies scored -1, which can return -1 ("bug item"); we never average such a value.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from stridegen.eval.judges.methods.base import JudgeContext, JudgeMethod
from stridegen.eval.judges.parsing import parse_keyed_binary
from stridegen.eval.judges.prompts import cee as P
from stridegen.eval.judges.records import JudgeError, JudgeItem, RequestSpec
from stridegen.eval.judges.safety import delimiter_instructions, wrap_untrusted

# chatgpt_evaluate.py in Multi-Modality-Arena: gpt-3.5-turbo, temperature 0.5, no max_tokens.
FAITHFUL_SAMPLING = {"temperature": 0.5, "max_tokens": 512}


def _parse(text: str, key: str, nonce: str | None) -> dict[str, Any]:
    return {"vote": parse_keyed_binary(text, key, nonce=nonce)}


def majority_vote(votes: list[int]) -> tuple[int, bool]:
    """(score, tie): 1 iff strictly more than half of ``votes`` are 1; a tie scores 0."""
    ones = sum(votes)
    zeros = len(votes) - ones
    return (1 if ones > zeros else 0), ones == zeros


class CEEJudge(JudgeMethod):
    name = "cee"
    template_version = P.TEMPLATE_VERSION
    scale = "binary"

    def requests(self, item: JudgeItem, mode: str, ctx: JudgeContext) -> list[RequestSpec]:
        self.check_mode(mode)
        if not item.reference:
            raise JudgeError(f"item '{item.id}': CEE needs the correct answer in 'reference'")
        robust = mode == "robust"
        nonce = self.nonce(item, ctx) if robust else None
        answer = wrap_untrusted(item.answer, nonce, "ANSWER") if nonce else item.answer
        body = P.ITEM_TEMPLATE.format(question=item.question, reference=item.reference, answer=answer)
        specs = []
        for i, (system, instructions, heading, key) in enumerate(P.PROMPTS, start=1):
            user = f"{instructions} {P.format_instructions(heading, key)}"
            if nonce is not None:
                user += f" {P.ROBUST_ADDENDUM} {delimiter_instructions(nonce)}"
            messages = [{"role": "system", "content": system}, {"role": "user", "content": f"{user}\n{body}"}]
            specs.append(
                RequestSpec(
                    tag=f"prompt{i}",
                    messages=messages,
                    sampling=self.sampling(mode, ctx, FAITHFUL_SAMPLING),
                    parse=partial(_parse, key=key, nonce=nonce),
                    template_version=self.template_version,
                )
            )
        return specs

    def aggregate(
        self, item: JudgeItem, parsed: dict[str, dict[str, Any]], failed: dict[str, str], ctx: JudgeContext
    ) -> dict[str, Any]:
        min_votes = int(ctx.settings.get("min_votes", 3))
        votes = {tag: int(p["vote"]) for tag, p in sorted(parsed.items())}
        if len(votes) < min_votes:
            raise JudgeError(
                f"only {len(votes)} of {len(P.PROMPTS)} CEE prompts answered (need {min_votes}); failures: {failed}"
            )
        score, tie = majority_vote(list(votes.values()))
        flags = ["tie"] if tie else []
        return {
            "score": float(score),
            "score_100": 100.0 * score,
            "groups": self.groups(item),
            "details": {"votes": votes, "n_votes": len(votes)},
            "flags": flags,
        }
