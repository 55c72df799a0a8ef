"""Bounded reading of the JSON and JSON Lines that stridegen takes from users and servers: a size limit checked
before a file is read, a nesting-depth limit checked before the parser recurses, and no repeated object key.

Why: ``json.loads`` of a device that never ends (``--pred /dev/zero``) reads until the memory is gone, and of a
value nested 100,000 deep raises ``RecursionError`` from deep inside the C scanner; a repeated key keeps only its
last value without a word. Every reader of predictions, results, annotations, records, judge items, cached
replies, dataset manifests, report inputs and log files goes through here (``stridegen.formats.textfile`` for
files, ``loads`` / ``decode`` for text already in memory).

The limits (docs/cli.md, "Limits on inputs"):

- ``STRIDEGEN_JSON_MAX_MB`` (default 2048 MiB): the largest text file read. A regular file is measured with
  ``stat`` before a byte is read; a pipe or a device is read in 1 MiB chunks and given up one byte past the limit.
  A text file (JSON, JSONL, CSV, YAML) holds no NUL byte (RFC 8259: between tokens only whitespace, section 2;
  in strings control characters only escaped, section 7; UTF-16/32 files, whose NULs are characters' high bytes,
  are reported by ``textfile.decode_text``), so the first NUL ends the read at once:
  ``/dev/zero`` is an error after its first chunk, whatever the size limit.
- ``STRIDEGEN_JSON_MAX_DEPTH`` (default 64): the deepest nesting of arrays and objects. The formats stridegen
  reads nest about 5 deep (a nuScenes results box: document, results, sample list, box, vector); CPython's C
  scanner gives up near 1,000 (``Py_EnterRecursiveCall``, a RecursionError). The depth is counted by a scan of
  the brackets outside strings (``first_too_deep``: vectorised over the bytes in 16 MiB chunks; on a 22.8 MB
  results file it took 6-10 % of the time of its parse).
- Server replies have their own limit, the chat client's ``max_reply_chars`` (stridegen.llm.client), applied to
  the HTTP body while it is read (stridegen.llm.http_limit: 12 bytes per character + 1 MiB).

Errors go through the caller's ``error(path, reason)`` factory (``PredictionFormatError``, ``DataFormatError``...),
so every message starts with the file; JSON Lines messages name the line.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.core.errors import ConfigError, DataFormatError

ErrorFactory = Callable[[Path, str], Exception]

ENV_MAX_MB = "STRIDEGEN_JSON_MAX_MB"
ENV_MAX_DEPTH = "STRIDEGEN_JSON_MAX_DEPTH"
DEFAULT_MAX_MB = 2048
DEFAULT_MAX_DEPTH = 64
MIB = 1 << 20
READ_CHUNK = MIB  # bytes per read of a pipe or device
SCAN_CHUNK = 16 * MIB  # bytes per step of the depth scan (bounds its temporary arrays)
_QUOTE, _BACKSLASH = 0x22, 0x5C


@dataclass(frozen=True)
class JsonLimits:
    """The largest text file read (bytes) and the deepest nesting of arrays and objects accepted."""

    max_bytes: int = DEFAULT_MAX_MB * MIB
    max_depth: int = DEFAULT_MAX_DEPTH


def _positive_int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise ConfigError(f"{name}={raw!r}: expected a whole number > 0")
    return value


def json_limits(environ: Mapping[str, str] | None = None) -> JsonLimits:
    """The limits in force: ``STRIDEGEN_JSON_MAX_MB`` and ``STRIDEGEN_JSON_MAX_DEPTH`` when set (whole numbers
    > 0, else ConfigError naming the variable), the defaults otherwise."""
    env = os.environ if environ is None else environ
    return JsonLimits(
        max_bytes=_positive_int(env, ENV_MAX_MB, DEFAULT_MAX_MB) * MIB,
        max_depth=_positive_int(env, ENV_MAX_DEPTH, DEFAULT_MAX_DEPTH),
    )


def _size_reason(what: str, limit: int, size: int | None) -> str:
    got = f"is {size / MIB:.1f} MiB" if size is not None else f"goes on past {limit // MIB} MiB (a pipe or a device?)"
    return f"{what} {got}; the limit is {limit // MIB} MiB (raise it with {ENV_MAX_MB}=<MiB>)"


def _line_of(data: bytes | bytearray, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def read_limited(
    path: str | Path,
    what: str = "file",
    error: ErrorFactory = DataFormatError,
    *,
    text: bool = False,
    max_bytes: int | None = None,
    is_wide: Callable[[bytes], object] | None = None,
) -> bytes:
    """The bytes of a file, at most ``max_bytes`` (default: ``json_limits().max_bytes``). A regular file over the
    limit is refused before it is read (``stat``); a pipe or device is read in chunks and refused one byte past it.
    With ``text``, a NUL byte ends the read with an error naming its line and offset (a text file holds none; see
    the module docstring), unless ``is_wide`` (``textfile.wide_encoding``) says the first bytes are UTF-16/32 text:
    then the first chunk is returned for the caller to report the encoding.
    A missing path, a folder or an unreadable file is ``error(path, reason)``."""
    path = Path(path)
    limit = json_limits().max_bytes if max_bytes is None else max_bytes
    try:
        info = path.stat()
        if stat.S_ISDIR(info.st_mode):
            raise error(path, f"{what} is a folder; expected a file")
        if stat.S_ISREG(info.st_mode) and info.st_size > limit:
            raise error(path, _size_reason(what, limit, info.st_size))
        with path.open("rb") as f:
            first = info.st_size + 1 if stat.S_ISREG(info.st_mode) else READ_CHUNK
            return _read_capped(f, path, what, error, limit, text, is_wide, first)
    except FileNotFoundError:
        raise error(path, f"{what} does not exist") from None
    except IsADirectoryError:
        raise error(path, f"{what} is a folder; expected a file") from None
    except OSError as exc:
        raise error(path, f"cannot read {what}: {exc.strerror or exc}") from None


WideCheck = Callable[[bytes], object]


def _read_capped(
    f: Any,
    path: Path,
    what: str,
    error: ErrorFactory,
    limit: int,
    text: bool,
    is_wide: WideCheck | None,
    first_chunk: int,
) -> bytes:
    """Read ``f`` to its end, at most ``limit`` bytes: ``first_chunk`` bytes at once (a regular file's whole size,
    so it is read in one call and never copied), then 1 MiB chunks (a pipe or a device, or a file that grew)."""
    data = f.read(min(first_chunk, limit + 1))
    if text and data and is_wide is not None and is_wide(data[:4]):
        return data  # UTF-16/32 text: the caller says so, whatever follows
    buffer: bytearray | None = None
    start = 0
    while True:
        whole = data if buffer is None else buffer
        if text and (nul := whole.find(b"\x00", start)) >= 0:
            raise error(
                path,
                f"line {_line_of(whole, nul)}: {what} holds a NUL byte (byte offset {nul}): not text "
                "(a binary file, or a device such as /dev/zero?)",
            )
        if len(whole) > limit:
            raise error(path, _size_reason(what, limit, None))
        chunk = f.read(min(READ_CHUNK, limit + 1 - len(whole))) if data else b""
        if not chunk:
            return data if buffer is None else bytes(buffer)
        if buffer is None:
            buffer = bytearray(data)
        start = len(buffer)
        buffer += chunk


# ---------------------------------------------------------------------------------------------------- depth
def _escaped_quotes(a: np.ndarray, quotes: np.ndarray) -> np.ndarray:
    """Which of the quote positions ``quotes`` in ``a`` are escaped: preceded by an odd run of backslashes."""
    prev_is_bs = np.zeros(quotes.size, dtype=bool)
    has_prev = quotes > 0
    prev_is_bs[has_prev] = a[quotes[has_prev] - 1] == _BACKSLASH
    if not prev_is_bs.any():
        return prev_is_bs
    backslashes = np.flatnonzero(a == _BACKSLASH)
    starts_run = np.ones(backslashes.size, dtype=bool)
    starts_run[1:] = np.diff(backslashes) != 1
    run_starts = backslashes[starts_run]
    candidates = quotes[prev_is_bs]
    # The run that ends just before a candidate starts at the last run start at or before (candidate - 1).
    start = run_starts[np.searchsorted(run_starts, candidates - 1, side="right") - 1]
    out = np.zeros(quotes.size, dtype=bool)
    out[prev_is_bs] = (candidates - start) % 2 == 1
    return out


def first_too_deep(data: bytes | bytearray, max_depth: int, chunk: int = SCAN_CHUNK) -> int | None:
    """The byte offset of the first ``[`` or ``{`` (outside strings) that opens a level deeper than
    ``max_depth``; None when the text nests no deeper. Strings are told by their unescaped quotes (a quote after
    an odd run of backslashes is escaped). A short text with no more than ``max_depth`` brackets is not scanned."""
    if len(data) <= MIB and data.count(b"[") + data.count(b"{") <= max_depth:
        return None
    buf = np.frombuffer(data, dtype=np.uint8)
    n, start, depth, in_string = buf.size, 0, 0, 0
    while start < n:
        end = min(n, start + chunk)
        while end < n and buf[end - 1] == _BACKSLASH:  # a backslash run stays with what it escapes
            end += 1
        a = buf[start:end]
        quotes = np.flatnonzero(a == _QUOTE)
        quotes = quotes[~_escaped_quotes(a, quotes)]
        folded = a | 0x20  # [ ] fold onto { } (0x5B | 0x20 = 0x7B, 0x5D | 0x20 = 0x7D); no other byte does
        brackets = np.flatnonzero((folded == 0x7B) | (folded == 0x7D))
        if brackets.size:
            outside = (np.searchsorted(quotes, brackets) + in_string) % 2 == 0
            kept = brackets[outside]
            levels = depth + np.cumsum(np.where(folded[kept] == 0x7B, 1, -1))
            over = np.flatnonzero(levels > max_depth)
            if over.size:
                return start + int(kept[over[0]])
            if levels.size:
                depth = int(levels[-1])
        in_string = (in_string + quotes.size) % 2
        start = end
    return None


def depth_reason(data: bytes | bytearray, offset: int, max_depth: int, line: int | None = None) -> str:
    """``line L: JSON nested deeper than D levels (column C); ...`` for the offset ``first_too_deep`` found in
    UTF-8 ``data``; the column counts characters, as an editor does (a leading byte-order mark not counted)."""
    line_start = data.rfind(b"\n", 0, offset) + 1
    if line_start == 0 and data.startswith(b"\xef\xbb\xbf"):
        line_start = 3
    column = len(bytes(data[line_start:offset]).decode("utf-8", "replace")) + 1
    where = line if line is not None else _line_of(data, offset)
    return (
        f"line {where}: JSON nested deeper than {max_depth} levels (column {column}); "
        f"raise the limit with {ENV_MAX_DEPTH}=<levels>"
    )


# ------------------------------------------------------------------------------------------------- decoding
class DuplicateKeyError(ValueError):
    """A JSON object names one key twice (``args[0]``: the key)."""


def reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for ``json.loads``: the object as a dict, or DuplicateKeyError on a repeated key
    (JSON itself would keep only the last value, silently)."""
    out = dict(pairs)  # built in C; only a shorter dict than the pairs needs the loop that names the key
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(key)
            seen.add(key)
    return out


_STRICT_DECODER = json.JSONDecoder(object_pairs_hook=reject_duplicate_keys)
_PLAIN_DECODER = json.JSONDecoder()


def json_error_reason(exc: json.JSONDecodeError, line: int | None = None) -> str:
    """``line L: not valid JSON at column C (msg)``; ``line`` overrides the decoder's (a JSONL line number)."""
    return f"line {line or exc.lineno}: not valid JSON at column {exc.colno} ({exc.msg})"


def _shown_key(key: str, limit: int = 80) -> str:
    text = repr(key)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more characters)"


class JsonProblem(ValueError):
    """Why a JSON text was refused: ``key`` (``not_valid_json``, ``nested_too_deep``, ``duplicate_key``: what a
    skip policy counts) and ``reason`` (one line, starting ``line L:`` when the line is known)."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(reason)
        self.key = key
        self.reason = reason


def decode(
    text: str,
    *,
    line: int | None = None,
    max_depth: int | None = None,
    reject_duplicates: bool = True,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
    depth_checked: bool = False,
) -> Any:
    """``json.loads(text)`` within the depth limit (default ``json_limits().max_depth``) and, with
    ``reject_duplicates``, without repeated keys; a failure is ``JsonProblem`` (``line``: the JSON Lines line
    ``text`` came from, else the line within ``text``). An explicit ``object_pairs_hook`` replaces the
    duplicate-key check. ``depth_checked``: the caller scanned the bytes ``text`` was decoded from already."""
    limit = json_limits().max_depth if max_depth is None else max_depth
    where = f"line {line}: " if line is not None else ""
    if not depth_checked and text.count("[") + text.count("{") > limit:  # only then can it be too deep: encode and scan
        data = text.encode("utf-8", "surrogatepass")
        offset = first_too_deep(data, limit)
        if offset is not None:
            raise JsonProblem("nested_too_deep", depth_reason(data, offset, limit, line))
    if object_pairs_hook is not None:
        decoder = json.JSONDecoder(object_pairs_hook=object_pairs_hook)
    else:  # made once: json.loads with a hook builds a decoder per call, a cost per JSON Lines line
        decoder = _STRICT_DECODER if reject_duplicates else _PLAIN_DECODER
    try:
        return decoder.decode(text)
    except DuplicateKeyError as exc:
        raise JsonProblem(
            "duplicate_key",
            f"{where}duplicate key {_shown_key(str(exc.args[0]))} in one object (JSON keeps only the last one "
            "silently; write each key once)",
        ) from None
    except json.JSONDecodeError as exc:
        raise JsonProblem("not_valid_json", json_error_reason(exc, line)) from None
    except RecursionError:  # a limit raised past what the parser can recurse
        raise JsonProblem(
            "nested_too_deep", f"{where}JSON nested too deep for the parser (lower {ENV_MAX_DEPTH} for a clear limit)"
        ) from None


def loads(
    text: str,
    path: str | Path,
    error: ErrorFactory = DataFormatError,
    *,
    line: int | None = None,
    max_depth: int | None = None,
    reject_duplicates: bool = True,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
    depth_checked: bool = False,
) -> Any:
    """``decode(text)``, its ``JsonProblem`` raised as ``error(path, reason)`` (the message starts with the file)."""
    try:
        return decode(
            text,
            line=line,
            max_depth=max_depth,
            reject_duplicates=reject_duplicates,
            object_pairs_hook=object_pairs_hook,
            depth_checked=depth_checked,
        )
    except JsonProblem as exc:
        raise error(Path(path), exc.reason) from None
