"""``aah sessions``: list recorded sessions and show one step by step."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from aah.cli.output import console, print_json, print_table, table
from aah.errors import AahError

if TYPE_CHECKING:
    from aah.store import SessionStore

app = typer.Typer(no_args_is_help=True)

DbOption = typer.Option(None, "--db", help="Session database (default AAH_DB).")


def open_store(db: Path | None) -> SessionStore:
    """The session store at ``db`` (or the configured one); it must exist."""
    from aah.config import get_settings
    from aah.store import SessionStore

    path = db or get_settings().db
    if not path.is_file():
        raise AahError(f"no session database at {path}: run a session first or pass --db")
    return SessionStore(path)


@app.command("list")
def list_sessions(
    run: str | None = typer.Option(None, "--run", help="Only this run's sessions."),
    status: str | None = typer.Option(None, "--status", help="Only sessions in this status."),
    db: Path | None = DbOption,
    as_json: bool = typer.Option(False, "--json", help="Print JSON for scripts."),
) -> None:
    """List sessions, oldest first."""
    with open_store(db) as store:
        sessions = store.list_sessions(run=run, status=status)  # type: ignore[arg-type]
    if as_json:
        print_json([s.model_dump(mode="json") for s in sessions])
        return
    rows = (
        [
            s.id[:12],
            s.run or "",
            s.task_id or "",
            s.status,
            s.info_awareness or "",
            s.tool_awareness or "",
            s.n_tool_calls,
            s.n_human_questions,
            s.query[:60],
        ]
        for s in sessions
    )
    columns = ["id", "run", "task", "status", "info", "tool", "calls", "asked", "query"]
    print_table(table(f"{len(sessions)} sessions", columns, rows))


@app.command()
def show(
    session_id: str = typer.Argument(..., help="Session id (a unique prefix is enough)."),
    db: Path | None = DbOption,
    as_json: bool = typer.Option(False, "--json", help="Print JSON for scripts."),
) -> None:
    """Show one session's steps as a trace."""
    with open_store(db) as store:
        matches = [s for s in store.list_sessions() if s.id.startswith(session_id)]
        if len(matches) != 1:
            found = "no session" if not matches else f"{len(matches)} sessions"
            raise AahError(f"{found} with id {session_id!r}: see `aah sessions list`")
        session = matches[0]
        events = store.events(session.id)
    if as_json:
        print_json(
            {
                "session": session.model_dump(mode="json"),
                "events": [e.model_dump(mode="json") for e in events],
            }
        )
        return
    console.print(f"[bold]{session.id}[/] {session.status}", highlight=False)
    console.print(f"query: {session.query}", markup=False)
    from aah.cli.trace import TracePrinter

    printer = TracePrinter(console)
    for event in events:
        printer(event)
