"""The MCP Tasks extension (``io.modelcontextprotocol/tasks``) for aah's human desk.

A client that declares the extension on a ``tools/call`` of ``ask_human`` or
``request_approval`` gets a task handle at once (``resultType: "task"``)
instead of waiting on the call: the task is the request in aah's queue (its
id is the request's id), ``tasks/get`` says where it stands and carries the
tool's result once a person answered (or the deadline's fallback did), and
``tasks/cancel`` withdraws it from the queue. The task lives in the store, so
it outlives the server process and the client's connection.

Built on the SDK's extension interface (``mcp.server.extension``): the SDK
routes the methods, validates their parameters and advertises the extension;
this module says what they answer. The SDK's own task types are those of the
2025-11-25 revision, which it keeps types-only and never dispatches, so the
2026-07-28 shapes (SEP-2663) are declared here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar
from datetime import datetime
from typing import Any, Literal

from mcp import MCPError
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import require_client_extension
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, CallToolRequestParams, Request, RequestParams
from mcp_types import Result as McpResult
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field

from aah.mcp.human_tools import HumanTools, TaskView

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
# The tools whose calls become tasks: both wait on people.
TASK_TOOLS = ("ask_human", "request_approval")
# Tasks are the 2026-07-28 extension's; older wires have no task-shaped tools/call result.
TASK_VERSIONS = frozenset(MODERN_PROTOCOL_VERSIONS)

# Set while a tools/call runs as a task: the tool puts its request in the
# queue, adds the request's id here and returns without waiting.
TASK_CREATED: ContextVar[list[str] | None] = ContextVar("aah_mcp_task_created", default=None)

# Turns what a tool returned into the CallToolResult it sends (the SDK's own conversion).
ResultOf = Callable[[str, Any], Any]


class TaskIdParams(RequestParams):
    """The parameters of ``tasks/get`` and ``tasks/cancel``: which task."""

    task_id: str


class TaskUpdateParams(TaskIdParams):
    """The parameters of ``tasks/update``: responses to a task's input requests."""

    input_responses: dict[str, Any] = Field(default_factory=dict)


class GetTaskRequest(Request[TaskIdParams, Literal["tasks/get"]]):
    """``tasks/get``: where a task stands (and its result, once completed)."""

    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams
    # SEP-2663: the task id rides in the Mcp-Name header, so HTTP routing can follow the task.
    name_param = "taskId"


class CancelTaskRequest(Request[TaskIdParams, Literal["tasks/cancel"]]):
    """``tasks/cancel``: withdraw a task's request."""

    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskIdParams
    name_param = "taskId"


class _TaskState(McpResult):
    """A task's fields as every answer about it carries them."""

    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class CreateTaskResult(_TaskState):
    """The task handle a ``tools/call`` returns in place of its result (``resultType: "task"``)."""

    result_type: Literal["task"] = "task"


class GetTaskResult(_TaskState):
    """What ``tasks/get`` answers: the task, with its result once completed."""

    result_type: str = "complete"
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class DeskTasks(Extension):
    """Serves ``ask_human`` and ``request_approval`` as tasks to clients that declare the extension.

    Args:
        desk: The desk whose queue holds the tasks' requests.
        result_of: What the tool named first sends for the value it returned.
        client_name: The name of the client making a request (from its context).
    """

    identifier = TASKS_EXTENSION

    def __init__(
        self, desk: HumanTools, result_of: ResultOf, client_name: Callable[[Any], str]
    ) -> None:
        self.desk = desk
        self.result_of = result_of
        self.client_name = client_name

    def methods(self) -> Sequence[MethodBinding]:
        """``tasks/get``, ``tasks/update`` and ``tasks/cancel``, on the 2026-07-28 wire."""
        return (
            MethodBinding("tasks/get", TaskIdParams, self._get, TASK_VERSIONS),
            MethodBinding("tasks/update", TaskUpdateParams, self._update, TASK_VERSIONS),
            MethodBinding("tasks/cancel", TaskIdParams, self._cancel, TASK_VERSIONS),
        )

    async def intercept_tool_call(
        self,
        params: CallToolRequestParams,
        ctx: ServerRequestContext[Any, Any],
        call_next: CallNext,
    ) -> HandlerResult:
        """A task handle for a people-tool call from a client that declared tasks; else the call."""
        if params.name not in TASK_TOOLS or not _declares_tasks(ctx):
            return await call_next(ctx)
        created: list[str] = []
        token = TASK_CREATED.set(created)
        try:
            result = await call_next(ctx)
        finally:
            TASK_CREATED.reset(token)
        if not created:
            return result  # the tool refused the call (bad arguments): its error, at once
        view = await self.desk.task_view(created[0], self.client_name(ctx))
        if view is None:  # just created: gone only if the store was swapped under us
            raise MCPError(code=INTERNAL_ERROR, message="the task's request left the store")
        return self._wire(created[0], view, CreateTaskResult)

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> Any:
        require_client_extension(ctx, TASKS_EXTENSION)
        return self._wire(params.task_id, await self._view(ctx, params.task_id), GetTaskResult)

    async def _update(self, ctx: ServerRequestContext[Any, Any], params: TaskUpdateParams) -> Any:
        # aah's tasks never ask the client for input (a person at the desk
        # answers, not the client): any input responses are for no
        # outstanding request, which the extension says to ignore.
        require_client_extension(ctx, TASKS_EXTENSION)
        await self._view(ctx, params.task_id)
        return {}

    async def _cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> Any:
        require_client_extension(ctx, TASKS_EXTENSION)
        view = await self.desk.cancel(params.task_id, self.client_name(ctx))
        if view is None:
            raise _unknown(params.task_id)
        return {}

    async def _view(self, ctx: ServerRequestContext[Any, Any], task_id: str) -> TaskView:
        view = await self.desk.task_view(task_id, self.client_name(ctx))
        if view is None:
            raise _unknown(task_id)
        return view

    def _wire(
        self, task_id: str, view: TaskView, shape: type[CreateTaskResult | GetTaskResult]
    ) -> dict[str, Any]:
        """``view`` as the extension's wire shape ``shape``."""
        fields: dict[str, Any] = {
            "task_id": task_id,
            "status": view.status,
            "status_message": view.message,
            "created_at": _iso(view.created),
            "last_updated_at": _iso(view.updated),
            "poll_interval_ms": max(100, round(self.desk.poll_seconds * 1000)),
        }
        if shape is GetTaskResult and view.status == "completed":
            fields["result"] = self._result(view)
        elif shape is GetTaskResult and view.status == "failed":
            fields["error"] = {"code": INTERNAL_ERROR, "message": view.message}
        wire = shape.model_validate(fields).model_dump(
            by_alias=True, mode="json", exclude_none=True
        )
        # The store keeps every request: no time-to-live (the extension writes that as null).
        wire["ttlMs"] = None
        return wire

    def _result(self, view: TaskView) -> dict[str, Any]:
        """The CallToolResult the tool's call would have returned, as a JSON object."""
        sent = self.result_of(view.tool, view.value)
        dumped: dict[str, Any] = sent.model_dump(by_alias=True, mode="json", exclude_none=True)
        return dumped


def _declares_tasks(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether this request's client declared the tasks extension, on a wire that has it."""
    if ctx.protocol_version not in TASK_VERSIONS:
        return False
    capabilities = ctx.session.client_capabilities
    declared = (capabilities.extensions if capabilities else None) or {}
    return TASKS_EXTENSION in declared


def _unknown(task_id: str) -> MCPError:
    return MCPError(
        code=INVALID_PARAMS,
        message=f"no task {task_id!r}: ask again with the same id to find its request",
    )


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")
