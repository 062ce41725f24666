"""An MCP tool's result in the trace: ok, or its error in a few words; never an HTTP status.

``aah run`` drives a real MCP server (tests/mcp_servers.py, written with the
SDK) with the fake model: one call that succeeds, one that the tool fails.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from runtime_support import awareness_rule, call

from aah.events import ToolCallEvent
from aah.store import SessionStore
from aah.testing.fake_llm import FakeLLMServer

pytest.importorskip("mcp", reason="the MCP tests need the mcp extra: pip install 'aah[mcp]'")

HERE = Path(__file__).resolve().parent
SERVER = f"{shlex.quote(sys.executable)} {shlex.quote(str(HERE / 'mcp_servers.py'))} stdio"
SCRIPT = {
    "rules": [
        awareness_rule("YES: I can add."),
        {"when": {"last_tool_name": "calc__fail"}, "reply": "The sum is 5; the quota failed."},
        {"when": {"last_tool_name": "calc__add"}, "reply": call("calc__fail", reason="quota")},
        {"when": {"has_tools": True}, "reply": call("calc__add", a=2, b=3)},
    ]
}


def test_the_trace_shows_an_mcp_result_as_ok_or_its_error(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    with FakeLLMServer(SCRIPT) as llm:
        env.update(AAH_BASE_URL=llm.base_url, AAH_MODEL="fake-model", AAH_API_KEY="sk-x")
        env.update(AAH_MCP_START_TIMEOUT="60", COLUMNS="200", NO_COLOR="1")
        result = subprocess.run(
            [sys.executable, "-m", "aah", "run", "Add 2 and 3", "--mcp", f"calc={SERVER}",
             "--no-aah", "--db", str(db)],
            capture_output=True, text=True, env=env, timeout=180, cwd=HERE.parent,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    [added] = [line for line in lines if "calc__add →" in line]
    [failed] = [line for line in lines if "calc__fail →" in line]
    assert "✓ calc__add → MCP ok, " in added and "[live]" in added
    assert "✗ calc__fail → MCP error: " in failed and "quota" in failed
    assert "no response" not in result.stdout and "None" not in result.stdout
    with SessionStore(db) as store:
        [session] = store.list_sessions()
        calls = [e for e in store.events(session.id) if isinstance(e, ToolCallEvent)]
    assert [(c.tool, c.protocol, c.ok, c.status_code) for c in calls] == [
        ("calc__add", "mcp", True, None),
        ("calc__fail", "mcp", False, None),
    ]
