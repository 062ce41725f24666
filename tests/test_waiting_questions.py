"""Waiting questions never die silently: work-time limits, ended sessions, resume, cancel, expire."""

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from runtime_support import ASK_FIRST_SCRIPT, fake_config, waiting_request

from aah.benchmark import RunOptions
from aah.benchmark.failtalms import BatchRunner, choose_tasks
from aah.benchmark.failtalms.dataset import load_tasks
from aah.runtime import WorkClock, waiting_for_person, within_work_time
from aah.store import SessionStore
from aah.store.schema import SCHEMA_VERSION
from aah.testing.fake_llm import FakeLLMServer
from aah.tools.registry.read import Registry


@pytest.fixture
def registry_path(shared_registry: Path) -> Path:
    return shared_registry


# -- the work clock ---------------------------------------------------------


def test_waiting_for_a_person_stops_the_work_clock() -> None:
    async def session() -> str:
        await asyncio.sleep(0.1)  # work
        with waiting_for_person():
            await asyncio.sleep(0.6)  # a person answering
        await asyncio.sleep(0.1)  # work
        return "done"

    assert asyncio.run(within_work_time(session(), 0.4)) == "done"


def test_work_past_the_limit_times_out_even_after_a_wait() -> None:
    async def session() -> str:
        with waiting_for_person():
            await asyncio.sleep(0.3)
        await asyncio.sleep(5)  # work
        return "never"

    started = time.monotonic()
    with pytest.raises(TimeoutError):
        asyncio.run(within_work_time(session(), 0.3))
    assert time.monotonic() - started < 1.5


def test_a_clock_counts_nested_waits_once() -> None:
    async def measure() -> float:
        clock = WorkClock()
        with clock.paused(), clock.paused():
            await asyncio.sleep(0.2)
        return clock.worked()

    assert asyncio.run(measure()) < 0.1


def test_a_queue_batch_run_outlives_its_task_timeout_while_a_person_answers(
    shared_data: Path, registry_path: Path, tmp_path: Path
) -> None:
    tasks = choose_tasks(load_tasks(shared_data), 1, [])[:1]
    db = tmp_path / "queue.db"
    store = SessionStore(db)
    answered: list[float] = []

    def annotator() -> None:
        deadline = time.monotonic() + 30
        while not store.humans.pending_human_requests() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(4)  # longer than the task timeout
        request = store.humans.pending_human_requests()[0]
        answered.append(time.monotonic())
        assert store.humans.answer_human_request(request.id, "ana", "Lisbon")

    person = threading.Thread(target=annotator)
    person.start()
    with FakeLLMServer(ASK_FIRST_SCRIPT) as llm:
        runner = BatchRunner(
            RunOptions(run="q", human="queue", task_timeout=2),
            Registry(registry_path),
            fake_config(llm),
        )
        summary = asyncio.run(runner.run(tasks, db))
    person.join()
    assert answered and summary.finished == 1 and summary.errors == 0, summary.error_messages
    session = store.list_sessions(run="q")[0]
    assert session.status == "finished"
    store.close()


# -- questions whose session ended ------------------------------------------


ENDED_CORPUS = [
    ("finished", "this question's session has ended (finished)"),
    ("skipped", "this question's session has ended (skipped)"),
    ("error", "this question's session has ended (error)"),
    ("cancelled", "this question's session has ended (cancelled)"),
]


@pytest.mark.parametrize(("status", "reason"), ENDED_CORPUS)
def test_an_ended_sessions_question_leaves_every_list(
    tmp_path: Path, status: str, reason: str
) -> None:
    with SessionStore(tmp_path / "s.db") as store:
        request_id = waiting_request(store)
        kept = waiting_request(store)
        session_id = store.humans.get_human_request(request_id).session_id  # type: ignore[union-attr]
        store.end_session(session_id, status, None)  # type: ignore[arg-type]
        assert [r.id for r in store.humans.pending_human_requests()] == [kept]
        assert [r.id for r in store.humans.requests_for("ana")] == [kept]
        assert store.humans.closed_reason(request_id) == reason
        assert not store.humans.answer_human_request(request_id, "ana", "Lisbon")
        assert store.humans.get_human_request(request_id).status == "pending"  # type: ignore[union-attr]
        assert store.humans.closed_reason(kept) is None


