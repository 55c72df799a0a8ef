"""Read a number with its unit out of a model's free-text answer (distance, direction, speed).

Two grammars, chosen by name:

- ``official``: behaves exactly like the STRIDE-QA-Bench toolkit's parser (turingmotors/STRIDE-QA-Dataset,
  ``benchmarks/STRIDE-QA-Bench/src/strideqa_bench/utils/parser.py``, read for behaviour): the first unit family,
  in a fixed priority order, that occurs anywhere in the text wins; numbers carry no sign for distance and speed;
  angles are read only from degree forms (no clock positions); a number may start inside another token. It is
  what the ``strideqa-bench`` tolerance profile uses, so our numbers equal the toolkit's.
- ``robust`` (ours): Unicode-normalised, case-folded text is scanned once, left to right, for quantities
  ``NUMBER [range] UNIT``; for each kind the first quantity of that kind wins. It reads signs, ranges
  ("10-12 m" -> 11), number words ("twelve meters"), thousands separators, clock positions ("2 o'clock"),
  left / right words ("30 degrees to the right" -> -30), and a few unit-less phrases with a definite meaning
  ("directly ahead" -> 0 degrees, "stationary" -> 0 m/s). A bare number with no unit is *not* a value: the
  answer is unparseable and scores as a failure (never as a default unit).

Canonical units: metres, degrees (ego frame, 0 = ahead, counter-clockwise / left positive, (-180, 180]),
metres per second. The grammar is documented in docs/metrics-lsr.md.
"""

from __future__ import annotations

import math
import re
import sys
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter, itemgetter
from typing import Literal

import numpy as np

Kind = Literal["distance", "direction", "velocity"]
ParserMode = Literal["official", "robust"]
KINDS: tuple[Kind, ...] = ("distance", "direction", "velocity")
PARSER_MODES: tuple[ParserMode, ...] = ("official", "robust")

# Unit -> canonical factors. Inch / foot / mile / yard are the international definitions; the official
# toolkit converts miles per hour with 1609.34 m per mile, which the `official` grammar keeps for parity.
_M_PER_INCH = 0.0254
_M_PER_FOOT = 0.3048
_M_PER_YARD = 0.9144
_M_PER_MILE = 1609.344
_MPS_PER_KMH = 1 / 3.6
_MPS_PER_MPH = _M_PER_MILE / 3600.0


@dataclass(frozen=True)
class Parsed:
    """One value read from an answer: ``value`` in the canonical unit, the unit text as written, and how."""

    value: float
    unit: str
    how: str = "number"  # number | range | clock | word


@dataclass(frozen=True)
class Failure:
    """Why nothing could be read: ``empty``, ``no_number``, ``no_unit`` (numbers, none with a unit of this
    kind), ``negative`` (a negative distance or speed), ``bad_clock`` (an hour outside 1-12)."""

    reason: str


ParseOutcome = Parsed | Failure


# ============================================================================================ official grammar
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


