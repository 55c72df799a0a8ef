"""The tables of a nuScenes-layout log through an on-disk SQLite index (``stridegen.logs.index``: where it lives,
when it is rebuilt): per record its table, row, token, parent, key-frame flag, scene name and byte range in its JSON
file, built once; records are read from the JSON files when asked for, a scene's all at once, so a process holds the
records of at most ``FOCUS_SCENES`` scenes (module docstring of ``stridegen.logs.nuscenes_tables``)."""

from __future__ import annotations

import json
import json.scanner
import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from hashlib import sha256
from pathlib import Path
from typing import Any, BinaryIO, cast

from stridegen.core.errors import DuplicateTokenError, InvalidPoseError, LogFormatError, MissingFileError
from stridegen.logs.index import (
    INDEX_DIR_NAME,
    connect_index,
    ensure_index,
    index_cache_dir,
    iter_json_records,
    source_key,
)
from stridegen.logs.nuscenes_table_store import (
    POSE_TABLES,
    REQUIRED_TABLES,
    SMALL_TABLES,
    TABLES,
    Record,
    TableStore,
    duplicate_reason,
    has_token,
    pose_errors,
    shape_reason,
)

SCHEMA = "nuscenes-tables-1"  # bump when the index's tables or their meaning change: old indexes are then stale
FOCUS_SCENES = 2  # scenes whose records IndexedTables keeps
OTHER_RECORDS = 4096  # records of other tables kept by IndexedTables outside the focused scenes
BATCH_ROWS = 5000  # rows inserted (and poses checked) at a time while indexing
MAX_SQL_VARIABLES = 500  # tokens per "IN (...)" query (SQLite's limit is 999 before 3.32)
BULK_GAP_BYTES = 8 * 1024  # records of a table at most this far apart are read with one pread (_read_bulk)
BULK_SPAN_BYTES = 4 * 1024 * 1024  # bytes one such pread reads at most (unless a single record is longer)

_CODE = {name: code for code, name in enumerate(TABLES)}
_ERROR_KINDS: dict[str, type[LogFormatError]] = {
    "DuplicateTokenError": DuplicateTokenError,
    "InvalidPoseError": InvalidPoseError,
}

# The scanner behind json.loads (its decoder's settings: strict, no hooks): (value, end) of the JSON value at an
# index of a string; JSONDecoder.raw_decode is this call with StopIteration turned into a JSONDecodeError.
_SCAN = json.scanner.make_scanner(cast(Any, json.JSONDecoder()))  # typeshed's context type is too narrow

_SCHEMA_SQL = """
CREATE TABLE record (
    tbl INTEGER NOT NULL,          -- position of the table in TABLES
    row INTEGER NOT NULL,          -- position of the record in the table's JSON list
    token TEXT NOT NULL,
    parent TEXT,                   -- sample: scene_token; sample_data, sample_annotation: sample_token
    name TEXT,                     -- scene: name (the token where it has none)
    key_frame INTEGER,             -- sample_data: is_key_frame
    byte_offset INTEGER NOT NULL,  -- where the record's JSON text starts in the table file
    byte_length INTEGER NOT NULL
);
CREATE TABLE bad (
    tbl INTEGER NOT NULL,
    token TEXT NOT NULL,
    kind TEXT NOT NULL,            -- DuplicateTokenError | InvalidPoseError
    reason TEXT NOT NULL,          -- the error's reason (its path is the table file's, where it is opened)
    PRIMARY KEY (tbl, token)
);
"""
_INDEX_SQL = """
CREATE INDEX record_token ON record (tbl, token);
CREATE INDEX record_parent ON record (tbl, parent) WHERE parent IS NOT NULL;
CREATE INDEX record_name ON record (tbl, name) WHERE name IS NOT NULL;
"""
_COLUMNS = "rowid, tbl, token, parent, key_frame, byte_offset, byte_length"