def test_a_question_past_its_deadline_leaves_the_lists_and_names_its_fallback(
    tmp_path: Path,
) -> None:
    with SessionStore(tmp_path / "s.db") as store:
        past = datetime.now(UTC) - timedelta(seconds=1)
        ahead = datetime.now(UTC) + timedelta(minutes=5)
        gone = waiting_request(store, deadline=past, fallback="skip")
        waiting = waiting_request(store, deadline=ahead, fallback="idk")
        pending = store.humans.pending_human_requests()
        assert [r.id for r in pending] == [waiting]
        assert pending[0].deadline == ahead and pending[0].fallback == "idk"
        assert store.humans.closed_reason(gone) == (
            "this question's deadline passed (the skip fallback answered instead)"
        )
        assert not store.humans.answer_human_request(gone, "ana", "Lisbon")


def test_a_resumed_error_session_brings_its_question_back(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "s.db") as store:
        request_id = waiting_request(store)
        session_id = store.humans.get_human_request(request_id).session_id  # type: ignore[union-attr]
        store.end_session(session_id, "error", None)
        assert store.humans.pending_human_requests() == []
        store.set_status(session_id, "waiting")
        assert [r.id for r in store.humans.pending_human_requests()] == [request_id]
        assert store.humans.answer_human_request(request_id, "ana", "Lisbon")


def test_an_older_database_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(_V1_SCHEMA)
        conn.execute("PRAGMA user_version = 1")
        conn.execute(
            "INSERT INTO sessions (id, query, aah, thread_id, started)"
            " VALUES ('s1', 'q', 1, 's1', '2026-01-01T00:00:00+00:00')"
        )
        conn.execute(
            "INSERT INTO human_requests (id, session_id, question, created)"
            " VALUES ('r1', 's1', 'Which?', '2026-01-01T00:00:00+00:00')"
        )
    with SessionStore(path) as store:
        assert [r.id for r in store.humans.pending_human_requests()] == ["r1"]
        assert store.cancel_session("s1")
        assert store.get_session("s1").status == "cancelled"  # type: ignore[union-attr]
        assert store.humans.pending_human_requests() == []
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


_V1_SCHEMA = """
CREATE TABLE runs (name TEXT PRIMARY KEY, created TEXT NOT NULL, manifest TEXT NOT NULL DEFAULT '{}');
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, run TEXT REFERENCES runs(name), task_id TEXT, setting TEXT,
    query TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'running'
        CHECK (status IN ('running', 'waiting', 'finished', 'skipped', 'error')),
    aah INTEGER NOT NULL CHECK (aah IN (0, 1)), model TEXT, thread_id TEXT NOT NULL,
    started TEXT NOT NULL, ended TEXT, final_answer TEXT, info_awareness TEXT,
    tool_awareness TEXT, n_events INTEGER NOT NULL DEFAULT 0,
    n_model_calls INTEGER NOT NULL DEFAULT 0, n_tool_calls INTEGER NOT NULL DEFAULT 0,
    n_tool_errors INTEGER NOT NULL DEFAULT 0, n_human_questions INTEGER NOT NULL DEFAULT 0,
    prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0,
    UNIQUE (run, task_id)
);
CREATE INDEX sessions_by_status ON sessions (status, started);
CREATE TABLE events (
    id INTEGER PRIMARY KEY, session_id TEXT NOT NULL REFERENCES sessions(id),
    seq INTEGER NOT NULL, kind TEXT NOT NULL, ts TEXT NOT NULL, payload TEXT NOT NULL,
    UNIQUE (session_id, seq)
);
CREATE TABLE human_requests (
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES sessions(id),
    question TEXT NOT NULL, context TEXT NOT NULL DEFAULT '{}',
    status TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'answered', 'declined', 'expired')),
    created TEXT NOT NULL, k INTEGER NOT NULL DEFAULT 1 CHECK (k >= 1),
    answer TEXT, answered_by TEXT, answered_at TEXT
);
CREATE TABLE human_answers (
    id INTEGER PRIMARY KEY, request_id TEXT NOT NULL REFERENCES human_requests(id),
    annotator TEXT NOT NULL, answer TEXT NOT NULL,
    declined INTEGER NOT NULL DEFAULT 0 CHECK (declined IN (0, 1)),
    rating INTEGER CHECK (rating IN (0, 1)), seconds REAL, created TEXT NOT NULL,
    UNIQUE (request_id, annotator)
);
CREATE TABLE grades (
    id INTEGER PRIMARY KEY, session_id TEXT NOT NULL REFERENCES sessions(id),
    grader_model TEXT NOT NULL, prompt_version TEXT NOT NULL, votes TEXT NOT NULL DEFAULT '[]',
    verdict TEXT NOT NULL CHECK (verdict IN ('pass', 'fail')),
    flagged INTEGER NOT NULL DEFAULT 0 CHECK (flagged IN (0, 1)), created TEXT NOT NULL
);
"""


