"""An MCP server started as a child process, whose stdout is read line by line within bounds.

The SDK's ``stdio_client`` gathers a line of any length before it looks at
it: one 200 MB answer is 200 MB held, and more while it is joined. This
transport starts the server the SDK's way (its process group, its shutdown)
but reads stdout through :class:`LineReader`, which holds at most one
message's cap, and hands every line to the server's
:class:`~aah.mcp.gate.ServerGate`: a line past the cap is refused as soon as
it passes it (its answer fails at once) and the rest of it is skipped.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from types import TracebackType
from typing import IO, Any, NamedTuple

import anyio
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectSendStream
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.shared.message import SessionMessage

from aah.mcp.gate import HEAD_BYTES, ServerGate

_log = logging.getLogger(__name__)
# Time for accepted messages to reach the server's stdin before it is closed.
_FLUSH_SECONDS = 0.5


class Overflow(NamedTuple):
    """A line that passed the cap: its first bytes and how many were seen when it did."""

    head: bytes
    size: int


class LineReader:
    """Lines out of chunks of bytes, holding at most ``cap`` bytes of one line.

    Args:
        cap: The most bytes of one line.
        blank: Keep blank lines (an event stream's separators) and leading
            spaces; otherwise each line is stripped and blank ones dropped.
    """

    def __init__(self, cap: int, *, blank: bool = False) -> None:
        self.cap = cap
        self.blank = blank
        self._parts: list[bytes] = []
        self._size = 0
        self._skipping = False

    def feed(self, chunk: bytes) -> list[bytes | Overflow]:
        """The lines ``chunk`` completes; an :class:`Overflow` for a line as it passes the cap."""
        out: list[bytes | Overflow] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if not self._skipping and piece:
                self._parts.append(piece)
                self._size += len(piece)
                if self._size > self.cap:
                    out.append(Overflow(b"".join(self._parts)[:HEAD_BYTES], self._size))
                    self._parts, self._skipping = [], True
            if end < 0:
                return out
            if not self._skipping:
                line = b"".join(self._parts)
                line = line.rstrip(b"\r") if self.blank else line.strip()
                if line or self.blank:
                    out.append(line)
            self._parts, self._size, self._skipping = [], 0, False
            start = end + 1


class _NotedSend:
    """The write stream the SDK sends on: each request is noted by the gate in the sender's task.

    The sender's task is the call's, so the gate learns which call each
    request id belongs to before it is written.
    """

    def __init__(self, inner: MemoryObjectSendStream[SessionMessage], gate: ServerGate) -> None:
        self._inner = inner
        self._gate = gate

    async def send(self, item: SessionMessage, /) -> None:
        self._gate.sent(item.message)
        await self._inner.send(item)

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _NotedSend:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


@asynccontextmanager
async def child_stdio(
    params: StdioServerParameters, errlog: IO[bytes], gate: ServerGate
) -> AsyncIterator[tuple[Any, Any]]:
    """Start the server ``params`` names; its (read, write) streams, as the SDK's transports give.

    Raises:
        OSError: the program could not be started.
    """
    # The SDK's own process start and stop (a process group, then stdin
    # closed, a grace period, and the group killed): the SDK is pinned to 2.3.
    from mcp.client.stdio import (
        _create_platform_compatible_process,
        _drain_stdout,
        _get_executable_command,
        _stop_server_process,
    )

    command = await _get_executable_command(params.command)
    process = await _create_platform_compatible_process(
        command=command,
        args=params.args,
        env=get_default_environment() | (params.env or {}),
        errlog=errlog,  # type: ignore[arg-type]  # a binary file serves as stderr
        cwd=params.cwd,
    )
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_inner, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    write_stream = _NotedSend(write_inner, gate)
    writer_done = anyio.Event()

    async def stdout_reader() -> None:
        assert process.stdout is not None
        lines = LineReader(gate.message.max_bytes)
        try:
            async with read_writer:
                try:
                    async for chunk in process.stdout:
                        for piece in lines.feed(chunk):
                            if isinstance(piece, Overflow):
                                item = gate.oversized(piece.head, piece.size)
                            else:
                                item = gate.screen(piece)
                            if item is None:
                                continue
                            sent = item if isinstance(item, Exception) else SessionMessage(item)
                            try:
                                await read_writer.send(sent)
                            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                                return
                finally:
                    await _drain_stdout(process)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError):
            pass  # the transport is closing: the session sees the streams end

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for message in write_reader:
                    line = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((line + "\n").encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()  # the server stopped reading: its calls end now
        finally:
            writer_done.set()

    async def shutdown() -> None:
        read_stream.close()
        write_inner.close()
        with anyio.move_on_after(_FLUSH_SECONDS):
            await writer_done.wait()
        await _stop_server_process(process)
        for stream in (read_stream, write_inner, read_writer, write_reader):
            with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await stream.aclose()
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group:
        group.start_soon(stdout_reader)
        group.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                await shutdown()
            group.cancel_scope.cancel()
