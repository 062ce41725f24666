"""``aah tools``: build the registry, list, show, search and probe endpoints."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from aah.cli.options import (
    ConcurrencyOption,
    DataOption,
    JsonOption,
    McpToolsOption,
    WideOption,
)
from aah.cli.output import (
    console,
    err_console,
    one_line,
    print_json,
    print_line,
    print_table,
    print_warning,
    table,
)
from aah.errors import AahError

if TYPE_CHECKING:
    from aah.tools import EndpointSpec
    from aah.tools.registry import BuildReport, Registry

app = typer.Typer(no_args_is_help=True)


def open_registry(data: Path | None = None, *, build_if_missing: bool = False) -> Registry:
    """The registry named by ``AAH_REGISTRY`` or the default path (``aah.tools.registry``).

    With ``build_if_missing`` a missing registry is built first, with a line saying so.

    Raises:
        AahError: ``data`` names no data directory.
    """
    from aah.tools.registry import open_registry as open_or_build

    return open_or_build(
        data,
        build_if_missing=build_if_missing,
        on_build=lambda: err_console.print("[dim]building the tool registry (once)…[/]"),
    )


@app.command()
def build(
    data: DataOption = None,
    strict: bool = typer.Option(False, "--strict", help="Fail if any endpoint is rejected."),
    max_spec_mb: float = typer.Option(
        20.0,
        "--max-spec-mb",
        min=0.001,
        help="Reject, unread, any spec or tool file larger than this many MB.",
    ),
    as_json: JsonOption = False,
    wide: WideOption = False,
) -> None:
    """Import every spec source and compile the registry (SQLite + FTS5 + search vectors).

    A source file that cannot be read (over the size cap, not UTF-8,
    malformed, nesting or expanding out of bounds) is one rejected entry
    naming it; the rest still build.
    """
    from aah.config import get_settings, project_root
    from aah.data import find_data_dir
    from aah.tools.registry import build_registry

    data_dir = find_data_dir(data)
    fixes = project_root() / "tool_registry" / "fixes.yaml"
    max_bytes = int(max_spec_mb * 1_000_000)
    report = build_registry(
        data_dir, get_settings().registry_path(), fixes, max_spec_bytes=max_bytes
    )
    if as_json:
        print_json(_report_json(report))
    else:
        _print_report(report, wide)
    if strict and report.rejections:
        raise typer.Exit(1)


def _report_json(report: BuildReport) -> dict[str, object]:
    return {
        "registry": str(report.path),
        "endpoints": report.endpoints,
        "by_source": report.by_source,
        "by_category": report.by_category,
        "repairs": report.repairs,
        "fixes_applied": report.fixes_applied,
        "rejections": [r.model_dump(mode="json") for r in report.rejections],
        "registry_hash": report.registry_hash,
        "seconds": round(report.seconds, 3),
        "embedding_model": report.embedding_model,
        "vector_seconds": round(report.vector_seconds, 3),
    }


def _print_report(report: BuildReport, wide: bool) -> None:
    sources = sorted(report.by_source.items())
    print_table(table("Endpoints per source", ["source", "endpoints"], sources), wide=wide)
    categories = report.by_category.items()
    print_table(table("Endpoints per category", ["category", "endpoints"], categories), wide=wide)
    if report.fixes_applied:
        fixes = ([f] for f in report.fixes_applied)
        print_table(table("Project fixes applied", ["fix"], fixes), wide=wide)
    if report.rejections:
        # One whole line per rejection, never a table cell that cuts the
        # file name: a script or a person can grep for the file.
        console.print("[bold]Rejected entries[/] (source:file entry: reason)")
    for rejection in report.rejections:
        entry = f" {rejection.name}" if rejection.name else ""
        where = f"{rejection.source.kind}:{rejection.source.file}{entry}"
        print_line(f"  {where}: {rejection.reason}")
    console.print(
        f"[bold]{report.endpoints}[/] endpoints ({report.repairs} source defects repaired, "
        f"{len(report.rejections)} rejected) in {report.seconds:.2f} s → {report.path}"
    )
    if report.embedding_model:
        print_line(f"search vectors: {report.embedding_model} ({report.vector_seconds:.1f} s)")
    else:
        print_line("search: BM25 alone (install the [retrieval] extra for hybrid search)")


@app.command("list")
def list_tools(
    category: str | None = typer.Option(None, "--category", "-c", help="Only this category."),
    data: DataOption = None,
    as_json: JsonOption = False,
    wide: WideOption = False,
) -> None:
    """List endpoints, or the categories with counts when none is chosen."""
    registry = open_registry(data, build_if_missing=True)
    if category is None and not as_json:
        categories = registry.categories().items()
        print_table(table("Categories", ["category", "endpoints"], categories), wide=wide)
        console.print("Use --category NAME to list one category's endpoints.")
        return
    specs = registry.endpoints(category)
    if category is not None and not specs:
        known = ", ".join(registry.categories())
        raise AahError(f"no category {category!r}: choose one of {known}")
    if as_json:
        print_json([_summary(spec) for spec in specs])
        return
    rows = ([s.qualified_name, s.method, one_line(s.description)] for s in specs)
    columns = ["name", "method", "description"]
    # The registry's own spelling of the category, not what was typed.
    title = f"{specs[0].category if category else 'All endpoints'} ({len(specs)})"
    print_table(table(title, columns, rows, compact=True), wide=wide)


@app.command()
def show(
    name: str = typer.Argument(..., help="Qualified name <tool>__<endpoint>."),
    data: DataOption = None,
    as_json: JsonOption = False,
    wide: WideOption = False,
) -> None:
    """Show one endpoint's full spec."""
    spec = open_registry(data, build_if_missing=True).get(name)
    if as_json:
        print_json(spec.model_dump(mode="json"))
        return
    console.print(
        f"[bold]{spec.qualified_name}[/]  {spec.method} {spec.url_template}",
        markup=True,
        highlight=False,
    )
    console.print(spec.description, markup=False)
    rows = (
        [
            p.name,
            p.type,
            p.location.value,
            "yes" if p.required else "",
            p.default,
            one_line(p.description),
        ]
        for p in spec.parameters
    )
    columns = ["name", "type", "in", "required", "default", "about"]
    print_table(table("Parameters", columns, rows, compact=True, wrap=True), wide=wide)
    if spec.repairs:
        print_table(table("Repairs", ["repair"], ([r] for r in spec.repairs)), wide=wide)
    console.print(f"source: {spec.source.kind} {spec.source.file} ({spec.source.id})", markup=False)


