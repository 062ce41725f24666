"""What the session database holds: its tables, its rows, and what may go in.

The schema is plain SQL so that it reads as what is on disk. Its version is
kept in SQLite's ``user_version`` pragma: 0 means a fresh file, and a file
written by a newer aah is refused rather than misread. Every text or JSON
value passes through ``scrub`` before it is written, so no secret reaches
the file.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from aah import secrets as secrets
from aah.db_url import is_database_url
from aah.events import (
    ApprovalDecision,
    AwarenessAnswer,
    AwarenessEvent,
    Event,
    HumanQuestionEvent,
    ModelCallEvent,
    ToolCallEvent,
    parse_event,
    utc_now,
)
from aah.secrets import REDACTED as REDACTED
from aah.secrets import scrub_text as scrub_text
from aah.store.file_errors import RESTORE, StoreFileError, open_connection
from aah.store.sqlite_db import Database

SCHEMA_VERSION = 10

SessionStatus = Literal[
    "running",
    "waiting",
    "finished",
    "skipped",
    "error",
    "cancelled",
    "step_limit",
    "cut_off",
    "terminated",
]
# The statuses of a session that can still use a person's answer.
LIVE_STATUSES: tuple[SessionStatus, ...] = ("running", "waiting")
# Sessions that ended without a final answer by a limit, not by a failure:
# the step limit, or the model's reply cut by its length limit (science.md §2),
# or a person who, asked to approve a tool call, terminated the session (§7).
STOPPED_STATUSES: tuple[SessionStatus, ...] = ("step_limit", "cut_off", "terminated")
# Why a verdict is flagged (science.md §2): too few valid votes, or a tie.
GradeFlagReason = Literal["no_quorum", "tie"]
RequestStatus = Literal["pending", "answered", "declined", "expired"]
# What a human request asks of a person: to answer a question, or to decide on a tool call.
RequestKind = Literal["question", "approval", "elicitation"]
Verdict = Literal["pass", "fail"]

# Times are ISO 8601 text in UTC: they sort as text and read as datetimes.
# JSON columns hold text that has been scrubbed of secrets before writing.
SESSIONS_TABLE_SQL = """
CREATE TABLE IF NOT EXISTS NAME (
    id TEXT PRIMARY KEY,
    run TEXT REFERENCES runs(name),
    task_id TEXT,
    setting TEXT,
    query TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'running'
        CHECK (status IN ('running', 'waiting', 'finished', 'skipped', 'error', 'cancelled',
                          'step_limit', 'cut_off', 'terminated')),
    aah INTEGER NOT NULL CHECK (aah IN (0, 1)),
    model TEXT,
    thread_id TEXT NOT NULL,
    started TEXT NOT NULL,
    ended TEXT,
    final_answer TEXT,
    info_awareness TEXT,
    tool_awareness TEXT,
    n_events INTEGER NOT NULL DEFAULT 0,
    n_model_calls INTEGER NOT NULL DEFAULT 0,
    n_tool_calls INTEGER NOT NULL DEFAULT 0,
    n_tool_errors INTEGER NOT NULL DEFAULT 0,
    n_human_questions INTEGER NOT NULL DEFAULT 0,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    -- What resuming the session needs (tools, limits, who answers), as JSON.
    recipe TEXT NOT NULL DEFAULT '{}',
    -- NULLs are distinct here, so sessions outside a run never collide.
    UNIQUE (run, task_id)
);
"""

# A decision's columns (schema 7), in ``human_requests`` and ``human_answers`` alike:
# what was decided, an edit's arguments (JSON) and why; a response's text is the answer.
DECISION_COLUMNS = (
    "decision TEXT CHECK (decision IN ('approve', 'edit', 'reject', 'respond', 'terminate'))",
    "edited_arguments TEXT",
    "reason TEXT",
)
_DECISION_COLUMNS_SQL = ",\n".join(f"    {column}" for column in DECISION_COLUMNS)
# The kinds of request, as the CHECK on ``human_requests.kind`` spells them.
_KINDS_SQL = "('question', 'approval', 'elicitation')"
# A call a person made with their own tools (a τ² user's phone) in place of words
# (schema 8), in ``human_requests`` and ``human_answers`` alike: JSON, as
# ``aah.desk.UserToolCall`` writes it; NULL for every other reply.
USER_CALL_COLUMN = "user_call TEXT"

HUMAN_REQUESTS_TABLE_SQL = """
CREATE TABLE IF NOT EXISTS NAME (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    question TEXT NOT NULL,
    context TEXT NOT NULL DEFAULT '{}',
    status TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'answered', 'declined', 'expired')),
    created TEXT NOT NULL,
    k INTEGER NOT NULL DEFAULT 1 CHECK (k >= 1),
    -- The first reply's text: an answer, or a decision's response.
    answer TEXT,
    answered_by TEXT,
    answered_at TEXT,
    -- When the asker stops waiting, and who answers then (idk, skip, a channel).
    deadline TEXT,
    fallback TEXT,
    -- 'question' (answer it), 'approval' (approve, edit, reject, respond to or
    -- terminate a tool call) or 'elicitation' (an MCP server's form or link).
    kind TEXT NOT NULL DEFAULT 'question'
        CHECK (kind IN KINDS_SQL),
    -- The first decision on an approval (DECISION_COLUMNS).
DECISION_COLUMNS_SQL,
    -- The first reply's call, when the person made one instead of answering (USER_CALL_COLUMN).
    USER_CALL_SQL
);
""".replace("DECISION_COLUMNS_SQL", _DECISION_COLUMNS_SQL).replace("KINDS_SQL", _KINDS_SQL)
HUMAN_REQUESTS_TABLE_SQL = HUMAN_REQUESTS_TABLE_SQL.replace("USER_CALL_SQL", USER_CALL_COLUMN)

SCHEMA_SQL = (
    """
