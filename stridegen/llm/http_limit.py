"""A bound on the bytes of a chat server's HTTP reply, applied while the body is read.

The ``openai`` SDK reads a non-streamed reply whole (``httpx2.Client.send`` -> ``Response.read``) before it parses
it, so a check of the reply's text after parsing (``ChatClient``'s ``max_reply_chars``) comes after the whole body
is in memory, and a 24 MB (or endless) body is held in full first. This module gives the SDK's HTTP client a
``response`` event hook that swaps the response's byte stream for one that counts what it yields and raises
``ReplyBodyTooLargeError`` one byte past the limit; the SDK passes that exception through untouched (it is neither
an ``httpx2`` request error nor a timeout), and the client turns it into a ``reply_too_large`` failure of the item.

- A ``Content-Length`` over the limit is refused before a byte of the body is read.
- The limit counts the *decoded* bytes, what the SDK would hold: the hook asks for ``gzip`` or ``deflate`` only
  (``Accept-Encoding``) and decompresses those itself in bounded steps (``zlib`` with ``max_length``), so a small
  compressed body that inflates to gigabytes stops at the limit as well. Any other content coding is refused.
- The error responses the SDK reads (4xx / 5xx bodies) pass through the same stream.

The byte limit comes from the reply limit in characters (``body_limit``): a JSON string escapes a character in at
most 12 bytes (``\\ud83d\\ude00``, a character outside the Basic Multilingual Plane as a UTF-16 surrogate pair of
``\\uXXXX`` escapes, RFC 8259 section 7), so no reply within ``max_reply_chars`` is ever cut here; 1 MiB more
covers the envelope (id, usage, role, finish reason).
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import httpx2

from stridegen.llm.records import ReplyBodyTooLargeError, UnsupportedEncodingError

MIB = 1 << 20
MAX_BYTES_PER_CHAR = 12  # a JSON-escaped surrogate pair (RFC 8259 section 7) for one character
ENVELOPE_BYTES = MIB  # the completion object around the text
INFLATE_STEP = 64 * 1024  # bytes of decompressed output per zlib call
ACCEPT_ENCODING = "gzip, deflate"  # the codings this module can decompress within the bound


def body_limit(max_reply_chars: int) -> int:
    """The most bytes read of an HTTP reply for a reply text limit of ``max_reply_chars`` characters."""
    return MAX_BYTES_PER_CHAR * max_reply_chars + ENVELOPE_BYTES


def _mib(n: int) -> str:
    return f"{n / MIB:,.1f} MiB"


def _too_large(read: int, limit: int, declared: int | None = None) -> ReplyBodyTooLargeError:
    if declared is not None:
        what = f"the HTTP reply declares {_mib(declared)} (Content-Length), more than the {_mib(limit)} allowed"
    else:
        what = f"the HTTP reply goes on past the {_mib(limit)} allowed"
    return ReplyBodyTooLargeError(what, read, limit)


class _Inflater:
    """Bounded decompression of one content coding (``gzip`` / ``x-gzip`` / ``deflate``; identity passes)."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        if coding in ("gzip", "x-gzip"):
            self._z: Any = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif coding == "deflate":
            self._z = zlib.decompressobj()  # RFC 9110 8.4.1.2: the zlib format; raw deflate is tried on failure
            self._first = True
        else:
            self._z = None

    def feed(self, data: bytes, room: int) -> Iterator[bytes]:
        """The decompressed bytes of ``data``, in pieces; stops once more than ``room`` bytes came out."""
        if self._z is None:
            yield data
            return
        if self.coding == "deflate" and self._first and data:
            self._first = False
            try:
                probe = zlib.decompressobj()
                probe.decompress(data[:2])  # a zlib header is two bytes (RFC 1950 section 2.2)
            except zlib.error:
                self._z = zlib.decompressobj(-zlib.MAX_WBITS)  # a server that sends raw deflate
        out = 0
        pending = data
        while pending and out <= room:
            piece = self._z.decompress(pending, INFLATE_STEP)
            pending = self._z.unconsumed_tail
            out += len(piece)
            if piece:
                yield piece

    def flush(self) -> bytes:
        return self._z.flush() if self._z is not None else b""


