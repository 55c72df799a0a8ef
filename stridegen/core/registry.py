"""The one registry of extension points: a (kind, name) pair resolves to a factory.

Kinds: ``log_reader``, ``detector``, ``tracker``, ``segmenter``, ``qa_family``, ``corruption``, ``judge``,
``exporter``, ``executor``, ``predictor`` (``KINDS``). A name resolves, in this order, to

1. a registration made at run time with ``register(kind, name, target)`` (a ``"package.module:Factory"`` string or
   the factory itself), else a built-in (``BUILTIN``: strings, so that nothing is imported before it is used);
2. a Python entry point of the group ``stridegen.<kind>`` (an installed plugin package);
3. the name itself when it is a ``"package.module:Factory"`` string (an out-of-tree module on ``sys.path``).

Targets are imported only when a backend of that name is made, so heavy optional dependencies (torch, sam2,
mmdet3d, ray) load lazily. Run-time registrations are process state: ``snapshot()`` gives them as plain data and
``restore(snapshot)`` replays them, which is how the scene runner hands them to spawned worker processes.

``options_model(kind, name)`` derives a pydantic model from the factory's keyword parameters (types from its
annotations, defaults from its signature, unknown keys forbidden), so a backend's options are checked when the
config is loaded, before any scene runs, without each backend writing its own schema.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from stridegen.core.errors import ConfigError

KINDS: tuple[str, ...] = (
    "log_reader",
    "detector",
    "tracker",
    "segmenter",
    "qa_family",
    "corruption",
    "judge",
    "exporter",
    "executor",
    "predictor",
)

# Built-in backends: kind -> name -> "module:attribute". The built-in corruptions stay in their own tables
# (stridegen.augment.corruptions: instances with severity tables, aliases and suites); this kind holds plugins.
# The log readers are listed in the order stridegen.logs.detect_format asks them whether a folder is theirs.
BUILTIN: dict[str, dict[str, str]] = {
    "log_reader": {
        "stridegen-log": "stridegen.logs.native:open_native",
        "nuscenes": "stridegen.logs.nuscenes:open_nuscenes",
        "av2": "stridegen.logs.av2:open_av2",
        "ros": "stridegen.logs.ros:open_ros",
    },
    "detector": {
        "oracle": "stridegen.pipeline.detect.oracle:OracleDetector",
        "simulated": "stridegen.pipeline.detect.simulated:SimulatedDetector",
        "precomputed": "stridegen.pipeline.detect.precomputed:PrecomputedDetector",
        "mmdet3d": "stridegen.pipeline.detect.mmdet3d_backend:Mmdet3dDetector",
    },
    "tracker": {
        "center": "stridegen.pipeline.track:SceneTracker",
        "precomputed": "stridegen.pipeline.track_precomputed:PrecomputedTracks",
    },
    "segmenter": {
        "projected_box": "stridegen.pipeline.segment.projected_box:ProjectedBoxSegmenter",
        "grabcut": "stridegen.pipeline.segment.grabcut:GrabCutSegmenter",
        "lidar": "stridegen.pipeline.segment.lidar:LidarSegmenter",
        "lidar_watershed": "stridegen.pipeline.segment.lidar_watershed:LidarWatershedSegmenter",
        "sam2": "stridegen.pipeline.segment.sam2_backend:Sam2Segmenter",
    },
    "qa_family": {
        "spatial": "stridegen.pipeline.qa.families:SpatialFamily",
        "spatiotemporal": "stridegen.pipeline.qa.families:SpatiotemporalFamily",
    },
    "corruption": {},
    "judge": {
        "intellicockpit": "stridegen.eval.judges.methods.intellicockpit:IntelliCockpitJudge",
        "codalm": "stridegen.eval.judges.methods.codalm:CodaLMJudge",
        "cee": "stridegen.eval.judges.methods.cee:CEEJudge",
        "general": "stridegen.eval.judges.methods.general:SingleAnswerJudge",
        "pairwise": "stridegen.eval.judges.methods.general:PairwiseJudge",
    },
    "exporter": {
        "strideqa": "stridegen.shards.export.strideqa:StrideQAExporter",
        "strideqa-bench": "stridegen.shards.export.strideqa_bench:StrideQABenchExporter",
        "llava": "stridegen.shards.export.chat:LlavaExporter",
        "messages": "stridegen.shards.export.chat:MessagesExporter",
        "llamafactory": "stridegen.shards.export.llamafactory:LlamaFactoryExporter",
        "answers": "stridegen.shards.export.answers:AnswersExporter",
        "hf": "stridegen.shards.export.hf:HFExporter",
        "lmms-eval": "stridegen.shards.export.lmms:LmmsEvalExporter",
    },
    "executor": {
        "local": "stridegen.run.executors:LocalExecutor",
        "ray": "stridegen.run.ray_executor:RayExecutor",
    },
    "predictor": {
        "openai": "stridegen.predict.openai_backend:OpenAIPredictor",
        "transformers": "stridegen.predict.transformers_backend:TransformersPredictor",
    },
}

Target = str | Callable[..., Any]
# The live tables: the built-ins plus what ``register`` added (``table(kind)`` hands one out).
_TABLES: dict[str, dict[str, Target]] = {kind: dict(BUILTIN[kind]) for kind in KINDS}


class OptionError(ConfigError, TypeError):
    """Options a backend's factory does not take: a config error, and a TypeError as a bad keyword call is."""


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ConfigError(f"unknown extension kind {kind!r}; kinds: {list(KINDS)}")


