"""The HTTP client for a streamable-HTTP MCP server: every body read within bounds.

The SDK reads a JSON answer whole (``response.aread()``) and lets an event
of its stream grow to a megabyte by default. aah gives the SDK an HTTP
client whose transport screens each body before the SDK sees it:

- a JSON body is read up to the message cap and handed to the server's
  :class:`~aah.mcp.gate.ServerGate` as one message;
- an event stream is read event by event, each event up to the cap, each
  message in it screened; an event past the cap is refused as it passes it;
- any other body is cut at the cap;
- a body is asked for uncompressed; one compressed anyway (gzip, deflate)
  is decompressed a chunk at a time within the same caps.

What the gate refuses reaches the SDK as a JSON-RPC error for the request
the body answers, so the call fails at once with the refusal's line.
"""

from __future__ import annotations

import json
import urllib.request
import zlib
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import httpx2
from mcp.types import JSONRPCError, RequestId

from aah.mcp.child import LineReader, Overflow
from aah.mcp.gate import HEAD_BYTES, CallBudget, Screened, ServerGate, current_call, refused_answer
from aah.peer_read import READ_CHUNK, PeerOutOfBounds

# The SDK's own defaults: 30 s to connect and write, 300 s between bytes of a stream.
_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
_DROPPED_HEADERS = ("content-encoding", "content-length", "transfer-encoding")


def gated_http_client(url: str, headers: dict[str, str], gate: ServerGate) -> httpx2.AsyncClient:
    """An HTTP client for the server at ``url`` whose every body passes ``gate``.

    The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``NO_PROXY``)
    is used, as the SDK's own client would.
    """
    proxy = _environment_proxy(url)
    inner = httpx2.AsyncHTTPTransport(proxy=proxy)
    return httpx2.AsyncClient(
        headers={"Accept-Encoding": "identity", **headers},
        timeout=_TIMEOUT,
        transport=GatedTransport(inner, gate),
    )


def _environment_proxy(url: str) -> str | None:
    host = urlsplit(url).hostname or ""
    if not host or urllib.request.proxy_bypass(host):
        return None
    return urllib.request.getproxies().get(urlsplit(url).scheme)


