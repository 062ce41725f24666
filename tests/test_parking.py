"""Sessions waiting for a person are parked: one watcher per runner, no coroutine per session."""

import asyncio
import select
import sqlite3
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from runtime_support import ASK_FIRST_SCRIPT, fake_config, runtime_on, waiting_request

from aah.benchmark import RunOptions
from aah.benchmark.failtalms import BatchRunner, choose_tasks
from aah.benchmark.failtalms.dataset import load_tasks
from aah.db_url import DatabaseURL, parse_location
from aah.errors import AahError
from aah.events import Event, FinalAnswerEvent, HumanAnswerEvent, HumanQuestionEvent
from aah.runtime import (
    AnswerWatcher,
    QueueHuman,
    SessionOutcome,
    SessionRequest,
    resume_request,
    run_session,
)
from aah.store import RequestWatch, SessionStore, copy_database
from aah.testing.fake_llm import FakeLLMServer
from aah.tools.registry.read import Registry


@pytest.fixture
def registry_path(shared_registry: Path) -> Path:
    return shared_registry


# -- the watch: which watched requests no longer wait --------------------------


def news(watch: RequestWatch) -> None:
    """Wait for PostgreSQL's notification of the last commit (SQLite's counter needs none)."""
    fd = watch.fileno()
    if fd is not None:
        assert select.select([fd], [], [], 5)[0], "no notification within 5 s"


# How a request stops waiting, done from another connection (another process's view).
SETTLE_CORPUS = {
    "answered": lambda store, rid: store.humans.answer_human_request(rid, "ana", "Lisbon"),
    "declined": lambda store, rid: store.humans.answer_human_request(rid, "ana", "", declined=True),
    "expired": lambda store, rid: store.humans.expire_human_request(rid),
    "session cancelled": lambda store, rid: store.cancel_session(
        store.humans.get_human_request(rid).session_id
    ),
}


@pytest.mark.parametrize("how", sorted(SETTLE_CORPUS))
def test_a_watched_request_is_ready_once_it_no_longer_waits(store_location: Path, how: str) -> None:
    db = store_location
    with SessionStore(db) as store:
        settled, still = waiting_request(store), waiting_request(store)
        watch = RequestWatch(db)
        watch.add([settled, still])
        assert watch.ready() == []
        SETTLE_CORPUS[how](store, settled)
        news(watch)
        assert watch.ready() == [settled]
        assert watch.ready() == []  # nothing committed since: not even a query
        watch.discard([settled])
        assert len(watch) == 1
        watch.close()


def test_a_request_settled_before_it_was_watched_is_ready_at_once(store_location: Path) -> None:
    db = store_location
    with SessionStore(db) as store:
        request_id = waiting_request(store)
        watch = RequestWatch(db)
        assert watch.ready() == []  # the last look predates the answer
        store.humans.answer_human_request(request_id, "ana", "Lisbon")
        watch.ready()
        watch.add([request_id])  # watched only after the answer was committed and seen
        assert watch.ready() == [request_id]
        watch.close()


def test_the_watcher_wakes_each_parked_session_once(store_location: Path) -> None:
    db = store_location
    woken: list[str] = []
    with SessionStore(db) as store:
        answered = waiting_request(store)
        due = waiting_request(store, deadline=datetime.now(UTC) + timedelta(seconds=30))
        waiting = waiting_request(store)
        watcher = AnswerWatcher(db)
        for request_id in (answered, due, waiting):
            deadline = store.humans.get_human_request(request_id).deadline  # type: ignore[union-attr]
            watcher.watch(request_id, deadline, lambda r=request_id: woken.append(r))
        assert watcher.check() == 0 and len(watcher) == 3
        store.humans.answer_human_request(answered, "ana", "Lisbon")
        asyncio.run(watcher.pause())  # on PostgreSQL: until the answer's notification
        assert watcher.check() == 1 and woken == [answered]
        assert watcher.check(now=time.time() + 31) == 1 and woken == [answered, due]
        store.humans.answer_human_request(answered, "bo", "Porto")  # a later answer wakes nothing
        assert watcher.check(now=time.time() + 31) == 0 and len(watcher) == 1
        watcher.close()


# -- a batch run parks its waiting sessions ----------------------------------------


def _answer_all(store: SessionStore, count: int, stop: threading.Event) -> list[str]:
    answered: list[str] = []

    def annotator() -> None:
        deadline = time.monotonic() + 60
        while len(answered) < count and time.monotonic() < deadline and not stop.is_set():
            pending = store.humans.pending_human_requests()
            if len(pending) + len(answered) < count:  # wait until every session is parked
                time.sleep(0.05)
                continue
            for request in reversed(pending):  # newest first: not the order they asked in
                assert store.humans.answer_human_request(request.id, "ana", "Lisbon")
                answered.append(request.id)

    threading.Thread(target=annotator, daemon=True).start()
    return answered


