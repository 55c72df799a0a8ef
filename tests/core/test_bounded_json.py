"""stridegen.core.bounded_json: the size, depth and repeated-key limits of every JSON input (issue 33).

The depth scan is checked against a plain character-by-character scanner and against the depth of the decoded
value, on JSON whose strings hold brackets, quotes and runs of backslashes, at chunk sizes that split the text
anywhere; the readers against regular files, a pipe that never ends and /dev/zero.
"""

from __future__ import annotations

import json
import os
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stridegen.core import bounded_json as bj
from stridegen.core.errors import ConfigError, DataFormatError, PredictionFormatError
from stridegen.formats import textfile


def _reference_first_too_deep(data: bytes, max_depth: int) -> int | None:
    """A plain scanner: strings end at an unescaped quote; brackets outside strings change the depth."""
    depth, in_string, escaped = 0, False, False
    for i, c in enumerate(data):
        if in_string:
            if escaped:
                escaped = False
            elif c == 0x5C:
                escaped = True
            elif c == 0x22:
                in_string = False
        elif c == 0x22:
            in_string = True
        elif c in (0x5B, 0x7B):
            depth += 1
            if depth > max_depth:
                return i
        elif c in (0x5D, 0x7D):
            depth -= 1
    return None


def _depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


_tricky_text = st.text(alphabet='[]{}"\\a\né', max_size=8)  # json.dumps escapes " and \\ into backslash runs
_json_values = st.recursive(
    st.none() | st.integers(-5, 5) | _tricky_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_tricky_text, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(value=_json_values, max_depth=st.integers(0, 6), chunk=st.sampled_from([1, 2, 3, 7, 1 << 20]))
def test_depth_scan_equals_reference_and_decoded_depth(value: Any, max_depth: int, chunk: int) -> None:
    data = json.dumps(value, ensure_ascii=False).encode()
    found = bj.first_too_deep(data, max_depth, chunk=chunk)
    assert found == _reference_first_too_deep(data, max_depth)
    assert (found is None) == (_depth(value) <= max_depth)
    if found is not None:
        assert data[found : found + 1] in (b"[", b"{")


def test_deep_nesting_is_one_line_naming_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"a": 1,\n "b": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"deep.json: line 2: JSON nested deeper than 64 levels \(column 70\)"):
        textfile.load_json(path)
    shallow = tmp_path / "ok.json"
    shallow.write_text("[" * 64 + "]" * 64, encoding="utf-8")
    assert _depth(textfile.load_json(shallow)) == 64  # the limit itself passes


def test_depth_limit_is_raised_by_its_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "d.json"
    path.write_text("[" * 100 + "]" * 100, encoding="utf-8")
    with pytest.raises(DataFormatError, match="STRIDEGEN_JSON_MAX_DEPTH"):
        textfile.load_json(path)
    monkeypatch.setenv("STRIDEGEN_JSON_MAX_DEPTH", "100")
    assert _depth(textfile.load_json(path)) == 100
    monkeypatch.setenv("STRIDEGEN_JSON_MAX_DEPTH", "lots")
    with pytest.raises(ConfigError, match="STRIDEGEN_JSON_MAX_DEPTH='lots'"):
        textfile.load_json(path)


def test_a_limit_past_the_parser_is_still_one_clear_error() -> None:
    with pytest.raises(bj.JsonProblem, match="nested too deep for the parser") as info:
        bj.decode("[" * 100_000 + "]" * 100_000, max_depth=10**9)
    assert info.value.key == "nested_too_deep"


def test_repeated_key_is_an_error_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text('{"a": 1}\n{"q": "x", "pred": "1 m", "pred": "9 m"}\n', encoding="utf-8")
    with pytest.raises(PredictionFormatError, match=r"p.jsonl: line 2: duplicate key 'pred'"):
        list(textfile.iter_jsonl(path, "predictions", PredictionFormatError))


def test_file_over_the_size_limit_is_refused_before_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big.jsonl"
    path.write_bytes(b'{"question_id": "a", "pred": "1 m"}\n' * 60_000)  # 2.2 MB
    monkeypatch.setenv("STRIDEGEN_JSON_MAX_MB", "1")
    opened: list[str] = []
    real_open = Path.open

    def spy(self: Path, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", spy)
    with pytest.raises(
        DataFormatError, match=r"big.jsonl: predictions is 2.1 MiB; the limit is 1 MiB .*STRIDEGEN_JSON"
    ):
        textfile.read_text(path, "predictions")
    assert opened == []  # refused on its size alone


def test_pipe_that_never_ends_stops_at_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    monkeypatch.setenv("STRIDEGEN_JSON_MAX_MB", "2")
    stop = threading.Event()

    def writer() -> None:
        try:
            with open(fifo, "wb") as f:
                while not stop.is_set():
                    f.write(b'{"question_id": "a", "pred": "1 m"}\n' * 1000)
        except BrokenPipeError:
            pass

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        with pytest.raises(DataFormatError, match=r"goes on past 2 MiB \(a pipe or a device\?\)"):
            textfile.read_text(fifo, "predictions")
    finally:
        stop.set()
        thread.join(timeout=5)


def test_dev_zero_is_refused_at_once_in_bounded_memory() -> None:
    tracemalloc.start()
    t0 = time.monotonic()
    try:
        with pytest.raises(DataFormatError, match=r"/dev/zero: line 1: predictions holds a NUL byte \(byte offset 0\)"):
            textfile.read_text("/dev/zero", "predictions")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.monotonic() - t0 < 5.0
    assert peak < 8 * bj.MIB  # one 1 MiB chunk, not the size limit


def test_wide_text_is_still_named_as_such(tmp_path: Path) -> None:
    path = tmp_path / "u16.json"
    path.write_bytes('{"a": 1}'.encode("utf-16"))
    with pytest.raises(DataFormatError, match="UTF-16 LE"):
        textfile.load_json(path)


def test_depth_column_counts_characters_after_a_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + '{"é": '.encode() + b"[" * 64 + b"]" * 64 + b"}")
    # "{" is level 1 at column 1; '"é": ' fills columns 2-6; the 63rd "[" (column 69) opens level 64, the 64th
    # (column 70) level 65: counted in characters, the mark not counted, "é" one column (two bytes)
    with pytest.raises(DataFormatError, match=r"line 1: JSON nested deeper than 64 levels \(column 70\)"):
        textfile.load_json(path)