class _Counter:
    """The count of bytes given to the SDK and the limit: shared by the sync and async streams."""

    def __init__(self, limit: int, coding: str) -> None:
        self.limit = limit
        self.count = 0
        self.inflater = _Inflater(coding)

    def pieces(self, raw: bytes) -> Iterator[bytes]:
        try:
            for piece in self.inflater.feed(raw, self.limit - self.count):
                self.count += len(piece)
                if self.count > self.limit:
                    raise _too_large(self.count, self.limit)
                yield piece
        except zlib.error as exc:
            raise UnsupportedEncodingError(f"the HTTP reply is not valid {self.inflater.coding} data ({exc})") from None

    def tail(self) -> bytes:
        try:
            rest = self.inflater.flush()
        except zlib.error as exc:
            raise UnsupportedEncodingError(f"the HTTP reply is not valid {self.inflater.coding} data ({exc})") from None
        self.count += len(rest)
        if self.count > self.limit:
            raise _too_large(self.count, self.limit)
        return rest


class _CappedStream(httpx2.SyncByteStream):
    def __init__(self, inner: httpx2.SyncByteStream, counter: _Counter) -> None:
        self._inner = inner
        self._counter = counter

    def __iter__(self) -> Iterator[bytes]:
        for raw in self._inner:
            yield from self._counter.pieces(raw)
        if rest := self._counter.tail():
            yield rest

    def close(self) -> None:
        self._inner.close()


class _AsyncCappedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, counter: _Counter) -> None:
        self._inner = inner
        self._counter = counter

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for raw in self._inner:
            for piece in self._counter.pieces(raw):
                yield piece
        if rest := self._counter.tail():
            yield rest

    async def aclose(self) -> None:
        await self._inner.aclose()


def _counter_for(response: httpx2.Response, limit: int) -> _Counter:
    """The counter of ``response``'s body; refuses a declared length over ``limit`` or a coding not asked for.
    The response's Content-Encoding is taken over (decompressed here), so the SDK sees identity bytes."""
    declared = response.headers.get("content-length", "").strip()
    codings = [c.strip().lower() for c in response.headers.get_list("content-encoding") for c in c.split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if len(codings) > 1 or (codings and codings[0] not in ("gzip", "x-gzip", "deflate")):
        raise UnsupportedEncodingError(
            f"the HTTP reply is compressed as {', '.join(codings)!r}, which was not asked for "
            f"(Accept-Encoding: {ACCEPT_ENCODING})"
        )
    if declared.isdigit() and not codings and int(declared) > limit:
        raise _too_large(0, limit, int(declared))
    if codings:
        del response.headers["content-encoding"]
        if "content-length" in response.headers:
            del response.headers["content-length"]  # the compressed length: not what the SDK reads
    return _Counter(limit, codings[0] if codings else "identity")


def sync_hook(limit: int) -> Callable[[httpx2.Response], None]:
    """An ``httpx2.Client`` response hook bounding each reply body to ``limit`` bytes."""

    def hook(response: httpx2.Response) -> None:
        counter = _counter_for(response, limit)
        assert isinstance(response.stream, httpx2.SyncByteStream)
        response.stream = _CappedStream(response.stream, counter)

    return hook


def async_hook(limit: int) -> Callable[[httpx2.Response], Awaitable[None]]:
    """An ``httpx2.AsyncClient`` response hook bounding each reply body to ``limit`` bytes."""

    async def hook(response: httpx2.Response) -> None:
        counter = _counter_for(response, limit)
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        response.stream = _AsyncCappedStream(response.stream, counter)

    return hook


def http_client_options(max_reply_chars: int, asynchronous: bool) -> dict[str, Any]:
    """Keyword arguments for the SDK's ``DefaultHttpxClient`` / ``DefaultAsyncHttpxClient``: the response hook
    and the ``Accept-Encoding`` header it can bound."""
    limit = body_limit(max_reply_chars)
    hook: Any = async_hook(limit) if asynchronous else sync_hook(limit)
    return {"event_hooks": {"response": [hook]}, "headers": {"Accept-Encoding": ACCEPT_ENCODING}}