# The query as a search's title repeats it: the whole of a short one, the start of a long one.
_TITLE_QUERY_CHARS = 120
# Names of an MCP server's added tools that `add-mcp` lists; the rest are counted.
_ADDED_NAMES_SHOWN = 20


@app.command()
def search(
    query: str = typer.Argument(..., help="What the tool should do, in words."),
    k: int = typer.Option(10, "-k", min=1, help="How many results."),
    data: DataOption = None,
    as_json: JsonOption = False,
    wide: WideOption = False,
) -> None:
    """Find the endpoints that best match a query."""
    from aah.config import get_settings
    from aah.event_text import clip

    if not query.strip():
        raise AahError("give a query: what the tool should do, in words")
    registry = open_registry(data, build_if_missing=True)
    hits = registry.search(query, k)
    if as_json:
        print_json(
            [
                {
                    **_summary(h.spec),
                    "score": round(h.score, 4),
                    "bm25_rank": h.bm25_rank,
                    "dense_rank": h.dense_rank,
                    "late_rank": h.late_rank,
                    "matched": {part: list(words) for part, words in h.matched},
                }
                for h in hits
            ]
        )
        return
    rows = (
        [
            h.spec.qualified_name,
            "; ".join(f"{part}: {', '.join(words)}" for part, words in h.matched) or "-",
            "-" if h.dense_rank is None else str(h.dense_rank),
            one_line(h.spec.description),
        ]
        for h in hits
    )
    if registry.hybrid:
        how = "BM25 + dense"
    elif registry.vectors_missing:
        how = "BM25 only: this registry has no vectors; `aah tools build` adds them"
    elif get_settings().retrieval == "bm25":
        how = "BM25 only: AAH_RETRIEVAL=bm25"
    else:
        how = "BM25 only (no [retrieval] extra)"
    columns = ["name", "matched words (where)", "dense rank", "description"]
    title = f"Best matches for {clip(query, _TITLE_QUERY_CHARS)!r} ({how})"
    print_table(table(title, columns, rows, compact=True, wrap=True), wide=wide)