def _official_scan(
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
    values, matched, units = _official_scan([text], kind, want_units=True)
    if not matched[0]:
        return _why_not(text)
    return Parsed(float(values[0]), units[0])


def _why_not(text: str) -> Failure:
    return Failure(_failure_reason(text))


_FIRST_NON_BLANK = re.compile(r"[^\s\x00][^\x00]*")  # from an answer's first non-blank to its end (or a NUL)
_FIRST_DIGIT = re.compile(r"\d[^\x00]*")


def _failure_reasons(texts: Sequence[str]) -> list[str]:
    r"""``_failure_reason`` of each text, with two regex passes over the texts joined with NUL: a match starts at
    an answer's first non-blank / first digit and runs to the answer's end. ``\s`` is ``str.isspace`` (what
    ``strip`` removes) and ``\d`` is ``_ANY_NUMBER``'s class. Texts that hold a NUL themselves are done one by one."""
    if not texts:
        return []
    buf = _SEP + _SEP.join(texts)
    if buf.count(_SEP) != len(texts):
        return [_failure_reason(t) for t in texts]
    ends = _answer_ends(texts)
    flags = []
    for pattern in (_FIRST_NON_BLANK, _FIRST_DIGIT):
        found = np.zeros(len(texts), dtype=bool)
        starts = np.fromiter(map(_MATCH_START, pattern.finditer(buf)), np.int64)
        found[np.searchsorted(ends, starts)] = True
        flags.append(found)
    code = np.where(flags[0], np.where(flags[1], 1, 2), 0)
    return np.asarray(["empty", "no_unit", "no_number"], dtype=object)[code].tolist()


def _failure_reason(text: str) -> str:
    """Why an answer with no value of the asked kind failed: ``empty``, ``no_unit`` or ``no_number``."""
    if not text.strip():
        return "empty"
    return "no_unit" if _ANY_NUMBER.search(text) else "no_number"


# ============================================================================================ robust grammar

_NUMBER_WORDS: dict[str, int] = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
}
_TENS_WORDS: dict[str, int] = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
_WORD_NUMBER = re.compile(
    r"\b(?:(?P<tens>"
    + "|".join(_TENS_WORDS)
    + r")(?:[\s-]+(?P<unit>"
    + "|".join(list(_NUMBER_WORDS)[1:10])
    + r"))?|(?P<small>"
    + "|".join(_NUMBER_WORDS)
    + r"))\b"
)

# Characters folded before scanning (after NFKC, which already maps full-width digits, superscripts, ㎞ ...).
_FOLD = str.maketrans(
    {
        "\u2212": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2010": "-",
        "\u2011": "-",  # minus and dashes
        "\u2019": "'",
        "\u2018": "'",
        "`": "'",
        "\u00b4": "'",  # apostrophes
        "\u02da": "°",  # ring above used as a degree sign
        "\u2215": "/",
        "\u00b7": " ",
        "\u22c5": " ",
        "*": " ",  # division slash, middle dots
    }
)
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_DECIMAL_COMMA = re.compile(r"(?<=\d),(?=\d{1,2}(?!\d))")

_NUM = r"(?:\d+(?:\.\d*)?|\.\d+)"
_PER_HOUR = r"(?:\s*/\s*|\s+per\s+|\s+an\s+|\s+a\s+)h(?:(?:ou)?rs?)?"
_PER_SECOND = r"(?:\s*/\s*|\s+per\s+|\s+a\s+)s(?:ec(?:ond)?s?)?"

