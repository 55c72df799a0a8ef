"""Build configuration: pydantic models for configs/build.yaml, dotted ``key=value`` overrides, a stable hash.

``load_build_config(path, overrides)`` reads the YAML (or starts from the defaults), applies overrides such as
``keyframes.start_s=0`` or ``detector.options.profile=bevfusion`` (values parsed as YAML scalars, then validated by
the model, so ``workers=2`` becomes an int and ``keyframes.require_full_window=false`` a bool), and raises
``ConfigError`` naming the key for unknown keys and invalid values.

``config_hash(config)`` is the SHA-256 of the canonical JSON of every field that can change the shards (all of
them except ``workers``: the executor never changes a byte of the output).
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from stridegen.errors import ConfigError
from stridegen.pipeline.keyframes import KeyframeConfig
from stridegen.pipeline.track import DEFAULT_DISTANCE_GATES_M, TrackerConfig

# Fields that never change the output bytes and so stay out of the config hash.
_UNHASHED_FIELDS = {"workers"}


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LogSection(_Section):
    format: Literal["nuscenes", "av2"] | None = None  # None: detected from the folder layout
    version: str | None = None  # nuScenes table folder (v1.0-mini, ...); needed only when the root holds several
    scenes: list[str] | None = None  # scene names or tokens to build; None: every scene of the log


class DetectorSection(_Section):
    name: str = "oracle"
    options: dict[str, Any] = Field(default_factory=dict)  # keyword options of the backend's factory


class TrackerSection(_Section):
    name: Literal["center", "precomputed"] = "center"
    path: str | None = None  # nuScenes tracking-results JSON, for name: precomputed
    distance_gates_m: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_DISTANCE_GATES_M))
    max_age: int = Field(3, ge=1)
    matching: Literal["greedy", "hungarian"] = "greedy"

    @model_validator(mode="after")
    def _path_for_precomputed(self) -> TrackerSection:
        if self.name == "precomputed" and not self.path:
            raise ValueError("tracker.name=precomputed needs tracker.path (a nuScenes tracking-results JSON)")
        return self

    def to_tracker_config(self) -> TrackerConfig:
        return TrackerConfig(distance_gates_m=dict(self.distance_gates_m), max_age=self.max_age,
                             matching=self.matching)


class CameraSection(_Section):
    channels: list[str] | None = None  # None: every camera of the log, in the log's order


class OutputSection(_Section):
    # Which frames' camera images go into the shards: the union of the keyframes' windows (default), the
    # keyframes only, every frame, or none.
    images: Literal["windows", "keyframes", "all", "none"] = "windows"
    # Compression of the numeric datasets (images are JPEG bytes and are always stored unchanged, uncompressed).
    compression: Literal["none", "gzip"] = "gzip"
    compression_level: int = Field(4, ge=0, le=9)
    ground_truth: bool = True  # store the log's ground-truth annotations when it has them


class SegmenterSection(_Section):
    """Mask generator (stridegen/pipeline/segment/; docs/segmenters.md)."""

    name: str = "lidar"  # projected_box | grabcut | lidar | sam2 | none (no masks, no visibility filter, no QA)
    options: dict[str, Any] = Field(default_factory=dict)  # keyword options of the backend, e.g. {checkpoint: ...}


class VisibilitySection(_Section):
    """The three rules of STRIDE-QA sec. 4.2 (strict lower bounds); definitions in docs/visibility.md."""

    min_box_iou: float = Field(0.3, ge=0.0, le=1.0)
    min_coverage: float = Field(0.8, ge=0.0, le=1.0)
    min_quality: float = Field(0.8, ge=0.0, le=1.0)


class QASection(_Section):
    """Template QA generator (stridegen/pipeline/qa/; docs/qa-spatial.md, docs/qa-spatiotemporal.md)."""

    object_spatial: bool = True
    ego_spatial: bool = True
    spatiotemporal: bool = True
    spatial_options: dict[str, Any] = Field(default_factory=dict)  # fields of SpatialQAConfig
    temporal_options: dict[str, Any] = Field(default_factory=dict)  # fields of TemporalQAConfig
    # Ego vehicle size (length, width, height) for "bigger than us" questions; nuScenes' Renault Zoe by default.
    ego_size_lwh: tuple[float, float, float] = (4.084, 1.730, 1.562)


class BuildConfig(_Section):
    seed: int = 0
    workers: int = Field(1, ge=1)
    log: LogSection = Field(default_factory=LogSection)
    keyframes: KeyframeConfig = Field(default_factory=KeyframeConfig)
    detector: DetectorSection = Field(default_factory=DetectorSection)
    tracker: TrackerSection = Field(default_factory=TrackerSection)
    cameras: CameraSection = Field(default_factory=CameraSection)
    output: OutputSection = Field(default_factory=OutputSection)
    segmenter: SegmenterSection = Field(default_factory=SegmenterSection)
    visibility: VisibilitySection = Field(default_factory=VisibilitySection)
    qa: QASection = Field(default_factory=QASection)

    @field_validator("seed")
    @classmethod
    def _seed_range(cls, value: int) -> int:
        if not 0 <= value < 2**32:
            raise ValueError("seed must be in [0, 2**32)")
        return value

    @model_validator(mode="after")
    def _segmenter_needs_images(self) -> BuildConfig:
        if self.segmenter.name != "none" and self.output.images == "none":
            raise ValueError("segmenter needs the camera images: set output.images to windows, keyframes or all, "
                             "or segmenter.name=none")
        return self

    def hashed_dict(self) -> dict[str, Any]:
        """The fields that can change the output, as plain JSON data."""
        return self.model_dump(mode="json", exclude=_UNHASHED_FIELDS)


def canonical_json(data: Any) -> str:
    """Deterministic JSON: sorted keys, no whitespace, ASCII only."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def config_hash(config: BuildConfig) -> str:
    return hashlib.sha256(canonical_json(config.hashed_dict()).encode()).hexdigest()