CREATE TABLE IF NOT EXISTS runs (
    name TEXT PRIMARY KEY,
    created TEXT NOT NULL,
    manifest TEXT NOT NULL DEFAULT '{}'
);

"""
    + SESSIONS_TABLE_SQL.replace("NAME", "sessions", 1)
    + """CREATE INDEX IF NOT EXISTS sessions_by_status ON sessions (status, started);
-- Whether a request's session is live, and what a queue list shows of it,
-- without reading the session's row (its recipe can be large).
CREATE INDEX IF NOT EXISTS sessions_for_queue ON sessions (id, status, setting, task_id, run);

CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    ts TEXT NOT NULL,
    payload TEXT NOT NULL,
    UNIQUE (session_id, seq)
);

"""
    + HUMAN_REQUESTS_TABLE_SQL.replace("NAME", "human_requests", 1)
    + """CREATE INDEX IF NOT EXISTS human_requests_by_status ON human_requests (status, created);
-- Covers counting the queue (status, deadline, session, room) without the rows,
-- whose context is kilobytes; a settled request wants more answers only with k > 1.
CREATE INDEX IF NOT EXISTS human_requests_queue
    ON human_requests (status, created, deadline, session_id, k, id);
CREATE INDEX IF NOT EXISTS human_requests_overlap ON human_requests (created)
    WHERE status IN ('answered', 'declined') AND k > 1;
CREATE INDEX IF NOT EXISTS human_requests_by_session ON human_requests (session_id);

CREATE TABLE IF NOT EXISTS human_answers (
    id INTEGER PRIMARY KEY,
    request_id TEXT NOT NULL REFERENCES human_requests(id),
    annotator TEXT NOT NULL,
    answer TEXT NOT NULL,
    declined INTEGER NOT NULL DEFAULT 0 CHECK (declined IN (0, 1)),
    rating INTEGER CHECK (rating IN (0, 1)),
    seconds REAL,
    created TEXT NOT NULL,
    -- An annotator's decision on an approval (DECISION_COLUMNS).
"""
    + _DECISION_COLUMNS_SQL
    + """,
    -- An annotator's call with their own tools (USER_CALL_COLUMN).
    """
    + USER_CALL_COLUMN
    + """,
    -- One answer per annotator: a double submit from a web page is a no-op.
    UNIQUE (request_id, annotator)
);
CREATE INDEX IF NOT EXISTS human_answers_by_annotator ON human_answers (annotator, created);

-- An annotator holding a request while they answer it, until their lease
-- runs out; with overlap k, up to k (less the answers given) hold one.
CREATE TABLE IF NOT EXISTS claims (
    request_id TEXT NOT NULL REFERENCES human_requests(id),
    annotator TEXT NOT NULL,
    until TEXT NOT NULL,
    PRIMARY KEY (request_id, annotator)
);
CREATE INDEX IF NOT EXISTS claims_by_annotator ON claims (annotator, until);

