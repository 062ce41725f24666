"""``aah db check``: whether a session database is whole, and what it holds.

The file is opened read-only, so checking never changes it, however damaged
it is. SQLite's own check (``PRAGMA integrity_check``, or the faster
``quick_check`` that skips matching indexes to tables) finds damaged pages;
the store's own rules are checked after it: rows whose session is gone,
sessions whose event count disagrees with their events (an event lost or
written twice), and sessions that wait for a person while nothing in the
queue asks (a question logged whose request never reached the queue). A
PostgreSQL store (a URL) is checked for what keeps it from opening, said in
one line (server down, wrong password, no such database, a missing
privilege), then for the same rules.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, computed_field

from aah.db_url import is_database_url
from aah.errors import AahError
from aah.store import schema as schema
from aah.store.file_errors import StoreFileError, open_connection

# SQLite lists at most this many damaged spots; a file with more is damaged enough.
_MAX_INTEGRITY_ROWS = 20
_COUNTED_TABLES = ("runs", "sessions", "events", "human_requests", "grades")
# ``ask_readings`` (schema 10) where the file has it.
_SESSION_REFERENCES = ("events", "human_requests", "grades", "ask_readings")
_RESTORE = "restore it from a backup"
# A question logged this long ago without its request is lost, not on its way to the queue.
_LOST_AFTER = timedelta(minutes=1)
# What a person answers or decides, and what settles it, in a session's log.
_ASKED = ("human_question", "approval_requested")
_SETTLED = ("human_answer", "approval_decided")
# Sessions whose questions go to the queue: a queue channel's, or an MCP client's.
_ASKS_THE_QUEUE = {
    "sqlite": "json_extract(recipe, '$.human.kind') = 'queue'",
    "postgres": "recipe::jsonb #>> '{human,kind}' = 'queue'",
}


class DatabaseCheck(BaseModel):
    """What checking one session database found.

    Attributes:
        path: The file checked.
        schema_version: Its session schema (SQLite's ``user_version``), if readable.
        integrity: SQLite's verdict: ``ok``, or ``damaged``; None where it could not run.
        counts: Rows of each table (``runs``, ``sessions``, ``events``,
            ``human_requests``, ``grades``), for the tables that could be read.
        sessions_by_status: Sessions of each status.
        requests_by_status: Human requests of each status.
        problems: One line each: what is wrong, naming the file where it helps.
    """

    path: str
    schema_version: int | None = None
    integrity: str | None = None
    counts: dict[str, int] = Field(default_factory=dict)
    sessions_by_status: dict[str, int] = Field(default_factory=dict)
    requests_by_status: dict[str, int] = Field(default_factory=dict)
    problems: list[str] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]  # pydantic's documented use
    @property
    def healthy(self) -> bool:
        """Whether no problem was found."""
        return not self.problems


def check_database(path: Path, *, quick: bool = False) -> DatabaseCheck:
    """Check the session database at ``path`` without writing to it.

    Args:
        path: The database file.
        quick: Run SQLite's ``quick_check`` (linear in the file's size)
            instead of the full ``integrity_check``.

    Raises:
        AahError: There is no file at ``path``.
    """
    if is_database_url(path):
        return _check_server(path)
    if not path.exists() and not path.is_symlink():
        raise AahError(f"no session database at {path}: pass the session database to --db")
    found = DatabaseCheck(path=str(path))
    try:
        conn = open_connection(path, read_only=True)
    except StoreFileError as exc:
        found.problems.append(f"{exc.problem}; {exc.advice}")
        return found
    try:
        # Every look in one read transaction (one snapshot): a file being made
        # meanwhile by another process is seen before or after, never as
        # tables without their version.
        conn.execute("BEGIN")
        _check(conn, path, found, quick)
    except StoreFileError as exc:
        found.problems.append(f"{exc.problem}; {exc.advice}")
    finally:
        conn.close()
    return found


def _check_server(url: Path) -> DatabaseCheck:
    """Check a PostgreSQL store: reachable, usable, aah's, and its rows consistent.

    What keeps the store from opening (the server down, a wrong password, no
    such database, a missing privilege) is the one problem found; the
    server's own storage checks are its administrator's (``amcheck``).
    """
    from aah.store.postgres import PgDatabase

    found = DatabaseCheck(path=str(url))
    try:
        db = PgDatabase(url)  # type: ignore[arg-type]  # is_database_url said so
    except StoreFileError as exc:
        found.problems.append(f"{exc.problem}; {exc.advice}")
        return found
    try:
        # Every look in one snapshot: a store being made meanwhile by another
        # process is seen before or after, never as tables without a version.
        db.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        found.schema_version = schema.schema_version(db)
        if _schema_fits(found, schema.table_names(db), url):
            _count(db, found)
            found.problems += _orphans(db) + _event_counts(db) + _waiting_on_nothing(db)
        if not found.problems:
            found.problems += _privileges(db, url, found.schema_version == 0)
        db.execute("COMMIT")
    except StoreFileError as exc:
        found.problems.append(f"{exc.problem}; {exc.advice}")
    finally:
        db.close()
    return found


def _privileges(db: Any, url: Path, empty: bool) -> list[str]:
    """A line if the user may not make the store's tables (an empty database) or use them."""
    user, allowed = db.execute(
        "SELECT current_user, has_schema_privilege(current_schema(), 'CREATE')"
    ).fetchone()
    if empty:
        if allowed:
            return []
        return [
            f"user {user} may not create the store's tables in {url}; an admin can "
            f"GRANT CREATE ON SCHEMA public TO {user}"
        ]
    # Every runner and page reads and writes every table: one privilege
    # missing fails the first write of its kind, long after start-up. (Several
    # privileges in one has_table_privilege call mean any of them, so one a row.)
    missing = db.execute(
        "SELECT DISTINCT c.relname FROM unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE'])"
        " AS p(privilege), pg_class c"
        " JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()"
        " WHERE (c.relkind IN ('r', 'p') AND NOT has_table_privilege(c.oid, p.privilege))"
        " OR (c.relkind = 'S' AND NOT has_sequence_privilege(c.oid, 'USAGE'))"
        " ORDER BY 1"
    ).fetchall()
    if not missing:
        return []
    names = ", ".join(row[0] for row in missing)
    from aah.store.postgres import table_grants

    return [
        f"user {user} may not read and write all of the store's tables in {url} "
        f"({names}); {table_grants(user)}"
    ]


