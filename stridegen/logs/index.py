"""On-disk indexes of log metadata: built once per log, then read a few rows at a time by every process.

A reader whose metadata are big JSON tables (nuScenes: hundreds of MB for the full dataset) indexes them once into
an SQLite file and afterwards reads only the records it needs, e.g. one scene's, so that the memory of a build
worker does not grow with the log. This module holds what does not depend on the log format:

- ``iter_json_records``: the records of a JSON list file, streamed (a few MB of memory whatever the file's size),
  each with its byte offset and length in the file, so that an index can point into the file rather than copy it;
- ``source_key``: the fingerprint of the source files (size, mtime and ctime of each) an index is stored with; a
  changed log no longer matches its index and is indexed again;
- ``ensure_index``: the index file of a log, built when missing, stale (another key or schema) or corrupt. It goes
  to the first place offered that holds a valid one or whose folder may be written (the reader offers
  ``<log>/.stridegen-index/`` first, then ``index_cache_dir()``). It is written to a temporary file of the same
  folder and renamed into place, so concurrent processes never see half an index; replacing an existing index
  prints one line on stderr. An index records the folder it was built from; building one removes the indexes of
  its folder whose source folder is gone (the cache folder would otherwise keep those of deleted logs) and the
  temporary files of builds killed over a day ago.

An index file is never modified after the rename, so it is opened read-only and ``immutable`` (no locking).
"""

from __future__ import annotations

import codecs
import hashlib
import json
import os
import re
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stridegen.core.bounded_json import first_too_deep, json_limits
from stridegen.core.cache_dir import cache_root
from stridegen.formats.textfile import UTF8_BOM, ErrorFactory, load_json

INDEX_DIR_NAME = ".stridegen-index"  # the index folder inside a writable log folder
CHUNK_BYTES = 1 << 20  # bytes read at a time by iter_json_records
_WHITESPACE = re.compile(r"[ \t\n\r]*")  # JSON's insignificant whitespace (RFC 8259 section 2), as json.decoder


@dataclass(frozen=True)
class JsonRecord:
    """One element of a JSON list file: its position in the list, its value, and where its text is in the file."""

    row: int
    value: Any
    offset: int  # byte offset of the element's text in the file
    length: int  # its length in bytes


class _Unstreamable(Exception):
    """The file is not a JSON list of acceptable elements (or not UTF-8): ``load_json`` says what is wrong."""


class _ListStream:
    """A JSON text read in chunks: a decoded window ``buf`` of the file, the parse position ``pos`` in it and the
    byte offset ``byte_pos`` in the file of ``buf[pos]``."""

    def __init__(self, path: Path) -> None:
        self.file = path.open("rb")
        self.utf8 = codecs.getincrementaldecoder("utf-8")()
        self.decoder = json.JSONDecoder()
        self.max_depth = json_limits().max_depth  # STRIDEGEN_JSON_MAX_DEPTH, as every JSON reader (core.bounded_json)
        head = self.file.read(len(UTF8_BOM))
        self.byte_pos = len(UTF8_BOM) if head == UTF8_BOM else 0  # a byte-order mark is dropped, as load_json does
        self.buf = self._decode(b"" if self.byte_pos else head)
        self.pos = 0
        self.eof = False

    def _decode(self, data: bytes, final: bool = False) -> str:
        try:
            return self.utf8.decode(data, final=final)
        except UnicodeDecodeError:
            raise _Unstreamable from None

    def fill(self) -> bool:
        """Append the next chunk to the window (at least as long as the unparsed rest, so that a long element is
        re-parsed O(log n) times); False at the end of the file."""
        if self.eof:
            return False
        data = self.file.read(max(CHUNK_BYTES, len(self.buf) - self.pos))
        self.eof = not data
        self.buf = self.buf[self.pos :] + self._decode(data, final=self.eof)
        self.pos = 0
        return not self.eof

    def advance(self, end: int) -> None:
        text = self.buf[self.pos : end]
        self.byte_pos += len(text) if text.isascii() else len(text.encode("utf-8"))
        self.pos = end

    def peek(self) -> str:
        """The next character that is not whitespace; "" at the end of the file."""
        while True:
            match = _WHITESPACE.match(self.buf, self.pos)
            self.advance(match.end() if match else self.pos)
            if self.pos < len(self.buf) or not self.fill():
                return self.buf[self.pos : self.pos + 1]

    def value(self) -> Any:
        """The JSON value at the parse position (``json``'s own decoder, as ``json.loads``)."""
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError:
                if self.fill():  # the value may continue in the next chunk
                    continue
                raise _Unstreamable from None
            except RecursionError:  # nested past the parser's recursion: load_json names the depth limit (issue 33)
                raise _Unstreamable from None
            if end == len(self.buf) and self.fill():  # a number cut by the window's end: parse it again
                continue
            if self.buf.count("[", self.pos, end) + self.buf.count("{", self.pos, end) > self.max_depth:
                # Enough brackets to be too deep: scan them; load_json then reports the file's line and column.
                text = self.buf[self.pos : end].encode("utf-8", "surrogatepass")
                if first_too_deep(text, self.max_depth) is not None:
                    raise _Unstreamable
            self.advance(end)
            return value

    def close(self) -> None:
        self.file.close()


