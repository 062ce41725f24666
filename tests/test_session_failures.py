"""Whatever breaks inside a session, it ends as ``error`` with a one-line message.

Faults are injected where the model has no say (the tool executor, the human
channel, a face showing events) in a separate process, as a user would meet
them; afterwards the stored session is never left ``running``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from runtime_support import awareness_rule, call

from aah.events import ErrorEvent
from aah.store.sessions import SessionStore
from aah.testing.fake_llm import FakeLLMServer

HERE = Path(__file__).parent

# fault -> (the agent's first call, words the stored message must hold, status)
FAULTS = {
    "executor": (call("local__forecast", city="Oslo"), "KeyError", "error"),
    "human": (call("ask_human", question="Which city?"), "ConnectionResetError", "error"),
    "listener": (call("local__forecast", city="Oslo"), "", "finished"),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_an_injected_fault_ends_the_session_in_one_line(fault: str, tmp_path: Path) -> None:
    first_call, words, status = FAULTS[fault]
    script = {
        "rules": [
            awareness_rule("Yes, all there."),
            {"when": {"has_tools": True}, "reply": first_call, "times": 1},
            {"when": {"has_tools": True}, "reply": "Done."},
        ]
    }
    db = tmp_path / "s.db"
    with FakeLLMServer(script) as llm:
        child = subprocess.run(
            [sys.executable, str(HERE / "faulty_session_process.py"), fault, str(db), llm.base_url],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=HERE,
        )
    assert child.returncode == 0, child.stderr[-2000:]
    assert "Traceback" not in child.stdout + child.stderr
    [record] = SessionStore(db).list_sessions()
    assert record.status == status
    printed_status, _, printed_error = child.stdout.strip().partition("|")
    assert printed_status == status
    if fault == "listener":
        assert "not showing the session's steps any more: UnicodeEncodeError" in child.stderr
    if status == "error":
        [error] = [e for e in SessionStore(db).events(record.id) if isinstance(e, ErrorEvent)]
        assert words in error.message and "\n" not in error.message
        assert error.message == printed_error
        assert error.message.endswith("please report it as a bug in aah")
