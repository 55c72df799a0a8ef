"""Judge methods by name."""

from __future__ import annotations

from stridegen.eval.judges.methods.base import (
    DEFAULT_MAX_ANSWER_CHARS,
    DEFAULT_MODE,
    FAITHFUL_WARNING,
    MODES,
    Judge,
    JudgeContext,
    JudgeMethod,
)
from stridegen.eval.judges.records import JudgeError


def get_method(name: str) -> Judge:
    """The ``judge`` backend ``name`` of stridegen.core.registry: a built-in one (intellicockpit, codalm, cee,
    general, pairwise) or a plugin (entry point ``stridegen.judge``, a run-time registration, or
    ``"package.module:Judge"``)."""
    from stridegen.core import registry
    from stridegen.core.errors import ConfigError

    known = registry.names("judge")
    if name not in known and ":" not in name:
        raise JudgeError(f"unknown judge method '{name}' (known: {', '.join(known)})")
    try:
        method: Judge = registry.make("judge", name)
    except ConfigError as exc:
        raise JudgeError(str(exc)) from None
    return method


def method_scale(name: str) -> str:
    """The score scale the judge backend ``name`` declares (its ``scale``: ``1-10``, ``binary``, ``pairwise``), read
    from its registered factory without building it; "" for a name the registry does not list, a factory that
    cannot be loaded, or one that declares none."""
    from stridegen.core import registry
    from stridegen.core.errors import ConfigError

    if name not in registry.names("judge"):
        return ""
    try:
        return str(getattr(registry.resolve("judge", name), "scale", "") or "")
    except ConfigError:
        return ""


__all__ = [
    "DEFAULT_MAX_ANSWER_CHARS",
    "DEFAULT_MODE",
    "FAITHFUL_WARNING",
    "MODES",
    "Judge",
    "JudgeContext",
    "JudgeMethod",
    "get_method",
    "method_scale",
]
