"""The reply cache of a predict run: the answered requests of a scene, keyed by the request's content
(``PromptRequest.content_key``), in ``<cache>/<scene>.jsonl`` (append-only, one fsync per reply: a run killed
with kill -9 keeps every reply it had, and its rerun sends only the rest). Failed requests are never cached, so a
rerun retries them. Every record is redacted before it is written."""

from __future__ import annotations

from pathlib import Path

from stridegen.llm.jsonl import AppendOnlyJsonl
from stridegen.llm.redact import redact_obj
from stridegen.logs.names import scene_file_stem
from stridegen.predict.base import Reply


def cache_file(directory: str | Path, scene: str) -> Path:
    name = scene_file_stem(scene)
    return Path(directory) / f"{name}.jsonl"


class ReplyCache:
    """Request content key -> the reply's text and accounting, for one scene."""

    def __init__(self, directory: str | Path, scene: str) -> None:
        self._file = AppendOnlyJsonl(cache_file(directory, scene))
        self._entries: dict[str, dict[str, object]] = {}
        records, self.unreadable_lines = self._file.read()
        for record in records:
            if isinstance(record, dict) and isinstance(record.get("key"), str) and isinstance(record.get("text"), str):
                self._entries[record["key"]] = record

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> Reply | None:
        record = self._entries.get(key)
        if record is None:
            return None
        return Reply(
            str(record["text"]),
            prompt_tokens=int(record.get("prompt_tokens", 0)),  # type: ignore[call-overload]
            completion_tokens=int(record.get("completion_tokens", 0)),  # type: ignore[call-overload]
            cost_usd=float(record.get("cost_usd", 0.0)),  # type: ignore[arg-type]
        )

    def put(self, key: str, reply: Reply) -> None:
        if not reply.ok:
            return
        record = redact_obj(
            {
                "key": key,
                "text": reply.text,
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "cost_usd": reply.cost_usd,
                "latency_s": round(reply.latency_s, 4),
            }
        )
        self._file.append(record)
        self._entries[key] = record
