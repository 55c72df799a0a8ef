"""Append-only JSONL files that survive kill -9: the judges' verdict cache and error log, and predict's reply
cache."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from stridegen.core.bounded_json import decode

READ_CHUNK = 1 << 20
# The longest line read back: a record holds one reply (at most the client's max_reply_chars, 1,000,000
# characters, up to 4 bytes each in UTF-8) plus its accounting; JSON escapes can double a character's bytes.
MAX_LINE_BYTES = 16 << 20


class AppendOnlyJsonl:
    """An append-only JSONL file: one write and one fsync per record, a truncated last line (a process killed
    mid-write) ignored on read and closed with a newline before the next append."""

    def __init__(self, path: Path, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self.path = path
        self.max_line_bytes = max_line_bytes
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._repair_tail()

    def _repair_tail(self) -> None:
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        with self.path.open("rb") as f:
            f.seek(-1, os.SEEK_END)
            last = f.read(1)
        if last != b"\n":
            with self.path.open("ab") as f:
                f.write(b"\n")
                f.flush()
                os.fsync(f.fileno())

    def append(self, record: dict[str, Any]) -> None:
        line = (json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock, self.path.open("ab") as f:
            f.write(line)  # one write per record: a kill can only truncate the tail
            f.flush()
            os.fsync(f.fileno())

    def read(self) -> tuple[list[dict[str, Any]], int]:
        """All readable records and the number of unreadable lines: truncated (a kill), not UTF-8, or refused by
        the bounded decoder (nested deeper than ``STRIDEGEN_JSON_MAX_DEPTH``, a repeated key:
        stridegen.core.bounded_json). A line longer than the file's ``max_line_bytes`` is skipped unread (it
        counts as unreadable), so a reply stored before the reply limit existed cannot fill the memory twice."""
        if not self.path.exists():
            return [], 0
        records, bad = [], 0
        with self.path.open("rb") as f:
            while raw := f.readline(self.max_line_bytes + 1):
                if len(raw) > self.max_line_bytes and not raw.endswith(b"\n"):
                    bad += 1
                    while (rest := f.readline(READ_CHUNK)) and not rest.endswith(b"\n"):
                        pass  # the rest of the overlong line, read and dropped in chunks
                    continue
                if not raw.strip():
                    continue
                try:
                    records.append(decode(raw.decode("utf-8")))
                except ValueError:  # JsonProblem, UnicodeDecodeError
                    bad += 1
        return records, bad
