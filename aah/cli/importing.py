"""``aah import``: bring results made elsewhere into the session database."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from aah.cli.output import console, err_console, print_json, print_warning
from aah.config import get_settings

if TYPE_CHECKING:
    from aah.scoring.imports import ImportProgress

app = typer.Typer(
    help="Import results made elsewhere (the Fail-TaLMs paper's outputs).",
    no_args_is_help=True,
)


@app.command("failtalms-outputs")
def failtalms_outputs(
    folder: Annotated[
        Path,
        typer.Argument(help="The Fail-TaLMs outputs folder (<Setting>/<model>/answers.json)."),
    ],
    db: Annotated[
        Path | None, typer.Option("--db", help="Session database (default AAH_DB).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Import the paper's published answers as runs named published:<model folder>.

    Importing again adds nothing; `aah report` then shows them beside your runs.
    """
    from aah.scoring.imports import import_failtalms_outputs
    from aah.store import SessionStore

    with SessionStore(db or get_settings().db) as store, _progress_bar(not as_json) as progress:
        summary = import_failtalms_outputs(folder, store, progress)
    for warning in summary.warnings:
        print_warning(warning)
    if as_json:
        print_json(
            {
                "runs": summary.runs,
                "runs_added": summary.runs_added,
                "files": summary.files,
                "sessions_added": summary.sessions_added,
                "sessions_present": summary.sessions_present,
                "warnings": summary.warnings,
            }
        )
        return
    console.print(
        f"{summary.sessions_added} sessions imported, {summary.sessions_present} already "
        f"present, from {summary.files} files into {len(summary.runs)} runs "
        f"({len(summary.runs_added)} new)",
        highlight=False,
    )
    for run in summary.runs:
        console.print(f"  {escape(run)}", highlight=False)


@contextmanager
def _progress_bar(enabled: bool) -> Iterator[ImportProgress]:
    """A rich bar on stderr, fed with (answers done, answers in all)."""
    bar = Progress(
        TextColumn("importing answers"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err_console,
        disable=not enabled,
        transient=True,
    )
    task = bar.add_task("import", total=None)

    def on_answer(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    with bar:
        yield on_answer
