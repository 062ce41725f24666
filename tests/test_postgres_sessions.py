"""Across processes on PostgreSQL: a session parked by one runner is resumed by another.

The process that parked the session has exited; nothing but the database
(its checkpoint in LangGraph's PostgresSaver tables, its events, its pending
request) carries the session to the process that resumes it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from postgres_cluster import PostgresServer
from runtime_support import ASK_FIRST_SCRIPT, runtime_on

from aah.db_url import parse_location
from aah.events import AwarenessEvent, FinalAnswerEvent, HumanAnswerEvent, HumanQuestionEvent
from aah.runtime import ScriptedHuman, SessionRequest, resume_request, run_session
from aah.store import SessionStore
from aah.testing.fake_llm import FakeLLMServer

PARK = """
import asyncio, json, sys
sys.path.insert(0, sys.argv[2])
from runtime_support import ASK_FIRST_SCRIPT, runtime_on
from aah.db_url import parse_location
from aah.runtime import QueueHuman, SessionRequest, run_session
from aah.testing.fake_llm import FakeLLMServer

async def park(llm):
    async with runtime_on(llm, parse_location(sys.argv[1])) as runtime:
        request = SessionRequest(
            query="Weather where I live?", human=QueueHuman(runtime.store, park=True)
        )
        outcome = await run_session(request, runtime)
    print(json.dumps([outcome.status, outcome.session_id, outcome.waiting_on]))

with FakeLLMServer(ASK_FIRST_SCRIPT) as llm:
    asyncio.run(park(llm))
"""


def test_a_session_parked_in_one_process_resumes_in_another(postgres_url: str) -> None:
    tests = str(Path(__file__).resolve().parent)
    parked = subprocess.run(
        [sys.executable, "-c", PARK, postgres_url, tests],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert parked.returncode == 0, parked.stderr
    status, session_id, request_id = json.loads(parked.stdout.strip().splitlines()[-1])
    assert status == "waiting" and request_id
    url = parse_location(postgres_url)
    with SessionStore(url) as store:
        assert store.get_session(session_id).status == "waiting"  # type: ignore[union-attr]
        assert store.humans.answer_human_request(request_id, "ana", "Lisbon")

    async def resume(llm: FakeLLMServer) -> str:
        async with runtime_on(llm, url) as runtime:
            outcome = await run_session(resume_request(runtime.store, session_id).request, runtime)
        return outcome.status

    with FakeLLMServer(ASK_FIRST_SCRIPT) as llm:
        assert asyncio.run(resume(llm)) == "finished"
    with SessionStore(url) as store:
        session = store.get_session(session_id)
        assert session is not None and session.status == "finished"
        assert session.final_answer == "Done: here is what you asked for."
        events = store.events(session_id)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        kinds = Counter(type(e) for e in events)
        assert kinds[HumanQuestionEvent] == kinds[HumanAnswerEvent] == 1, kinds
        assert kinds[FinalAnswerEvent] == 1, kinds


def test_connections_the_server_dropped_are_replaced_before_the_next_call(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    psycopg = pytest.importorskip("psycopg")
    url = parse_location(postgres_url)
    database = postgres_url.rsplit("/", 1)[1]
    others = f"FROM pg_stat_activity WHERE datname = '{database}' AND pid != pg_backend_pid()"
    with SessionStore(url) as store:
        session = store.open_session("q")
        # What a server restart does to every open connection.
        postgres_server.admin(f"SELECT pg_terminate_backend(pid) {others}")
        deadline = time.monotonic() + 30
        with psycopg.connect(postgres_server.url("postgres"), autocommit=True) as admin:
            while admin.execute(f"SELECT count(*) {others}").fetchone()[0]:  # type: ignore[index]
                assert time.monotonic() < deadline
                time.sleep(0.05)
        assert store.get_session(session.id) is not None  # on a new connection
        store.append_event(FinalAnswerEvent(session_id=session.id, text="done"))
        assert [e.seq for e in store.events(session.id)] == [1]


def test_sessions_side_by_side_log_their_steps_once_and_in_order(postgres_url: str) -> None:
    """The checkpointer writes sessions' steps on threads side by side; each log stays whole."""
    url = parse_location(postgres_url)

    async def many(llm: FakeLLMServer) -> list[str]:
        async with runtime_on(llm, url, human=ScriptedHuman(["Lisbon"] * 16)) as runtime:
            requests = [SessionRequest(query=f"Weather where I live? ({n})") for n in range(16)]
            outcomes = await asyncio.gather(*(run_session(r, runtime) for r in requests))
        assert {o.status for o in outcomes} == {"finished"}
        return [o.session_id for o in outcomes]

    with FakeLLMServer(ASK_FIRST_SCRIPT) as llm:
        session_ids = asyncio.run(many(llm))
    with SessionStore(url) as store:
        orders = set()
        for session_id in session_ids:
            events = store.events(session_id)
            assert [e.seq for e in events] == list(range(1, len(events) + 1))
            orders.add(tuple(e.kind for e in events))
    # Every session took the same steps; a write that overtook another would show.
    assert len(orders) == 1, orders
    (order,) = orders
    assert order.index("human_question") < order.index("human_answer") < order.index("final_answer")


def _slowed(rule: dict[str, Any]) -> dict[str, Any]:
    reply = rule["reply"]
    reply = {"text": reply} if isinstance(reply, str) else reply
    return rule | {"reply": reply | {"delay_ms": 150}}


