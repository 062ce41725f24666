"""Schema 7: a decision in columns of its own, on SQLite and PostgreSQL, old stores read as before.

A store of version 6 (decisions kept as JSON or words in ``answer``,
contexts without a version, the call under ``approval``) is brought to 7 by
``aah db migrate``; what it held reads as it did, and what is decided from
then on goes to the new columns.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

import pytest
from postgres_cluster import raw_rows
from test_db_url import aah
from test_store import version_6_schema

from aah.db_url import DatabaseURL
from aah.desk import approval_context, decision_of, question_context
from aah.store import SessionStore
from aah.store.schema import SCHEMA_VERSION

CALL = {
    "request_id": "old-edit",
    "call_id": "c1",
    "tool": "booking__create",
    "method": "POST",
    "arguments": {"rooms": 2},
    "parameters": [{"name": "rooms", "type": "integer", "required": True}],
    "rule": "every POST",
    "fallback": "reject",
}
ASKED = "2026-01-01T00:00:00+00:00"


def _execute(location: Path, statements: list[tuple[str, tuple[object, ...]]]) -> None:
    """Run ``statements`` on the store through the engine's own driver, in one transaction."""
    if isinstance(location, DatabaseURL):
        import psycopg

        with psycopg.connect(location.url) as conn:
            for sql, params in statements:
                conn.execute(sql.replace("?", "%s"), params)
        return
    with contextlib.closing(sqlite3.connect(location)) as conn, conn:
        for sql, params in statements:
            conn.execute(sql, params)


def _version_6_store(location: Path) -> None:
    """A store as aah of schema 6 left it, with one session."""
    if isinstance(location, DatabaseURL):
        SessionStore(location).close()
        columns = ("decision", "edited_arguments", "reason")
        _execute(
            location,
            [
                *[
                    (f"ALTER TABLE {table} DROP COLUMN {column}", ())
                    for table in ("human_requests", "human_answers")
                    for column in columns
                ],
                ("ALTER TABLE human_requests DROP CONSTRAINT human_requests_kind_check", ()),
                (
                    "ALTER TABLE human_requests ADD CONSTRAINT human_requests_kind_check"
                    " CHECK (kind IN ('question', 'approval'))",
                    (),
                ),
                ("UPDATE aah_schema SET version = 6", ()),
            ],
        )
    else:
        location.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.closing(sqlite3.connect(location)) as conn:
            conn.executescript(version_6_schema())
            conn.execute("PRAGMA user_version = 6")
    _execute(
        location,
        [
            (
                "INSERT INTO sessions (id, query, aah, thread_id, started, status)"
                " VALUES ('s1', 'Book two rooms.', 1, 's1', ?, 'waiting')",
                (ASKED,),
            )
        ],
    )


def _old_request(
    request_id: str, kind: str, context: dict[str, object], answer: str | None, status: str
) -> tuple[str, tuple[object, ...]]:
    return (
        "INSERT INTO human_requests (id, session_id, question, context, status, created, answer,"
        " answered_by, kind) VALUES (?, 's1', 'Allow it', ?, ?, ?, ?, ?, ?)",
        (
            request_id,
            json.dumps(context),
            status,
            ASKED,
            answer,
            None if answer is None else "ann",
            kind,
        ),
    )


