"""MCP servers written with the SDK as their authors would, whose tools ask the user while they run.

Run as ``python tests/mcp_elicit_server.py STYLE [PORT]`` (stdio; with PORT,
streamable HTTP on 127.0.0.1:PORT). STYLE is how every tool asks, with no
protocol handling of the server's own:

- ``2025``: the SDK's documented way up to protocol 2025-11-25: the tool
  awaits ``ctx.elicit`` (a pydantic model) or ``ctx.elicit_url`` mid-call
  (``nested`` sends its raw schema with ``session.elicit_form``);
- ``2026``: the 2026-07-28 way: the tool answers ``InputRequiredResult``
  with its question, and reads the answer from ``ctx.input_responses`` when
  the client calls it again.

Each tool answers with what came back, so a test reads in the tool's result
what reached the server:

- ``book``: form mode (name, nights 1-14, breakfast, room); the result is
  ``accept {json content}``, ``decline`` or ``cancel``.
- ``sign_in``: URL mode (a link and an elicitation id); ``accept``,
  ``decline`` or ``cancel``.
- ``nested``: form mode with a schema that is not primitives-only (an
  object inside), which a client should refuse.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Literal

from mcp.server.elicitation import render_elicitation_schema
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import (
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    InputRequiredResult,
)
from pydantic import BaseModel, Field

ROOMS = [{"const": "single", "title": "Single room"}, {"const": "double", "title": "Double room"}]
SIGN_IN_URL = "https://auth.example.org/sign-in?state=abc123"
NESTED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"address": {"type": "object", "properties": {"street": {"type": "string"}}}},
}


def _titled_rooms(schema: dict[str, Any]) -> None:
    schema.pop("enum", None)
    schema["oneOf"] = ROOMS


class Booking(BaseModel):
    """Who stays, and for how long."""

    name: str = Field(title="Guest name", min_length=1, max_length=60)
    nights: int = Field(ge=1, le=14)
    breakfast: bool = False
    room: Literal["single", "double"] | None = Field(default=None, json_schema_extra=_titled_rooms)


def _said(action: str, content: dict[str, Any] | None) -> str:
    if action == "accept" and content is not None:
        return f"accept {json.dumps(content, sort_keys=True)}"
    return action


def server_2025() -> MCPServer:
    """Tools that ask mid-call, as the SDK documents it for servers up to 2025-11-25."""
    server = MCPServer("hotel-2025")

    @server.tool()
    async def book(city: str, ctx: Context) -> str:
        """Book a hotel room in a city; asks the guest for the booking's details."""
        got = await ctx.elicit(f"Booking a room in {city}: who stays, and for how long?", Booking)
        content = got.data.model_dump(exclude_unset=True) if got.action == "accept" else None
        return _said(got.action, content)

    @server.tool()
    async def sign_in(service: str, ctx: Context) -> str:
        """Sign in to a service; asks the user to open the service's sign-in page."""
        got = await ctx.elicit_url(f"Sign in to {service} to continue", SIGN_IN_URL, "sign-in-1")
        return got.action

    @server.tool()
    async def nested(ctx: Context) -> str:
        """Asks for an address as a nested object (not allowed by the protocol)."""
        got = await ctx.request_context.session.elicit_form(
            "Your address?", NESTED_SCHEMA, related_request_id=ctx.request_id
        )
        return _said(got.action, got.content)

    return server


async def _ask(ctx: Context, params: ElicitRequestParams) -> str | InputRequiredResult:
    """The 2026-07-28 way: ask by answering input_required; read the answer on the next call."""
    answers = ctx.input_responses or {}
    if "ask" not in answers:
        return InputRequiredResult(input_requests={"ask": ElicitRequest(params=params)})
    given = answers["ask"]
    got = ElicitResult.model_validate(
        given if isinstance(given, dict) else given.model_dump(by_alias=True)
    )
    return _said(got.action, got.content)


def server_2026() -> MCPServer:
    """Tools that ask by answering input_required, as the SDK documents it for 2026-07-28."""
    server = MCPServer("hotel-2026")
    booking = render_elicitation_schema(Booking)

    @server.tool()
    async def book(city: str, ctx: Context) -> str | InputRequiredResult:
        """Book a hotel room in a city; asks the guest for the booking's details."""
        message = f"Booking a room in {city}: who stays, and for how long?"
        return await _ask(ctx, ElicitRequestFormParams(message=message, requested_schema=booking))

    @server.tool()
    async def sign_in(service: str, ctx: Context) -> str | InputRequiredResult:
        """Sign in to a service; asks the user to open the service's sign-in page."""
        params = ElicitRequestURLParams(
            message=f"Sign in to {service} to continue",
            url=SIGN_IN_URL,
            elicitation_id="sign-in-1",
        )
        return await _ask(ctx, params)

    @server.tool()
    async def nested(ctx: Context) -> str | InputRequiredResult:
        """Asks for an address as a nested object (not allowed by the protocol)."""
        params = ElicitRequestFormParams(message="Your address?", requested_schema=NESTED_SCHEMA)
        return await _ask(ctx, params)

    return server


if __name__ == "__main__":
    style = sys.argv[1] if len(sys.argv) > 1 else "2025"
    built = server_2025() if style == "2025" else server_2026()
    if len(sys.argv) > 2:
        built.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        built.run()
