"""MT-Bench style judges: single-answer grading (1-10) and pairwise comparison judged in both orders."""

from __future__ import annotations

from functools import partial
from typing import Any

from stridegen.eval.judges.methods.base import JudgeContext, JudgeMethod
from stridegen.eval.judges.parsing import parse_bracket_rating, parse_pairwise
from stridegen.eval.judges.prompts import general as P
from stridegen.eval.judges.records import JudgeError, JudgeItem, RequestSpec
from stridegen.eval.judges.safety import delimiter_instructions, wrap_untrusted
from stridegen.llm.client import user_message

# FastChat llm_judge: temperature 0, max_new_tokens 2048 for the judge.
FAITHFUL_SAMPLING = {"temperature": 0.0, "max_tokens": 2048}


def _parse_single(text: str, nonce: str | None) -> dict[str, Any]:
    return {"rating": parse_bracket_rating(text, 1, 10, nonce=nonce)}


def _parse_pair(text: str, nonce: str | None) -> dict[str, Any]:
    return {"winner": parse_pairwise(text, nonce=nonce)}


def _block(label: str, text: str, nonce: str | None, faithful_open: str, faithful_close: str) -> str:
    if nonce is None:
        return f"{faithful_open}\n{text}\n{faithful_close}"
    return wrap_untrusted(text, nonce, label)


class SingleAnswerJudge(JudgeMethod):
    name = "general"
    template_version = P.TEMPLATE_VERSION
    scale = "1-10"
    uses_images = True

    def requests(self, item: JudgeItem, mode: str, ctx: JudgeContext) -> list[RequestSpec]:
        self.check_mode(mode)
        robust = mode == "robust"
        nonce = self.nonce(item, ctx) if robust else None
        parts = [
            P.SINGLE_INSTRUCTIONS.format(reference_rule=P.REFERENCE_RULE if item.reference else ""),
            f"[Question]\n{item.question}",
        ]
        if item.reference:
            parts.append(
                _block("REFERENCE", item.reference, nonce, "[Reference answer begins]", "[Reference answer ends]")
            )
        parts.append(_block("ANSWER", item.answer, nonce, "[Assistant's answer begins]", "[Assistant's answer ends]"))
        if nonce is not None:
            parts.append(f"{P.ROBUST_ADDENDUM} {delimiter_instructions(nonce)}")
        messages = [
            {"role": "system", "content": P.SINGLE_SYSTEM},
            user_message("\n\n".join(parts), self.image_path(item, ctx)),
        ]
        return [
            RequestSpec(
                tag="rating",
                messages=messages,
                sampling=self.sampling(mode, ctx, FAITHFUL_SAMPLING),
                parse=partial(_parse_single, nonce=nonce),
                template_version=self.template_version,
            )
        ]

    def aggregate(
        self, item: JudgeItem, parsed: dict[str, dict[str, Any]], failed: dict[str, str], ctx: JudgeContext
    ) -> dict[str, Any]:
        if "rating" not in parsed:
            raise JudgeError(f"no rating: {failed.get('rating', 'request missing')}")
        rating = float(parsed["rating"]["rating"])
        return {
            "score": rating,
            "score_100": 10.0 * rating,
            "groups": self.groups(item),
            "details": {"rating_1_10": rating},
        }


def combine_orderings(first: str, second: str) -> str:
    """Winner over both orders. ``first`` judged (answer, answer_b) as (A, B); ``second`` judged them swapped.

    Returns "answer", "answer_b" or "tie". A consistent preference wins; any inconsistency (including one
    tie) is a tie, as in MT-Bench's conservative position-swap rule.
    """
    map_first = {"A": "answer", "B": "answer_b", "C": "tie"}
    map_second = {"A": "answer_b", "B": "answer", "C": "tie"}
    a, b = map_first[first], map_second[second]
    return a if a == b else "tie"


class PairwiseJudge(JudgeMethod):
    name = "pairwise"
    template_version = P.TEMPLATE_VERSION
    scale = "pairwise"
    uses_images = True

    def requests(self, item: JudgeItem, mode: str, ctx: JudgeContext) -> list[RequestSpec]:
        self.check_mode(mode)
        if item.answer_b is None:
            raise JudgeError(f"item '{item.id}': pairwise judging needs 'answer_b'")
        robust = mode == "robust"
        nonce = self.nonce(item, ctx) if robust else None
        image = self.image_path(item, ctx)
        specs = []
        for tag, (first, second) in (("AB", (item.answer, item.answer_b)), ("BA", (item.answer_b, item.answer))):
            parts = [
                P.PAIR_INSTRUCTIONS.format(reference_rule=P.REFERENCE_RULE if item.reference else ""),
                f"[Question]\n{item.question}",
            ]
            if item.reference:
                parts.append(
                    _block("REFERENCE", item.reference, nonce, "[Reference answer begins]", "[Reference answer ends]")
                )
            parts.append(
                _block("ANSWER A", first, nonce, "[Assistant A's answer begins]", "[Assistant A's answer ends]")
            )
            parts.append(
                _block("ANSWER B", second, nonce, "[Assistant B's answer begins]", "[Assistant B's answer ends]")
            )
            if nonce is not None:
                parts.append(f"{P.ROBUST_ADDENDUM} {delimiter_instructions(nonce)}")
            messages = [{"role": "system", "content": P.PAIR_SYSTEM}, user_message("\n\n".join(parts), image)]
            specs.append(
                RequestSpec(
                    tag=tag,
                    messages=messages,
                    sampling=self.sampling(mode, ctx, FAITHFUL_SAMPLING),
                    parse=partial(_parse_pair, nonce=nonce),
                    template_version=self.template_version,
                )
            )
        return specs

    def aggregate(
        self, item: JudgeItem, parsed: dict[str, dict[str, Any]], failed: dict[str, str], ctx: JudgeContext
    ) -> dict[str, Any]:
        if "AB" not in parsed or "BA" not in parsed:
            raise JudgeError(f"both orderings are needed; failures: {failed}")
        first, second = parsed["AB"]["winner"], parsed["BA"]["winner"]
        winner = combine_orderings(first, second)
        score = {"answer": 1.0, "tie": 0.5, "answer_b": 0.0}[winner]
        flags = ["inconsistent_orderings"] if winner == "tie" and not (first == "C" and second == "C") else []
        return {
            "score": score,
            "score_100": 100.0 * score,
            "groups": self.groups(item),
            "flags": flags,
            "details": {"winner": winner, "AB": first, "BA": second},
        }
