"""A real ``aah bench run`` killed with SIGKILL while approvals wait, and while an approved call runs.

Each call is decided once, and each approved call is sent at most once: an
approved call whose request was in flight when the runner died is never sent
again (its outcome is reported as unknown), and one that finished before the
kill is not sent again either.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from http_server import LocalServer

from aah.benchmark.failtalms.dataset import load_tasks
from aah.events import ApprovalDecidedEvent, ToolCallEvent
from aah.store import SessionStore
from aah.testing.fake_llm import FakeLLMServer
from aah.tools.registry.read import Registry

RUN = "approve"


def _three_tasks(shared_data: Path, registry: Path) -> list[tuple[str, str]]:
    """Three tasks, each with an offered endpoint no other of the three offers: (id, endpoint)."""
    known = Registry(registry)
    chosen: list[tuple[str, str]] = []
    offered_by_chosen: set[str] = set()
    for task in load_tasks(shared_data):
        offered = [name for name in task.offered if name in known]
        mine = [name for name in offered if name not in offered_by_chosen]
        if not offered or len(mine) != len(offered):
            continue
        chosen.append((task.id, offered[0]))
        offered_by_chosen.update(offered)
        if len(chosen) == 3:
            return chosen
    raise AssertionError("the shared data has no three tasks with separate tools")


def _point_at(registry: Path, endpoint: str, url: str) -> None:
    """Make ``endpoint`` a POST without parameters to ``url`` (the test's own server)."""
    with sqlite3.connect(registry) as conn:
        (text,) = conn.execute(
            "SELECT spec FROM endpoints WHERE qualified_name = ?", [endpoint]
        ).fetchone()
        spec = json.loads(text) | {"url_template": url, "method": "POST", "parameters": []}
        conn.execute(
            "UPDATE endpoints SET spec = ? WHERE qualified_name = ?", [json.dumps(spec), endpoint]
        )


def _agent(endpoints: list[str]) -> dict[str, Any]:
    """Awareness yes; call the task's own endpoint; answer once any tool result came."""
    rules: list[dict[str, Any]] = [
        {"when": {"has_tools": False}, "reply": "Yes, all there."},
        {"when": {"last_role": "tool"}, "reply": "Done."},
    ]
    for name in endpoints:
        call = {"tool_calls": [{"name": name, "arguments": {}}]}
        rules.append({"when": {"tool_offered": name}, "reply": call})
    return {"rules": rules}


def _wait(condition: Callable[[], bool], process: subprocess.Popen[str], what: str) -> None:
    deadline = time.monotonic() + 90
    while not condition():
        if process.poll() is not None:
            raise AssertionError(f"the run ended before {what}: {process.stderr.read()}")  # type: ignore[union-attr]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _kill(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)


@pytest.mark.usefixtures("allow_private_tool_hosts")
def test_a_run_killed_while_approvals_wait_and_while_a_call_runs_sends_each_call_at_most_once(
    shared_data: Path, shared_registry: Path, tmp_path: Path
) -> None:
    registry = tmp_path / "registry.db"
    shutil.copy(shared_registry, registry)
    (a_id, a_tool), (b_id, b_tool), (c_id, c_tool) = _three_tasks(shared_data, registry)
    db = tmp_path / "aah.db"
    with (
        LocalServer(slow_seconds=25) as server,
        FakeLLMServer(_agent([a_tool, b_tool, c_tool])) as llm,
    ):
        _point_at(registry, a_tool, server.url("/echo/a"))
        _point_at(registry, b_tool, server.url("/echo/b"))
        _point_at(registry, c_tool, server.url("/slow"))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
        env |= {
            "AAH_REGISTRY": str(registry),
            "AAH_DATA_DIR": str(shared_data),
            "AAH_BASE_URL": llm.base_url,
            "AAH_MODEL": "fake-model",
            "AAH_DB": str(db),
            "AAH_LLM_RETRIES": "0",
            "AAH_HTTP_ALLOW_PRIVATE": "1",
            "COLUMNS": "200",
        }
        command = [sys.executable, "-m", "aah", "bench", "run", "--run", RUN, "--no-probe"]
        command += ["--human", "queue", "--http", "live", "--approve-methods", "POST"]
        for task_id in (a_id, b_id, c_id):
            command += ["--ids", task_id]

        def start() -> subprocess.Popen[str]:
            return subprocess.Popen(
                command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )

        store = SessionStore(db)

        def approvals() -> dict[str, str]:
            pending = [r for r in store.humans.pending_human_requests() if r.kind == "approval"]
            return {r.context["task_id"]: r.id for r in pending}

        # 1. Killed while all three calls wait for a decision: nothing was sent.
        first = start()
        _wait(lambda: len(approvals()) == 3, first, "three approvals waited")
        _kill(first)
        assert server.count() == 0
        waiting = approvals()  # the requests outlive the runner
        assert store.humans.decide_approval(waiting[a_id], "ann", "approve")
        assert store.humans.decide_approval(waiting[b_id], "ann", "reject", reason="not today")
        assert store.humans.decide_approval(waiting[c_id], "ann", "approve")
        assert not store.humans.decide_approval(waiting[a_id], "bob", "reject")  # decided once

        # 2. Killed while the approved call C is in flight (and A has been sent).
        second = start()
        _wait(lambda: server.count("/slow") == 1 and server.count("/echo") == 1, second, "C ran")
        _kill(second)

        # 3. The rerun finishes every task without sending any call again.
        third = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)
        assert third.returncode == 0, third.stderr
        assert (server.count("/echo"), server.count("/slow")) == (1, 1)

        sessions = {s.task_id: s for s in store.list_sessions(run=RUN)}
        assert {s.status for s in sessions.values()} == {"finished"}
        for task_id, outcome in ((a_id, "approved"), (b_id, "rejected"), (c_id, "approved")):
            events = store.events(sessions[task_id].id)
            decided = [e for e in events if isinstance(e, ApprovalDecidedEvent)]
            assert [d.outcome for d in decided] == [outcome], task_id
            calls = [e for e in events if isinstance(e, ToolCallEvent)]
            assert len(calls) == (0 if outcome == "rejected" else 1), task_id
        (c_call,) = [e for e in store.events(sessions[c_id].id) if isinstance(e, ToolCallEvent)]
        assert not c_call.ok and "not sent again" in c_call.result
        store.close()


