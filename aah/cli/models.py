"""``aah models check``: what the configured model server does with aah's requests."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import typer

from aah.cli.options import JsonOption, ModelOption, WideOption
from aah.cli.output import print_json, print_line, print_table, print_warning, table
from aah.errors import AahError

if TYPE_CHECKING:
    from aah.llm import Role

app = typer.Typer(no_args_is_help=True)

ROLES = ("agent", "grader", "human", "judge")


@app.command("check")
def check(
    role: str = typer.Option("agent", "--role", help="agent, grader, human or judge."),
    model: ModelOption = None,
    overflow: bool | None = typer.Option(
        None,
        "--overflow-probe/--no-overflow-probe",
        help="Send a too-long prompt to learn the context length "
        "(default: only for a server on this machine or network).",
    ),
    json_output: JsonOption = False,
    wide: WideOption = False,
) -> None:
    """Probe the role's model server and say what aah will do about what it finds.

    Exits 1 when the server cannot be reached, or when the agent's model
    never sees its tools (a run would fail, or measure a model without tools).
    """
    import asyncio

    from aah.config import get_settings
    from aah.llm import model_config, probe_server

    if role not in ROLES:
        raise AahError(f"unknown role {role!r}: use one of {', '.join(ROLES)}")
    config = model_config(cast("Role", role), get_settings(), model)
    report = asyncio.run(probe_server(config, overflow_probe=overflow))
    if json_output:
        print_json(report.model_dump())
    else:
        print_line(f"{role} model {report.model} at {report.base_url}")
        rows = [(line.check, line.result, line.action) for line in report.lines()]
        print_table(table(None, ("check", "result", "what aah does"), rows, wrap=True), wide=wide)
        for line in report.lines():
            if line.warning:
                # The table above says what was found (cut to the terminal);
                # the warning says what to do, and why a run cannot start.
                said = f"{report.error}; " if not report.reachable else ""
                print_warning(f"{line.check}: {said}{line.action}")
    if not report.reachable or (role == "agent" and not report.tools_usable):
        raise typer.Exit(1)
