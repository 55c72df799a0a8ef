"""Final-verdict parsers.

Every parser first removes nonce-delimited quotes of the judged text (safety.strip_delimited) and then reads
the **last** verdict in the reply, so that a score quoted earlier in the judge's analysis (for example from a
hostile answer) never wins over the judge's own final verdict. Scores outside the scale raise
VerdictParseError rather than being clipped.
"""

from __future__ import annotations

import re
from typing import Any

from stridegen.core.bounded_json import decode
from stridegen.eval.judges.records import VerdictParseError
from stridegen.eval.judges.safety import strip_delimited

_NUMBER = r"[-+]?\d+(?:\.\d+)?"
_BRACKET_RATING = re.compile(rf"\[\[\s*({_NUMBER})\s*\]\]")
_PAIR_VERDICT = re.compile(r"\[\[\s*([ABC])\s*\]\]")


def _check_range(value: float, lo: float, hi: float, what: str) -> float:
    if not (lo <= value <= hi):
        raise VerdictParseError(f"{what} {value} is outside [{lo}, {hi}]")
    return value


def parse_bracket_rating(reply: str, lo: float = 1, hi: float = 10, nonce: str | None = None) -> float:
    """The last ``[[N]]`` rating of a reply (MT-Bench / CODA-LM format ``Rating: [[N]]``)."""
    text = strip_delimited(reply, nonce)
    matches = _BRACKET_RATING.findall(text)
    if not matches:
        raise VerdictParseError("no [[rating]] in the judge reply")
    return _check_range(float(matches[-1]), lo, hi, "rating")


def parse_pairwise(reply: str, nonce: str | None = None) -> str:
    """The last ``[[A]]`` / ``[[B]]`` / ``[[C]]`` (tie) verdict of a pairwise reply."""
    text = strip_delimited(reply, nonce)
    matches = _PAIR_VERDICT.findall(text)
    if not matches:
        raise VerdictParseError("no [[A]]/[[B]]/[[C]] verdict in the judge reply")
    return matches[-1]


def parse_keyed_binary(reply: str, key: str, nonce: str | None = None) -> int:
    """The last ``<key>: 0|1`` of a reply (Tiny LVLM-eHub CEE format, e.g. ``Final Score: 1``).

    The key is matched case-insensitively with flexible whitespace and optional markdown emphasis around the
    colon (``**Final Score:** 1``); the colon is required; the digit must stand alone (``10`` or ``0.5`` are not
    binary scores).
    """
    text = strip_delimited(reply, nonce)
    words = r"\s+".join(re.escape(w) for w in key.split())
    pattern = re.compile(rf"(?i){words}[\s*_]*[:：][\s*_]*\(?([01])(?![\d.])")
    matches = pattern.findall(text)
    if not matches:
        raise VerdictParseError(f"no '{key}: 0/1' in the judge reply")
    return int(matches[-1])


def _json_objects(text: str) -> list[tuple[int, str]]:
    """All balanced top-level ``{...}`` substrings (string-aware), with their start offsets."""
    found: list[tuple[int, str]] = []
    depth, start, in_str, escape = 0, -1, False, False
    for i, ch in enumerate(text):
        if in_str:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"' and depth > 0:
            in_str = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                found.append((start, text[start : i + 1]))
    return found


def parse_dimension_json(
    reply: str, overall_key: str = "Overall Score", lo: float = 1, hi: float = 10, nonce: str | None = None
) -> dict[str, Any]:
    """The last JSON object of a reply that holds ``overall_key``.

    Expected shape (IntelliCockpitBench): ``{"Dimension": [score, importance], ..., "Overall Score": s}``;
    a bare number per dimension is accepted too (importance then comes from the method's table). Returns
    ``{"dimensions": {name: {"score": s, "importance": w | None}}, "overall": s}``.
    """
    text = strip_delimited(reply, nonce)
    for _, candidate in reversed(_json_objects(text)):
        try:  # depth-limited, a repeated key refused (an ambiguous verdict): stridegen.core.bounded_json
            obj = decode(candidate)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        keys = {k.strip().lower(): k for k in obj}
        if overall_key.lower() not in keys:
            continue
        overall = _as_number(obj[keys[overall_key.lower()]], overall_key)
        dims: dict[str, dict[str, float | None]] = {}
        for name, value in obj.items():
            if name == keys[overall_key.lower()]:
                continue
            if isinstance(value, list) and len(value) == 2:
                score, importance = _as_number(value[0], name), _as_number(value[1], name)
            else:
                score, importance = _as_number(value, name), None
            dims[name] = {"score": _check_range(score, lo, hi, f"'{name}' score"), "importance": importance}
        return {"dimensions": dims, "overall": _check_range(overall, lo, hi, overall_key)}
    raise VerdictParseError(f"no JSON object with '{overall_key}' in the judge reply")


def _as_number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise VerdictParseError(f"'{what}' is not a number: {value!r}")
    try:
        return float(value)
    except ValueError as exc:
        raise VerdictParseError(f"'{what}' is not a number: {value!r}") from exc
