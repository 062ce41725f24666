"""MCP both ways: MCP servers' tools as aah tools, and aah's human desk for MCP agents.

Needs the ``mcp`` extra (``pip install 'aah[mcp]'``); the SDK is imported only
when a server is started, so everything else runs without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.mcp.connections import McpConnections, McpFailure, McpReply, require_sdk
    from aah.mcp.executor import McpExecutor, ToolRouter, reply_result
    from aah.mcp.gate import MessageBounds
    from aah.mcp.human_tools import (
        CANCELLED_ANSWER,
        CANCELLED_BY,
        ApprovalAsk,
        HumanTools,
        Question,
        TaskView,
    )
    from aah.mcp.intake import Screened, screen_message
    from aah.mcp.listing import MAX_REGISTRY_TOOLS, MAX_TOOLS, ToolChoice, ToolListing
    from aah.mcp.recording import McpRecording, default_recording_path
    from aah.mcp.schema import ToolSpecs, read_tool_specs, shown_name, tool_spec, tool_specs
    from aah.mcp.serve import BearerGuard, build_desk_server, serve_http
    from aah.mcp.serve_transports import IntakeGuard, serve_stdio
    from aah.mcp.servers import McpServer, is_mcp_spec, parse_server, server_of, unique_names
    from aah.mcp.tasks import (
        TASKS_EXTENSION,
        CancelTaskRequest,
        CreateTaskResult,
        DeskTasks,
        GetTaskRequest,
        GetTaskResult,
        TaskIdParams,
    )
    from aah.mcp.tools import McpTools, configured_choice, configured_servers, open_mcp_tools

__all__ = [
    "MAX_REGISTRY_TOOLS",
    "MAX_TOOLS",
    "ToolChoice",
    "ToolListing",
    "ToolSpecs",
    "configured_choice",
    "read_tool_specs",
    "shown_name",
    "CANCELLED_ANSWER",
    "CANCELLED_BY",
    "TASKS_EXTENSION",
    "ApprovalAsk",
    "CancelTaskRequest",
    "CreateTaskResult",
    "DeskTasks",
    "GetTaskRequest",
    "GetTaskResult",
    "TaskIdParams",
    "TaskView",
    "BearerGuard",
    "IntakeGuard",
    "Screened",
    "screen_message",
    "serve_http",
    "serve_stdio",
    "HumanTools",
    "Question",
    "build_desk_server",
    "McpConnections",
    "McpExecutor",
    "McpFailure",
    "McpRecording",
    "McpReply",
    "McpServer",
    "McpTools",
    "MessageBounds",
    "ToolRouter",
    "configured_servers",
    "default_recording_path",
    "is_mcp_spec",
    "open_mcp_tools",
    "parse_server",
    "reply_result",
    "require_sdk",
    "server_of",
    "tool_spec",
    "tool_specs",
    "unique_names",
]

_WHERE = {
    "MAX_REGISTRY_TOOLS": "aah.mcp.listing",
    "MAX_TOOLS": "aah.mcp.listing",
    "ToolChoice": "aah.mcp.listing",
    "ToolListing": "aah.mcp.listing",
    "ToolSpecs": "aah.mcp.schema",
    "configured_choice": "aah.mcp.tools",
    "read_tool_specs": "aah.mcp.schema",
    "shown_name": "aah.mcp.schema",
    "CANCELLED_ANSWER": "aah.mcp.human_tools",
    "CANCELLED_BY": "aah.mcp.human_tools",
    "TaskView": "aah.mcp.human_tools",
    "TASKS_EXTENSION": "aah.mcp.tasks",
    "CancelTaskRequest": "aah.mcp.tasks",
    "CreateTaskResult": "aah.mcp.tasks",
    "DeskTasks": "aah.mcp.tasks",
    "GetTaskRequest": "aah.mcp.tasks",
    "GetTaskResult": "aah.mcp.tasks",
    "TaskIdParams": "aah.mcp.tasks",
    "ApprovalAsk": "aah.mcp.human_tools",
    "BearerGuard": "aah.mcp.serve",
    "serve_http": "aah.mcp.serve",
    "serve_stdio": "aah.mcp.serve_transports",
    "IntakeGuard": "aah.mcp.serve_transports",
    "Screened": "aah.mcp.intake",
    "screen_message": "aah.mcp.intake",
    "HumanTools": "aah.mcp.human_tools",
    "Question": "aah.mcp.human_tools",
    "build_desk_server": "aah.mcp.serve",
    "McpConnections": "aah.mcp.connections",
    "McpFailure": "aah.mcp.connections",
    "MessageBounds": "aah.mcp.gate",
    "McpReply": "aah.mcp.connections",
    "require_sdk": "aah.mcp.connections",
    "McpExecutor": "aah.mcp.executor",
    "ToolRouter": "aah.mcp.executor",
    "reply_result": "aah.mcp.executor",
    "McpRecording": "aah.mcp.recording",
    "default_recording_path": "aah.mcp.recording",
    "tool_spec": "aah.mcp.schema",
    "tool_specs": "aah.mcp.schema",
    "McpServer": "aah.mcp.servers",
    "is_mcp_spec": "aah.mcp.servers",
    "parse_server": "aah.mcp.servers",
    "server_of": "aah.mcp.servers",
    "unique_names": "aah.mcp.servers",
    "McpTools": "aah.mcp.tools",
    "configured_servers": "aah.mcp.tools",
    "open_mcp_tools": "aah.mcp.tools",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
