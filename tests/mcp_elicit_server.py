"""An MCP server, written with the SDK, whose tools ask the user for input while they run.

Run as ``python tests/mcp_elicit_server.py`` (stdio). Each tool sends one
``elicitation/create`` and answers with what came back, so a test reads in
the tool's result what reached the server:

- ``book``: form mode (name, nights 1-14, breakfast, room enum); the result
  is ``accept {json content}``, ``decline`` or ``cancel``.
- ``sign_in``: URL mode (a link and an elicitation id); ``accept``,
  ``decline`` or ``cancel``.
- ``nested``: form mode with a schema that is not primitives-only (an
  object inside), which a client should refuse.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.message import ServerMessageMetadata
from mcp.types import (
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    InputRequiredResult,
)

BOOKING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Guest name", "minLength": 1, "maxLength": 60},
        "nights": {"type": "integer", "minimum": 1, "maximum": 14},
        "breakfast": {"type": "boolean", "default": False},
        "room": {
            "type": "string",
            "oneOf": [
                {"const": "single", "title": "Single room"},
                {"const": "double", "title": "Double room"},
            ],
        },
    },
    "required": ["name", "nights"],
}
SIGN_IN_URL = "https://auth.example.org/sign-in?state=abc123"

server = MCPServer("elicit-test")


async def _ask(ctx: Context, params: ElicitRequestParams) -> str | InputRequiredResult:
    """Ask the client as the negotiated protocol says; the answer as the tool's text.

    Up to 2025-11-25 the server sends ``elicitation/create`` mid-call; from
    2026-07-28 it answers the call with ``input_required`` and reads the
    client's answer when the call comes again.
    """
    request = ElicitRequest(params=params)
    if ctx.request_context.session.can_send_request:
        answer: Any = await ctx.request_context.session.send_request(
            request, ElicitResult, metadata=ServerMessageMetadata(related_request_id=ctx.request_id)
        )
    elif not ctx.input_responses:
        return InputRequiredResult(input_requests={"ask": request})
    else:
        answer = ctx.input_responses["ask"]
    result = ElicitResult.model_validate(
        answer if isinstance(answer, dict) else answer.model_dump(by_alias=True)
    )
    if result.action == "accept" and result.content is not None:
        return f"accept {json.dumps(result.content, sort_keys=True)}"
    return str(result.action)


@server.tool()
async def book(city: str, ctx: Context) -> str | InputRequiredResult:
    """Book a hotel room in a city; asks the guest for the booking's details."""
    message = f"Booking a room in {city}: who stays, and for how long?"
    return await _ask(
        ctx, ElicitRequestFormParams(message=message, requested_schema=BOOKING_SCHEMA)
    )


@server.tool()
async def sign_in(service: str, ctx: Context) -> str | InputRequiredResult:
    """Sign in to a service; asks the user to open the service's sign-in page."""
    params = ElicitRequestURLParams(
        message=f"Sign in to {service} to continue", url=SIGN_IN_URL, elicitation_id="sign-in-1"
    )
    return await _ask(ctx, params)


@server.tool()
async def nested(ctx: Context) -> str | InputRequiredResult:
    """Asks for an address as a nested object (not allowed by the protocol)."""
    schema = {
        "type": "object",
        "properties": {"address": {"type": "object", "properties": {"street": {"type": "string"}}}},
    }
    return await _ask(
        ctx, ElicitRequestFormParams(message="Your address?", requested_schema=schema)
    )


if __name__ == "__main__":
    server.run()
