"""MCP servers' tools for aah's agent, end to end: real servers, the real CLI, a scripted model.

The servers are real: ``mcp-server-time`` from PyPI (works offline) and the
one in ``tests/mcp_servers.py``, written with the SDK's server API, over
stdio and over streamable HTTP on 127.0.0.1. The model is the fake
OpenAI-compatible server; nothing is mocked in-process.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from runtime_support import awareness_rule, call

from aah.errors import AahError
from aah.events import ToolCallEvent
from aah.store import SessionStore
from aah.testing.fake_llm import FakeLLMServer

pytest.importorskip("mcp", reason="the MCP tests need the mcp extra: pip install 'aah[mcp]'")

from aah.mcp import (  # noqa: E402 - after the skip, which needs the SDK
    McpConnections,
    McpFailure,
    open_mcp_tools,
    parse_server,
    tool_specs,
)

HERE = Path(__file__).resolve().parent
SERVERS = HERE / "mcp_servers.py"
TEST_SERVER = f"{shlex.quote(sys.executable)} {shlex.quote(str(SERVERS))}"
TIME_SERVER = shutil.which("mcp-server-time", path=str(Path(sys.executable).parent))
SECRET = "sk-proj-mcpSecretValue0123456789"


def needs_time_server() -> str:
    if TIME_SERVER is None:
        pytest.skip("mcp-server-time is not installed: pip install mcp-server-time")
    return f"{TIME_SERVER} --local-timezone UTC"


def aah(*args: str, env: dict[str, str], timeout: float = 180) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    full_env.update({"COLUMNS": "200", "NO_COLOR": "1", **env})
    return subprocess.run(
        [sys.executable, "-m", "aah", *args],
        text=True,
        capture_output=True,
        env=full_env,
        timeout=timeout,
        cwd=HERE.parent,
    )


def one_call_script(tool: str, arguments: dict[str, Any], answer: str) -> dict[str, Any]:
    return {
        "rules": [
            awareness_rule("YES: I have what I need."),
            {"when": {"last_tool_name": tool}, "reply": answer},
            {"when": {"has_tools": True}, "reply": call(tool, **arguments)},
        ]
    }


def tool_events(db: Path) -> list[ToolCallEvent]:
    store = SessionStore(db)
    try:
        return [
            event
            for session in store.list_sessions()
            for event in store.events(session.id)
            if isinstance(event, ToolCallEvent)
        ]
    finally:
        store.close()


def model_env(llm: FakeLLMServer, tmp_path: Path) -> dict[str, str]:
    return {
        "AAH_BASE_URL": llm.base_url,
        "AAH_MODEL": "fake-model",
        "AAH_API_KEY": SECRET,
        "AAH_CACHE_DIR": str(tmp_path / "cache"),
        "AAH_MCP_START_TIMEOUT": "60",
    }


# --- the agent calls an MCP tool, end to end -------------------------------------------


def test_run_calls_a_pypi_mcp_server_then_replays_it_offline(tmp_path: Path) -> None:
    command = needs_time_server()
    script = one_call_script(
        "time__get_current_time", {"timezone": "Europe/Paris"}, "It is shown above."
    )
    with FakeLLMServer(script) as llm:
        env = model_env(llm, tmp_path)
        recorded = aah(
            "run", "What time is it in Paris?", "--mcp", f"time={command}", "--http", "record",
            "--no-aah", "--db", str(tmp_path / "rec.db"), env=env,
        )  # fmt: skip
        assert recorded.returncode == 0, recorded.stderr
        assert "time__get_current_time" in recorded.stdout
        # Replay never starts the server: a command that cannot run is never run.
        replayed = aah(
            "run", "What time is it in Paris?", "--mcp", "time=/nonexistent/mcp-server-time",
            "--http", "replay", "--no-aah", "--db", str(tmp_path / "play.db"), env=env,
        )  # fmt: skip
    assert replayed.returncode == 0, replayed.stderr
    [live] = tool_events(tmp_path / "rec.db")
    [again] = tool_events(tmp_path / "play.db")
    assert live.ok and "Europe/Paris" in (live.result or "")
    assert again.ok and again.result == live.result and again.http_mode == "replay"


def test_a_bad_call_gets_corrective_feedback_and_a_good_one_runs(tmp_path: Path) -> None:
    script = {
        "rules": [
            awareness_rule("YES: I can add."),
            {"when": {"has_tools": True}, "reply": call("calc__add", a="two", b=3), "times": 1},
            {
                "when": {"last_tool_name": "calc__add"},
                "reply": call("calc__add", a=2, b=3),
                "times": 1,
            },
            {"when": {"last_tool_name": "calc__add"}, "reply": "The sum is above."},
        ]
    }
    with FakeLLMServer(script) as llm:
        result = aah(
            "run", "Add 2 and 3", "--mcp", f"calc={TEST_SERVER} stdio", "--http", "live",
            "--no-aah", "--db", str(tmp_path / "a.db"), env=model_env(llm, tmp_path),
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    first, second = tool_events(tmp_path / "a.db")
    # The schema came from list_tools: "a" is an integer, so "two" never reached the server.
    assert not first.ok and first.check == "IAT" and first.status_code is None
    assert second.ok and second.result == "5"


def test_secrets_never_reach_the_store_or_the_recording(tmp_path: Path) -> None:
    script = one_call_script("calc__echo", {"text": f"key {SECRET}"}, "Echoed.")
    with FakeLLMServer(script) as llm:
        result = aah(
            "run", "Echo my key", "--mcp", f"calc={TEST_SERVER} stdio", "--http", "record",
            "--no-aah", "--db", str(tmp_path / "a.db"), env=model_env(llm, tmp_path),
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    [event] = tool_events(tmp_path / "a.db")
    assert event.ok and "[redacted]" in (event.result or "")
    for path in [tmp_path / "a.db", tmp_path / "cache" / "mcp_cache.sqlite"]:
        assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET not in result.stdout + result.stderr


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def http_server() -> Iterator[str]:
    """The test server over streamable HTTP on 127.0.0.1; its URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVERS), "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_run_calls_a_server_over_streamable_http(tmp_path: Path, http_server: str) -> None:
    script = one_call_script("calc__add", {"a": 40, "b": 2}, "The answer is above.")
    with FakeLLMServer(script) as llm:
        result = aah(
            "run", "Add 40 and 2", "--mcp", f"calc={http_server}", "--no-aah",
            "--db", str(tmp_path / "a.db"), env=model_env(llm, tmp_path),
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    [event] = tool_events(tmp_path / "a.db")
    assert event.ok and event.result == "42"


def test_the_mcp_setting_offers_its_servers(tmp_path: Path, http_server: str) -> None:
    script = one_call_script("calc__add", {"a": 1, "b": 1}, "Two.")
    with FakeLLMServer(script) as llm:
        env = {**model_env(llm, tmp_path), "AAH_MCP": json.dumps([f"calc={http_server}"])}
        result = aah("run", "1+1?", "--no-aah", "--db", str(tmp_path / "a.db"), env=env)
    assert result.returncode == 0, result.stderr
    assert [e.result for e in tool_events(tmp_path / "a.db")] == ["2"]


# --- fault injection and result budgets, through the executor ---------------------------


@pytest.fixture(scope="module")
def calc_server() -> str:
    return f"calc={TEST_SERVER} stdio"


def test_fault_mode_breaks_mcp_tools_as_it_breaks_http_ones(calc_server: str) -> None:
    server = parse_server(calc_server)
    with open_mcp_tools([server], http_mode="fault", fault_plan="calc__add=500") as tools:
        specs = {spec.qualified_name: spec for spec in tools.specs}
        broken = tools.executor.call(specs["calc__add"], {"a": 1, "b": 2})
        fine = tools.executor.call(specs["calc__echo"], {"text": "hi"})
    assert not broken.ok and broken.status == 500 and broken.fault == "500"
    # Outside the plan, the base mode (mock) answers from the spec alone.
    assert fine.mode == "mock"


# --- servers that misbehave: one clear line, never a hang -------------------------------

START_FAILURES = [
    ("/nonexistent/mcp-server", "cannot run '/nonexistent/mcp-server'"),
    (f"{TEST_SERVER} exit", "exited before it answered; it said: fatal: missing configuration"),
    (f"{TEST_SERVER} silent", "did not"),
    (f"{TEST_SERVER} garbage", "did not"),
    (f"{TEST_SERVER} slow 30", "did not start within 4 s"),
    ("http://127.0.0.1:9/mcp", "did not answer"),
    ("'unclosed quote", "cannot read the MCP command"),
    ("", "needs a command or a URL"),
    ("bad!name=cmd", "bad MCP server name"),
    ("=cmd", "bad MCP server name"),
]


@pytest.mark.parametrize(("target", "expected"), START_FAILURES)
def test_a_server_that_does_not_start_is_one_clear_error(
    target: str, expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AAH_MCP_START_TIMEOUT", "4")
    started = time.monotonic()
    with pytest.raises(AahError) as caught:
        with open_mcp_tools([parse_server(target)]):
            pass
    message = str(caught.value)
    assert expected in message and "\n" not in message and "Traceback" not in message
    assert time.monotonic() - started < 25


def test_the_cli_says_so_in_one_line(tmp_path: Path) -> None:
    with FakeLLMServer(["unused"]) as llm:
        result = aah(
            "run", "hi", "--mcp", "/nonexistent/mcp-server", "--db", str(tmp_path / "a.db"),
            env=model_env(llm, tmp_path),
        )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.startswith("error: MCP server mcp-server did not start")
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def connections() -> Iterator[McpConnections]:
    pool = McpConnections(start_timeout=60, call_timeout=8)
    yield pool
    pool.close()


CALL_FAILURES = [
    ("fail", {"reason": "quota"}, "tool error: "),
    ("hang", {}, "gave no answer to hang within 8 s"),
    ("add", {"a": 1}, "tool error: "),
]


@pytest.mark.parametrize(("tool", "arguments", "expected"), CALL_FAILURES)
def test_a_failed_call_is_a_failed_result(
    connections: McpConnections, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    from aah.mcp import McpExecutor

    server = parse_server(f"calc={TEST_SERVER} stdio")
    specs = {s.name: s for s in tool_specs(server, connections.list_tools(server))}
    executor = McpExecutor(mode="live", connections=connections, recording=None, max_bytes=1000)
    started = time.monotonic()
    result = executor.call(specs[tool], arguments)
    assert not result.ok and result.text.startswith(("tool error: ", "request failed: "))
    assert expected in result.text and time.monotonic() - started < 20


def test_a_huge_result_is_cut_to_the_budget(connections: McpConnections) -> None:
    from aah.mcp import McpExecutor

    server = parse_server(f"calc={TEST_SERVER} stdio")
    specs = {s.name: s for s in tool_specs(server, connections.list_tools(server))}
    executor = McpExecutor(mode="live", connections=connections, recording=None, max_bytes=1000)
    result = executor.call(specs["huge"], {})
    assert result.ok and result.truncated and len(result.text) < 1100
    assert result.text.endswith("…[truncated at 1000 bytes]")


def test_a_server_that_dies_mid_call_fails_that_call_and_every_later_one() -> None:
    from aah.mcp import McpExecutor

    pool = McpConnections(start_timeout=60, call_timeout=20)
    try:
        server = parse_server(f"dying={TEST_SERVER} stdio")
        specs = {s.name: s for s in tool_specs(server, pool.list_tools(server))}
        executor = McpExecutor(mode="live", connections=pool, recording=None, max_bytes=1000)
        started = time.monotonic()
        died = executor.call(specs["crash"], {})
        later = executor.call(specs["add"], {"a": 1, "b": 2})
    finally:
        pool.close()
    assert not died.ok and died.error == "MCP server dying exited while answering crash"
    assert not later.ok and later.error == "MCP server dying exited earlier in this run"
    assert time.monotonic() - started < 10


def test_a_slow_start_within_the_limit_works() -> None:
    pool = McpConnections(start_timeout=60, call_timeout=10)
    try:
        names = [t["name"] for t in pool.list_tools(parse_server(f"{TEST_SERVER} slow 1"))]
    finally:
        pool.close()
    assert "add" in names


def test_calls_after_close_fail_instead_of_hanging() -> None:
    pool = McpConnections(start_timeout=5, call_timeout=5)
    pool.close()
    with pytest.raises(McpFailure, match="closed"):
        pool.list_tools(parse_server(f"{TEST_SERVER} stdio"))


# --- recorded in the registry: searchable beside the HTTP endpoints ----------------------


def test_add_mcp_makes_a_servers_tools_searchable_and_runnable(
    shared_data: Path, tmp_path: Path
) -> None:
    registry = tmp_path / "registry.db"
    env = {"AAH_REGISTRY": str(registry), "AAH_MCP_START_TIMEOUT": "60"}
    added = aah(
        "tools", "add-mcp", "calc", "--data", str(shared_data), "--",
        sys.executable, str(SERVERS), "stdio", env=env,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert "calc__add" in added.stdout
    # A rebuild from the data sources keeps them.
    rebuilt = aah("tools", "build", "--data", str(shared_data), env=env)
    assert rebuilt.returncode == 0, rebuilt.stderr
    found = aah("tools", "search", "add two integers", "--json", env=env)
    assert found.returncode == 0, found.stderr
    assert "calc__add" in [hit["name"] for hit in json.loads(found.stdout)]
    # The spec alone says how to reach the server: no --mcp needed.
    script = one_call_script("calc__add", {"a": 20, "b": 22}, "Added.")
    with FakeLLMServer(script) as llm:
        ran = aah(
            "run", "Add 20 and 22", "--tool", "calc__add", "--no-aah",
            "--db", str(tmp_path / "a.db"), env={**model_env(llm, tmp_path), **env},
        )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert [e.result for e in tool_events(tmp_path / "a.db")] == ["42"]


def test_add_mcp_with_a_server_that_does_not_start_adds_nothing(tmp_path: Path) -> None:
    registry = tmp_path / "registry.db"
    result = aah(
        "tools", "add-mcp", "gone", "--", "/nonexistent/server",
        env={"AAH_REGISTRY": str(registry)},
    )  # fmt: skip
    assert result.returncode == 2 and result.stderr.startswith("error: MCP server gone")
    assert "nothing was added" in result.stderr and not registry.exists()