# (regex, kind, factor). Order matters at one position: the first alternative that matches wins, so compound
# speed units come before the length units they start with.
_UNITS: tuple[tuple[str, Kind, float], ...] = (
    (r"km" + _PER_HOUR, "velocity", _MPS_PER_KMH),
    (r"kilomet(?:er|re)s?" + _PER_HOUR, "velocity", _MPS_PER_KMH),
    (r"km\s*h(?:r)?\s*\^?\s*-\s*1", "velocity", _MPS_PER_KMH),
    (r"k(?:m)?ph|kmh|kmph", "velocity", _MPS_PER_KMH),
    (r"mph|mi\s*/\s*h", "velocity", _MPS_PER_MPH),
    (r"miles?" + _PER_HOUR, "velocity", _MPS_PER_MPH),
    (r"m" + _PER_SECOND, "velocity", 1.0),
    (r"met(?:er|re)s?" + _PER_SECOND, "velocity", 1.0),
    (r"m\s*s\s*\^?\s*-\s*1|ms\^?-1|mps", "velocity", 1.0),
    (r"km|kilomet(?:er|re)s?", "distance", 1000.0),
    (r"cm|centimet(?:er|re)s?", "distance", 0.01),
    (r"mm|millimet(?:er|re)s?", "distance", 0.001),
    (r"met(?:er|re)s?|m", "distance", 1.0),
    (r"ft|feet|foot", "distance", _M_PER_FOOT),
    (r"inch(?:es)?|in(?=\s*(?:$|[.,;:!?)]))", "distance", _M_PER_INCH),
    (r"yards?|yds?", "distance", _M_PER_YARD),
    (r"miles?|mi", "distance", _M_PER_MILE),
    (r"°|degrees?|degs?", "direction", 1.0),
)
_SIDE = (
    r"(?:\s*\(?\s*(?:to\s+(?:the\s+)?|towards?\s+(?:the\s+)?|on\s+(?:the\s+)?)?(?P<side>left|right|clockwise|"
    r"counter-?clockwise|anti-?clockwise))?"
)
_QUANTITY = re.compile(
    r"(?:(?P<between>between)\s+)?(?P<sign>[-+])?(?P<a>" + _NUM + r")"
    r"(?:\s*(?P<sep>-|to|~|and)\s*(?P<b>" + _NUM + r"))?"
    r"\s*-?\s*(?:(?P<unit>" + "|".join(f"(?:{u})" for u, _, _ in _UNITS) + r")(?![a-z0-9])" + _SIDE + r")"
)
_UNIT_RES: tuple[tuple[re.Pattern[str], Kind, float], ...] = tuple(
    (re.compile(u + r"\Z"), kind, factor) for u, kind, factor in _UNITS
)
_CLOCK = re.compile(r"(?<![\d.])(?P<h>\d{1,2})(?::(?P<min>\d{2}))?\s*(?:o\s*'?\s*clock|o'c)\b")
_ANY_NUMBER = re.compile(r"\d")
_AHEAD = re.compile(r"\b(?:straight|directly|dead|right)\s+ahead\b|\bdirectly\s+in\s+front\b")
_BEHIND = re.compile(r"\b(?:directly|right|straight)\s+behind\b")
_STILL = re.compile(r"\b(?:stationary|stopped|not\s+moving|at\s+rest|standing\s+still|motionless)\b")
_DIRECTION_SIGN = {"left": 1.0, "counterclockwise": 1.0, "anticlockwise": 1.0, "right": -1.0, "clockwise": -1.0}


def _words_to_digits(text: str) -> str:
    def repl(m: re.Match[str]) -> str:
        if m.group("small") is not None:
            return str(_NUMBER_WORDS[m.group("small")])
        value = _TENS_WORDS[m.group("tens")]
        if m.group("unit") is not None:
            value += _NUMBER_WORDS[m.group("unit")]
        return str(value)

    return _WORD_NUMBER.sub(repl, text)


def normalize_answer(text: str) -> str:
    """NFKC, fold dashes / apostrophes / degree look-alikes, lower-case, number words -> digits, separators."""
    # The masculine ordinal is often typed for a degree sign; NFKC would turn it into "o", so fold it first.
    text = unicodedata.normalize("NFKC", text.replace("\u00ba", "°")).translate(_FOLD).lower()
    text = _THOUSANDS.sub("", text)
    text = _DECIMAL_COMMA.sub(".", text)
    return _words_to_digits(text)


def _unit_of(unit_text: str) -> tuple[Kind, float]:
    for pattern, kind, factor in _UNIT_RES:
        if pattern.match(unit_text):
            return kind, factor
    raise AssertionError(f"unit text {unit_text!r} matched the scanner but no unit entry")  # pragma: no cover


def _clock_to_deg(hour: int, minute: int) -> float:
    """Clock position -> ego heading angle: 12 = 0, 3 = -90 (right), 9 = +90 (left), 6 = 180."""
    clockwise_deg = (hour % 12) * 30.0 + minute * 0.5
    angle = -clockwise_deg
    wrapped = math.fmod(angle + 180.0, 360.0)
    wrapped = wrapped + 360.0 if wrapped < 0 else wrapped
    wrapped -= 180.0
    return 180.0 if wrapped == -180.0 else wrapped


def _quantity_value(m: re.Match[str], kind: Kind, factor: float) -> ParseOutcome:
    """Value of one scanned quantity: signed first number, a range's midpoint, a left / right side word."""
    a = float(m.group("a"))
    if m.group("sign") == "-":
        a = -a
    value, how = a, "number"
    b = m.group("b")
    if b is not None:
        if m.group("sep") == "and" and m.group("between") is None:
            value = float(b)  # "vehicle 1 and 12 meters": only the number next to the unit is a quantity
        else:
            value, how = (a + float(b)) / 2.0, "range"
    unit = m.group("unit").strip()
    if kind == "direction":
        side = m.group("side")
        if side is not None and m.group("sign") is None:
            value *= _DIRECTION_SIGN[side.replace("-", "")]
        return Parsed(_wrap_deg(value), unit, how)
    if value < 0 or m.group("sign") == "-":
        return Failure("negative")
    return Parsed(value * factor, unit, how)


