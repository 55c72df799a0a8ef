"""The ``robust`` answer grammar (ours): Unicode-normalised, case-folded text is scanned once, left to right, for
quantities ``NUMBER [range] UNIT``; for each kind the first quantity of that kind wins. It reads signs, ranges
("10-12 m" -> 11), number words ("twelve meters"), thousands separators, clock positions ("2 o'clock"), left / right
words ("30 degrees to the right" -> -30), and a few unit-less phrases with a definite meaning ("directly ahead" -> 0
degrees, "stationary" -> 0 m/s). A bare number with no unit is *not* a value: the answer is unparseable and scores
as a failure (never as a default unit). The grammar is documented in docs/metrics-lsr.md."""

from __future__ import annotations

import math
import re
import unicodedata

from stridegen.eval.lsr.answer_values import (
    KINDS,
    M_PER_FOOT,
    M_PER_INCH,
    M_PER_MILE,
    M_PER_YARD,
    MPS_PER_KMH,
    MPS_PER_MPH,
    Failure,
    Kind,
    Parsed,
    ParseOutcome,
    why_not,
)

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
    (r"km" + _PER_HOUR, "velocity", MPS_PER_KMH),
    (r"kilomet(?:er|re)s?" + _PER_HOUR, "velocity", MPS_PER_KMH),
    (r"km\s*h(?:r)?\s*\^?\s*-\s*1", "velocity", MPS_PER_KMH),
    (r"k(?:m)?ph|kmh|kmph", "velocity", MPS_PER_KMH),
    (r"mph|mi\s*/\s*h", "velocity", MPS_PER_MPH),
    (r"miles?" + _PER_HOUR, "velocity", MPS_PER_MPH),
    (r"m" + _PER_SECOND, "velocity", 1.0),
    (r"met(?:er|re)s?" + _PER_SECOND, "velocity", 1.0),
    (r"m\s*s\s*\^?\s*-\s*1|ms\^?-1|mps", "velocity", 1.0),
    (r"km|kilomet(?:er|re)s?", "distance", 1000.0),
    (r"cm|centimet(?:er|re)s?", "distance", 0.01),
    (r"mm|millimet(?:er|re)s?", "distance", 0.001),
    (r"met(?:er|re)s?|m", "distance", 1.0),
    (r"ft|feet|foot", "distance", M_PER_FOOT),
    (r"inch(?:es)?|in(?=\s*(?:$|[.,;:!?)]))", "distance", M_PER_INCH),
    (r"yards?|yds?", "distance", M_PER_YARD),
    (r"miles?|mi", "distance", M_PER_MILE),
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


def scan_robust(text: str) -> dict[Kind, ParseOutcome]:
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
    missing = why_not(norm)
    return {kind: found[kind][1] if kind in found else missing for kind in KINDS}


def _wrap_deg(angle: float) -> float:
    wrapped = (angle + 180.0) % 360.0 - 180.0
    return 180.0 if wrapped == -180.0 else wrapped


def parse_robust(text: str, kind: Kind) -> ParseOutcome:
    """Parse with our grammar (see module docstring); ``kind`` selects which quantity to return."""
    if kind not in KINDS:
        raise ValueError(f"unknown answer kind {kind!r}; expected one of {KINDS}")
    return scan_robust(text)[kind]