def _stream(path: Path, element_ok: Callable[[Any], bool]) -> Iterator[JsonRecord]:
    stream = _ListStream(path)
    try:
        if stream.peek() != "[":
            raise _Unstreamable
        stream.advance(stream.pos + 1)
        row = 0
        if stream.peek() == "]":
            stream.advance(stream.pos + 1)
        else:
            while True:
                stream.peek()
                start = stream.byte_pos
                value = stream.value()
                if not element_ok(value):
                    raise _Unstreamable
                yield JsonRecord(row, value, start, stream.byte_pos - start)
                row += 1
                separator = stream.peek()
                if separator not in (",", "]"):
                    raise _Unstreamable
                stream.advance(stream.pos + 1)
                if separator == "]":
                    break
        if stream.peek() != "":
            raise _Unstreamable
    finally:
        stream.close()


def iter_json_records(
    path: str | Path,
    what: str,
    error: ErrorFactory,
    element_ok: Callable[[Any], bool],
    shape_reason: str,
) -> Iterator[JsonRecord]:
    """The elements of a file holding one JSON list, in order, streamed.

    Any problem (not UTF-8, not JSON, not a list, an element that ``element_ok`` refuses) raises the error
    ``load_json`` would raise for the whole file (``error(path, reason)`` naming the line of bad JSON), or
    ``error(path, shape_reason)`` for a valid JSON file of the wrong shape; elements before the problem have been
    yielded by then.
    """
    path = Path(path)
    try:
        yield from _stream(path, element_ok)
        return
    except _Unstreamable:
        pass
    value = load_json(path, what, error)  # the exact error of a file that is not UTF-8 JSON
    if not isinstance(value, list) or not all(element_ok(v) for v in value):
        raise error(path, shape_reason)
    raise AssertionError(f"{path}: json.loads reads a list that the streaming parser could not")  # not reached


def source_key(paths: Iterable[Path]) -> str:
    """A fingerprint of files: SHA-256 of each one's name, size, mtime and ctime (nanoseconds; "absent" where
    missing). Rewriting, replacing or copying a file changes it; reading it does not."""
    parts = []
    for path in paths:
        try:
            st = path.stat()
        except FileNotFoundError:
            parts.append(f"{path.name} absent")
            continue
        parts.append(f"{path.name} {st.st_size} {st.st_mtime_ns} {st.st_ctime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def index_cache_dir() -> Path:
    """Where indexes of logs in read-only folders go: ``<cache>/log-index``, the cache folder being
    ``$STRIDEGEN_CACHE``, else ``$XDG_CACHE_HOME/stridegen`` or ``~/.cache/stridegen`` (``core.cache_dir``)."""
    return cache_root() / "log-index"


def connect_index(path: Path) -> sqlite3.Connection:
    """A read-only connection to a finished index (usable from any thread; callers serialise their queries)."""
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True, check_same_thread=False)