def test_a_version_6_store_is_migrated_and_reads_as_before(
    store_location: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _version_6_store(store_location)
    edit = {"decision": "edit", "arguments": {"rooms": 3}, "reason": "three"}
    call = {"query": "Book two rooms.", "approval": CALL}
    _execute(
        store_location,
        [
            _old_request("old-edit", "approval", call, json.dumps(edit), "answered"),
            _old_request("old-words", "approval", call, "yes", "answered"),
            _old_request("old-declined", "approval", call, "", "declined"),
            _old_request(
                "old-question", "question", {"agent": "MCP client x"}, "Lisbon", "answered"
            ),
            # Two pending ones asked at the same moment: the queue's order is the insert order.
            _old_request("z-pending", "approval", call, None, "pending"),
            _old_request("a-pending", "approval", call, None, "pending"),
        ],
    )
    where = store_location.url if isinstance(store_location, DatabaseURL) else str(store_location)
    status, printed = aah(["db", "migrate", where], tmp_path, monkeypatch, capsys)
    assert status == 0 and f"uses session schema {SCHEMA_VERSION}" in printed, printed
    assert SCHEMA_VERSION >= 7
    with SessionStore(store_location) as store:
        read = {rid: store.humans.get_human_request(rid) for rid in ("old-edit", "old-words")}
        edited, approved = (decision_of(r) for r in read.values() if r is not None)
        assert (edited.decision, edited.arguments, edited.reason) == ("edit", {"rooms": 3}, "three")
        assert (approved.decision, approved.decided_by) == ("approve", "ann")
        declined = store.humans.get_human_request("old-declined")
        assert declined is not None and decision_of(declined).decision == "reject"
        question = store.humans.get_human_request("old-question")
        assert question is not None and question_context(question.context).asker == "MCP client x"
        assert [r.id for r in store.humans.pending_human_requests()] == ["z-pending", "a-pending"]
        pending = store.humans.get_human_request("z-pending")
        assert pending is not None
        assert approval_context(pending.context).call.arguments == {"rooms": 2}
        # Decided from now on: in the columns, never JSON in ``answer``.
        assert store.humans.decide_approval(
            "z-pending", "ann", "respond", response="Booked: room 12"
        )
        assert store.humans.decide_approval(
            "a-pending", "ann", "edit", arguments={"rooms": 4}, reason="four"
        )
        responded = store.humans.get_human_request("z-pending")
        assert responded is not None and responded.decision == "respond"
        assert decision_of(responded).response == "Booked: room 12"
        redone = store.humans.get_human_request("a-pending")
        assert redone is not None and (redone.decision, redone.edited_arguments) == (
            "edit",
            {"rooms": 4},
        )
        assert [a.decision for a in store.humans.human_answers("a-pending")] == ["edit"]
        # The new kind the CHECK now lets in.
        asked = store.humans.create_human_request("s1", "Your email?", {}, kind="elicitation")
        assert asked.kind == "elicitation"
    rows = raw_rows(
        store_location, "SELECT answer, reason FROM human_requests WHERE id = 'a-pending'"
    )
    assert rows == [("", "four")]


# Decisions the store refuses: one line each, nothing written.
BAD_DECISIONS = [
    ({"decision": "maybe"}, "unknown decision"),
    ({"decision": "edit"}, "an edit needs the new arguments"),
    ({"decision": "respond"}, "a response needs its text"),
    ({"decision": "respond", "response": "  \n "}, "a response needs its text"),
]


@pytest.mark.parametrize(("how", "problem"), BAD_DECISIONS)
def test_a_decision_that_cannot_be_used_is_refused(
    tmp_path: Path, how: dict[str, str], problem: str
) -> None:
    with SessionStore(tmp_path / "s.db") as store:
        session = store.open_session("Book.")
        request = store.humans.create_human_request(session.id, "Approve?", {}, kind="approval")
        decision = how.pop("decision")
        with pytest.raises(ValueError, match=problem):
            store.humans.decide_approval(request.id, "ann", decision, **how)  # type: ignore[arg-type]
        assert store.humans.human_answers(request.id) == []


def test_an_approval_is_decided_and_a_question_answered_never_the_other_way(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "s.db") as store:
        session = store.open_session("Book.")
        approval = store.humans.create_human_request(session.id, "Approve?", {}, kind="approval")
        question = store.humans.create_human_request(session.id, "Which city?", {})
        with pytest.raises(ValueError, match="decide it"):
            store.humans.answer_human_request(approval.id, "ann", "yes")
        with pytest.raises(ValueError, match="not an approval"):
            store.humans.decide_approval(question.id, "ann", "approve")
        assert (
            store.humans.human_answers(approval.id) == store.humans.human_answers(question.id) == []
        )
