"""aah db merge and aah db copy carry every table: the team, the asking readings, user calls."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aah.db_url import parse_location
from aah.store import SessionStore, check_database, copy_database
from aah.store import schema as schema
from aah.store.asking import AskReading
from aah.store.copy import _TABLES as COPIED
from aah.store.merge import _KEYED, merge_databases

# What each table holds, less the row numbers a store gives anew (``id``), by key order.
_CONTENTS = {
    "human_requests": "id, session_id, answer, answered_by, user_call",
    "human_answers": "request_id, annotator, answer, user_call",
    "people": "name, role, team",
    "run_team": "run, reviewers, guidelines",
    "assignments": "request_id, run, assignee",
    "reviews": "request_id, annotator, reviewer, verdict, correction, note, seconds, created",
    "ask_readings": "session_id, question_seq, blocker, rules, grader, grader_model,"
    " prompt_version, votes, flag, created",
    "signed_out_tokens": "token_id, until",
}


def contents(location: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the tables above, as lists (duplicates show as repeated rows)."""
    SessionStore(location).close()
    db = schema.connect(location)
    try:
        return {
            table: sorted(
                (tuple(row) for row in db.execute(f"SELECT {columns} FROM {table}").fetchall()),
                key=repr,
            )
            for table, columns in _CONTENTS.items()
        }
    finally:
        db.close()


def shard(path: Path, task: str, *, team: str = "nl", reading: bool = True) -> str:
    """A shard of run ``r`` holding one answered, reviewed, read task; its request's id."""
    with SessionStore(path) as store:
        store.create_run("r", {"model": "m"})
        session = store.open_session("Book it", run="r", task_id=task)
        store.set_status(session.id, "waiting")
        request = store.humans.create_human_request(session.id, "Which city?", k=2).id
        store.team.set_person("rita", "reviewer", team)
        store.team.set_person(f"ann{task}", "annotator", team)
        store.team.set_run_team("r", reviewers=2, guidelines="# Be brief")
        store.team.assign(["@nl"], run="r")
        store.team.assign([f"ann{task}"], request_id=request)
        call = {"name": "send", "arguments": {"to": task}}
        store.humans.answer_human_request(request, f"ann{task}", "Porto", user_call=call)
        store.team.add_review("rita", request, "correct", correction="Lisbon", seconds=2.0)
        if reading:
            store.ask_readings.save(
                [
                    AskReading(
                        session_id=session.id,
                        question_seq=3,
                        blocker="param:city",
                        rules=True,
                        grader=False,
                        grader_model="g",
                        prompt_version="v1",
                        votes=[{"round": 1, "raw": "no", "vote": False}],
                    )
                ]
            )
        store.sign_out_token(
            f"token-{task}", datetime(2099, 1, 1, tzinfo=UTC), now=datetime.now(UTC)
        )
    return request


def union(*stores: dict[str, list[tuple[Any, ...]]]) -> dict[str, list[tuple[Any, ...]]]:
    return {
        table: sorted({row for found in stores for row in found[table]}, key=repr)
        for table in _CONTENTS
    }


def test_merging_two_shards_twice_carries_every_row_once(tmp_path: Path) -> None:
    one, two = shard(tmp_path / "1.db", "1"), shard(tmp_path / "2.db", "2")
    into = tmp_path / "merged.db"
    shards = [tmp_path / "1.db", tmp_path / "2.db"]
    first = merge_databases(shards, into)
    again = merge_databases(shards, into)  # idempotent
    merged = contents(into)
    assert merged == union(contents(shards[0]), contents(shards[1]))
    assert {table: len(rows) for table, rows in merged.items()} == {
        "human_requests": 2,
        "human_answers": 2,
        "people": 3,  # rita once, ann1, ann2
        "run_team": 1,
        "assignments": 3,  # @nl for run r once, ann1 and ann2 for their items
        "reviews": 2,
        "ask_readings": 2,
        "signed_out_tokens": 2,
    }
    calls = [{"name": "send", "arguments": {"to": task}} for task in ("1", "2")]
    for table in ("human_requests", "human_answers"):  # the user_call columns (schema 8)
        assert sorted((json.loads(row[-1]) for row in merged[table]), key=repr) == calls
    assert [(s.reviews, s.ask_readings, s.assignments, s.people) for s in first] == [
        (1, 1, 2, 2),
        (1, 1, 1, 1),
    ]
    assert all(s.conflicts == 0 for s in first + again)
    assert [(s.sessions, s.reviews, s.ask_readings, s.assignments, s.people) for s in again] == [
        (0, 0, 0, 0, 0)
    ] * 2
    with SessionStore(into) as store:  # the desk reads the merged team as each shard's
        assert store.team.assignees(one) == ["ann1"] and store.team.assignees(two) == ["ann2"]
        assert [r.correction for r in store.team.reviews()] == ["Lisbon", "Lisbon"]
        assert store.team.run_team("r").guidelines == "# Be brief"


def test_a_row_whose_key_the_target_holds_otherwise_is_a_conflict(tmp_path: Path) -> None:
    shard(tmp_path / "1.db", "1")
    shard(tmp_path / "2.db", "2", team="de")  # rita in another group there
    into = tmp_path / "merged.db"
    merge_databases([tmp_path / "1.db"], into)
    (second,) = merge_databases([tmp_path / "2.db"], into)
    assert second.conflicts == 1  # the target's rita is kept
    assert ("rita", "reviewer", "nl") in contents(into)["people"]
    assert second.sessions == 1 and second.reviews == 1 and second.ask_readings == 1


def test_merged_shards_copy_to_postgres_and_back_whole(postgres_url: str, tmp_path: Path) -> None:
    shards = [tmp_path / "1.db", tmp_path / "2.db"]
    shard(shards[0], "1")
    shard(shards[1], "2")
    into = tmp_path / "merged.db"
    merge_databases(shards, into)
    merge_databases(shards, into)
    server = parse_location(postgres_url)
    first = copy_database(into, server)
    assert first.problems == [] and first.copied["ask_readings"] == 2
    assert first.copied["signed_out_tokens"] == 2 and first.copied["reviews"] == 2
    assert set(copy_database(into, server).copied.values()) == {0}  # again: nothing twice
    back = tmp_path / "back.db"
    assert copy_database(server, back).problems == []
    assert contents(into) == contents(server) == contents(back)
    assert contents(back) == union(contents(shards[0]), contents(shards[1]))


def test_merge_and_copy_name_every_table_of_the_schema() -> None:
    """A new table must be carried by both, or named here with why it stays behind."""
    merged = {"runs", "sessions", "events", "human_requests", "human_answers", "grades"}
    merged |= {"approved_runs"} | {table for table, *_ in _KEYED}
    # Claims are a person's hold on an item at one desk; closed_requests is made by triggers.
    assert set(schema.TABLES) - merged == {"claims", "closed_requests"}
    assert set(schema.TABLES) - {table for table, *_ in COPIED} == {"closed_requests"}


def test_db_check_finds_a_reading_of_no_session(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    SessionStore(path).close()
    with sqlite3.connect(path) as conn:  # foreign keys off: as a hand-edited file may be
        conn.execute(
            "INSERT INTO ask_readings (session_id, question_seq, blocker, created)"
            " VALUES ('gone', 1, 'param:city', '2026-01-01')"
        )
    conn.close()
    problems = check_database(path).problems
    assert any("1 row(s) of ask_readings belong to no session" in line for line in problems)
