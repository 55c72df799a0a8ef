"""CODA-LM few-shot Text-Score judge: 1-10 ``Rating: [[N]]`` reported on 1-100, regional results per class."""

from __future__ import annotations

from functools import partial
from typing import Any

from stridegen.eval.judges.methods.base import JudgeContext, JudgeMethod
from stridegen.eval.judges.parsing import parse_bracket_rating
from stridegen.eval.judges.prompts import codalm as P
from stridegen.eval.judges.records import JudgeError, JudgeItem, RequestSpec
from stridegen.eval.judges.safety import delimiter_instructions, wrap_untrusted

TASK_ALIASES = {
    "general_perception": "general_perception",
    "general": "general_perception",
    "region_perception": "region_perception",
    "regional_perception": "region_perception",
    "regional": "region_perception",
    "region": "region_perception",
    "driving_suggestion": "driving_suggestion",
    "suggestion": "driving_suggestion",
}

# Public scripts create the client with temperature=0 and no max_tokens; we bound the reply for cost control.
FAITHFUL_SAMPLING = {"temperature": 0.0, "max_tokens": 1024}


def _parse(text: str, nonce: str | None) -> dict[str, Any]:
    return {"rating": parse_bracket_rating(text, 1, 10, nonce=nonce)}


class CodaLMJudge(JudgeMethod):
    name = "codalm"
    template_version = P.TEMPLATE_VERSION
    scale = "1-10"

    def task(self, item: JudgeItem) -> str:
        task = TASK_ALIASES.get(item.category.strip().lower())
        if task is None:
            raise JudgeError(
                f"item '{item.id}': CODA-LM category must be one of general_perception, "
                f"region_perception, driving_suggestion (got '{item.category}')"
            )
        return task

    def requests(self, item: JudgeItem, mode: str, ctx: JudgeContext) -> list[RequestSpec]:
        self.check_mode(mode)
        if not item.reference:
            raise JudgeError(f"item '{item.id}': CODA-LM Text-Score needs a reference text")
        task = self.task(item)
        robust = mode == "robust"
        nonce = self.nonce(item, ctx) if robust else None
        system = P.SYSTEM[task] + (P.ROBUST_ADDENDUM if robust else "")
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
        use_shots = task != "region_perception" or robust  # the public regional script is zero-shot
        for shot in P.FEW_SHOT[task] if use_shots else []:
            messages.append({"role": "user", "content": self._user(shot["reference"], shot["prediction"], nonce)})
            messages.append({"role": "assistant", "content": shot["response"]})
        messages.append({"role": "user", "content": self._user(item.reference, item.answer, nonce)})
        return [
            RequestSpec(
                tag="rating",
                messages=messages,
                sampling=self.sampling(mode, ctx, FAITHFUL_SAMPLING),
                parse=partial(_parse, nonce=nonce),
                template_version=self.template_version,
            )
        ]

    @staticmethod
    def _user(reference: str, prediction: str, nonce: str | None) -> str:
        if nonce is None:
            return P.FAITHFUL_TEMPLATE.format(reference=reference, prediction=prediction)
        return P.ROBUST_TEMPLATE.format(
            reference=wrap_untrusted(reference, nonce, "REFERENCE"),
            prediction=wrap_untrusted(prediction, nonce, "PREDICTION"),
            delimiter_note=delimiter_instructions(nonce),
        )

    def aggregate(
        self, item: JudgeItem, parsed: dict[str, dict[str, Any]], failed: dict[str, str], ctx: JudgeContext
    ) -> dict[str, Any]:
        if "rating" not in parsed:
            raise JudgeError(f"no rating: {failed.get('rating', 'request missing')}")
        rating = float(parsed["rating"]["rating"])
        task = self.task(item)
        details: dict[str, Any] = {"task": task, "rating_1_10": rating}
        if task == "region_perception":
            details["class_group"] = P.class_group(item.meta.get("object_class") or item.subcategory)
        # Text-Score on 1-100: the 1-10 rating x 10 (CODA-LM reports GPT scores on a 100-point scale).
        return {"score": rating, "score_100": rating * 10.0, "groups": self.groups(item), "details": details}

    def groups(self, item: JudgeItem) -> list[str]:
        """``task:<task>``, and ``class:<group>`` for regional items; ``category:<c>`` when the task is unknown."""
        try:
            task = self.task(item)
        except JudgeError:
            return [f"category:{item.category}"]
        groups = [f"task:{task}"]
        if task == "region_perception":
            groups.append(f"class:{P.class_group(item.meta.get('object_class') or item.subcategory)}")
        return groups
