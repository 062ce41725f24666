"""SessionStore: the SQLite file that records runs, sessions, events and humans.

It is the single source of truth and the bus between processes: a runner
appends events and writes human requests, a web page in another process
reads them and writes answers. Hence WAL mode (readers never wait for the
writer), a busy timeout, and write transactions that take SQLite's write
lock up front (``BEGIN IMMEDIATE``) so that writers queue instead of failing.

The store is composed of parts that share one ``StoreConnection`` (a
connection per thread, one write at a time): runs, sessions, events and
grades are written here, human requests by ``HumanRequests``; scoring reads
many sessions at once through ``SessionQueries`` (``queries()``).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar, cast

from aah.clock import SYSTEM_CLOCK, Clock
from aah.config import get_settings
from aah.db_url import is_database_url, parse_location
from aah.events import Event, HumanQuestionEvent
from aah.store import schema as schema
from aah.store.approvals import ApprovalStep, ApprovedRuns, approval_steps
from aah.store.asking import AskReadings
from aah.store.connection import StoreConnection
from aah.store.drivers import SessionDrivers
from aah.store.elicitations import ElicitationStep, elicitation_steps
from aah.store.file_errors import StoreFileError
from aah.store.grouped import GroupingThread, Steps, Then
from aah.store.humans import HumanRequests
from aah.store.off_loop import on_thread
from aah.store.queries import SessionQueries
from aah.store.schema import (
    REDACTED,
    GradeFlagReason,
    GradeRecord,
    HumanAnswerRecord,
    HumanRequestRecord,
    RunRecord,
    SessionRecord,
    SessionStatus,
    Verdict,
    scrub,
)
from aah.store.sqlite_db import Database
from aah.store.team import Team
from aah.store.writes import (
    SentEvents,
    insert_events,
    needs_exclusive,
    read_later,
    send_events,
)

__all__ = [
    "REDACTED",
    "GradeRecord",
    "HumanAnswerRecord",
    "HumanRequestRecord",
    "RunRecord",
    "SessionRecord",
    "SessionStatus",
    "SessionStore",
    "Verdict",
    "scrub",
]

_now = schema.now_text
_T = TypeVar("_T")
# The columns of an event row, and the query of one session's events.
_EVENT_ROW = ("session_id", "seq", "kind", "ts", "payload")
_EVENTS_SQL = f"SELECT {', '.join(_EVENT_ROW)} FROM events WHERE session_id = ?"
# Every column a SessionRecord holds: not the resume recipe (the session's
# tools, whole), which only ``session_recipe`` reads.
_SESSION_COLUMNS = ", ".join(SessionRecord.model_fields)


class SessionStore:
    """Runs, sessions, their events, human requests and grades in one SQLite file.

    Safe to share across threads and asyncio tasks, and to use from several
    processes on one file. From async code, go through ``call``: on a
    PostgreSQL database every call waits for the server, and ``call`` makes
    it wait on the store's own thread, not on the event loop.

    Args:
        path: The database file, or a PostgreSQL URL (``postgresql://...``,
            the ``postgres`` extra); default ``get_settings().db``
            (``AAH_DB``). Missing parent folders of a file are created.
        clock: What "now" is for human requests: their claims' leases, their
            deadlines, when they were asked and answered (a test passes a
            ``FakeClock`` and moves it instead of sleeping).

    Raises:
        StoreFileError: The file cannot be used (damaged, another program's,
            written by a newer aah, a directory, unreadable); any method
            raises it where the file fails later (a damaged page, a full disk).
    """

    def __init__(self, path: Path | str | None = None, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock
        self.path = parse_location(path) if path is not None else get_settings().db
        try:
            if not is_database_url(self.path):  # a server's database has no folder
                self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a file where a folder should be, a folder it may not write
            raise StoreFileError(
                f"cannot make the folder of {self.path} ({exc.strerror}: {exc.filename})",
                "pass a --db in a folder this user may write",
                self.path,
            ) from exc
        self._connection = StoreConnection(self.path)
        #: The questions, approvals and elicitations for people, their claims and answers.
        self.humans = HumanRequests(self._connection, clock)
        #: Approved calls' runs, recorded as they start (never sent twice).
        self.approved = ApprovedRuns(self._connection)
        #: Roles, assignments, a run's reviewers and guidelines, and reviews.
        self.team = Team(self._connection, clock)
        #: How each question reads against its task's blockers (science.md §8).
        self.ask_readings = AskReadings(self._connection)
        self._threads: GroupingThread | None = None
        self._threads_guard = threading.Lock()
        self._drivers = SessionDrivers(self.path)

    def move_wal_in_background(self) -> None:
        """SQLite: copy the WAL into the file on a thread, not in a commit (``StoreConnection``).

        For a process whose event loop commits: the copy and its fsync would
        hold the loop up 5-10 ms every thousand pages.
        """
        self._connection.move_wal_in_background()

    def thread_connection(self) -> Database:
        """The calling thread's connection (a PostgreSQL store: its pool).

        For the checkpointer that writes into the same SQLite file: sharing
        the connection keeps each one's page cache from being dropped by
        the other's commits.
        """
        return self._connection.db()

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def take_session(self, session_id: str) -> bool:
        """Hold ``session_id`` as the one process that runs it now (``aah.store.drivers``).

        False, at once, when another process (or another run in this one)
        holds it. A crashed holder's hold ends with it.
        """
        return self._drivers.take(session_id)

    def let_go_session(self, session_id: str) -> None:
        """End this store's hold on ``session_id``: another process may run it now."""
        self._drivers.let_go(session_id)

    def close(self) -> None:
        """Close the connections this store opened, in every thread (its session holds end)."""
        if self._threads is not None:
            self._threads.shutdown(wait=True)
            self._threads = None
        self._drivers.close()
        self._connection.close()

    async def call(self, method: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
        """``method`` (one of this store's) called from async code, without holding the loop up.

        On a PostgreSQL database each call waits for the server's replies:
        it runs on the store's own thread, in the order calls come, and the
        event loop goes on meanwhile. The writes a session makes as it
        runs (``open_session``, ``set_status``, ``log_question``,
        ``resume_waiting``, ``end_session``) that wait there together
        commit together, a round trip per step for all of them (see
        ``aah.store.grouped``). An SQLite file answers in microseconds,
        sooner than a thread could take the call and give it back: the call
        runs inline. A caller cancelled while its call runs waits for it,
        so that what it writes next comes after; one cancelled while its
        call waits in the queue takes it out.
        """
        if self._connection.engine != "postgresql":
            return method(*args, **kwargs)
        with self._threads_guard:
            if self._threads is None:
                self._threads = GroupingThread("aah-store")
            threads = self._threads
        stepped = _STEPPED.get(getattr(method, "__name__", ""))
        if stepped is not None and getattr(method, "__self__", None) is self:
            # A write that may commit with others waiting at the same time.
            return await on_thread(threads, stepped(self, *args, **kwargs))
        return await on_thread(threads, method, *args, **kwargs)

    def queries(self) -> SessionQueries:
        """Read-only bulk queries over this file, on a connection of their own.

        Use it as a context manager; it closes its connection on exit.
        """
        return SessionQueries(self.path)

    @contextmanager
    def _write(self, *, exclusive: bool = True) -> Iterator[Database]:
        """One write transaction of this thread's connection (``write_transaction``).

        On PostgreSQL, ``exclusive=False`` runs it beside other writers: for
        a write that decides nothing on what it reads and touches only its
        own session's rows, the row locks it takes keep the log in order.
        """
        with self._connection.write(exclusive=exclusive) as db:
            yield db

    def _rows(
        self, sql: str, params: list[Any] | dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        return self._connection.rows(sql, params)

    # -- runs and sessions ------------------------------------------------

    def create_run(self, name: str, manifest: Mapping[str, Any]) -> RunRecord:
        """Record a batch run and its manifest (models, settings, versions...).

        A run that exists already is returned unchanged: its first manifest
        is what a resumed run is checked against.
        """
        with self._write() as db:
            db.execute(
                "INSERT INTO runs (name, created, manifest) VALUES (?, ?, ?)"
                " ON CONFLICT (name) DO NOTHING",
                [name, _now(), schema.to_json(manifest)],
            )
            return self._run(name)

    def get_run(self, name: str) -> RunRecord | None:
        """The run called ``name``, or None."""
        rows = self._rows("SELECT * FROM runs WHERE name = ?", [name])
        return schema.run_from_row(rows[0]) if rows else None

    def runs(self) -> list[RunRecord]:
        """Every run, oldest first."""
        rows = self._rows("SELECT * FROM runs ORDER BY created, name")
        return [schema.run_from_row(row) for row in rows]

    def _run(self, name: str) -> RunRecord:
        run = self.get_run(name)
        if run is None:
            raise KeyError(f"no run named {name!r}: call create_run first")
        return run

    def open_session(
        self,
        query: str,
        *,
        run: str | None = None,
        task_id: str | None = None,
        setting: str | None = None,
        aah: bool = True,
        model: str | None = None,
        session_id: str | None = None,
        thread_id: str | None = None,
        recipe: Mapping[str, Any] | None = None,
    ) -> SessionRecord:
        """Start a session, or return the one the run already has for the task.

        Args:
            query: The user's request.
            run: The batch run it belongs to (made first with ``create_run``).
            task_id: The benchmark task; with ``run`` it names the session.
            setting: The task's setting (perfect, under-specified...).
            aah: Whether the agent may ask a human.
            model: The agent's model.
            session_id: The id to give a new session; random by default.
            thread_id: The LangGraph checkpointer thread; the session id by default.
            recipe: What resuming the session in another process needs (see
                ``session_recipe``); stored when the session is new.

        Raises:
            KeyError: ``run`` names no run.
        """
        return self._open_steps(
            query,
            run=run,
            task_id=task_id,
            setting=setting,
            aah=aah,
            model=model,
            session_id=session_id,
            thread_id=thread_id,
            recipe=recipe,
        )()

    def _open_steps(
        self,
        query: str,
        *,
        run: str | None = None,
        task_id: str | None = None,
        setting: str | None = None,
        aah: bool = True,
        model: str | None = None,
        session_id: str | None = None,
        thread_id: str | None = None,
        recipe: Mapping[str, Any] | None = None,
    ) -> Steps[SessionRecord]:
        """``open_session`` as ``Steps``."""
        new_id = session_id or uuid.uuid4().hex

        def send(db: Database) -> Callable[[], SessionRecord]:
            # A new row, or the one a unique key already holds: nothing to
            # queue for. The row is written only where its run exists, and
            # read back in the same transaction: on PostgreSQL one round trip.
            db.execute(
                "INSERT INTO sessions (id, run, task_id, setting, query, aah, model,"
                " thread_id, started, recipe) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?"
                " WHERE CAST(? AS TEXT) IS NULL OR EXISTS (SELECT 1 FROM runs WHERE name = ?)"
                " ON CONFLICT DO NOTHING",
                [new_id, run, task_id, setting, schema.scrub_text(query), int(aah), model]
                + [thread_id or new_id, _now(), schema.to_json(recipe or {}), run, run],
            )
            if run is not None and task_id is not None:
                # A (run, task) that exists already wins over the new row.
                where, key = "run = ? AND task_id = ?", [run, task_id]
            else:
                where, key = "id = ?", [new_id]
            found = read_later(
                db.execute(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE {where}", key)
            )

            def opened() -> SessionRecord:
                row = found.fetchone()
                if row is None:
                    raise KeyError(f"no run named {run!r}: call create_run first")
                fields = dict(zip(SessionRecord.model_fields, row, strict=True))
                return SessionRecord.model_validate(fields)

            return opened

        return Steps(self._connection, send, exclusive=False)

    def set_status(
        self, session_id: str, status: SessionStatus, events: Sequence[Event] = ()
    ) -> list[Event]:
        """Mark a session running or waiting (for a person), logging ``events`` with it.

        The events and the status change are one transaction. Returns the
        events as stored.

        Raises:
            KeyError: No such session.
        """
        return self._status_steps(session_id, status, events)()

    def _status_steps(
        self, session_id: str, status: SessionStatus, events: Sequence[Event] = ()
    ) -> Steps[list[Event]]:
        """``set_status`` as ``Steps``."""
        # Between running and waiting no request leaves or joins the queue
        # (the triggers that keep ``closed_requests`` do nothing): unless an
        # event is logged once per request, the session's row lock suffices.
        exclusive = status not in schema.LIVE_STATUSES or needs_exclusive(events)

        def send(db: Database) -> Callable[[], list[Event]]:
            # Read after the commit: on PostgreSQL the whole write is one round
            # trip. Without the session nothing is written (its events bump no row).
            sql = "UPDATE sessions SET status = ? WHERE id = ?"
            return _stored_if_any(
                session_id,
                read_later(db.execute(sql, [status, session_id])),
                send_events(db, events),
            )

        return Steps(self._connection, send, exclusive=exclusive)

    def log_question(
        self, question: HumanQuestionEvent, held: Sequence[Event] = ()
    ) -> tuple[list[Event], list[Event]]:
        """Move a session to waiting on ``question``, logged after the ``held`` events.

        A question logged already (asked before a restart) is not logged
        again; the held events are. Returns the session's events before
        this call, and the events stored by it.

        Raises:
            KeyError: No such session.
        """
        return self._question_steps(question, held)()

    def _question_steps(
        self, question: HumanQuestionEvent, held: Sequence[Event] = ()
    ) -> Steps[tuple[list[Event], list[Event]]]:
        """``log_question`` as ``Steps``: the log is read and the question sent at once.

        The question needs no check of its own: ``send_events`` leaves out
        one its request has logged already.
        """
        waiting = self._status_steps(question.session_id, "waiting", [*held, question])

        def send(db: Database) -> Callable[[], tuple[list[Event], list[Event]]]:
            rows = read_later(db.execute(f"{_EVENTS_SQL} ORDER BY seq", [question.session_id]))
            stored = cast(Callable[[], list[Event]], waiting.first(db))  # one step

            def logged() -> tuple[list[Event], list[Event]]:
                known = [
                    schema.event_from_row(dict(zip(_EVENT_ROW, row, strict=True)))
                    for row in rows.fetchall()
                ]
                return known, stored()

            return logged

        return Steps(self._connection, send, exclusive=waiting.exclusive)

    def resume_waiting(self, session_id: str, events: Sequence[Event] = ()) -> list[Event] | None:
        """Move a ``waiting`` session back to ``running`` with ``events``, if it still waits.

        The one step that hands a person's answer to the agent: when two
        processes resume the same session (its runner and ``aah sessions
        resume``), only the first goes on. Returns the events as stored, or
        None, writing nothing, when the session no longer waits (resumed
        elsewhere, cancelled, ended).
        """
        return self._resume_steps(session_id, events)()

    def _resume_steps(
        self, session_id: str, events: Sequence[Event] = ()
    ) -> Steps[list[Event] | None]:
        """``resume_waiting`` as ``Steps``: whether it still waits decides what is written."""

        def resume(db: Database) -> Then:
            cursor = db.execute(
                "UPDATE sessions SET status = 'running' WHERE id = ? AND status = 'waiting'",
                [session_id],
            )

            def log(db: Database) -> Callable[[], list[Event] | None]:
                if cursor.rowcount == 0:
                    return lambda: None
                return send_events(db, events).stored

            return Then(log)

        return Steps(self._connection, resume, exclusive=True)

    def finish_session(
        self,
        session_id: str,
        status: SessionStatus = "finished",
        final_answer: str | None = None,
    ) -> SessionRecord:
        """End a session: ``finished``, ``skipped`` (awareness said no) or ``error``.

        Raises:
            KeyError: No such session.
        """
        self.end_session(session_id, status, final_answer)
        return self._session(session_id)

    def end_session(
        self,
        session_id: str,
        status: SessionStatus,
        final_answer: str | None,
        events: Sequence[Event] = (),
    ) -> list[Event]:
        """Log a session's last ``events`` and end it, in one transaction.

        A crash thus never leaves a final answer logged on a session that
        still looks unfinished (and would be run again). Returns the events
        as stored.

        Raises:
            KeyError: No such session.
        """
        return self._end_steps(session_id, status, final_answer, events)()

    def _end_steps(
        self,
        session_id: str,
        status: SessionStatus,
        final_answer: str | None,
        events: Sequence[Event] = (),
    ) -> Steps[list[Event]]:
        """``end_session`` as ``Steps``."""

        def send(db: Database) -> Callable[[], list[Event]]:
            ended = db.execute(
                "UPDATE sessions SET status = ?, final_answer = ?, ended = ? WHERE id = ?",
                [status, schema.scrub_text(final_answer), _now(), session_id],
            )
            return _stored_if_any(session_id, read_later(ended), send_events(db, events))

        return Steps(self._connection, send, exclusive=True)

    def session_recipe(self, session_id: str) -> dict[str, Any]:
        """What resuming the session needs, as its driver stored it (empty if nothing).

        Raises:
            KeyError: No such session.
        """
        rows = self._rows("SELECT recipe FROM sessions WHERE id = ?", [session_id])
        if not rows:
            raise KeyError(f"no session {session_id!r}")
        recipe: dict[str, Any] = json.loads(rows[0]["recipe"])
        return recipe

    def cancel_session(self, session_id: str, events: Sequence[Event] = ()) -> bool:
        """End an unfinished session as ``cancelled``, logging ``events`` with it.

        Its pending questions leave every queue (they join on the session's
        status). Returns False when the session had already finished,
        been skipped or been cancelled; an ``error`` session can be cancelled.

        Raises:
            KeyError: No such session.
        """
        with self._write() as db:
            schema.require_session(db, session_id)
            cursor = db.execute(
                "UPDATE sessions SET status = 'cancelled', ended = ? WHERE id = ?"
                " AND status IN ('running', 'waiting', 'error')",
                [_now(), session_id],
            )
            if cursor.rowcount == 0:
                return False
            insert_events(db, events)
        return True

    def idle_sessions(self, before: datetime) -> list[SessionRecord]:
        """Running or waiting sessions whose last event (or start) is older than ``before``."""
        rows = self._rows(
            f"SELECT {_SESSION_COLUMNS} FROM sessions AS s WHERE s.status IN ('running', 'waiting')"
            " AND COALESCE((SELECT max(ts) FROM events WHERE session_id = s.id), s.started) < ?"
            " ORDER BY s.started, s.id",
            [before.isoformat()],
        )
        return [SessionRecord.model_validate(row) for row in rows]

    def get_session(self, session_id: str) -> SessionRecord | None:
        """The session with this id, if there is one."""
        rows = self._rows(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", [session_id])
        return SessionRecord.model_validate(rows[0]) if rows else None

    def _session(self, session_id: str) -> SessionRecord:
        session = self.get_session(session_id)
        if session is None:
            raise KeyError(f"no session {session_id!r}")
        return session

    def list_sessions(
        self, run: str | None = None, status: SessionStatus | None = None
    ) -> list[SessionRecord]:
        """Sessions, oldest first, optionally only one run's or one status's."""
        # Only the filters asked for, so that SQLite can use their indexes.
        filters = {"run": run, "status": status}
        where = " AND ".join(
            f"{column} = :{column}" for column, v in filters.items() if v is not None
        )
        rows = self._rows(
            f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE {where or 'TRUE'} ORDER BY started, id",
            filters,
        )
        return [SessionRecord.model_validate(row) for row in rows]

    # -- events -------------------------------------------------------------

    def append_event(self, event: Event) -> Event:
        """Log ``event`` as its session's next step; return it with its ``seq``.

        A question or answer whose human request already has one logged is
        not logged again; it comes back as given (``seq`` 0).

        Raises:
            KeyError: The event's session does not exist.
        """
        stored = self.append_events([event])
        return stored[0] if stored else event

    def append_events(self, events: Sequence[Event]) -> list[Event]:
        """Log ``events`` in order, in one transaction; return those logged, with their seqs.

        Raises:
            KeyError: A session does not exist.
        """
        with self._write(exclusive=needs_exclusive(events)) as db:
            return insert_events(db, events)

    def events(self, session_id: str, after: int = 0) -> list[Event]:
        """A session's events in order, as typed models; only those after seq ``after``."""
        rows = self._rows(f"{_EVENTS_SQL} AND seq > ? ORDER BY seq", [session_id, after])
        return [schema.event_from_row(row) for row in rows]

    # -- grades -------------------------------------------------------------

    def add_grade(
        self,
        session_id: str,
        grader_model: str,
        prompt_version: str,
        votes: list[Any],
        verdict: Verdict,
        flagged: bool = False,
        flag: GradeFlagReason | None = None,
    ) -> GradeRecord:
        """Record a grader's verdict on a session and every vote behind it.

        ``flag`` says why a flagged verdict is flagged (``no_quorum`` or ``tie``).
        """
        with self._write() as db:
            schema.require_session(db, session_id)
            grade_id = db.execute(
                "INSERT INTO grades (session_id, grader_model, prompt_version, votes, verdict,"
                " flagged, created, flag) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                [session_id, grader_model, prompt_version, schema.to_json(votes), verdict]
                + [int(flagged), _now(), flag if flagged else None],
            ).fetchone()[0]
            return schema.grade_from_row(
                self._rows("SELECT * FROM grades WHERE id = ?", [grade_id])[0]
            )

    def add_grades(
        self,
        grader_model: str,
        prompt_version: str,
        grades: Sequence[tuple[str, list[Any], Verdict]],
    ) -> int:
        """Record one grader's verdicts on many sessions in one transaction.

        Args:
            grader_model: Who graded.
            prompt_version: The version of how it graded.
            grades: ``(session_id, votes, verdict)`` per session; none is flagged.

        Returns:
            How many grades were recorded.
        """
        now = _now()
        with self._write() as db:
            for session_id, _, _ in grades:
                schema.require_session(db, session_id)
            db.conn.executemany(
                "INSERT INTO grades (session_id, grader_model, prompt_version, votes, verdict,"
                " flagged, created, flag) VALUES (?, ?, ?, ?, ?, 0, ?, NULL)",
                [
                    (session_id, grader_model, prompt_version, schema.to_json(votes), verdict, now)
                    for session_id, votes, verdict in grades
                ],
            )
        return len(grades)

    def grades(self, session_id: str) -> list[GradeRecord]:
        """A session's grades, oldest first."""
        rows = self._rows(
            "SELECT * FROM grades WHERE session_id = ? ORDER BY created, id", [session_id]
        )
        return [schema.grade_from_row(row) for row in rows]

    # -- approvals' and elicitations' steps, for scoring ----------------------

    def approval_steps(self, runs: Sequence[str] | None = None) -> list[ApprovalStep]:
        """Every approval request and decision of ``runs`` (None: all), session by session."""
        return approval_steps(self._connection, runs)

    def elicitation_steps(self, runs: Sequence[str] | None = None) -> list[ElicitationStep]:
        """Every MCP server's question and its answer in ``runs`` (None: all), in order."""
        return elicitation_steps(self._connection, runs)

    # -- the web page's signed-out sign-ins ------------------------------------

    def sign_out_token(self, token_id: str, until: datetime, *, now: datetime) -> None:
        """Record that the kept sign-in ``token_id`` was signed out, until it expires.

        Every web app on this database refuses it from then on. Records of
        sign-ins that have expired by ``now`` are dropped meanwhile.
        """
        with self._write() as db:
            db.execute(
                "INSERT INTO signed_out_tokens (token_id, until) VALUES (?, ?)"
                " ON CONFLICT (token_id) DO UPDATE SET until = excluded.until"
                " WHERE excluded.until > signed_out_tokens.until",
                [token_id, _utc_text(until)],
            )
            db.execute("DELETE FROM signed_out_tokens WHERE until < ?", [_utc_text(now)])

    def is_signed_out(self, token_id: str) -> bool:
        """Whether the kept sign-in ``token_id`` was signed out (``sign_out_token``)."""
        found = self._rows("SELECT 1 FROM signed_out_tokens WHERE token_id = ?", [token_id])
        return bool(found)


def _utc_text(moment: datetime) -> str:
    """``moment`` as the time columns hold it (ISO 8601 in UTC); a naive one is taken as UTC."""
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return aware.astimezone(UTC).isoformat()


def _stored_if_any(session_id: str, updated: Any, sent: SentEvents) -> Callable[[], list[Event]]:
    """The finish of a write that updated a session's row and logged events with it."""

    def stored() -> list[Event]:
        if updated.rowcount == 0:
            raise KeyError(f"no session {session_id!r}")
        return sent.stored()

    return stored


# The writes that ``SessionStore.call`` may commit with others (see ``grouped``).
_STEPPED: dict[str, Callable[..., Steps[Any]]] = {
    "open_session": SessionStore._open_steps,
    "set_status": SessionStore._status_steps,
    "log_question": SessionStore._question_steps,
    "resume_waiting": SessionStore._resume_steps,
    "end_session": SessionStore._end_steps,
}
