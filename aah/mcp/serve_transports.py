"""``aah mcp serve``'s transports, stdio and streamable HTTP, each screening what comes in.

The SDK's readers drop (stdio) or answer without its id (HTTP) a message
they cannot validate. So every line and every POSTed body first passes
:func:`aah.mcp.intake.screen_message`, the one check both share: what it
passes goes on to the SDK; what it refuses is answered here with the
JSON-RPC error for its id, or, with no id to answer, noted on standard
error in one scrubbed line. A message is read with a bound
(:data:`~aah.mcp.caps.MAX_MESSAGE_BYTES`) on either transport: the rest of a
longer one is dropped unread, and it is answered from its head.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any, BinaryIO

from aah.mcp.caps import MAX_MESSAGE_BYTES
from aah.mcp.intake import HEAD_BYTES, Screened, screen_message, screen_too_large

# Where clients POST their messages over streamable HTTP.
MCP_PATH = "/mcp"


class IntakeGuard:
    """ASGI middleware: each message POSTed to ``path`` is screened before the SDK reads it.

    A body :func:`~aah.mcp.intake.screen_message` refuses is answered here:
    400 (413 past ``max_bytes``) with the JSON-RPC error for its id, an array
    of them for a batch, or one with a null id when there is none to answer
    (noted on standard error too). A body it passes goes on as the text it
    screened: the same, less a BOM and blanks around it.
    """

    def __init__(self, app: Any, path: str = MCP_PATH, max_bytes: int = MAX_MESSAGE_BYTES) -> None:
        self.app = app
        self.path = path
        self.max_bytes = max_bytes

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Screen a POSTed message; pass everything else on untouched."""
        posted = scope.get("type") == "http" and scope.get("method") == "POST"
        if not posted or scope.get("path", "").rstrip("/") != self.path:
            await self.app(scope, receive, send)
            return
        body, whole = await self._body(receive)
        if body is None:
            return  # the client left before sending it all
        screened = screen_message(body) if whole else screen_too_large(body, self.max_bytes)
        if screened.message is None:
            await _refuse(screened, 400 if whole else 413, send)
            return
        # What the SDK reads is the text screened: the same bytes less a BOM and blanks.
        passed = screened.message.encode("utf-8")
        await self.app(_with_length(scope, len(passed)), _replay(passed, receive), send)

    async def _body(self, receive: Any) -> tuple[bytes | None, bool]:
        """The request's body, or its head and False when it runs past ``max_bytes``."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None, False
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                return (b"".join(chunks) + chunk)[:HEAD_BYTES], False
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks), True


async def _refuse(screened: Screened, status: int, send: Any) -> None:
    """Answer a refused message over HTTP: its errors, or one with a null id (and a note)."""
    replies: Any = screened.replies()
    if not replies:
        replies = [{"jsonrpc": "2.0", "id": None, "error": screened.error}]
    if screened.note is not None:
        print(screened.note, file=sys.stderr, flush=True)
    body = json.dumps(replies[0] if len(replies) == 1 else replies, separators=(",", ":")).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _with_length(scope: Any, length: int) -> Any:
    """``scope`` whose ``content-length`` header says ``length``."""
    headers = [(k, v) for k, v in scope.get("headers") or [] if k.lower() != b"content-length"]
    return {**scope, "headers": [*headers, (b"content-length", b"%d" % length)]}


def _replay(body: bytes, receive: Any) -> Callable[[], Any]:
    """A ``receive`` that gives ``body`` whole first, then what ``receive`` gives (a disconnect)."""
    given = False

    async def replayed() -> Any:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed


# -- stdio ----------------------------------------------------------------------


async def serve_stdio(server: Any, max_bytes: int = MAX_MESSAGE_BYTES) -> None:
    """Serve ``server`` (the SDK's ``MCPServer``) on this process's stdin and stdout.

    While serving, file descriptors 0 and 1 point at the null device and at
    standard error (as the SDK's own transport does), so nothing stray reaches the wire.
    """
    from mcp.server.stdio import stdio_server

    source = os.fdopen(_divert(0, os.open(os.devnull, os.O_RDONLY)), "rb")
    wire = WireLines(os.fdopen(_divert(1, os.dup(2)), "wb"))
    lines = ScreenedLines(source, wire, max_bytes)
    # The SDK's own reader and writer, given these: aah screens, the SDK parses and answers.
    async with stdio_server(stdin=lines, stdout=wire) as (read, write):  # type: ignore[arg-type]
        lowlevel = server._lowlevel_server
        await lowlevel.run(read, write, lowlevel.create_initialization_options())


class ScreenedLines:
    """The client's lines that :func:`~aah.mcp.intake.screen_message` passes, for the SDK's reader.

    A line is read with a bound (``max_bytes``, as over HTTP): the rest of a
    longer one is read in pieces and dropped. A refused line is answered on
    ``wire`` (or noted on standard error); blank lines are skipped.

    Args:
        source: The binary stream the client writes to.
        wire: Where replies go (shared with the SDK's writer).
        max_bytes: The cap on one line, newline aside.
    """

    def __init__(self, source: BinaryIO, wire: WireLines, max_bytes: int = MAX_MESSAGE_BYTES):
        self._source = source
        self._wire = wire
        self.max_bytes = max_bytes

    def __aiter__(self) -> ScreenedLines:
        return self

    async def __anext__(self) -> str:
        import anyio.to_thread

        while True:
            line, whole = await anyio.to_thread.run_sync(self._read, abandon_on_cancel=True)
            if not line:
                raise StopAsyncIteration
            if whole and not line.strip():
                continue
            screened = screen_message(line) if whole else screen_too_large(line, self.max_bytes)
            if screened.message is not None:
                return screened.message
            for reply in screened.replies():
                await self._wire.write(json.dumps(reply, separators=(",", ":")) + "\n")
            if screened.note is not None:
                print(screened.note, file=sys.stderr, flush=True)

    def _read(self) -> tuple[bytes, bool]:
        """One line (whole), or the head of a line past the cap (not whole)."""
        line = self._source.readline(self.max_bytes + 1)
        if len(line) <= self.max_bytes or line.endswith(b"\n"):
            return line, True
        while (rest := self._source.readline(HEAD_BYTES)) and not rest.endswith(b"\n"):
            pass
        return line[:HEAD_BYTES], False


class WireLines:
    """Whole lines to the client, one at a time: the SDK's answers and aah's refusals."""

    def __init__(self, target: BinaryIO) -> None:
        import anyio

        self._target = target
        self._lock = anyio.Lock()

    async def write(self, line: str) -> None:
        """Send ``line`` (a whole line, newline included) at once."""
        import anyio.to_thread

        data = line.encode("utf-8", errors="replace")
        async with self._lock:
            await anyio.to_thread.run_sync(self._send, data)

    async def flush(self) -> None:
        """Nothing waits: each line went whole in ``write``."""

    def _send(self, data: bytes) -> None:
        self._target.write(data)
        self._target.flush()


def _divert(fd: int, replacement: int) -> int:
    """A private copy of ``fd``, which from now on points at ``replacement``."""
    private = os.dup(fd)
    os.set_inheritable(private, False)
    os.dup2(replacement, fd)
    os.close(replacement)
    return private
