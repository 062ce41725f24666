"""On PostgreSQL a store write costs one round trip, and async callers never wait on it.

A write transaction's statements are pipelined and their replies read once
the block has committed, so BEGIN, the lock, the writes and COMMIT travel
together. The round trips are counted on the wire, by a relay between the
store and a real server (``wire_turns``), whatever the driver does inside.
Async code reaches a server's store through ``SessionStore.call``, on the
store's own thread, so the event loop goes on while a write waits.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import psycopg
import pytest
from langgraph.checkpoint.base import empty_checkpoint
from postgres_cluster import PostgresServer, raw_rows
from wire_turns import TurnCounter, counting_turns

from aah.db_url import parse_location
from aah.events import FinalAnswerEvent, HumanAnswerEvent, HumanQuestionEvent, ModelCallEvent
from aah.runtime.checkpoints import EventOutbox, session_checkpointer
from aah.store import SessionStore
from aah.store.writes import WRITE_LOCK_KEY, send_events

_T = TypeVar("_T")


@pytest.fixture
def relayed(postgres_server: PostgresServer) -> Iterator[tuple[Path, TurnCounter]]:
    """A new database's location, reached through a relay that counts round trips."""
    name = postgres_server.create_database()
    with counting_turns(postgres_server.port) as counter:
        url = postgres_server.url(name).replace(f":{postgres_server.port}/", f":{counter.port}/")
        yield parse_location(url), counter


def turns(counter: TurnCounter, work: Callable[[], _T]) -> tuple[int, _T]:
    """The round trips ``work`` made, and what it returned."""
    before = counter.turns
    result = work()
    time.sleep(0.05)  # the relay forwards the last reply before counting is read
    return counter.turns - before, result


def holding_the_write_lock(server: PostgresServer, url: str) -> psycopg.Connection[Any]:
    """A connection in a transaction that holds the store-wide write lock: exclusive writes wait.

    ``COMMIT`` on it lets them go.
    """
    held = psycopg.connect(server.url(url.rsplit("/", 1)[1]), autocommit=True)
    held.execute("BEGIN")
    held.execute(f"SELECT pg_advisory_xact_lock({WRITE_LOCK_KEY})")
    return held


def question(session_id: str, request_id: str = "r1") -> HumanQuestionEvent:
    return HumanQuestionEvent(session_id=session_id, request_id=request_id, question="Which city?")


def test_each_write_of_a_session_is_one_round_trip(relayed: tuple[Path, TurnCounter]) -> None:
    location, counter = relayed
    with SessionStore(location) as store:
        store.create_run("r", {})
        made, session = turns(counter, lambda: store.open_session("Weather?", run="r", task_id="t"))
        assert made == 1
        again, same = turns(counter, lambda: store.open_session("Other?", run="r", task_id="t"))
        assert (again, same.id, same.query) == (1, session.id, "Weather?")

        logged = [question(session.id), ModelCallEvent(session_id=session.id, model="m", text="a")]
        made, stored = turns(counter, lambda: store.set_status(session.id, "waiting", logged))
        assert made == 1
        assert [(e.kind, e.seq) for e in stored] == [("human_question", 1), ("model_call", 2)]

        # The question is logged once per request: the same one again writes nothing.
        made, stored = turns(counter, lambda: store.set_status(session.id, "waiting", logged[:1]))
        assert (made, stored) == (1, [])

        # Whether the session still waits decides whether the answer is
        # written: its reply is read before the answer is sent.
        answer = HumanAnswerEvent(
            session_id=session.id, request_id="r1", answer="Lisbon", answered_by="p"
        )
        made, resumed = turns(counter, lambda: store.resume_waiting(session.id, [answer]))
        assert made == 2 and resumed is not None and resumed[0].seq == 3
        made, resumed = turns(counter, lambda: store.resume_waiting(session.id, [answer]))
        assert (made, resumed) == (2, None)  # not waiting: the check, then COMMIT of nothing

        final = FinalAnswerEvent(session_id=session.id, text="Sunny")
        made, stored = turns(
            counter, lambda: store.end_session(session.id, "finished", "Sunny", [final])
        )
        assert made == 1 and stored[0].seq == 4
        assert [e.kind for e in store.events(session.id)] == [
            "human_question",
            "model_call",
            "human_answer",
            "final_answer",
        ]
        assert store.get_session(session.id).status == "finished"  # type: ignore[union-attr]


