"""The address guard: tool calls refuse hosts whose addresses are not public.

Every spelling of an internal address (decimal, octal, hex, IPv4-mapped
IPv6, trailing dots, upper case, names that resolve to one) must be refused
before a request is sent, with one line naming the host, the address and the
setting that allows it; ``AAH_HTTP_ALLOW_PRIVATE=1`` lets the calls through.
Then ``aah run`` itself, as a subprocess, against a trickling tool server and
a refused one: the session ends, it is never left ``running``.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from hostile_tool_server import HostileToolServer, trickle
from http_server import LocalServer, make_spec

from aah.tools.http import HttpExecutor
from aah.tools.http.executor import new_session
from aah.tools.http.transport import PrivateAddressError, is_public

GOOD_SPECS = Path(__file__).parent / "fixtures" / "bad_specs" / "good"

# Hosts that reach this machine's loopback: each would hit the test server unguarded.
LOOPBACK_SPELLINGS = [
    "127.0.0.1",
    "2130706433",
    "0177.0.0.1",
    "0x7f.1",
    "0x7f000001",
    "017700000001",
    "127.1",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[::1]",
    "[0:0:0:0:0:0:0:1]",
    "0.0.0.0",
    "0",
    "[::]",
    "localhost",
    "localhost.",
    "LOCALHOST",
    "LocalHost.",
    "api.localhost",
]
# Internal addresses elsewhere: never called, whether anything answers there or not.
INTERNAL_SPELLINGS = [
    "169.254.169.254",
    "[::ffff:169.254.169.254]",
    "[::ffff:a9fe:a9fe]",
    "[64:ff9b::a9fe:a9fe]",
    "[2002:a9fe:a9fe::]",
    "100.64.0.1",
    "10.0.0.1",
    "172.16.0.1",
    "192.168.1.1",
    "192.0.0.1",
    "198.18.0.1",
    "224.0.0.1",
    "239.255.255.250",
    "240.0.0.1",
    "255.255.255.255",
    "[fd00::1]",
    "[fc00::1]",
    "[fe80::1]",
    "[fec0::1]",
    "[ff02::1]",
    "[::127.0.0.1]",
    "[2001:db8::1]",
]


def _hosts_file_loopback_names() -> list[str]:
    """Names ``/etc/hosts`` maps to a loopback address, ``localhost`` aside."""
    try:
        lines = Path("/etc/hosts").read_text().splitlines()
    except OSError:
        return []
    names: list[str] = []
    for line in lines:
        fields = line.split("#", 1)[0].split()
        if len(fields) < 2:
            continue
        try:
            loopback = ipaddress.ip_address(fields[0]).is_loopback
        except ValueError:
            continue
        if loopback:
            names += [name for name in fields[1:] if "localhost" not in name.lower()]
    return sorted(set(names))[:3]


@pytest.fixture(scope="module")
def loopback_server() -> Iterator[LocalServer]:
    with LocalServer() as server:
        yield server


def _guarded_call(url: str) -> str:
    with HttpExecutor(timeout=1.0, retries=0, allow_private=False) as http:
        result = http.call(make_spec(url), {})
    assert not result.ok and result.status is None
    assert result.error is not None
    return result.error


def _assert_refused(error: str, host: str) -> None:
    assert error.startswith(f"refused to call {host.strip('[]').lower()}"), error
    assert "not a public address" in error, error
    assert "set AAH_HTTP_ALLOW_PRIVATE=1" in error, error
    assert "\n" not in error


@pytest.mark.parametrize("host", LOOPBACK_SPELLINGS + _hosts_file_loopback_names())
def test_loopback_in_any_spelling_is_refused(loopback_server: LocalServer, host: str) -> None:
    loopback_server.reset()
    error = _guarded_call(f"http://{host}:{loopback_server.port}/json")
    _assert_refused(error, host)
    assert loopback_server.count() == 0


@pytest.mark.parametrize("host", INTERNAL_SPELLINGS)
def test_internal_addresses_are_refused(host: str) -> None:
    started = time.monotonic()
    error = _guarded_call(f"http://{host}:9/latest/meta-data/")
    _assert_refused(error, host)
    assert time.monotonic() - started < 0.5  # refused, not tried


def test_the_refusal_names_the_address_a_name_resolves_to(loopback_server: LocalServer) -> None:
    error = _guarded_call(f"http://LOCALHOST:{loopback_server.port}/json")
    assert error == (
        "refused to call localhost (127.0.0.1): not a public address "
        "(set AAH_HTTP_ALLOW_PRIVATE=1 to allow local and private addresses)"
    )


def test_the_socket_is_checked_after_connect(loopback_server: LocalServer) -> None:
    # What a name that resolved to a public address, then to 127.0.0.1 when
    # connecting (DNS rebinding), meets: the peer of the socket is checked.
    loopback_server.reset()
    with new_session(public_only=True) as session, pytest.raises(requests.ConnectionError) as err:
        session.get(loopback_server.url("/json"), timeout=2)
    assert isinstance(_cause(err.value), PrivateAddressError)
    assert loopback_server.count() == 0


def _cause(exc: BaseException) -> BaseException | None:
    from aah.tools.http.executor import find_cause

    return find_cause(exc, PrivateAddressError)


def test_the_setting_allows_private_addresses(
    loopback_server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AAH_HTTP_ALLOW_PRIVATE", "1")
    with HttpExecutor(timeout=2.0, retries=0) as http:
        result = http.call(make_spec(loopback_server.url("/json")), {})
    assert result.ok and result.data == {"city": "Oslo", "temp": 21.5}


def test_the_guard_is_on_by_default(
    loopback_server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AAH_HTTP_ALLOW_PRIVATE", raising=False)
    with HttpExecutor(timeout=2.0, retries=0) as http:
        result = http.call(make_spec(loopback_server.url("/json")), {})
    assert result.error is not None
    _assert_refused(result.error, "127.0.0.1")


@pytest.mark.parametrize(
    "address", ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8", "2a00:1450::1"]
)
def test_public_addresses_pass(address: str) -> None:
    assert is_public(ipaddress.ip_address(address))


# `aah run` as a subprocess: the session must end, never stay `running`.

TOOL = "hostile__get_thing"


def _registry(where: Path, port: int) -> Path:
    from aah.tools.registry.build import build_registry

    data = where / "data"
    shutil.copytree(GOOD_SPECS / "fail-talms", data / "fail-talms")
    (data / "openapi").mkdir()
    (data / "openapi" / "hostile__1.yaml").write_text(
        f"""openapi: 3.0.0
