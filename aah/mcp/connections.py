"""Live connections to MCP servers, owned by one background event loop.

The SDK's client is an async context manager whose transport (a child
process, an HTTP stream) must be entered and left by the same task. Sessions
call tools from their own event loop, and commands such as ``aah tools
add-mcp`` from plain code; so every server is held open by one task of a
private loop in a daemon thread, and calls are handed to that loop.

Nothing here can hang a session: starting a server, listing its tools and
each call have a deadline, and a server that exits fails every call waiting
on it at once. Each failure is one line naming the server and what to do.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from contextvars import ContextVar
from typing import IO, Any, Literal, NamedTuple, TypeVar

from aah import __version__
from aah.errors import AahError
from aah.mcp.gate import REFUSED, CallBudget, MessageBounds, ServerGate, current_call
from aah.mcp.listing import ToolChoice, ToolListing
from aah.mcp.servers import McpServer
from aah.peer_read import PeerOutOfBounds
from aah.secrets import remember_secret

T = TypeVar("T")
# Answers a server's ``elicitation/create``: given the server's name and the
# request's params (JSON form), the result to send back (JSON form).
Elicitor = Callable[[str, dict[str, Any]], Coroutine[Any, Any, dict[str, Any]]]
# A call that may wait for a person has no read deadline of the SDK's own:
# aah's deadline for it pauses while the person answers (see ``_guarded``).
_PERSON_READ_TIMEOUT_S = 30 * 24 * 3600.0
# What a tool listing is called in a failure's line.
_LISTING = "listing its tools"
# Lines of a server's stderr quoted when it fails to start or exits.
_STDERR_TAIL_BYTES = 4096
# Which protocol a connection was opened for: the handshake (up to
# 2025-11-25), under which a server asks mid-call, else the newest the server
# speaks (2026-07-28: a server asks by answering ``input_required``).
Era = Literal["handshake", "newest"]
# Who answers the questions of the call running in this context: where the
# SDK hands a question over inside its call (an ``input_required`` round, a
# question on the call's own HTTP stream), it goes to that call's session.
_CALL_ELICITOR: ContextVar[Elicitor | None] = ContextVar("aah_mcp_elicitor", default=None)
# What the SDK's server answers when a tool gives ``input_required`` on a
# connection opened by the handshake, which cannot carry it.
_INPUT_REQUIRED_REFUSED = "Handler returned an invalid result"


class McpReply(NamedTuple):
    """What a server answered one call with, in JSON form (``CallToolResult``)."""

    content: list[dict[str, Any]]
    structured: Any
    is_error: bool


class McpFailure(Exception):
    """A call got no answer: the server did not start, exited, timed out or broke the protocol.

    Attributes:
        code: The JSON-RPC error code, when the server answered with an error.
    """

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class _Held:
    """One open connection to a server: its client, the task holding it, and how to let it go.

    Args:
        server: The server.
        mode: How the SDK's client negotiates: ``legacy`` (the handshake) or
            ``auto`` (the newest protocol the server speaks).
        gate: The bounds of the server's messages.
    """

    def __init__(self, server: McpServer, mode: str, gate: ServerGate) -> None:
        self.server = server
        self.mode = mode
        self.gate = gate
        self.client: Any = None
        self.stop = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.errlog: IO[bytes] | None = None
        self.ended: str | None = None
        # Set (and replaced) each time the server sends an answer aah cannot read.
        self.unreadable = asyncio.Event()
        self.unreadable_why = ""
        # Who answers a question the server asks during a call: one per call in flight.
        self.elicitors: list[Elicitor] = []
        self.asking = 0
        self.answered_at = 0.0

    async def on_elicit(self, context: Any, params: Any) -> Any:
        """The SDK's elicitation callback: the question goes to the session whose call is running.

        A question asked inside its call (an ``input_required`` round, or on
        the call's own HTTP stream) goes to that call's session. Over stdio
        under the handshake the protocol does not say which call a question
        belongs to; with calls of several sessions in flight at once, no one
        could tell whose user to ask, so the server gets a cancel. A question
        outside any call is declined. One past the gate's bounds goes to the
        call's session as :func:`~aah.desk.unreadable_elicitation` (logged
        there, declined), or is declined at once when no call can be told.
        """
        from mcp.types import ElicitResult

        from aah.desk import unreadable_elicitation

        refused = self.gate.refused_asks.pop(context.request_id, None)
        own = _CALL_ELICITOR.get()
        distinct = [own] if own is not None else list({id(e): e for e in self.elicitors}.values())
        if len(distinct) != 1:
            return ElicitResult(action="cancel" if distinct and refused is None else "decline")
        if refused is not None:
            # Past the gate's bounds: the call's session logs the refusal and declines.
            asked = unreadable_elicitation(refused)
        else:
            asked = params.model_dump(mode="json", by_alias=True, exclude_none=True)
        self.asking += 1
        try:
            wire = await distinct[0](self.server.name, asked)
        except Exception:  # the session ended while it waited: the server is not left waiting
            return ElicitResult(action="cancel")
        finally:
            self.asking -= 1
            self.answered_at = time.monotonic()
        if refused is not None:
            return ElicitResult(action="decline")  # whatever came back: nothing was asked
        return ElicitResult.model_validate(wire)

    def waiting_for_person(self, call_timeout: float) -> float:
        """Seconds more a call may take because the server asked a person (0: none)."""
        if self.asking:
            return call_timeout
        return max(0.0, call_timeout - (time.monotonic() - self.answered_at))

    async def on_message(self, message: Any) -> None:
        """The SDK's message handler: wakes the waiting requests when an answer cannot be read.

        The gate (:mod:`aah.mcp.gate`) turns an answer it refuses into an
        error for its request; one whose request it cannot tell comes here as
        an exception, and would otherwise leave every call waiting until its
        deadline: each call in flight on this connection fails with its line.
        """
        if isinstance(message, Exception):
            self.unreadable_why = (
                str(message)
                if isinstance(message, PeerOutOfBounds)
                else f"MCP server {self.server.name} sent an answer aah could not read "
                f"({_reason(message)}): fix the server, or leave it out"
            )
            woken, self.unreadable = self.unreadable, asyncio.Event()
            woken.set()

    def stderr_tail(self) -> str:
        """The last line the server wrote to stderr, if any."""
        if self.errlog is None:
            return ""
        try:
            self.errlog.flush()
            self.errlog.seek(0, 2)
            size = self.errlog.tell()
            self.errlog.seek(max(0, size - _STDERR_TAIL_BYTES))
            text = self.errlog.read().decode("utf-8", errors="replace")
        except (OSError, ValueError):
            return ""
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return lines[-1][:300] if lines else ""


class McpConnections:
    """Open MCP servers, by target, with deadlines on everything.

    A server is first opened by the handshake (protocol 2025-11-25), under
    which a server written with the SDK's ``ctx.elicit`` asks mid-call; one
    that asks by answering ``input_required`` (2026-07-28) has that tool
    called again over a second connection that speaks the newest protocol,
    and so does every later call of the tool. A server that refuses the
    handshake is spoken to in the newest protocol from the start.

    Args:
        start_timeout: Seconds a server has to start and answer the handshake.
        call_timeout: Seconds one tool call (or tool listing) may take.
        bounds: How much each server may send (per message, per call); by
            default ``AAH_MCP_MAX_MESSAGE_BYTES`` and ``AAH_MCP_MAX_CALL_BYTES``.
    """

    def __init__(
        self,
        *,
        start_timeout: float,
        call_timeout: float,
        bounds: MessageBounds | None = None,
    ) -> None:
        self.start_timeout = start_timeout
        self.call_timeout = call_timeout
        self.bounds = bounds or configured_bounds()
        # The SDK logs what it drops (a line that is not JSON-RPC, a closed
        # stream) with tracebacks; aah reports each failure itself, in one line.
        logging.getLogger("mcp").setLevel(logging.CRITICAL)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="aah-mcp", daemon=True)
        self._thread.start()
        self._held: dict[tuple[str, Era], _Held] = {}
        self._opening: dict[tuple[str, Era], asyncio.Future[_Held]] = {}
        # The tools (server target, tool) that asked by answering input_required.
        self._round_trip_tools: set[tuple[str, str]] = set()
        self._closed = False

    def list_tools(self, server: McpServer) -> list[dict[str, Any]]:
        """The tools aah takes of ``server`` (see :meth:`read_tools`), in JSON form.

        Raises:
            McpFailure: the server did not start or did not list its tools in time.
        """
        return self.read_tools(server).tools

    def read_tools(
        self, server: McpServer, choice: ToolChoice | None = None, *, cap: int | None = None
    ) -> ToolListing:
        """What aah takes of ``server``'s tool list: ``choice``'s tools, within the bounds.

        Pages are read until ``cap`` tools are taken (default
        :data:`~aah.mcp.listing.MAX_TOOLS`), the list ends or the page bound
        is reached, all within one call's deadline.

        Raises:
            McpFailure: the server did not start, or its list was not read in time.
        """
        listing = ToolListing(server.name, choice or ToolChoice())
        if cap is not None:
            listing.cap = cap
        work = self._list(server, listing)
        return self._wait(work, self.start_timeout + self.call_timeout + 5)

    async def alist_tools(self, server: McpServer) -> list[dict[str, Any]]:
        """:meth:`list_tools` from any event loop."""
        listing = await self._submit(self._list(server, ToolListing(server.name)))
        return listing.tools

    def call(self, server: McpServer, tool: str, arguments: dict[str, Any]) -> McpReply:
        """Call ``tool`` of ``server``; see :meth:`acall`."""
        return self._wait(
            self._call(server, tool, arguments), self.start_timeout + self.call_timeout + 5
        )

    async def acall(
        self,
        server: McpServer,
        tool: str,
        arguments: dict[str, Any],
        elicitor: Elicitor | None = None,
    ) -> McpReply:
        """Call ``tool`` of ``server`` (started if it is not running yet).

        ``elicitor`` answers the questions the server asks during the call (none:
        each is declined); it runs on the caller's event loop, and the call's
        deadline pauses while a person answers.

        Raises:
            McpFailure: no answer came: what happened, in one line.
        """
        if elicitor is not None:
            elicitor = _on_loop(elicitor, asyncio.get_running_loop())
        return await self._submit(self._call(server, tool, arguments, elicitor))

    def close(self) -> None:
        """Stop every server and the loop; calls after this fail."""
        if self._closed:
            return
        self._closed = True
        try:
            asyncio.run_coroutine_threadsafe(self._close_all(), self._loop).result(
                timeout=self.call_timeout + 10
            )
        except (concurrent.futures.TimeoutError, RuntimeError):
            pass  # a server that will not stop is left to the daemon thread's end
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    # Everything below runs on the private loop.

    async def _submit(self, work: Coroutine[Any, Any, T]) -> T:
        if self._closed:
            work.close()
            raise McpFailure("the MCP connections are closed")
        future = asyncio.run_coroutine_threadsafe(work, self._loop)
        return await asyncio.wrap_future(future)

    def _wait(self, work: Coroutine[Any, Any, T], timeout: float) -> T:
        if self._closed:
            work.close()
            raise McpFailure("the MCP connections are closed")
        return asyncio.run_coroutine_threadsafe(work, self._loop).result(timeout=timeout)

    async def _list(self, server: McpServer, listing: ToolListing) -> ToolListing:
        held = await self._open(server)
        budget = current_call.set(CallBudget(self.bounds.max_call_bytes))
        try:
            return await self._guarded(held, _read_pages(held.client, listing), _LISTING)
        finally:
            current_call.reset(budget)

    async def _call(
        self,
        server: McpServer,
        tool: str,
        arguments: dict[str, Any],
        elicitor: Elicitor | None = None,
    ) -> McpReply:
        key = (server.target, tool)
        era: Era = "newest" if key in self._round_trip_tools else "handshake"
        try:
            return await self._call_on(await self._open(server, era), tool, arguments, elicitor)
        except _AsksByRoundTrip:
            # The tool asks by answering input_required, which the handshake's
            # protocol cannot carry; such a tool is called anew each round by
            # design, so calling it again over the newest protocol is safe.
            self._round_trip_tools.add(key)
            held = await self._open(server, "newest")
            return await self._call_on(held, tool, arguments, elicitor)

    async def _call_on(
        self, held: _Held, tool: str, arguments: dict[str, Any], elicitor: Elicitor | None
    ) -> McpReply:
        """One call over ``held``, its answers counted against one budget, its questions routed."""
        asker = _CallAsker(elicitor) if elicitor is not None else None
        budget = current_call.set(CallBudget(self.bounds.max_call_bytes))
        routed = _CALL_ELICITOR.set(asker)
        try:
            if asker is None:
                request = held.client.call_tool(tool, arguments)
            else:
                held.elicitors.append(asker)
                request = held.client.call_tool(
                    tool, arguments, read_timeout_seconds=_PERSON_READ_TIMEOUT_S
                )
            try:
                result = await self._guarded(held, request, f"{tool}")
            finally:
                if asker is not None:
                    held.elicitors.remove(asker)
                    asker.close()
        finally:
            _CALL_ELICITOR.reset(routed)
            current_call.reset(budget)
        content = [block.model_dump(mode="json", by_alias=True) for block in result.content]
        return McpReply(content, result.structured_content, bool(result.is_error))

    async def _guarded(self, held: _Held, request: Awaitable[T], doing: str) -> T:
        """``request``'s answer, unless the server exits or the deadline passes first."""
        assert held.task is not None
        call = asyncio.ensure_future(request)
        unreadable = asyncio.ensure_future(held.unreadable.wait())
        try:
            timeout = self.call_timeout
            while True:
                done, _ = await asyncio.wait(
                    {call, held.task, unreadable}, timeout=timeout, return_when="FIRST_COMPLETED"
                )
                # A server waiting for a person's answer has not stopped answering.
                timeout = held.waiting_for_person(self.call_timeout)
                if done or not timeout:
                    break
        finally:
            unreadable.cancel()
        if call not in done and unreadable in done:
            call.cancel()
            raise McpFailure(held.unreadable_why)
        if call in done:
            try:
                return call.result()
            except Exception as exc:
                said = getattr(exc, "message", None)
                if getattr(exc, "code", None) == REFUSED and isinstance(said, str):
                    raise McpFailure(said) from None  # the gate's line: the server and the cap
                if _refused_input_required(held, exc):
                    raise _AsksByRoundTrip from None
                if not _connection_closed(exc):
                    code = getattr(exc, "code", None)
                    message = self._broken(held, doing, exc)
                    raise McpFailure(message, code if isinstance(code, int) else None) from None
                held.ended = f"{self._exited(held)} earlier in this run"
                raise McpFailure(f"{self._exited(held)} while answering {doing}") from None
        call.cancel()
        if held.task in done:
            raise McpFailure(held.ended or self._exited(held))
        raise McpFailure(
            f"MCP server {held.server.name} gave no answer to {doing} within "
            f"{self.call_timeout:g} s (timeout; AAH_MCP_TIMEOUT sets the limit)"
        )

    async def _open(self, server: McpServer, era: Era = "handshake") -> _Held:
        key = (server.target, era)
        held = self._held.get(key)
        if held is not None:
            if held.ended is not None:
                raise McpFailure(held.ended)
            return held
        opening = self._opening.get(key)
        if opening is None:
            opening = asyncio.ensure_future(self._start(server, era))
            self._opening[key] = opening
        return await asyncio.shield(opening)

    async def _start(self, server: McpServer, era: Era) -> _Held:
        key = (server.target, era)
        try:
            held, ready = await self._connect(server, "legacy" if era == "handshake" else "auto")
            if held.mode == "legacy" and _refuses_handshake(ready):
                # A server of the newest protocol only: spoken to in it from the start.
                await self._let_go(held)
                held, ready = await self._connect(server, "auto")
        finally:
            self._opening.pop(key, None)
        assert held.task is not None
        if not ready.done() or ready.exception() is not None:
            why = self._start_failure(held, ready)
            held.ended = why
            held.stop.set()
            held.task.cancel()
            self._held[key] = held
            raise McpFailure(why)
        self._held[key] = held
        return held

    async def _connect(self, server: McpServer, mode: str) -> tuple[_Held, asyncio.Future[None]]:
        """Open one connection to ``server``; it and whether it became ready in time."""
        held = _Held(server, mode, ServerGate(server.name, self.bounds))
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        held.task = asyncio.ensure_future(self._hold(held, ready))
        await asyncio.wait(
            {ready, held.task}, timeout=self.start_timeout, return_when="FIRST_COMPLETED"
        )
        return held, ready

    async def _let_go(self, held: _Held) -> None:
        """Close a connection that will not be used (its process stopped the SDK's way)."""
        held.stop.set()
        if held.task is not None:
            await asyncio.wait({held.task}, timeout=self.call_timeout)
            held.task.cancel()
        if held.errlog is not None:
            held.errlog.close()

    def _start_failure(self, held: _Held, ready: asyncio.Future[None]) -> str:
        name = held.server.name
        if not ready.done():
            return (
                f"MCP server {name} did not start within {self.start_timeout:g} s "
                "(AAH_MCP_START_TIMEOUT sets the limit)"
            )
        exc = ready.exception() or McpFailure("it stopped")
        if isinstance(exc, AahError):
            return str(exc)  # its settings: a variable not set, unreadable headers
        tail = held.stderr_tail()
        said = f"; it said: {tail}" if tail else ""
        if isinstance(exc, FileNotFoundError | PermissionError):
            program = held.server.argv[0] if not held.server.is_http else held.server.target
            return f"MCP server {name} did not start: cannot run {program!r} ({_reason(exc)})"
        if _connection_closed(exc) and not held.server.is_http:
            return f"MCP server {name} exited before it answered{said}"
        if "timed out" in _reason(exc):
            # Silent, or writing lines that are not JSON-RPC (the SDK drops those).
            return f"MCP server {name} did not answer the MCP handshake{said}"
        if held.server.is_http:
            return f"MCP server {name} at {held.server.target} did not answer ({_reason(exc)})"
        return f"MCP server {name} did not start: {_reason(exc)}{said}"

    async def _hold(self, held: _Held, ready: asyncio.Future[None]) -> None:
        """Keep one server's client open until told to stop (or the server goes away)."""
        from mcp import Client, Implementation, StdioServerParameters
        from mcp.client.streamable_http import streamable_http_client

        from aah.mcp.child import child_stdio
        from aah.mcp.http_gate import gated_http_client

        server = held.server
        try:
            async with contextlib.AsyncExitStack() as stack:
                if server.is_http:
                    # With the headers AAH_MCP_HEADERS gives this server; every body
                    # passes the gate, which bounds each event (the SDK's own bound: none).
                    url = server.started_url()
                    http = gated_http_client(url, headers_for(server), held.gate)
                    await stack.enter_async_context(http)
                    transport: Any = streamable_http_client(
                        url, http_client=http, max_sse_event_size=None
                    )
                else:
                    argv = server.started_argv()
                    held.errlog = tempfile.TemporaryFile()
                    params = StdioServerParameters(command=argv[0], args=argv[1:])
                    transport = child_stdio(params, held.errlog, held.gate)
                client = Client(
                    transport,
                    mode=held.mode,
                    read_timeout_seconds=self.call_timeout,
                    message_handler=held.on_message,
                    elicitation_callback=held.on_elicit,
                    client_info=Implementation(name="aah", version=__version__),
                    cache=None,
                )
                await stack.enter_async_context(client)
                held.client = client
                ready.set_result(None)
                await held.stop.wait()
        except asyncio.CancelledError:
            ready.cancel()
            raise
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
        finally:
            if held.ended is None:
                held.ended = f"{self._exited(held)} earlier in this run"

    def _exited(self, held: _Held) -> str:
        where = "stopped answering" if held.server.is_http else "exited"
        return f"MCP server {held.server.name} {where}"

    def _broken(self, held: _Held, doing: str, exc: BaseException) -> str:
        if held.ended is not None:
            return held.ended
        if doing == _LISTING and type(exc).__name__ == "ValidationError":
            return (
                f"MCP server {held.server.name}'s tool list could not be read: "
                f"{_reason(exc)}: fix the server, or leave it out"
            )
        return f"MCP server {held.server.name} failed {doing}: {_reason(exc)}"

    async def _close_all(self) -> None:
        for held in self._held.values():
            held.stop.set()
        tasks = [h.task for h in self._held.values() if h.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=self.call_timeout)
        for task in tasks:
            task.cancel()
        for held in self._held.values():
            if held.errlog is not None:
                held.errlog.close()


