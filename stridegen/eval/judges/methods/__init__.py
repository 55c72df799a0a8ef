"""Judge methods by name."""

from __future__ import annotations

from stridegen.eval.judges.methods.base import (
    DEFAULT_MAX_ANSWER_CHARS,
    DEFAULT_MODE,
    FAITHFUL_WARNING,
    MODES,
    JudgeContext,
    JudgeMethod,
)
from stridegen.eval.judges.records import JudgeError


def get_method(name: str) -> JudgeMethod:
    """The ``judge`` backend ``name`` of stridegen.core.registry: intellicockpit, codalm, cee, general, pairwise,
    or a plugin (entry point ``stridegen.judge``, a run-time registration, or ``"package.module:Judge"``)."""
    from stridegen.core import registry
    from stridegen.core.errors import ConfigError

    known = registry.names("judge")
    if name not in known and ":" not in name:
        raise JudgeError(f"unknown judge method '{name}' (known: {', '.join(known)})")
    try:
        method: JudgeMethod = registry.make("judge", name)
    except ConfigError as exc:
        raise JudgeError(str(exc)) from None
    return method


METHOD_NAMES = ("intellicockpit", "codalm", "cee", "general", "pairwise")  # the built-in ones

__all__ = [
    "DEFAULT_MAX_ANSWER_CHARS",
    "DEFAULT_MODE",
    "FAITHFUL_WARNING",
    "METHOD_NAMES",
    "MODES",
    "JudgeContext",
    "JudgeMethod",
    "get_method",
]
