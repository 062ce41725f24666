"""On PostgreSQL, store writes that wait together commit together (``aah.store.grouped``).

Async callers' writes queue on the store's thread; those that find others
waiting with them go out in one transaction, a round trip per step for the
whole group. What each returns, what it logs and what it refuses stay as
if it had run alone: a write that meets an error fails alone, a group that
meets a server error falls back to its writes one by one, and a server
that goes away fails the group in one line. Each test holds the store's
write lock from another connection first, so that the writes pile up
behind the first one, as a runner's do when its sessions write together.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import psycopg
import pytest
from postgres_cluster import PostgresServer, raw_rows
from test_postgres_round_trips import holding_the_write_lock, question

from aah.db_url import parse_location
from aah.errors import AahError
from aah.events import HumanAnswerEvent, ModelCallEvent
from aah.store import SessionStore

SESSIONS = 12


def _behind_the_lock(
    server: PostgresServer, url: str, calls: list[Callable[[], Awaitable[Any]]]
) -> list[Any]:
    """What each call returned (or raised), all made while another connection held the lock."""
    held = holding_the_write_lock(server, url)

    async def main() -> list[Any]:
        running = [asyncio.ensure_future(call()) for call in calls]
        await asyncio.sleep(0.3)  # every call is queued behind the first, which waits
        held.execute("COMMIT")
        return await asyncio.gather(*running, return_exceptions=True)

    try:
        return asyncio.run(main())
    finally:
        held.close()


def _transactions(url: str, table: str) -> int:
    """How many transactions wrote ``table``'s rows (their ``xmin``s)."""
    rows = raw_rows(parse_location(url), f"SELECT count(DISTINCT xmin::text) FROM {table}")
    return int(rows[0][0])


def test_writes_that_wait_together_commit_together_and_each_gets_its_own_result(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    store = SessionStore(parse_location(postgres_url))
    sessions = [store.open_session(f"Weather {n}?") for n in range(SESSIONS)]
    results = _behind_the_lock(
        postgres_server,
        postgres_url,
        [
            lambda s=s: store.call(store.log_question, question(s.id), [])  # type: ignore[misc]
            for s in sessions
        ],
    )
    for session, (known, stored) in zip(sessions, results, strict=True):
        assert known == []
        assert [(e.kind, e.seq, e.session_id) for e in stored] == [
            ("human_question", 1, session.id)
        ]
        assert store.get_session(session.id).status == "waiting"  # type: ignore[union-attr]
    # The first write went alone (it waited for the lock); the rest together.
    assert _transactions(postgres_url, "events") <= 3

    answers = [
        HumanAnswerEvent(session_id=s.id, request_id="r1", answer="Oslo", answered_by="p")
        for s in sessions
    ]
    # Half are no longer waiting: their answers are not written, as alone.
    for session in sessions[::2]:
        store.set_status(session.id, "running")
    resumed = _behind_the_lock(
        postgres_server,
        postgres_url,
        [
            lambda s=s, a=a: store.call(store.resume_waiting, s.id, [a])  # type: ignore[misc]
            for s, a in zip(sessions, answers, strict=True)
        ],
    )
    for number, (session, got) in enumerate(zip(sessions, resumed, strict=True)):
        if number % 2 == 0:
            assert got is None
            assert [e.kind for e in store.events(session.id)] == ["human_question"]
        else:
            assert [(e.kind, e.seq) for e in got] == [("human_answer", 2)]
            assert store.get_session(session.id).status == "running"  # type: ignore[union-attr]
    store.close()


def test_a_write_that_fails_in_a_group_fails_alone(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    store = SessionStore(parse_location(postgres_url))
    sessions = [store.open_session(f"Weather {n}?") for n in range(SESSIONS)]
    note = [ModelCallEvent(session_id=s.id, model="m", text="seen") for s in sessions]
    stray = ModelCallEvent(session_id="no-such-session", model="m", text="lost")
    calls: list[Callable[[], Awaitable[Any]]] = [
        lambda s=s, e=e: store.call(store.end_session, s.id, "finished", "Sunny", [e])  # type: ignore[misc]
        for s, e in zip(sessions, note, strict=True)
    ]
    # One names no session (it finds no row); one logs an event of a missing
    # session (a server error that rolls the group back, whose writes then
    # run alone). Neither takes another write down with it.
    calls.insert(3, lambda: store.call(store.end_session, "nobody", "finished", "x"))
    calls.insert(7, lambda: store.call(store.set_status, sessions[0].id, "running", [stray]))
    results = _behind_the_lock(postgres_server, postgres_url, calls)
    assert isinstance(results.pop(7), KeyError)
    assert isinstance(results.pop(3), KeyError)
    for session, stored in zip(sessions, results, strict=True):
        assert [(e.kind, e.seq) for e in stored] == [("model_call", 1)]
        assert store.get_session(session.id).status == "finished"  # type: ignore[union-attr]
    # Each logged once: none twice for the fall back to writing alone.
    assert raw_rows(parse_location(postgres_url), "SELECT count(*) FROM events") == [(SESSIONS,)]
    store.close()


def test_a_group_whose_connection_is_lost_fails_each_write_in_one_line(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    store = SessionStore(parse_location(postgres_url))
    sessions = [store.open_session(f"Weather {n}?") for n in range(SESSIONS)]
    held = holding_the_write_lock(postgres_server, postgres_url)

    def cut_the_waiting_writer() -> None:
        with psycopg.connect(postgres_server.url(postgres_url.rsplit("/", 1)[1])) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE wait_event_type = 'Lock' AND pid <> %s",
                [held.info.backend_pid],
            )

    async def main() -> list[Any]:
        running = [
            asyncio.ensure_future(store.call(store.end_session, s.id, "finished", "x"))
            for s in sessions
        ]
        await asyncio.sleep(0.3)
        await asyncio.to_thread(cut_the_waiting_writer)  # the first write, alone
        await asyncio.sleep(0.3)
        await asyncio.to_thread(cut_the_waiting_writer)  # the group behind it
        held.execute("COMMIT")
        return await asyncio.gather(*running, return_exceptions=True)

    results = asyncio.run(main())
    held.close()
    assert all(isinstance(got, AahError) for got in results), results
    assert all("\n" not in str(got) for got in results)
    # Nothing half written, and the store goes on with new connections.
    assert raw_rows(parse_location(postgres_url), "SELECT count(*) FROM events") == [(0,)]
    assert store.end_session(sessions[0].id, "finished", "x") == []
    store.close()


def test_a_write_cancelled_while_it_waits_in_the_queue_is_never_made(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    store = SessionStore(parse_location(postgres_url))
    first, second = store.open_session("One?"), store.open_session("Two?")
    held = holding_the_write_lock(postgres_server, postgres_url)

    async def main() -> None:
        waiting = asyncio.ensure_future(store.call(store.end_session, first.id, "finished", "x"))
        await asyncio.sleep(0.2)  # the first write runs, and waits for the lock
        queued = asyncio.ensure_future(store.call(store.end_session, second.id, "finished", "y"))
        await asyncio.sleep(0.1)
        queued.cancel()
        threading.Timer(0.2, lambda: held.execute("COMMIT")).start()
        with pytest.raises(asyncio.CancelledError):
            await queued
        await waiting

    asyncio.run(main())
    held.close()
    assert store.get_session(first.id).status == "finished"  # type: ignore[union-attr]
    assert store.get_session(second.id).status == "running"  # type: ignore[union-attr]
    store.close()
