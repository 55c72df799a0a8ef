"""A chat server whose HTTP reply body is huge (issue 33, deliverable 6): the client stops reading one byte past
``http_limit.body_limit(max_reply_chars)`` and the request fails with one ``reply_too_large`` line; no MemoryError,
and the memory the request takes stays near the limit, not the body's size. Before, the SDK read the whole body
(here 64 MiB) before ``max_reply_chars`` was checked on the parsed text."""

from __future__ import annotations

import asyncio
import gzip
import json
import threading
import tracemalloc
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from stridegen.llm.client import ChatClient, ClientSettings
from stridegen.llm.http_limit import ENVELOPE_BYTES, MAX_BYTES_PER_CHAR, body_limit
from stridegen.llm.records import ChatRequestError

pytestmark = pytest.mark.openai

MIB = 1 << 20
BODY_MIB = 64  # what the hostile server sends at most (finite, so the test ends on code without the bound too)
MAX_REPLY_CHARS = 10_000  # body limit: 12 x 10,000 + 1 MiB = 1.11 MiB
HEAD = b'{"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": [{"index": 0, '
HEAD += b'"finish_reason": "stop", "message": {"role": "assistant", "content": "'


def _completion(text: str) -> bytes:
    return json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
    ).encode()


class _Server:
    """A loopback HTTP server answering every POST by ``mode``: ``stream`` (a chunked body of BODY_MIB MiB of one
    JSON string that never closes), ``declared`` (Content-Length of 1 GiB, then the same bytes), ``bomb`` (a small
    gzip body that inflates to BODY_MIB MiB), ``gzip_ok`` (a gzip-compressed valid completion), ``brotli`` (a body
    labelled ``br``). ``sent``: bytes of body written before the client hung up."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.sent = 0
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                server.requests += 1
                try:
                    server.answer(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up reading: what the bound is for

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def answer(self, h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        if self.mode in ("gzip_ok", "bomb", "brotli"):
            if self.mode == "gzip_ok":
                body = gzip.compress(_completion("Region [0] is 3 meters away."))
            elif self.mode == "bomb":
                z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
                filler = b"a" * MIB
                body = z.compress(HEAD) + b"".join(z.compress(filler) for _ in range(BODY_MIB)) + z.flush()
            else:
                body = b"\x0b\x02\x80hello\x03"
            h.send_header("Content-Encoding", "br" if self.mode == "brotli" else "gzip")
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            h.wfile.write(body)
            self.sent += len(body)
            return
        chunk = b"a" * (64 * 1024)
        if self.mode == "declared":
            h.send_header("Content-Length", str(1 << 30))
            h.end_headers()
            for _ in range(BODY_MIB * 16):
                h.wfile.write(chunk)
                self.sent += len(chunk)
            return
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        h.wfile.write(b"%x\r\n%s\r\n" % (len(HEAD), HEAD))
        for _ in range(BODY_MIB * 16):
            h.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.sent += len(chunk)
        h.wfile.write(b"0\r\n\r\n")

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


@contextmanager
def _server(mode: str) -> Iterator[_Server]:
    server = _Server(mode)
    try:
        yield server
    finally:
        server.close()


def _client(server: _Server, **kw: Any) -> ChatClient:
    settings = ClientSettings(
        base_url=server.base_url,
        model="m",
        timeout_s=20,
        max_retries=2,
        backoff_base_s=0.001,
        backoff_max_s=0.002,
        max_reply_chars=MAX_REPLY_CHARS,
        price_input_per_mtok=1.0,
        price_output_per_mtok=2.0,
        **kw,
    )
    return ChatClient(settings, sleep=lambda s: None)


MESSAGES = [{"role": "user", "content": "How far is region [0]?"}]


def _peak_mib(run: Any) -> tuple[Any, float]:
    """(what ``run()`` returned or raised, the peak of Python's traced memory while it ran, MiB)."""
    tracemalloc.start()
    try:
        try:
            out: Any = run()
        except Exception as exc:  # the error is the result under test
            out = exc
        return out, tracemalloc.get_traced_memory()[1] / MIB
    finally:
        tracemalloc.stop()


def test_body_limit_leaves_room_for_every_reply_within_max_reply_chars() -> None:
    worst = "\U0001f600" * 1000  # JSON-escaped (ensure_ascii) as a surrogate pair: 12 bytes per character
    assert len(json.dumps(worst)) == MAX_BYTES_PER_CHAR * len(worst) + 2
    assert body_limit(1000) == 12_000 + ENVELOPE_BYTES
    assert len(_completion(worst)) <= body_limit(len(worst))


@pytest.mark.parametrize("mode", ["stream", "bomb"])
def test_an_endless_or_inflating_body_stops_at_the_limit(mode: str) -> None:
    limit = body_limit(MAX_REPLY_CHARS)
    with _server(mode) as server:
        client = _client(server)
        error, peak = _peak_mib(lambda: client.complete(MESSAGES, {"max_tokens": 100}))
    assert isinstance(error, ChatRequestError), error
    assert error.kind == "reply_too_large"
    text = str(error)
    assert (
        f"goes on past the {limit / MIB:,.1f} MiB allowed by max_reply_chars 10,000;" in text
        and "STRIDEGEN_REPLY_MAX_CHARS" in text
    )
    assert "\n" not in text and len(text) < 300
    assert server.requests == 1  # not retried
    assert peak < 4 * limit / MIB + 4, f"peak {peak:.1f} MiB for a {limit / MIB:.1f} MiB limit"
    if mode == "stream":
        assert server.sent < BODY_MIB * MIB / 2  # the reader hung up; the server did not get to write it all
    # Charged its reservation: the estimated prompt and max_tokens of output (the usage was never read).
    assert client.meter.requests == 1 and client.meter.completion_tokens == 100


def test_a_declared_length_over_the_limit_is_refused_before_reading() -> None:
    with _server("declared") as server:
        client = _client(server)
        error, peak = _peak_mib(lambda: client.complete(MESSAGES, {"max_tokens": 100}))
    assert isinstance(error, ChatRequestError) and error.kind == "reply_too_large", error
    assert (
        "declares 1,024.0 MiB (Content-Length), more than the 1.1 MiB allowed" in str(error) and len(str(error)) < 300
    )
    assert peak < 4


def test_the_async_client_is_bounded_too() -> None:
    async def run() -> Any:
        client = _client(server)
        try:
            return await client.acomplete(MESSAGES, {"max_tokens": 100})
        finally:
            await client.aclose()

    with _server("stream") as server:
        error, peak = _peak_mib(lambda: asyncio.run(run()))
    assert isinstance(error, ChatRequestError) and error.kind == "reply_too_large", error
    assert peak < 4 * body_limit(MAX_REPLY_CHARS) / MIB + 4
    assert server.requests == 1


def test_a_compressed_reply_within_the_limit_reads_as_before() -> None:
    with _server("gzip_ok") as server:
        completion = _client(server).complete(MESSAGES, {"max_tokens": 100})
    assert completion.text == "Region [0] is 3 meters away." and completion.completion_tokens == 5


def test_a_coding_not_asked_for_is_one_error_not_retried() -> None:
    with _server("brotli") as server:
        client = _client(server)
        with pytest.raises(ChatRequestError) as info:
            client.complete(MESSAGES, {"max_tokens": 100})
    assert info.value.kind == "malformed_response"
    assert "compressed as 'br', which was not asked for (Accept-Encoding: gzip, deflate)" in str(info.value)
    assert server.requests == 1
