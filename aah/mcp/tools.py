"""Opening a run's MCP servers: their tools as specs, and the executor that calls them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aah.config import get_settings
from aah.errors import AahError
from aah.extensions import listed
from aah.mcp.connections import McpConnections, McpFailure, require_sdk
from aah.mcp.executor import McpExecutor, ToolRouter
from aah.mcp.listing import ToolChoice, ToolListing
from aah.mcp.recording import McpRecording, default_recording_path
from aah.mcp.schema import ToolSpecs, read_tool_specs
from aah.mcp.servers import McpServer, is_mcp_spec, parse_server, unique_names
from aah.tools import EndpointSpec
from aah.tools.http import (
    BASE_HTTP_MODES,
    HTTP_MODES,
    Executor,
    FaultExecutor,
    FaultPlan,
    make_executor,
)


@dataclass
class McpTools:
    """A run's MCP side: the servers' tools and the executor for them.

    Use :func:`open_mcp_tools`; :meth:`route` joins it with the HTTP executor.
    """

    specs: list[EndpointSpec]
    executor: Executor
    servers: list[McpServer] = field(default_factory=list)
    active: bool = True
    notes: list[str] = field(default_factory=list)
    _owned: list[Executor] = field(default_factory=list)

    def route(self, http: Executor) -> ToolRouter:
        """One executor for the run: MCP specs here, every other spec to ``http``."""
        return ToolRouter(http, self.executor)

    def close(self) -> None:
        """Stop the servers and close the recording (again is harmless)."""
        for executor in self._owned:
            executor.close()

    def __enter__(self) -> McpTools:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def configured_servers(values: Sequence[str]) -> list[McpServer]:
    """The servers of ``--mcp`` values after those of the ``AAH_MCP`` setting, named uniquely."""
    texts = [*get_settings().mcp, *values]
    return unique_names([parse_server(text) for text in texts])


def configured_choice(patterns: Sequence[str]) -> ToolChoice:
    """The tools to take: ``--mcp-tools`` patterns after those of the ``AAH_MCP_TOOLS`` setting.

    Raises:
        AahError: a pattern is empty.
    """
    chosen = [*get_settings().mcp_tools, *patterns]
    if any(not pattern.strip() for pattern in chosen):
        raise AahError(
            "an empty --mcp-tools pattern chooses no tool: give a glob on the names the agent "
            "sees, e.g. --mcp-tools 'github__*issue*' (one server) or '*search*' (every server)"
        )
    return ToolChoice(tuple(pattern.strip() for pattern in chosen))


def open_mcp_tools(
    servers: Sequence[McpServer],
    *,
    http_mode: str = "live",
    fault_plan: str | Sequence[str] | None = None,
    base_mode: str = "mock",
    offered: Sequence[EndpointSpec] = (),
    recording_path: Path | None = None,
    choice: ToolChoice | None = None,
) -> McpTools:
    """Start ``servers`` (or open their recording) and list their tools.

    The result holds them open until it is closed (or left, as a context manager).

    Args:
        servers: The servers whose tools the agent is offered.
        http_mode: The run's mode; MCP tools follow it (``replay`` starts no server).
        fault_plan: Which tools fail and how, in ``fault`` mode (MCP tools included).
        base_mode: How tools outside the fault plan are answered.
        offered: Specs from elsewhere (the registry) that may be MCP tools too.
        recording_path: The record/replay file (default: beside the HTTP recordings).
        choice: Which of the servers' tools to take (``--mcp-tools``); at most
            :data:`~aah.mcp.listing.MAX_TOOLS` of each server's are taken.

    Raises:
        AahError: the SDK is missing, a server did not start or list its
            tools, or nothing was recorded to replay.
    """
    if not servers and not any(is_mcp_spec(spec) for spec in offered):
        return McpTools([], make_executor("mock"), active=False)
    require_sdk()
    choose_mode = http_mode if http_mode != "fault" else base_mode
    if http_mode not in HTTP_MODES or (http_mode == "fault" and base_mode not in BASE_HTTP_MODES):
        raise AahError(f"bad HTTP mode {choose_mode!r}: use one of {listed(HTTP_MODES)}")
    settings = get_settings()
    connections: McpConnections | None = None
    recording: McpRecording | None = None
    if choose_mode in ("record", "replay"):
        path = recording_path or default_recording_path()
        recording = McpRecording(path, replay=choose_mode == "replay")
    if choose_mode != "replay":
        connections = McpConnections(
            start_timeout=settings.mcp_start_timeout, call_timeout=settings.mcp_timeout
        )
    live = McpExecutor(
        mode=choose_mode if choose_mode != "mock" else "live",
        connections=connections,
        recording=recording,
        max_bytes=settings.http_max_bytes,
    )
    executor: Executor = live if choose_mode != "mock" else make_executor("mock")
    try:
        specs: list[EndpointSpec] = []
        notes: list[str] = []
        for server in servers:
            taken = _listed(server, connections, recording, choice or ToolChoice())
            specs += taken.specs
            notes += taken.notes
        if http_mode == "fault":
            plan = FaultPlan.parse(fault_plan or [])
            executor = FaultExecutor(
                plan, executor, timeout=settings.mcp_timeout, max_bytes=settings.http_max_bytes
            )
    except BaseException:
        live.close()
        raise
    owned: list[Executor] = [live] if executor is live else [live, executor]
    return McpTools(specs, executor, list(servers), notes=notes, _owned=owned)


def _listed(
    server: McpServer,
    connections: McpConnections | None,
    recording: McpRecording | None,
    choice: ToolChoice,
) -> ToolSpecs:
    if connections is None:
        assert recording is not None
        # A recording from before the bounds, or written by hand, is held to them too.
        listing = ToolListing(server.name, choice)
        recorded = recording.tools(server.name)
        listing.add_page([str(tool.get("name") or "") for tool in recorded], recorded.__getitem__)
    else:
        try:
            listing = connections.read_tools(server, choice)
        except McpFailure as exc:
            raise AahError(f"{exc} (check the command with --mcp, or leave it out)") from None
        except TimeoutError:
            raise AahError(f"MCP server {server.name} did not list its tools in time") from None
        if recording is not None:
            recording.save_tools(server.name, listing.tools)
    made = read_tool_specs(server, listing.tools)
    if not made.specs:
        chosen = " that --mcp-tools chooses" if choice.patterns and listing.offered else ""
        raise AahError(
            f"MCP server {server.name} offers no tools{chosen}: nothing to give the agent"
            + (f" ({listing.notes[0]})" if listing.notes else "")
        )
    return ToolSpecs(made.specs, [*listing.notes, *made.notes])
