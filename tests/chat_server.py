"""A scripted chat-completions server on loopback for the judge and predict tests (stdlib only).

The server answers ``POST /v1/chat/completions``. A *script* (a callable) decides each reply from the parsed
request body and the number of times the same body was seen before; it returns a :class:`Reply` (status,
body, headers, delay). Every request is recorded. Only 127.0.0.1 is bound; the serving thread stops on
``close()`` and refuses to serve more than ``max_requests`` requests (a bound on runaway retry loops).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: bytes | str | dict | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


def completion_body(
    text: str | None,
    prompt_tokens: int = 50,
    completion_tokens: int = 20,
    model: str = "scripted-judge",
    choices: bool = True,
) -> dict:
    """An OpenAI chat-completion response body with one choice holding ``text`` (or no choices)."""
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": (
            [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}]
            if choices
            else []
        ),
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


@dataclass
class Recorded:
    body: dict[str, Any]
    key: str
    seen_before: int
    t: float


Script = Callable[[dict[str, Any], int], Reply]


class ScriptedServer:
    def __init__(self, script: Script, max_requests: int = 500) -> None:
        self.script = script
        self.max_requests = max_requests
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {}
                reply = server._record_and_script(body, raw)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                payload = reply.body
                if isinstance(payload, dict):
                    payload = json.dumps(payload).encode()
                elif isinstance(payload, str):
                    payload = payload.encode()
                elif payload is None:
                    payload = b""
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and hung up
                    pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def _record_and_script(self, body: dict, raw: bytes) -> Reply:
        key = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).hexdigest()
        with self._lock:
            if len(self.requests) >= self.max_requests:
                return Reply(503, {"error": {"message": "request bound reached"}})
            seen = self._counts.get(key, 0)
            self._counts[key] = seen + 1
            self.requests.append(Recorded(body, key, seen, time.monotonic()))
        return self.script(body, seen)

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def last_user_text(body: dict) -> str:
    """The text of the last user message of a request body (text parts joined)."""
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return "\n".join(p.get("text", "") for p in content if p.get("type") == "text")
            return str(content)
    return ""