@pytest.mark.usefixtures("allow_private_tool_hosts")
def test_aah_run_asks_on_the_console_and_refuses_an_invalid_edit_before_it_runs(
    shared_data: Path, shared_registry: Path, tmp_path: Path
) -> None:
    registry = tmp_path / "registry.db"
    shutil.copy(shared_registry, registry)
    ((_, tool),) = _three_tasks(shared_data, registry)[:1]
    with LocalServer() as server, FakeLLMServer(_agent([tool])) as llm:
        _point_at(registry, tool, server.url("/echo/book"))
        with sqlite3.connect(registry) as conn:  # one integer parameter to edit
            (text,) = conn.execute(
                "SELECT spec FROM endpoints WHERE qualified_name = ?", [tool]
            ).fetchone()
            rooms = {"name": "rooms", "type": "integer", "required": False, "location": "body"}
            spec = json.loads(text) | {"parameters": [rooms]}
            conn.execute(
                "UPDATE endpoints SET spec = ? WHERE qualified_name = ?",
                [json.dumps(spec), tool],
            )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
        env |= {
            "AAH_REGISTRY": str(registry),
            "AAH_DATA_DIR": str(shared_data),
            "AAH_BASE_URL": llm.base_url,
            "AAH_MODEL": "fake-model",
            "AAH_DB": str(tmp_path / "aah.db"),
            "AAH_LLM_RETRIES": "0",
            "AAH_HTTP_ALLOW_PRIVATE": "1",
            "COLUMNS": "200",
        }
        # e, then not JSON, then a wrong type (refused), then a valid edit.
        keys = 'e\n{rooms: 3\n{"rooms": "three"}\n{"rooms": 3}\n'
        done = subprocess.run(
            [sys.executable, "-m", "aah", "run", "Book it.", "--tool", tool, "--http", "live",
             "--human", "console", "--approve-methods", "POST"],
            input=keys, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = " ".join(done.stdout.split())
    assert (
        f"approve? POST {tool}" in out
        and "[a]pprove, [e]dit, [r]eject, re[s]pond, [t]erminate" in out
    )
    assert "not JSON" in out and "refused:" in out
    assert f"↳ console edited the arguments of {tool}" in out
    assert ": finished" in out
    assert server.count("/echo") == 1
