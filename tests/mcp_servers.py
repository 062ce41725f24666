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
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

HUGE_CHARS = 3_000_000
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
        """A result of three million characters."""
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