def _scan_robust(text: str) -> dict[Kind, ParseOutcome]:
    """All three kinds from one scan of ``text`` (one answer may hold a distance, an angle and a speed)."""
    norm = normalize_answer(text)
    found: dict[Kind, tuple[int, ParseOutcome]] = {}
    for m in _QUANTITY.finditer(norm):
        kind, factor = _unit_of(m.group("unit"))
        if kind in found:
            continue
        outcome = _quantity_value(m, kind, factor)
        found[kind] = (m.start(), outcome)
    clock = _CLOCK.search(norm)
    if clock is not None and ("direction" not in found or clock.start() < found["direction"][0]):
        hour, minute = int(clock.group("h")), int(clock.group("min") or 0)
        outcome = (
            Parsed(_clock_to_deg(hour, minute), "o'clock", "clock")
            if 1 <= hour <= 12 and minute < 60
            else Failure("bad_clock")
        )
        found["direction"] = (clock.start(), outcome)
    if "direction" not in found:
        if _AHEAD.search(norm):
            found["direction"] = (0, Parsed(0.0, "ahead", "word"))
        elif _BEHIND.search(norm):
            found["direction"] = (0, Parsed(180.0, "behind", "word"))
    if "velocity" not in found and _STILL.search(norm):
        found["velocity"] = (0, Parsed(0.0, "stationary", "word"))
    missing = _why_not(norm)
    return {kind: found[kind][1] if kind in found else missing for kind in KINDS}


def _wrap_deg(angle: float) -> float:
    wrapped = (angle + 180.0) % 360.0 - 180.0
    return 180.0 if wrapped == -180.0 else wrapped


def parse_robust(text: str, kind: Kind) -> ParseOutcome:
    """Parse with our grammar (see module docstring); ``kind`` selects which quantity to return."""
    if kind not in KINDS:
        raise ValueError(f"unknown answer kind {kind!r}; expected one of {KINDS}")
    return _scan_robust(text)[kind]


def parse_answer(text: str, kind: Kind, mode: ParserMode = "robust") -> ParseOutcome:
    """Read one ``kind`` quantity from ``text`` with the named grammar."""
    if mode == "official":
        return parse_official(text, kind)
    if mode == "robust":
        return parse_robust(text, kind)
    raise ValueError(f"unknown parser mode {mode!r}; expected one of {PARSER_MODES}")


# ============================================================================================ batch interface


def parse_many(texts: Iterable[str], kinds: Iterable[Kind], mode: ParserMode) -> tuple[np.ndarray, list[str]]:
    """Parse ``texts[i]`` as ``kinds[i]``: values float64 [N] (NaN where unparseable) and a reason per item
    (``""`` when parsed). Each distinct (text, kind) is parsed once."""
    texts = list(texts)
    kinds = list(kinds)
    if len(texts) != len(kinds):
        raise ValueError(f"{len(texts)} texts but {len(kinds)} kinds")
    names = sorted(set(kinds))
    code_of = {k: c for c, k in enumerate(names)}
    return parse_grouped(texts, np.fromiter((code_of[k] for k in kinds), np.int64, len(kinds)), names, mode)


