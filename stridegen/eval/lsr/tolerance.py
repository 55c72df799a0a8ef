"""Tolerance profiles for the STRIDE-QA localization metrics, and the vectorised success tests.

A profile says, for each answer kind, when a predicted value counts as correct, which answer grammar reads the
model's text (see ``answer_parser``), and one aggregation convention. Two are built in:

- ``paper`` (STRIDE-QA, arXiv 2508.10427, section 5.2 / appendix C): distance within 25 % of the truth; direction
  within 10 degrees (with wrap-around); speed within 20 % of the truth, or within 0.5 m/s when the truth is below
  1.0 m/s. Our robust answer grammar. Temporal consistency over every group.
- ``strideqa-bench``: exactly what the official toolkit does (turingmotors/STRIDE-QA-Dataset,
  ``benchmarks/STRIDE-QA-Bench/config/tolerance.yaml`` and ``utils/metric_utils.py::judge_success``): the same
  distance and direction rules, but the speed floor switches to an absolute tolerance only below 0.5 m/s, and that
  tolerance is ``threshold * range = 0.5 * 0.2 = 0.1 m/s`` (the YAML comment says "below 1.0 m/s"; the code does
  not). The official grammar. TLC / MLSR only over groups that have a scenario relation (the toolkit's
  ``pivot_table`` drops groups whose relation is missing).

Profiles can also be read from YAML (ours, see configs/tolerance/*.yaml) or from an official ``tolerance.yaml``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from stridegen.core.errors import ConfigError
from stridegen.eval.lsr.answer_values import PARSER_MODES, Kind, ParserMode

RuleFn = Literal["relative", "absolute", "angular_absolute"]
RULE_FNS: tuple[RuleFn, ...] = ("relative", "absolute", "angular_absolute")


@dataclass(frozen=True)
class Rule:
    """When ``pred`` counts as ``gt``.

    - ``relative``: ``gt * (1 - range) <= pred <= gt * (1 + range)``; if ``floor_below`` is set and
      ``gt < floor_below``: ``|pred - gt| <= floor_abs`` instead.
    - ``absolute``: ``|pred - gt| <= range``.
    - ``angular_absolute``: ``|((pred - gt + 180) mod 360) - 180| <= range`` (degrees, wrap-around).

    The inequalities are inclusive and written in the toolkit's arithmetic order so results are bit-identical.
    """

    fn: RuleFn
    range: float
    floor_below: float | None = None
    floor_abs: float | None = None

    def __post_init__(self) -> None:
        if self.fn not in RULE_FNS:
            raise ConfigError(f"unknown tolerance function {self.fn!r}; expected one of {RULE_FNS}")
        if not np.isfinite(self.range) or self.range < 0:
            raise ConfigError(f"tolerance range must be finite and >= 0, got {self.range}")
        if (self.floor_below is None) != (self.floor_abs is None):
            raise ConfigError("floor_below and floor_abs must be given together")
        if self.floor_below is not None and self.fn != "relative":
            raise ConfigError("an absolute floor only applies to a relative tolerance")

    def judge(self, gt: np.ndarray, pred: np.ndarray) -> np.ndarray:
        """Boolean success per item; NaN predictions (unparseable answers) and NaN truths fail."""
        gt = np.asarray(gt, dtype=np.float64)
        pred = np.asarray(pred, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            if self.fn == "angular_absolute":
                diff = np.mod(pred - gt + 180, 360) - 180
                return np.abs(diff) <= self.range
            if self.fn == "absolute":
                return np.abs(pred - gt) <= self.range
            ok = (gt * (1 - self.range) <= pred) & (pred <= gt * (1 + self.range))
            if self.floor_below is not None:
                near_zero = gt < self.floor_below
                ok = np.where(near_zero, np.abs(pred - gt) <= self.floor_abs, ok)
            return ok


@dataclass(frozen=True)
class ToleranceProfile:
    """Rules per answer kind, the answer grammar, and whether TLC / MLSR need a group's scenario relation."""

    name: str
    distance: Rule
    direction: Rule
    velocity: Rule
    parser: ParserMode
    consistency_requires_relation: bool

    def __post_init__(self) -> None:
        if self.parser not in PARSER_MODES:
            raise ConfigError(f"unknown parser {self.parser!r}; expected one of {PARSER_MODES}")

    def rule(self, kind: Kind) -> Rule:
        return {"distance": self.distance, "direction": self.direction, "velocity": self.velocity}[kind]

    def with_parser(self, parser: ParserMode | None) -> ToleranceProfile:
        return self if parser is None else replace(self, parser=parser)


