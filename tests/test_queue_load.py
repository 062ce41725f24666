"""Load: 20 annotators answer 2,000 queued questions from 3 runners, one killed and restarted.

Three ``aah bench run --human queue`` processes share one session database;
their sessions all ask first and park. Twenty annotators (API-level clients:
``claim_next`` then ``answer_human_request``, what the web page does) answer
whatever is free. Midway one runner gets SIGKILL and is started again with
the same command. In the end every question has exactly one answer, every
session ended exactly once (one question, one answer, one final answer,
``finished``), and no process saw "database is locked".

``AAH_LOAD_QUESTIONS`` changes the number of questions (default 2,000).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from runtime_support import ASK_FIRST_SCRIPT

from aah.events import FinalAnswerEvent, HumanAnswerEvent, HumanQuestionEvent
from aah.store import SessionStore

QUESTIONS = int(os.environ.get("AAH_LOAD_QUESTIONS", "2000"))
RUNNERS = 3
ANNOTATORS = 20
EPOCHS = 2


@pytest.fixture
def fake_model(tmp_path: Path) -> Iterator[str]:
    """A fake model server in its own process (the annotators' threads share ours)."""
    script = tmp_path / "agent.json"
    script.write_text(json.dumps(ASK_FIRST_SCRIPT))
    server = subprocess.Popen(
        [sys.executable, "-m", "aah", "fake-llm", "--script", str(script), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    line = server.stdout.readline()
    try:
        yield _url_in(line)
    finally:
        server.terminate()
        server.wait()


def _url_in(line: str) -> str:
    return next(word for word in line.split() if word.startswith("http")).rstrip(".,")


def _runner(env: dict[str, str], number: int, per_runner: int, log: Path) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "aah", "bench", "run", "--run", f"load-{number}"]
    command += ["--setting", "underspecified", "--limit", str(math.ceil(per_runner / EPOCHS))]
    command += ["--epochs", str(EPOCHS), "--human", "queue", "--http", "mock"]
    command += ["--concurrency", "32", "--no-probe"]
    return subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=log.open("a"), text=True
    )


class Annotators:
    """Twenty people answering whatever is free until told to stop."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self.answered: Counter[str] = Counter()
        self.problems: list[str] = []
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self.threads = [
            threading.Thread(target=self._work, args=(f"annotator-{i}",), daemon=True)
            for i in range(ANNOTATORS)
        ]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def total(self) -> int:
        with self._lock:
            return sum(self.answered.values())

    def _work(self, name: str) -> None:
        store = SessionStore(self.db)
        try:
            while not self.stop.is_set():
                request = store.humans.claim_next(name, lease_seconds=60)
                if request is None:
                    time.sleep(0.05)
                    continue
                if store.humans.answer_human_request(request.id, name, "Lisbon", seconds=1.0):
                    with self._lock:
                        self.answered[request.id] += 1
        except Exception as exc:  # noqa: BLE001 - the test reports every annotator's failure
            self.problems.append(f"{name}: {type(exc).__name__}: {exc}")
        finally:
            store.close()


def test_twenty_annotators_answer_every_question_once_across_a_killed_runner(
    shared_data: Path, shared_registry: Path, tmp_path: Path, fake_model: str
) -> None:
    registry = shared_registry
    db = tmp_path / "load.db"
    SessionStore(db).close()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    env |= {
        "AAH_BASE_URL": fake_model,
        "AAH_MODEL": "fake-model",
        "AAH_DB": str(db),
        "AAH_REGISTRY": str(registry),
        "AAH_DATA_DIR": str(shared_data),
        "AAH_LLM_RETRIES": "0",
        "COLUMNS": "200",
    }
    per_runner = math.ceil(QUESTIONS / RUNNERS)
    logs = [tmp_path / f"runner-{n}.log" for n in range(RUNNERS)]
    runners = [_runner(env, n, per_runner, logs[n]) for n in range(RUNNERS)]
    expected = RUNNERS * EPOCHS * math.ceil(per_runner / EPOCHS)
    people = Annotators(db)
    people.start()
    started = time.monotonic()
    killed_at: int | None = None
    try:
        while any(r.poll() is None for r in runners):
            assert time.monotonic() - started < 600, f"not done: {people.total()} answered"
            if killed_at is None and people.total() >= expected // 3:
                runners[0].send_signal(signal.SIGKILL)
                runners[0].wait()
                killed_at = people.total()
                runners[0] = _runner(env, 0, per_runner, logs[0])
            time.sleep(0.2)
    finally:
        people.stop.set()
        for thread in people.threads:
            thread.join(timeout=10)
        for runner in runners:
            if runner.poll() is None:
                runner.kill()
    seconds = time.monotonic() - started
    assert killed_at is not None and killed_at < expected, "the kill came too late to matter"
    stderr = "\n".join(log.read_text() for log in logs)
    assert "database is locked" not in stderr
    assert not people.problems, people.problems[:3]
    assert [r.returncode for r in runners] == [0] * RUNNERS, stderr[-2000:]

    with SessionStore(db) as store:
        rows = store.humans._connection.rows(  # noqa: SLF001 - counting raw rows is the point
            "SELECT r.id, count(a.id) AS answers FROM human_requests AS r"
            " LEFT JOIN human_answers AS a ON a.request_id = r.id GROUP BY r.id"
        )
        assert len(rows) == expected
        assert Counter(row["answers"] for row in rows) == {1: expected}
        assert set(people.answered) == {row["id"] for row in rows}
        assert set(people.answered.values()) == {1}
        sessions = [s for n in range(RUNNERS) for s in store.list_sessions(run=f"load-{n}")]
        assert len(sessions) == expected
        for session in sessions:
            kinds = Counter(type(e) for e in store.events(session.id))
            assert session.status == "finished", session
            assert kinds[HumanQuestionEvent] == kinds[HumanAnswerEvent] == 1, (session.id, kinds)
            assert kinds[FinalAnswerEvent] == 1, (session.id, kinds)
    print(
        f"\n{expected} questions, {ANNOTATORS} annotators, {RUNNERS} runners "
        f"(one killed after {killed_at} answers and restarted): {seconds:.1f} s, "
        f"{expected / seconds:.1f} answers/s"
    )
