"""Leak corpus: each way a secret reached a file or the terminal, run end to end.

Every case runs the real ``aah`` command in a subprocess against servers on
127.0.0.1 (the fake model server, a tool server, an HTML page) with a marker
secret, then searches every byte aah wrote (the session database with its
-wal and -shm files, the HTTP record cache, reports) and everything it printed
for the marker: raw, URL-encoded and base64-encoded at each alignment.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest
from http_server import LocalServer

from aah.testing.fake_llm import FakeLLMServer
from aah.tools.registry.build import build_registry

pytestmark = pytest.mark.usefixtures("allow_private_tool_hosts")

GOOD_SPECS = Path(__file__).parent / "fixtures" / "bad_specs" / "good"
TOOL = "leaky__echoItems"
# Not shaped like any known key: only knowing the value can catch these.
PLAIN = "Zq7vK2marker4Lw9Xe"
# With characters that URL-encoding and base64 change.
SPECIAL = "Zq7/vK2+marker=4Lw9"


def marker_forms(marker: str) -> list[bytes]:
    """The marker as it may be written: raw, URL-encoded, base64 at the three alignments."""
    raw = marker.encode()
    forms = {raw, quote(marker, safe="").encode(), quote_plus(marker).encode()}
    for pad in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(b"\0" * pad + raw)
            forms.add(text[4 if pad else 0 : 4 * ((pad + len(raw)) // 3)])
    return sorted(forms)


def leaks(marker: str, where: Path, printed: list[str]) -> list[str]:
    """Where a form of ``marker`` was found: file names, or ``stdout``/``stderr``."""
    found = []
    forms = marker_forms(marker)
    for path in sorted(where.rglob("*")):
        if path.is_file() and "inputs" not in path.parts:
            data = path.read_bytes()
            found += [f"{path.name}:{form.decode()}" for form in forms if form in data]
    for index, text in enumerate(printed):
        data = text.encode()
        found += [f"output{index}:{form.decode()}" for form in forms if form in data]
    return found


class _EchoPage(BaseHTTPRequestHandler):
    """A 200 HTML page that repeats the request's Authorization header."""

    def do_POST(self) -> None:  # noqa: N802 - the handler's method name
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        auth = self.headers.get("Authorization", "")
        body = f"<html><body>Welcome! You signed in with {auth}</body></html>".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture
