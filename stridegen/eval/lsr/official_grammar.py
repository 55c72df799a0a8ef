"""The ``official`` answer grammar: behaves exactly like the STRIDE-QA-Bench toolkit's parser
(turingmotors/STRIDE-QA-Dataset, ``benchmarks/STRIDE-QA-Bench/src/strideqa_bench/utils/parser.py``, read for
behaviour): the first unit family, in a fixed priority order, that occurs anywhere in the text wins; numbers carry no
sign for distance and speed; angles are read only from degree forms (no clock positions); a number may start inside
another token. It is what the ``strideqa-bench`` tolerance profile uses, so our numbers equal the toolkit's. Many
answers are read in one regex pass (``official_scan``; module docstring of ``stridegen.eval.lsr.answer_parser``)."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from itertools import repeat
from operator import attrgetter, itemgetter

import numpy as np

from stridegen.eval.lsr.answer_values import KINDS, Kind, Parsed, ParseOutcome, failure_reason, why_not

# Same matching behaviour as the toolkit's regular expressions (same priority order, same token rules);
# conversion factors are applied as ``value * factor`` with the toolkit's factor values so results are
# bit-identical.

# Angle: the toolkit searches ``([-+]?\d+(?:\.\d+)?)\s*-?\s*(°|deg(?:ree)?s?)`` (re.I) and wraps values outside
# [-180, 180]. Distance: for each family in order, ``(\d+\.?\d*)\s*(terms)\b(?!/)``. Speed: for each term in
# order, ``(\d+\.?\d*)\s*\b(term)\b`` with blanks in the term as ``\s+``.
_OFFICIAL_DISTANCE_UNITS: tuple[tuple[float, tuple[str, ...]], ...] = (
    (0.0254, ("inch", "inches", "in")),
    (0.3048, ("foot", "feet", "ft")),
    (0.01, ("cm", "centimeters", "centimetres")),
    (1.0, ("m", "meter", "meters", "metre", "metres")),
    (1000.0, ("km", "kilometer", "kilometers", "kilometre", "kilometres")),
)
_OFFICIAL_VELOCITY_UNITS: tuple[tuple[float, tuple[str, ...]], ...] = (
    (
        1.0,
        (
            "m/s",
            "m s-1",
            r"m s\^1",
            "m s⁻1",
            "mps",
            "meter per second",
            "metre per second",
            "meters per second",
            "metres per second",
        ),
    ),
    (
        1 / 3.6,
        (
            "km/h",
            "km h-1",
            "kmh",
            "kph",
            "kilometer per hour",
            "kilometre per hour",
            "kilometers per hour",
            "kilometres per hour",
        ),
    ),
    (1609.34 / 3600, ("mph", "mile per hour", "miles per hour")),
)

# Fast evaluation with the toolkit's result. Four facts make it exact:
# 1. One pass per kind instead of one search per unit family (distance) or per unit term (speed). A match is
#    NUMBER, blanks, UNIT; the number is taken whole (a shorter one would leave a digit or a dot where the unit
#    must start), so a match's start fixes where its unit starts, and there at most one family / term can match
#    (the families begin with different letters; no speed term is a prefix of another). Scanning match starts
#    left to right meets each unit's leftmost match first, and the toolkit's answer is the match of the unit
#    with the lowest priority index seen. Speed terms can contain a digit ("m s-1"), so speed candidates are
#    found with a cheap scan (number, blanks, m or k) and matched one by one.
# 2. The angle pattern is scanned without its optional sign (so the scan can jump from digit to digit); the
#    toolkit's leftmost match starts at the sign just before that match's number if there is one.
# 3. A match never needs to start right after a digit: from there the number ends where the number from the
#    digit before ends, so the attempt one character earlier already succeeded or failed the same way. The
#    patterns say so with ``\d(?<!\d\d)``, which keeps the scan jumping from digit to digit.
# 4. Many answers are scanned in one call over one string, joined with NUL: no pattern element matches NUL,
#    so no match crosses from one answer into the next, and NUL is neither a word character, a slash, a sign
#    nor a blank, so the boundary and look-ahead tests at an answer's ends see what they see at a string's end.
# 5. The number and the blanks (and the angle's optional dash) are matched possessively (``*+``, ``?+``, Python
#    3.11+): giving any of them back would leave a digit, a dot, a blank or a dash where the unit must start,
#    and every unit starts with a letter or a degree sign, so backtracking there never finds a match; not
#    trying it halves the scan time. The unit alternatives still backtrack ("inch" before "inches"). Python 3.10
#    has no possessive quantifiers; there the patterns use the plain ones (same matches, slower).
_SEP = "\x00"


def _possessive(pattern: str) -> str:
    """``pattern`` as written (possessive ``*+`` / ``?+``) on Python 3.11+, else with plain quantifiers."""
    return pattern if sys.version_info >= (3, 11) else pattern.replace("*+", "*").replace("?+", "?")


_DISTANCE_FACTORS = tuple(factor for factor, _ in _OFFICIAL_DISTANCE_UNITS)
_DISTANCE_ALL = re.compile(
    _possessive(r"(\d(?<!\d\d)\d*+\.?+\d*+)\s*+(?:")
    + "|".join("(" + "|".join(map(re.escape, terms)) + ")" for _, terms in _OFFICIAL_DISTANCE_UNITS)
    + r")\b(?!/)",
    re.IGNORECASE,
)
_VELOCITY_FACTORS = tuple(factor for factor, terms in _OFFICIAL_VELOCITY_UNITS for _ in terms)
_VELOCITY_ALL = re.compile(
    _possessive(r"(\d(?<!\d\d)\d*+\.?+\d*+)\s*+\b(?:")
    + "|".join(
        "(" + re.escape(term).replace("\\ ", "\\s+") + ")" for _, terms in _OFFICIAL_VELOCITY_UNITS for term in terms
    )
    + r")\b",
    re.IGNORECASE,
)
# Where a speed match can start: a number, blanks, a word boundary and the first letter of every speed term
# (m or k; re.IGNORECASE also takes the Kelvin sign).
_VELOCITY_START = re.compile(_possessive(r"\d(?<!\d\d)\d*+\.?+\d*+\s*+\b[mk]"), re.IGNORECASE)
_DIRECTION_UNSIGNED = re.compile(
    _possessive(r"(\d(?<!\d\d)\d*+(?:\.\d+)?+)\s*+-?+\s*+(°|deg(?:ree)?s?)"), re.IGNORECASE
)
_MATCH_START = re.Match.start
_MATCH_LASTINDEX = attrgetter("lastindex")
_GROUP_1 = itemgetter(1)


def _answer_ends(texts: Sequence[str]) -> np.ndarray:
    """Offset of the NUL that ends each answer in ``_SEP + _SEP.join(texts)`` (the buffer the scans read)."""
    return np.cumsum(np.fromiter(map(len, texts), np.int64, len(texts)) + 1)


def _first_per_answer(answer: np.ndarray) -> np.ndarray:
    """Indices of the first entry of each run of equal values in the non-decreasing ``answer``."""
    if len(answer) == 0:
        return answer
    return np.flatnonzero(np.concatenate(([True], answer[1:] != answer[:-1])))


def official_scan(
    texts: Sequence[str], kind: str, want_units: bool = False
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``texts`` read as ``kind`` by the toolkit's rules: values float64 [N] (NaN where nothing matched), a
    matched flag per answer, and (``want_units``) the unit text per answer ("" where nothing matched).

    All answers are scanned in one regex pass over one buffer (see the notes above); the per-match work (which
    answer a match belongs to, which match an answer keeps) is done with numpy on the match offsets.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown answer kind {kind!r}; expected one of {KINDS}")
    n = len(texts)
    values = np.full(n, np.nan)
    matched = np.zeros(n, dtype=bool)
    units = [""] * n if want_units else []
    if n == 0:
        return values, matched, units
    # A leading NUL too, so the character before any match start exists (the sign test below).
    buf = _SEP + _SEP.join(texts)
    if kind == "velocity":
        starts_of = map(_MATCH_START, _VELOCITY_START.finditer(buf))
        found = list(filter(None, map(_VELOCITY_ALL.match, repeat(buf), starts_of)))
    else:
        found = list((_DIRECTION_UNSIGNED if kind == "direction" else _DISTANCE_ALL).finditer(buf))
    if not found:
        return values, matched, units
    start = np.fromiter(map(_MATCH_START, found), np.int64, len(found))
    answer = np.searchsorted(_answer_ends(texts), start)  # first answer whose end lies at or after the start
    if kind == "direction":
        keep = _first_per_answer(answer)  # the leftmost match of each answer
        unit_group = np.full(len(keep), 2)
        numbers = np.fromiter(map(float, map(_GROUP_1, map(found.__getitem__, keep.tolist()))), np.float64, len(keep))
        # the toolkit's match starts at a sign just before the number: float("-x") is exactly -float("x")
        minus = np.fromiter(map("-".__eq__, map(buf.__getitem__, (start[keep] - 1).tolist())), bool, len(keep))
        numbers[minus] = -numbers[minus]
        out = np.flatnonzero((numbers < -180) | (numbers > 180))
        for j in out.tolist():  # rare: wrap with Python's float modulo, as the toolkit does
            numbers[j] = ((float(numbers[j]) + 180) % 360) - 180
    else:
        unit = np.fromiter(map(_MATCH_LASTINDEX, found), np.int64, len(found)) - 2  # group 1 is the number
        factors = np.asarray(_DISTANCE_FACTORS if kind == "distance" else _VELOCITY_FACTORS)
        # per answer the unit with the lowest priority index, and of its matches the leftmost
        order = np.lexsort((unit, answer))
        keep = order[_first_per_answer(answer[order])]
        unit_group = unit[keep] + 2
        numbers = np.fromiter(map(float, map(_GROUP_1, map(found.__getitem__, keep.tolist()))), np.float64, len(keep))
        numbers = numbers * factors[unit[keep]]
    answer = answer[keep]
    values[answer] = numbers
    matched[answer] = True
    if want_units:
        for a, j, g in zip(answer.tolist(), keep.tolist(), unit_group.tolist(), strict=True):
            units[a] = found[j][g]
    return values, matched, units


def parse_official(text: str, kind: Kind) -> ParseOutcome:
    """Parse like the STRIDE-QA-Bench toolkit (see module docstring)."""
    values, matched, units = official_scan([text], kind, want_units=True)
    if not matched[0]:
        return why_not(text)
    return Parsed(float(values[0]), units[0])


_FIRST_NON_BLANK = re.compile(r"[^\s\x00][^\x00]*")  # from an answer's first non-blank to its end (or a NUL)
_FIRST_DIGIT = re.compile(r"\d[^\x00]*")


def failure_reasons(texts: Sequence[str]) -> list[str]:
    r"""``failure_reason`` of each text, with two regex passes over the texts joined with NUL: a match starts at
    an answer's first non-blank / first digit and runs to the answer's end. ``\s`` is ``str.isspace`` (what
    ``strip`` removes) and ``\d`` is the digit class ``failure_reason`` looks for. Texts that hold a NUL themselves
    are done one by one."""
    if not texts:
        return []
    buf = _SEP + _SEP.join(texts)
    if buf.count(_SEP) != len(texts):
        return [failure_reason(t) for t in texts]
    ends = _answer_ends(texts)
    flags = []
    for pattern in (_FIRST_NON_BLANK, _FIRST_DIGIT):
        found = np.zeros(len(texts), dtype=bool)
        starts = np.fromiter(map(_MATCH_START, pattern.finditer(buf)), np.int64)
        found[np.searchsorted(ends, starts)] = True
        flags.append(found)
    code = np.where(flags[0], np.where(flags[1], 1, 2), 0)
    return np.asarray(["empty", "no_unit", "no_number"], dtype=object)[code].tolist()
