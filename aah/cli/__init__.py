"""The ``aah`` command: flags in, calls out. Each group lives in its own module."""

from __future__ import annotations

import atexit
import gc
import sys

import typer

# Typer vendors its own click (pinned below 0.30 in pyproject); its usage
# errors are these classes, not the ones of a separately installed click.
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError

from aah.cli import bench, data, db, importing, mcp, models, serve, sessions, tools
from aah.cli.bench_run import bench_run
from aah.cli.classify import classify
from aah.cli.demo import demo
from aah.cli.fake_llm import fake_llm
from aah.cli.grade import grade
from aah.cli.output import print_error
from aah.cli.report import report
from aah.cli.run import run
from aah.cli.tui import tui
from aah.cli.web import web
from aah.errors import AahError
from aah.secrets import scrub_console

app = typer.Typer(
    name="aah",
    help="Ask-and-Help: run tool-using LLM agents that know when to ask a person.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(data.app, name="data", help="Get and locate the benchmark data and tool specs.")
app.add_typer(tools.app, name="tools", help="Build, search and probe the tool registry.")
app.add_typer(
    sessions.app, name="sessions", help="List, show, export, resume, cancel and expire sessions."
)
bench.app.command("run")(bench_run)
app.add_typer(bench.app, name="bench", help="Benchmark tasks and batch runs.")
app.add_typer(db.app, name="db", help="Check and maintain session databases (merge shards).")
app.add_typer(
    importing.app,
    name="import",
    help="Import results made elsewhere (the Fail-TaLMs paper's outputs).",
)
app.add_typer(serve.app, name="serve", help="Start a local model server set up for aah.")
app.add_typer(models.app, name="models", help="Check what a model server does with aah's requests.")
app.add_typer(mcp.app, name="mcp", help="aah's human desk for MCP agents (ask_human).")
app.command("run")(run)
app.command("demo")(demo)
app.command("grade")(grade)
app.command("report")(report)
app.command("classify")(classify)
app.command("tui")(tui)
app.command("web")(web)
app.command("fake-llm")(fake_llm)


def _version(value: bool) -> None:
    if value:
        from aah import __version__

        print(f"aah {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """Ask-and-Help: run tool-using LLM agents that know when to ask a person."""


def main() -> None:
    """Entry point: run the app; a user-fixable error is one line, exit status 2.

    Everything the command prints, whoever prints it (a trace, an error
    message that quotes a server's reply, a progress line), goes through the
    one scrubber of ``aah.secrets`` on its way to the terminal.
    """
    scrub_console()
    # The interpreter's exit runs full collections over every object still
    # alive (~150,000 after a bench run, ~0.2 s of CPU) only to free memory
    # the process hands back anyway: frozen objects are left out of them.
    # Every exit handler still runs; only the collector skips what is frozen.
    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)
    try:
        # Not standalone: usage errors come back here instead of being drawn
        # as a boxed panel; --help and typer.Exit come back as an exit status.
        status = app(standalone_mode=False)
    except AahError as exc:
        print_error(str(exc))
        sys.exit(2)
    except UsageError as exc:
        if isinstance(exc, NoArgsIsHelpError):
            sys.exit(exc.exit_code)  # the help is already printed
        print_error(usage_error_message(exc))
        sys.exit(exc.exit_code)
    except ClickException as exc:
        print_error(exc.format_message())
        sys.exit(exc.exit_code)
    except typer.Abort:
        print_error("aborted")
        sys.exit(1)
    sys.exit(status if isinstance(status, int) else 0)


def usage_error_message(exc: UsageError) -> str:
    """A usage error as one line: what was wrong, then where to read the usage."""
    what = exc.format_message().strip().rstrip(".")
    what = what[:1].lower() + what[1:]
    command = exc.ctx.command_path if exc.ctx is not None else "aah"
    return f"{what}; see `{command} --help`"
