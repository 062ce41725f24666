"""Merging session databases: shards of one run, run in different processes.

A run split with ``--shard i/n`` writes n databases. Merging copies every
run, session and its events, human requests, answers, grades and approved
calls' run records into one
database, with the team (people, a run's review settings, assignments,
reviews) and the asking readings. Merging is idempotent (merging a file
twice adds nothing) and never duplicates a task: a session whose run and
task already exist is left out and counted as a conflict. A row identified
by its natural key (a person's name, a run's settings, a review by
request and reviewer, a reading by session, question and blocker, an
assignment by what it assigns to whom) is added once; one whose key the
target holds with other contents is left out the same way, the target's
kept, and counted as a conflict. LangGraph checkpoints are not merged;
finished sessions need none.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from aah.db_url import is_database_url
from aah.errors import AahError
from aah.store.manifest import pinned_difference
from aah.store.sessions import SessionStore


@dataclass
class MergeSummary:
    """What one source added to the target."""

    source: Path
    runs: int = 0
    sessions: int = 0
    events: int = 0
    human_requests: int = 0
    grades: int = 0
    approved_runs: int = 0
    people: int = 0
    run_team: int = 0
    assignments: int = 0
    reviews: int = 0
    ask_readings: int = 0
    conflicts: int = 0


def merge_databases(sources: Sequence[Path], into: Path) -> list[MergeSummary]:
    """Merge every database in ``sources`` into ``into`` (created if missing).

    Raises:
        AahError: a source is missing, or holds a run whose setup differs.
    """
    for location in (*sources, into):
        if is_database_url(location):
            raise AahError(
                f"aah db merge joins SQLite files, and {location} is a PostgreSQL URL: "
                "merge the shards into a file, or run the shards against the server itself"
            )
    for source in sources:
        if not source.is_file():
            raise AahError(f"no session database at {source}: check the path")
        if source.resolve() == into.resolve():
            raise AahError(f"{source} is the target itself: name another --into file")
    for source in sources:
        SessionStore(source).close()  # an older file is upgraded first, so columns match
    SessionStore(into).close()  # creates the schema in a new target
    conn = sqlite3.connect(into, timeout=30, isolation_level=None)
    try:
        return [_merge_one(conn, source) for source in sources]
    finally:
        conn.close()


def _merge_one(conn: sqlite3.Connection, source: Path) -> MergeSummary:
    summary = MergeSummary(source)
    conn.execute("ATTACH DATABASE ? AS src", (str(source),))
    try:
        conn.execute("BEGIN IMMEDIATE")
        summary.runs = _merge_runs(conn)
        _stage_new_sessions(conn, summary)
        summary.sessions = _copy(
            "sessions", conn, "SELECT * FROM src.sessions WHERE id IN (SELECT id FROM new_sessions)"
        )
        summary.events = _copy("events", conn, _children("events"), skip_id=True)
        summary.human_requests = _copy("human_requests", conn, _children("human_requests"))
        _copy(
            "human_answers",
            conn,
            "SELECT * FROM src.human_answers WHERE request_id IN "
            f"(SELECT id FROM src.human_requests WHERE {_NEW})",
            skip_id=True,
        )
        summary.grades = _copy("grades", conn, _children("grades"), skip_id=True)
        if _has_table(conn, "approved_runs"):
            # An approved call's run record goes with its session, so a shard
            # resumed after the merge never sends an approved call twice.
            summary.approved_runs = _copy("approved_runs", conn, _children("approved_runs"))
        _merge_keyed(conn, summary)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    finally:
        conn.execute("DROP TABLE IF EXISTS temp.new_sessions")
        conn.execute("DETACH DATABASE src")
    return summary


_NEW = "session_id IN (SELECT id FROM new_sessions)"


def _has_table(conn: sqlite3.Connection, table: str) -> bool:
    found = conn.execute(
        "SELECT 1 FROM src.sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()
    return found is not None


def _children(table: str) -> str:
    return f"SELECT * FROM src.{table} WHERE {_NEW}"


def _merge_runs(conn: sqlite3.Connection) -> int:
    added = 0
    for name, manifest_text in conn.execute("SELECT name, manifest FROM src.runs").fetchall():
        row = conn.execute("SELECT manifest FROM main.runs WHERE name = ?", (name,)).fetchone()
        if row is None:
            conn.execute("INSERT INTO main.runs SELECT * FROM src.runs WHERE name = ?", (name,))
            added += 1
            continue
        differs = pinned_difference(json.loads(row[0]), json.loads(manifest_text))
        if differs is not None:
            raise AahError(
                f"run {name!r} differs between the databases ({differs.field}: "
                f"{differs.ours!r} vs {differs.theirs!r}): merge only shards of one run"
            )
    return added


def _stage_new_sessions(conn: sqlite3.Connection, summary: MergeSummary) -> None:
    """Pick the source sessions the target lacks; count same-task conflicts."""
    conn.execute("CREATE TEMP TABLE new_sessions (id TEXT PRIMARY KEY)")
    conn.execute(
        "INSERT INTO new_sessions SELECT s.id FROM src.sessions s "
        "WHERE s.id NOT IN (SELECT id FROM main.sessions) AND NOT EXISTS ("
        " SELECT 1 FROM main.sessions m WHERE m.run = s.run AND m.task_id = s.task_id)"
    )
    summary.conflicts = conn.execute(
        "SELECT count(*) FROM src.sessions s WHERE s.id NOT IN (SELECT id FROM main.sessions) "
        "AND s.id NOT IN (SELECT id FROM new_sessions)"
    ).fetchone()[0]


# The tables merged by a natural key: the key's columns, whether ``id`` is
# only a row number (left for the target to number), and which source rows
# go (those of requests and sessions the target holds once the sessions are in).
_KEYED: tuple[tuple[str, tuple[str, ...], bool, str], ...] = (
    ("people", ("name",), False, "1"),
    # A web sign-out stays one wherever the store goes.
    ("signed_out_tokens", ("token_id",), False, "1"),
    ("run_team", ("run",), False, "1"),
    (
        "assignments",
        ("request_id", "run", "assignee"),
        True,
        "s.request_id IS NULL OR s.request_id IN (SELECT id FROM main.human_requests)",
    ),
    (
        "reviews",
        ("request_id", "reviewer"),
        True,
        "s.request_id IN (SELECT id FROM main.human_requests)",
    ),
    (
        "ask_readings",
        ("session_id", "question_seq", "blocker"),
        False,
        "s.session_id IN (SELECT id FROM main.sessions)",
    ),
)


def _merge_keyed(conn: sqlite3.Connection, summary: MergeSummary) -> None:
    """Add the source's team and readings rows the target lacks; count differing ones."""
    for table, keys, skip_id, where in _KEYED:
        if not _has_table(conn, table):
            continue
        columns = [row[1] for row in conn.execute(f"PRAGMA main.table_info({table})")]
        columns = [c for c in columns if not (skip_id and c == "id")]
        same_key = " AND ".join(f"m.{k} IS s.{k}" for k in keys)
        differs = " OR ".join(f"m.{c} IS NOT s.{c}" for c in columns)
        summary.conflicts += conn.execute(
            f"SELECT count(*) FROM src.{table} AS s WHERE ({where}) AND EXISTS"
            f" (SELECT 1 FROM main.{table} AS m WHERE {same_key})"
            f" AND NOT EXISTS (SELECT 1 FROM main.{table} AS m WHERE {same_key}"
            f" AND NOT ({differs}))"
        ).fetchone()[0]
        names = ", ".join(columns)
        picked = ", ".join(f"s.{c}" for c in columns)
        # DISTINCT: a key the source holds twice (assignments have no unique key) goes in once.
        added = conn.execute(
            f"INSERT INTO main.{table} ({names}) SELECT DISTINCT {picked} FROM src.{table} AS s"
            f" WHERE ({where}) AND NOT EXISTS (SELECT 1 FROM main.{table} AS m WHERE {same_key})"
        ).rowcount
        if hasattr(summary, table):
            setattr(summary, table, added)


def _copy(table: str, conn: sqlite3.Connection, select: str, skip_id: bool = False) -> int:
    columns = [row[1] for row in conn.execute(f"PRAGMA main.table_info({table})")]
    if skip_id:
        columns = [c for c in columns if c != "id"]
    names = ", ".join(columns)
    cursor = conn.execute(f"INSERT INTO main.{table} ({names}) SELECT {names} FROM ({select})")
    return cursor.rowcount
