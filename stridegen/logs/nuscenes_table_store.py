"""What a nuScenes-layout log's tables are and how they are looked up: the table names, the ``TableStore``
interface both stores implement (``nuscenes_json_tables.JsonTables``, ``nuscenes_indexed_tables.IndexedTables``), and
the checks of single records both make the same way (a table's shape, tokens used by records of different contents,
invalid poses: module docstring of ``stridegen.logs.nuscenes_tables``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.core.errors import InvalidPoseError, LogFormatError
from stridegen.logs._common import valid_poses, validate_pose

REQUIRED_TABLES = (
    "scene",
    "sample",
    "sample_data",
    "calibrated_sensor",
    "ego_pose",
    "sensor",
    "sample_annotation",
    "instance",
    "category",
    "visibility",
    "log",
    "attribute",
)
OPTIONAL_TABLES = ("map",)
TABLES = REQUIRED_TABLES + OPTIONAL_TABLES
POSE_TABLES = ("ego_pose", "calibrated_sensor")  # rotation [w, x, y, z] + translation, checked on open
# Tables with a few records per log (not per scene): their records are kept once read.
SMALL_TABLES = ("calibrated_sensor", "sensor", "category", "attribute", "visibility", "log", "map")

Record = dict[str, Any]


def has_token(value: Any) -> bool:
    return isinstance(value, dict) and "token" in value


def shape_reason(table: str) -> str:
    return f"table {table!r} must be a JSON list of records that each have a token"


def duplicate_reason(table: str, token: Any, rows: list[int]) -> str:
    """The reason of a DuplicateTokenError: ``rows`` the first record's row and those that differ from it."""
    return (
        f"token {token!r} is used by {len(rows)} different {table} records (rows {rows}): every reference to it is "
        "ambiguous"
    )


def pose_errors(records: Sequence[Record], path: Path, table: str) -> Iterator[tuple[Any, InvalidPoseError]]:
    """(token, error) of every record of a pose table whose rotation or translation is invalid (``validate_pose``'s
    rule, vectorised; malformed records are looked at one by one), in row order."""
    try:
        rotation = np.array([r["rotation"] for r in records], dtype=np.float64).reshape(-1, 4)
        translation = np.array([r["translation"] for r in records], dtype=np.float64).reshape(-1, 3)
        if not len(rotation) == len(translation) == len(records):
            raise ValueError("ragged")
        bad: Sequence[int] = np.flatnonzero(~valid_poses(rotation, translation)).tolist()
    except (KeyError, TypeError, ValueError):
        bad = range(len(records))
    for i in bad:
        rec = records[i]
        try:
            validate_pose(rec.get("rotation"), rec.get("translation"), path, f"{table} {rec['token']}")
        except InvalidPoseError as exc:
            yield rec["token"], exc


class TableStore(ABC):
    """The records of one table folder (``<root>/<version>``), looked up by token or by the sample they hang from."""

    def __init__(self, table_dir: Path) -> None:
        self.table_dir = table_dir

    def path(self, table: str) -> Path:
        return self.table_dir / f"{table}.json"

    def get(self, table: str, token: str) -> Record:
        """The record of ``table`` with ``token``; its error if it is a bad one (``bad``), LogFormatError naming the
        table file if there is none."""
        bad = self.bad(table, token)
        if bad is not None:
            raise bad
        record = self.first(table, token)
        if record is None:
            raise LogFormatError(self.path(table), f"no {table} record with token {token!r}")
        return record

    @abstractmethod
    def first(self, table: str, token: str) -> Record | None:
        """The first record of ``table`` with ``token`` (whether bad or not); None if there is none."""

    @abstractmethod
    def bad(self, table: str, token: str) -> LogFormatError | None:
        """The error of a record that must not be used (module docstring); None for a good or unknown token."""

    @abstractmethod
    def scene_ids(self) -> list[tuple[str, str]]:
        """(name, token) of every scene record, in table order (the name is the token where a record has none)."""

    @abstractmethod
    def scene_records(self) -> Iterator[Record]:
        """Every scene record, in table order."""

    @abstractmethod
    def find_scene(self, name_or_token: str) -> Record | None:
        """The first scene record with this name or token."""

    @abstractmethod
    def small_table(self, table: str) -> list[Record]:
        """Every record of a table of ``SMALL_TABLES`` (a few rows per sensor or class), in table order."""

    @abstractmethod
    def key_sample_data(self, sample_token: str) -> list[Record]:
        """The key-frame sample_data records of a sample, in table order."""

    @abstractmethod
    def sample_annotations(self, sample_token: str) -> list[Record]:
        """The sample_annotation records of a sample, in table order."""

    def focus(self, scene_token: str) -> None:  # noqa: B027 (a hint: stores that keep everything ignore it)
        """A hint: the records of this scene are asked for next."""