PAPER = ToleranceProfile(
    name="paper",
    distance=Rule("relative", 0.25),
    direction=Rule("angular_absolute", 10.0),
    velocity=Rule("relative", 0.2, floor_below=1.0, floor_abs=0.5),
    parser="robust",
    consistency_requires_relation=False,
)
# Official: absolute_floor.threshold = 0.5 and the absolute tolerance is computed as threshold * range.
_OFFICIAL_FLOOR = 0.5
STRIDEQA_BENCH = ToleranceProfile(
    name="strideqa-bench",
    distance=Rule("relative", 0.25),
    direction=Rule("angular_absolute", 10),
    velocity=Rule("relative", 0.2, floor_below=_OFFICIAL_FLOOR, floor_abs=_OFFICIAL_FLOOR * 0.2),
    parser="official",
    consistency_requires_relation=True,
)
BUILTIN_PROFILES: dict[str, ToleranceProfile] = {p.name: p for p in (PAPER, STRIDEQA_BENCH)}


def _rule_from_mapping(where: str, data: Any) -> Rule:
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
    unknown = set(data) - {"fn", "range", "absolute_floor"}
    if unknown:
        raise ConfigError(f"{where}: unknown keys {sorted(unknown)}")
    try:
        fn, rng = data["fn"], float(data["range"])
    except KeyError as exc:
        raise ConfigError(f"{where}: missing key {exc.args[0]!r}") from exc
    floor = data.get("absolute_floor")
    if floor is None:
        return Rule(fn, rng)
    if not isinstance(floor, dict) or "threshold" not in floor:
        raise ConfigError(f"{where}.absolute_floor: expected a mapping with 'threshold'")
    threshold = float(floor["threshold"])
    # Official semantics: tolerance computed AT the threshold; ours may name it ("tolerance") explicitly.
    floor_abs = float(floor["tolerance"]) if "tolerance" in floor else threshold * rng
    return Rule(fn, rng, floor_below=threshold, floor_abs=floor_abs)


def profile_from_mapping(data: Any, source: str = "<mapping>") -> ToleranceProfile:
    """Build a profile from our YAML schema or from an official ``tolerance.yaml`` (top key ``tolerance``).

    Ours: ``{name, parser, consistency_requires_relation, tolerance: {distance, direction, velocity}}`` where each
    rule is ``{fn, range[, absolute_floor: {threshold[, tolerance]}]}`` (the official rule schema). An official
    file alone gives the ``strideqa-bench`` conventions (official grammar, relation-filtered consistency).
    """
    if not isinstance(data, dict) or "tolerance" not in data:
        raise ConfigError(f"{source}: expected a mapping with a 'tolerance' section")
    rules = data["tolerance"]
    if not isinstance(rules, dict):
        raise ConfigError(f"{source}: 'tolerance' must be a mapping")
    missing = {"distance", "direction", "velocity"} - set(rules)
    if missing:
        raise ConfigError(f"{source}: tolerance section lacks {sorted(missing)}")
    return ToleranceProfile(
        name=str(data.get("name", Path(source).stem)),
        distance=_rule_from_mapping(f"{source}: tolerance.distance", rules["distance"]),
        direction=_rule_from_mapping(f"{source}: tolerance.direction", rules["direction"]),
        velocity=_rule_from_mapping(f"{source}: tolerance.velocity", rules["velocity"]),
        parser=data.get("parser", "official"),
        consistency_requires_relation=bool(data.get("consistency_requires_relation", True)),
    )


def load_profile(name_or_path: str | Path) -> ToleranceProfile:
    """A built-in profile by name (``paper``, ``strideqa-bench``) or a YAML file (ours or the official one)."""
    key = str(name_or_path)
    if key in BUILTIN_PROFILES:
        return BUILTIN_PROFILES[key]
    path = Path(name_or_path)
    if not path.is_file():
        raise ConfigError(
            f"unknown tolerance profile {key!r}: not one of {sorted(BUILTIN_PROFILES)} and not a YAML file"
        )
    from stridegen.formats.textfile import config_error, load_yaml

    return profile_from_mapping(load_yaml(path, "tolerance profile", config_error), str(path))