def test_a_checkpoint_and_its_events_are_one_round_trip(relayed: tuple[Path, TurnCounter]) -> None:
    location, counter = relayed
    store = SessionStore(location)
    session = store.open_session("Hi")
    outbox = EventOutbox()
    config: Any = {"configurable": {"thread_id": session.thread_id, "checkpoint_ns": ""}}
    with session_checkpointer(location, outbox) as saver:
        saver.put(config, empty_checkpoint(), {}, {})  # opens the saver's connection
        for text in ("a", "b"):
            outbox.add(
                session.thread_id, ModelCallEvent(session_id=session.id, model="m", text=text)
            )
        written = config | {"configurable": config["configurable"] | {"checkpoint_id": "c2"}}
        made, _ = turns(counter, lambda: saver.put_writes(written, [("messages", [])], "task-1"))
    assert made == 1
    assert [e.text for e in store.events(session.id)] == ["a", "b"]  # type: ignore[attr-defined]
    store.close()


def test_an_event_of_a_missing_session_fails_the_whole_write(postgres_url: str) -> None:
    location = parse_location(postgres_url)
    with SessionStore(location) as store:
        session = store.open_session("Hi")
        events = [
            ModelCallEvent(session_id=session.id, model="m", text="kept back"),
            ModelCallEvent(session_id="no-such-session", model="m", text="lost"),
        ]
        with pytest.raises(KeyError, match="no-such-session"):
            store.append_events(events)
        with pytest.raises(KeyError, match="no-such-session"):
            store.set_status(session.id, "waiting", events)
        assert store.events(session.id) == []
        assert store.get_session(session.id).status == "running"  # type: ignore[union-attr]
        # The connection is fine afterwards: the next write goes through.
        assert [e.seq for e in store.append_events(events[:1])] == [1]
        with pytest.raises(KeyError, match="nobody"):
            store.end_session("nobody", "finished", "x")
        with pytest.raises(KeyError, match="no run named 'missing'"):
            store.open_session("Hi", run="missing", task_id="t")
    assert raw_rows(location, "SELECT count(*) FROM sessions")[0][0] == 1


def test_a_server_error_inside_a_pipelined_write_rolls_it_all_back(postgres_url: str) -> None:
    location = parse_location(postgres_url)
    with SessionStore(location) as store:
        session = store.open_session("Hi")
        event = ModelCallEvent(session_id=session.id, model="m", text="a")
        with (
            pytest.raises(psycopg.errors.CheckViolation),
            store._write() as db,  # noqa: SLF001 - the store's own write transaction
        ):
            send_events(db, [event])
            db.execute("UPDATE sessions SET status = 'no such status' WHERE id = ?", [session.id])
        assert store.events(session.id) == []
        assert store.append_events([event])[0].seq == 1


def test_async_code_waits_for_a_server_store_on_its_thread_while_the_loop_goes_on(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    store = SessionStore(parse_location(postgres_url))
    session = store.open_session("Hi")
    held = holding_the_write_lock(postgres_server, postgres_url)

    async def main() -> tuple[int, str, threading.Thread]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        ticker = asyncio.create_task(tick())
        threading.Timer(0.5, lambda: held.execute("COMMIT")).start()
        seen: list[threading.Thread] = []

        def end() -> str:
            seen.append(threading.current_thread())
            store.end_session(session.id, "finished", "done")
            return "ended"

        said = await store.call(end)
        ticker.cancel()
        return ticks, said, seen[0]

    ticks, said, thread = asyncio.run(main())
    assert said == "ended" and thread is not threading.main_thread()
    assert ticks >= 20  # the loop ran on through the half second the write waited
    held.close()
    store.close()


def test_a_cancelled_caller_waits_for_its_call_already_running(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    store = SessionStore(parse_location(postgres_url))
    session = store.open_session("Hi")
    held = holding_the_write_lock(postgres_server, postgres_url)

    async def main() -> None:
        call = asyncio.create_task(store.call(store.end_session, session.id, "finished", "x"))
        await asyncio.sleep(0.2)  # the call waits for the lock in its thread
        threading.Timer(0.3, lambda: held.execute("COMMIT")).start()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

    asyncio.run(main())
    # Cancelled, its caller went on only once the write already under way had ended.
    assert store.get_session(session.id).status == "finished"  # type: ignore[union-attr]
    held.close()
    store.close()


def test_an_sqlite_store_answers_async_code_inline(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "aah.db")

    async def main() -> threading.Thread:
        return await store.call(threading.current_thread)

    assert asyncio.run(main()) is threading.main_thread()
    store.close()
