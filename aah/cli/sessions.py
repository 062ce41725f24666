"""``aah sessions``: list recorded sessions, show or export them, resume, cancel or expire them."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from aah.cli.options import (
    DbOption,
    ForceOption,
    JsonOption,
    ModelOption,
    OtelOption,
    WideOption,
)
from aah.cli.output import (
    check_output_name,
    console,
    err_console,
    one_line,
    print_json,
    print_line,
    print_table,
    table,
    write_output,
)
from aah.errors import AahError

if TYPE_CHECKING:
    from aah.events import ErrorEvent
    from aah.runtime import SessionOutcome
    from aah.store import SessionStore

app = typer.Typer(no_args_is_help=True)

# Without --all, `aah sessions list` shows the newest ones and counts the rest.
LIST_NEWEST = 20


def open_store(db: Path | None) -> SessionStore:
    """The session store at ``db`` (or the configured one); it must exist."""
    from aah.config import get_settings
    from aah.store import SessionStore

    path = db or get_settings().db
    if not path.exists() and not path.is_symlink():
        raise AahError(f"no session database at {path}: run a session first or pass --db")
    return SessionStore(path)


@app.command("list")
def list_sessions(
    run: str | None = typer.Option(None, "--run", help="Only this run's sessions."),
    status: str | None = typer.Option(None, "--status", help="Only sessions in this status."),
    db: DbOption = None,
    show_all: bool = typer.Option(
        False, "--all", help=f"List every session (default: the newest {LIST_NEWEST})."
    ),
    as_json: JsonOption = False,
    wide: WideOption = False,
) -> None:
    """List sessions, oldest first: the newest ones, with counts of all by status.

    With --json, every session.
    """
    with open_store(db) as store:
        every = store.list_sessions(run=run, status=status)  # type: ignore[arg-type]
    if as_json:
        print_json([s.model_dump(mode="json") for s in every])
        return
    sessions = every if show_all else every[-LIST_NEWEST:]
    rows = (
        [
            s.id[:8],
            s.run or "",
            s.task_id or "",
            s.status,
            s.info_awareness or "",
            s.tool_awareness or "",
            s.n_tool_calls,
            s.n_human_questions,
            one_line(s.query),
        ]
        for s in sessions
    )
    columns = ["id", "run", "task", "status", "info", "tool", "calls", "asked", "query"]
    shown = f"{len(every)} sessions" if show_all else f"the newest {len(sessions)} sessions"
    print_table(table(shown, columns, rows, compact=True), wide=wide)
    if len(sessions) < len(every):
        counts: dict[str, int] = {}
        for s in every:
            counts[s.status] = counts.get(s.status, 0) + 1
        by_status = ", ".join(f"{n} {name}" for name, n in sorted(counts.items()))
        console.print(
            f"{len(every)} sessions in all ({by_status}); --all lists every one, "
            "--run/--status narrow the list",
            style="dim",
            markup=False,
            highlight=False,
        )


@app.command()
def show(
    session_id: str = typer.Argument(..., help="Session id (a unique prefix is enough)."),
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show one session's steps as a trace."""
    with open_store(db) as store:
        matches = [s for s in store.list_sessions() if s.id.startswith(session_id)]
        if len(matches) != 1:
            found = "no session" if not matches else f"{len(matches)} sessions"
            raise AahError(f"{found} with id {session_id!r}: see `aah sessions list`")
        session = matches[0]
        events = store.events(session.id)
        run = store.get_run(session.run) if session.run is not None else None
    from aah.telemetry import trace_id_of, trace_url

    trace_id = trace_id_of(session, run)
    link = trace_url(trace_id)
    if as_json:
        print_json(
            {
                "session": session.model_dump(mode="json"),
                "trace_id": trace_id,
                "trace_url": link,
                "events": [e.model_dump(mode="json") for e in events],
            }
        )
        return
    console.print(f"[bold]{session.id}[/] {session.status}", highlight=False)
    console.print(f"query: {session.query}", markup=False)
    console.print(f"trace: {trace_id}", markup=False, highlight=False)
    if link:
        console.print(f"trace link: {link}", markup=False, highlight=False, overflow="ignore")
    from aah.cli.trace import TracePrinter

    printer = TracePrinter(console)
    for event in events:
        printer(event)


