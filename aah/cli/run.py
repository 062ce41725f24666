"""``aah run``: one query, answered live by the agent, with a readable trace."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from aah.cli.options import (
    AahOption,
    ApproveMethodsOption,
    ApproveOption,
    ApproveToolsOption,
    AwarenessOption,
    DataOption,
    DbOption,
    DiscoverKOption,
    HumanDeadlineOption,
    McpToolsOption,
    ModelOption,
    OtelOption,
    StepLimitOption,
    ToolModeOption,
    ToolResultTokensOption,
    awareness_mode,
)
from aah.cli.output import console, print_warning
from aah.cli.tools import open_registry
from aah.errors import AahError
from aah.extensions import HTTP_MODE_NAMES, HUMAN_CHANNEL_NAMES, listed
from aah.terminal_text import printable

# Tool names the trace's header shows; the rest are counted.
TRACE_TOOL_NAMES = 20

# Heavy modules (LangChain, LangGraph, openai) load when a command runs, so
# `aah --help` and the light commands start fast.
if TYPE_CHECKING:
    from aah.llm import ModelConfig
    from aah.mcp import McpTools
    from aah.runtime import HumanChannel, SessionOutcome, SessionRequest
    from aah.tools import EndpointSpec
    from aah.tools.registry import Registry


def select_tools(registry: Registry, names: list[str], auto: int, query: str) -> list[EndpointSpec]:
    """The named endpoints plus the ``auto`` best search hits for ``query``."""
    specs = [registry.get(name) for name in names]
    if auto > 0:
        chosen = {spec.qualified_name for spec in specs}
        specs += [
            hit.spec
            for hit in registry.search(query, auto)
            if hit.spec.qualified_name not in chosen
        ]
    return specs


def offered_names(specs: list[EndpointSpec], shown: int = TRACE_TOOL_NAMES) -> str:
    """The trace header's list of tools: the first ``shown`` names, then how many more."""
    names = [spec.qualified_name for spec in specs[:shown]]
    more = f" and {len(specs) - shown:,} more" if len(specs) > shown else ""
    return ", ".join(names) + more if names else "none"