def test_parked_sessions_hold_no_coroutine_and_all_finish_once_answered(
    shared_data: Path, registry_path: Path, tmp_path: Path
) -> None:
    tasks = choose_tasks(load_tasks(shared_data), 3, [])[:12]
    db = tmp_path / "queue.db"
    store = SessionStore(db)
    stop = threading.Event()
    answered = _answer_all(store, len(tasks), stop)
    tasks_while_all_wait: list[int] = []

    def on_waiting(count: int) -> None:
        if count == len(tasks) and not tasks_while_all_wait:
            tasks_while_all_wait.append(len(asyncio.all_tasks()))

    with FakeLLMServer(ASK_FIRST_SCRIPT) as llm:
        runner = BatchRunner(
            RunOptions(run="q", human="queue", concurrency=4),
            Registry(registry_path),
            fake_config(llm),
        )
        summary = asyncio.run(runner.run(tasks, db, on_waiting=on_waiting))
    stop.set()
    assert summary.finished == len(tasks) and summary.errors == 0, summary.error_messages
    # The run, its watcher and the session that parked last (reporting, then
    # returning): none for the other waiting sessions.
    assert tasks_while_all_wait and tasks_while_all_wait[0] <= 3, tasks_while_all_wait
    assert sorted(answered) == sorted(r.id for r in _all_requests(store))
    for session in store.list_sessions(run="q"):
        events = store.events(session.id)
        assert session.status == "finished"
        assert sum(isinstance(e, HumanQuestionEvent) for e in events) == 1
        assert [e.answer for e in events if isinstance(e, HumanAnswerEvent)] == ["Lisbon"]
    store.close()


def _all_requests(store: SessionStore) -> list:  # type: ignore[type-arg]
    rows = store.humans._connection.rows("SELECT id FROM human_requests")  # noqa: SLF001
    return [store.humans.get_human_request(row["id"]) for row in rows]


