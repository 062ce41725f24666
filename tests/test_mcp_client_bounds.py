"""What an MCP server sends aah is bounded: per message, per call, in depth; a refusal ends the call at once.

The server is tests/mcp_puppet_server.py, which writes what each call's
arguments say (a 200 MB answer is written a megabyte at a time), over stdio
and streamable HTTP, through aah's real client (McpConnections). A refused
answer fails its call at once in one line naming the server and the bound;
a refused question is declined, and the server sees the decline.
"""

from __future__ import annotations

import json
import logging
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_mcp_tools import free_port

pytest.importorskip("mcp", reason="the MCP tests need the mcp extra: pip install 'aah[mcp]'")

from aah.mcp import McpConnections, McpFailure, MessageBounds, parse_server  # noqa: E402

PUPPET = Path(__file__).resolve().parent / "mcp_puppet_server.py"
STDIO = f"puppet={shlex.quote(sys.executable)} {shlex.quote(str(PUPPET))}"
ANSWER_HEAD = '{"jsonrpc":"2.0","id":{id},"result":{"content":[{"type":"text","text":"'
ANSWER_TAIL = '"}]}}'
MEGABYTE = 1 << 20


def answer(text: str = "done", *, modern: bool = False) -> list[dict[str, Any]]:
    """A scripted line: the call's plain answer (2026-07-28 says it is complete)."""
    tail = '"}],"resultType":"complete"}}' if modern else ANSWER_TAIL
    return [{"text": ANSWER_HEAD + text + tail}]


def huge_answer(size: int) -> list[dict[str, Any]]:
    """A scripted line: an answer whose text is ``size`` bytes."""
    return [{"text": ANSWER_HEAD}, {"repeat": "x", "times": size}, {"text": ANSWER_TAIL}]


def deep_question(levels: int) -> list[dict[str, Any]]:
    """A scripted line: a question whose schema nests ``levels`` objects deep."""
    opening = '{"type":"object","properties":{"a":'
    return [
        {"text": '{"jsonrpc":"2.0","id":"{ask}","method":"elicitation/create",'},
        {"text": '"params":{"message":"Where?","requestedSchema":'},
        {"repeat": opening, "times": levels},
        {"text": '{"type":"string"}'},
        {"repeat": "}}", "times": levels},
        {"text": "}}"},
    ]


@pytest.fixture(scope="module")
def http_target() -> Iterator[str]:
    """The puppet over streamable HTTP on 127.0.0.1."""
    port = free_port()
    process = subprocess.Popen([sys.executable, str(PUPPET), "--http", str(port)])
    try:
        wait_for_port(port)
        yield f"puppet=http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:  # a call still streaming holds uvicorn's shutdown
            process.kill()
            process.wait(timeout=5)


def wait_for_port(port: int) -> None:
    """Wait (bounded) until a server listens on 127.0.0.1:``port``."""
    import socket

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"the puppet server never listened on {port}")


@pytest.fixture(params=["stdio", "http-json", "http-sse", "http-gzip"])
def transport(request: pytest.FixtureRequest, http_target: str) -> tuple[str, dict[str, Any]]:
    """A way to reach the puppet: its target, and how it sends a call's answer over HTTP."""
    kind = str(request.param)
    if kind == "stdio":
        return STDIO, {}
    if kind == "http-gzip":
        return http_target, {"http": "json", "gzip": True}
    return http_target, {"http": kind.removeprefix("http-")}


@pytest.fixture
def pool() -> Iterator[McpConnections]:
    # Deadlines far past what the tests wait: reaching one would be the old failure.
    connections = McpConnections(start_timeout=60, call_timeout=60, bounds=MessageBounds())
    try:
        yield connections
    finally:
        connections.close()