@app.command()
def export(
    session_ids: list[str] | None = typer.Argument(
        None, help="Session ids (unique prefixes); none: every session, or --run's."
    ),
    otlp: Path | None = typer.Option(
        None, "--otlp", help="Write the sessions' spans as OTLP JSON to this new file (-: stdout)."
    ),
    run: str | None = typer.Option(None, "--run", help="Only this run's sessions."),
    db: DbOption = None,
    force: ForceOption = False,
    tau2: Path | None = typer.Option(
        None, "--tau2", help="Write τ² simulations in τ²'s own results format (-: stdout)."
    ),
) -> None:
    """Write recorded sessions as OpenTelemetry spans (OTLP JSON), for runs made without --otel.

    Message content goes in only with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true;
    whatever goes in passes the secret scrubber. An existing file is replaced only with --force.
    """
    import json

    from aah import __version__
    from aah.telemetry import otlp_json, stored_spans

    if (otlp is None) == (tau2 is None):
        raise AahError("name one file to write: --otlp FILE or --tau2 FILE")
    if tau2 is not None:
        _export_tau2(session_ids or [], tau2, run, db, force)
        return
    assert otlp is not None
    check_output_name(otlp, force=force, option="--otlp")
    with open_store(db) as store:
        every = store.list_sessions(run=run)
        chosen = every
        if session_ids:
            chosen = []
            for wanted in session_ids:
                found = [s for s in every if s.id.startswith(wanted)]
                if len(found) != 1:
                    what = "no session" if not found else f"{len(found)} sessions"
                    raise AahError(f"{what} with id {wanted!r}: see `aah sessions list`")
                chosen += found
        spans = stored_spans(store, chosen)
    text = json.dumps(otlp_json(spans, __version__), ensure_ascii=False)
    to_stdout = write_output(otlp, text + "\n", force=force, option="--otlp")
    traces = len({span.trace_id for span in spans})
    where = "standard output" if to_stdout else str(otlp)
    print_line(
        f"wrote {len(spans)} spans of {len(chosen)} sessions ({traces} traces) to {where}",
        to=err_console if to_stdout else console,
    )


def _export_tau2(
    session_ids: list[str], out: Path, run: str | None, db: Path | None, force: bool
) -> None:
    """``export --tau2``: ended τ² simulations in τ²'s ``Results`` format (through the registry)."""
    from aah.benchmark import get_benchmark

    export = get_benchmark("tau2").export
    assert export is not None  # τ² has its results format
    check_output_name(out, force=force, option="--tau2")
    with open_store(db) as store:
        every = store.list_sessions(run=run)
        chosen = [s for s in every if any(s.id.startswith(w) for w in session_ids)]
        text, count = export.results_json(store, chosen if session_ids else every)
    to_stdout = write_output(out, text + "\n", force=force, option="--tau2")
    where = "standard output" if to_stdout else str(out)
    print_line(f"wrote {count} {export.noun} to {where}", to=err_console if to_stdout else console)


@app.command()
def resume(
    session_id: str = typer.Argument(..., help="Session id (a unique prefix is enough)."),
    db: DbOption = None,
    model: ModelOption = None,
    otel: OtelOption = False,
) -> None:
    """Resume a waiting or unfinished session from its checkpoint (with its own model).

    An answer given while nothing ran is handed to the agent; a question still
    unanswered goes back to waiting in the queue.
    """
    if otel:
        from aah.telemetry import turn_on_export

        turn_on_export()
    from aah.cli.run import _report
    from aah.cli.trace import TracePrinter
    from aah.llm import model_config
    from aah.runtime import ScriptedHuman, open_runtime, resume_request, run_async, run_session

    with open_store(db) as store:
        resumable = resume_request(store, session_id)
    config = model_config("agent", model=model or resumable.session.model)
    console.print(f"[dim]resuming session {resumable.session.id}[/]", highlight=False)

    async def go() -> SessionOutcome:
        async with open_runtime(
            db=store.path,
            model=config,
            # The request brings its own queue; the runtime's is never asked.
            human=ScriptedHuman([]),
            http_mode=resumable.http_mode,
            listeners=[TracePrinter(console)],
        ) as runtime:
            return await run_session(resumable.request, runtime)

    _report(run_async(go()))


@app.command()
def cancel(
    session_id: str = typer.Argument(..., help="Session id (a unique prefix is enough)."),
    db: DbOption = None,
) -> None:
    """Cancel an unfinished session: its waiting question leaves the queue."""
    from aah.runtime import find_session

    with open_store(db) as store:
        session = find_session(store, session_id)
        if not store.cancel_session(session.id, [_cancel_event(session.id, "aah sessions cancel")]):
            raise AahError(f"session {session.id} is {session.status}: only unfinished ones cancel")
    console.print(f"cancelled session {session.id}", highlight=False)


@app.command()
def expire(
    older_than: str = typer.Option(..., "--older-than", help="Idle time, e.g. 90s, 30m, 2h or 1d."),
    db: DbOption = None,
) -> None:
    """Cancel the running or waiting sessions whose last step is older than --older-than.

    For runs that nobody will resume: their questions leave the queue.
    """
    cutoff = datetime.now(UTC) - parse_age(older_than)
    cancelled = 0
    with open_store(db) as store:
        for session in store.idle_sessions(cutoff):
            event = _cancel_event(session.id, f"aah sessions expire --older-than {older_than}")
            cancelled += store.cancel_session(session.id, [event])
    noun = "session" if cancelled == 1 else "sessions"
    console.print(f"expired {cancelled} {noun} idle for more than {older_than}", highlight=False)


_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_age(text: str) -> timedelta:
    """``"2h"`` → two hours: a number and one of s, m, h, d.

    Raises:
        AahError: ``text`` is not such an age.
    """
    found = _AGE.match(text.lower())
    if found is None:
        raise AahError(f"--older-than {text!r}: give a number and a unit, e.g. 90s, 30m, 2h, 1d")
    return timedelta(seconds=float(found[1]) * _UNIT_SECONDS[found[2]])


def _cancel_event(session_id: str, by: str) -> ErrorEvent:
    from aah.events import ErrorEvent

    return ErrorEvent(session_id=session_id, message=f"cancelled by {by}", where="cancelled")