class GatedTransport(httpx2.AsyncBaseTransport):
    """An HTTP transport whose response bodies pass a server's gate.

    Args:
        inner: The transport that reaches the server.
        gate: The server's bounds.
    """

    def __init__(self, inner: httpx2.AsyncBaseTransport, gate: ServerGate) -> None:
        self._inner = inner
        self._gate = gate

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """The server's response to ``request``, its body screened as it is read."""
        # The request's task is the call's (the SDK sends each in its sender's context).
        budget = current_call.get()
        response = await self._inner.handle_async_request(request)
        source = response.stream
        assert isinstance(source, httpx2.AsyncByteStream)
        answered = _request_id(request)
        kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        body = _Body(source, encoding, self._gate, answered, budget)
        stream: httpx2.AsyncByteStream
        if kind == "application/json":
            stream = _JsonStream(body)
        elif kind == "text/event-stream":
            stream = _EventStream(body)
        else:
            stream = _CutStream(body)
        headers = [
            (name, value)
            for name, value in response.headers.multi_items()
            if name.lower() not in _DROPPED_HEADERS
        ]
        return httpx2.Response(
            response.status_code,
            headers=headers,
            stream=stream,
            request=request,
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        """Close the transport that reaches the server."""
        await self._inner.aclose()


def _request_id(request: httpx2.Request) -> RequestId | None:
    """The JSON-RPC id of the request aah sent in ``request``'s body, if it sent one."""
    if request.method != "POST":
        return None
    try:
        sent = json.loads(request.content)
    except (ValueError, httpx2.RequestNotRead):
        return None
    found = sent.get("id") if isinstance(sent, dict) and "method" in sent else None
    return found if isinstance(found, int | str) and not isinstance(found, bool) else None


class _Body:
    """One response body: its bytes decoded, and what to do with the messages in it."""

    def __init__(
        self,
        source: httpx2.AsyncByteStream,
        encoding: str,
        gate: ServerGate,
        answered: RequestId | None,
        budget: CallBudget | None,
    ) -> None:
        self.source = source
        self.encoding = encoding
        self.gate = gate
        self.answered = answered
        self.budget = budget
        self.cap = gate.message.max_bytes

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body's bytes, decompressed a bounded chunk at a time.

        Raises:
            PeerOutOfBounds: it is compressed in a way aah does not read.
        """
        if self.encoding in ("identity", ""):
            async for chunk in self.source:
                yield chunk
            return
        if self.encoding not in ("gzip", "x-gzip", "deflate"):
            raise PeerOutOfBounds(
                f"{self.gate.message.peer} sent a body encoded as {self.encoding[:40]!r}, "
                "which aah does not read: serve it uncompressed",
                bound=self.gate.message,
                kind="size",
            )
        inflate = zlib.decompressobj(zlib.MAX_WBITS | 32)
        async for chunk in self.source:
            pending = chunk
            while pending:
                try:
                    out = inflate.decompress(pending, READ_CHUNK)
                except zlib.error as exc:
                    raise PeerOutOfBounds(
                        f"{self.gate.message.peer} sent a body that does not decompress ({exc})",
                        bound=self.gate.message,
                        kind="size",
                    ) from None
                pending = inflate.unconsumed_tail
                if out:
                    yield out

    def wire(self, item: Screened) -> bytes:
        """What the SDK gets for one screened message: its JSON, or the error put in its place."""
        if isinstance(item, PeerOutOfBounds):
            if self.answered is None:
                return b""
            item = refused_answer(self.answered, str(item))
        if item is None:
            return b""
        return item.model_dump_json(by_alias=True, exclude_unset=True).encode()

    def refused(self, exc: PeerOutOfBounds) -> bytes:
        """The error answering this body's request, for a body that could not be read."""
        if self.answered is None:
            return b""
        error: JSONRPCError = refused_answer(self.answered, str(exc))
        return error.model_dump_json(by_alias=True, exclude_unset=True).encode()

    async def aclose(self) -> None:
        await self.source.aclose()


class _JsonStream(httpx2.AsyncByteStream):
    """A JSON body: read up to the cap, screened as one message."""

    def __init__(self, body: _Body) -> None:
        self._body = body

    async def __aiter__(self) -> AsyncIterator[bytes]:
        held: list[bytes] = []
        size = 0
        try:
            async for chunk in self._body.chunks():
                held.append(chunk)
                size += len(chunk)
                if size > self._body.cap:
                    break
        except PeerOutOfBounds as exc:
            yield self._body.refused(exc)
            return
        finally:
            await self._body.aclose()
        data = b"".join(held)
        gate = self._body.gate
        if size > self._body.cap:
            item = gate.oversized(data[:HEAD_BYTES], size)
        else:
            item = gate.screen(data, budget=self._body.budget)
        yield self._body.wire(item)

    async def aclose(self) -> None:
        await self._body.aclose()


class _EventStream(httpx2.AsyncByteStream):
    """An event stream: each event held up to the cap, the message in it screened."""

    def __init__(self, body: _Body) -> None:
        self._body = body
        self._lines: list[bytes] = []
        self._size = 0
        self._skipping = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        reader = LineReader(self._body.cap, blank=True)
        try:
            async for chunk in self._body.chunks():
                for line in reader.feed(chunk):
                    event = self._take(line)
                    if event:
                        yield event
        except PeerOutOfBounds as exc:
            yield _event([], self._body.refused(exc))
        finally:
            await self._body.aclose()

    def _take(self, line: bytes | Overflow) -> bytes:
        """Add one line to the event; the event to pass on when it ends or passes the cap."""
        if line == b"":
            lines, skipping = self._lines, self._skipping
            self._lines, self._size, self._skipping = [], 0, False
            return b"" if skipping or not lines else self._dispatch(lines)
        if self._skipping:
            return b""
        if isinstance(line, Overflow):
            return self._overflow(line.head, self._size + line.size)
        self._lines.append(line)
        self._size += len(line) + 1
        if self._size > self._body.cap:
            return self._overflow(b"\n".join(self._lines), self._size)
        return b""

    def _overflow(self, head: bytes, size: int) -> bytes:
        self._lines, self._skipping = [], True
        data = head.partition(b"data:")[2].lstrip(b" ")
        return _event([], self._body.wire(self._body.gate.oversized(data[:HEAD_BYTES], size)))

    def _dispatch(self, lines: list[bytes]) -> bytes:
        data = [line[5:].removeprefix(b" ") for line in lines if line.startswith(b"data:")]
        fields = [line for line in lines if not line.startswith(b"data:")]
        if not data:
            return _event(fields, b"") if fields else b""
        item = self._body.gate.screen(b"\n".join(data), budget=self._body.budget)
        wired = self._body.wire(item)
        return _event(fields, wired) if wired else b""

    async def aclose(self) -> None:
        await self._body.aclose()


def _event(fields: list[bytes], data: bytes) -> bytes:
    """One event of a stream: its other fields as they came, then its data."""
    lines = [*fields, *([b"data: " + data] if data else [])]
    if not data and not fields:
        return b""
    return b"\n".join(lines) + b"\n\n"


class _CutStream(httpx2.AsyncByteStream):
    """A body of another kind (the SDK reads none of them): passed on up to the cap."""

    def __init__(self, body: _Body) -> None:
        self._body = body

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        try:
            async for chunk in self._body.chunks():
                room = self._body.cap - size
                if room <= 0:
                    return
                yield chunk[:room]
                size += len(chunk)
        except PeerOutOfBounds:
            return
        finally:
            await self._body.aclose()

    async def aclose(self) -> None:
        await self._body.aclose()
