"""Merging session databases: shards of one run, run in different processes.

A run split with ``--shard i/n`` writes n databases. Merging copies every
run, session and its events, human requests, answers, grades and approved
calls' run records into one
database. Merging is idempotent (merging a file twice adds nothing) and never
duplicates a task: a session whose run and task already exist is left out
and counted as a conflict. LangGraph checkpoints are not merged; finished
sessions need none.
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


def _copy(table: str, conn: sqlite3.Connection, select: str, skip_id: bool = False) -> int:
    columns = [row[1] for row in conn.execute(f"PRAGMA main.table_info({table})")]
    if skip_id:
        columns = [c for c in columns if c != "id"]
    names = ", ".join(columns)
    cursor = conn.execute(f"INSERT INTO main.{table} ({names}) SELECT {names} FROM ({select})")
    return cursor.rowcount