# -- resume, cancel and expire from the command line ------------------------


def _env(db: Path, llm: FakeLLMServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    return env | {
        "AAH_BASE_URL": llm.base_url,
        "AAH_MODEL": "fake-model",
        "AAH_DB": str(db),
        "AAH_LLM_RETRIES": "0",
        "COLUMNS": "200",
    }


def _aah(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aah", *args], env=env, capture_output=True, text=True, timeout=60
    )


def _start_queue_run(env: dict[str, str]) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "aah", "run", "Weather where I live?"]
    command += ["--human", "queue", "--http", "mock"]
    return subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _wait_for_question(store: SessionStore, process: subprocess.Popen[str]) -> str:
    deadline = time.monotonic() + 60
    while not store.humans.pending_human_requests():
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        assert time.monotonic() < deadline, "the session never asked"
        time.sleep(0.05)
    return store.humans.pending_human_requests()[0].id


def _killed_while_waiting(store: SessionStore, env: dict[str, str]) -> tuple[str, str]:
    """Start a queue run, SIGKILL it once it asks; its request and session ids."""
    run = _start_queue_run(env)
    request_id = _wait_for_question(store, run)
    run.send_signal(signal.SIGKILL)
    run.wait()
    session_id = store.humans.get_human_request(request_id).session_id  # type: ignore[union-attr]
    return request_id, session_id


def test_a_run_killed_while_it_waits_resumes_with_the_answer_given_meanwhile(
    tmp_path: Path,
) -> None:
    db = tmp_path / "aah.db"
    store = SessionStore(db)
    with FakeLLMServer(ASK_FIRST_SCRIPT) as llm:
        env = _env(db, llm)
        request_id, session_id = _killed_while_waiting(store, env)
        assert store.get_session(session_id).status == "waiting"  # type: ignore[union-attr]
        assert store.humans.answer_human_request(request_id, "ana", "Lisbon")
        resumed = _aah(env, "sessions", "resume", session_id[:10])
    assert resumed.returncode == 0, resumed.stderr
    assert f"session {session_id}: finished" in resumed.stdout
    session = store.get_session(session_id)
    assert session is not None and session.status == "finished"
    assert session.final_answer == "Done: here is what you asked for."
    assert session.n_human_questions == 1
    store.close()


