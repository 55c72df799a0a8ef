"""Log readers behind one Scene / Frame API, and ``open_log`` that picks the reader for a folder."""

from __future__ import annotations

from pathlib import Path

from stridegen.core import registry
from stridegen.core.errors import ConfigError, LogFormatError, MissingFileError
from stridegen.logs.base import Annotations, Frame, LogReader, Scene, SensorCalibration, SensorSample

FORMATS = ("nuscenes", "av2", "stridegen-log")

__all__ = [
    "FORMATS",
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

    Built-ins first: ``stridegen-log`` (``stridegen-log.json`` in the folder), nuScenes (a version folder
    ``v1.0-mini``, ... with ``scene.json``, or such a folder itself), AV2 (a log folder with ``annotations.feather``,
    or a folder of such). Then every other registered reader whose factory has a ``detect(path) -> bool``
    attribute (plugins, docs/own-logs.md), in name order; the first that says yes names the format.
    """
    from stridegen.logs.av2 import find_av2_logs
    from stridegen.logs.native import is_native_log
    from stridegen.logs.nuscenes import find_version_dirs

    root = Path(path)
    if not root.exists():
        raise MissingFileError(root, "log root does not exist")
    if is_native_log(root):
        return "stridegen-log"
    if find_version_dirs(root) or (root / "scene.json").is_file():
        return "nuscenes"
    if find_av2_logs(root):
        return "av2"
    tried = []
    for name in registry.names("log_reader"):
        if name in FORMATS:
            continue
        try:
            detect = getattr(registry.resolve("log_reader", name), "detect", None)
        except ConfigError as exc:  # a broken plugin does not hide the others; its error goes into the message
            tried.append(f"{name} (cannot load: {exc})")
            continue
        if callable(detect):
            tried.append(name)
            if detect(root):
                return name
    plugins = f"; plugin readers asked: {', '.join(tried)}" if tried else ""
    raise LogFormatError(
        root,
        "unknown log format: looked for stridegen-log.json (docs/log-format.md), a nuScenes version folder "
        "(<root>/<version>/scene.json) and AV2 logs (<root>/annotations.feather or <root>/<log_id>/"
        f"annotations.feather){plugins}; pass --format / log.format to name the reader",
    )


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
