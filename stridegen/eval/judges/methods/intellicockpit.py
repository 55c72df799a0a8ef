"""Rule-calibrated multi-dimensional judge (IntelliCockpitBench style).

Per category/subcategory dimensions with importance weights 1-3, chain of thought, reference answer anchored
at 8/10, safety and positional checks, the image sent to a vision judge. The judge's JSON verdict
``{"Dimension": [score, importance], ..., "Overall Score": s}`` is parsed, the importance-weighted mean of the
dimension scores is recomputed and a disagreement with the judge's own overall is flagged.

Reported score: the judge's Overall Score (it carries the safety cap that a weighted mean cannot know), or the
recomputed weighted mean with ``score_source: weighted`` in the YAML. Both are always in the verdict.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from stridegen.eval.judges.methods.base import JudgeContext, JudgeMethod
from stridegen.eval.judges.parsing import parse_dimension_json
from stridegen.eval.judges.prompts import intellicockpit as P
from stridegen.eval.judges.records import JudgeError, JudgeItem, RequestSpec
from stridegen.eval.judges.safety import delimiter_instructions, wrap_untrusted
from stridegen.llm.client import user_message

# AlignBench (config/temperature.json) samples the judge at 0.1 for factual/reasoning categories and 0.7 for
# open writing; driving questions are factual, so 0.1 unless the YAML sets a per-category temperature.
FAITHFUL_SAMPLING = {"temperature": 0.1, "max_tokens": 2048}
OVERALL_KEY = "Overall Score"

Dimensions = dict[str, tuple[str, int]]


def _parse(text: str, nonce: str | None) -> dict[str, Any]:
    return parse_dimension_json(text, OVERALL_KEY, 1, 10, nonce=nonce)


def weighted_overall(scores: dict[str, float], weights: dict[str, float]) -> float:
    """Importance-weighted mean sum(s_i w_i) / sum(w_i) over the dimensions present in both."""
    common = [k for k in scores if k in weights]
    total = sum(weights[k] for k in common)
    if not common or total <= 0:
        raise JudgeError("no dimension with a positive importance to weigh")
    return sum(scores[k] * weights[k] for k in common) / total


class IntelliCockpitJudge(JudgeMethod):
    name = "intellicockpit"
    template_version = P.TEMPLATE_VERSION
    scale = "1-10"
    uses_images = True

    def dimensions(self, item: JudgeItem, ctx: JudgeContext) -> Dimensions:
        """The dimension table of the item's ``category/subcategory``, else ``category``, else ``default``."""
        tables: dict[str, Any] = ctx.settings.get("dimensions", {}) or {}
        keys = [f"{item.category}/{item.subcategory}"] if item.subcategory else []
        keys += [item.category, "default"]
        for key in keys:
            if key in tables:
                table = tables[key]
                out: Dimensions = {}
                for name, spec in table.items():
                    importance = int(spec["importance"])
                    if importance not in (1, 2, 3):
                        raise JudgeError(f"dimension '{name}' of '{key}': importance must be 1, 2 or 3")
                    out[name] = (str(spec.get("definition", "")), importance)
                return out
        return dict(P.DEFAULT_DIMENSIONS)

    def groups(self, item: JudgeItem) -> list[str]:
        groups = [f"category:{item.category}"]
        if item.subcategory:
            groups.append(f"subcategory:{item.category}/{item.subcategory}")
        return groups

    def requests(self, item: JudgeItem, mode: str, ctx: JudgeContext) -> list[RequestSpec]:
        self.check_mode(mode)
        if not item.reference:
            raise JudgeError(f"item '{item.id}': the rule-calibrated judge needs a reference answer")
        robust = mode == "robust"
        nonce = self.nonce(item, ctx) if robust else None
        dims = self.dimensions(item, ctx)
        listing = "\n".join(f"- {name}: {definition} (importance {w})" for name, (definition, w) in dims.items())
        example: dict[str, list[int] | int] = {name: [7 - i % 3, w] for i, (name, (_, w)) in enumerate(dims.items())}
        example[OVERALL_KEY] = 6
        output = P.OUTPUT_FORMAT.format(example=json.dumps(example))
        answer = wrap_untrusted(item.answer, nonce, "ANSWER") if nonce else item.answer
        reference = wrap_untrusted(item.reference, nonce, "REFERENCE") if nonce else item.reference
        text = P.FAITHFUL_LAYOUT.format(
            question=item.question, reference=reference, answer=answer, dimensions=listing, rules=P.RULES, output=output
        )
        system = P.SYSTEM
        if nonce is not None:
            text += f"\n\n{P.ROBUST_ADDENDUM} {delimiter_instructions(nonce)}"
        sampling = dict(FAITHFUL_SAMPLING)
        temps = ctx.settings.get("temperature_by_category", {}) or {}
        if item.category in temps:
            sampling["temperature"] = float(temps[item.category])
        messages = [{"role": "system", "content": system}, user_message(text, self.image_path(item, ctx))]
        return [
            RequestSpec(
                tag="verdict",
                messages=messages,
                sampling=self.sampling(mode, ctx, sampling),
                parse=partial(_parse, nonce=nonce),
                template_version=self.template_version,
            )
        ]

    def aggregate(
        self, item: JudgeItem, parsed: dict[str, dict[str, Any]], failed: dict[str, str], ctx: JudgeContext
    ) -> dict[str, Any]:
        if "verdict" not in parsed:
            raise JudgeError(f"no verdict: {failed.get('verdict', 'request missing')}")
        verdict = parsed["verdict"]
        table = self.dimensions(item, ctx)
        by_lower = {name.lower(): name for name in table}
        scores: dict[str, float] = {}
        flags: list[str] = []
        extra = []
        for name, d in verdict["dimensions"].items():
            canonical = by_lower.get(name.strip().lower())
            if canonical is None:
                extra.append(name)
                continue
            scores[canonical] = float(d["score"])
            if d.get("importance") is not None and int(d["importance"]) != table[canonical][1]:
                flags.append("importance_mismatch")
        missing = [name for name in table if name not in scores]
        if missing:
            flags.append("missing_dimensions")
        if extra:
            flags.append("unknown_dimensions")
        weights = {name: float(w) for name, (_, w) in table.items()}
        weighted = weighted_overall(scores, weights) if scores else None
        judge_overall = float(verdict["overall"])
        tolerance = float(ctx.settings.get("disagreement_tolerance", 1.0))
        if weighted is not None and abs(weighted - judge_overall) > tolerance:
            flags.append("overall_disagrees")
        source = ctx.settings.get("score_source", "judge")
        if source == "weighted":
            if weighted is None:
                raise JudgeError("no known dimension scored: cannot compute the weighted overall")
            score = weighted
        else:
            score = judge_overall
        return {
            "score": score,
            "score_100": 10.0 * score,
            "groups": self.groups(item),
            "flags": sorted(set(flags)),
            "details": {
                "dimensions": scores,
                "judge_overall": judge_overall,
                "weighted_overall": weighted,
                "missing_dimensions": missing,
                "unknown_dimensions": extra,
                "score_source": source,
            },
        }