-- The pending requests whose session can no longer use an answer (ended,
-- errored, cancelled), kept by the triggers below whatever ends or resumes
-- the session. Few or none, so the queue is counted from an index alone:
-- pending requests less these, instead of a look at every one's session.
CREATE TABLE IF NOT EXISTS closed_requests (
    request_id TEXT PRIMARY KEY REFERENCES human_requests(id)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS session_closes_requests AFTER UPDATE OF status ON sessions
WHEN NEW.status NOT IN LIVE AND OLD.status IN LIVE
BEGIN
    INSERT OR IGNORE INTO closed_requests (request_id)
        SELECT id FROM human_requests WHERE session_id = NEW.id AND status = 'pending';
END;
CREATE TRIGGER IF NOT EXISTS session_reopens_requests AFTER UPDATE OF status ON sessions
WHEN NEW.status IN LIVE AND OLD.status NOT IN LIVE
BEGIN
    DELETE FROM closed_requests
        WHERE request_id IN (SELECT id FROM human_requests WHERE session_id = NEW.id);
END;
CREATE TRIGGER IF NOT EXISTS request_of_closed_session AFTER INSERT ON human_requests
WHEN NEW.status = 'pending'
    AND NOT EXISTS (SELECT 1 FROM sessions WHERE id = NEW.session_id AND status IN LIVE)
BEGIN
    INSERT OR IGNORE INTO closed_requests (request_id) VALUES (NEW.id);
END;
CREATE TRIGGER IF NOT EXISTS request_leaves_pending AFTER UPDATE OF status ON human_requests
WHEN NEW.status != 'pending'
BEGIN
    DELETE FROM closed_requests WHERE request_id = NEW.id;
END;

-- A tool call a person approved, from the moment it starts running: a runner
-- that restarts finds it here and never sends it twice (its result, once
-- stored, is handed back instead; a call cut off mid-request stays unknown).
CREATE TABLE IF NOT EXISTS approved_runs (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    call_id TEXT NOT NULL,
    arguments TEXT NOT NULL DEFAULT '{}',
    started TEXT NOT NULL,
    finished TEXT,
    status_code INTEGER,
    ok INTEGER CHECK (ok IN (0, 1)),
    result TEXT,
    latency_ms REAL,
    http_mode TEXT,
    PRIMARY KEY (session_id, call_id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS grades (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    grader_model TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    votes TEXT NOT NULL DEFAULT '[]',
    verdict TEXT NOT NULL CHECK (verdict IN ('pass', 'fail')),
    flagged INTEGER NOT NULL DEFAULT 0 CHECK (flagged IN (0, 1)),
    created TEXT NOT NULL,
    -- Why a flagged verdict is flagged: 'no_quorum' or 'tie' (NULL when not flagged).
    flag TEXT
);
CREATE INDEX IF NOT EXISTS grades_by_session ON grades (session_id, created);

-- The web page's kept sign-ins that were signed out, by the id each carries,
-- until they would have expired anyway; whatever web app checks one asks here.
CREATE TABLE IF NOT EXISTS signed_out_tokens (
    token_id TEXT PRIMARY KEY,
    until TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS signed_out_tokens_by_until ON signed_out_tokens (until);

-- A team (schema 9): who reviews, and which group each person is in; a name
-- not listed is an annotator of no group. Names as ``annotator_key`` spells them.
CREATE TABLE IF NOT EXISTS people (
    name TEXT PRIMARY KEY,
    role TEXT NOT NULL DEFAULT 'annotator' CHECK (role IN ('annotator', 'reviewer')),
    team TEXT
) WITHOUT ROWID;

-- Who an item is for: a person's name, or a group as '@group', given for one
-- request or for every request of a run. An item assigned to nobody is everyone's.
CREATE TABLE IF NOT EXISTS assignments (
    id INTEGER PRIMARY KEY,
    request_id TEXT REFERENCES human_requests(id),
    -- A run's name, set before the run is made (so no reference to runs).
    run TEXT,
    assignee TEXT NOT NULL,
    CHECK ((request_id IS NULL) != (run IS NULL))
);
CREATE INDEX IF NOT EXISTS assignments_by_request ON assignments (request_id, assignee);
CREATE INDEX IF NOT EXISTS assignments_by_run ON assignments (run, assignee);

-- What a run asks of its team: how many reviewers each item wants and the
-- guidelines (Markdown) shown beside each of its items.
CREATE TABLE IF NOT EXISTS run_team (
    -- Set by ``aah bench run`` before the run is made (so no reference to runs).
    run TEXT PRIMARY KEY,
    reviewers INTEGER NOT NULL DEFAULT 1 CHECK (reviewers >= 0),
    guidelines TEXT
) WITHOUT ROWID;

-- A reviewer's verdict on the first reply (an answer, a ruling) to a request:
-- accept it, or correct it with a note. A row of its own: the person's
-- original answer is never changed, and each reviewer reviews an item once.
CREATE TABLE IF NOT EXISTS reviews (
    id INTEGER PRIMARY KEY,
    request_id TEXT NOT NULL REFERENCES human_requests(id),
    -- Whose answer is reviewed (the request's first): with request_id, one row of
    -- human_answers, named by its key so that a copy of the store keeps the pair.
    annotator TEXT NOT NULL,
    reviewer TEXT NOT NULL,
    verdict TEXT NOT NULL CHECK (verdict IN ('accept', 'correct')),
    correction TEXT,
    note TEXT,
    seconds REAL,
    created TEXT NOT NULL,
    UNIQUE (request_id, reviewer)
);
CREATE INDEX IF NOT EXISTS reviews_by_reviewer ON reviews (reviewer, created);

-- How each question of a session reads against each blocker of its task
-- (science.md §8, schema 10): the rules' reading (1 yes, NULL they cannot say)
-- and the majority-vote grader's (1 yes, 0 no, NULL not asked), with its votes
-- and why it is flagged ('no_quorum', 'tie'), side by side.
CREATE TABLE IF NOT EXISTS ask_readings (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    question_seq INTEGER NOT NULL,
    blocker TEXT NOT NULL,
    rules INTEGER CHECK (rules IN (0, 1)),
    grader INTEGER CHECK (grader IN (0, 1)),
    grader_model TEXT,
    prompt_version TEXT,
    votes TEXT NOT NULL DEFAULT '[]',
    flag TEXT,
    created TEXT NOT NULL,
    PRIMARY KEY (session_id, question_seq, blocker)
) WITHOUT ROWID;
"""
).replace(" IN LIVE", f" IN {tuple(LIVE_STATUSES)!r}")


# Every table of the current schema, in the order SCHEMA_SQL makes them.
TABLES: tuple[str, ...] = tuple(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", SCHEMA_SQL))
# The tables a file of every older version has too.
_V1_TABLES = ("runs", "sessions", "events", "human_requests", "human_answers", "grades")
# The graph's checkpointer (LangGraph's SqliteSaver) keeps its tables in the same file.
CHECKPOINT_TABLES = ("checkpoints", "writes")
# LangGraph's PostgresSaver's tables, in the same database.
PG_CHECKPOINT_TABLES = (
    "checkpoints",
    "checkpoint_blobs",
    "checkpoint_writes",
    "checkpoint_migrations",
)

BUSY_TIMEOUT_S = 30.0


def connect(path: Path) -> Database:
    """Open ``path`` the way every store connection needs it (a URL: PostgreSQL's way).

    Transactions are begun explicitly (``isolation_level=None``), never
    implied by the driver. With WAL, ``synchronous=NORMAL`` may lose the last
    commits on power loss but never consistency, and saves an fsync per event.

    Raises:
        StoreFileError: ``path`` cannot be a database; its connection raises
            it too wherever the file fails later (a damaged page, a full disk).
    """
    if is_database_url(path):
        from aah.store.postgres import PgDatabase

        return PgDatabase(path)  # type: ignore[arg-type]  # is_database_url said so
    conn = open_connection(
        path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
    )
    db = Database(conn, execute_plugins=False)
    db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute("PRAGMA foreign_keys = ON")
    return db


def needs_schema(db: Database, path: Path) -> bool:
    """Whether the file still lacks the tables (a new file, or one of an older aah).

    Raises:
        StoreFileError: The file was written by a newer aah, is another
            program's database, or is an aah database that lost tables.
    """
    found = schema_version(db)
    problem = file_problem(found, table_names(db.conn), path)
    if problem is None and found == SCHEMA_VERSION:
        problem = column_problem(db.conn, path)
    if problem is not None:
        raise problem
    return found < SCHEMA_VERSION


def schema_version(db: Database) -> int:
    """The session schema of the database (0: none yet)."""
    if getattr(db, "engine", "sqlite") == "postgresql":
        # The version table is ours: a table of that name elsewhere on the
        # search path is not (``current_schema()`` is where aah makes its own).
        # Looked up in pg_class, as of this statement: ``to_regclass`` answers
        # from a cache that may not yet know of a table another process has
        # just made, while the table list (``table_names``) already shows it.
        made = db.execute(
            "SELECT count(*) FROM pg_class AS c, pg_namespace AS n WHERE c.relnamespace = n.oid"
            " AND n.nspname = current_schema() AND c.relname = 'aah_schema'"
        ).fetchone()[0]
        if not made:
            return 0
        return int(db.execute("SELECT COALESCE(max(version), 0) FROM aah_schema").fetchone()[0])
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def table_names(conn: Any) -> set[str]:
    """The tables of the database ``conn`` is open on, the engine's own left out.

    On PostgreSQL: those of the connection's schema (``public`` by
    default), less the version table.
    """
    if getattr(conn, "engine", "sqlite") == "postgresql":
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables"
            " WHERE table_schema = current_schema() AND table_name != 'aah_schema'"
        )
        return {row[0] for row in rows}
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    )
    return {row[0] for row in rows}


@functools.cache
def expected_columns() -> dict[str, tuple[str, ...]]:
    """Each table's columns as this aah's schema makes them."""
    import sqlite3

    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(SCHEMA_SQL)
        return {table: _columns(conn, table) for table in TABLES}
    finally:
        conn.close()


def _columns(conn: Any, table: str) -> tuple[str, ...]:
    """The columns of ``table`` in the database ``conn`` is open on (either engine)."""
    if getattr(conn, "engine", "sqlite") == "postgresql":
        rows = conn.execute(
            "SELECT column_name FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND table_name = ?",
            [table],
        )
        return tuple(row[0] for row in rows)
    return tuple(row[1] for row in conn.execute(f"PRAGMA table_info({table})"))


def column_problem(conn: Any, path: Path) -> StoreFileError | None:
    """Why a file of the current schema lacks columns its tables need, or None.

    A table altered by hand or by another tool would otherwise fail later,
    in whichever query first names the missing column.
    """
    missing = [
        f"{table}.{column}"
        for table, columns in expected_columns().items()
        for column in sorted(set(columns) - set(_columns(conn, table)))
    ]
    if not missing:
        return None
    shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    return StoreFileError(
        f"{path} is an aah session database (schema {SCHEMA_VERSION}) without the column(s) "
        f"{shown}",
        RESTORE,
        path,
        damaged=True,
    )


def file_problem(version: int, tables: set[str], path: Path) -> StoreFileError | None:
    """Why this aah cannot use a file of schema ``version`` holding ``tables``, or None."""
    if version > SCHEMA_VERSION:
        return StoreFileError(
            f"{path} uses session schema {version}, newer than this aah's {SCHEMA_VERSION}",
            "upgrade aah or pass another --db",
            path,
        )
    if version == 0:
        # Only aah makes its tables, and it marks the version as it does: other
        # tables in a version-0 file are another program's, which aah's would change.
        foreign = tables - set(CHECKPOINT_TABLES) - set(PG_CHECKPOINT_TABLES)
        if not foreign:
            return None
        server = is_database_url(path)
        return StoreFileError(
            f"{path} is another program's {'PostgreSQL' if server else 'SQLite'} database "
            f"(tables: {', '.join(sorted(foreign)[:5])}), not an aah session database",
            # aah makes its tables in an empty database, but makes no database on a server.
            "create an empty database for aah (createdb, or CREATE DATABASE as an admin) and "
            "pass its URL"
            if server
            else "pass another --db (a new database is made there)",
            path,
        )
    required = TABLES if version == SCHEMA_VERSION else _V1_TABLES
    missing = [name for name in required if name not in tables]
    if not missing:
        return None
    return StoreFileError(
        f"{path} is an aah session database (schema {version}) without its "
        f"{', '.join(missing)} table(s)",
        RESTORE,
        path,
    )


def create_schema(db: Database) -> None:
    """Create every table and index (each only if missing), then mark the version.

    A file of an older version is upgraded first (``upgrade_schema``); the
    caller turns foreign keys off around this, as SQLite's table rebuild needs.
    """
    if getattr(db, "engine", "sqlite") == "postgresql":
        # A PostgreSQL store began at version 5, and what came since are tables
        # its SQL makes where missing: running it again upgrades the store.
        db.executescript(postgres_schema_sql())
        return
    found = int(db.execute("PRAGMA user_version").fetchone()[0])
    if 0 < found < 5:
        upgrade_schema(db, found)
    if 0 < found < 7:
        upgrade_to_7(db)
    if 0 < found < 8:
        upgrade_to_8(db)
    db.executescript(SCHEMA_SQL)
    if 0 < found < 3:
        # The triggers keep ``closed_requests`` from now on; this is what
        # they would have put there so far.
        db.execute(
            "INSERT OR IGNORE INTO closed_requests (request_id) SELECT r.id"
            " FROM human_requests AS r JOIN sessions AS s ON s.id = r.session_id"
            f" WHERE r.status = 'pending' AND s.status NOT IN {tuple(LIVE_STATUSES)!r}"
        )
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


_LIVE_SQL = repr(tuple(LIVE_STATUSES))
# The channel a PostgreSQL store notifies, in the writing transaction (so on
# its commit), whenever a human request is added or leaves ``pending`` or a
# session's status changes: what runners' watches (``RequestWatch``) LISTEN on.
# Notifications of one transaction with the same payload arrive as one.
NOTIFY_CHANNEL = "aah_requests"
# SQLite's triggers above, as PostgreSQL spells them: a function per trigger.
_PG_TRIGGERS = f"""
CREATE OR REPLACE FUNCTION aah_session_status() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status NOT IN {_LIVE_SQL} AND OLD.status IN {_LIVE_SQL} THEN
        INSERT INTO closed_requests (request_id)
            SELECT id FROM human_requests WHERE session_id = NEW.id AND status = 'pending'
            ON CONFLICT DO NOTHING;
    ELSIF NEW.status IN {_LIVE_SQL} AND OLD.status NOT IN {_LIVE_SQL} THEN
        DELETE FROM closed_requests
            WHERE request_id IN (SELECT id FROM human_requests WHERE session_id = NEW.id);
    END IF;
    RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER session_status AFTER UPDATE OF status ON sessions
    FOR EACH ROW EXECUTE FUNCTION aah_session_status();
CREATE OR REPLACE FUNCTION aah_request_of_closed_session() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM sessions WHERE id = NEW.session_id AND status IN {_LIVE_SQL}) THEN
        INSERT INTO closed_requests (request_id) VALUES (NEW.id) ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER request_of_closed_session AFTER INSERT ON human_requests
    FOR EACH ROW WHEN (NEW.status = 'pending') EXECUTE FUNCTION aah_request_of_closed_session();
CREATE OR REPLACE FUNCTION aah_request_leaves_pending() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM closed_requests WHERE request_id = NEW.id;
    RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER request_leaves_pending AFTER UPDATE OF status ON human_requests
    FOR EACH ROW WHEN (NEW.status != 'pending') EXECUTE FUNCTION aah_request_leaves_pending();
CREATE OR REPLACE FUNCTION aah_notify_requests() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('{NOTIFY_CHANNEL}', '');
    RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER notify_requests AFTER INSERT OR UPDATE OF status ON human_requests
    FOR EACH STATEMENT EXECUTE FUNCTION aah_notify_requests();
CREATE OR REPLACE TRIGGER notify_sessions AFTER UPDATE OF status ON sessions
    FOR EACH STATEMENT EXECUTE FUNCTION aah_notify_requests();
"""


# PostgreSQL keeps the schema version in a one-row table ``aah_schema``
# (SQLite in its ``user_version`` pragma).
def postgres_schema_sql() -> str:
    """``SCHEMA_SQL`` as PostgreSQL makes it, with its triggers and version mark.

    The tables are SQLite's, translated: 64-bit integers, identity columns
    for SQLite's ``INTEGER PRIMARY KEY``, double precision for ``REAL``, no
    ``WITHOUT ROWID``; ``sessions`` and ``human_requests`` get the ``rowid``
    column SQLite gives every table (queues order by it). SQLite's
    ``total()`` (a sum that is 0.0 over no rows) is made as an aggregate.
    """
    tables = re.sub(r"CREATE TRIGGER .*?\nEND;\n", "", SCHEMA_SQL, flags=re.S)
    tables += _PG_UPGRADE_TO_7 + _PG_UPGRADE_TO_8
    tables = tables.replace(
        "id INTEGER PRIMARY KEY,", "id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
    )
    tables = tables.replace(") WITHOUT ROWID;", ");")
    tables = re.sub(r"\bINTEGER\b", "BIGINT", tables)
    tables = re.sub(r"\bREAL\b", "DOUBLE PRECISION", tables)
    tables = tables.replace(
        "    id TEXT PRIMARY KEY,\n",
        "    id TEXT PRIMARY KEY,\n    rowid BIGINT GENERATED ALWAYS AS IDENTITY,\n",
    )
    # Text compares byte by byte, as in SQLite, whatever the database's locale.
    tables = re.sub(r"\bTEXT\b", 'TEXT COLLATE "C"', tables)
    return (
        tables
        + _PG_TRIGGERS
        + """
CREATE OR REPLACE AGGREGATE total(double precision)
    (SFUNC = float8pl, STYPE = double precision, INITCOND = '0');
CREATE TABLE IF NOT EXISTS aah_schema (version INTEGER NOT NULL);
DELETE FROM aah_schema;
"""
        + f"INSERT INTO aah_schema (version) VALUES ({SCHEMA_VERSION});\n"
    )


# The columns version 1 gave ``sessions``, in their order.
_V1_SESSION_COLUMNS = (
    "id, run, task_id, setting, query, status, aah, model, thread_id, started, ended,"
    " final_answer, info_awareness, tool_awareness, n_events, n_model_calls, n_tool_calls,"
    " n_tool_errors, n_human_questions, prompt_tokens, completion_tokens"
)


def upgrade_schema(db: Database, found: int) -> None:
    """Bring a version-1 to -4 file to version 5, inside the caller's transaction.

    Version 2 lets a session be ``cancelled``, stores what resuming a session
    needs, and gives each human request its deadline and fallback. Version 3
    adds the ``claims`` table and the queue's indexes, which ``SCHEMA_SQL``
    creates in any file that lacks them. Version 4 lets a session end at a
    limit (``step_limit``, ``cut_off``) and says why a grade is flagged.
    Version 5 lets a person terminate a session (``terminated``), marks each
    human request a question or an approval, and adds ``approved_runs``
    (made by ``SCHEMA_SQL``). A new status is a CHECK constraint, so
    ``sessions`` is rebuilt, SQLite's way. Version 6 only adds
    ``signed_out_tokens``, which ``SCHEMA_SQL`` makes (on PostgreSQL too,
    whose schema SQL makes what is missing), so it needs no step here.
    """
    # The triggers name ``sessions``; a table renamed while they point at a
    # dropped one is refused. ``SCHEMA_SQL`` creates them again.
    for (trigger,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'"):
        db.execute(f'DROP TRIGGER IF EXISTS "{trigger}"')
    columns = _V1_SESSION_COLUMNS if found == 1 else f"{_V1_SESSION_COLUMNS}, recipe"
    db.execute("DROP TABLE IF EXISTS sessions_v4")
    db.execute(SESSIONS_TABLE_SQL.replace("NAME", "sessions_v4", 1))
    db.execute(f"INSERT INTO sessions_v4 ({columns}) SELECT {columns} FROM sessions")
    db.execute("DROP TABLE sessions")
    db.execute("ALTER TABLE sessions_v4 RENAME TO sessions")
    if found == 1:
        db.execute("ALTER TABLE human_requests ADD COLUMN deadline TEXT")
        db.execute("ALTER TABLE human_requests ADD COLUMN fallback TEXT")
    if found < 4:
        db.execute("ALTER TABLE grades ADD COLUMN flag TEXT")
        # Flags stored before the reason was: no valid vote at all was the only
        # way short of a quorum then; any other flagged verdict was a tie.
        db.execute(
            "UPDATE grades SET flag = CASE WHEN (SELECT count(*) FROM json_each(grades.votes)"
            " WHERE json_extract(value, '$.vote') IN ('pass', 'fail')) = 0"
            " THEN 'no_quorum' ELSE 'tie' END WHERE flagged = 1"
        )
    db.execute(
        "ALTER TABLE human_requests ADD COLUMN kind TEXT NOT NULL DEFAULT 'question'"
        " CHECK (kind IN ('question', 'approval'))"
    )


# The columns ``human_requests`` had at version 6, in their order.
_V6_REQUEST_COLUMNS = (
    "rowid, id, session_id, question, context, status, created, k, answer, answered_by,"
    " answered_at, deadline, fallback, kind"
)


def upgrade_to_7(db: Database) -> None:
    """Bring a version-1 to -6 file (earlier steps done) to version 7, in the caller's transaction.

    Version 7 stores a decision on an approval in columns of its own
    (``DECISION_COLUMNS``, in ``human_requests`` and ``human_answers``) and
    lets a request be an ``elicitation``. The new kind is a CHECK
    constraint, so ``human_requests`` is rebuilt, SQLite's way, keeping each
    row's ``rowid`` (the queue's order). Decisions settled before stay as
    they were written, in ``answer`` (``aah.desk.decision_of`` reads both).
    """
    for (trigger,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'"):
        db.execute(f'DROP TRIGGER IF EXISTS "{trigger}"')
    db.execute("DROP TABLE IF EXISTS human_requests_v7")
    db.execute(HUMAN_REQUESTS_TABLE_SQL.replace("NAME", "human_requests_v7", 1))
    db.execute(
        f"INSERT INTO human_requests_v7 ({_V6_REQUEST_COLUMNS})"
        f" SELECT {_V6_REQUEST_COLUMNS} FROM human_requests"
    )
    db.execute("DROP TABLE human_requests")
    db.execute("ALTER TABLE human_requests_v7 RENAME TO human_requests")
    for column in DECISION_COLUMNS:
        db.execute(f"ALTER TABLE human_answers ADD COLUMN {column}")


# A PostgreSQL store of version 5 or 6, brought to 7 (``upgrade_to_7``):
# the columns where missing, and the kinds' CHECK made again.
_PG_UPGRADE_TO_7 = (
    "".join(
        f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column};\n"
        for table in ("human_requests", "human_answers")
        for column in DECISION_COLUMNS
    )
    + "ALTER TABLE human_requests DROP CONSTRAINT IF EXISTS human_requests_kind_check;\n"
    + "ALTER TABLE human_requests ADD CONSTRAINT human_requests_kind_check"
    + f" CHECK (kind IN {_KINDS_SQL});\n"
)


def upgrade_to_8(db: Database) -> None:
    """Bring a version-1 to -7 file (earlier steps done) to version 8, in the caller's transaction.

    Version 8 keeps a call a person made with their own tools in a column of
    its own (``USER_CALL_COLUMN``), where it was missing (a file rebuilt by
    ``upgrade_to_7`` has it in ``human_requests`` already).
    """
    for table in ("human_requests", "human_answers"):
        if "user_call" not in _columns(db.conn, table):
            db.execute(f"ALTER TABLE {table} ADD COLUMN {USER_CALL_COLUMN}")


# A PostgreSQL store of version 5 to 7, brought to 8 (``upgrade_to_8``).
_PG_UPGRADE_TO_8 = "".join(
    f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {USER_CALL_COLUMN};\n"
    for table in ("human_requests", "human_answers")
)

# Version 10 only adds ``ask_readings``, made the same way: no step.
# Version 9 only adds tables (``people``, ``assignments``, ``run_team``,
# ``reviews``), which ``SCHEMA_SQL`` makes where missing on either engine: no step.


def scrub(value: Any) -> Any:
    """A copy of JSON-like ``value`` with every secret replaced by ``[redacted]``.

    The one scrubber of ``aah.secrets``: credential-named values at any
    depth, known keys by value (raw or encoded) and key-shaped text.
    """
    return secrets.scrub(value)


def to_json(value: Any) -> str:
    """``value`` scrubbed of secrets, as JSON text for a JSON column."""
    return json.dumps(scrub(value), ensure_ascii=False)


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True)


class RunRecord(_Row):
    """A named batch run and what it was run with.

    Attributes:
        name: The run's name (unique).
        created: When the run was first created.
        manifest: Models, settings, prompt versions, registry hash, aah
            version, HTTP mode, seed... (secrets scrubbed).
    """

    name: str
    created: datetime
    manifest: dict[str, Any]


class SessionRecord(_Row):
    """One session: a query answered by an agent, with its outcome and counters.

    Counters and the awareness answers are kept up to date by the store as
    events are appended, so listing sessions never needs to read events.
    """

    id: str
    run: str | None
    task_id: str | None
    setting: str | None
    query: str
    status: SessionStatus
    aah: bool
    model: str | None
    thread_id: str
    started: datetime
    ended: datetime | None
    final_answer: str | None
    info_awareness: AwarenessAnswer | None
    tool_awareness: AwarenessAnswer | None
    n_events: int
    n_model_calls: int
    n_tool_calls: int
    n_tool_errors: int
    n_human_questions: int
    prompt_tokens: int
    completion_tokens: int


class HumanRequestRecord(_Row):
    """A question waiting for (or answered by) people.

    Attributes:
        context: What a person sees beside it, as stored (``aah.desk`` reads it typed).
        k: How many annotators should answer it (for agreement); the first
            answer alone decides ``status`` and ``answer``.
        answer: The first reply's text: an answer, or a decision's response.
        deadline: When the asker stops waiting for a person, if ever.
        fallback: Who answers at the deadline: ``idk``, ``skip`` or a channel's name.
        decision: The first decision on an approval; None before it, for a
            question, and for a decision an aah of schema 6 or earlier kept in ``answer``.
        edited_arguments: An edit's arguments.
        reason: Why, as the person said.
        user_call: The call the first reply made with the person's own tools
            instead of words (``aah.desk.UserToolCall`` reads it), or None.
    """

    id: str
    session_id: str
    question: str
    context: dict[str, Any]
    status: RequestStatus
    created: datetime
    k: int
    answer: str | None
    answered_by: str | None
    answered_at: datetime | None
    deadline: datetime | None = None
    fallback: str | None = None
    kind: RequestKind = "question"
    decision: ApprovalDecision | None = None
    edited_arguments: dict[str, Any] | None = None
    reason: str | None = None
    user_call: dict[str, Any] | None = None


class HumanAnswerRecord(_Row):
    """One annotator's answer to a human request (the first one or an extra)."""

    request_id: str
    annotator: str
    answer: str
    declined: bool
    rating: int | None
    seconds: float | None
    created: datetime
    decision: ApprovalDecision | None = None
    edited_arguments: dict[str, Any] | None = None
    reason: str | None = None
    user_call: dict[str, Any] | None = None


class GradeRecord(_Row):
    """A grader's verdict on a session, with every vote it was made from."""

    session_id: str
    grader_model: str
    prompt_version: str
    votes: list[Any]
    verdict: Verdict
    flagged: bool
    created: datetime
    flag: GradeFlagReason | None = None


def decode_json_columns(row: dict[str, Any], *columns: str) -> dict[str, Any]:
    """``row`` with the named JSON text columns parsed."""
    return {**row, **{name: json.loads(row[name]) for name in columns}}


def run_from_row(row: dict[str, Any]) -> RunRecord:
    """The record a ``runs`` row holds."""
    return RunRecord.model_validate(decode_json_columns(row, "manifest"))


def request_from_row(row: dict[str, Any]) -> HumanRequestRecord:
    """The record a ``human_requests`` row holds."""
    return HumanRequestRecord.model_validate(_edited_arguments(decode_json_columns(row, "context")))


def answer_from_row(row: dict[str, Any]) -> HumanAnswerRecord:
    """The record a ``human_answers`` row holds."""
    return HumanAnswerRecord.model_validate(_edited_arguments(row))


def _edited_arguments(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with its JSON reply columns (an edit's arguments, a person's call) parsed."""
    text = row.get("edited_arguments")
    if text is not None:
        row = {**row, "edited_arguments": json.loads(text)}
    call = row.get("user_call")
    return row if call is None else {**row, "user_call": _json_object(call)}


def _json_object(text: str) -> dict[str, Any] | None:
    """A JSON column meant to hold an object; anything else (damaged by hand) reads as None."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def grade_from_row(row: dict[str, Any]) -> GradeRecord:
    """The record a ``grades`` row holds."""
    return GradeRecord.model_validate(decode_json_columns(row, "votes"))


def require_session(db: Database, session_id: str) -> None:
    """Check that the session ``session_id`` exists.

    Raises:
        KeyError: No such session.
    """
    if db.execute("SELECT 1 FROM sessions WHERE id = ?", [session_id]).fetchone() is None:
        raise KeyError(f"no session {session_id!r}")


# The columns every event has; the payload holds only the kind's own fields.
EVENT_COLUMNS = frozenset({"session_id", "seq", "kind", "ts"})


def event_payload(event: Event) -> str:
    """The ``payload`` column for ``event``: its own fields, scrubbed, as JSON."""
    return to_json(event.model_dump(mode="json", exclude=set(EVENT_COLUMNS)))


def event_from_row(row: dict[str, Any]) -> Event:
    """The typed event an ``events`` row holds."""
    shared = {name: row[name] for name in EVENT_COLUMNS}
    return parse_event(json.loads(row["payload"]) | shared)


# Appending an event bumps its session's row in the same transaction: the
# new ``n_events`` is the event's seq (so seqs are gap-free and unique, and
# a missing session shows as no row), and the counters and awareness answers
# stay current so that listing sessions never reads events.
BUMP_SESSION_SQL = """
UPDATE sessions SET
    n_events = n_events + :events,
    n_model_calls = n_model_calls + :model_calls,
    n_tool_calls = n_tool_calls + :tool_calls,
    n_tool_errors = n_tool_errors + :tool_errors,
    n_human_questions = n_human_questions + :human_questions,
    prompt_tokens = prompt_tokens + :prompt_tokens,
    completion_tokens = completion_tokens + :completion_tokens,
    info_awareness = COALESCE(:info_awareness, info_awareness),
    tool_awareness = COALESCE(:tool_awareness, tool_awareness)
WHERE id = :id
RETURNING n_events
"""


# PostgreSQL appends an event in one statement (one round trip to the server
# where two would be): the bump's new count is the event's seq. An event of
# a session that does not exist is still inserted (with seq 0), and its
# foreign key fails the statement and so the transaction: nothing of the
# write is kept, though its replies are read only after the block
# (``send_events``). SQLite runs the two statements, which cost it no round
# trip (no UPDATE in a WITH there).
APPEND_EVENT_PG_SQL = f"""
WITH bumped AS ({BUMP_SESSION_SQL.strip()})
INSERT INTO events (session_id, seq, kind, ts, payload)
SELECT :id, COALESCE((SELECT n_events FROM bumped), 0), :kind, :ts, :payload
RETURNING seq
"""


@functools.cache  # a few keys, asked for on every such append
def append_once_pg_sql(key: str) -> str:
    """``APPEND_EVENT_PG_SQL`` for an event logged once per ``key`` (a request id, a call id).

    It appends nothing (no row comes back) when the session's log holds an
    event of the same kind with the same ``:once`` value of ``key`` already.
    The check and the append are one statement, so a pipelined transaction
    need not wait for the check's reply before it sends the append.
    """
    guarded = BUMP_SESSION_SQL.strip().replace(
        "WHERE id = :id",
        "WHERE id = :id AND NOT EXISTS (SELECT 1 FROM events WHERE session_id = :id"
        f" AND kind = :kind AND JSON_TEXT(payload, {key}) = :once)",
    )
    return APPEND_EVENT_PG_SQL.replace(BUMP_SESSION_SQL.strip(), guarded).replace(
        "RETURNING seq",
        # Bumped, or (to fail on the foreign key) the session is missing.
        "WHERE EXISTS (SELECT 1 FROM bumped)"
        " OR NOT EXISTS (SELECT 1 FROM sessions WHERE id = :id)\nRETURNING seq",
    )


def session_bump_of(events: Sequence[Event]) -> dict[str, Any]:
    """The parameters of ``BUMP_SESSION_SQL`` for appending ``events`` of one session at once.

    The counters add up; an awareness answer is the last one given, as one
    bump after another would leave it.
    """
    bumps = [session_bump(event) for event in events]
    total = bumps[0]
    for bump in bumps[1:]:
        for name in _COUNTED:
            total[name] += bump[name]
        for name in ("info_awareness", "tool_awareness"):
            total[name] = bump[name] if bump[name] is not None else total[name]
    return total


_COUNTED = (
    "events",
    "model_calls",
    "tool_calls",
    "tool_errors",
    "human_questions",
    "prompt_tokens",
    "completion_tokens",
)


def session_bump(event: Event) -> dict[str, Any]:
    """The parameters of ``BUMP_SESSION_SQL`` for appending ``event``."""
    bump: dict[str, Any] = {"id": event.session_id, "events": 1, "model_calls": 0, "tool_calls": 0}
    bump |= {"tool_errors": 0, "human_questions": 0, "prompt_tokens": 0}
    bump |= {"completion_tokens": 0, "info_awareness": None, "tool_awareness": None}
    if isinstance(event, ModelCallEvent):
        bump["model_calls"] = 1
        bump["prompt_tokens"] = event.prompt_tokens or 0
        bump["completion_tokens"] = event.completion_tokens or 0
    elif isinstance(event, ToolCallEvent):
        bump["tool_calls"] = 1
        bump["tool_errors"] = int(not event.ok)
    elif isinstance(event, HumanQuestionEvent):
        bump["human_questions"] = 1
    elif isinstance(event, AwarenessEvent):
        column = "info_awareness" if event.question == "information" else "tool_awareness"
        bump[column] = event.answer
    return bump


def now_text() -> str:
    """The current UTC time as ISO 8601 text, the form every time column holds."""
    return utc_now().isoformat()