def test_a_parked_session_past_its_deadline_gets_the_fallback_and_a_cancelled_one_ends(
    shared_data: Path, registry_path: Path, tmp_path: Path
) -> None:
    tasks = choose_tasks(load_tasks(shared_data), 1, [])[:2]
    db = tmp_path / "queue.db"
    store = SessionStore(db)

    def cancel_one() -> None:
        deadline = time.monotonic() + 30
        while len(store.humans.pending_human_requests()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        first = store.humans.pending_human_requests()[0]
        assert store.cancel_session(first.session_id)

    person = threading.Thread(target=cancel_one)
    person.start()
    with FakeLLMServer(ASK_FIRST_SCRIPT) as llm:
        runner = BatchRunner(
            RunOptions(run="q", human="queue", human_deadline=1.5),
            Registry(registry_path),
            fake_config(llm),
        )
        started = time.monotonic()
        summary = asyncio.run(runner.run(tasks, db))
    person.join()
    assert time.monotonic() - started < 20
    statuses = sorted(s.status for s in store.list_sessions(run="q"))
    assert statuses == ["cancelled", "finished"]
    assert summary.finished == 1 and summary.errors == 1
    assert list(summary.error_counts) == ["the session was cancelled while it waited"]
    finished = next(s for s in store.list_sessions(run="q") if s.status == "finished")
    answers = [e for e in store.events(finished.id) if isinstance(e, HumanAnswerEvent)]
    assert [a.answered_by for a in answers] == ["deadline-fallback"]
    store.close()


# -- two processes resuming one parked session: only one goes on ---------------


def test_a_parked_session_resumed_twice_at_once_goes_on_once(store_location: Path) -> None:
    db = store_location

    async def scenario(llm: FakeLLMServer) -> list[SessionOutcome]:
        async with runtime_on(llm, db) as first:
            parked = await run_session(
                SessionRequest(
                    query="Weather where I live?", human=QueueHuman(first.store, park=True)
                ),
                first,
            )
        assert parked.status == "waiting" and parked.waiting_on is not None
        with SessionStore(db) as store:
            store.humans.answer_human_request(parked.waiting_on, "ana", "Lisbon")
        # Its runner and `aah sessions resume`, each with its own runtime, at the same moment.
        async with runtime_on(llm, db) as runner, runtime_on(llm, db) as other:
            return list(
                await asyncio.gather(
                    run_session(resume_request(runner.store, parked.session_id).request, runner),
                    run_session(resume_request(other.store, parked.session_id).request, other),
                )
            )

    with FakeLLMServer(ASK_FIRST_SCRIPT) as llm:
        outcomes = asyncio.run(scenario(llm))
    # The slower one finds it running ("went on elsewhere"), or, on a loaded
    # machine, already finished (it then only reads it back): never both go on.
    first, second = sorted(o.error or "" for o in outcomes)
    assert first == "" and (second == "" or second.startswith("the session went on elsewhere")), (
        outcomes
    )
    assert all(o.status == "finished" for o in outcomes if not o.error), outcomes
    with SessionStore(db) as store:
        session = store.get_session(outcomes[0].session_id)
        assert session is not None and session.status == "finished"
        kinds = Counter(type(e) for e in store.events(session.id))
        assert kinds[HumanAnswerEvent] == kinds[FinalAnswerEvent] == 1, kinds


def test_a_resume_that_reads_the_answer_another_just_logged_does_not_go_on(
    store_location: Path,
) -> None:
    # The narrowest interleaving of the test above, made to happen: this
    # resumer reads the session as waiting, then, before it reads the log,
    # the other resumer claims it and logs the answer. Finding the answer
    # logged is no licence to go on: only the claim is.
    db = store_location

    async def scenario(llm: FakeLLMServer) -> SessionOutcome:
        async with runtime_on(llm, db) as first:
            parked = await run_session(
                SessionRequest(
                    query="Weather where I live?", human=QueueHuman(first.store, park=True)
                ),
                first,
            )
        assert parked.waiting_on is not None
        with SessionStore(db) as store:
            store.humans.answer_human_request(parked.waiting_on, "ana", "Lisbon")
        async with runtime_on(llm, db) as late:
            resume = resume_request(late.store, parked.session_id).request
            read_log = late.store.events

            def other_went_on_first(session_id: str) -> list[Event]:
                with SessionStore(db) as other:
                    answer = HumanAnswerEvent(
                        session_id=session_id,
                        request_id=parked.waiting_on or "",
                        answer="Lisbon",
                        answered_by="ana",
                    )
                    assert other.resume_waiting(session_id, [answer]) is not None
                return read_log(session_id)

            late.store.events = other_went_on_first  # type: ignore[method-assign]
            return await run_session(resume, late)

    with FakeLLMServer(ASK_FIRST_SCRIPT) as llm:
        outcome = asyncio.run(scenario(llm))
    assert (outcome.error or "").startswith("the session went on elsewhere while it waited")
    with SessionStore(db) as store:
        kinds = Counter(type(e) for e in store.events(outcome.session_id))
    assert kinds[HumanAnswerEvent] == 1 and kinds[FinalAnswerEvent] == 0, kinds


def test_an_answer_reaches_only_a_session_that_still_waits(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "s.db") as store:
        request_id = waiting_request(store)
        session_id = store.humans.get_human_request(request_id).session_id  # type: ignore[union-attr]
        assert store.resume_waiting(session_id) == []
        assert store.resume_waiting(session_id) is None  # running now: someone else went on
        store.cancel_session(session_id)
        assert store.resume_waiting(session_id) is None
        assert store.get_session(session_id).status == "cancelled"  # type: ignore[union-attr]


def test_a_watch_that_cannot_read_the_store_stops_the_run_and_leaves_sessions_parked(
    shared_data: Path, registry_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unreadable(self: RequestWatch) -> list[str]:
        raise sqlite3.DatabaseError("disk I/O error")

    monkeypatch.setattr(RequestWatch, "ready", unreadable)
    tasks = choose_tasks(load_tasks(shared_data), 1, [])[:2]
    db = tmp_path / "queue.db"
    with FakeLLMServer(ASK_FIRST_SCRIPT) as llm:
        runner = BatchRunner(
            RunOptions(run="q", human="queue"), Registry(registry_path), fake_config(llm)
        )
        with pytest.raises(AahError) as raised:
            asyncio.run(runner.run(tasks, db))
    message = str(raised.value)
    assert message.startswith("cannot watch the waiting questions in") and "disk I/O" in message
    assert message.endswith("run the same command again to go on")
    with SessionStore(db) as store:
        assert [s.status for s in store.list_sessions(run="q")] == ["waiting", "waiting"]


def test_a_waiting_session_copied_without_its_checkpoint_is_not_run_again(
    store_location: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # `aah db copy` copies sessions, events and requests, not LangGraph's
    # checkpoints. Resumed from the copy, a waiting session would start over:
    # its steps logged twice, its question asked twice. It is refused instead,
    # and the copy is left as it was.
    source = store_location
    target = (
        tmp_path / "copy.db"
        if isinstance(source, DatabaseURL)
        else parse_location(request.getfixturevalue("postgres_url"))
    )

    async def park(llm: FakeLLMServer) -> SessionOutcome:
        async with runtime_on(llm, source) as runtime:
            return await run_session(
                SessionRequest(
                    query="Weather where I live?", human=QueueHuman(runtime.store, park=True)
                ),
                runtime,
            )

    async def resume(llm: FakeLLMServer, session_id: str) -> SessionOutcome:
        async with runtime_on(llm, target) as runtime:
            request = resume_request(runtime.store, session_id).request
            # Run from the start, it would wait for an answer to its question asked again.
            return await asyncio.wait_for(run_session(request, runtime), 30)

    with FakeLLMServer(ASK_FIRST_SCRIPT) as llm:
        parked = asyncio.run(park(llm))
        assert parked.status == "waiting"
        copy_database(source, target)
        with SessionStore(target) as store:
            before = (store.events(parked.session_id), store.humans.pending_human_requests())
        outcome = asyncio.run(resume(llm, parked.session_id))
    assert outcome.status == "waiting" and "no checkpoint" in (outcome.error or "")
    with SessionStore(target) as store:
        assert (store.events(parked.session_id), store.humans.pending_human_requests()) == before
        assert store.get_session(parked.session_id).status == "waiting"  # type: ignore[union-attr]