def index_state(path: Path, key: str, schema: str) -> str:
    """ "ok", "missing", "stale" (built from other source files, or by another schema) or "corrupt" (not an
    SQLite file, unfinished, or of another size than its header says: truncated or overwritten)."""
    if not path.is_file():
        return "missing"
    try:
        conn = connect_index(path)
        try:
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            pages = conn.execute("PRAGMA page_count").fetchone()[0] * conn.execute("PRAGMA page_size").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return "corrupt"
    if meta.get("complete") != "1" or pages != path.stat().st_size:
        return "corrupt"
    if meta.get("schema") != schema or meta.get("key") != key:
        return "stale"
    return "ok"


_STATE_NOTES = {
    "stale": "does not match the log's tables (they changed since it was built)",
    "corrupt": "is corrupt",
}


def ensure_index(
    candidates: Sequence[Path],
    source: Path,
    key: Callable[[], str],
    schema: str,
    build: Callable[[sqlite3.Connection], None],
    distrust: Path | None = None,
) -> Path | None:
    """The path of a valid index (module docstring): the first of ``candidates`` that holds one, else one built by
    ``build(connection)`` at the first candidate whose folder may be written; None when none may. ``source``: the
    folder indexed (recorded in the index, for pruning).

    ``key()`` fingerprints the sources; it is taken again after a build, and a source that changed meanwhile is
    indexed once more. ``distrust``: a candidate known to be corrupt (a query failed), rebuilt whatever its state.
    """
    built: Path | None = None
    for _attempt in range(2):
        current = key()
        states = {p: "corrupt" if p == distrust else index_state(p, current, schema) for p in candidates}
        for path in candidates:
            if states[path] == "ok":
                return path
        built = None
        for path in candidates:
            if _prepare_folder(path.parent):
                if states[path] in _STATE_NOTES:
                    print(f"stridegen: log index {path} {_STATE_NOTES[states[path]]}; rebuilding it", file=sys.stderr)
                _build_atomically(path, {"schema": schema, "key": current, "source": str(source.resolve())}, build)
                _prune(path.parent, keep=path)
                built = path
                break
        if built is None or key() == current:
            return built
        distrust = None
    return built


def _prepare_folder(folder: Path) -> bool:
    """Whether index files may be written in ``folder`` (made if missing). A folder without any write permission
    bit counts as read-only even for a user who could write it anyway (root): shared data stays untouched."""
    existing = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if existing is None or not existing.is_dir():
        return False
    if not (os.access(existing, os.W_OK | os.X_OK) and existing.stat().st_mode & 0o222):
        return False
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return True


def _build_atomically(path: Path, meta: dict[str, str], build: Callable[[sqlite3.Connection], None]) -> None:
    fd, tmp_name = tempfile.mkstemp(prefix=f"{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        conn = sqlite3.connect(tmp)
        try:
            conn.execute("PRAGMA journal_mode=OFF")  # a failed build is deleted whole: no journal needed
            conn.execute("PRAGMA synchronous=OFF")
            conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            build(conn)
            conn.executemany("INSERT INTO meta VALUES (?, ?)", [*meta.items(), ("complete", "1")])
            conn.commit()
        finally:
            conn.close()
        tmp.chmod(0o644)  # mkstemp made it private; other users of a shared log may read it
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


STALE_TEMPORARY_S = 24 * 3600  # a temporary index file this old belongs to a build that was killed


def _prune(folder: Path, keep: Path) -> None:
    """Remove the finished indexes of ``folder`` whose source folder no longer exists, and old temporary files."""
    now = time.time()
    for path in folder.iterdir():
        try:
            if path.name.endswith(".tmp") and now - path.stat().st_mtime > STALE_TEMPORARY_S:
                path.unlink()
            elif path.suffix == ".sqlite" and path != keep:
                conn = connect_index(path)
                try:
                    row = conn.execute("SELECT value FROM meta WHERE key = 'source'").fetchone()
                finally:
                    conn.close()
                if row is not None and not Path(row[0]).exists():
                    path.unlink()
        except (OSError, sqlite3.DatabaseError):  # gone meanwhile, or not ours to judge: left alone
            continue
