"""``aah mcp serve`` against hostile clients: reused ids, wild deadlines, oversized requests.

Each class of bad input has a corpus that the desk refuses in one line with
nothing logged, over the desk's API (every transport goes through it), over
a raw stdio client speaking JSON-RPC lines itself (NaN tokens, a 10 MB line),
and over the SDK's own client on stdio and streamable HTTP. ``aah db check``
finds what the old failure left behind: a question logged without its
request, a session that waits on nothing.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from test_mcp_serve import (
    SERVE_ENV,
    answer,
    decide,
    http_server,
    http_transport,
    pending_approval,
    pending_request,
)

from aah.bounds import MAX_NESTING, OutOfBounds, nesting, text_nests_deeper
from aah.errors import AahError
from aah.events import HumanQuestionEvent
from aah.store import SessionStore, check_database

pytest.importorskip("mcp", reason="the MCP tests need the mcp extra: pip install 'aah[mcp]'")

from mcp import Client, Implementation, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from aah.mcp import ApprovalAsk, HumanTools, Question  # noqa: E402
from aah.mcp.caps import FIELD_CAPS, MAX_ARGUMENT_KEYS, MAX_MESSAGE_BYTES  # noqa: E402


def nested(levels: int) -> Any:
    value: Any = "deep"
    for _ in range(levels):
        value = {"x": value}
    return value


def held(store: SessionStore) -> tuple[int, int]:
    """Events and requests in ``store``: what a refused request must not have added."""
    sessions = store.list_sessions()
    events = sum(len(store.events(s.id)) for s in sessions)
    requests = len(store.humans.pending_human_requests())
    return events, requests


# -- an id is bound to what it first asked ------------------------------------

READ = ApprovalAsk("read_file", {"path": "notes.txt"}, ask_id="same")
# The same id with other content: each must be refused, never given READ's decision.
OTHER_CALLS = {
    "another tool": ApprovalAsk("delete_everything", {"path": "/"}, ask_id="same"),
    "other arguments": READ._replace(arguments={"path": "/etc/shadow"}),
    "an argument more": READ._replace(arguments={"path": "notes.txt", "recursive": True}),
    "a nested value": ApprovalAsk("read_file", {"path": {"name": "x"}}, ask_id="same"),
    "a number for text": READ._replace(arguments={"path": 7}),
    "other context": READ._replace(context="now for production"),
    "the other fallback": READ._replace(fallback="approve"),
    "a schema given": READ._replace(
        input_schema={"properties": {"path": {"type": "string"}}, "required": ["path"]}
    ),
    "the tool's case": READ._replace(tool="READ_FILE"),
}
CITY = Question("Which city?", ask_id="q1")
OTHER_QUESTIONS = {
    "another question": Question("May I wire 10,000 EUR?", ask_id="q1"),
    "other context": CITY._replace(context="for the wire transfer"),
    "another fallback": CITY._replace(fallback="yes"),
    "a trailing space": CITY._replace(question="Which city? "),
}


async def decided_then_reused(db: Path, other: ApprovalAsk) -> tuple[dict[str, Any], str]:
    store = SessionStore(db)
    desk = HumanTools(store, poll_seconds=0.02)
    try:
        deciding = asyncio.ensure_future(desk.approve(READ, "planner"))
        await asyncio.to_thread(decide, db, await pending_approval(db, "read_file", 20), "approve")
        first = await deciding
        before = held(store)
        with pytest.raises(AahError) as refused:
            await desk.approve(other, "planner")
        assert held(store) == before  # nothing logged, nothing queued
        # The same call with the same id is still its decision.
        assert await desk.approve(READ, "planner") == first
        return first, str(refused.value)
    finally:
        store.close()


@pytest.mark.parametrize("other", OTHER_CALLS.values(), ids=OTHER_CALLS.keys())
def test_an_approval_id_reused_for_another_call_is_refused(
    tmp_path: Path, other: ApprovalAsk
) -> None:
    first, refusal = asyncio.run(decided_then_reused(tmp_path / "desk.db", other))
    assert first["run"] and first["arguments"] == {"path": "notes.txt"}
    assert "id 'same' already names another call" in refusal and "new id" in refusal
    assert "\n" not in refusal


async def answered_then_reused(db: Path, other: Question) -> str:
    store = SessionStore(db)
    desk = HumanTools(store, poll_seconds=0.02)
    try:
        asking = asyncio.ensure_future(desk.ask(CITY, "planner"))
        await asyncio.to_thread(answer, db, await pending_request(db, "Which city?", 20), "Paris")
        assert await asking == "Paris"
        before = held(store)
        with pytest.raises(AahError) as refused:
            await desk.ask(other, "planner")
        with pytest.raises(AahError):
            await desk.start_ask(other, "planner")  # the task form too
        assert held(store) == before
        assert await desk.ask(CITY, "planner") == "Paris"
        return str(refused.value)
    finally:
        store.close()


@pytest.mark.parametrize("other", OTHER_QUESTIONS.values(), ids=OTHER_QUESTIONS.keys())
def test_a_question_id_reused_for_another_question_is_refused(
    tmp_path: Path, other: Question
) -> None:
    refusal = asyncio.run(answered_then_reused(tmp_path / "desk.db", other))
    assert "id 'q1' already names another question" in refusal


async def reused_while_waiting_and_after_a_restart(db: Path) -> None:
    store = SessionStore(db)
    desk = HumanTools(store, poll_seconds=0.02)
    try:
        waiting = asyncio.ensure_future(desk.approve(READ, "planner"))
        # The first must be asked before the other: two asks started at once
        # race, and either may be the one refused.
        request_id = await pending_approval(db, "read_file", 20)
        # Asked again with other content while the first still waits (in flight).
        with pytest.raises(AahError, match="already names another call"):
            await asyncio.wait_for(desk.approve(OTHER_CALLS["another tool"], "planner"), 20)
        # A restarted server (a new desk on the same store) holds the binding too.
        restarted = HumanTools(store, poll_seconds=0.02)
        with pytest.raises(AahError, match="already names another call"):
            await restarted.start_approval(OTHER_CALLS["other arguments"], "planner")
        await asyncio.to_thread(decide, db, request_id, "reject", reason="no")
        assert (await waiting)["outcome"] == "rejected"
        # Without an id, other content is another request, never the first one's answer.
        plain = asyncio.ensure_future(desk.ask(Question("Which city?"), "planner"))
        other = asyncio.ensure_future(desk.ask(Question("Which city?", context="B"), "planner"))
        for _ in range(2000):  # both asked: two requests, not one
            if len(store.humans.pending_human_requests()) == 2:
                break
            await asyncio.sleep(0.01)
        first_id, second_id = [r.id for r in store.humans.pending_human_requests()]
        await asyncio.to_thread(answer, db, first_id, "Paris")
        done, _ = await asyncio.wait([plain, other], timeout=20, return_when="FIRST_COMPLETED")
        assert len(done) == 1 and done.pop().result() == "Paris"
        assert [r.id for r in store.humans.pending_human_requests()] == [second_id]
        await asyncio.to_thread(answer, db, second_id, "Rome")
        answers = await asyncio.wait_for(asyncio.gather(plain, other), 20)
        assert sorted(answers) == ["Paris", "Rome"]
    finally:
        store.close()


def test_the_binding_holds_while_a_request_waits_after_a_restart_and_without_ids(
    tmp_path: Path,
) -> None:
    asyncio.run(reused_while_waiting_and_after_a_restart(tmp_path / "desk.db"))


# -- every number and size from the client is bounded ------------------------

BAD_DEADLINES = [1e18, float("nan"), float("inf"), float("-inf"), -1, 0, 2_592_001, 10**400, True]
TOO_LARGE = {
    "question": Question("x" * (FIELD_CAPS["question"] + 1)),
    "context": Question("q", context="c" * (FIELD_CAPS["context"] + 1)),
    "fallback": Question("q", fallback="f" * (FIELD_CAPS["fallback"] + 1)),
    "id": Question("q", ask_id="i" * (FIELD_CAPS["id"] + 1)),
    "tool": ApprovalAsk("t" * (FIELD_CAPS["tool"] + 1), {}),
    "arguments keys": ApprovalAsk("t", {f"k{i}": 0 for i in range(MAX_ARGUMENT_KEYS + 1)}),
    "nested keys": ApprovalAsk("t", {"a": [{f"k{i}": 0} for i in range(MAX_ARGUMENT_KEYS + 1)]}),
    "arguments text": ApprovalAsk("t", {"a": "v" * FIELD_CAPS["arguments"]}),
    "arguments depth": ApprovalAsk("t", nested(MAX_NESTING + 1)),
    "arguments 1,000 deep": ApprovalAsk("t", nested(1_000)),
    "schema depth": ApprovalAsk("t", {}, input_schema=nested(MAX_NESTING + 1)),
    "schema text": ApprovalAsk("t", {}, input_schema={"d": "s" * FIELD_CAPS["input_schema"]}),
    "NaN in arguments": ApprovalAsk("t", {"a": float("nan")}),
    "Infinity in a schema": ApprovalAsk("t", {}, input_schema={"maximum": float("inf")}),
}


async def refused(db: Path, asks: list[Question | ApprovalAsk]) -> list[str]:
    store = SessionStore(db)
    desk = HumanTools(store, poll_seconds=0.02)
    lines = []
    try:
        for ask in asks:
            for start in (False, True):
                with pytest.raises(OutOfBounds) as error:
                    if isinstance(ask, Question):
                        await (desk.start_ask if start else desk.ask)(ask, "hostile")
                    else:
                        await (desk.start_approval if start else desk.approve)(ask, "hostile")
                lines.append(str(error.value))
        assert store.list_sessions() == []  # refused before anything was made
    finally:
        store.close()
    return lines


@pytest.mark.parametrize("deadline", BAD_DEADLINES, ids=repr)
def test_a_deadline_past_the_bounds_is_refused_before_anything_is_logged(
    tmp_path: Path, deadline: Any
) -> None:
    asks = [Question("q", deadline=deadline), ApprovalAsk("t", {}, deadline=deadline)]
    for line in asyncio.run(refused(tmp_path / "desk.db", asks)):
        assert "'deadline' must be a number of seconds above 0 and at most 2,592,000" in line


@pytest.mark.parametrize("ask", TOO_LARGE.values(), ids=TOO_LARGE.keys())
def test_a_field_past_its_cap_is_refused_before_anything_is_logged(
    tmp_path: Path, ask: Question | ApprovalAsk
) -> None:
    for line in asyncio.run(refused(tmp_path / "desk.db", [ask])):
        assert "\n" not in line and len(line) < 200
        assert any(word in line for word in ("cap", "nests deeper", "JSON"))


# -- a raw stdio client: what the SDK's client would never send ---------------


class RawClient:
    """``aah mcp serve`` on stdio, spoken to in JSON-RPC lines written by hand."""

    def __init__(self, db: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "aah", "mcp", "serve", "--db", str(db)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=SERVE_ENV,
            cwd=db.parent,
        )
        self.next_id = 0

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def reply(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            assert line, "the server closed its output"
            message: dict[str, Any] = json.loads(line)
            if "id" in message:  # not a notification
                return message

    def request(self, method: str, params: str) -> dict[str, Any]:
        """Send a request whose params are the JSON text ``params`` (NaN tokens allowed)."""
        self.next_id += 1
        head = f'{{"jsonrpc": "2.0", "id": {self.next_id}, "method": "{method}", "params": '
        self.send(head.encode() + params.encode() + b"}")
        found = self.reply()
        assert found["id"] == self.next_id
        return found

    def start(self) -> None:
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        }
        assert "result" in self.request("initialize", json.dumps(hello))
        self.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')

    def call(self, tool: str, arguments: str) -> dict[str, Any]:
        return self.request("tools/call", f'{{"name": "{tool}", "arguments": {arguments}}}')

    def close(self) -> str:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        finally:
            self.process.kill()
        assert self.process.stderr is not None
        return self.process.stderr.read().decode()


def tool_error(found: dict[str, Any]) -> str:
    """The one line a tool call was refused with (a tool error, or a JSON-RPC error)."""
    if "error" in found:
        return str(found["error"]["message"])
    result = found["result"]
    assert result["isError"], result
    return str(result["content"][0]["text"])


RAW_DEADLINES = ["1e18", "NaN", "Infinity", "-Infinity", "-1", "0", "1e999", '"soon"']


def test_a_raw_stdio_client_is_held_to_the_same_caps_and_bounds(tmp_path: Path) -> None:
    db = tmp_path / "desk.db"
    client = RawClient(db)
    try:
        client.start()
        for deadline in RAW_DEADLINES:
            for tool, rest in (("ask_human", '"question": "q"'), ("request_approval", '"tool": "t", "arguments": {}')):  # fmt: skip
                line = tool_error(client.call(tool, f'{{{rest}, "deadline": {deadline}}}'))
                assert "deadline" in line, (tool, deadline, line)
        # One message past the cap, as over HTTP: answered at once, and the server lives on.
        started = time.monotonic()
        huge = '{"question": "' + "x" * 10_000_000 + '"}'
        line = tool_error(client.call("ask_human", huge))
        assert f"cap of {MAX_MESSAGE_BYTES:,} bytes" in line
        keys = "{" + ", ".join(f'"k{i}": 0' for i in range(100_000)) + "}"
        line = tool_error(client.call("request_approval", f'{{"tool": "t", "arguments": {keys}}}'))
        assert "cap" in line
        assert time.monotonic() - started < 30
        deep = "[" * 1_000 + "]" * 1_000
        line = tool_error(client.call("request_approval", f'{{"tool": "t", "arguments": {{"a": {deep}}}}}'))  # fmt: skip
        assert "nests deeper" in line or "recursion" not in line.lower()
        # An id reused for another call over the wire, too.
        client.send(
            b'{"jsonrpc": "2.0", "id": 900, "method": "tools/call", "params": {"name": '
            b'"request_approval", "arguments": {"tool": "read_file", "arguments": '
            b'{"path": "notes.txt"}, "id": "same"}}}'
        )
        decide(db, asyncio.run(pending_approval(db, "read_file", 30)), "approve")
        assert client.reply()["result"]["structuredContent"]["run"] is True
        line = tool_error(
            client.call(
                "request_approval",
                '{"tool": "delete_everything", "arguments": {"path": "/"}, "id": "same"}',
            )
        )
        assert "already names another call" in line
    finally:
        stderr = client.close()
    assert "Traceback" not in stderr
    store = SessionStore(db)
    try:
        [session] = store.list_sessions()
        kinds = [e.kind for e in store.events(session.id)]
    finally:
        store.close()
    assert kinds == ["approval_requested", "approval_decided"]  # nothing else reached the log
    assert check_database(db).healthy


async def sdk_client_refusals(transport: Any) -> list[str]:
    async with Client(transport, client_info=Implementation(name="sdk", version="1")) as client:
        lines = []
        for arguments in (
            {"question": "q", "deadline": 1e18},
            {"question": "q" * (FIELD_CAPS["question"] + 1)},
        ):
            result = await client.call_tool("ask_human", arguments)
            assert result.is_error
            lines.append(result.content[0].text)  # type: ignore[union-attr]
        call = {"tool": "t", "arguments": {"a": nested(MAX_NESTING + 5)}}
        result = await client.call_tool("request_approval", call)
        assert result.is_error
        lines.append(result.content[0].text)  # type: ignore[union-attr]
    return lines


def test_the_sdk_client_gets_the_same_one_line_refusals_over_stdio_and_http(
    tmp_path: Path,
) -> None:
    db = tmp_path / "desk.db"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "aah", "mcp", "serve", "--db", str(db)],
        env=SERVE_ENV,
        cwd=str(tmp_path),
    )
    over_stdio = asyncio.run(sdk_client_refusals(stdio_client(params)))
    with http_server(db) as url:
        over_http = asyncio.run(sdk_client_refusals(http_transport(url)))
    assert over_stdio == over_http
    assert "deadline" in over_stdio[0] and "cap" in over_stdio[1]
    assert "nests deeper than 100 levels" in over_stdio[2]
    assert SessionStore(db).list_sessions() == []


# -- aah db check finds what the old failure left ------------------------------


def test_db_check_finds_a_question_without_its_request_and_a_session_waiting_on_nothing(
    store_location: Path,
) -> None:
    old = datetime.now(UTC) - timedelta(minutes=5)
    with SessionStore(store_location) as store:
        lost = store.open_session("lost", model="mcp:planner", session_id="mcp-lost")
        asked = HumanQuestionEvent(session_id=lost.id, request_id="r-lost", question="?", ts=old)
        store.set_status(lost.id, "waiting", [asked])
        idle = store.open_session("idle", session_id="idle", recipe={"human": {"kind": "queue"}})
        store.set_status(idle.id, "waiting")
        # Not problems: a console's question waits in its own process, and a fresh one
        # may be a moment from its request.
        console = store.open_session("console", recipe={"human": {"kind": "ConsoleHuman"}})
        store.set_status(console.id, "waiting")
        fresh = store.open_session("fresh", model="mcp:planner", session_id="mcp-fresh")
        asked = HumanQuestionEvent(session_id=fresh.id, request_id="r-fresh", question="?")
        store.set_status(fresh.id, "waiting", [asked])
        store.humans.create_human_request(fresh.id, "?", {}, request_id="r-fresh")
    found = check_database(store_location)
    assert not found.healthy
    assert found.problems == [
        "1 question(s) were logged but never reached the queue, so no person can answer them "
        "(session mcp-lost); end them with `aah sessions cancel ID`",
        "1 session(s) wait for a person with nothing in the queue to answer (session idle); "
        "`aah sessions resume ID` asks again, `aah sessions cancel ID` ends them",
    ]


# The depth of a raw line, found without parsing it: brackets in strings do not count.
DEPTH_CORPUS = [
    b"{}",
    b'{"a": "[[[[[[[[[[[[[[[[[[[[[[[["}',
    b'{"a": "\\"[[[[[[", "b": [[[]]]}',
    b'["\\\\", [[["]]]]"]]]]',
    b'{"k": ' + b"[" * 150 + b"]" * 150 + b"}",
    b'{"k": "' + b"{" * 300 + b'"}',
    b"[" * 101 + b"]" * 101,
    b"[" * 100 + b"]" * 100,
    b'{"a": [1, {"b": [2, {"c": "}}}}}"}]}]}',
    b"[" * 5000,  # never closed
]


@pytest.mark.parametrize("text", DEPTH_CORPUS, ids=range(len(DEPTH_CORPUS)))
def test_the_depth_of_a_raw_line_is_found_as_a_parser_would(text: bytes) -> None:
    try:
        expected = nesting(json.loads(text), limit=100) > 100
    except json.JSONDecodeError:
        expected = True  # only the unclosed line is no JSON here
    except RecursionError:
        expected = True
    assert text_nests_deeper(text, limit=100) == expected
