"""A raw MCP server whose every answer to a call is written as the call's arguments say.

Run as ``python tests/mcp_puppet_server.py [--http PORT] [--modern-only [--no-initialize]]``
(stdio by default). It answers the handshake (2025-11-25) and ``tools/list``
(one tool, ``emit``) itself; a call of ``emit`` takes a ``script``: a list
of lines, each a list of pieces written one after the other, then a newline:

- ``{"text": "..."}``: UTF-8 text, with ``{id}`` replaced by the call's
  JSON-RPC id (as JSON) and ``{ask}`` by the id of the server's question
  (``ask-`` and the call's id, so an answer finds its call);
- ``{"hex": "ff fe"}``: raw bytes (a line that is not UTF-8);
- ``{"repeat": "x", "times": N}``: text repeated, written a megabyte at a time,
  so a 200 MB line costs the server no 200 MB.

With ``"await": true`` the server then reads the client's answer to its
question (the request whose id is ``{ask}``) and answers the call with that
answer as JSON text; otherwise the lines are all it sends for the call.

Over HTTP (``--http PORT``, streamable HTTP on 127.0.0.1) the argument
``"http": "json"`` sends the lines as one JSON body and ``"sse"`` (the
default) each as an event of the call's stream; ``"gzip": true`` compresses
the body (a client that asked for none gets it anyway); the client's answer
to a question arrives as a POST of its own. ``--modern-only`` refuses the
handshake (-32022, or "method not found" with ``--no-initialize``) and
speaks 2026-07-28 (``server/discover``) only.
"""

from __future__ import annotations

import asyncio
import json
import sys
import zlib
from collections import deque
from collections.abc import Iterator
from typing import Any

TOOL = {"name": "emit", "description": "Writes what it is told.", "inputSchema": {"type": "object"}}
MODERN = "2026-07-28"
# With --modern-only: answer the handshake "method not found" rather than -32022.
NO_INITIALIZE = "--no-initialize"
_MEGABYTE = 1 << 20


