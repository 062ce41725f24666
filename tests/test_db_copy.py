"""aah db copy: SQLite to PostgreSQL and back, resumable, the same rows on each side."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_store_queries import fill

from aah.db_url import parse_location
from aah.errors import AahError
from aah.events import FinalAnswerEvent
from aah.store import SessionStore, copy_database


def everything(location: Path) -> tuple[object, ...]:
    """What scoring and the queue read of a store, to compare two stores by."""
    with SessionStore(location) as store, store.queries() as read:
        sessions = store.list_sessions()
        return (
            [run.model_dump() for run in store.runs()],
            [s.model_dump() for s in sessions],
            {s.id: [e.model_dump() for e in store.events(s.id)] for s in sessions},
            {s.id: [g.model_dump() for g in store.grades(s.id)] for s in sessions},
            read.session_summaries(outside_runs=True),
            list(read.grade_verdicts(outside_runs=True)),
            read.annotator_answers(outside_runs=True),
            [r.model_dump() for r in store.humans.pending_human_requests()],
            store.humans.queue_listing("zed").total,
        )


def test_a_copy_to_postgres_and_back_holds_the_same_store(
    postgres_url: str, tmp_path: Path
) -> None:
    original = tmp_path / "a.db"
    with SessionStore(original) as store:
        fill(store)
        session = store.open_session("still waiting")
        store.set_status(session.id, "waiting")
        store.humans.create_human_request(session.id, "Which city?", k=2)
    server = parse_location(postgres_url)
    first = copy_database(original, server)
    assert first.problems == [] and first.unfinished == 3  # s3, s4 and this one
    assert first.copied["events"] == first.source["events"] > 0
    again = copy_database(original, server)  # a resumed copy adds nothing
    assert again.problems == [] and set(again.copied.values()) == {0}
    back = tmp_path / "b.db"
    assert copy_database(server, back).problems == []
    assert everything(original) == everything(server) == everything(back)
    with SessionStore(server) as store:  # the server's own numbering goes on past the copy
        some = store.list_sessions()[0]
        assert store.add_grade(some.id, "g", "v", [], "pass").verdict == "pass"


def test_a_copy_into_a_store_holding_other_sessions_is_refused_before_writing(
    postgres_url: str, tmp_path: Path
) -> None:
    with SessionStore(tmp_path / "a.db") as store:
        store.open_session("q")
    server = parse_location(postgres_url)
    with SessionStore(server) as store:
        theirs = store.open_session("another")
    with pytest.raises(AahError, match="holds 1 session.* the source does not .*empty database"):
        copy_database(tmp_path / "a.db", server)
    with SessionStore(server) as store:
        assert [s.id for s in store.list_sessions()] == [theirs.id]  # nothing written


def test_a_copy_whose_destination_gained_rows_fails_its_count(
    postgres_url: str, tmp_path: Path
) -> None:
    with SessionStore(tmp_path / "a.db") as store:
        session = store.open_session("q")
    server = parse_location(postgres_url)
    copy_database(tmp_path / "a.db", server)
    with SessionStore(server) as store:
        store.append_event(FinalAnswerEvent(session_id=session.id, text="only here"))
    summary = copy_database(tmp_path / "a.db", server)
    assert "events: 1 row(s) in the destination, 0 in the source" in summary.problems


def test_a_row_changed_in_the_destination_fails_the_content_check(
    postgres_url: str, tmp_path: Path
) -> None:
    import psycopg

    with SessionStore(tmp_path / "a.db") as store:
        fill(store)
    server = parse_location(postgres_url)
    first = copy_database(tmp_path / "a.db", server)
    assert first.problems == [] and first.source_digest == first.target_digest
    assert len(set(first.source_digest.values())) > 1  # each table its own digest
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE events SET ts = '2020-01-01T00:00:00+00:00' WHERE id = 1")
    again = copy_database(tmp_path / "a.db", server)  # resumed: adds nothing, counts agree
    assert set(again.copied.values()) == {0} and again.source == again.target
    assert again.problems == [
        "events: as many rows in the destination as in the source, but other contents"
        " (a row changed there, or held there before the copy)"
    ]


def test_the_content_digest_reads_alike_from_both_engines_in_any_order(
    postgres_url: str, tmp_path: Path
) -> None:
    from aah.store.copy import rows_digest
    from aah.store.schema import connect

    rows = [("b", 2, 0.5, None), ("a", 1, 2.0, "x é"), ("c", 3, -1.25, "")]
    for where, order in ((tmp_path / "t.db", rows), (parse_location(postgres_url), rows[::-1])):
        db = connect(where)
        db.execute("CREATE TABLE t (k TEXT PRIMARY KEY, n INTEGER, r REAL, s TEXT)")
        for row in order:
            db.execute("INSERT INTO t VALUES (?, ?, ?, ?)", list(row))
        digests = [rows_digest(db, "t", ["k", "n", "r", "s"], keys) for keys in (["k"], ["n"])]
        db.close()
        assert digests[0] == digests[1]
        assert digests[0] == "%064x" % expected_digest(rows)


def expected_digest(rows: list[tuple[object, ...]]) -> int:
    import hashlib
    import json

    return (
        sum(
            int.from_bytes(
                hashlib.sha256(
                    json.dumps(list(row), ensure_ascii=False, separators=(",", ":")).encode()
                ).digest()
            )
            for row in rows
        )
        % 2**256
    )


def test_a_copy_to_postgres_leaves_the_planner_statistics(
    postgres_url: str, tmp_path: Path
) -> None:
    # Without them, right after a bulk copy, the planner took each table
    # for empty and walked a queue of thousands row by row.
    import psycopg

    with SessionStore(tmp_path / "a.db") as store:
        for _ in range(3):
            session = store.open_session("waiting")
            store.set_status(session.id, "waiting")
            store.humans.create_human_request(session.id, "Which city?")
    server = parse_location(postgres_url)
    assert copy_database(tmp_path / "a.db", server).problems == []
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute(
            "SELECT relname, reltuples FROM pg_class"
            " WHERE relname IN ('sessions', 'human_requests') ORDER BY relname"
        ).fetchall()
    assert rows == [("human_requests", 3.0), ("sessions", 3.0)]


def test_a_missing_source_is_refused(tmp_path: Path) -> None:
    from aah.errors import AahError

    with pytest.raises(AahError, match="no session database"):
        copy_database(tmp_path / "none.db", tmp_path / "b.db")
    assert not (tmp_path / "b.db").exists()
