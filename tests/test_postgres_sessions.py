"""Across processes on PostgreSQL: a session parked by one runner is resumed by another.

The process that parked the session has exited; nothing but the database
(its checkpoint in LangGraph's PostgresSaver tables, its events, its pending
request) carries the session to the process that resumes it.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from postgres_cluster import PostgresServer
from runtime_support import ASK_FIRST_SCRIPT, runtime_on

from aah.db_url import parse_location
from aah.events import FinalAnswerEvent, HumanAnswerEvent, HumanQuestionEvent
from aah.runtime import resume_request, run_session
from aah.store import SessionStore, StoreFileError
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
        assert store.answer_human_request(request_id, "ana", "Lisbon")

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


def test_a_dropped_connection_fails_one_call_in_one_line_then_reconnects(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    url = parse_location(postgres_url)
    with SessionStore(url) as store:
        session = store.open_session("q")
        database = postgres_url.rsplit("/", 1)[1]
        # What a server restart does to every open connection.
        postgres_server.admin(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            f" WHERE datname = '{database}' AND pid != pg_backend_pid()"
        )
        with pytest.raises(StoreFileError) as lost:
            store.get_session(session.id)
        assert "\n" not in str(lost.value) and "aah db check" in str(lost.value)
        assert store.get_session(session.id) is not None  # a new connection
        store.append_event(FinalAnswerEvent(session_id=session.id, text="done"))
        assert [e.seq for e in store.events(session.id)] == [1]