def chunks(line: list[dict[str, Any]], call_id: Any) -> Iterator[bytes]:
    """One scripted line's bytes, a piece (or a megabyte of a repeat) at a time."""
    for piece in line:
        if "text" in piece:
            text = (
                piece["text"].replace("{id}", json.dumps(call_id)).replace("{ask}", ask_id(call_id))
            )
            yield text.encode("utf-8", "surrogatepass")
        elif "hex" in piece:
            yield bytes.fromhex(piece["hex"])
        else:
            unit = piece["repeat"].encode("utf-8", "surrogatepass")
            times = int(piece["times"])
            per_chunk = max(1, _MEGABYTE // max(1, len(unit)))
            block = unit * per_chunk
            while times > 0:
                yield block if times >= per_chunk else unit * times
                times -= per_chunk


def ask_id(call_id: Any) -> str:
    """The id of the question the server asks during call ``call_id``."""
    return f"ask-{call_id}"


def answer(call_id: Any, text: str, *, modern: bool = False) -> bytes:
    """A call's plain answer: one text block."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if modern:
        result["resultType"] = "complete"
    return json.dumps({"jsonrpc": "2.0", "id": call_id, "result": result}).encode()


def handshake(message: dict[str, Any], modern_only: bool) -> dict[str, Any] | None:
    """The answer to a request the server answers itself (None: ``tools/call``)."""
    method, request_id = message.get("method"), message.get("id")
    if method == "initialize" and modern_only:
        if NO_INITIALIZE in sys.argv:
            error = {"code": -32601, "message": "Method not found"}
            return {"jsonrpc": "2.0", "id": request_id, "error": error}
        data = {"supported": [MODERN], "requested": message["params"]["protocolVersion"]}
        error = {"code": -32022, "message": "Unsupported protocol version", "data": data}
        return {"jsonrpc": "2.0", "id": request_id, "error": error}
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "puppet", "version": "1"},
        }
    elif method == "server/discover" and modern_only:
        result = {
            "supportedVersions": [MODERN],
            "capabilities": {"tools": {}},
            "resultType": "complete",
            "ttlMs": 0,
            "cacheScope": "public",
        }
    elif method == "tools/list":
        result = {"tools": [TOOL]}
        if modern_only:
            result.update(resultType="complete", ttlMs=0, cacheScope="public")
    elif method == "ping":
        result = {}
    elif method == "tools/call":
        return None
    else:
        error = {"code": -32601, "message": f"no method {method}"}
        return {"jsonrpc": "2.0", "id": request_id, "error": error}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def serve_stdio(modern_only: bool) -> None:
    """Serve over stdio until stdin closes."""
    out = sys.stdout.buffer
    backlog: deque[dict[str, Any]] = deque()  # requests that came while an answer was awaited
    incoming = (json.loads(raw) for raw in sys.stdin.buffer)
    while True:
        message = backlog.popleft() if backlog else next(incoming, None)
        if message is None:
            return
        if "method" not in message or "id" not in message:
            continue  # notifications, and answers nobody waits for
        reply = handshake(message, modern_only)
        if reply is not None:
            out.write(json.dumps(reply).encode() + b"\n")
            out.flush()
            continue
        arguments = message["params"].get("arguments") or {}
        for line in arguments.get("script", []):
            for chunk in chunks(line, message["id"]):
                out.write(chunk)
            out.write(b"\n")
            out.flush()
        if arguments.get("await"):
            said = _read_answer(ask_id(message["id"]), incoming, backlog)
            out.write(answer(message["id"], said, modern=modern_only) + b"\n")
            out.flush()


def _read_answer(
    asked: str, incoming: Iterator[dict[str, Any]], backlog: deque[dict[str, Any]]
) -> str:
    """The client's answer to question ``asked``, as JSON text; other requests wait."""
    for message in incoming:
        if message.get("id") == asked and "method" not in message:
            return json.dumps({k: message[k] for k in ("result", "error") if k in message})
        if "method" in message:
            backlog.append(message)
    return "{}"


def serve_http(port: int, modern_only: bool) -> None:
    """Serve streamable HTTP on 127.0.0.1:``port``."""
    import uvicorn

    answers: dict[str, asyncio.Queue[dict[str, Any]]] = {}

    def waiting(key: str) -> asyncio.Queue[dict[str, Any]]:
        return answers.setdefault(key, asyncio.Queue())

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (event := await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["method"] != "POST":
            status = 200 if scope["method"] == "DELETE" else 405
            await _reply(send, status, b"", "text/plain")
            return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        message = json.loads(body)
        if "method" not in message:
            waiting(str(message.get("id"))).put_nowait(message)
            await _reply(send, 202, b"", "text/plain")
            return
        if "id" not in message:
            await _reply(send, 202, b"", "text/plain")
            return
        reply = handshake(message, modern_only)
        if reply is not None:
            await _reply(send, 200, json.dumps(reply).encode(), "application/json")
            return
        await _call(send, message, waiting(ask_id(message["id"])), modern_only)

    async def _call(
        send: Any, message: dict[str, Any], asked: asyncio.Queue[dict[str, Any]], modern: bool
    ) -> None:
        arguments = message["params"].get("arguments") or {}
        as_json = arguments.get("http") == "json"
        kind = "application/json" if as_json else "text/event-stream"
        headers = [(b"content-type", kind.encode()), (b"mcp-session-id", b"puppet")]
        # gzip though the client asked for none: a small body that grows a thousandfold.
        packer = zlib.compressobj(9, zlib.DEFLATED, 31) if arguments.get("gzip") else None
        if packer is not None:
            headers.append((b"content-encoding", b"gzip"))
        await send({"type": "http.response.start", "status": 200, "headers": headers})

        async def body(data: bytes) -> None:
            packed = packer.compress(data) if packer is not None else data
            if packed:
                await send({"type": "http.response.body", "body": packed, "more_body": True})

        try:
            for line in arguments.get("script", []):
                if not as_json:
                    await body(b"event: message\ndata: ")
                for chunk in chunks(line, message["id"]):
                    await body(chunk)
                if not as_json:
                    await body(b"\n\n")
            if arguments.get("await"):
                said = await asked.get()
                text = json.dumps({k: said[k] for k in ("result", "error") if k in said})
                await body(b"event: message\ndata: " + answer(message["id"], text) + b"\n\n")
            rest = packer.flush() if packer is not None else b""
            await send({"type": "http.response.body", "body": rest, "more_body": False})
        except OSError:
            return  # the client went away (it read all it would)

    async def _reply(send: Any, status: int, data: bytes, kind: str) -> None:
        headers = [(b"content-type", kind.encode()), (b"mcp-session-id", b"puppet")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": data})

    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        log_level="critical",
        lifespan="on",
        timeout_graceful_shutdown=1,
    )


def main(argv: list[str]) -> None:
    """Serve as the command line says."""
    modern_only = "--modern-only" in argv
    if "--http" in argv:
        serve_http(int(argv[argv.index("--http") + 1]), modern_only)
    else:
        serve_stdio(modern_only)


if __name__ == "__main__":
    main(sys.argv)
