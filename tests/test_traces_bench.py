"""A real ``aah bench run`` traced into a real Arize Phoenix, read back through its REST API.

And the same run without an exporter imports nothing of OpenTelemetry.

Phoenix (``arize-phoenix``) lives in a virtual environment of its own: its
``phoenix`` executable is found at AAH_PHOENIX, else ``.venv-phoenix/bin/phoenix``
in the repository. Without it the test skips, unless AAH_PHOENIX_REQUIRED=1
(CI), where a missing Phoenix fails. One Phoenix serves the whole test session,
on 127.0.0.1 with free ports and its own working directory.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from http_server import LocalServer

from aah.benchmark.failtalms.dataset import load_tasks
from aah.testing.fake_llm import FakeLLMServer
from aah.tools.registry.read import Registry

ROOT = Path(__file__).resolve().parents[1]
REQUIRED = os.environ.get("AAH_PHOENIX_REQUIRED") == "1"
RUN = "traced"


def _phoenix_executable() -> Path | None:
    named = os.environ.get("AAH_PHOENIX")
    path = Path(named) if named else ROOT / ".venv-phoenix" / "bin" / "phoenix"
    return path if path.is_file() and os.access(path, os.X_OK) else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 - loopback only
        return json.loads(response.read())


class Phoenix:
    """A running ``phoenix serve``: its base URL."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    def spans(self, project: str = "default") -> list[dict[str, Any]]:
        """Every span of ``project``, following the API's cursor."""
        found: list[dict[str, Any]] = []
        cursor = ""
        while True:
            query = "?limit=1000" + (f"&cursor={cursor}" if cursor else "")
            page = _get(f"{self.base_url}/v1/projects/{project}/spans{query}")
            found += page.get("data", [])
            cursor = page.get("next_cursor") or ""
            if not cursor:
                return found


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    executable = _phoenix_executable()
    if executable is None:
        message = "Phoenix is not installed: python3 -m venv .venv-phoenix && "
        message += ".venv-phoenix/bin/pip install arize-phoenix (or set AAH_PHOENIX)"
        if REQUIRED:
            pytest.fail(message)
        pytest.skip(message)
    work = tmp_path_factory.mktemp("phoenix")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PHOENIX_"))}
    env |= {
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(_free_port()),
        "PHOENIX_WORKING_DIR": str(work),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "DO_NOT_TRACK": "1",
    }
    log = (work / "phoenix.log").open("w")
    process = subprocess.Popen(
        [str(executable), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                _get(f"{base}/v1/projects")
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                if process.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    tail = (work / "phoenix.log").read_text(errors="replace")[-2000:]
                    pytest.fail(f"phoenix serve did not start: {tail}")
                time.sleep(0.2)
        yield Phoenix(base)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
        log.close()


def _two_tasks(shared_data: Path, registry: Path) -> list[tuple[str, str]]:
    """Two tasks, each with an offered endpoint the other does not offer: (id, endpoint)."""
    known = Registry(registry)
    chosen: list[tuple[str, str]] = []
    taken: set[str] = set()
    for task in load_tasks(shared_data):
        offered = [name for name in task.offered if name in known]
        if not offered or any(name in taken for name in offered):
            continue
        chosen.append((task.id, offered[0]))
        taken.update(offered)
        if len(chosen) == 2:
            return chosen
    raise AssertionError("the shared data has no two tasks with separate tools")


def _point_at(registry: Path, endpoint: str, url: str, method: str) -> None:
    """Make ``endpoint`` a call without parameters to ``url`` (the test's own server)."""
    with sqlite3.connect(registry) as conn:
        (text,) = conn.execute(
            "SELECT spec FROM endpoints WHERE qualified_name = ?", [endpoint]
        ).fetchone()
        spec = json.loads(text) | {"url_template": url, "method": method, "parameters": []}
        conn.execute(
            "UPDATE endpoints SET spec = ? WHERE qualified_name = ?", [json.dumps(spec), endpoint]
        )


def _agent(endpoints: list[str]) -> dict[str, Any]:
    """Awareness yes; ask a question; call the task's own endpoint; answer."""
    rules: list[dict[str, Any]] = [
        {"when": {"has_tools": False}, "reply": "Yes, all there."},
        {"when": {"last_tool_name": endpoints[0]}, "reply": "Done."},
        {"when": {"last_tool_name": endpoints[1]}, "reply": "Done."},
    ]
    for name in endpoints:
        call = {"tool_calls": [{"name": name, "arguments": {}}]}
        rules.append({"when": {"tool_offered": name, "last_tool_name": "ask_human"}, "reply": call})
    ask = {"tool_calls": [{"name": "ask_human", "arguments": {"question": "Which one?"}}]}
    rules.append({"when": {"has_tools": True}, "reply": ask})
    return {"rules": rules}


def traced_bench_run(
    shared_data: Path,
    shared_registry: Path,
    tmp_path: Path,
    env_extra: dict[str, str],
    python: tuple[str, ...] = ("-m", "aah"),
) -> subprocess.CompletedProcess[str]:
    """``aah bench run`` of two tasks: each asks (a deadline's fallback answers), one
    books (an approval whose deadline rejects), one calls a tool that fails."""
    registry = tmp_path / "registry.db"
    shutil.copy(shared_registry, registry)
    (a_id, a_tool), (b_id, b_tool) = _two_tasks(shared_data, registry)
    policy = tmp_path / "approve.json"
    policy.write_text(
        json.dumps({"rules": [{"tools": [a_tool]}], "deadline": 0.5, "on_timeout": "reject"}),
        encoding="utf-8",
    )
    with LocalServer() as server, FakeLLMServer(_agent([a_tool, b_tool])) as llm:
        _point_at(registry, a_tool, server.url("/echo/a"), "POST")
        _point_at(registry, b_tool, server.url("/broken"), "GET")
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_", "OTEL_"))
        }
        env |= {
            "AAH_REGISTRY": str(registry),
            "AAH_DATA_DIR": str(shared_data),
            "AAH_BASE_URL": llm.base_url,
            "AAH_MODEL": "fake-model",
            "AAH_DB": str(tmp_path / "aah.db"),
            "AAH_LLM_RETRIES": "0",
            "AAH_HTTP_ALLOW_PRIVATE": "1",
            "COLUMNS": "200",
            **env_extra,
        }
        command = [sys.executable, *python, "bench", "run", "--run", RUN, "--no-probe"]
        command += ["--human", "queue", "--human-deadline", "0.5", "--http", "live"]
        command += ["--approve", str(policy), "--ids", a_id, "--ids", b_id]
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result


def _attributes(span: dict[str, Any]) -> dict[str, Any]:
    """A Phoenix span's attributes, flattened to dotted keys."""
    flat: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(f"{prefix}.{key}" if prefix else key, item)
        else:
            flat[prefix] = value

    walk("", span.get("attributes") or {})
    return flat


def test_a_bench_run_arrives_in_phoenix_as_a_tree_with_its_waits(
    phoenix: Phoenix, shared_data: Path, shared_registry: Path, tmp_path: Path
) -> None:
    endpoint = phoenix.base_url
    traced_bench_run(
        shared_data, shared_registry, tmp_path, {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}
    )
    deadline = time.monotonic() + 60
    while True:
        spans = [s for s in phoenix.spans() if _attributes(s).get("aah.run_id") == RUN]
        if any(s["name"] == f"run {RUN}" for s in spans) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    names = [s["name"] for s in spans]
    by_id = {s["context"]["span_id"]: s for s in spans}
    (run,) = [s for s in spans if s["name"] == f"run {RUN}"]
    parts = [s for s in spans if s["name"] == "invoke_agent aah"]
    # Each task: a part before its question, a part after it (and one after an approval).
    assert len(parts) >= 4, names
    assert all(by_id[p["parent_id"]] is run for p in parts)
    assert len({s["context"]["trace_id"] for s in spans}) == 1
    waits = [s for s in spans if s["name"] == "ask_human"]
    assert len(waits) == 2
    for wait in waits:
        attrs = _attributes(wait)
        assert attrs["aah.human.fallback_used"] is True
        assert attrs["aah.human.answered_by"] == "deadline-fallback"
        assert "aah.human.deadline" in attrs
        assert by_id[wait["parent_id"]]["name"] == "invoke_agent aah"
    approvals = [s for s in spans if s["name"].startswith("approval ")]
    assert len(approvals) == 1
    assert _attributes(approvals[0])["aah.approval.decision"] == "reject"
    tools = [s for s in spans if s["name"].startswith("execute_tool ")]
    failing = [s for s in tools if _attributes(s).get("http.response.status_code") == 500]
    assert len(failing) == 1 and failing[0]["status_code"] == "ERROR"
    chats = [s for s in spans if s["name"] == "chat fake-model"]
    assert chats and all(_attributes(c)["gen_ai.request.model"] == "fake-model" for c in chats)
    assert all(_attributes(s).get("aah.session_id") for s in spans if s is not run)
    assert all(_attributes(s).get("aah.task_id") for s in spans if s is not run)


# ``python -m aah ...`` that says, as it exits, which modules that export traces were loaded
# (see test_traces.AAH_EXPORT_MODULES).
_WATCHED = (
    "import atexit, runpy, sys\n"
    "SHOWN = ('aah.telemetry.live', 'opentelemetry.sdk.trace.export', 'opentelemetry.exporter')\n"
    "atexit.register(lambda: print('exporting:', *sorted(m for m in sys.modules"
    " if m.startswith(SHOWN)), file=sys.stderr))\n"
    "runpy.run_module('aah', run_name='__main__', alter_sys=True)\n"
)


def test_a_bench_run_without_an_exporter_loads_nothing_that_exports(
    shared_data: Path, shared_registry: Path, tmp_path: Path
) -> None:
    result = traced_bench_run(shared_data, shared_registry, tmp_path, {}, ("-c", _WATCHED))
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("exporting:")]
    assert line == "exporting:"
