"""The spatial QA's predicates and options: the object-centric pair families and numbers, the ego-centric numbers,
words and size comparisons, the predicates on by default, and ``SpatialQAConfig`` (ambiguity thresholds, predicate
switches, per-image caps; ``qa.spatial_options``). Definitions: module docstring of
``stridegen.pipeline.qa.spatial`` and docs/qa-spatial.md."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from stridegen.core.errors import ConfigError

# Families of yes/no pair predicates: (positive, negative) where negative(A, B) == not positive(A, B) whenever the
# pair is unambiguous. Order matters: it is the row order of the vectorised arrays below.
PAIR_YES_NO_FAMILIES: tuple[tuple[str, str], ...] = (
    ("left_of", "right_of"),
    ("in_front_of", "behind"),
    ("bigger", "smaller"),
    ("taller", "shorter"),
    ("wider", "thinner"),
)
PAIR_NUMBER_PREDICATES: tuple[str, ...] = ("direct_distance", "horizontal_distance", "vertical_distance")
OBJECT_SINGLE_PREDICATES: tuple[str, ...] = ("width", "height")
EGO_NUMBER_PREDICATES: tuple[str, ...] = ("ego_distance", "ego_heading_angle", "ego_clock_direction")
EGO_SIZE_PREDICATES: tuple[str, ...] = ("region_length", "region_width", "region_height")
EGO_YES_NO_FAMILIES: tuple[tuple[str, str], ...] = (
    ("bigger_than_ego", "smaller_than_ego"),
    ("taller_than_ego", "shorter_than_ego"),
    ("wider_than_ego", "thinner_than_ego"),
)

OBJECT_SPATIAL_PREDICATES: tuple[str, ...] = (
    *(p for fam in PAIR_YES_NO_FAMILIES for p in fam),
    *PAIR_NUMBER_PREDICATES,
    *OBJECT_SINGLE_PREDICATES,
)
EGO_SPATIAL_PREDICATES: tuple[str, ...] = (
    *EGO_NUMBER_PREDICATES,
    "ego_left_right",
    *EGO_SIZE_PREDICATES,
    *(p for fam in EGO_YES_NO_FAMILIES for p in fam),
)
SPATIAL_PREDICATES: tuple[str, ...] = OBJECT_SPATIAL_PREDICATES + EGO_SPATIAL_PREDICATES

# region_width / region_height ask the same as the object-centric width / height; off unless asked for.
DEFAULT_PREDICATES: frozenset[str] = frozenset(SPATIAL_PREDICATES) - {"region_width", "region_height"}


@dataclass
class SpatialQAConfig:
    """Ambiguity thresholds, predicate switches and per-image caps of the spatial QA generator.

    A comparison is ambiguous (no item) when: ``|x_cam_A - x_cam_B| < lateral_min_m`` (left/right);
    ``|z_cam_A - z_cam_B| < depth_min_m`` (front/behind); ``|s_A - s_B| < size_rel_min * max(s_A, s_B)`` for volume,
    height and width (bigger/taller/wider); ``|y_ego| < ego_lateral_min_m`` (ego left/right);
    ``|s - s_ego| < ego_size_rel_min * max(s, s_ego)`` (size versus the ego vehicle); the BEV distance is below
    ``heading_min_distance_m`` (heading angle and clock direction); the heading lies within ``clock_margin_deg`` of a
    half-hour boundary (clock direction only). Equal values are always ambiguous.
    """

    lateral_min_m: float = 0.5
    depth_min_m: float = 1.0
    size_rel_min: float = 0.10
    ego_lateral_min_m: float = 0.5
    ego_size_rel_min: float = 0.10
    heading_min_distance_m: float = 1.0
    clock_margin_deg: float = 1.0
    max_pairs_per_image: int = 24  # unordered region pairs drawn per image (all when fewer); 0 = no pair items
    max_qa_per_image: int = 256  # items kept per image, drawn uniformly when more qualify; 0 = no cap
    predicates: frozenset[str] = field(default_factory=lambda: DEFAULT_PREDICATES)

    def __post_init__(self) -> None:
        if isinstance(self.predicates, str):  # one name, e.g. from a YAML scalar
            self.predicates = frozenset({self.predicates})
        self.predicates = frozenset(self.predicates)
        unknown = sorted(self.predicates - set(SPATIAL_PREDICATES))
        if unknown:
            raise ConfigError(f"unknown spatial QA predicates {unknown}; known: {list(SPATIAL_PREDICATES)}")
        for name in (
            "lateral_min_m",
            "depth_min_m",
            "size_rel_min",
            "ego_lateral_min_m",
            "ego_size_rel_min",
            "heading_min_distance_m",
            "clock_margin_deg",
        ):
            value = float(getattr(self, name))
            if not math.isfinite(value) or value < 0.0:
                raise ConfigError(f"SpatialQAConfig.{name} must be a finite number >= 0, got {value}")
        if self.clock_margin_deg >= 15.0:
            raise ConfigError(
                f"SpatialQAConfig.clock_margin_deg must be < 15 (half an hour), got {self.clock_margin_deg}"
            )
        for name in ("max_pairs_per_image", "max_qa_per_image"):
            if int(getattr(self, name)) < 0:
                raise ConfigError(f"SpatialQAConfig.{name} must be >= 0, got {getattr(self, name)}")