def _text(value: Any) -> str | None:
    """A token-like value as the index stores it: strings as they are, None as NULL, anything else as JSON."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value)


def _index_columns(table: str, record: Record) -> tuple[str | None, str | None, int | None]:
    """(parent, name, key_frame) of a record (see _SCHEMA_SQL)."""
    if table == "sample":
        return _text(record.get("scene_token")), None, None
    if table == "sample_data":
        return _text(record.get("sample_token")), None, int(bool(record.get("is_key_frame", False)))
    if table == "sample_annotation":
        return _text(record.get("sample_token")), None, None
    if table == "scene":
        return None, str(record.get("name", record["token"])), None
    return None, None, None


def _runs(spans: Sequence[tuple[int, int]]) -> Iterator[tuple[tuple[int, int], list[int]]]:
    """Runs of byte spans (offset, length), sorted by offset, to read at once: ((start, stop), their positions),
    a span joining the run before it where it starts at most ``BULK_GAP_BYTES`` after that run's end and the run
    stays within ``BULK_SPAN_BYTES``."""
    positions: list[int] = []
    start = stop = 0
    for k, (offset, length) in enumerate(spans):
        if positions and (offset - stop > BULK_GAP_BYTES or offset + length - start > BULK_SPAN_BYTES):
            yield (start, stop), positions
            positions = []
        if not positions:
            start = stop = offset
        positions.append(k)
        stop = max(stop, offset + length)
    if positions:
        yield (start, stop), positions


@dataclass
class _SceneRecords:
    """The records of one scene read at once: its samples' tokens, and by (table, token) its samples, all their
    sample_data and annotations, the ego poses and instances these use; by (table, sample) the key-frame
    sample_data and the annotations of each sample."""

    samples: set[str] = field(default_factory=set)
    records: dict[tuple[str, str], Record] = field(default_factory=dict)
    children: dict[tuple[str, str], list[Record]] = field(default_factory=dict)


class IndexedTables(TableStore):
    """The tables through their on-disk index (module docstring). Thread-safe; picklable (a copy reopens the index
    and the table files when first used)."""

    def __init__(self, root: Path, table_dir: Path) -> None:
        super().__init__(table_dir)
        for name in REQUIRED_TABLES:
            if not self.path(name).is_file():
                raise MissingFileError(self.path(name), f"required nuScenes table {name!r} is missing")
        place = sha256(str(table_dir.resolve()).encode()).hexdigest()[:16]
        file_name = f"nuscenes-{place}.sqlite"
        self.candidates = (root / INDEX_DIR_NAME / file_name, index_cache_dir() / file_name)
        self.index_path = ensure_index(self.candidates, table_dir, self._source_key, SCHEMA, self._build)
        self._lock = threading.RLock()
        self._reset()

    def _source_key(self) -> str:
        return source_key(self.path(name) for name in TABLES)

    # -------------------------------------------------------------------------------------------- building
    def _build(self, conn: sqlite3.Connection) -> None:
        """One pass over every table file: its records' rows and pose errors; then the duplicated tokens."""
        conn.executescript(_SCHEMA_SQL)
        for code, name in enumerate(TABLES):
            path = self.path(name)
            if not path.is_file():
                if name in REQUIRED_TABLES:
                    raise MissingFileError(path, f"required nuScenes table {name!r} is missing")
                continue
            rows: list[tuple[Any, ...]] = []
            records: list[Record] = []
            for item in iter_json_records(path, f"table {name!r}", LogFormatError, has_token, shape_reason(name)):
                rec = item.value
                rows.append((code, item.row, _text(rec["token"]), *_index_columns(name, rec), item.offset, item.length))
                records.append(rec)
                if len(rows) >= BATCH_ROWS:
                    self._insert(conn, name, rows, records)
                    rows, records = [], []
            self._insert(conn, name, rows, records)
        conn.executescript(_INDEX_SQL)
        for code, name in enumerate(TABLES):
            self._find_duplicates(conn, code, name)

    def _insert(self, conn: sqlite3.Connection, name: str, rows: list[tuple[Any, ...]], records: list[Record]) -> None:
        code = _CODE[name]
        conn.executemany("INSERT INTO record VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        if name in POSE_TABLES:  # the first bad row of a token gives its error
            conn.executemany(
                "INSERT OR IGNORE INTO bad VALUES (?, ?, 'InvalidPoseError', ?)",
                [(code, _text(token), exc.reason) for token, exc in pose_errors(records, self.path(name), name)],
            )

    def _find_duplicates(self, conn: sqlite3.Connection, code: int, name: str) -> None:
        """Tokens of several rows whose records differ from the first one: a DuplicateTokenError (which replaces a
        pose error of the token)."""
        tokens = [
            t
            for (t,) in conn.execute(
                "SELECT token FROM record WHERE tbl = ? GROUP BY token HAVING COUNT(*) > 1", (code,)
            )
        ]
        if not tokens:
            return
        with self.path(name).open("rb", buffering=0) as f:
            for token in tokens:
                rows = conn.execute(
                    "SELECT row, byte_offset, byte_length FROM record WHERE tbl = ? AND token = ? ORDER BY rowid",
                    (code, token),
                ).fetchall()
                first = json.loads(os.pread(f.fileno(), rows[0][2], rows[0][1]))
                where = [rows[0][0]] + [
                    row for row, offset, n in rows[1:] if json.loads(os.pread(f.fileno(), n, offset)) != first
                ]
                if len(where) > 1:
                    conn.execute(
                        "INSERT OR REPLACE INTO bad VALUES (?, ?, 'DuplicateTokenError', ?)",
                        (code, token, duplicate_reason(name, first["token"], where)),
                    )

    # -------------------------------------------------------------------------------------------- reading
    def _reset(self) -> None:
        """Forget the connection, the open table files and every cached record."""
        self._conn: sqlite3.Connection | None = None
        self._files: dict[int, BinaryIO] = {}
        self._pid = os.getpid()
        self._bad: dict[tuple[str, str], tuple[str, str]] | None = None
        self._focus: OrderedDict[str, _SceneRecords] = OrderedDict()
        self._small: dict[tuple[str, str], Record | None] = {}
        self._other: OrderedDict[tuple[str, str], Record | None] = OrderedDict()

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
            for f in self._files.values():
                f.close()
            self._reset()

    def __getstate__(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k in ("table_dir", "candidates", "index_path")}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()
        self._reset()

    def _db(self) -> sqlite3.Connection:
        if self._pid != os.getpid():  # a forked child: its parent's connection and files are not its own
            self._reset()
        if self._conn is None:
            assert self.index_path is not None
            self._conn = connect_index(self.index_path)
        return self._conn

    def _query(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """Rows of a query; a failing index (corrupt, deleted) is rebuilt once and the query repeated."""
        with self._lock:
            try:
                return self._db().execute(sql, params).fetchall()
            except sqlite3.DatabaseError:
                self.close()
                self.index_path = ensure_index(
                    self.candidates, self.table_dir, self._source_key, SCHEMA, self._build, distrust=self.index_path
                )
                if self.index_path is None:
                    raise LogFormatError(self.candidates[0], "the log index failed and cannot be rebuilt") from None
                return self._db().execute(sql, params).fetchall()

    def _rows(self, where: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self._query(f"SELECT {_COLUMNS} FROM record WHERE {where} ORDER BY rowid", params)

    def _rows_in(self, where: str, params: Sequence[Any], values: Sequence[Any]) -> list[tuple[Any, ...]]:
        """``_rows`` of ``where`` with one "IN ({})" placeholder for ``values``, asked in slices, in rowid order."""
        out: list[tuple[Any, ...]] = []
        values = list(values)
        for start in range(0, len(values), MAX_SQL_VARIABLES):
            part = values[start : start + MAX_SQL_VARIABLES]
            out += self._rows(where.format(", ".join("?" * len(part))), [*params, *part])
        return sorted(out)

    def _file(self, code: int) -> BinaryIO:
        """The open table file of table ``code`` (call with the lock held, after ``_db``)."""
        if code not in self._files:
            try:
                self._files[code] = self.path(TABLES[code]).open("rb", buffering=0)
            except FileNotFoundError:
                raise MissingFileError(
                    self.path(TABLES[code]), "the table was removed after the log was opened"
                ) from None
        return self._files[code]

    def _read(self, row: tuple[Any, ...]) -> Record:
        """The record of an index row, read from its table file, checked to be the record the index points at."""
        _, code, token, _, _, offset, length = row
        with self._lock:
            self._db()
            data = os.pread(self._file(code).fileno(), length, offset)
        try:
            record = json.loads(data)
        except ValueError:
            record = None
        if not isinstance(record, dict) or _text(record.get("token")) != token:
            raise LogFormatError(
                self.path(TABLES[code]),
                f"the file changed since the log was opened (the record of token {token!r} is not where the log's "
                "index says); open the log again",
            )
        return record

    def _read_many(self, rows: Sequence[tuple[Any, ...]]) -> list[Record]:
        """``[self._read(row) for row in rows]``, the same records and the same error (the first bad row's, in the
        order of ``rows``), faster: the rows read and checked in bulk (``_read_bulk``) are taken from there, the
        others (none where the file is as indexed) read one by one."""
        ready = self._read_bulk(rows)
        return [ready[i] if i in ready else self._read(row) for i, row in enumerate(rows)]

    def _read_bulk(self, rows: Sequence[tuple[Any, ...]]) -> dict[int, Record]:
        """Position in ``rows`` -> record, for the rows whose record parses and is the one the index points at.

        The rows of a table are read in runs of records close together in its file (gaps of at most
        ``BULK_GAP_BYTES``, ``BULK_SPAN_BYTES`` at most), one ``pread`` per run, and each record is parsed in place
        from the run's text (``_SCAN`` at its offset). A record is taken where the run is ASCII, the parse ends
        exactly at the record's end and gives a dict with the row's token: ``json.loads`` of the record's bytes
        gives the same dict then (ASCII is UTF-8; a dict's text starts at ``{``, so ``json.detect_encoding`` says
        UTF-8; a parse that ends at the closing ``}`` has looked at no character after it). Anything else is left
        to ``_read`` and its error.
        """
        by_table: dict[int, list[int]] = {}
        for i, row in enumerate(rows):
            by_table.setdefault(row[1], []).append(i)
        runs: list[tuple[list[int], int, bytes]] = []  # (positions, byte offset of data, data)
        with self._lock:
            self._db()
            for code, positions in by_table.items():
                try:
                    fd = self._file(code).fileno()
                except MissingFileError:
                    continue  # _read raises it where the first of these rows is read
                positions.sort(key=lambda i: rows[i][5])
                for run in _runs([(rows[i][5], rows[i][6]) for i in positions]):
                    start, stop = run[0]
                    runs.append(([positions[k] for k in run[1]], start, os.pread(fd, stop - start, start)))
        ready: dict[int, Record] = {}
        for positions, start, data in runs:
            if not data.isascii():
                continue
            text = data.decode("ascii")
            for i in positions:
                _, _, token, _, _, offset, length = rows[i]
                at = offset - start
                try:
                    record, end = _SCAN(text, at)
                except (StopIteration, ValueError, RecursionError):
                    continue
                if end == at + length and isinstance(record, dict) and _text(record.get("token")) == token:
                    ready[i] = record
        return ready

    def first(self, table: str, token: str) -> Record | None:
        with self._lock:
            for scene in reversed(self._focus.values()):
                record = scene.records.get((table, token))
                if record is not None:
                    return record
            cache = self._small if table in SMALL_TABLES else self._other
            key = (table, token)
            if key not in cache:
                rows = self._rows("tbl = ? AND token = ?", (_CODE[table], _text(token)))
                cache[key] = self._read(rows[0]) if rows else None
                if cache is self._other and len(self._other) > OTHER_RECORDS:
                    self._other.popitem(last=False)
            return cache[key]

    def bad(self, table: str, token: str) -> LogFormatError | None:
        with self._lock:
            if self._bad is None:
                rows = self._query("SELECT tbl, token, kind, reason FROM bad", ())
                self._bad = {(TABLES[code], t): (kind, reason) for code, t, kind, reason in rows}
            found = self._bad.get((table, token))
        if found is None:
            return None
        kind, reason = found
        return _ERROR_KINDS[kind](self.path(table), reason)

    def scene_ids(self) -> list[tuple[str, str]]:
        return [
            (n, t)
            for n, t in self._query("SELECT name, token FROM record WHERE tbl = ? ORDER BY rowid", (_CODE["scene"],))
        ]

    def scene_records(self) -> Iterator[Record]:
        for row in self._rows("tbl = ?", (_CODE["scene"],)):
            yield self._read(row)

    def find_scene(self, name_or_token: str) -> Record | None:
        rows = self._rows("tbl = ? AND (name = ? OR token = ?)", (_CODE["scene"], name_or_token, name_or_token))
        return self._read(rows[0]) if rows else None

    def small_table(self, table: str) -> list[Record]:
        return self._read_many(self._rows("tbl = ?", (_CODE[table],)))

    def _children(self, table: str, sample_token: str) -> list[Record]:
        with self._lock:
            for scene in reversed(self._focus.values()):
                if sample_token in scene.samples:
                    return scene.children.get((table, sample_token), [])
        where = "tbl = ? AND parent = ?" + (" AND key_frame = 1" if table == "sample_data" else "")
        return self._read_many(self._rows(where, (_CODE[table], _text(sample_token))))

    def key_sample_data(self, sample_token: str) -> list[Record]:
        return self._children("sample_data", sample_token)

    def sample_annotations(self, sample_token: str) -> list[Record]:
        return self._children("sample_annotation", sample_token)

    def focus(self, scene_token: str) -> None:
        """Read the scene's records at once (``_SceneRecords``); the least recently focused scene beyond
        ``FOCUS_SCENES`` is forgotten."""
        with self._lock:
            if scene_token in self._focus:
                self._focus.move_to_end(scene_token)
                return
            scene = _SceneRecords()
            samples = self._rows("tbl = ? AND parent = ?", (_CODE["sample"], _text(scene_token)))
            scene.samples = {row[2] for row in samples}
            children = self._rows_in(
                "tbl IN (?, ?) AND parent IN ({})",
                (_CODE["sample_data"], _CODE["sample_annotation"]),
                sorted(scene.samples),
            )
            self._keep(scene, samples + children)
            data = [r for (t, _), r in scene.records.items() if t == "sample_data"]
            annotations = [r for (t, _), r in scene.records.items() if t == "sample_annotation"]
            for table, tokens in (
                ("ego_pose", {_text(sd.get("ego_pose_token")) for sd in data}),
                ("instance", {_text(a.get("instance_token")) for a in annotations if "category_name" not in a}),
            ):
                self._keep(scene, self._rows_in("tbl = ? AND token IN ({})", (_CODE[table],), sorted(tokens - {None})))
            self._focus[scene_token] = scene
            while len(self._focus) > FOCUS_SCENES:
                self._focus.popitem(last=False)

    def _keep(self, scene: _SceneRecords, rows: list[tuple[Any, ...]]) -> None:
        for row, record in zip(rows, self._read_many(rows), strict=True):
            _, code, token, parent, key_frame, _, _ = row
            table = TABLES[code]
            scene.records.setdefault((table, token), record)
            if table == "sample_annotation" or (table == "sample_data" and key_frame):
                scene.children.setdefault((table, parent), []).append(record)