def test_a_session_cancelled_mid_step_logs_each_step_once(postgres_url: str) -> None:
    """Cancelled while a checkpoint is on its way, a session's log has no step twice."""
    url = parse_location(postgres_url)
    slow = {"rules": [_slowed(rule) for rule in ASK_FIRST_SCRIPT["rules"]]}

    async def cancelled(llm: FakeLLMServer) -> list[str]:
        async with runtime_on(llm, url, human=ScriptedHuman(["Lisbon"] * 8)) as runtime:
            tasks = [
                asyncio.ensure_future(run_session(SessionRequest(query=f"Weather? ({n})"), runtime))
                for n in range(8)
            ]
            for index, task in enumerate(tasks):
                loop = asyncio.get_running_loop()
                loop.call_later(0.1 + 0.07 * index, task.cancel)
            await asyncio.gather(*tasks, return_exceptions=True)
        return [s.id for s in SessionStore(url).list_sessions()]

    with FakeLLMServer(slow) as llm:
        session_ids = asyncio.run(cancelled(llm))
    assert len(session_ids) == 8
    with SessionStore(url) as store:
        for session_id in session_ids:
            events = store.events(session_id)
            assert [e.seq for e in events] == list(range(1, len(events) + 1))
            kinds = Counter(e.kind for e in events)
            assert all(kinds[k] <= 1 for k in ("human_question", "human_answer", "final_answer"))
            asked = [e.question for e in events if isinstance(e, AwarenessEvent)]
            assert len(asked) == len(set(asked)), asked  # each awareness question once


def test_only_writes_with_an_exactly_once_rule_queue_for_the_store_wide_lock(
    postgres_url: str,
) -> None:
    # Starting a session and moving it between running and waiting touch its
    # own rows only: they go on while another process holds the write lock.
    # Logging a question (once per request) and ending a session (which takes
    # its questions out of the queue) wait for it.
    import threading

    import psycopg

    from aah.store.writes import WRITE_LOCK_KEY

    location = parse_location(postgres_url)
    done: list[str] = []
    threads: list[threading.Thread] = []

    def start(name: str, write: Any) -> threading.Thread:
        thread = threading.Thread(target=lambda: (write(), done.append(name)), daemon=True)
        thread.start()
        threads.append(thread)
        return thread

    with SessionStore(location) as store:
        first = store.open_session("q")  # the tables exist before the lock is taken
        with psycopg.connect(postgres_url, autocommit=True) as holder:
            holder.execute(f"SELECT pg_advisory_lock({WRITE_LOCK_KEY})")
            try:
                opened: list[Any] = []
                start("opened", lambda: opened.append(store.open_session("q"))).join(5)
                start("waiting", lambda: store.set_status(first.id, "waiting")).join(5)
                assert done == ["opened", "waiting"]
                session = opened[0]
                awareness = AwarenessEvent(
                    session_id=session.id, question="information", answer="yes", raw="y"
                )
                start("running", lambda: store.set_status(session.id, "running", [awareness]))
                threads[-1].join(5)
                assert done[-1] == "running"
                asked = HumanQuestionEvent(session_id=session.id, request_id="r1", question="?")
                ended = FinalAnswerEvent(session_id=first.id, text="done")
                start("asked", lambda: store.set_status(session.id, "waiting", [asked]))
                start("ended", lambda: store.end_session(first.id, "finished", "done", [ended]))
                threads[-1].join(0.5)
                threads[-2].join(0.5)
                assert done == ["opened", "waiting", "running"]  # both queue behind the lock
            finally:
                holder.execute(f"SELECT pg_advisory_unlock({WRITE_LOCK_KEY})")
                for thread in threads:
                    thread.join(10)
        assert sorted(done[3:]) == ["asked", "ended"]
        assert [e.kind for e in store.events(session.id)] == ["awareness", "human_question"]
        assert store.get_session(first.id).status == "finished"  # type: ignore[union-attr]


def test_a_run_waiting_for_a_person_outlasts_a_server_restart(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    # `aah run --human queue` waits for an answer through the store. The
    # server restarting meanwhile (every connection cut) is waited out: the
    # answer given once it is back reaches the agent, and the run ends well.
    url = postgres_server.url(postgres_server.create_database())
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))},
        "AAH_MODEL": "fake-model",
        "AAH_API_KEY": "sk-fake-0000",
        "AAH_DB": url,
        "COLUMNS": "120",
    }
    store = SessionStore(parse_location(url))
    with FakeLLMServer(ASK_FIRST_SCRIPT) as llm:
        run = subprocess.Popen(
            [sys.executable, "-m", "aah", "run", "Weather where I live?", "--human", "queue"]
            + ["--no-discover", "--http", "mock"],
            env={**env, "AAH_BASE_URL": llm.base_url},
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 60
            while not (pending := store.humans.pending_human_requests()):
                assert run.poll() is None and time.monotonic() < deadline, run.communicate()
                time.sleep(0.1)
            postgres_server.restart()
            time.sleep(1.5)  # a poll or two meet the cut connection
            store.close()
            store = SessionStore(parse_location(url))
            assert store.humans.answer_human_request(pending[0].id, "ana", "Lisbon")
            out, err = run.communicate(timeout=60)
        finally:
            if run.poll() is None:
                run.kill()
            store.close()
    assert run.returncode == 0, err
    assert "final answer: Done" in out and "Traceback" not in err