class _CallAsker:
    """One call's answerer of the server's questions, live only while the call is.

    A question still waiting for a person when its call ends (it failed, it
    timed out, its session went away) is cancelled, so the server hears
    ``cancel`` at once and no count of questions in flight is left behind.
    """

    def __init__(self, elicitor: Elicitor) -> None:
        self._elicitor = elicitor
        self._waiting: set[asyncio.Future[dict[str, Any]]] = set()
        self._closed = False

    async def __call__(self, server: str, params: dict[str, Any]) -> dict[str, Any]:
        if self._closed:
            raise McpFailure("the call that asked has ended")
        waiting = asyncio.ensure_future(self._elicitor(server, params))
        self._waiting.add(waiting)
        try:
            return await waiting
        except asyncio.CancelledError:
            if self._closed and waiting.cancelled():
                raise McpFailure("the call that asked has ended") from None
            raise
        finally:
            self._waiting.discard(waiting)

    def close(self) -> None:
        """The call ended: cancel what is still being asked."""
        self._closed = True
        for waiting in self._waiting:
            waiting.cancel()


def configured_bounds() -> MessageBounds:
    """The bounds of every server's messages, as the settings give them."""
    from aah.config import get_settings

    settings = get_settings()
    return MessageBounds(settings.mcp_max_message_bytes, settings.mcp_max_call_bytes)


