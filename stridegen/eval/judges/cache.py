"""Verdict cache and error log: append-only JSONL files, one fsync per record, safe against kill -9.

``cache.jsonl`` holds one line per successful judge request: the request hash (the key), the raw reply with
its accounting and the parsed verdict. Only replies that parsed are stored, so a rerun retries everything
else. ``errors.jsonl`` records every failed request (transport errors, unparseable replies, budget refusals)
for inspection; it is never read back as a verdict.

A process killed mid-write leaves at most one truncated last line; it is ignored on load and a newline is
written before the next record so later records stay readable. Every record is redacted (redact.py) before it
is written or kept: no API key, Authorization header or key-shaped string reaches the disk.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from stridegen.llm.jsonl import AppendOnlyJsonl
from stridegen.llm.records import Completion
from stridegen.llm.redact import redact_obj


class VerdictCache:
    """Request-hash -> (completion, parsed verdict), persisted under ``directory``."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self._cache = AppendOnlyJsonl(self.directory / "cache.jsonl")
        self._errors = AppendOnlyJsonl(self.directory / "errors.jsonl")
        self._lock = threading.Lock()
        self._entries: dict[str, dict[str, Any]] = {}
        records, self.unreadable_lines = self._cache.read()
        for record in records:
            if isinstance(record, dict) and "key" in record and "completion" in record and "parsed" in record:
                self._entries[record["key"]] = record

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def get(self, key: str) -> tuple[Completion, dict[str, Any]] | None:
        with self._lock:
            record = self._entries.get(key)
        if record is None:
            return None
        return Completion.from_dict(record["completion"]), record["parsed"]

    def put(self, key: str, completion: Completion, parsed: dict[str, Any], **context: Any) -> None:
        record = redact_obj(
            {"key": key, "completion": completion.to_dict(), "parsed": parsed, "t": time.time(), **context}
        )
        self._cache.append(record)
        with self._lock:
            self._entries[key] = record

    def record_error(self, key: str, kind: str, message: str, **context: Any) -> None:
        self._errors.append(redact_obj({"key": key, "kind": kind, "message": message, "t": time.time(), **context}))

    def errors(self) -> list[dict[str, Any]]:
        return self._errors.read()[0]
