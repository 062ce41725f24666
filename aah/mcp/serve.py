"""``aah mcp serve``: the human desk as an MCP server (stdio or streamable HTTP)."""

# No ``from __future__ import annotations``: the SDK reads the tool's
# annotations at definition time, and ``Context`` is imported in the function.
from typing import Any

from aah.mcp.desk import HumanDesk, Question

SERVER_NAME = "aah"
INSTRUCTIONS = (
    "ask_human puts a question to the people at aah's human desk and returns their "
    "answer. People take minutes or hours: pass a deadline (seconds) and a fallback "
    "to bound the wait; while it waits the server sends progress notifications. "
    "If your client gives up, ask again with the same id: the answer is kept."
)


def build_desk_server(desk: HumanDesk) -> Any:
    """An MCP server (the SDK's ``MCPServer``) whose ``ask_human`` tool asks ``desk``."""
    from mcp.server.mcpserver import Context, MCPServer

    server = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS)

    @server.tool()
    async def ask_human(
        question: str,
        ctx: Context,
        context: str | None = None,
        deadline: float | None = None,
        fallback: str | None = None,
        id: str | None = None,  # noqa: A002 - the name MCP clients see
    ) -> str:
        """Ask a person a question and wait for the answer.

        Args:
            question: What you need to know, as you would ask a colleague.
            ctx: The request (filled in by the server).
            context: What the person needs to know to answer.
            deadline: Seconds to wait; afterwards the fallback is returned.
            fallback: The answer to return if no one answers by the deadline.
            id: Your id for the question: asking again with it returns its answer.
        """

        async def progress(waited: float) -> None:
            await ctx.report_progress(waited, deadline, "waiting for a person")

        asked = Question(question, context, deadline, fallback, id)
        return await desk.ask(asked, _client_name(ctx), progress)

    return server


def _client_name(ctx: Any) -> str:
    """The name the MCP client gave, or ``unknown``."""
    try:
        info = ctx.session.client_params.client_info
    except (AttributeError, ValueError):
        return "unknown"
    return str(getattr(info, "name", "") or "unknown")
