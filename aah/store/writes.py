"""Writing to the session database: one transaction at a time, events in order.

Writers in one process queue on a Python lock per file (handing a lock
between threads takes microseconds, while SQLite's busy handler polls with
sleeps of a millisecond and more); writers in other processes queue on
SQLite's own lock, taken at ``BEGIN IMMEDIATE``. Both the store and the
graph's checkpointer write through here, so a checkpoint and the events of
the steps it saves commit together. On PostgreSQL a write transaction is
pipelined: its statements go out together, and a caller that reads their
replies only after the block (``read_later``, ``send_events``) pays one
round trip for the whole write.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from datetime import UTC
from pathlib import Path
from typing import Any

from aah.events import Event
from aah.store import schema as schema
from aah.store.sqlite_db import Database

# busy_timeout covers nearly every wait; a few SQLite paths (WAL recovery,
# a lock held across a checkpoint) report BUSY at once, so BEGIN is retried.
_BUSY_RETRIES = 5
_SQLITE_BUSY, _SQLITE_LOCKED = 5, 6

# One write lock per database file for the whole process, so that several
# stores on one file also queue in Python rather than in SQLite.
_WRITE_LOCKS: dict[str, threading.Lock] = {}
_WRITE_LOCKS_GUARD = threading.Lock()


def write_lock(path: Path) -> threading.Lock:
    """The process-wide write lock of the database file ``path``."""
    with _WRITE_LOCKS_GUARD:
        return _WRITE_LOCKS.setdefault(str(path.resolve()), threading.Lock())


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)


@contextmanager
def write_transaction(
    db: Database, lock: threading.Lock, *, exclusive: bool = True, pipelined: bool = True
) -> Iterator[Database]:
    """One write transaction on ``db`` that holds SQLite's write lock from its start.

    A deferred transaction that reads and then writes fails at once with
    BUSY if another writer got in between; taking the lock first makes it
    wait its turn (up to the busy timeout) instead. ``lock`` is the
    process-wide lock of the file (``write_lock``).

    On PostgreSQL, ``exclusive=False`` lets the transaction run beside
    others: for a write that reads nothing it decides on and touches only its
    own session's rows (a checkpoint and its steps' events, see
    ``needs_exclusive``), the row locks it takes suffice. SQLite has one
    writer whatever is asked.

    On PostgreSQL the transaction's statements are pipelined
    (``PgDatabase.pipelined``): a statement's cursor is a promise of its
    reply, and reading it waits for the replies so far. Reading results
    after the block, where the code allows, saves the wait. ``pipelined=False``
    for a block that runs a script (``executescript``).
    """
    if getattr(db, "engine", "sqlite") == "postgresql":
        with (
            lock if exclusive else nullcontext(),
            _postgres_transaction(db, exclusive=exclusive, pipelined=pipelined),
        ):
            yield db
        return
    with lock:
        for attempt in range(_BUSY_RETRIES):
            try:
                db.execute("BEGIN IMMEDIATE")
                break
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or attempt == _BUSY_RETRIES - 1:
                    raise
                time.sleep(0.05 * 2**attempt)
        try:
            yield db
            db.execute("COMMIT")
        except BaseException:
            # Never leave a transaction open on a connection that is handed
            # back: it would hold SQLite's write lock for good.
            db.rollback()
            raise


# Every write transaction on PostgreSQL takes this transaction-scoped advisory
# lock first: writers of every process and host queue on the server as
# SQLite's writers queue on the file, so the exactly-once rules (an answer
# resumes once, at most k claims, one log line per request) read and write
# under the same guarantee on both engines. It is released at COMMIT or
# ROLLBACK, and with the connection if a process dies.
WRITE_LOCK_KEY = 0x616168  # "aah"


@contextmanager
def _postgres_transaction(
    db: Database, *, exclusive: bool = True, pipelined: bool = True
) -> Iterator[None]:
    # Pipelined, BEGIN, the lock and the block's statements go out without
    # waiting for each reply, and a block that reads nothing before its end
    # commits in one round trip: each one more is felt when every writer
    # queues here. A block that runs a script cannot be pipelined; it begins
    # in one simple query instead.
    begin = ["BEGIN", f"SELECT pg_advisory_xact_lock({WRITE_LOCK_KEY})"][: 1 + exclusive]
    try:
        with db.pipelined() if pipelined else nullcontext():
            if pipelined:
                for statement in begin:
                    db.execute(statement)
            else:
                db.executescript("; ".join(begin))
            yield
            db.execute("COMMIT")
    except BaseException as exc:
        db.rollback()
        missing = _missing_session(exc)
        if missing is not None:
            raise missing from exc
        raise


_FOREIGN_KEY_VIOLATION = "23503"
# PostgreSQL's detail of a foreign key that fails (in English; a server
# speaking another language gets the general line).
_NOT_PRESENT = re.compile(r"\(session_id\)=\((.*)\) is not present in table")


def _missing_session(exc: BaseException) -> KeyError | None:
    """The ``KeyError`` a PostgreSQL write amounts to when a row it wrote names no session."""
    if getattr(exc, "sqlstate", None) != _FOREIGN_KEY_VIOLATION:
        return None
    found = _NOT_PRESENT.search(getattr(exc.diag, "message_detail", None) or "")  # type: ignore[attr-defined]
    return KeyError(f"no session {found.group(1)!r}" if found else f"no such session ({exc})")


def read_later(cursor: Any) -> Any:
    """A statement's cursor, to read after its write transaction's block.

    PostgreSQL's (a ``PgCursor``) is read when first asked, so a pipelined
    transaction whose block reads nothing commits in one round trip.
    SQLite's is read now: its COMMIT refuses while a statement is unread.
    """
    if getattr(cursor, "load", None) is not None:
        return cursor
    return _ReadCursor(cursor.fetchall() if cursor.description else [], cursor.rowcount)


class _ReadCursor:
    """An sqlite3 cursor's rows and rowcount, read."""

    def __init__(self, rows: list[Any], rowcount: int) -> None:
        self._rows = rows
        self.rowcount = rowcount

    def fetchone(self) -> Any:
        return self._rows.pop(0) if self._rows else None

    def fetchall(self) -> list[Any]:
        rows, self._rows = self._rows, []
        return rows


