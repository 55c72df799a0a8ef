"""Append-only JSONL files that survive kill -9: the judges' verdict cache and error log, and predict's reply
cache."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any


class AppendOnlyJsonl:
    """An append-only JSONL file: one write and one fsync per record, a truncated last line (a process killed
    mid-write) ignored on read and closed with a newline before the next append."""

    def __init__(self, path: Path) -> None:
        self.path = path
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
        """All readable records and the number of unreadable (truncated) lines."""
        if not self.path.exists():
            return [], 0
        records, bad = [], 0
        with self.path.open("rb") as f:
            for raw in f:
                if not raw.strip():
                    continue
                try:
                    records.append(json.loads(raw))
                except ValueError:
                    bad += 1
        return records, bad
