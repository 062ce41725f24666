"""Schema 8: a call a person made with their own tools in a column of its own, on both engines.

A store of version 7 (no ``user_call`` column) is brought to 8 when opened; what it held
reads as before, and a call stored from then on reads back as the desk's typed call, in the
request and in the annotator's answer alike, never out of the answer's text.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from pathlib import Path

from test_desk_schema_7 import _execute

from aah.db_url import DatabaseURL
from aah.desk import UserToolCall
from aah.store import SessionStore
from aah.store.schema import SCHEMA_VERSION, expected_columns


def version_7_schema() -> str:
    """The schema as version 7 wrote it: no ``user_call`` column."""
    from aah.store.schema import SCHEMA_SQL

    v7 = re.sub(r",\n    -- [^\n]*\(USER_CALL_COLUMN\)\.\n\s*user_call TEXT", "", SCHEMA_SQL)
    assert "user_call" not in v7 and v7.count("reason TEXT") == 2
    return v7


def _version_7_store(location: Path) -> None:
    """A store as aah of schema 7 left it, with one waiting session and one answered question."""
    if isinstance(location, DatabaseURL):
        SessionStore(location).close()
        drops = [
            (f"ALTER TABLE {table} DROP COLUMN user_call", ())
            for table in ("human_requests", "human_answers")
        ]
        _execute(location, [*drops, ("UPDATE aah_schema SET version = 7", ())])
    else:
        location.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.closing(sqlite3.connect(location)) as conn:
            conn.executescript(version_7_schema())
            conn.execute("PRAGMA user_version = 7")
    asked = "2026-01-01T00:00:00+00:00"
    _execute(
        location,
        [
            (
                "INSERT INTO sessions (id, query, aah, thread_id, started, status)"
                " VALUES ('s1', 'My phone has no data.', 1, 's1', ?, 'waiting')",
                (asked,),
            ),
            (
                "INSERT INTO human_requests (id, session_id, question, created, status, answer,"
                " answered_by) VALUES ('old', 's1', 'Before', ?, 'answered', 'Words', 'ann')",
                (asked,),
            ),
            (
                "INSERT INTO human_requests (id, session_id, question, created)"
                " VALUES ('new', 's1', 'Now', ?)",
                (asked,),
            ),
        ],
    )


def test_a_version_7_store_gets_the_call_column_and_a_call_reads_back_typed(
    store_location: Path,
) -> None:
    _version_7_store(store_location)
    call = UserToolCall(tool="toggle_data", arguments={}, draft="I turned")
    with SessionStore(store_location) as store:
        old = store.humans.get_human_request("old")
        assert old is not None and (old.answer, old.user_call) == ("Words", None)
        assert store.humans.answer_human_request("new", "ann", "", user_call=call.stored())
        new = store.humans.get_human_request("new")
        (given,) = store.humans.human_answers("new")
    assert SCHEMA_VERSION >= 8 and "user_call" in expected_columns()["human_answers"]
    assert new is not None and new.answer == "" and new.status == "answered"
    assert UserToolCall.from_stored(new.user_call) == call
    assert UserToolCall.from_stored(given.user_call) == call


def test_a_call_column_damaged_by_hand_reads_as_a_call_of_no_tool(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with SessionStore(db) as store:
        session = store.open_session("q", setting="tau2")
        store.humans.create_human_request(session.id, "Now", {}, request_id="r")
    _execute(db, [("UPDATE human_requests SET user_call = '[1, 2' WHERE id = 'r'", ())])
    with SessionStore(db) as store:
        record = store.humans.get_human_request("r")
    assert record is not None and record.user_call is None
    assert UserToolCall.from_stored({"tool": 7}).tool == ""