def test_resume_waits_again_for_a_question_still_unanswered(tmp_path: Path) -> None:
    db = tmp_path / "aah.db"
    store = SessionStore(db)
    with FakeLLMServer(ASK_FIRST_SCRIPT) as llm:
        env = _env(db, llm)
        request_id, session_id = _killed_while_waiting(store, env)
        second = subprocess.Popen(
            [sys.executable, "-m", "aah", "sessions", "resume", session_id],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(1.5)
        assert second.poll() is None
        assert [r.id for r in store.humans.pending_human_requests()] == [request_id]
        assert store.humans.answer_human_request(request_id, "ana", "Lisbon")
        out, err = second.communicate(timeout=60)
    assert second.returncode == 0, err
    assert store.get_session(session_id).status == "finished"  # type: ignore[union-attr]
    store.close()


def test_cancel_takes_the_question_out_of_the_queue_and_ends_the_waiting_run(
    tmp_path: Path,
) -> None:
    db = tmp_path / "aah.db"
    store = SessionStore(db)
    with FakeLLMServer(ASK_FIRST_SCRIPT) as llm:
        env = _env(db, llm)
        running = _start_queue_run(env)
        request_id = _wait_for_question(store, running)
        session_id = store.humans.get_human_request(request_id).session_id  # type: ignore[union-attr]
        cancelled = _aah(env, "sessions", "cancel", session_id)
        assert cancelled.returncode == 0, cancelled.stderr
        assert cancelled.stdout.strip() == f"cancelled session {session_id}"
        assert store.humans.pending_human_requests() == []
        # The waiting process notices within a few polls and stops.
        running.communicate(timeout=30)
        assert store.get_session(session_id).status == "cancelled"  # type: ignore[union-attr]
        assert (
            store.humans.closed_reason(request_id)
            == "this question's session has ended (cancelled)"
        )
        again = _aah(env, "sessions", "cancel", session_id)
        resumed = _aah(env, "sessions", "resume", session_id)
    assert again.returncode == 2
    assert again.stderr.strip().endswith(
        f"session {session_id} is cancelled: only unfinished ones cancel"
    )
    assert resumed.returncode == 2
    assert f"session {session_id} is cancelled: there is nothing to resume" in resumed.stderr
    store.close()


def test_expire_cancels_only_sessions_idle_for_longer(tmp_path: Path) -> None:
    db = tmp_path / "aah.db"
    with SessionStore(db) as store:
        old = waiting_request(store)
        fresh = waiting_request(store)
        old_session = store.humans.get_human_request(old).session_id  # type: ignore[union-attr]
    long_ago = (datetime.now(UTC) - timedelta(hours=3)).isoformat()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE sessions SET started = ? WHERE id = ?", [long_ago, old_session])
    with FakeLLMServer(ASK_FIRST_SCRIPT) as llm:
        env = _env(db, llm)
        expired = _aah(env, "sessions", "expire", "--older-than", "2h")
        again = _aah(env, "sessions", "expire", "--older-than", "2h")
    assert expired.returncode == 0, expired.stderr
    assert expired.stdout.strip() == "expired 1 session idle for more than 2h"
    assert again.stdout.strip() == "expired 0 sessions idle for more than 2h"
    with SessionStore(db) as store:
        assert [r.id for r in store.humans.pending_human_requests()] == [fresh]
        assert store.get_session(old_session).status == "cancelled"  # type: ignore[union-attr]


BAD_COMMANDS = [
    (["sessions", "resume", "nope"], "no session with id 'nope': see `aah sessions list`"),
    (["sessions", "cancel", "nope"], "no session with id 'nope': see `aah sessions list`"),
    (
        ["sessions", "expire", "--older-than", "soon"],
        "--older-than 'soon': give a number and a unit, e.g. 90s, 30m, 2h, 1d",
    ),
    (
        ["sessions", "expire", "--older-than", "2w"],
        "--older-than '2w': give a number and a unit, e.g. 90s, 30m, 2h, 1d",
    ),
]


@pytest.mark.parametrize(("args", "message"), BAD_COMMANDS)
def test_bad_session_commands_are_one_line_errors(
    tmp_path: Path, args: list[str], message: str
) -> None:
    db = tmp_path / "aah.db"
    SessionStore(db).close()
    with FakeLLMServer(ASK_FIRST_SCRIPT) as llm:
        result = _aah(_env(db, llm), *args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith(message), result.stderr


def test_a_finished_session_does_not_resume(tmp_path: Path) -> None:
    db = tmp_path / "aah.db"
    with SessionStore(db) as store:
        session = store.open_session("q")
        store.end_session(session.id, "finished", "done")
    with FakeLLMServer(ASK_FIRST_SCRIPT) as llm:
        result = _aah(_env(db, llm), "sessions", "resume", session.id)
    assert result.returncode == 2
    assert result.stderr.strip().endswith(
        f"session {session.id} is finished: there is nothing to resume"
    )


def test_a_queue_stores_its_deadline_and_a_restarted_one_keeps_the_first(tmp_path: Path) -> None:
    from aah.desk import FakeClock
    from aah.runtime import HumanRequest, QueueHuman
    from aah.runtime.humans import IDK_REPLY

    clock = FakeClock()
    with SessionStore(tmp_path / "s.db", clock=clock) as store:
        session = store.open_session("Weather?")
        store.set_status(session.id, "waiting")
        question = HumanRequest(request_id="r1", session_id=session.id, question="Which city?")
        first = QueueHuman(store, poll_seconds=0.01, deadline_seconds=60, fallback="idk")
        asked_at = clock.now()

        async def killed_while_waiting() -> None:
            waiting = asyncio.ensure_future(first.ask(question))
            for _ in range(1_000):  # until the request is stored, at most 10 s
                if store.humans.get_human_request("r1") is not None:
                    break
                await asyncio.sleep(0.01)
            (pending,) = store.humans.pending_human_requests()
            assert pending.fallback == "idk"
            assert pending.deadline == asked_at + timedelta(seconds=60)  # on the store's clock
            waiting.cancel()  # the runner dies before the deadline

        asyncio.run(killed_while_waiting())
        clock.advance(61)
        # Restarted past the first deadline, a runner does not start a new one
        # (a new one would wait 100 s on a clock that no longer moves).
        again = QueueHuman(store, poll_seconds=0.01, deadline_seconds=100, fallback="idk")
        reply = asyncio.run(asyncio.wait_for(again.ask(question), 10))
        assert reply.answer == IDK_REPLY
        assert store.humans.get_human_request("r1").status == "expired"  # type: ignore[union-attr]