def _check(conn: sqlite3.Connection, path: Path, found: DatabaseCheck, quick: bool) -> None:
    found.schema_version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    pragma = "quick_check" if quick else "integrity_check"
    said = [row[0] for row in conn.execute(f"PRAGMA {pragma}({_MAX_INTEGRITY_ROWS})")]
    found.integrity = "ok" if said == ["ok"] else "damaged"
    if found.integrity != "ok":
        # One row may hold several findings, a line each, under a heading.
        lines = [line for row in said for line in row.splitlines() if not line.startswith("***")]
        found.problems += [
            f"{path} is damaged: {line}; {_RESTORE}" for line in lines[:_MAX_INTEGRITY_ROWS]
        ]
    tables = schema.table_names(conn)
    if not _schema_fits(found, tables, path):
        return
    if found.schema_version == schema.SCHEMA_VERSION:
        missing = schema.column_problem(conn, path)
        if missing is not None:
            found.problems.append(f"{missing.problem}; {missing.advice}")
            return
    if found.integrity != "ok":
        # What a damaged file still yields, as far as it can be read.
        with suppress(StoreFileError):
            _count(conn, found)
        return
    _count(conn, found)
    found.problems += _orphans(conn) + _event_counts(conn) + _waiting_on_nothing(conn)


def _count(conn: Any, found: DatabaseCheck) -> None:
    for table in _COUNTED_TABLES:
        found.counts[table] = int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    found.sessions_by_status = _by_status(conn, "sessions")
    found.requests_by_status = _by_status(conn, "human_requests")


def _schema_fits(found: DatabaseCheck, tables: set[str], path: Path) -> bool:
    """Whether the file holds aah's tables to count (what else it is goes in the problems)."""
    version = found.schema_version or 0
    problem = schema.file_problem(version, tables, path)
    if problem is not None:
        found.problems.append(f"{problem.problem}; {problem.advice}")
    # A new file, with no tables yet (or the checkpointer's alone), is empty and healthy.
    return problem is None and version > 0


