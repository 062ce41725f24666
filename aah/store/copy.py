"""``aah db copy SRC DST``: a store from one engine to the other, resumable and checked.

Every table is copied in the order its references need (runs, sessions,
then what belongs to them), each row inserted unless its key is there
already: a copy cut off midway is run again and goes on, adding nothing
twice. ``closed_requests`` is not copied: the destination's triggers make
it as the requests arrive. Afterwards each table must hold as many rows in
the destination as in the source, with the same contents: a digest of its
rows, the same whatever their order, must match on both sides (a row
number the destination gives anew, ``events.id``, is left out of it). A
destination holding runs or sessions the source lacks is refused before
anything is written; one whose rows changed since an earlier copy fails
these checks.

LangGraph's checkpoints are not copied (the two engines' savers store them
differently): a session still waiting for a person or running cannot go on
from the copy, and the summary counts them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aah.db_url import is_database_url
from aah.errors import AahError
from aah.store import schema as schema
from aah.store.sessions import SessionStore
from aah.store.writes import write_lock, write_transaction

# Each table with the columns that identify a row; ``id`` columns that are
# only a row number (events, answers) are left for the destination to number.
_TABLES: tuple[tuple[str, tuple[str, ...], bool], ...] = (
    ("runs", ("name",), True),
    ("sessions", ("id",), True),
    ("events", ("session_id", "seq"), False),
    ("human_requests", ("id",), True),
    ("human_answers", ("request_id", "annotator"), False),
    ("claims", ("request_id", "annotator"), True),
    ("approved_runs", ("session_id", "call_id"), True),
    ("grades", ("id",), True),
    # A team (schema 9): an assignment keeps its id (it has no other key), as grades do.
    ("people", ("name",), True),
    ("run_team", ("run",), True),
    ("assignments", ("id",), True),
    ("reviews", ("request_id", "reviewer"), False),
    # How each question reads against each blocker (schema 10).
    ("ask_readings", ("session_id", "question_seq", "blocker"), True),
    # The web page's sign-outs: a kept sign-in signed out stays so in the copy.
    ("signed_out_tokens", ("token_id",), True),
)
_BATCH = 1000
_MODULUS = 2**256


@dataclass
class CopySummary:
    """What a copy found and did.

    Attributes:
        copied: Rows inserted now, by table (0 where a resumed copy had them).
        source: Rows of each table in the source.
        target: Rows of each table in the destination after the copy.
        unfinished: Sessions running or waiting, whose checkpoints stay behind.
    """

    copied: dict[str, int] = field(default_factory=dict)
    source: dict[str, int] = field(default_factory=dict)
    target: dict[str, int] = field(default_factory=dict)
    unfinished: int = 0
    source_digest: dict[str, str] = field(default_factory=dict)
    target_digest: dict[str, str] = field(default_factory=dict)

    @property
    def problems(self) -> list[str]:
        """One line per table whose counts, or else whose contents, differ."""
        found = []
        for table, count in self.source.items():
            if self.target.get(table, 0) != count:
                found.append(
                    f"{table}: {self.target.get(table, 0)} row(s) in the destination,"
                    f" {count} in the source"
                )
            elif self.target_digest.get(table) != self.source_digest.get(table):
                found.append(
                    f"{table}: as many rows in the destination as in the source, but other"
                    " contents (a row changed there, or held there before the copy)"
                )
        return found


def copy_database(source: Path, target: Path) -> CopySummary:
    """Copy every row of the store at ``source`` into the store at ``target`` (made if missing).

    Raises:
        AahError: ``source`` is missing, or both name the same store.
    """
    if not is_database_url(source) and not source.is_file():
        raise AahError(f"no session database at {source}: check the path")
    if source == target or (
        not is_database_url(source)
        and not is_database_url(target)
        and source.resolve() == target.resolve()
    ):
        raise AahError(f"{source} is the destination itself: name another DST")
    SessionStore(source).close()  # an older file is upgraded first, so columns match
    SessionStore(target).close()  # creates the destination's tables
    src, dst = schema.connect(source), schema.connect(target)
    summary = CopySummary()
    try:
        _refuse_a_foreign_destination(src, dst, target)
        for table, keys, keep_id in _TABLES:
            summary.copied[table] = _copy_table(src, dst, target, table, keys, keep_id)
        if getattr(dst, "engine", "sqlite") == "postgresql":
            # Grades and assignments kept their ids; the next one made there must not reuse one.
            for kept in ("grades", "assignments"):
                dst.execute(
                    f"SELECT setval(pg_get_serial_sequence('{kept}', 'id'),"
                    f" (SELECT COALESCE(max(id), 0) + 1 FROM {kept}), false)"
                )
            # A bulk load leaves the planner no statistics until autovacuum
            # comes round: without them it walks the queue row by row (the
            # light listing of 10,000 waiting took 2x as long).
            dst.execute("ANALYZE " + ", ".join(table for table, _, _ in _TABLES))
        for table, keys, keep_id in _TABLES:
            summary.source[table] = _count(src, table)
            summary.target[table] = _count(dst, table)
            columns = _copied_columns(src, table, keep_id)
            summary.source_digest[table] = rows_digest(src, table, columns, keys)
            summary.target_digest[table] = rows_digest(dst, table, columns, keys)
        summary.unfinished = int(
            src.execute(
                "SELECT count(*) FROM sessions WHERE status IN ('running', 'waiting')"
            ).fetchone()[0]
        )
    finally:
        src.close()
        dst.close()
    return summary


def _refuse_a_foreign_destination(src: Any, dst: Any, target: Path) -> None:
    """Raise before writing anything if ``dst`` holds runs or sessions the source lacks.

    A copy goes into an empty store, or into the one an earlier copy of the
    same source made (it resumes there); rows of another store would make
    the copy a merge, which ``aah db merge`` does with its checks.
    """
    for table, key in (("runs", "name"), ("sessions", "id")):
        theirs = {row[0] for row in dst.execute(f"SELECT {key} FROM {table}")}
        if not theirs:
            continue
        extra = theirs - {row[0] for row in src.execute(f"SELECT {key} FROM {table}")}
        if extra:
            raise AahError(
                f"{target} holds {len(extra)} {table[:-1]}(s) the source does not (e.g. "
                f"{sorted(extra)[0]!r}): copy into an empty database, or into the one an "
                "earlier copy of this store made"
            )


def _count(db: Any, table: str) -> int:
    return int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def _columns(db: Any, table: str) -> list[str]:
    """The table's columns as SQLite's schema names them (not PostgreSQL's ``rowid``)."""
    if getattr(db, "engine", "sqlite") == "postgresql":
        rows = db.execute(
            "SELECT column_name FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position",
            [table],
        ).fetchall()
    else:
        rows = [(row[1],) for row in db.execute(f"PRAGMA table_info({table})").fetchall()]
    return [name for (name,) in rows if name != "rowid"]


def _copied_columns(db: Any, table: str, keep_id: bool) -> list[str]:
    return [c for c in _columns(db, table) if keep_id or c != "id"]


def rows_digest(db: Any, table: str, columns: Sequence[str], keys: Sequence[str]) -> str:
    """A digest of ``table``'s rows (their ``columns``) that their order does not change.

    Each row is hashed alone (its values as JSON: text, whole numbers, real
    numbers and NULL read alike from both engines), and the hashes are
    added up modulo 2**256: the same rows give the same sum in any order,
    and a changed, missing or extra row changes it. The rows are read a page
    at a time in ``keys`` order.
    """
    names, order = ", ".join(columns), ", ".join(keys)
    total, offset = 0, 0
    while True:
        rows = db.execute(
            f"SELECT {names} FROM {table} ORDER BY {order} LIMIT {_BATCH} OFFSET {offset}"
        ).fetchall()
        if not rows:
            return f"{total:064x}"
        for row in rows:
            text = json.dumps(list(row), ensure_ascii=False, separators=(",", ":"))
            total = (total + int.from_bytes(hashlib.sha256(text.encode()).digest())) % _MODULUS
        offset += len(rows)


def _copy_table(
    src: Any, dst: Any, target: Path, table: str, keys: Sequence[str], keep_id: bool
) -> int:
    columns = _copied_columns(src, table, keep_id)
    names = ", ".join(columns)
    insert = (
        f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' for _ in columns)})"
        f" ON CONFLICT ({', '.join(keys)}) DO NOTHING"
    )
    order = ", ".join(keys)
    copied, offset = 0, 0
    lock = write_lock(target)
    while True:
        # Pages in key order: a resumed copy reads the same pages again, and
        # its inserts of rows already there do nothing.
        rows = src.execute(
            f"SELECT {names} FROM {table} ORDER BY {order} LIMIT {_BATCH} OFFSET {offset}"
        ).fetchall()
        if not rows:
            return copied
        with write_transaction(dst, lock) as db:
            copied += db.conn.executemany(insert, [tuple(row) for row in rows]).rowcount
        offset += len(rows)
