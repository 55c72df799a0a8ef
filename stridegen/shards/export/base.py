"""The ``Exporter`` protocol: what an ``exporter`` backend of the registry provides to the export job
(stridegen.jobs.export)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from stridegen.core import registry
from stridegen.shards.scene_view import SceneView


class Exporter(Protocol):
    """One output format. ``export_scene`` writes what belongs to one scene (images, masks) under ``out_dir`` and
    returns the scene's records (plain JSON data) and counts; ``finalize`` gets every scene's records in scene
    order and writes the format's files, returning their paths relative to ``out_dir``.

    Scene-level splits (options ``splits`` / ``split_seed``) are handled by the export job for every exporter:
    ``finalize`` runs once per split. An exporter may set the class attribute ``splits_in_place = True`` when its
    ``split`` option already names a folder inside ``out_dir`` (stridegen.jobs.export)."""

    name: str

    def export_scene(self, scene: SceneView, out_dir: Path) -> tuple[list[dict[str, Any]], dict[str, int]]: ...

    def finalize(self, out_dir: Path, records: list[list[dict[str, Any]]], source: dict[str, Any]) -> list[str]: ...


def make_exporter(name: str, options: dict[str, Any] | None = None) -> Exporter:
    """The exporter backend ``name`` of the registry with ``options`` (ConfigError for an unknown one or a bad
    option)."""
    exporter: Exporter = registry.make("exporter", name, options or {})
    return exporter
