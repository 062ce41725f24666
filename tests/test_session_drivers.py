"""One driver per session: a hold that another store, process or run cannot share, and a crash ends.

On SQLite (an fcntl lock beside the file) and PostgreSQL (an advisory lock),
with a real second process killed with SIGKILL.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from runtime_support import ASK_FIRST_SCRIPT, runtime_on

from aah.db_url import DatabaseURL
from aah.runtime import SessionRequest, run_session
from aah.store import SessionStore
from aah.testing.fake_llm import FakeLLMServer


def test_a_held_session_is_refused_elsewhere_until_let_go(store_location: Path) -> None:
    with SessionStore(store_location) as one, SessionStore(store_location) as two:
        assert one.take_session("s1")
        assert not one.take_session("s1")  # a second run in the same store
        assert not two.take_session("s1")  # another store of the same database
        assert two.take_session("s2")  # other sessions are free
        one.let_go_session("s1")
        one.let_go_session("s1")  # twice is harmless
        assert two.take_session("s1")
        two.let_go_session("nobody-holds-this")  # nor is one not held
    with SessionStore(store_location) as three:
        assert three.take_session("s1") and three.take_session("s2")  # closing let go


def _location_text(location: Path) -> str:
    return location.url if isinstance(location, DatabaseURL) else str(location)


def test_a_killed_holders_sessions_are_free_again(store_location: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
                import sys, time
                from aah.store import SessionStore
                store = SessionStore(sys.argv[1])
                assert store.take_session("s1")
                print("held", flush=True)
                time.sleep(120)
                """
            ),
            _location_text(store_location),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with SessionStore(store_location) as store:
            assert not store.take_session("s1")
            os.kill(holder.pid, signal.SIGKILL)
            holder.wait(timeout=30)
            # The kernel (or the server, once it sees the connection close) let go.
            deadline = time.monotonic() + 10
            while not store.take_session("s1"):
                assert time.monotonic() < deadline, "the killed process's hold outlived it"
                time.sleep(0.05)
    finally:
        holder.kill()
        holder.wait(timeout=30)


def test_a_session_another_process_runs_is_left_to_it_untouched(store_location: Path) -> None:
    async def scenario(llm: FakeLLMServer) -> None:
        async with runtime_on(llm, store_location) as rt:
            made = await run_session(SessionRequest(query="Weather where I live?"), rt)
            asked = len(llm.requests)
            with SessionStore(store_location) as elsewhere:
                assert elsewhere.take_session(made.session_id)
                before = rt.store.events(made.session_id)
                refused = await run_session(
                    SessionRequest(
                        query="Weather where I live?", session_id=made.session_id, retry_errors=True
                    ),
                    rt,
                )
                assert rt.store.events(made.session_id) == before  # nothing written
            assert refused.status == made.status and len(llm.requests) == asked
            assert refused.error == (
                "the session went on elsewhere: another process runs it now "
                f"({made.status} there); resume it once that process ends"
            )

    with FakeLLMServer(ASK_FIRST_SCRIPT) as llm:
        asyncio.run(scenario(llm))


def test_sessions_run_together_each_hold_their_own_and_let_go(tmp_path: Path) -> None:
    async def scenario(llm: FakeLLMServer) -> list[str]:
        async with runtime_on(llm, tmp_path / "s.db") as rt:
            first = await asyncio.gather(
                *(run_session(SessionRequest(query=f"q{n}"), rt) for n in range(8))
            )
            # Every hold ended with its run: the same sessions may be run again.
            again = await asyncio.gather(
                *(
                    run_session(SessionRequest(query="again", session_id=o.session_id), rt)
                    for o in first
                )
            )
        return [o.error or "" for o in [*first, *again]]

    with FakeLLMServer(ASK_FIRST_SCRIPT) as llm:
        errors = asyncio.run(scenario(llm))
    assert Counter(errors) == Counter({"": 16})


_OPS = st.lists(
    st.tuples(
        st.sampled_from(["take", "let_go", "close"]),
        st.integers(0, 2),  # which store
        st.sampled_from(["a", "b", "c"]),  # which session
    ),
    max_size=40,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=_OPS)
def test_any_order_of_holds_matches_one_owner_per_session(tmp_path: Path, ops: list[Any]) -> None:
    # The model: each session has at most one owning store; taking an owned
    # one fails, letting go of one not owned does nothing, closing frees all.
    path = tmp_path / f"{uuid.uuid4().hex}.db"
    stores = [SessionStore(path) for _ in range(3)]
    owner: dict[str, int] = {}
    try:
        for op, which, session in ops:
            if op == "take":
                assert stores[which].take_session(session) == (session not in owner)
                owner.setdefault(session, which)
            elif op == "let_go":
                stores[which].let_go_session(session)
                if owner.get(session) == which:
                    del owner[session]
            else:
                stores[which].close()
                stores[which] = SessionStore(path)
                owner = {s: w for s, w in owner.items() if w != which}
    finally:
        for store in stores:
            store.close()
    with SessionStore(path) as after:  # every hold ended with its store
        assert all(after.take_session(s) for s in "abc")


def test_a_batch_waits_for_a_hold_that_ends_and_then_runs_the_session(tmp_path: Path) -> None:
    # A task handed over from a killed worker: the killed process's hold ends
    # a moment after the hand-over; the batch's runtime waits for it.
    db = tmp_path / "s.db"

    async def scenario(llm: FakeLLMServer) -> tuple[str | None, str]:
        async with runtime_on(llm, db, wait_for_held=30) as rt:
            opened = rt.store.open_session("Weather where I live?")
            with SessionStore(db) as dying:
                assert dying.take_session(opened.id)
                asyncio.get_running_loop().call_later(0.3, dying.let_go_session, opened.id)
                outcome = await run_session(
                    SessionRequest(query="Weather where I live?", session_id=opened.id), rt
                )
        return outcome.error, outcome.status

    with FakeLLMServer(ASK_FIRST_SCRIPT) as llm:
        error, status = asyncio.run(scenario(llm))
    assert error is None and status == "finished"