def _is_target_string(text: str) -> bool:
    module, sep, attr = text.partition(":")
    return bool(
        sep
        and module
        and attr
        and all(part.isidentifier() for part in module.split("."))
        and all(part.isidentifier() for part in attr.split("."))
    )


def register(kind: str, name: str, target: Target) -> None:
    """Register ``target`` (``"package.module:Factory"`` or the factory) as the ``kind`` backend ``name``."""
    _check_kind(kind)
    if isinstance(target, str) and not _is_target_string(target):
        raise ConfigError(f"{kind} target must look like 'package.module:Factory', got {target!r}")
    _TABLES[kind][name] = target


def unregister(kind: str, name: str) -> None:
    """Forget a run-time registration (a built-in name gets its built-in target back)."""
    _check_kind(kind)
    _TABLES[kind].pop(name, None)
    if name in BUILTIN[kind]:
        _TABLES[kind][name] = BUILTIN[kind][name]


def table(kind: str) -> dict[str, Target]:
    """The live name -> target table of ``kind`` (built-ins and run-time registrations; entry points are not in
    it: ``names`` lists those too)."""
    _check_kind(kind)
    return _TABLES[kind]


def _entry_points(kind: str) -> dict[str, str]:
    from importlib import metadata  # ~30-60 ms (email, zipfile, ...): only a name that is no built-in needs it

    return {ep.name: ep.value for ep in metadata.entry_points(group=f"stridegen.{kind}")}


def names(kind: str) -> list[str]:
    """Every name of ``kind`` known without importing anything: built-ins, entry points, run-time ones."""
    _check_kind(kind)
    return sorted({*_TABLES[kind], *_entry_points(kind)})


def _target(kind: str, name: str) -> Target:
    if name in _TABLES[kind]:
        return _TABLES[kind][name]
    plugins = _entry_points(kind)
    if name in plugins:
        return plugins[name]
    if _is_target_string(name):
        return name
    raise ConfigError(
        f"unknown {kind.replace('_', ' ')} {name!r}; available: {names(kind)} "
        f"(or a 'package.module:Factory' string, or an entry point in the group 'stridegen.{kind}')"
    )


def resolve(kind: str, name: str) -> Callable[..., Any]:
    """The factory registered as ``name`` (imported now); ConfigError for an unknown name or a broken target."""
    _check_kind(kind)
    target = _target(kind, name)
    if not isinstance(target, str):
        return target
    module_name, _, attr = target.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"{kind.replace('_', ' ')} {name!r}: cannot import {module_name!r} ({exc})") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(f"{kind.replace('_', ' ')} {name!r}: {module_name!r} has no attribute {attr!r}") from None
    return obj


