"""MCP tools behind the same executor interface as HTTP endpoints.

:class:`McpExecutor` answers specs whose source is an MCP server, in the
HTTP modes that make sense for it: ``live`` calls the server, ``record``
calls it and keeps the answer, ``replay`` answers only from recordings.
``mock`` and ``fault`` need no MCP code: the HTTP layer's mock and fault
executors work from the spec alone. :class:`ToolRouter` sends each call to
the executor for its spec's kind, so the runtime holds one executor and
knows nothing of MCP.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from aah.mcp.connections import Elicitor, McpConnections, McpFailure, McpReply
from aah.mcp.recording import McpRecording
from aah.mcp.servers import is_mcp_spec, server_of
from aah.runtime import session_elicitor
from aah.secrets import remember_named
from aah.tools import EndpointSpec
from aah.tools.http import Executor, ToolResult, describe_body, failure_result

# JSON-RPC's "invalid params": the server, not a check, refused the arguments.
# It is logged as HTTP 422 is, so ToolScan's IAV counts it (aah.scoring.errors).
INVALID_PARAMS = -32602
INVALID_PARAMS_STATUS = 422


class McpExecutor:
    """Calls MCP tools live, recording their answers, or from a recording.

    Args:
        mode: ``live``, ``record`` or ``replay``.
        connections: The open servers (unused in replay).
        recording: Where answers are kept (record) or read (replay).
        max_bytes: The most bytes of a result's text kept, as for HTTP bodies.
    """

    def __init__(
        self,
        *,
        mode: str,
        connections: McpConnections | None,
        recording: McpRecording | None,
        max_bytes: int,
    ) -> None:
        self.mode = mode
        self.connections = connections
        self.recording = recording
        self.max_bytes = max_bytes

    def call(self, spec: EndpointSpec, arguments: Mapping[str, Any]) -> ToolResult:
        """Call the MCP tool of ``spec``; never raises for a failed call."""
        started = time.perf_counter()
        values = _given(spec, arguments)
        replayed = self._replayed(spec, values, started)
        if replayed is not None or self.connections is None:
            return replayed or self._unavailable(spec, started)
        try:
            reply = self.connections.call(server_of(spec), tool_name(spec), values)
        except McpFailure as exc:
            return _failed(spec, exc, started, self.mode)
        except TimeoutError as exc:
            return _failed(spec, McpFailure(f"no answer in time ({exc})"), started, self.mode)
        return self._answered(spec, values, reply, started)

    async def acall(self, spec: EndpointSpec, arguments: Mapping[str, Any]) -> ToolResult:
        """:meth:`call` without blocking the event loop."""
        started = time.perf_counter()
        values = _given(spec, arguments)
        replayed = self._replayed(spec, values, started)
        if replayed is not None or self.connections is None:
            return replayed or self._unavailable(spec, started)
        try:
            reply = await self.connections.acall(
                server_of(spec), tool_name(spec), values, _session_elicitor()
            )
        except McpFailure as exc:
            return _failed(spec, exc, started, self.mode)
        if self.recording is not None:
            # The store's lock may wait on another thread's write.
            return await asyncio.to_thread(self._answered, spec, values, reply, started)
        return self._answered(spec, values, reply, started)

    def close(self) -> None:
        """Stop the servers and close the recording."""
        if self.connections is not None:
            self.connections.close()
        if self.recording is not None:
            self.recording.close()

    def _replayed(
        self, spec: EndpointSpec, values: dict[str, Any], started: float
    ) -> ToolResult | None:
        if self.mode != "replay" or self.recording is None:
            return None
        reply = self.recording.reply(spec.tool, tool_name(spec), values)
        if reply is None:
            return self._unavailable(spec, started)
        return reply_result(
            reply, spec, latency_ms=_ms(started), mode=self.mode, max_bytes=self.max_bytes
        ).model_copy(update={"from_cache": True})

    def _unavailable(self, spec: EndpointSpec, started: float) -> ToolResult:
        message = f"tool unavailable: no recorded response for {spec.qualified_name}"
        return ToolResult(
            ok=False,
            text=message,
            error=message,
            url=spec.url_template,
            latency_ms=_ms(started),
            mode=self.mode,
        )

    def _answered(
        self, spec: EndpointSpec, values: dict[str, Any], reply: McpReply, started: float
    ) -> ToolResult:
        if self.mode == "record" and self.recording is not None:
            self.recording.save_reply(spec.tool, tool_name(spec), values, reply)
        return reply_result(
            reply, spec, latency_ms=_ms(started), mode=self.mode, max_bytes=self.max_bytes
        )


def _session_elicitor() -> Elicitor | None:
    """The running session's answerer of servers' questions, in the connections' terms."""
    elicitor = session_elicitor.get()
    if elicitor is None:
        return None

    async def answer(server: str, params: dict[str, Any]) -> dict[str, Any]:
        return (await elicitor.answer(server, params)).wire()

    return answer


