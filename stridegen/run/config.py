"""Build configuration: pydantic models for configs/build.yaml, dotted ``key=value`` overrides, a stable hash.

``load_build_config(path, overrides)`` reads the YAML (or starts from the defaults), applies overrides such as
``keyframes.start_s=0`` or ``detector.options.profile=bevfusion`` (values parsed as YAML scalars, then validated by
the model, so ``workers=2`` becomes an int and ``keyframes.require_full_window=false`` a bool), and raises
``ConfigError`` naming the key for unknown keys and invalid values.

``config_hash(config)`` is the SHA-256 of the canonical JSON of every field that can change the shards (all of
them except ``workers`` and ``executor``: the executor never changes a byte of the output).

Each stage's section is checked when the config is loaded, before any scene runs: backend names against the
registry, backend options against the factory's signature, QA options against the generators' configs, and the
cross-stage values (context frames of the QA inside the keyframe window, and with ``keyframes.schedule=auto`` inside
the past a short clip's window keeps, and the QA table) once.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from stridegen.core import registry
from stridegen.core.canonical import sha256_canonical
from stridegen.core.errors import ConfigError
from stridegen.core.vocabulary import NUSCENES_EGO_SIZE_LWH
from stridegen.logs.check import CheckSettings
from stridegen.pipeline.anonymize.faces import check_face_detector
from stridegen.pipeline.anonymize.image import AnonymizeOptions
from stridegen.pipeline.keyframes import KeyframeConfig, sample_keyframes
from stridegen.pipeline.qa.spatial_predicates import SpatialQAConfig
from stridegen.pipeline.qa.spatiotemporal_inputs import TemporalQAConfig
from stridegen.pipeline.track import TrackerConfig
from stridegen.pipeline.visibility import VisibilityThresholds
from stridegen.run import anonymize_defaults
from stridegen.shards.schema import QA_FRAME_SLOTS

# Fields that never change the output bytes and so stay out of the config hash.
_UNHASHED_FIELDS: dict[str, Any] = {"workers": True, "log": {"parked_ego": True}}


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _registered(kind: str, name: str) -> str:
    """``name`` when the registry knows it (ValueError naming the known ones otherwise)."""
    try:
        registry.resolve(kind, name)
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    return name


def _checked_options(kind: str, name: str, options: dict[str, Any]) -> None:
    try:
        registry.validate_options(kind, name, options)
    except ConfigError as exc:
        raise ValueError(str(exc)) from None


class LogSection(_Section):
    format: str | None = None  # a log_reader name (nuscenes, av2, a plugin); None: detected from the folder layout
    version: str | None = None  # nuScenes table folder (v1.0-mini, ...); needed only when the root holds several
    scenes: list[str] | None = None  # scene names or tokens to build; None: every scene of the log
    # Constant ego poses are a car that stood still, not a log without poses (docs/check.md, constant_ego_pose).
    # Not hashed: it decides whether such a scene is built, not what a built scene holds.
    parked_ego: bool = False

    @field_validator("format")
    @classmethod
    def _known_format(cls, value: str | None) -> str | None:
        return None if value is None else _registered("log_reader", value)


class DetectorSection(_Section):
    name: str = "oracle"  # a detector name of the registry
    options: dict[str, Any] = Field(default_factory=dict)  # keyword options of the backend's factory

    @model_validator(mode="after")
    def _known_backend(self) -> DetectorSection:
        _registered("detector", self.name)
        _checked_options("detector", self.name, self.options)
        return self


class ExecutorSection(_Section):
    """Where scenes run: ``name`` an executor of the registry (``local``, ``ray``, a plugin), ``address`` the
    cluster to join (``ray``: empty starts a local Ray; ``auto`` or ``ray://host:10001`` an existing cluster), and
    the backend's other keyword options. A plain string (``executor=ray``) is the name."""

    name: str = "local"
    address: str = ""
    options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _name_only(cls, value: Any) -> Any:
        return {"name": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _known_backend(self) -> ExecutorSection:
        _registered("executor", self.name)
        _checked_options("executor", self.name, self.factory_options(workers=1))
        return self

    def factory_options(self, workers: int) -> dict[str, Any]:
        """The keyword options of the executor's factory (``address`` only when set: ``local`` takes none)."""
        return {"workers": workers, **({"address": self.address} if self.address else {}), **self.options}


class TrackerSection(TrackerConfig):
    """The tracker backend: ``name`` (a tracker of the registry), the center tracker's parameters (fields of
    ``TrackerConfig``), and ``options``, the keyword options of the backend's factory (for a tracker that
    ``takes_section_config``, e.g. ``center``: fields of ``TrackerConfig`` that override the section's; empty, the
    default, is left out of every dump). A tracker whose class names ``needs_path`` needs ``path``."""

    name: str = "center"  # a tracker name of the registry: center | precomputed | a plugin
    path: str | None = None  # nuScenes tracking-results JSON, for name: precomputed
    options: dict[str, Any] = Field(default_factory=dict, exclude_if=lambda options: not options)

    @model_validator(mode="after")
    def _known_backend(self) -> TrackerSection:
        _registered("tracker", self.name)
        needs_path = getattr(registry.resolve("tracker", self.name), "needs_path", "")
        if needs_path and not (self.path or self.options.get("path")):
            raise ValueError(f"tracker.name={self.name} needs tracker.path ({needs_path})")
        if self._takes_section_config():
            unknown = sorted(set(self.options) - set(TrackerConfig.model_fields))
            if unknown:
                raise ValueError(
                    f"tracker {self.name!r}: unknown option(s) {unknown}; it takes {sorted(TrackerConfig.model_fields)}"
                )
            self.tracker_config()  # the options' values, checked
        else:
            _checked_options("tracker", self.name, self.factory_options())
        return self

    def _takes_section_config(self) -> bool:
        """Whether the backend's factory takes ``config``: the section's ``TrackerConfig`` (``center``)."""
        return _backend_flag("tracker", self.name, "takes_section_config")

    def tracker_config(self) -> TrackerConfig:
        """The parameters of a tracker that ``takes_section_config``: the section's fields with ``options`` over
        them."""
        fields = self.model_dump(include=set(TrackerConfig.model_fields))
        try:
            return TrackerConfig(**{**fields, **self.options})
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise ValueError(f"tracker {self.name!r}: bad option(s): {problems}") from None

    def factory_options(self) -> dict[str, Any]:
        """The keyword options of the backend's factory."""
        if self._takes_section_config():
            return {"config": self.tracker_config()}
        return {**({"path": self.path} if self.path else {}), **self.options}


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

    name: str = "lidar_watershed"  # projected_box | grabcut | lidar | lidar_watershed | sam2 | a plugin | none
    options: dict[str, Any] = Field(default_factory=dict)  # keyword options of the backend, e.g. {checkpoint: ...}

    @model_validator(mode="after")
    def _known_backend(self) -> SegmenterSection:
        if self.name != "none":
            _registered("segmenter", self.name)
            _checked_options("segmenter", self.name, self.options)
        return self


class QASection(_Section):
    """Template QA generator (stridegen/pipeline/qa/; docs/qa-spatial.md, docs/qa-spatiotemporal.md)."""

    object_spatial: bool = True
    ego_spatial: bool = True
    spatiotemporal: bool = True
    # Fields of SpatialQAConfig / TemporalQAConfig as given (so dumped and hashed); typed once, when the section is
    # loaded: ``spatial_config`` / ``temporal_config``.
    spatial_options: dict[str, Any] = Field(default_factory=dict)
    temporal_options: dict[str, Any] = Field(default_factory=dict)
    # Ego vehicle size (length, width, height) for "bigger than us" questions; nuScenes' Renault Zoe by default.
    ego_size_lwh: tuple[float, float, float] = NUSCENES_EGO_SIZE_LWH
    # More qa_family backends (plugins, by registry name), run after the built-in ones on each keyframe image.
    families: list[str] = Field(default_factory=list)

    _spatial: SpatialQAConfig = PrivateAttr(default_factory=SpatialQAConfig)
    _temporal: TemporalQAConfig = PrivateAttr(default_factory=TemporalQAConfig)

    @model_validator(mode="after")
    def _typed_options(self) -> QASection:
        # a typo or a bad value is a ValueError
        self._spatial = _dataclass_options(SpatialQAConfig, self.spatial_options, "qa.spatial_options")
        self._temporal = _dataclass_options(TemporalQAConfig, self.temporal_options, "qa.temporal_options")
        for name in self.families:
            _registered("qa_family", name)
        return self

    @model_serializer(mode="wrap")
    def _omit_no_families(self, handler: Any) -> dict[str, Any]:
        # Without plugin families the section dumps as it did before the field existed (same config hash).
        data: dict[str, Any] = handler(self)
        if not data.get("families"):
            data.pop("families", None)
        return data

    @property
    def spatial_config(self) -> SpatialQAConfig:
        """``spatial_options`` as the spatial generator's config (made when the section was loaded)."""
        return self._spatial

    @property
    def temporal_config(self) -> TemporalQAConfig:
        """``temporal_options`` as the spatiotemporal generator's config (made when the section was loaded)."""
        return self._temporal


class AnonymizeSection(_Section):
    """Privacy pass over the stored camera images (stridegen/pipeline/anonymize/; docs/anonymize.md).

    ``faces`` / ``plates`` None (auto): on for a real log, off for a synthetic one (``is_synthetic_source``); the
    build resolves them before hashing (``resolved``). Left at its defaults, the section is left out of every dump
    (same config hash as before it existed)."""

    faces: bool | None = None
    plates: bool | None = None
    face_detector: Literal["centerface", "haar", "none"] = anonymize_defaults.FACE_DETECTOR
    face_threshold: float = Field(anonymize_defaults.FACE_THRESHOLD, gt=0.0, lt=1.0)
    plate_detector: Literal["haar", "none"] = anonymize_defaults.PLATE_DETECTOR
    method: Literal["blur", "pixelate"] = anonymize_defaults.METHOD
    jpeg_quality: int = Field(anonymize_defaults.JPEG_QUALITY, ge=1, le=100)

    def active(self) -> bool:
        """Whether the pass runs (faces or plates explicitly on)."""
        return bool(self.faces or self.plates)

    def resolved(self, synthetic: bool) -> AnonymizeSection:
        """The section with auto (None) ``faces`` / ``plates`` made explicit: on for a real log. A synthetic log's
        auto values stay None (off), so its config dumps and hashes as before the section existed."""
        if synthetic:
            return self
        return self.model_copy(
            update={"faces": True if self.faces is None else self.faces, "plates": self.plates is not False}
        )

    def image_options(self) -> AnonymizeOptions:
        """The per-image options of the pass (``stridegen.pipeline.anonymize.image``)."""
        return AnonymizeOptions(
            faces=bool(self.faces),
            plates=bool(self.plates),
            plate_detector=self.plate_detector,
            method=self.method,
            jpeg_quality=self.jpeg_quality,
        )


def is_synthetic_source(source_format: str, source_version: str) -> bool:
    """Whether a log is ``stridegen synth`` output (nuScenes layout, table folder ``v1.0-synthetic``)."""
    return source_format == "nuscenes" and str(source_version).endswith("synthetic")


_T = TypeVar("_T")


def _dataclass_options(cls: type[_T], options: dict[str, Any], where: str) -> _T:
    known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown}; known: {sorted(known)}")
    try:
        return cls(**options)
    except (ConfigError, TypeError) as exc:
        raise ValueError(f"{where}: {exc}") from None


class BuildConfig(_Section):
    seed: int = 0
    workers: int = Field(1, ge=1)
    # Where scenes run (stridegen.run.executors, docs/scale.md). It never changes the output, so it is left out of
    # every dump of the config (hash, manifest, worker payloads).
    executor: ExecutorSection = Field(default_factory=ExecutorSection, exclude=True)
    log: LogSection = Field(default_factory=LogSection)
    keyframes: KeyframeConfig = Field(default_factory=KeyframeConfig)
    detector: DetectorSection = Field(default_factory=DetectorSection)
    tracker: TrackerSection = Field(default_factory=TrackerSection)
    cameras: CameraSection = Field(default_factory=CameraSection)
    output: OutputSection = Field(default_factory=OutputSection)
    segmenter: SegmenterSection = Field(default_factory=SegmenterSection)
    visibility: VisibilityThresholds = Field(default_factory=VisibilityThresholds)
    qa: QASection = Field(default_factory=QASection)
    anonymize: AnonymizeSection = Field(default_factory=AnonymizeSection, exclude_if=lambda s: s == AnonymizeSection())

    @field_validator("seed")
    @classmethod
    def _seed_range(cls, value: int) -> int:
        if not 0 <= value < 2**32:
            raise ValueError("seed must be in [0, 2**32)")
        return value

    @model_validator(mode="after")
    def _segmenter_needs_images(self) -> BuildConfig:
        if self.segmenter.name != "none" and self.output.images == "none":
            raise ValueError(
                "segmenter needs the camera images: set output.images to windows, keyframes or all, "
                "or segmenter.name=none"
            )
        return self

    @model_validator(mode="after")
    def _context_frames_in_the_window(self) -> BuildConfig:
        """The context frames the QA shows are masked by the segment stage: they must be frames of the keyframe
        window, and fit the QA table (checked here once, not at the end of every scene)."""
        offsets = self.context_offsets_s()
        if len(offsets) > QA_FRAME_SLOTS:
            raise ValueError(
                f"qa.temporal_options.context_offsets_s: at most {QA_FRAME_SLOTS} context frames, got {len(offsets)}"
            )
        window = self.keyframes.window_offsets_s
        missing = [o for o in offsets if not any(abs(o - w) <= 1e-6 for w in window)]
        if missing:
            raise ValueError(
                f"qa.temporal_options.context_offsets_s: {missing} are not offsets of the keyframe "
                f"window {list(window)} (keyframes.window_before_s / window_rate_hz)"
            )
        return self

    @model_validator(mode="after")
    def _auto_window_keeps_the_context(self) -> BuildConfig:
        """With the auto schedule a short clip's window is trimmed to ``keyframes.auto_min_before_s`` of past
        before its future is: that must hold the context frames, or a keyframe's QA would show frames that the
        window (and so the segment stage) left out."""
        if self.keyframes.schedule != "auto" or not self.qa.spatiotemporal:
            return self
        span = max(0.0, -min(self.context_offsets_s()))
        if self.keyframes.auto_min_before_s + 1e-9 < span:
            raise ValueError(
                f"keyframes.auto_min_before_s ({self.keyframes.auto_min_before_s:g} s) is shorter than the "
                f"spatiotemporal context (qa.temporal_options.context_offsets_s reach {-span:g} s): set it to at "
                f"least {span:g}"
            )
        return self

    def for_log(self, source_format: str, source_version: str) -> BuildConfig:
        """The config with its ``anonymize`` section resolved for the log (``AnonymizeSection.resolved``); a face
        detector that this environment cannot make is a ConfigError now, before any scene runs."""
        section = self.anonymize.resolved(is_synthetic_source(source_format, source_version))
        if section.active() and section.faces:
            check_face_detector(section.face_detector)
        return self if section == self.anonymize else self.model_copy(update={"anonymize": section})

    def context_offsets_s(self) -> tuple[float, ...]:
        """Times of the context frames relative to the keyframe: derived once from the temporal QA config."""
        return tuple(self.qa.temporal_config.context_offsets_s)

    def hashed_dict(self) -> dict[str, Any]:
        """The fields that can change the output, as plain JSON data."""
        return self.model_dump(mode="json", exclude=_UNHASHED_FIELDS)

    def check_settings(self) -> CheckSettings:
        """What the log check reads of this config (``stridegen.logs.check``), the backends' capabilities read
        from their registered factories (nothing is built)."""
        segmenter = self.segmenter.name
        return CheckSettings(
            keyframes=self.keyframes,
            select_keyframes=functools.partial(sample_keyframes, config=self.keyframes),
            log_format=self.log.format,
            log_version=self.log.version,
            scenes=None if self.log.scenes is None else tuple(self.log.scenes),
            cameras=None if self.cameras.channels is None else tuple(self.cameras.channels),
            segmenter=segmenter,
            segmenter_needs_lidar=segmenter != "none" and _backend_flag("segmenter", segmenter, "needs_lidar"),
            detector=self.detector.name,
            detector_uses_ground_truth=_backend_flag("detector", self.detector.name, "uses_ground_truth"),
            tracker_provides_detections=_backend_flag("tracker", self.tracker.name, "provides_detections"),
            parked_ego=self.log.parked_ego,
        )


def _backend_flag(kind: str, name: str, attribute: str) -> bool:
    """A capability of a backend: the boolean class attribute ``attribute`` of its factory (absent: False)."""
    return bool(getattr(registry.resolve(kind, name), attribute, False))


def config_hash(config: BuildConfig) -> str:
    return sha256_canonical(config.hashed_dict())


def validation_message(exc: ValidationError) -> str:
    """A pydantic error as one line: ``location: message`` of each problem."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        parts.append(f"{loc}: {err['msg']}" if loc else err["msg"])
    return "; ".join(parts)


_S = TypeVar("_S", bound=BaseModel)


def _section(model: type[_S], where: str, **fields: Any) -> _S:
    """A config section made from command-line values; its validation errors as one ConfigError."""
    try:
        return model(**fields)
    except ValidationError as exc:
        raise ConfigError(f"{where}: {validation_message(exc)}") from None


def detector_section(name: str, options: Mapping[str, Any] | None = None) -> DetectorSection:
    """The ``detector`` section of a command that names a detector (``stridegen detect`` / ``track``, the box
    removal of ``calibrate poses``), checked as the build config's is: the name and the options against the
    registry, nothing built."""
    return _section(DetectorSection, "detector", name=name, options=dict(options or {}))


def tracker_section(name: str = "center", options: Mapping[str, Any] | None = None) -> TrackerSection:
    """The ``tracker`` section of ``stridegen track``: for ``center`` the options are ``TrackerConfig`` fields
    (``max_age``, ``matching``, ``distance_gates_m``), for other backends their factory's options."""
    return _section(TrackerSection, "tracker", name=name, options=dict(options or {}))


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
                raise ConfigError(
                    f"unknown config key {key!r}: {part!r} is not a field of {where} "
                    f"(fields: {sorted(current.model_fields)})"
                )
            annotation = current.model_fields[part].annotation
            nested = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
            if _free_form(current, part):
                nested = None
            elif not last and nested is None:
                raise ConfigError(f"unknown config key {key!r}: {'.'.join(parts[: depth + 1])} is not a section")
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
    import yaml  # on use only: a build with no override and no config file never parses YAML (issue 35)

    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as exc:
        raise ConfigError(f"override {text!r}: value is not valid YAML: {exc}") from None
    except RecursionError:  # PyYAML composes nested collections recursively (issue 33)
        raise ConfigError(f"override {key!r}: value nests its YAML collections too deep to parse") from None
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
        raise ConfigError(f"{source}: {validation_message(exc)}") from None


def load_build_config(path: str | Path | None = None, overrides: list[str] | tuple[str, ...] = ()) -> BuildConfig:
    """BuildConfig from a YAML file (defaults when ``path`` is None) plus ``key=value`` overrides."""
    data: dict[str, Any] = {}
    source = "defaults"
    if path is not None:
        source = str(path)
        from stridegen.formats.textfile import config_error, load_yaml

        loaded = load_yaml(path, "build config", config_error)
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path}: the config must be a mapping, got {type(loaded).__name__}")
        data = loaded
    config = build_config_from_dict(data, source)
    if not overrides:
        return config
    # Overrides apply to the resolved config, so `tracker.distance_gates_m.car=2` changes that one entry.
    resolved = {**config.model_dump(mode="json"), "executor": config.executor.model_dump(mode="json")}  # dumps omit it
    return build_config_from_dict(apply_overrides(resolved, overrides), f"{source} + overrides")
