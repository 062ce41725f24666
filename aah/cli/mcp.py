"""``aah mcp``: aah's human desk for any MCP agent."""

from __future__ import annotations

import os

import typer

from aah.cli.options import DbOption, HostOption

app = typer.Typer(no_args_is_help=True)


@app.command("serve")
def serve(
    port: int | None = typer.Option(
        None, "--port", min=1, max=65535, help="Serve streamable HTTP on PORT (default: stdio)."
    ),
    host: HostOption = "127.0.0.1",
    db: DbOption = None,
) -> None:
    """Expose ask_human to MCP clients: questions go to the queue people answer.

    Over HTTP, set AAH_MCP_TOKEN to require it as a bearer token (needed off loopback).
    """
    from aah.config import get_settings
    from aah.mcp import HumanTools, build_desk_server, require_sdk, serve_http
    from aah.store import SessionStore

    require_sdk()
    store = SessionStore(db or get_settings().db)
    try:
        server = build_desk_server(HumanTools(store))
        if port is None:
            import anyio

            from aah.mcp import serve_stdio

            anyio.run(serve_stdio, server)
        else:
            token = os.environ.get("AAH_MCP_TOKEN") or None
            serve_http(server, host=host, port=port, token=token)
    finally:
        store.close()