def reply_result(
    reply: McpReply, spec: EndpointSpec, *, latency_ms: float, mode: str, max_bytes: int
) -> ToolResult:
    """An MCP answer as a tool result: its content as text, cut at ``max_bytes``.

    A tool's own error (``isError``) is a failed call whose text the agent
    reads after ``tool error:``; structured content, when given, is the data.
    """
    text = "\n".join(_block_text(block) for block in reply.content) or "(empty result)"
    body = describe_body(
        text.encode("utf-8", errors="replace"),
        "text/plain; charset=utf-8",
        max_bytes=max_bytes,
    )
    data = reply.structured if reply.structured is not None else body.data
    if reply.is_error:
        first = body.text.splitlines()[0] if body.text.strip() else "the tool reported an error"
        return ToolResult(
            ok=False,
            text=f"tool error: {body.text}",
            data=data,
            latency_ms=latency_ms,
            url=spec.url_template,
            error=first[:300],
            truncated=body.truncated,
            mode=mode,
        )
    return ToolResult(
        ok=True,
        text=body.text,
        data=data,
        latency_ms=latency_ms,
        url=spec.url_template,
        truncated=body.truncated,
        mode=mode,
    )


def _block_text(block: Mapping[str, Any]) -> str:
    """One content block as text the agent can read."""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text") or "")
    if kind in ("image", "audio"):
        size = len(str(block.get("data") or "")) * 3 // 4
        return f"[{kind} {block.get('mimeType') or 'unknown type'}, about {size} bytes]"
    if kind == "resource":
        resource = block.get("resource") or {}
        if isinstance(resource, Mapping) and resource.get("text") is not None:
            return str(resource["text"])
        uri = resource.get("uri") if isinstance(resource, Mapping) else None
        return f"[resource {uri or '(no uri)'}]"
    if kind == "resource_link":
        return f"[link {block.get('uri') or '(no uri)'}: {block.get('name') or ''}]".rstrip(": ]")
    return f"[{kind or 'unknown'} content]"


def _failed(spec: EndpointSpec, exc: McpFailure, started: float, mode: str) -> ToolResult:
    status = INVALID_PARAMS_STATUS if exc.code == INVALID_PARAMS else None
    return failure_result(
        str(exc), url=spec.url_template, latency_ms=_ms(started), mode=mode, status=status
    )


def tool_name(spec: EndpointSpec) -> str:
    """The name the server knows ``spec``'s tool by (the spec's own is the shown one)."""
    return spec.source.id or spec.name


def _given(spec: EndpointSpec, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments as the server names them: each shown name back to the server's own."""
    # As for HTTP: None means "not given", and a credential argument's value
    # is a secret wherever it shows up next (a result that echoes it).
    remember_named(arguments)
    sent: dict[str, Any] = {}
    for name, value in arguments.items():
        if value is not None:
            param = spec.parameter(name)
            own = param.source_name if param is not None else None
            sent[name if own is None else own] = value
    return sent


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 3)


class ToolRouter:
    """One executor for a run's tools: MCP specs to one executor, the rest to another.

    Args:
        http: Answers HTTP endpoint specs (any HTTP mode).
        mcp: Answers MCP tool specs.
    """

    def __init__(self, http: Executor, mcp: Executor) -> None:
        self.http = http
        self.mcp = mcp
        self.mode = getattr(http, "mode", "live")

    def call(self, spec: EndpointSpec, arguments: Mapping[str, Any]) -> ToolResult:
        """The answer of the executor for ``spec``'s kind."""
        return self._for(spec).call(spec, arguments)

    async def acall(self, spec: EndpointSpec, arguments: Mapping[str, Any]) -> ToolResult:
        """The answer of the executor for ``spec``'s kind, without blocking."""
        return await self._for(spec).acall(spec, arguments)

    def close(self) -> None:
        """Close both executors."""
        try:
            self.mcp.close()
        finally:
            self.http.close()

    def _for(self, spec: EndpointSpec) -> Executor:
        return self.mcp if is_mcp_spec(spec) else self.http