info: {{title: hostile, version: "1"}}
servers: [{{url: "http://127.0.0.1:{port}"}}]
paths:
  /thing:
    get:
      operationId: get_thing
      responses:
        "200": {{description: ok}}
"""
    )
    build_registry(data, where / "registry.db")
    return where / "registry.db"


def _run(tmp_path: Path, port: int, **env: str) -> tuple[subprocess.CompletedProcess[str], float]:
    from aah.testing.fake_llm import FakeLLMServer

    script = {
        "rules": [
            {"when": {"last_tool_name": TOOL}, "reply": "Done."},
            {"reply": {"tool_calls": [{"name": TOOL, "arguments": {}}]}},
        ]
    }
    registry = _registry(tmp_path, port)
    with FakeLLMServer(script) as llm:
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
        clean |= {
            "AAH_REGISTRY": str(registry),
            "AAH_BASE_URL": llm.base_url,
            "AAH_MODEL": "fake-model",
            "AAH_API_KEY": "sk-test",
            "AAH_LLM_RETRIES": "0",
            "COLUMNS": "200",
            **env,
        }
        args = ["run", "Get the thing", "--tool", TOOL, "--awareness", "none", "--no-aah"]
        started = time.monotonic()
        result = subprocess.run(
            [sys.executable, "-m", "aah", *args, "--db", str(tmp_path / "aah.db")],
            text=True,
            capture_output=True,
            env=clean,
            timeout=60,
            cwd=tmp_path,
        )
    return result, time.monotonic() - started


def _session_status(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        (status,) = conn.execute("SELECT status FROM sessions").fetchone()
    return str(status)


def _tool_result_text(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT payload FROM events").fetchall()
    return "\n".join(str(row[0]) for row in rows)


def test_aah_run_ends_when_the_tool_api_trickles(tmp_path: Path) -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello"
    with HostileToolServer({"/thing": trickle(head, every=0.5)}) as server:
        result, elapsed = _run(
            tmp_path, server.port, AAH_HTTP_TIMEOUT="2", AAH_HTTP_ALLOW_PRIVATE="1"
        )
    assert result.returncode == 0, result.stderr
    assert elapsed < 20, elapsed
    assert _session_status(tmp_path / "aah.db") == "finished"
    events = _tool_result_text(tmp_path / "aah.db")
    assert f"no response from {server.host} within 2 s (timeout)" in events


def test_aah_run_refuses_a_tool_on_loopback_by_default(tmp_path: Path) -> None:
    with LocalServer() as server:
        result, _ = _run(tmp_path, server.port)
        hits = server.count()
    assert result.returncode == 0, result.stderr
    assert hits == 0
    assert _session_status(tmp_path / "aah.db") == "finished"
    events = json.dumps(_tool_result_text(tmp_path / "aah.db"))
    assert "not a public address" in events and "AAH_HTTP_ALLOW_PRIVATE=1" in events