def needs_exclusive(events: Sequence[Event]) -> bool:
    """Whether logging ``events`` needs the exclusive write transaction.

    A question, an answer, an approval request or decision is logged once
    per request (or call), which is checked by reading the log first; that
    read and the insert must not interleave with another writer's.
    """
    return any(event.kind in _ONCE_PER for event in events)


def insert_events(db: Database, events: Sequence[Event]) -> list[Event]:
    """Append ``events`` inside the caller's write transaction; return them with their seq.

    Each event takes its session's next seq from the session row it bumps,
    so events from many threads or processes never share or skip a number.
    A question or an answer is logged once per human request, an approval
    request once per request and its decision once per call: one already in
    the log is left out and not returned. A process killed after logging an answer and before the
    next checkpoint replays that step on restart, and the replay must not
    log the answer twice.

    Raises:
        KeyError: An event's session does not exist.
    """
    return send_events(db, events).stored()


class SentEvents:
    """Events sent to the log in a write transaction; ``stored()`` gives them with their seqs.

    On PostgreSQL in a pipelined transaction the appends are only sent:
    ``stored()`` waits for their replies, which after the transaction's
    block costs no round trip of its own.
    """

    def __init__(self, sent: list[tuple[Event, Any]]) -> None:
        self._sent = sent
        self._stored: list[Event] | None = None

    def stored(self) -> list[Event]:
        """The events as logged, with their seqs; those logged already are left out."""
        if self._stored is None:
            stored = []
            for event, cursor in self._sent:
                # No row: logged already (a missing session failed the
                # transaction instead, see ``_missing_session``).
                row = cursor.fetchone()
                if row is not None:
                    stored.append(event.model_copy(update={"seq": row[0]}))
            self._stored = stored
        return self._stored