def make(kind: str, name: str, options: Mapping[str, Any] | None = None) -> Any:
    """``Factory(**options)`` of the backend ``name``; a bad option is a ConfigError naming the backend."""
    factory = resolve(kind, name)
    options = dict(options or {})
    validate_options(kind, name, options)
    try:
        return factory(**options)
    except OptionError:
        raise
    except TypeError as exc:
        raise OptionError(f"{kind.replace('_', ' ')} {name!r}: bad options {options}: {exc}") from None


def accepts(kind: str, name: str, parameter: str) -> bool:
    """Whether the factory of ``name`` takes a keyword ``parameter`` (e.g. ``seed``)."""
    return parameter in _parameters(resolve(kind, name))


def _parameters(factory: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # builtins without a signature: accept anything
        return {}
    return {p.name: p for p in signature.parameters.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _takes_any_keyword(factory: Callable[..., Any]) -> bool:
    try:
        return any(p.kind == p.VAR_KEYWORD for p in inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):
        return True


def options_model(kind: str, name: str) -> type[BaseModel] | None:
    """A pydantic model of the factory's keyword options (None when it takes ``**kwargs``: anything goes)."""
    models = _models(kind, name)
    return None if models is None else models[0]


def _models(kind: str, name: str) -> tuple[type[BaseModel], type[BaseModel]] | None:
    factory = resolve(kind, name)
    model_name = f"{kind}_{name}_options".replace(".", "_").replace(":", "_")
    try:
        hash(factory)
    except TypeError:  # an unhashable callable object: not cached
        return _option_models.__wrapped__(factory, model_name)
    return _option_models(factory, model_name)


@functools.lru_cache(maxsize=256)
def _option_models(factory: Callable[..., Any], model_name: str) -> tuple[type[BaseModel], type[BaseModel]] | None:
    """(the factory's options model, the same with every field optional) or None for ``**kwargs``; built once per
    factory (creating pydantic models costs milliseconds, and backends are made per scene)."""
    if _takes_any_keyword(factory):
        return None
    try:
        hints = typing.get_type_hints(factory.__init__ if inspect.isclass(factory) else factory)
    except Exception:  # unresolvable annotations: check names only
        hints = {}
    fields: dict[str, Any] = {}
    for pname, p in _parameters(factory).items():
        annotation = hints.get(pname, Any)
        fields[pname] = (annotation, ... if p.default is p.empty else p.default)
    model = create_model(model_name, __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=True), **fields)
    optional: dict[str, Any] = {
        k: (f.annotation, f.default if not f.is_required() else None) for k, f in model.model_fields.items()
    }
    partial = create_model(model_name + "_partial", __config__=ConfigDict(arbitrary_types_allowed=True), **optional)
    return model, partial


def validate_options(kind: str, name: str, options: Mapping[str, Any], where: str | None = None) -> None:
    """ConfigError naming each bad key (unknown, mistyped) of ``options`` for the backend ``name``. Required
    parameters are not demanded here (the build supplies some, e.g. ``seed``)."""
    models = _models(kind, name)
    if models is None:
        return
    model, partial = models
    where = where or f"{kind.replace('_', ' ')} {name!r}"
    unknown = sorted(set(options) - set(model.model_fields))
    if unknown:
        raise OptionError(f"{where}: unknown option(s) {unknown}; it takes {sorted(model.model_fields)}")
    try:
        partial.model_validate(dict(options))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise OptionError(f"{where}: bad option(s): {problems}") from None


def snapshot() -> dict[str, dict[str, Target]]:
    """The run-time registrations as plain data (picklable when the targets are strings or importable objects)."""
    out = {
        kind: {name: target for name, target in entries.items() if BUILTIN[kind].get(name) != target}
        for kind, entries in _TABLES.items()
    }
    return {kind: entries for kind, entries in out.items() if entries}


def restore(state: Mapping[str, Mapping[str, Target]]) -> None:
    """Replay ``snapshot()`` output (in a spawned worker process)."""
    for kind, entries in state.items():
        for name, target in entries.items():
            register(kind, name, target)