def _by_status(conn: Any, table: str) -> dict[str, int]:
    rows = conn.execute(f"SELECT status, count(*) FROM {table} GROUP BY status ORDER BY status")
    return {status: int(count) for status, count in rows}


def _orphans(conn: Any) -> list[str]:
    """One line per table whose rows name sessions that do not exist."""
    problems = []
    tables = schema.table_names(conn)
    for table in (name for name in _SESSION_REFERENCES if name in tables):
        (count,) = conn.execute(
            f"SELECT count(*) FROM {table} AS t"
            " WHERE NOT EXISTS (SELECT 1 FROM sessions AS s WHERE s.id = t.session_id)"
        ).fetchone()
        if count:
            problems.append(f"{count} row(s) of {table} belong to no session; {_RESTORE}")
    return problems


def _event_counts(conn: Any) -> list[str]:
    """A line if some session's event count is not the number of its events (lost or doubled)."""
    (count,) = conn.execute(
        "SELECT count(*) FROM sessions AS s WHERE s.n_events !="
        " (SELECT count(*) FROM events AS e WHERE e.session_id = s.id)"
    ).fetchone()
    if not count:
        return []
    return [
        f"{count} session(s) have events missing or doubled (their count disagrees); {_RESTORE}"
    ]


def _waiting_on_nothing(conn: Any, now: datetime | None = None) -> list[str]:
    """Lines for questions that never reached the queue, and sessions that wait on nothing.

    Only sessions whose people answer through the queue count (a queue
    channel's, an MCP client's): a console's question waits in its process,
    not in the store. A session waits on something while a request of its
    own is in the store and not yet settled in its log (pending, or answered
    and not yet read back).
    """
    dialect = "sqlite" if isinstance(conn, sqlite3.Connection) else "postgres"
    waiting = (
        "SELECT id FROM sessions WHERE status = 'waiting'"
        f" AND (model LIKE 'mcp:%' OR {_ASKS_THE_QUEUE[dialect]})"
    )
    kinds = ", ".join(f"'{kind}'" for kind in _ASKED + _SETTLED)
    events = conn.execute(
        f"SELECT session_id, kind, ts, payload FROM events WHERE kind IN ({kinds})"
        f" AND session_id IN ({waiting})"
    ).fetchall()
    requests = conn.execute(
        f"SELECT session_id, id FROM human_requests WHERE session_id IN ({waiting})"
    ).fetchall()
    sessions = {row[0] for row in conn.execute(waiting).fetchall()}
    asked: dict[str, tuple[str, datetime]] = {}
    settled: set[str] = set()
    for session_id, kind, ts, payload in events:
        request_id = str(json.loads(payload).get("request_id") or "")
        if kind in _SETTLED:
            settled.add(request_id)
        else:
            asked[request_id] = (session_id, datetime.fromisoformat(ts))
    held = {request_id for _, request_id in requests}
    live = {session_id for session_id, request_id in requests if request_id not in settled}
    cutoff = (now or datetime.now(UTC)) - _LOST_AFTER
    lost = sorted(
        session_id
        for request_id, (session_id, when) in asked.items()
        if request_id not in settled and request_id not in held and when < cutoff
    )
    idle = sorted(sessions - live - set(lost))
    problems = []
    if lost:
        problems.append(
            f"{len(lost)} question(s) were logged but never reached the queue, so no person "
            f"can answer them (session {_some(lost)}); end them with `aah sessions cancel ID`"
        )
    if idle:
        problems.append(
            f"{len(idle)} session(s) wait for a person with nothing in the queue to answer "
            f"(session {_some(idle)}); `aah sessions resume ID` asks again, "
            "`aah sessions cancel ID` ends them"
        )
    return problems


def _some(ids: list[str]) -> str:
    """The first few of ``ids``, for a one-line problem."""
    shown = ", ".join(ids[:3])
    return shown if len(ids) <= 3 else f"{shown} and {len(ids) - 3} more"
