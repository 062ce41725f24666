"""``aah mcp serve``: the human desk as an MCP server (stdio or streamable HTTP).

Both transports (``aah.mcp.serve_transports``) hand the SDK only messages
:func:`aah.mcp.intake.screen_message` passed, so no client waits for ever.
"""

# No ``from __future__ import annotations``: the SDK reads the tool's
# annotations at definition time, and ``Context`` is imported in the function.
import hmac
import inspect
import re
from collections.abc import Callable
from typing import Any

from aah.errors import AahError
from aah.mcp.caps import MAX_MESSAGE_BYTES
from aah.mcp.human_tools import ApprovalAsk, HumanTools, Question, client_label
from aah.mcp.serve_transports import MCP_PATH, IntakeGuard

SERVER_NAME = "aah"
INSTRUCTIONS = (
    "ask_human puts a question to the people at aah's human desk and returns their "
    "answer. People take minutes or hours: pass a deadline (seconds) and a fallback "
    "to bound the wait; while it waits the server sends progress notifications. "
    "request_approval asks them to approve a tool call before you make it: the result "
    "says approved or edited (run the call with the arguments given), rejected (with "
    "their reason), terminated (stop the task) or timed_out (the fallback applied). "
    "If your client gives up, ask again with the same id: the answer is kept. "
    "A client with the MCP tasks extension gets a task at once and polls tasks/get."
)


def build_desk_server(desk: HumanTools) -> Any:
    """An MCP server (the SDK's ``MCPServer``) whose tools ask ``desk``'s people.

    ``ask_human`` puts a question; ``request_approval`` a tool call to approve.
    """
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.mcpserver.tools import Tool

    from aah.mcp.tasks import TASK_CREATED, DeskTasks

    # What each tool sends for a value it returned: a task's result is sent as the call's would be.
    tools: dict[str, Any] = {}

    def result_of(tool: str, value: Any) -> Any:
        return tools[tool].fn_metadata.convert_result(value)

    tasks = DeskTasks(desk, result_of, _client_name)
    server = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, extensions=[tasks])

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
            ctx: The request (the server's; never shown to clients).
            context: What the person needs to know to answer.
            deadline: Seconds to wait; afterwards the fallback is returned.
            fallback: The answer to return if no one answers by the deadline.
            id: Your id for the question: asking again with it returns its answer.
        """

        async def progress(waited: float) -> None:
            await ctx.report_progress(waited, deadline, "waiting for a person")

        asked = Question(question, context, deadline, fallback, id)
        try:
            if (created := TASK_CREATED.get()) is not None:  # a task: queue it, answer later
                created.append(await desk.start_ask(asked, _client_name(ctx)))
                return ""
            return await desk.ask(asked, _client_name(ctx), progress)
        except AahError as exc:  # the client's mistake: its one line is the tool's error
            raise ToolError(str(exc)) from None

    async def request_approval(
        tool: str,
        arguments: dict[str, Any],
        ctx: Context,
        deadline: float | None = None,
        fallback: str = "reject",
        context: str | None = None,
        id: str | None = None,  # noqa: A002 - the name MCP clients see
        input_schema: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Ask a person to approve a tool call before you make it, and wait for the decision.

        Args:
            tool: The tool you want to call.
            arguments: The arguments you would call it with.
            ctx: The request (the server's; never shown to clients).
            deadline: Seconds to wait; afterwards the fallback decides.
            fallback: What applies at the deadline: "reject" (default) or "approve".
            context: What the person needs to know to decide.
            id: Your id for the call: asking again with it returns its decision.
            input_schema: The tool's input JSON schema, so a person's edit is checked against it.

        Returns:
            outcome (approved, edited, rejected, responded, terminated or timed_out),
            run (whether to make the call), arguments (the ones to run it with),
            reason, decided_by, response (a person's result to use instead of
            making the call) when responded, and fallback when it timed out.
        """

        async def progress(waited: float) -> None:
            await ctx.report_progress(waited, deadline, "waiting for a person to decide")

        asked = ApprovalAsk(tool, arguments, deadline, fallback, id, context, input_schema)
        try:
            if (created := TASK_CREATED.get()) is not None:  # a task: queue it, decide later
                created.append(await desk.start_approval(asked, _client_name(ctx)))
                return {}
            return await desk.approve(asked, _client_name(ctx), progress)
        except AahError as exc:  # the client's mistake: its one line is the tool's error
            raise ToolError(str(exc)) from None

    for fn in (ask_human, request_approval):
        tool = Tool.from_function(fn, description=client_description(fn))
        server.add_tool(fn, description=tool.description)
        tools[tool.name] = tool
    return server


def client_description(fn: Callable[..., Any]) -> str:
    """``fn``'s docstring as a client's model reads it: without the server's own parameters.

    A tool's parameters that the SDK fills in (``Context``) are not in its
    input schema; their lines in the docstring's ``Args:`` would only tell a
    model of arguments it cannot send.
    """
    from mcp.server.mcpserver.tools import Tool

    described = inspect.cleandoc(fn.__doc__ or "")
    offered = set(Tool.from_function(fn).parameters.get("properties", {}))
    kept: list[str] = []
    dropping = False
    section = ""
    for line in described.splitlines():
        if line and not line[0].isspace():
            section, dropping = line.strip(), False
        elif section == "Args:" and (named := _ARG_LINE.match(line)):
            dropping = named[1] not in offered
        elif not line.strip():
            dropping = False
        if not dropping:
            kept.append(line)
    return "\n".join(kept)


# An entry of a Google-style Args section: "    name: what it is" (or "name (type): ...").
_ARG_LINE = re.compile(r"^ {4}(\w+)(?: \([^)]*\))?:")


def _client_name(ctx: Any) -> str:
    """The name the MCP client gave, as aah shows and stores it (``unknown`` without one)."""
    try:
        info = ctx.session.client_params.client_info
    except (AttributeError, ValueError):
        return "unknown"
    return client_label(str(getattr(info, "name", "") or ""))


LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")


def serve_http(server: Any, *, host: str, port: int, token: str | None) -> None:
    """Serve ``server`` over streamable HTTP; with ``token``, every request needs it as a bearer.

    Raises:
        AahError: a host other than loopback was asked for without a token.
    """
    import logging

    import anyio
    import uvicorn

    if token is None and host not in LOOPBACK_HOSTS:
        raise AahError(
            f"serving MCP on {host} lets anyone there ask your annotators: "
            "set AAH_MCP_TOKEN (clients send it as a bearer token) or use --host 127.0.0.1"
        )
    app = server.streamable_http_app(
        host=host, streamable_http_path=MCP_PATH, max_request_body_size=MAX_MESSAGE_BYTES
    )
    screened = IntakeGuard(app)
    guarded = BearerGuard(screened, token) if token else screened
    config = uvicorn.Config(guarded, host=host, port=port, log_level="warning")
    # The SDK logs each session manager start and stop at INFO: not news to the person serving.
    logging.getLogger("mcp").setLevel(logging.WARNING)
    anyio.run(uvicorn.Server(config).serve)


class BearerGuard:
    """ASGI middleware: HTTP requests without ``Authorization: Bearer <token>`` get a 401."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Pass the request on when it carries the token; answer 401 otherwise."""
        if scope.get("type") == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                body = b'{"error": "unauthorized: send the AAH_MCP_TOKEN as a bearer token"}'
                headers = [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]
                await send({"type": "http.response.start", "status": 401, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
