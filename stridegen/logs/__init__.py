"""Log readers behind one Scene / Frame API, and ``open_log`` that picks the reader for a folder."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain
from pathlib import Path

from stridegen.core import registry
from stridegen.core.errors import ConfigError, LogFormatError, MissingFileError
from stridegen.logs.base import Annotations, Frame, LogReader, Scene, SensorCalibration, SensorSample

__all__ = [
    "Annotations",
    "Frame",
    "LogReader",
    "Scene",
    "SensorCalibration",
    "SensorSample",
    "detect_format",
    "open_log",
]


def detect_format(path: str | Path) -> str:
    """The ``log_reader`` name for a folder, from its layout; LogFormatError saying what was looked for otherwise.

    Each registered reader whose factory has a ``detect(path) -> bool`` attribute is asked, in a fixed order: the
    built-ins first, in the order of ``registry.BUILTIN["log_reader"]`` (stridegen-log, nuscenes, av2: each one's
    check sits next to its reader), then every other reader (plugins, docs/own-logs.md) in name order. The first
    that says yes names the format. The error names what the readers looked for (a factory's ``looks_for``
    phrase) and the plugin readers asked.
    """
    root = Path(path)
    if not root.exists():
        raise MissingFileError(root, "log root does not exist")
    builtins = list(registry.BUILTIN["log_reader"])
    looked_for: list[str] = []
    plugins_asked: list[str] = []
    for name in chain(builtins, _other_readers(builtins)):
        plugin = name not in builtins
        try:
            factory = registry.resolve("log_reader", name)
        except ConfigError as exc:  # a broken plugin does not hide the others; its error goes into the message
            if not plugin:
                raise
            plugins_asked.append(f"{name} (cannot load: {exc})")
            continue
        detect = getattr(factory, "detect", None)
        if not callable(detect):
            continue
        if plugin:
            plugins_asked.append(name)
        looks_for = getattr(factory, "looks_for", "")
        if looks_for:
            looked_for.append(str(looks_for))
        if detect(root):
            return name
    plugins = f"; plugin readers asked: {', '.join(plugins_asked)}" if plugins_asked else ""
    raise LogFormatError(
        root,
        f"unknown log format: looked for {_and_list(looked_for)}{plugins}; pass --format / log.format to name the "
        "reader",
    )


def _other_readers(builtins: list[str]) -> Iterator[str]:
    """The registered readers that are no built-in, in name order, listed only when asked for: after every built-in
    said no. Listing them scans the entry points of every installed distribution (~20 ms of each build's start,
    issue 35), which a log of a built-in layout never needs."""
    yield from (name for name in registry.names("log_reader") if name not in builtins)


def _and_list(phrases: list[str]) -> str:
    """``a, b and c``."""
    return " and ".join([", ".join(phrases[:-1]), phrases[-1]]) if len(phrases) > 1 else "".join(phrases)


def open_log(path: str | Path, format: str | None = None, version: str | None = None) -> LogReader:
    """Open a driving log with the ``log_reader`` backend ``format`` (stridegen.core.registry: "nuscenes", "av2",
    or a plugin), detected from the folder when left out; ``version`` picks the nuScenes table folder (needed only
    when the root holds several). A nuScenes version folder itself may be passed as ``path``.
    """
    root = Path(path)
    fmt = format or detect_format(root)
    opener = registry.resolve("log_reader", fmt)
    reader: LogReader = opener(root, version)
    return reader
