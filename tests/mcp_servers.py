"""MCP servers for tests, written with the SDK's server API, plus broken ones.

Run as ``python tests/mcp_servers.py KIND [PORT]``:

- ``stdio``: a working server over stdio (tools ``add``, ``echo``, ``shout``,
  ``fail``, ``huge``, ``crash``, ``hang``, ``key_ends``); ``--api-key KEY``
  after the kind gives it a key, whose last four characters ``key_ends`` tells.
- ``http PORT``: the same server over streamable HTTP on 127.0.0.1:PORT.
- ``exit``: exits at once with a message on stderr.
- ``silent``: reads its stdin and never answers.
- ``garbage``: answers every line with text that is not JSON-RPC.
- ``slow SECONDS``: waits that long, then serves over stdio.

Hostile servers, written with the SDK's low-level server (each tool's call
answers with its arguments as JSON, so a test sees the names that arrived):

- ``many N``: N tools (``tool_0``...) in one page of ``tools/list``.
- ``endless``: pages of ten tools whose cursor never ends.
- ``long_description``: a tool whose description is ten million characters.
- ``deep DEPTH``: a tool whose input schema nests DEPTH levels (raw JSON-RPC:
  the SDK's own server could not write it).
- ``names``: tool and parameter names with controls, ANSI escapes,
  zero-width characters, names that clean to the same name, an empty name.
- ``not_a_list``: a ``tools/list`` answer whose ``tools`` is an object (raw).
- ``http-many N PORT``: ``many N`` over streamable HTTP.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

HUGE_CHARS = 1_500_000
# The key given with --api-key (stdio and http kinds).
API_KEY = {"value": ""}


def build_server() -> Any:
    """The working test server and its tools (the SDK loads only here: broken kinds start fast)."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("aah-test")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def echo(text: str, times: int = 1) -> str:
        """Repeat a text. The secret word is never printed."""
        return " ".join([text] * times)

    @server.tool()
    def fail(reason: str) -> str:
        """Always fails with the given reason."""
        raise ValueError(reason)

    @server.tool()
    def huge() -> str:
        """A result of a million and a half characters."""
        return "x" * HUGE_CHARS

    @server.tool()
    def crash() -> str:
        """The server process dies while answering."""
        os._exit(3)

    @server.tool()
    def hang() -> str:
        """Never answers."""
        time.sleep(3600)
        return "late"

    @server.tool()
    def key_ends() -> str:
        """The last four characters of the key the server was started with."""
        return API_KEY["value"][-4:]

    return server


DESCRIPTION_CHARS = 10_000_000
ENDLESS_PAGE = 10
# name -> its parameters' names, as the ``names`` server lists them.
HOSTILE_NAMES: dict[str, list[str]] = {
    "ansi\x1b[31m_red": ["plain", "col\x1b[1mor"],
    "bell\x07tool": ["a\x00b", "tab\tbed"],
    "zero\u200bwidth": ["zw\u200bj", "zwj"],
    "sa\x07me": ["x\x07y", "xy"],
    "same": ["q"],
    "dot.ted": ["q"],
    "dot_ted": ["q"],
    "\x1b[0m": ["q"],
    "": ["q"],
}


def _echo_result(arguments: dict[str, Any] | None) -> Any:
    import json

    import mcp.types as types

    text = json.dumps({"arguments": arguments or {}}, ensure_ascii=True, sort_keys=True)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def hostile_server(kind: str, argv: list[str]) -> Any:
    """A low-level SDK server whose ``tools/list`` is what ``kind`` names."""
    import mcp.types as types
    from mcp.server.lowlevel import Server

    schema = {"type": "object", "properties": {"text": {"type": "string"}}}

    def tool(name: str, **extra: Any) -> Any:
        return types.Tool(name=name, input_schema=extra.pop("input_schema", schema), **extra)

    async def list_tools(ctx: Any, params: Any) -> Any:
        cursor = params.cursor if params is not None else None
        if kind == "many":
            tools = [
                tool(f"tool_{i}", description=f"Tool number {i}.") for i in range(int(argv[0]))
            ]
            return types.ListToolsResult(tools=tools)
        if kind == "endless":
            page = int(cursor or 0)
            names = [f"page{page}_tool{i}" for i in range(ENDLESS_PAGE)]
            return types.ListToolsResult(tools=[tool(n) for n in names], next_cursor=str(page + 1))
        if kind == "long_description":
            return types.ListToolsResult(
                tools=[tool("wordy", description="w" * DESCRIPTION_CHARS), tool("terse")]
            )
        tools = [
            tool(
                name,
                input_schema={
                    "type": "object",
                    "properties": {p: {"type": "string"} for p in params_},
                    "required": params_[:1],
                },
            )
            for name, params_ in HOSTILE_NAMES.items()
        ]
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        return _echo_result(params.arguments)

    return Server("aah-hostile", on_list_tools=list_tools, on_call_tool=call_tool)


def run_hostile(kind: str, argv: list[str]) -> None:
    """Serve a hostile kind over stdio (or streamable HTTP for ``http-many``)."""
    import anyio

    if kind == "http-many":
        import uvicorn

        app = hostile_server("many", argv[:1]).streamable_http_app(host="127.0.0.1")
        uvicorn.run(app, host="127.0.0.1", port=int(argv[1]), log_level="error")
        return
    from mcp.server.stdio import stdio_server

    server = hostile_server(kind, argv)

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)


def run_raw(kind: str, argv: list[str]) -> None:
    """A JSON-RPC server written by hand, for lists the SDK's server would not write."""
    import json

    if kind == "deep":
        # Written as text: json.dumps itself gives up near a thousand levels.
        depth = int(argv[0])
        nested = '{"type": "object", "properties": {"inner": ' * depth + "{}" + "}}" * depth
        tools = f'[{{"name": "deep", "inputSchema": {nested}}}, {{"name": "flat", "inputSchema": {{"type": "object"}}}}]'
    else:
        tools = '{"not": "a list"}'
    for line in sys.stdin:
        request = json.loads(line)
        if "id" not in request:
            continue
        method = request.get("method")
        if method == "initialize":
            result: Any = {
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw", "version": "1"},
            }
        elif method == "tools/list":
            print(
                f'{{"jsonrpc": "2.0", "id": {json.dumps(request["id"])}, "result": {{"tools": {tools}}}}}',
                flush=True,
            )
            continue
        else:
            error = {"code": -32601, "message": f"no method {method}"}
            reply = {"jsonrpc": "2.0", "id": request["id"], "error": error}
            print(json.dumps(reply), flush=True)
            continue
        print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}), flush=True)


def main(argv: list[str]) -> None:
    """Run the server kind named on the command line."""
    kind = argv[1] if len(argv) > 1 else "stdio"
    if "--api-key" in argv:
        API_KEY["value"] = argv[argv.index("--api-key") + 1]
    if kind == "exit":
        print("fatal: missing configuration file", file=sys.stderr)
        sys.exit(1)
    if kind == "silent":
        for _line in sys.stdin:
            pass
        return
    if kind == "garbage":
        for _line in sys.stdin:
            print("this is not JSON-RPC", flush=True)
        return
    if kind in ("many", "endless", "long_description", "names", "http-many"):
        run_hostile(kind, argv[2:])
        return
    if kind in ("deep", "not_a_list"):
        run_raw(kind, argv[2:])
        return
    if kind == "slow":
        time.sleep(float(argv[2]))
        kind = "stdio"
    server = build_server()
    if kind == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(argv[2]))
    else:
        server.run("stdio")


if __name__ == "__main__":
    main(sys.argv)
