"""The options several commands share: each declared once, with one meaning.

A command takes one as ``db: DbOption = None``; the name, type, help and
checks come from here, so ``--db`` reads the same in every ``--help``.
``tests/test_cli_options.py`` walks the whole app and fails when one option
name is declared two ways, unless ``PER_COMMAND`` says why it differs there.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from aah.db_url import parse_location
from aah.errors import AahError

if TYPE_CHECKING:
    from aah.events import AwarenessMode

# Parsed by aah, not click: a PostgreSQL URL stays whole (a DatabaseURL, never a
# folder ``postgresql:``), and a database aah cannot read is reported by the
# store's own one-line error (StoreFileError), which names the file and the fix.
DbOption = Annotated[
    Path | None,
    typer.Option(
        "--db",
        parser=parse_location,
        help="Session database: an SQLite file or postgresql://USER@HOST/DB (default AAH_DB).",
    ),
]
DataOption = Annotated[
    Path | None,
    typer.Option("--data", help="Data directory (default: found as `aah data where` shows)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
WideOption = Annotated[
    bool,
    typer.Option(
        "--wide", help="Print tables whole, however wide (default: fit them to the terminal)."
    ),
]
ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="Model name (default: the command's role's setting, AAH_MODEL for the agent).",
    ),
]
RunOption = Annotated[str, typer.Option("--run", help="The run, by name.")]
ConcurrencyOption = Annotated[
    int, typer.Option("--concurrency", min=1, help="Sessions or requests in flight at once.")
]
WorkersOption = Annotated[
    str,
    typer.Option(
        "--workers",
        help="Processes that share the run, each with its share of --concurrency "
        "(a number, or auto: one per core).",
    ),
]
RayOption = Annotated[
    str | None,
    typer.Option(
        "--ray",
        help="Run the workers as actors on a Ray cluster: auto (the one this machine "
        "joined) or its address; the store must be PostgreSQL (the ray extra).",
    ),
]
StepLimitOption = Annotated[
    int, typer.Option("--step-limit", min=1, help="Most model steps per session.")
]
ToolModeOption = Annotated[
    str,
    typer.Option("--tool-mode", help="native, prompt (tools described in the prompt) or auto."),
]
ToolResultTokensOption = Annotated[
    int | None,
    typer.Option(
        "--tool-result-tokens",
        min=1,
        help="Tokens of each tool result the model reads (default AAH_TOOL_RESULT_TOKENS, 2000).",
    ),
]
AahOption = Annotated[
    bool | None,
    typer.Option(
        "--aah/--no-aah",
        help="Offer the ask_human tool "
        "(default: on; bench run: the benchmark's, off for BFCL and τ²).",
    ),
]
AwarenessOption = Annotated[
    str | None,
    typer.Option(
        "--awareness",
        help="The awareness questions asked before acting: info, tool, both or none "
        "(default: both; When2Call: none; Fail-TaLMs: its setting's).",
    ),
]


def _deadline_seconds(value: float | None) -> float | None:
    """A deadline as the bounds allow it (finite, positive, at most 30 days), else a usage error."""
    from aah.bounds import OutOfBounds, check_seconds

    try:
        return None if value is None else check_seconds(value, "the deadline")
    except OutOfBounds as exc:
        raise typer.BadParameter(str(exc)) from None


# --deadline was `aah run`'s name for it: kept so old commands still work.
HumanDeadlineOption = Annotated[
    float | None,
    typer.Option(
        "--human-deadline",
        "--deadline",
        callback=_deadline_seconds,
        help="Queue: seconds to wait for a person (at most 30 days), then 'I don't know'.",
    ),
]
OtelOption = Annotated[
    bool,
    typer.Option(
        "--otel",
        help="Export OpenTelemetry traces over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT "
        "(default: on when that is set; needs the otel extra).",
    ),
]
HostOption = Annotated[
    str, typer.Option("--host", help="Address to listen on (0.0.0.0: every network).")
]
ForceOption = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Replace the file if it exists (a symbolic link is replaced, never written through).",
    ),
]
FromOption = Annotated[
    Path | None, typer.Option("--from", help="A local copy of the data, instead of downloading.")
]
EnvFileOption = Annotated[
    Path | None,
    typer.Option(
        "--env-file", help="Also write the AAH_* settings to this file (NAME=value lines)."
    ),
]

ApproveOption = Annotated[
    Path | None,
    typer.Option("--approve", help="Approval policy file (YAML): calls a person must approve."),
]
ApproveMethodsOption = Annotated[
    str | None,
    typer.Option(
        "--approve-methods", help="Calls with these HTTP methods need approval, e.g. POST,PUT."
    ),
]
ApproveToolsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--approve-tools", help="Calls of tools matching this glob need approval (repeatable)."
    ),
]
McpToolsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--mcp-tools",
        help="Take only the MCP tools matching this glob (repeatable): 'NAME__*issue*' for "
        "one server, '*search*' for every one (default AAH_MCP_TOOLS; at most 128 a server).",
    ),
]
DiscoverKOption = Annotated[
    int | None,
    typer.Option(
        "--discover-k",
        min=1,
        max=50,
        help="Endpoints one find_tools call returns (default AAH_DISCOVER_K, 5).",
    ),
]

# Option names that mean something of their own in one command, and why; the
# test holds every other use of a name to one declaration.
PER_COMMAND: dict[tuple[str, str], str] = {
    ("--model", "serve llamacpp"): "a .gguf file to serve, not a model name",
    ("--run", "report"): "several runs, repeatable",
    ("--run", "sessions list"): "an optional filter",
    ("--run", "sessions export"): "an optional filter",
    ("--port", "web"): "each server has its own default port",
    ("--port", "fake-llm"): "each server has its own default port",
    ("--discover", "run"): "on by default when no tool is named (--no-discover turns it off)",
    ("--port", "mcp serve"): "optional: without it the desk serves stdio",
    ("--out", "report"): "the file each command writes",
    ("--out", "classify"): "the file each command writes",
    ("--out", "data manifest"): "the file each command writes",
    ("--timeout", "tools check"): "seconds per probe",
    ("--timeout", "serve llamacpp"): "a server's own load time",
    ("--timeout", "serve vllm"): "a server's own load time",
    ("--tool", "run"): "endpoints to offer the agent",
    ("--tool", "tools check"): "endpoints to probe",
    ("--human", "run"): "a live person: console or queue",
    ("--human", "bench run"): "batch people: oracle, simulated or queue",
    ("--http", "run"): "live by default, and fault plans",
    ("--http", "bench run"): "mock by default: benchmark tools are not called",
    ("--votes", "grade"): "grader votes, a majority of 5",
    ("--votes", "classify"): "judge votes, 1 unless asked",
    ("--judge", "classify"): "which labeller: rule or llm",
    ("--judge", "bench run"): "When2Call: add the LLM judge's labels",
    ("--category", "tools list"): "a tool category",
    ("--category", "bench run"): "BFCL test categories",
    ("--seed", "tools check"): "the sample's seed",
    ("--seed", "bench run"): "the seed sent to the model",
    ("--setting", "bench data"): "repeatable filter",
    ("--setting", "bench run"): "a comma list or all",
}

AWARENESS_MODES = ("info", "tool", "both", "none")


def awareness_mode(value: str) -> AwarenessMode:
    """Validate an ``--awareness`` value.

    Raises:
        AahError: not one of info, tool, both or none.
    """
    if value not in AWARENESS_MODES:
        raise AahError(
            f"unknown awareness mode {value!r}: use info, tool, both or none "
            "(`--awareness both` is what a bare `--awareness` used to ask)"
        )
    return value  # type: ignore[return-value]


ReviewersOption = Annotated[
    int | None,
    typer.Option(
        "--reviewers",
        min=0,
        help="Reviewers per answered item of the run, each blind to the others (default 1).",
    ),
]
GuidelinesOption = Annotated[
    Path | None,
    typer.Option(
        "--guidelines",
        help="A Markdown file shown beside every item of the run, in the web page and aah tui.",
    ),
]
AssignOption = Annotated[
    list[str],
    typer.Option(
        "--assign",
        help="Offer the run's items only to these people or @groups (repeatable, or a, b).",
    ),
]
TeamMemberOption = Annotated[
    list[str],
    typer.Option(
        "--reviewer",
        help="Give this person the reviewer role (repeatable); NAME:GROUP adds their group.",
    ),
]
GroupMemberOption = Annotated[
    list[str],
    typer.Option(
        "--group",
        help="Put a person in a group, NAME:GROUP (repeatable); assign the group as @GROUP.",
    ),
]
