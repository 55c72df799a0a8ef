"""The tables of a nuScenes-layout log loaded whole: every record in memory, indexed by token and by sample when
the log is opened (the reference of the tests, and the fallback where no index can be written)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from stridegen.core.errors import DuplicateTokenError, LogFormatError, MissingFileError
from stridegen.formats.textfile import load_json
from stridegen.logs.nuscenes_table_store import (
    POSE_TABLES,
    REQUIRED_TABLES,
    TABLES,
    Record,
    TableStore,
    duplicate_reason,
    has_token,
    pose_errors,
    shape_reason,
)


class JsonTables(TableStore):
    """Every table loaded into memory and indexed by token and by sample when the log is opened."""

    def __init__(self, table_dir: Path) -> None:
        super().__init__(table_dir)
        self.tables: dict[str, list[Record]] = {}
        self.index: dict[str, dict[str, Record]] = {}
        self.bad_records: dict[tuple[str, str], LogFormatError] = {}
        for name in TABLES:
            self._load(name, required=name in REQUIRED_TABLES)
        for name in POSE_TABLES:
            for token, exc in pose_errors(self.tables[name], self.path(name), name):
                self.bad_records.setdefault((name, token), exc)
        self._annotations: dict[str, list[Record]] = {}
        for ann in self.tables["sample_annotation"]:
            self._annotations.setdefault(ann["sample_token"], []).append(ann)
        self._key_data: dict[str, list[Record]] = {}
        for sd in self.tables["sample_data"]:
            if sd.get("is_key_frame", False):
                self._key_data.setdefault(sd["sample_token"], []).append(sd)

    def _load(self, name: str, required: bool) -> None:
        path = self.path(name)
        if not path.is_file():
            if required:
                raise MissingFileError(path, f"required nuScenes table {name!r} is missing")
            self.tables[name], self.index[name] = [], {}
            return
        # UTF-8, a byte-order mark tolerated; other encodings and bad JSON name the line (formats.textfile).
        records = load_json(path, f"table {name!r}", LogFormatError)
        if not isinstance(records, list) or not all(has_token(r) for r in records):
            raise LogFormatError(path, shape_reason(name))
        self.tables[name] = records
        index: dict[str, Record] = {}
        first: dict[str, int] = {}
        rows: dict[str, list[int]] = {}  # token -> rows, for tokens whose records differ
        for i, r in enumerate(records):
            token = r["token"]
            if token not in index:
                index[token], first[token] = r, i
            elif index[token] != r:
                rows.setdefault(token, [first[token]]).append(i)
        self.index[name] = index
        for token, where in rows.items():
            self.bad_records[(name, token)] = DuplicateTokenError(path, duplicate_reason(name, token, where))

    def first(self, table: str, token: str) -> Record | None:
        return self.index[table].get(token)

    def bad(self, table: str, token: str) -> LogFormatError | None:
        return self.bad_records.get((table, token))

    def scene_ids(self) -> list[tuple[str, str]]:
        return [(str(rec.get("name", rec["token"])), str(rec["token"])) for rec in self.tables["scene"]]

    def scene_records(self) -> Iterator[Record]:
        return iter(self.tables["scene"])

    def find_scene(self, name_or_token: str) -> Record | None:
        for rec in self.tables["scene"]:
            if name_or_token in (rec.get("name", rec["token"]), rec["token"]):
                return rec
        return None

    def small_table(self, table: str) -> list[Record]:
        return list(self.tables[table])

    def key_sample_data(self, sample_token: str) -> list[Record]:
        return self._key_data.get(sample_token, [])

    def sample_annotations(self, sample_token: str) -> list[Record]:
        return self._annotations.get(sample_token, [])
