"""A session paused on ask_human survives its process being killed."""

import subprocess
import sys
import time
from pathlib import Path

from runtime_support import ask_then_call_script

from aah.events import AwarenessEvent, HumanAnswerEvent, HumanQuestionEvent
from aah.store.sessions import SessionStore
from aah.testing.fake_llm import FakeLLMServer

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
        while not store.pending_human_requests():
            assert first.poll() is None, first.stderr.read() if first.stderr else ""
            assert time.monotonic() < deadline, "the session never asked"
            time.sleep(0.05)
        first.kill()  # SIGKILL: no cleanup runs
        first.wait()
        requests_before = len(llm.requests)
        request = store.pending_human_requests()[0]
        assert store.answer_human_request(request.id, "annotator", "Lisbon")

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
