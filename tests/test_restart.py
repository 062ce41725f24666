"""Killed sessions resume: paused on ask_human, or killed at random points of a batch run."""

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from subprocess import DEVNULL

import pytest
from runtime_support import ask_then_call_script, call

from aah.events import AwarenessEvent, HumanAnswerEvent, HumanQuestionEvent
from aah.store.sessions import SessionStore
from aah.testing.fake_llm import FakeLLMServer
from aah.tools.registry.build import build_registry

RUNNER = Path(__file__).with_name("session_process.py")


def _start(db: Path, base_url: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(RUNNER), str(db), base_url, "r", "t1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_killed_while_waiting_then_resumed_in_a_new_process(tmp_path: Path) -> None:
    db = tmp_path / "aah.db"
    store = SessionStore(db)
    store.create_run("r", {"purpose": "restart test"})
    with FakeLLMServer(ask_then_call_script("local__forecast", {"city": "Lisbon"})) as llm:
        first = _start(db, llm.base_url)
        deadline = time.monotonic() + 60
        while not store.humans.pending_human_requests():
            assert first.poll() is None, first.stderr.read() if first.stderr else ""
            assert time.monotonic() < deadline, "the session never asked"
            time.sleep(0.05)
        first.kill()  # SIGKILL: no cleanup runs
        first.wait()
        requests_before = len(llm.requests)
        request = store.humans.pending_human_requests()[0]
        assert store.humans.answer_human_request(request.id, "annotator", "Lisbon")

        second = _start(db, llm.base_url)
        out, err = second.communicate(timeout=60)
        assert second.returncode == 0, err
        resumed_requests = llm.requests[requests_before:]
    assert out.strip() == "finished|Done: the forecast is above."
    # The new process resumed at the question: no awareness call, no repeated question.
    assert all(r.get("tools") for r in resumed_requests)
    sessions = store.list_sessions(run="r")
    assert len(sessions) == 1
    events = store.events(sessions[0].id)
    assert sum(isinstance(e, AwarenessEvent) for e in events) == 2
    assert sum(isinstance(e, HumanQuestionEvent) for e in events) == 1
    answers = [e for e in events if isinstance(e, HumanAnswerEvent)]
    assert [a.answer for a in answers] == ["Lisbon"]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))


# Every task asks one question, which the oracle answers at once, then the
# agent answers after a pause: batch runs checkpoint a session when it ends,
# so each answer is logged well before the checkpoint that covers it.
ASKING_AGENT = {
    "rules": [
        {"when": {"has_tools": False}, "reply": "IDK: I may need more details."},
        {
            "when": {"last_tool_name": "ask_human"},
            "reply": {"text": "Done: here it is.", "delay_ms": 150},
        },
        {"when": {"has_tools": True}, "reply": call("ask_human", question="Which one?")},
    ]
}


@pytest.fixture(scope="module")
def registry_path(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("registry") / "registry.db"
    build_registry(shared_data, path)
    return path


def test_random_kills_leave_one_question_and_one_answer_per_request(
    shared_data: Path, registry_path: Path, tmp_path: Path
) -> None:
    seed = int.from_bytes(os.urandom(4), "big")
    chosen = random.Random(seed)
    db = tmp_path / "kill.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    command = [sys.executable, "-m", "aah", "bench", "run", "--run", "k", "--setting", "all"]
    command += ["--limit", "2", "--concurrency", "4", "--db", str(db)]
    started = time.monotonic()
    kills = []
    with FakeLLMServer(ASKING_AGENT) as llm:
        env |= {
            "AAH_REGISTRY": str(registry_path),
            "AAH_BASE_URL": llm.base_url,
            "AAH_MODEL": "fake-model",
            "AAH_DATA_DIR": str(shared_data),
            "AAH_LLM_RETRIES": "0",
        }
        for _ in range(3):
            run = subprocess.Popen(command, env=env, stdout=DEVNULL, stderr=DEVNULL)
            answered = _answers(db) + 1
            while run.poll() is None and _answers(db) < answered:
                assert time.monotonic() - started < 50, "no answer was ever logged"
                time.sleep(0.02)
            # A random moment once answers are being logged: inside a
            # session's answer-to-checkpoint window, or anywhere else.
            time.sleep(chosen.uniform(0.0, 0.3))
            kills.append(run.poll() is None)
            run.send_signal(signal.SIGKILL)
            run.wait()
        final = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
        assert final.returncode == 0, final.stderr
    assert any(kills), "every run ended before it could be killed"
    store = SessionStore(db)
    sessions = store.list_sessions(run="k")
    assert len(sessions) == 10 and all(s.status == "finished" for s in sessions)
    for session in sessions:
        events = store.events(session.id)
        questions = Counter(e.request_id for e in events if isinstance(e, HumanQuestionEvent))
        answers = Counter(e.request_id for e in events if isinstance(e, HumanAnswerEvent))
        assert set(questions.values()) == {1} and answers == questions, (seed, session.id)
    assert time.monotonic() - started < 60


def _answers(db: Path) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db, timeout=5) as conn:
        try:
            found = conn.execute("SELECT count(*) FROM events WHERE kind = 'human_answer'")
        except sqlite3.OperationalError:  # the schema is not there yet
            return 0
        return int(found.fetchone()[0])