def parse_grouped(
    texts: Sequence[str], kind_code: np.ndarray, kind_names: Sequence[str], mode: ParserMode
) -> tuple[np.ndarray, list[str]]:
    """``parse_many`` with kinds given as integer codes into ``kind_names`` (no per-item string compares).

    The distinct texts are found once (a dict over all items); each kind then reads only the distinct texts its
    items use, and the values and failure reasons are spread back to the items with numpy."""
    if mode not in PARSER_MODES:
        raise ValueError(f"unknown parser mode {mode!r}; expected one of {PARSER_MODES}")
    n = len(texts)
    values = np.full(n, np.nan)
    if n == 0:
        return values, []
    kind_of_item = np.asarray([KINDS.index(k) for k in kind_names], dtype=np.int64)[kind_code]
    uniq_texts = list(dict.fromkeys(texts))
    position = dict(zip(uniq_texts, range(len(uniq_texts)), strict=True))
    codes = np.fromiter(map(position.__getitem__, texts), np.int64, n)
    reason_table: dict[str, int] = {"": 0}
    reason_code = np.zeros(n, dtype=np.int64)
    scans: dict[int, dict[Kind, ParseOutcome]] = {}  # robust: one scan per distinct text serves every kind
    for k in np.unique(kind_of_item).tolist():
        kind = KINDS[k]
        sel: np.ndarray | None = kind_of_item == k
        if sel.all():  # type: ignore[union-attr]
            sel = None
        item_codes = codes if sel is None else codes[sel]
        used, local = np.unique(item_codes, return_inverse=True)
        used_list = used.tolist()
        subset = uniq_texts if len(used_list) == len(uniq_texts) else list(map(uniq_texts.__getitem__, used_list))
        if mode == "official":
            got, ok, _ = _official_scan(subset, kind)
            failed = np.flatnonzero(~ok).tolist()
            why = _failure_reasons(list(map(subset.__getitem__, failed)))
        else:
            outcomes = [
                (scans[j] if j in scans else scans.setdefault(j, _scan_robust(t)))[kind]
                for j, t in zip(used_list, subset, strict=True)
            ]
            got = np.asarray([o.value if type(o) is Parsed else math.nan for o in outcomes], dtype=np.float64)
            failed = [j for j, o in enumerate(outcomes) if type(o) is not Parsed]
            why = [outcomes[j].reason for j in failed]
        why_code = np.zeros(len(used_list), dtype=np.int64)
        why_code[failed] = [reason_table.setdefault(w, len(reason_table)) for w in why]
        if sel is None:
            values[:] = got[local]
            reason_code[:] = why_code[local]
        else:
            values[sel] = got[local]
            reason_code[sel] = why_code[local]
    reasons = np.asarray(list(reason_table), dtype=object)[reason_code].tolist()
    return values, reasons


# Structured (numeric) predictions may name their unit; these are the units we convert.
UNIT_FACTORS: dict[str, tuple[Kind, float]] = {
    "m": ("distance", 1.0),
    "meter": ("distance", 1.0),
    "meters": ("distance", 1.0),
    "metre": ("distance", 1.0),
    "metres": ("distance", 1.0),
    "cm": ("distance", 0.01),
    "km": ("distance", 1000.0),
    "ft": ("distance", _M_PER_FOOT),
    "feet": ("distance", _M_PER_FOOT),
    "in": ("distance", _M_PER_INCH),
    "inch": ("distance", _M_PER_INCH),
    "inches": ("distance", _M_PER_INCH),
    "deg": ("direction", 1.0),
    "degree": ("direction", 1.0),
    "degrees": ("direction", 1.0),
    "°": ("direction", 1.0),
    "m/s": ("velocity", 1.0),
    "mps": ("velocity", 1.0),
    "km/h": ("velocity", _MPS_PER_KMH),
    "kmh": ("velocity", _MPS_PER_KMH),
    "kph": ("velocity", _MPS_PER_KMH),
    "mph": ("velocity", _MPS_PER_MPH),
}


def convert_unit(value: float, unit: str | None, kind: Kind) -> float:
    """Convert a structured ``value`` given in ``unit`` (None: already canonical) to ``kind``'s canonical unit.

    Raises ValueError for an unknown unit or one of another kind.
    """
    if unit is None:
        return float(value)
    entry = UNIT_FACTORS.get(unit.strip().lower())
    if entry is None:
        raise ValueError(f"unknown unit {unit!r}")
    unit_kind, factor = entry
    if unit_kind != kind:
        raise ValueError(f"unit {unit!r} is a {unit_kind} unit, expected a {kind} unit")
    return float(value) * factor