def _on_loop(elicitor: Elicitor, loop: asyncio.AbstractEventLoop) -> Elicitor:
    """``elicitor`` run on ``loop`` (the caller's), awaited from the private loop."""

    async def answer(server: str, params: dict[str, Any]) -> dict[str, Any]:
        future = asyncio.run_coroutine_threadsafe(elicitor(server, params), loop)
        return await asyncio.wrap_future(future)

    return answer


async def _read_pages(client: Any, listing: ToolListing) -> ToolListing:
    """Read ``tools/list`` page by page into ``listing``, until it says to stop."""
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        listing.add_page([tool.name for tool in page.tools], functools.partial(_dumped, page.tools))
        cursor = page.next_cursor
        if not listing.next_page(cursor):
            return listing


def _dumped(tools: list[Any], index: int) -> dict[str, Any]:
    dumped: dict[str, Any] = tools[index].model_dump(mode="json", by_alias=True)
    return dumped


class _AsksByRoundTrip(Exception):
    """A tool answered ``input_required`` over a connection opened by the handshake."""


def _refused_input_required(held: _Held, exc: BaseException) -> bool:
    """Whether ``exc`` is the SDK server's refusal to send ``input_required`` by the handshake."""
    from mcp.types import INTERNAL_ERROR
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    version = getattr(held.client, "protocol_version", None)
    return (
        getattr(exc, "code", None) == INTERNAL_ERROR
        and getattr(exc, "message", None) == _INPUT_REQUIRED_REFUSED
        and version in HANDSHAKE_PROTOCOL_VERSIONS
    )


