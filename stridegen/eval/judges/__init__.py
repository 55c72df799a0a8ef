"""LLM-as-a-judge evaluators for free-form answers.

Methods: IntelliCockpitBench rule-calibrated multi-dimensional scoring (``intellicockpit``), CODA-LM few-shot
Text-Score (``codalm``), Tiny LVLM-eHub ChatGPT Ensemble Evaluation (``cee``), MT-Bench style single-answer
and pairwise grading (``general``, ``pairwise``). See docs/judges.md.

Importing this package is cheap: the ``openai`` SDK is imported only when a client is built.
"""

from stridegen.eval.judges.records import JudgeError, JudgeItem, RequestSpec, VerdictParseError

__all__ = ["JudgeError", "JudgeItem", "RequestSpec", "VerdictParseError"]
