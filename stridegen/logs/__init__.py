"""Log readers behind one Scene / Frame API, and ``open_log`` that picks the reader for a folder."""

from __future__ import annotations

from pathlib import Path

from stridegen.core import registry
from stridegen.core.errors import LogFormatError, MissingFileError
from stridegen.logs.base import Annotations, Frame, LogReader, Scene, SensorCalibration, SensorSample

FORMATS = ("nuscenes", "av2")

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
    """ "nuscenes" or "av2" from the folder layout; LogFormatError saying what was looked for otherwise.

    nuScenes: ``path`` holds a version folder (``v1.0-mini``, ...) with ``scene.json``, or is such a folder.
    AV2: ``path`` is a log folder with ``annotations.feather``, or a folder of such log folders.
    """
    from stridegen.logs.av2 import find_av2_logs
    from stridegen.logs.nuscenes import find_version_dirs

    root = Path(path)
    if not root.exists():
        raise MissingFileError(root, "log root does not exist")
    if find_version_dirs(root) or (root / "scene.json").is_file():
        return "nuscenes"
    if find_av2_logs(root):
        return "av2"
    raise LogFormatError(
        root,
        "unknown log format: looked for a nuScenes version folder (<root>/<version>/"
        "scene.json) and for AV2 logs (<root>/annotations.feather or "
        "<root>/<log_id>/annotations.feather)",
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