def _refuses_handshake(ready: asyncio.Future[None]) -> bool:
    """Whether the server answered the handshake with an error (it may speak only 2026-07-28).

    An unsupported version (-32022), or no ``initialize`` method or request of
    that shape at all; not a timeout or a closed connection.
    """
    from mcp.types import (
        INVALID_PARAMS,
        INVALID_REQUEST,
        METHOD_NOT_FOUND,
        UNSUPPORTED_PROTOCOL_VERSION,
    )

    if not ready.done() or ready.cancelled():
        return False
    exc: BaseException | None = ready.exception()
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    refusals = (UNSUPPORTED_PROTOCOL_VERSION, METHOD_NOT_FOUND, INVALID_REQUEST, INVALID_PARAMS)
    return getattr(exc, "code", None) in refusals


def _reason(exc: BaseException) -> str:
    """An exception in a few words: its message's first line, else its type."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    errors = getattr(exc, "errors", None)
    if callable(errors) and type(exc).__name__ == "ValidationError":
        # pydantic's: which field of the answer, and what is wrong with it.
        try:
            first = errors()[0]
            where = ".".join(str(part) for part in first.get("loc", ()))
            return f"{where or 'the answer'}: {first.get('msg', 'not valid')}"[:300]
        except (IndexError, TypeError, ValueError):
            pass
    said = getattr(exc, "message", None)  # MCPError's str() is its argument tuple
    said = said if isinstance(said, str) and said.strip() else str(exc)
    text = said.strip().splitlines()[0] if said.strip() else ""
    return text[:300] or type(exc).__name__


def _connection_closed(exc: BaseException) -> bool:
    # The SDK fails every request in flight with "Connection closed" when the
    # transport ends: the process exited, or the HTTP server went away.
    return "connection closed" in _reason(exc).lower()


def mcp_failure_message(exc: BaseException) -> str:
    """How an MCP failure reads in one line, whatever raised it."""
    if isinstance(exc, concurrent.futures.TimeoutError | TimeoutError):
        return "the MCP server gave no answer in time (timeout)"
    return _reason(exc)


# The headers sent to HTTP MCP servers, by server name or URL, as JSON. Read from
# the environment only, never a settings file: it holds keys, and settings are
# shown and stored; each value is remembered as a secret when read.
HEADERS_VARIABLE = "AAH_MCP_HEADERS"
_SCHEMES = ("Bearer ", "Basic ", "Token ")


def headers_for(server: McpServer) -> dict[str, str]:
    """The headers ``AAH_MCP_HEADERS`` gives ``server`` (by its name, else its URL).

    Raises:
        AahError: the variable is not a JSON object of header objects; the
            message quotes no value.
    """
    text = os.environ.get(HEADERS_VARIABLE, "").strip()
    if not text:
        return {}
    example = """'{"NAME": {"Authorization": "Bearer ..."}}'"""
    try:
        data = json.loads(text)
    except ValueError:
        raise AahError(f"{HEADERS_VARIABLE} is not JSON: set it as {example}") from None
    if not isinstance(data, dict) or not all(
        isinstance(headers, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items())
        for headers in data.values()
    ):
        raise AahError(
            f"{HEADERS_VARIABLE} maps server names (or URLs) to objects of header text: "
            f"set it as {example}"
        )
    headers: dict[str, str] = data.get(server.name) or data.get(server.target) or {}
    for value in headers.values():
        remember_secret(value)
        for scheme in _SCHEMES:
            if value.startswith(scheme):
                remember_secret(value.removeprefix(scheme).strip())
    return dict(headers)


def require_sdk() -> None:
    """Check that the MCP SDK is installed.

    Raises:
        AahError: it is not; the message says which extra to install.
    """
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise AahError("MCP needs the mcp extra: pip install 'aah[mcp]'") from None
