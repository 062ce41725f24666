"""``aah mcp serve`` over stdio, with the message cap the HTTP transport has.

The SDK's stdio transport reads a line whole, however long, before looking at
it: a client could make the server hold a gigabyte. Here each line is read
with a bound (:data:`~aah.mcp.caps.MAX_MESSAGE_BYTES`, as over HTTP); the
rest of a longer line is read in small pieces and dropped, and the request
it held is answered with a JSON-RPC error naming the cap, so the client
hears at once instead of waiting for an answer that never comes. So is a
line that nests deeper than the SDK's parser can read (which would drop it
without a word).

While serving, file descriptors 0 and 1 point at the null device and at
standard error (as the SDK does), so nothing stray reaches the wire.
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any, BinaryIO

import anyio
import anyio.to_thread

from aah.bounds import MAX_NESTING, text_nests_deeper
from aah.mcp.caps import MAX_MESSAGE_BYTES

# A JSON-RPC error for a request the server cannot take (JSON-RPC 2.0 §5.1).
INVALID_REQUEST = -32600
# How much of a too-long line is kept to find the id of the request it held.
_HEAD_BYTES = 4096
_DRAIN_BYTES = 65536
# The request's id, as SDK clients write it: right after "jsonrpc", before the params.
# The SDK's parser drops a message nesting 200 levels or more without a reply
# (pydantic's JSON limit): deeper than this, aah answers for it. Between
# MAX_NESTING and this, the tool's own checks refuse the arguments in one line.
_PARSER_DEPTH = 190
_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,20})')


class BoundedLines:
    """The client's lines, each at most ``max_bytes``; a longer one is answered with an error.

    Args:
        source: The binary stream the client writes to.
        wire: Where replies go (shared with the server, so whole lines never interleave).
        max_bytes: The cap on one line, newline aside.
    """

    def __init__(self, source: BinaryIO, wire: LineWriter, max_bytes: int = MAX_MESSAGE_BYTES):
        self._source = source
        self._wire = wire
        self.max_bytes = max_bytes

    def __aiter__(self) -> BoundedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line, whole = await anyio.to_thread.run_sync(self._read, abandon_on_cancel=True)
            if not line:
                raise StopAsyncIteration
            if whole and not text_nests_deeper(line, limit=_PARSER_DEPTH):
                return line.decode("utf-8", errors="replace")
            if whole:
                refusal = refusal_reply(
                    line, f"the request nests deeper than {MAX_NESTING} levels: flatten it"
                )
            else:
                refusal = too_large_reply(line, self.max_bytes)
            if refusal is not None:
                await self._wire.write(refusal + "\n")
                await self._wire.flush()

    def _read(self) -> tuple[bytes, bool]:
        """One line (whole), or the head of a line past the cap (not whole)."""
        line = self._source.readline(self.max_bytes + 1)
        if len(line) <= self.max_bytes or line.endswith(b"\n"):
            return line, True
        head = line[:_HEAD_BYTES]
        while (rest := self._source.readline(_DRAIN_BYTES)) and not rest.endswith(b"\n"):
            pass
        return head, False


def too_large_reply(head: bytes, max_bytes: int) -> str | None:
    """The JSON-RPC error for the request a too-long line began with; None without an id."""
    message = (
        f"the request is over aah's cap of {max_bytes:,} bytes on one message: "
        "a question or a call to approve is text a person reads; send less"
    )
    return refusal_reply(head, message)


def refusal_reply(head: bytes, message: str) -> str | None:
    """The JSON-RPC error ``message`` for the request ``head`` begins; None without an id.

    Only an ``id`` before the request's ``params`` counts: one further on may
    be inside them. A message without one is dropped, said on standard error.
    """
    found = _ID.search(head[:_HEAD_BYTES])
    params = head.find(b'"params"', 0, _HEAD_BYTES)
    if found is None or (params != -1 and params < found.start()):
        print(f"aah mcp serve: dropped a message: {message}", file=sys.stderr)
        return None
    request_id: Any = json.loads(found.group(1))
    error = {"code": INVALID_REQUEST, "message": message}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error})


class LineWriter:
    """Whole lines to the client, one writer at a time."""

    def __init__(self, target: BinaryIO) -> None:
        self._target = target
        self._lock = anyio.Lock()
        self._pending: list[bytes] = []

    async def write(self, text: str) -> None:
        """Queue ``text`` to send at the next flush."""
        self._pending.append(text.encode("utf-8"))

    async def flush(self) -> None:
        """Send what was written, under the lock, so lines never interleave."""
        data, self._pending = b"".join(self._pending), []
        async with self._lock:
            await anyio.to_thread.run_sync(self._send, data)

    def _send(self, data: bytes) -> None:
        self._target.write(data)
        self._target.flush()


async def serve_stdio(server: Any, max_bytes: int = MAX_MESSAGE_BYTES) -> None:
    """Serve ``server`` (the SDK's ``MCPServer``) on this process's stdin and stdout."""
    from mcp.server.stdio import stdio_server

    source = os.fdopen(_divert(0, os.open(os.devnull, os.O_RDONLY)), "rb")
    target = os.fdopen(_divert(1, os.dup(2)), "wb")
    wire = LineWriter(target)
    lines = BoundedLines(source, wire, max_bytes)
    # The SDK's own reader and writer, given these: it parses, aah bounds and writes.
    async with stdio_server(stdin=lines, stdout=wire) as (read, write):  # type: ignore[arg-type]
        lowlevel = server._lowlevel_server
        await lowlevel.run(read, write, lowlevel.create_initialization_options())


def _divert(fd: int, replacement: int) -> int:
    """A private copy of ``fd``, which from now on points at ``replacement``."""
    private = os.dup(fd)
    os.set_inheritable(private, False)
    os.dup2(replacement, fd)
    os.close(replacement)
    return private
