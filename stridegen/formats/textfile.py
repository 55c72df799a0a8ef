"""Reading the text files users hand to stridegen (JSON, JSONL, CSV, YAML): one rule for encodings and errors.

- UTF-8 is the encoding (RFC 8259 section 8.1: JSON exchanged between systems "MUST be encoded using UTF-8");
  a leading UTF-8 byte-order mark (EF BB BF, written by Windows Notepad and Excel's "CSV UTF-8") is tolerated
  and dropped, as RFC 8259 allows a parser to do.
- UTF-16 / UTF-32 text is recognised, by its byte-order mark (FF FE, FE FF, FF FE 00 00, 00 00 FE FF) or, without
  one, by NUL bytes among the first four (the pattern RFC 4627 section 3 uses to tell them apart), and reported
  as such with the fix (save as UTF-8), not as a puzzling "invalid start byte".
- Any other byte that is not UTF-8 is reported with its value, line, column and byte offset.
- A missing path, a folder where a file is expected and an unreadable file are errors naming the path.
- Reading is bounded (stridegen.core.bounded_json): a file over ``STRIDEGEN_JSON_MAX_MB`` is refused before it
  is read, a text file's NUL byte (``/dev/zero``) ends the read, JSON nested deeper than
  ``STRIDEGEN_JSON_MAX_DEPTH`` is refused before it is parsed, and a JSON Lines object may not repeat a key.

Every error is raised through the caller's ``error(path, reason)`` factory (``PredictionFormatError``,
``DataFormatError``, ...: the typed errors of stridegen.core.errors), so the message always starts with the file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from stridegen.core.bounded_json import depth_reason, first_too_deep, json_limits, loads, read_limited
from stridegen.core.bounded_json import json_error_reason as json_error_reason  # re-exported
from stridegen.core.errors import ConfigError, DataFormatError

ErrorFactory = Callable[[Path, str], Exception]

UTF8_BOM = b"\xef\xbb\xbf"
# Longest marks first: the UTF-32 LE mark begins with the UTF-16 LE one.
_WIDE_BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\xff\xfe\x00\x00", "UTF-32 LE"),
    (b"\x00\x00\xfe\xff", "UTF-32 BE"),
    (b"\xff\xfe", "UTF-16 LE"),
    (b"\xfe\xff", "UTF-16 BE"),
)
# RFC 4627 section 3: the first two characters of a JSON text are ASCII, so the NUL pattern of the first four
# bytes tells the encoding of a text without a byte-order mark.
_NUL_PATTERNS: tuple[tuple[Callable[[bytes], bool], str], ...] = (
    (lambda b: b[0] == 0 and b[1] == 0 and b[2] == 0 and b[3] != 0, "UTF-32 BE"),
    (lambda b: b[0] != 0 and b[1] == 0 and b[2] == 0 and b[3] == 0, "UTF-32 LE"),
    (lambda b: b[0] == 0 and b[1] != 0 and b[2] == 0, "UTF-16 BE"),
    (lambda b: b[0] != 0 and b[1] == 0 and b[3] == 0, "UTF-16 LE"),
)
SHOWN_CHARS = 80  # a value quoted in a message is cut to this many characters


def config_error(path: Path, reason: str) -> ConfigError:
    """An ``ErrorFactory`` for configuration files: ``ConfigError("<path>: <reason>")``."""
    return ConfigError(f"{path}: {reason}")


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """``repr(value)``, cut to ``limit`` characters with the number left out (a 5 MB field never fills a message)."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def read_bytes(path: str | Path, what: str = "file", error: ErrorFactory = DataFormatError) -> bytes:
    """The bytes of a file, within the size limit (``bounded_json.read_limited``); ``error(path, reason)`` for a
    missing path, a folder, an unreadable file or one over the limit."""
    return read_limited(path, what, error)


