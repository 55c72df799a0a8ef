"""Judge methods by name."""

from __future__ import annotations

from stridegen.eval.judges.methods.base import MODES, JudgeContext, JudgeMethod
from stridegen.eval.judges.records import JudgeError


def get_method(name: str) -> JudgeMethod:
    """The judge method registered under ``name``: intellicockpit, codalm, cee, general, pairwise."""
    from stridegen.eval.judges.methods.cee import CEEJudge
    from stridegen.eval.judges.methods.codalm import CodaLMJudge
    from stridegen.eval.judges.methods.general import PairwiseJudge, SingleAnswerJudge
    from stridegen.eval.judges.methods.intellicockpit import IntelliCockpitJudge

    registry: dict[str, type[JudgeMethod]] = {
        "intellicockpit": IntelliCockpitJudge, "codalm": CodaLMJudge, "cee": CEEJudge,
        "general": SingleAnswerJudge, "pairwise": PairwiseJudge,
    }
    if name not in registry:
        raise JudgeError(f"unknown judge method '{name}' (known: {', '.join(sorted(registry))})")
    return registry[name]()


METHOD_NAMES = ("intellicockpit", "codalm", "cee", "general", "pairwise")

__all__ = ["METHOD_NAMES", "MODES", "JudgeContext", "JudgeMethod", "get_method"]