def _validation_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        parts.append(f"{loc}: {err['msg']}" if loc else err["msg"])
    return "; ".join(parts)


def _free_form(model: type[BaseModel], name: str) -> bool:
    """Whether a field holds a free-form mapping (any key allowed below it), e.g. detector.options."""
    annotation = model.model_fields[name].annotation
    return getattr(annotation, "__origin__", None) is dict


def _set_dotted(data: dict[str, Any], model: type[BaseModel], key: str, value: Any) -> None:
    parts = key.split(".")
    node: dict[str, Any] = data
    current: type[BaseModel] | None = model
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        if current is not None:
            if part not in current.model_fields:
                where = ".".join(parts[:depth]) or "the top level"
                raise ConfigError(f"unknown config key {key!r}: {part!r} is not a field of {where} "
                                  f"(fields: {sorted(current.model_fields)})")
            annotation = current.model_fields[part].annotation
            nested = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
            if _free_form(current, part):
                nested = None
            elif not last and nested is None:
                raise ConfigError(f"unknown config key {key!r}: {'.'.join(parts[:depth + 1])} is not a section")
            current = nested
        if last:
            node[part] = value
            return
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child


def parse_override(text: str) -> tuple[str, Any]:
    """``"a.b=value"`` -> ("a.b", YAML-parsed value)."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"override {text!r} is not of the form key=value")
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as exc:
        raise ConfigError(f"override {text!r}: value is not valid YAML: {exc}") from None
    return key, value


def apply_overrides(data: dict[str, Any], overrides: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """A copy of the raw config mapping with the dotted overrides applied (checked against BuildConfig)."""
    out = copy.deepcopy(data) if data else {}
    for text in overrides:
        key, value = parse_override(text)
        _set_dotted(out, BuildConfig, key, value)
    return out


def build_config_from_dict(data: dict[str, Any], source: str = "config") -> BuildConfig:
    try:
        return BuildConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {_validation_message(exc)}") from None


def load_build_config(path: str | Path | None = None, overrides: list[str] | tuple[str, ...] = ()) -> BuildConfig:
    """BuildConfig from a YAML file (defaults when ``path`` is None) plus ``key=value`` overrides."""
    data: dict[str, Any] = {}
    source = "defaults"
    if path is not None:
        source = str(path)
        try:
            loaded = yaml.safe_load(Path(path).read_text())
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read config: {exc.strerror or exc}") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: invalid YAML: {exc}") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path}: the config must be a mapping, got {type(loaded).__name__}")
        data = loaded
    config = build_config_from_dict(data, source)
    if not overrides:
        return config
    # Overrides apply to the resolved config, so `tracker.distance_gates_m.car=2` changes that one entry.
    return build_config_from_dict(apply_overrides(config.model_dump(mode="json"), overrides),
                                  f"{source} + overrides")