def decode_text(data: bytes, path: str | Path, what: str = "file", error: ErrorFactory = DataFormatError) -> str:
    """``data`` as UTF-8 text without a leading byte-order mark; ``error(path, reason)`` for any other encoding.

    A byte that is not UTF-8 is reported with its line, its column in characters (as an editor counts them; the
    byte-order mark not counted) and its byte offset in the file.
    """
    path = Path(path)
    skip = len(UTF8_BOM) if data.startswith(UTF8_BOM) else 0
    wide = wide_encoding(data[skip:])
    if wide is not None:
        raise error(path, f"{what} is {wide} text; expected UTF-8 (save it as UTF-8)")
    try:
        return data[skip:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = skip + exc.start
        line_start = max(data.rfind(b"\n", 0, offset) + 1, skip)
        column = len(data[line_start:offset].decode("utf-8")) + 1  # valid: the first bad byte is at ``offset``
        line = data.count(b"\n", 0, offset) + 1
        raise error(
            path,
            f"line {line}: {what} is not UTF-8 text: byte 0x{data[offset]:02X} at column {column} "
            f"(byte offset {offset}); save it as UTF-8",
        ) from None


def wide_encoding(data: bytes) -> str | None:
    """The encoding ("UTF-16 LE (byte-order mark FF FE)", ...) when ``data`` is UTF-16 / UTF-32 text, by its mark
    or its NUL bytes; None otherwise."""
    for mark, name in _WIDE_BOMS:
        if data.startswith(mark):
            return f"{name} (byte-order mark {' '.join(f'{b:02X}' for b in mark)})"
    if len(data) >= 4 and 0 in data[:4]:
        for matches, name in _NUL_PATTERNS:
            if matches(data[:4]):
                return f"{name} (no byte-order mark)"
    return None


def read_text(path: str | Path, what: str = "file", error: ErrorFactory = DataFormatError) -> str:
    """A user's text file as a string (UTF-8, byte-order mark dropped); ``error(path, reason)`` otherwise."""
    return decode_text(read_limited(path, what, error, text=True, is_wide=wide_encoding), path, what, error)


def load_json(
    path: str | Path,
    what: str = "file",
    error: ErrorFactory = DataFormatError,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
    reject_duplicates: bool = False,
) -> Any:
    """A user's JSON file, decoded within the depth limit (``bounded_json.loads``); errors name the file and, for
    bad JSON, the line and column. ``reject_duplicates``: a repeated key in an object is an error (callers whose
    files are read with ``json.loads`` elsewhere, the log tables, keep JSON's last-one-wins)."""
    path = Path(path)
    data = read_limited(path, what, error, text=True, is_wide=wide_encoding)
    text = decode_text(data, path, what, error)
    if not text.strip():
        raise error(path, f"{what} is empty; expected JSON")
    max_depth = json_limits().max_depth
    offset = first_too_deep(data, max_depth)  # on the bytes read: no second copy of a large file
    if offset is not None:
        raise error(path, depth_reason(data, offset, max_depth))
    return loads(
        text, path, error, reject_duplicates=reject_duplicates, object_pairs_hook=object_pairs_hook, depth_checked=True
    )


def load_yaml(path: str | Path, what: str = "file", error: ErrorFactory = DataFormatError) -> Any:
    """A user's YAML file (``yaml.safe_load``; None for an empty file); a YAML error names the line and column."""
    import yaml

    path = Path(path)
    text = read_text(path, what, error)
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = " ".join(f"{exc.context or ''} {exc.problem or ''}".split())
        where = f"line {mark.line + 1}: invalid YAML at column {mark.column + 1}" if mark else "invalid YAML"
        raise error(path, f"{where} ({problem})") from None
    except yaml.YAMLError as exc:
        raise error(path, f"invalid YAML ({' '.join(str(exc).split())})") from None
    except RecursionError:  # PyYAML composes nested collections recursively (issue 33: one error, not exit 4)
        raise error(path, f"{what} nests its YAML collections too deep to parse") from None


def iter_jsonl(
    path: str | Path, what: str = "file", error: ErrorFactory = DataFormatError, allow_empty: bool = False
) -> Iterator[tuple[int, Any]]:
    """(line number, decoded value) of every non-blank line of a JSON Lines file; a line that is not JSON, nests
    deeper than the limit or repeats a key in an object raises ``error`` naming the file and the line (callers
    with a skip policy decode ``iter_jsonl_lines`` themselves, with ``bounded_json.loads``)."""
    path = Path(path)
    max_depth = json_limits().max_depth
    for line_no, line in iter_jsonl_lines(path, what, error, allow_empty):
        yield line_no, loads(line, path, error, line=line_no, max_depth=max_depth)


def iter_jsonl_lines(
    path: str | Path, what: str = "file", error: ErrorFactory = DataFormatError, allow_empty: bool = False
) -> Iterator[tuple[int, str]]:
    """(line number, text) of every non-blank line of a UTF-8 text file, numbered from 1 with blank lines counted.

    Lines end at a line feed only (JSON strings may hold U+2028 and other characters ``str.splitlines`` breaks at).
    A file without a non-blank line is an error unless ``allow_empty``.
    """
    path = Path(path)
    text = read_text(path, what, error)
    empty = True
    for line_no, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            empty = False
            yield line_no, line
    if empty and not allow_empty:
        raise error(path, f"{what} is empty: no JSON lines")