@app.command()
def check(
    sample: int | None = typer.Option(None, "--sample", help="Probe N endpoints at random."),
    tool: list[str] = typer.Option([], "--tool", help="Probe these endpoints (repeatable)."),
    concurrency: ConcurrencyOption = 8,
    timeout: float = typer.Option(5.0, "--timeout", help="Seconds per probe."),
    seed: int = typer.Option(0, "--seed", help="Seed for --sample."),
    data: DataOption = None,
    as_json: JsonOption = False,
    wide: WideOption = False,
) -> None:
    """Probe endpoints live with their parameter defaults: up, down, latency."""
    from aah.tools.registry import probe_endpoints

    registry = open_registry(data, build_if_missing=True)
    # MCP tools are not HTTP endpoints: a probe of theirs could only fail.
    specs = (
        [registry.get(name) for name in tool]
        if tool
        else [spec for spec in registry.endpoints() if spec.source.kind != "mcp"]
    )
    if sample is not None and not tool:
        import random

        specs = random.Random(seed).sample(specs, min(sample, len(specs)))
    results = probe_endpoints(specs, concurrency=concurrency, timeout=timeout)
    if as_json:
        print_json([r._asdict() for r in results])
        return
    rows = (
        [r.name, r.state, r.status or "", f"{r.latency_ms:.0f}" if r.latency_ms else "", r.detail]
        for r in results
    )
    columns = ["name", "state", "status", "ms", "detail"]
    print_table(table("Endpoint health", columns, rows, compact=True), wide=wide)
    counts: dict[str, int] = {}
    for r in results:
        counts[r.state] = counts.get(r.state, 0) + 1
    console.print(", ".join(f"{state}: {n}" for state, n in sorted(counts.items())))


@app.command("add-mcp")
def add_mcp(
    name: str = typer.Argument(..., help="The server's name: its tools become NAME__tool."),
    command: list[str] = typer.Argument(
        ..., help="After --: the command that starts it (stdio), or its URL (streamable HTTP)."
    ),
    mcp_tools: McpToolsOption = None,
    data: DataOption = None,
) -> None:
    """Record an MCP server's tools in the registry, searchable beside the HTTP endpoints."""
    import shlex

    from aah.config import get_settings, project_root
    from aah.data import find_data_dir
    from aah.mcp import (
        MAX_REGISTRY_TOOLS,
        McpConnections,
        McpFailure,
        configured_choice,
        parse_server,
        read_tool_specs,
        require_sdk,
    )
    from aah.tools.registry import Registry, build_registry, save_added

    require_sdk()
    server = parse_server(shlex.join(command) if len(command) > 1 else command[0], name=name)
    choice = configured_choice(mcp_tools or [])
    settings = get_settings()
    connections = McpConnections(
        start_timeout=settings.mcp_start_timeout, call_timeout=settings.mcp_timeout
    )
    try:
        listing = connections.read_tools(server, choice, cap=MAX_REGISTRY_TOOLS)
    except McpFailure as exc:
        raise AahError(f"{exc}: nothing was added") from None
    finally:
        connections.close()
    specs, notes = read_tool_specs(server, listing.tools)
    for note in [*listing.notes, *notes]:
        print_warning(note)
    if not specs:
        raise AahError(f"MCP server {server.name} offers no tools: nothing was added")
    path = settings.registry_path()
    # The registry is built again (about a second), so the new tools are indexed
    # by the same search as the rest, and every later build keeps them.
    data_dir = find_data_dir(data)
    save_added(path, server.name, specs)
    report = build_registry(data_dir, path, project_root() / "tool_registry" / "fixes.yaml")
    registry = Registry(path)
    try:
        kept = [s.qualified_name for s in specs if s.qualified_name in registry]
    finally:
        registry.close()
    shown = ", ".join(kept[:_ADDED_NAMES_SHOWN])
    if len(kept) > _ADDED_NAMES_SHOWN:
        shown += f" and {len(kept) - _ADDED_NAMES_SHOWN:,} more"
    console.print(
        f"added {len(kept)} tools of MCP server {server.name} to {path} "
        f"({report.endpoints} in all): {shown}",
        markup=False,
        highlight=False,
    )


def _summary(spec: EndpointSpec) -> dict[str, object]:
    return {
        "name": spec.qualified_name,
        "category": spec.category,
        "method": spec.method,
        "url": spec.url_template,
        "description": spec.description,
        "required": spec.required_names,
    }
