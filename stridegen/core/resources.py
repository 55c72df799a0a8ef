"""Locate the data files shipped in ``stridegen/resources`` (rigs, detector profiles, judge configs).

Every run-time lookup of a packaged file goes through here, so the package works the same from a source
checkout, an editable install or an installed wheel, whatever the current directory.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

RESOURCES_PACKAGE = "stridegen.resources"


def resource_path(*parts: str) -> Path:
    """The filesystem path of ``stridegen/resources/<parts...>`` (a file or a folder; existence is not checked).

    Raises RuntimeError when the package is not installed as plain files (e.g. imported from a zip archive),
    which none of stridegen's supported installs do.
    """
    node = files(RESOURCES_PACKAGE).joinpath(*parts)
    if not isinstance(node, Path):
        raise RuntimeError(
            f"{RESOURCES_PACKAGE} is not installed as plain files ({node!r}); "
            "install stridegen from a wheel or a source checkout"
        )
    return node