def _status(field: str) -> int:
    """A field of /proc/self/status, in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} in /proc/self/status")


def _peak_growth(work: Callable[[], Any]) -> tuple[Any, int]:
    """``work()``'s outcome, and how far this process's peak memory rose above its size before."""
    clear_refs = Path("/proc/self/clear_refs")
    if not clear_refs.exists():
        pytest.skip("needs Linux's /proc to read peak memory")
    clear_refs.write_text("5")  # the peak (VmHWM) starts again from the present size
    before = _status("VmRSS")
    try:
        outcome: Any = work()
    except McpFailure as exc:
        outcome = exc
    return outcome, _status("VmHWM") - before


def test_a_200_megabyte_answer_fails_its_call_at_once_in_bounded_memory(
    pool: McpConnections, transport: tuple[str, dict[str, Any]]
) -> None:
    target, how = transport
    server = parse_server(target)
    pool.list_tools(server)  # started and listed: what follows times the call alone
    started = time.monotonic()
    outcome, growth = _peak_growth(
        lambda: pool.call(server, "emit", {"script": [huge_answer(200_000_000)], **how})
    )
    took = time.monotonic() - started
    assert isinstance(outcome, McpFailure), outcome
    line = str(outcome)
    assert line.startswith("MCP server puppet sent more than 4,000,000 bytes")
    assert line.endswith(": raise AAH_MCP_MAX_MESSAGE_BYTES") and "\n" not in line
    assert took < 5, f"the call took {took:.1f} s"
    assert growth < 100 * MEGABYTE, f"aah's memory grew {growth / MEGABYTE:.0f} MB"
    # The server is still in use: the next call is answered.
    reply = pool.call(server, "emit", {"script": [answer("after")], **how})
    assert reply.content[0]["text"] == "after"


@pytest.mark.parametrize("levels", [600, 300])
def test_a_question_nested_past_the_bound_is_declined_at_once_and_noted(
    pool: McpConnections,
    transport: tuple[str, dict[str, Any]],
    levels: int,
    caplog: pytest.LogCaptureFixture,
) -> None:
    target, how = transport
    if how.get("http") == "json":
        pytest.skip("a question rides the call's event stream, not a JSON body")
    asked: list[dict[str, Any]] = []

    async def person(server: str, params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"a": "here"}}

    script = {"script": [deep_question(levels)], "await": True, **how}
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="aah.mcp.gate"):
        reply = _call_async(pool, target, script, person)
    took = time.monotonic() - started
    # The server's own tool says what came back to its question: a decline, whatever the
    # call's answerer said to the stand-in it was handed to log (aah.desk declines it).
    assert json.loads(reply.content[0]["text"]) == {"result": {"action": "decline"}}
    [stand_in] = asked
    assert stand_in["message"] == "" and stand_in["requestedSchema"]["properties"] == {}
    assert "nested deeper than 150 levels" in json.dumps(stand_in["_meta"]) and took < 10
    [note] = [r.getMessage() for r in caplog.records if r.name == "aah.mcp.gate"]
    assert note == (
        "MCP server puppet sent JSON nested deeper than 150 levels: aah does not read it "
        "(its 'elicitation/create' request is answered at once)"
    )


def _call_async(pool: McpConnections, target: str, arguments: dict[str, Any], elicitor: Any) -> Any:
    """A call whose questions ``elicitor`` answers (as a session's would), from plain code."""
    import asyncio

    return asyncio.run(pool.acall(parse_server(target), "emit", arguments, elicitor))


def test_the_answers_to_one_call_are_capped_over_all_its_rounds() -> None:
    # Each round is under the message cap; the rounds together pass the call's.
    question = json.dumps(
        {
            "method": "elicitation/create",
            "params": {
                "message": "x" * 300_000,
                "requestedSchema": {"type": "object", "properties": {}},
            },
        }
    )
    line = [
        {"text": '{"jsonrpc":"2.0","id":{id},"result":{"resultType":"input_required",'},
        {"text": f'"inputRequests":{{"q":{question}}}}}}}'},
    ]
    pool = McpConnections(
        start_timeout=60, call_timeout=60, bounds=MessageBounds(1_000_000, 1_000_000)
    )

    async def decline(server: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "decline"}

    modern_only = f"{STDIO} --modern-only"
    try:
        with pytest.raises(McpFailure) as caught:
            _call_async(pool, modern_only, {"script": [line]}, decline)
    finally:
        pool.close()
    assert str(caught.value) == (
        "MCP server puppet sent more than 1,000,000 bytes in answer to one call: "
        "raise AAH_MCP_MAX_CALL_BYTES"
    )


@pytest.mark.parametrize("refusal", ["", "--no-initialize"])
def test_a_server_that_refuses_the_handshake_is_spoken_to_in_the_newest_protocol(
    pool: McpConnections, refusal: str
) -> None:
    server = parse_server(f"{STDIO} --modern-only {refusal}")
    assert [tool["name"] for tool in pool.list_tools(server)] == ["emit"]
    reply = pool.call(server, "emit", {"script": [answer("modern", modern=True)]})
    assert reply.content[0]["text"] == "modern"