def html_page() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoPage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def bench_registry(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("registry") / "registry.db"
    build_registry(shared_data, path)
    return path


@dataclass
class Case:
    """One leak path: how to run it, and what it needs."""

    marker: str
    env: dict[str, str] = field(default_factory=dict)
    script: Any = None
    commands: list[list[str]] = field(default_factory=list)
    stdin: str = ""
    tool_server: bool = False
    html_human: bool = False
    bench: bool = False
    grader_script: Any = None


def _error_script(message: str, status: int = 401) -> dict[str, Any]:
    error = {"status": status, "message": message, "retry_after_ms": 0}
    return {"rules": [{"reply": {"error": error}}]}


def _agent_script(*tool_arguments: dict[str, Any], final: str = "Done.") -> dict[str, Any]:
    rules: list[dict[str, Any]] = [{"when": {"has_tools": False}, "reply": "Yes, all there."}]
    rules.append({"when": {"last_tool_name": TOOL}, "reply": final})
    for arguments in tool_arguments:
        rules.append({"when": {"has_tools": True}, "reply": _call(TOOL, arguments)})
    rules.append({"when": {"has_tools": True}, "reply": final})
    return {"rules": rules}


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


_ASKING = {
    "rules": [
        {"when": {"has_tools": False}, "reply": "IDK: the city is not given."},
        {"when": {"last_tool_name": "ask_human"}, "reply": "Done."},
        {"when": {"has_tools": True}, "reply": _call("ask_human", {"question": "Which city?"})},
    ]
}
_RUN = ["run", "What is in the box?", "--http", "mock"]
_RUN_TOOL = ["run", "What is in the box?", "--tool", TOOL]
_BENCH = ["bench", "run", "--run", "r", "--setting", "underspecified", "--limit", "1"]

CASES: dict[str, Case] = {
    # The model endpoint refuses the key and repeats it (interactive run).
    "agent 401 repeats AAH_API_KEY": Case(
        PLAIN,
        {"AAH_API_KEY": PLAIN},
        _error_script(f"Incorrect API key provided: {PLAIN}."),
        [_RUN],
    ),
    "agent 400 repeats OPENAI_API_KEY": Case(
        PLAIN,
        {"OPENAI_API_KEY": PLAIN},
        _error_script(f"bad request for key {PLAIN}", status=400),
        [_RUN],
    ),
    "agent 401 repeats an sk-proj key": Case(
        "sk-proj-" + PLAIN + "abc",
        {"AAH_API_KEY": "sk-proj-" + PLAIN + "abc"},
        _error_script(f"Incorrect API key provided: sk-proj-{PLAIN}abc."),
        [_RUN],
    ),
    "agent 401 repeats an unconfigured sk-proj key": Case(
        "sk-proj-" + PLAIN + "xyz",
        {"AAH_API_KEY": "something-else-entirely"},
        _error_script(f"Incorrect API key provided: sk-proj-{PLAIN}xyz."),
        [_RUN],
    ),
    "agent 401 repeats the key as a Bearer header": Case(
        "Tok" + PLAIN,
        {},
        _error_script(f"rejected header Authorization: Bearer Tok{PLAIN}"),
        [_RUN],
    ),
    "agent 401 repeats the key base64 in a Basic header": Case(
        SPECIAL,
        {"AAH_API_KEY": SPECIAL},
        _error_script(
            "rejected Authorization: Basic " + base64.b64encode(f"me:{SPECIAL}".encode()).decode()
        ),
        [_RUN],
    ),
    "agent 401 repeats the key URL-encoded": Case(
        SPECIAL,
        {"AAH_API_KEY": SPECIAL},
        _error_script(f"see https://example.org/keys?k={quote(SPECIAL, safe='')}"),
        [_RUN],
    ),
    "agent 401 repeats the password of the base URL": Case(
        PLAIN,
        {"AAH_BASE_URL": "http://me:{password}@{host}/v1", "AAH_API_KEY": "x"},
        _error_script(f"user me with password {PLAIN} may not sign in"),
        [_RUN],
    ),
    "batch agent 401 repeats AAH_API_KEY": Case(
        PLAIN,
        {"AAH_API_KEY": PLAIN},
        _error_script(f"Incorrect API key provided: {PLAIN}."),
        [_BENCH],
        bench=True,
    ),
    "simulated user's 200 HTML page repeats its Bearer key": Case(
        PLAIN,
        {"AAH_HUMAN_API_KEY": PLAIN, "AAH_HUMAN_MODEL": "sim"},
        _ASKING,
        [[*_BENCH, "--human", "simulated"]],
        html_human=True,
        bench=True,
    ),
    "grader 401 repeats AAH_GRADER_API_KEY": Case(
        PLAIN,
        {"AAH_GRADER_API_KEY": PLAIN},
        _ASKING,
        [_BENCH, ["grade", "--run", "r", "--votes", "1"]],
        bench=True,
        grader_script=_error_script(f"Incorrect API key provided: {PLAIN}."),
    ),
    "trace prints a secret argument": Case(
        PLAIN,
        {},
        _agent_script({"api_key": PLAIN, "X-Acme-Auth": "Aa" + PLAIN}),
        [[*_RUN_TOOL, "--http", "mock"]],
    ),
    "tool response repeats a URL-encoded token": Case(
        SPECIAL,
        {},
        _agent_script({"api_key": SPECIAL, "note": "hello"}),
        [[*_RUN_TOOL, "--http", "live"]],
        tool_server=True,
    ),
    "record stores a secret path value": Case(
        PLAIN,
        {},
        _agent_script({"api_key": PLAIN}),
        [[*_RUN_TOOL, "--http", "record"]],
        tool_server=True,
    ),
    "record stores a custom auth header": Case(
        "Hd" + PLAIN,
        {},
        _agent_script({"api_key": "public", "X-Acme-Auth": "Hd" + PLAIN}),
        [[*_RUN_TOOL, "--http", "record"]],
        tool_server=True,
    ),
    "record stores a Bearer+TOKEN query value": Case(
        "Qb" + PLAIN,
        {},
        _agent_script({"api_key": "public", "q": "Bearer Qb" + PLAIN}),
        [[*_RUN_TOOL, "--http", "record"]],
        tool_server=True,
    ),
    "the model repeats AAH_WEB_TOKEN in its answer": Case(
        PLAIN,
        {"AAH_WEB_TOKEN": PLAIN},
        {"rules": [{"reply": f"The web token is {PLAIN}."}]},
        [_RUN],
    ),
    "the user's request holds an hf_ token": Case(
        "hf_" + PLAIN,
        {},
        {"rules": [{"reply": "Done."}]},
        [["run", f"Use my token hf_{PLAIN} please", "--http", "mock"]],
    ),
    "a person types the judge's key as an answer": Case(
        PLAIN,
        {"AAH_JUDGE_API_KEY": PLAIN},
        _ASKING,
        [[*_RUN, "--human", "console"]],
        stdin=PLAIN + "\n",
    ),
}


def _spec_dir(where: Path, port: int) -> Path:
    data = where / "inputs" / "data"
    shutil.copytree(GOOD_SPECS / "fail-talms", data / "fail-talms")
    (data / "openapi").mkdir()
    (data / "openapi" / "leaky__1.yaml").write_text(
        f"""openapi: 3.0.0
info: {{title: leaky, version: "1"}}
servers: [{{url: "http://127.0.0.1:{port}"}}]
paths:
  /echo/{{api_key}}/items:
    get:
      operationId: echoItems
      parameters:
        - {{name: api_key, in: path, required: true, schema: {{type: string}}}}
        - {{name: X-Acme-Auth, in: header, schema: {{type: string}}}}
        - {{name: q, in: query, schema: {{type: string}}}}
        - {{name: note, in: query, schema: {{type: string}}}}
      responses:
        "200": {{description: ok}}
"""
    )
    return data


def run_case(
    case: Case, tmp_path: Path, html_page: str, shared_data: Path, registry: Path | None
) -> tuple[list[str], list[str]]:
    """Run ``case``; return everything printed and the commands' exit lines."""
    out = tmp_path / "out"
    out.mkdir()
    printed: list[str] = []
    statuses: list[str] = []
    with LocalServer() as tools, FakeLLMServer(case.script) as llm:
        grader = FakeLLMServer(case.grader_script or {"rules": [{"reply": "Pass"}]}).start()
        try:
            env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
            env |= {
                "COLUMNS": "200",
                "NO_COLOR": "1",
                "AAH_MODEL": "fake-model",
                "AAH_BASE_URL": llm.base_url,
                "AAH_LLM_RETRIES": "0",
                "AAH_DB": str(out / "aah.db"),
                "AAH_CACHE_DIR": str(out / "cache"),
                "AAH_GRADER_BASE_URL": grader.base_url,
                "AAH_GRADER_MODEL": "grader",
                "AAH_HTTP_ALLOW_PRIVATE": "1",  # the tool server is on 127.0.0.1
            }
            if case.bench:
                assert registry is not None
                env |= {"AAH_REGISTRY": str(registry), "AAH_DATA_DIR": str(shared_data)}
            else:
                data = _spec_dir(tmp_path, tools.port)
                env |= {"AAH_REGISTRY": str(tmp_path / "inputs" / "r.db")}
                build_registry(data, tmp_path / "inputs" / "r.db")
            if case.html_human:
                env["AAH_HUMAN_BASE_URL"] = html_page
            host = llm.base_url.split("//")[1].split("/")[0]
            for name, value in case.env.items():
                env[name] = value.format(password=PLAIN, host=host)
            for command in case.commands:
                result = subprocess.run(
                    [sys.executable, "-m", "aah", *command],
                    input=case.stdin,
                    text=True,
                    capture_output=True,
                    env=env,
                    timeout=120,
                    cwd=out,
                )
                printed += [result.stdout, result.stderr]
                statuses.append(f"{command[0]}: {result.returncode} {result.stderr[-300:]}")
        finally:
            grader.stop()
    return printed, statuses


@pytest.mark.parametrize("name", list(CASES))
def test_no_secret_reaches_a_file_or_the_terminal(
    name: str, tmp_path: Path, html_page: str, shared_data: Path, request: pytest.FixtureRequest
) -> None:
    case = CASES[name]
    registry = request.getfixturevalue("bench_registry") if case.bench else None
    printed, statuses = run_case(case, tmp_path, html_page, shared_data, registry)
    # The run did reach the point where the secret shows up.
    assert (tmp_path / "out" / "aah.db").is_file(), statuses
    found = leaks(case.marker, tmp_path / "out", printed)
    assert found == [], (found, statuses)