def run(
    query: str = typer.Argument(..., help="The user's request."),
    tool: list[str] = typer.Option([], "--tool", help="Offer this endpoint (repeatable)."),
    auto_tools: int = typer.Option(
        0, "--auto-tools", min=0, help="Also offer the K best search hits."
    ),
    aah: AahOption = None,
    human: str = typer.Option(
        "console", "--human", help=f"Who answers: {listed(HUMAN_CHANNEL_NAMES)}."
    ),
    awareness: AwarenessOption = None,
    http: str = typer.Option("live", "--http", help=f"{listed(HTTP_MODE_NAMES)}."),
    fault: list[str] = typer.Option([], "--fault", help="Fault plan, e.g. TOOL=404 (fault mode)."),
    model: ModelOption = None,
    db: DbOption = None,
    step_limit: StepLimitOption = 10,
    human_deadline: HumanDeadlineOption = None,
    data: DataOption = None,
    tool_result_tokens: ToolResultTokensOption = None,
    tool_mode: ToolModeOption = "native",
    discover: bool | None = typer.Option(
        None,
        "--discover/--no-discover",
        help="Give the agent find_tools to search the registry as it goes "
        "(default: on when no --tool, --auto-tools or --mcp is given).",
    ),
    discover_k: DiscoverKOption = None,
    mcp: list[str] = typer.Option(
        [],
        "--mcp",
        help="Offer an MCP server's tools: 'CMD ARGS' (stdio) or a URL (repeatable).",
    ),
    mcp_tools: McpToolsOption = None,
    approve: ApproveOption = None,
    approve_methods: ApproveMethodsOption = None,
    approve_tools: ApproveToolsOption = None,
    otel: OtelOption = False,
) -> None:
    """Answer one query with the agent, printing each step as it happens."""
    if otel:
        from aah.telemetry import turn_on_export

        turn_on_export()
    from aah.config import get_settings
    from aah.llm import model_config
    from aah.mcp import configured_choice, configured_servers, open_mcp_tools
    from aah.runtime import (
        ChannelOptions,
        SessionRequest,
        ToolFinder,
        choose_tool_mode,
        make_human_channel,
        policy_from_options,
        run_async,
        tool_mode_choice,
    )

    if not query.strip():
        raise AahError("give a query: the user's request, in words")
    choice = tool_mode_choice(tool_mode)
    approvals = policy_from_options(approve, approve_methods, approve_tools or [])
    awareness_choice = awareness_mode(awareness or "both")
    if data is not None:
        from aah.data import find_data_dir

        find_data_dir(data)  # a mistyped --data is an error even when no tool needs it
    db_path = db or get_settings().db
    servers = configured_servers(mcp)
    mcp_choice = configured_choice(mcp_tools or [])
    config = model_config("agent", model=model)  # a missing model is said before any build
    registry = open_registry(data, build_if_missing=True) if tool or auto_tools else None
    specs = select_tools(registry, tool, auto_tools, query) if registry else []
    k = discover_k or get_settings().discover_k
    # With no tool named, the agent finds its own (find_tools), unless told not to.
    discovering = discover if discover is not None else not (tool or auto_tools or servers)
    if discovering and registry is None:
        registry = _discovery_registry(data, asked=discover is True)
    finder = ToolFinder(registry, k) if registry is not None and discovering else None
    mode, _ = run_async(choose_tool_mode(choice, config))
    channel = make_human_channel(human, ChannelOptions(db_path, human_deadline))
    tools = open_mcp_tools(
        servers, http_mode=http, fault_plan=fault or None, offered=specs, choice=mcp_choice
    )
    for note in tools.notes:
        print_warning(note)
    specs += tools.specs
    request = SessionRequest(
        query=query,
        specs=specs,
        aah=aah is not False,
        awareness=awareness_choice,
        step_limit=step_limit,
        tool_result_tokens=tool_result_tokens or get_settings().tool_result_tokens,
        tool_mode=mode,
        finder=finder,
        approvals=approvals,
    )
    offered = offered_names(specs)
    offered += f" + find_tools ({k} per search)" if finder is not None else ""
    console.print(
        f"[bold]query:[/] {escape(printable(query))}\n"
        f"[dim]tools: {escape(offered)} ({mode}); model: {escape(config.model)}[/]",
        markup=True,
        highlight=False,
    )
    try:
        outcome = run_async(_run(request, db_path, config, channel, http, fault, tools))
    finally:
        tools.close()
    _report(outcome)


async def _run(
    request: SessionRequest,
    db: Path,
    config: ModelConfig,
    channel: HumanChannel,
    http: str,
    fault: list[str],
    tools: McpTools,
) -> SessionOutcome:
    from aah.cli.trace import TracePrinter
    from aah.runtime import open_runtime, run_session
    from aah.tools.http import make_executor

    printer = TracePrinter(console)
    # MCP tools, if any, are routed beside the HTTP ones through one executor.
    executor = tools.route(make_executor(http, fault_plan=fault or None)) if tools.active else None
    async with open_runtime(
        db=db,
        model=config,
        human=channel,
        http_mode=http,
        fault_plan=fault or None,
        listeners=[printer],
        executor=executor,
    ) as runtime:
        first = "the model" if request.awareness == "none" else "the model's awareness answer"
        printer.waiting_for(first)
        try:
            return await run_session(request, runtime)
        finally:
            printer.close()


def _discovery_registry(data: Path | None, *, asked: bool) -> Registry | None:
    """The registry find_tools searches; None, with a note, where there is none to build.

    Raises:
        AahError: ``--discover`` was asked for and no registry can be had.
    """
    try:
        return open_registry(data, build_if_missing=True)
    except AahError as exc:
        if asked:
            raise
        print_warning(f"find_tools is off: {exc}")
        return None


def _report(outcome: SessionOutcome) -> None:
    console.print(f"[dim]session {outcome.session_id}: {outcome.status}[/]")
    if outcome.error:
        raise AahError(outcome.error)
