"""``aah import``: bring results made elsewhere into the session database."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from aah.cli.options import DbOption, JsonOption
from aah.cli.output import (
    err_console,
    print_error,
    print_json,
    print_line,
    print_warning,
)
from aah.errors import AahError

if TYPE_CHECKING:
    from aah.benchmark.failtalms import ImportProgress, ImportSummary

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
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Import the paper's published answers as runs named published:<model folder>.

    Every record is imported and counted, odd ones too (see the warnings);
    a file that cannot be read is named, and the others still import.
    Importing again adds nothing; `aah report` then shows them beside your runs.
    """
    from aah.benchmark.failtalms import import_failtalms_outputs
    from aah.config import get_settings
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
                "counts": {run: counts.to_json() for run, counts in summary.counts.items()},
                "unreadable": [
                    {"path": str(file.path), "reason": file.reason} for file in summary.unreadable
                ],
                "warnings": summary.warnings,
            }
        )
        _fail_on_unreadable(summary)
        return
    print_line(
        f"{summary.sessions_added} sessions imported, {summary.sessions_present} already "
        f"present, from {summary.files} files into {len(summary.runs)} runs "
        f"({len(summary.runs_added)} new)"
    )
    for run in summary.runs:
        counts = summary.counts[run]
        print_line(
            f"  {run}: {counts.records} records, all counted; repeated query_id "
            f"{counts.duplicates}, odd {counts.anomalous}"
        )
    _fail_on_unreadable(summary)


def _fail_on_unreadable(summary: ImportSummary) -> None:
    """Name each file that could not be read, then fail so that scripts notice."""
    for file in summary.unreadable:
        print_error(file.reason)
    if summary.unreadable:
        count = len(summary.unreadable)
        raise AahError(
            f"{count} of {count + summary.files} answer files could not be read (named above): "
            "fix or remove them and import again; the other files are imported"
        )


@contextmanager
def _progress_bar(enabled: bool) -> Iterator[ImportProgress]:
    """A rich bar on stderr, fed with (answers done, answers in all)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

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