def send_events(db: Database, events: Sequence[Event]) -> SentEvents:
    """Send ``events``' appends in the caller's write transaction (see ``insert_events``).

    PostgreSQL appends each event in one statement, the check that it is not
    logged already included, and reads no reply here. SQLite appends them at
    once (a bump and an insert each, and the check first).

    Raises:
        KeyError: (SQLite) An event's session does not exist.
    """
    sent: list[tuple[Event, Any]] = []
    if getattr(db, "engine", "sqlite") == "postgresql":
        for event in events:
            ts, payload = event.ts.astimezone(UTC).isoformat(), schema.event_payload(event)
            params = schema.session_bump(event) | {"kind": event.kind, "ts": ts, "payload": payload}
            key = _ONCE_PER.get(event.kind)
            if key is None:
                sent.append((event, db.execute(schema.APPEND_EVENT_PG_SQL, params)))
            else:
                sql = schema.append_once_pg_sql(key)
                sent.append((event, db.execute(sql, params | {"once": getattr(event, key)})))
        return SentEvents(sent)
    for run in _runs_by_session(_not_logged(db, events)):
        bump = schema.session_bump_of(run)
        row = db.execute(schema.BUMP_SESSION_SQL, bump).fetchone()
        if row is None:
            raise KeyError(f"no session {run[0].session_id!r}")
        first = row[0] - len(run) + 1  # the run's seqs, in order, end at the new count
        db.conn.executemany(
            "INSERT INTO events (session_id, seq, kind, ts, payload) VALUES (?, ?, ?, ?, ?)",
            [
                (
                    event.session_id,
                    first + offset,
                    event.kind,
                    event.ts.astimezone(UTC).isoformat(),
                    schema.event_payload(event),
                )
                for offset, event in enumerate(run)
            ],
        )
        sent += [(event, _ReadCursor([(first + offset,)], 1)) for offset, event in enumerate(run)]
    return SentEvents(sent)


def _runs_by_session(events: Sequence[Event]) -> list[list[Event]]:
    """``events`` cut into runs of consecutive events of one session (each one bump)."""
    runs: list[list[Event]] = []
    for event in events:
        if runs and runs[-1][0].session_id == event.session_id:
            runs[-1].append(event)
        else:
            runs.append([event])
    return runs


# Events logged once per key: a question, an answer, an approval request per
# human request, and one decision per call that needed approval.
_ONCE_PER = {
    "human_question": "request_id",
    "human_answer": "request_id",
    "approval_requested": "request_id",
    "approval_decided": "call_id",
}


def _not_logged(db: Database, events: Sequence[Event]) -> list[Event]:
    """``events`` less those their request (or call) has logged already, in the log or before them.

    One read of each session's such events, for the sessions that have one
    in ``events`` (SQLite; PostgreSQL checks in the append itself).
    """
    sessions = {e.session_id for e in events if e.kind in _ONCE_PER}
    if not sessions:
        return list(events)
    logged: set[tuple[str, str, Any]] = set()
    for session_id in sessions:
        rows = db.execute(_LOGGED_ONCE_SQL, [session_id, *_ONCE_PER]).fetchall()
        logged.update((session_id, kind, key) for kind, key in rows)
    kept = []
    for event in events:
        key = _ONCE_PER.get(event.kind)
        if key is not None:
            once = (event.session_id, event.kind, getattr(event, key))
            if once in logged:
                continue
            logged.add(once)
        kept.append(event)
    return kept


# The key of each once-logged event of a session (SQLite's JSON reading).
_LOGGED_ONCE_SQL = (
    "SELECT kind, CASE kind "
    + " ".join(
        f"WHEN '{kind}' THEN json_extract(payload, '$.{key}')" for kind, key in _ONCE_PER.items()
    )
    + " END FROM events WHERE session_id = ? AND kind IN ("
    + ", ".join("?" for _ in _ONCE_PER)
    + ")"
)
