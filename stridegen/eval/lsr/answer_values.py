"""What a parsed answer is (``stridegen.eval.lsr.answer_parser``): the quantity kinds and the grammars' names, a
parse's outcome (``Parsed`` / ``Failure`` and why an answer failed), the canonical units (metres, degrees, metres
per second) with the factors of other units, and the conversion of a structured prediction's named unit."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Kind = Literal["distance", "direction", "velocity"]
ParserMode = Literal["official", "robust"]
KINDS: tuple[Kind, ...] = ("distance", "direction", "velocity")
PARSER_MODES: tuple[ParserMode, ...] = ("official", "robust")

# Unit -> canonical factors. Inch / foot / mile / yard are the international definitions; the official
# toolkit converts miles per hour with 1609.34 m per mile, which the `official` grammar keeps for parity.
M_PER_INCH = 0.0254
M_PER_FOOT = 0.3048
M_PER_YARD = 0.9144
M_PER_MILE = 1609.344
MPS_PER_KMH = 1 / 3.6
MPS_PER_MPH = M_PER_MILE / 3600.0


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

_ANY_NUMBER = re.compile(r"\d")


def why_not(text: str) -> Failure:
    """The ``Failure`` of an answer that holds no value of the asked kind (``failure_reason``)."""
    return Failure(failure_reason(text))


def failure_reason(text: str) -> str:
    """Why an answer with no value of the asked kind failed: ``empty``, ``no_unit`` or ``no_number``."""
    if not text.strip():
        return "empty"
    return "no_unit" if _ANY_NUMBER.search(text) else "no_number"


# Structured (numeric) predictions may name their unit; these are the units we convert.
UNIT_FACTORS: dict[str, tuple[Kind, float]] = {
    "m": ("distance", 1.0),
    "meter": ("distance", 1.0),
    "meters": ("distance", 1.0),
    "metre": ("distance", 1.0),
    "metres": ("distance", 1.0),
    "cm": ("distance", 0.01),
    "km": ("distance", 1000.0),
    "ft": ("distance", M_PER_FOOT),
    "feet": ("distance", M_PER_FOOT),
    "in": ("distance", M_PER_INCH),
    "inch": ("distance", M_PER_INCH),
    "inches": ("distance", M_PER_INCH),
    "deg": ("direction", 1.0),
    "degree": ("direction", 1.0),
    "degrees": ("direction", 1.0),
    "°": ("direction", 1.0),
    "m/s": ("velocity", 1.0),
    "mps": ("velocity", 1.0),
    "km/h": ("velocity", MPS_PER_KMH),
    "kmh": ("velocity", MPS_PER_KMH),
    "kph": ("velocity", MPS_PER_KMH),
    "mph": ("velocity", MPS_PER_MPH),
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
