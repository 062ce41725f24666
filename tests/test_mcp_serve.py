"""``aah mcp serve``: the SDK's own client asks aah's people, over stdio and streamable HTTP.

The server runs as ``aah mcp serve`` in its own process; the test answers
through the store's API from this one, as the web page does.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from aah.events import (
    ApprovalDecidedEvent,
    ApprovalRequestedEvent,
    HumanAnswerEvent,
    HumanQuestionEvent,
)
from aah.store import SessionStore

pytest.importorskip("mcp", reason="the MCP tests need the mcp extra: pip install 'aah[mcp]'")

from mcp import Client, Implementation, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SERVE_ENV = {"PYTHONPATH": str(ROOT), "AAH_MCP_START_TIMEOUT": "60"}
TOKEN = "desk-token-0123456789"


async def pending_request(db: Path, question: str, timeout: float = 60) -> str:
    """The id of the pending request asking ``question``, once the server wrote it."""
    store = SessionStore(db)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if db.exists():
                for request in store.humans.pending_human_requests():
                    if request.question == question:
                        return request.id
            await asyncio.sleep(0.1)
    finally:
        store.close()
    raise AssertionError(f"{question!r} never reached the queue")


def answer(db: Path, request_id: str, text: str) -> None:
    store = SessionStore(db)
    try:
        assert store.humans.claim_request(request_id, "alice") is not None
        assert store.humans.answer_human_request(request_id, "alice", text)
    finally:
        store.close()


def text_of(result: Any) -> str:
    assert not result.is_error, result
    return str(result.content[0].text)


async def ask_and_answer(server: Any, db: Path) -> dict[str, Any]:
    """List the tools, ask, answer through the store, re-ask, let a deadline pass."""
    found: dict[str, Any] = {}
    async with Client(server, client_info=Implementation(name="planner", version="1")) as client:
        tools = await client.list_tools()
        found["tools"] = [tool.name for tool in tools.tools]
        asking = asyncio.ensure_future(
            client.call_tool("ask_human", {"question": "Which city?", "id": "q1"})
        )
        request_id = await pending_request(db, "Which city?")
        answered_at = time.monotonic()
        await asyncio.to_thread(answer, db, request_id, "Paris")
        found["answer"] = text_of(await asking)
        found["latency"] = time.monotonic() - answered_at
        # The client asks again (say, after its own timeout): the same answer, not a new question.
        again = await client.call_tool("ask_human", {"question": "Which city?", "id": "q1"})
        found["again"] = text_of(again)
        late = await client.call_tool(
            "ask_human", {"question": "Budget?", "deadline": 1, "fallback": "use 100 EUR"}
        )
        found["fallback"] = text_of(late)
    return found


def check(found: dict[str, Any], db: Path) -> None:
    assert found["tools"] == ["ask_human", "request_approval"]
    assert found["answer"] == found["again"] == "Paris"
    assert found["fallback"] == "use 100 EUR"
    assert found["latency"] < 5  # polls every 0.5 s; quoted in the closing note
    store = SessionStore(db)
    try:
        [session] = store.list_sessions()
        events = store.events(session.id)
    finally:
        store.close()
    assert session.model == "mcp:planner"
    questions = [e.question for e in events if isinstance(e, HumanQuestionEvent)]
    answers = [(e.answer, e.answered_by) for e in events if isinstance(e, HumanAnswerEvent)]
    assert questions == ["Which city?", "Budget?"]
    assert answers == [("Paris", "alice"), ("use 100 EUR", "deadline-fallback")]


def report(db: Path, format: str = "json", *more: str) -> str:
    """``aah report`` over ``db``, run as a user runs it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AAH_")} | SERVE_ENV
    result = subprocess.run(
        [sys.executable, "-m", "aah", "report", "--db", str(db), "--format", format, *more],
        env=env, capture_output=True, text=True, timeout=120, cwd=db.parent,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_stdio_client_asks_and_gets_the_answer(tmp_path: Path) -> None:
    db = tmp_path / "desk.db"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "aah", "mcp", "serve", "--db", str(db)],
        env=SERVE_ENV,
        cwd=str(tmp_path),
    )
    found = asyncio.run(ask_and_answer(stdio_client(params), db))
    check(found, db)
    # aah report shows the external agent's asking: a store with no runs is no error.
    [agent] = json.loads(report(db))["external_agents"]
    assert {k: agent[k] for k in ("agent", "sessions", "questions", "answered")} == {
        "agent": "planner", "sessions": 1, "questions": 2, "answered": 1,
    }  # fmt: skip
    assert (agent["fallbacks"], agent["waiting"], agent["declined"]) == (1, 0, 0)
    assert agent["questions_per_session"] == 2.0
    assert agent["answered_by"] == {"alice": 1}
    assert 0 <= agent["answer_seconds_median"] == agent["answer_seconds_p90"] < 60
    assert agent["approval_calls"] == 0
    table = report(db, "table", "--wide")
    assert "External agents" in table and "planner" in table and "alice 1" in table
    assert "planner" in report(db, "md") and "external_agents" in report(db, "csv")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def http_server(db: Path, port: int | None = None) -> Iterator[str]:
    """``aah mcp serve --port`` on ``db`` in its own process, until left; yields its URL."""
    with http_process(db, port) as (url, _):
        yield url


@contextmanager
def http_process(
    db: Path, port: int | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``aah mcp serve --port`` on ``db``, killed when left; yields its URL and process."""
    port = port or free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AAH_")} | SERVE_ENV
    env["AAH_MCP_TOKEN"] = TOKEN
    process = subprocess.Popen(
        [sys.executable, "-m", "aah", "mcp", "serve", "--port", str(port), "--db", str(db)],
        env=env,
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
        yield f"http://127.0.0.1:{port}/mcp", process
    finally:
        process.kill()  # as a crash would: nothing may depend on a clean stop
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def http_desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    db = tmp_path_factory.mktemp("desk") / "desk.db"
    with http_server(db) as url:
        yield url, db


def test_http_client_asks_and_gets_the_answer(http_desk: tuple[str, Path]) -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    url, db = http_desk
    bearer = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {TOKEN}"}, timeout=httpx2.Timeout(30, read=300)
    )
    found = asyncio.run(ask_and_answer(streamable_http_client(url, http_client=bearer), db))
    check(found, db)


REFUSED = [
    {},
    {"Authorization": "Bearer wrong-token-0000"},
    {"Authorization": TOKEN},
    {"Authorization": f"bearer {TOKEN}x"},
]


@pytest.mark.parametrize("headers", REFUSED)
def test_http_requests_without_the_token_are_refused(
    http_desk: tuple[str, Path], headers: dict[str, str]
) -> None:
    import requests

    url, _ = http_desk
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    response = requests.post(url, json=body, headers=headers, timeout=10)
    assert response.status_code == 401 and "AAH_MCP_TOKEN" in response.text


def test_serving_beyond_loopback_without_a_token_is_refused(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AAH_")} | SERVE_ENV
    result = subprocess.run(
        [sys.executable, "-m", "aah", "mcp", "serve", "--port", "1", "--host", "0.0.0.0"],
        env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2 and result.stderr.startswith("error: serving MCP on 0.0.0.0")


async def give_up_then_ask_again(db: Path, tmp_path: Path) -> tuple[str, str]:
    """A client times out on a question; the server restarts; asking again gets the answer."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "aah", "mcp", "serve", "--db", str(db)],
        env=SERVE_ENV,
        cwd=str(tmp_path),
    )
    question = {"question": "Which account?", "id": "acct"}
    async with Client(
        stdio_client(params), client_info=Implementation(name="impatient", version="1")
    ) as first:
        try:
            gave_up = await first.call_tool("ask_human", question, read_timeout_seconds=2)
            why = "answered before anyone did" if not gave_up.is_error else "error result"
        except Exception as exc:  # the client's own timeout
            why = type(exc).__name__
    # The first server is gone; a person answers meanwhile, through the store.
    request_id = await pending_request(db, "Which account?")
    await asyncio.to_thread(answer, db, request_id, "the savings one")
    async with Client(
        stdio_client(params), client_info=Implementation(name="impatient", version="1")
    ) as again:
        result = await again.call_tool("ask_human", question)
    return why, text_of(result)


def test_a_client_that_gave_up_gets_the_answer_by_asking_again(tmp_path: Path) -> None:
    db = tmp_path / "desk.db"
    why, text = asyncio.run(give_up_then_ask_again(db, tmp_path))
    assert why != "answered before anyone did"
    assert text == "the savings one"
    store = SessionStore(db)
    try:
        [session] = store.list_sessions()
        answers = [e.answer for e in store.events(session.id) if isinstance(e, HumanAnswerEvent)]
    finally:
        store.close()
    assert answers == ["the savings one"]  # logged once, though asked twice


# -- request_approval ----------------------------------------------------------


async def pending_approval(db: Path, tool: str, timeout: float = 60) -> str:
    """The id of the pending approval request for a call of ``tool``, once the server wrote it."""
    store = SessionStore(db)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if db.exists():
                for request in store.humans.pending_human_requests():
                    if request.kind == "approval" and request.context["call"]["tool"] == tool:
                        return request.id
            await asyncio.sleep(0.1)
    finally:
        store.close()
    raise AssertionError(f"no call of {tool!r} reached the queue")


def shown_parameters(db: Path, request_id: str) -> list[tuple[str, str, bool]]:
    """The parameters a face checks an edit of the call against: name, type, required."""
    store = SessionStore(db)
    try:
        record = store.humans.get_human_request(request_id)
    finally:
        store.close()
    assert record is not None
    shown = record.context["call"]["parameters"]
    return [(p["name"], p["type"], p["required"]) for p in shown]


def decide(db: Path, request_id: str, decision: str, **how: Any) -> None:
    """Decide as the web page and terminal app do: claim, then decide, through the store."""
    store = SessionStore(db)
    try:
        assert store.humans.claim_request(request_id, "alice") is not None
        assert store.humans.decide_approval(request_id, "alice", decision, **how)
    finally:
        store.close()


# Each call the client asks approval for, how a person decides it (None: nobody
# does before its deadline), and what the client must read back.
DECISIONS: list[tuple[dict[str, Any], tuple[str, dict[str, Any]] | None, dict[str, Any]]] = [
    (
        {"tool": "send_email", "arguments": {"to": "bob"}, "id": "c1"},
        ("edit", {"arguments": {"to": "carol"}}),
        {"outcome": "edited", "run": True, "arguments": {"to": "carol"}, "decided_by": "alice"},
    ),
    (
        {
            "tool": "delete_file",
            "arguments": {"path": "/etc"},
            "context": "cleanup",
            "input_schema": {
                "properties": {"path": {"type": "string"}, "force": {"type": "boolean"}},
                "required": ["path"],
            },
        },
        ("reject", {"reason": "not that folder"}),
        {"outcome": "rejected", "run": False, "arguments": None, "reason": "not that folder"},
    ),
    (
        {"tool": "book_room", "arguments": {"room": 2}},
        ("approve", {}),
        {"outcome": "approved", "run": True, "arguments": {"room": 2}, "decided_by": "alice"},
    ),
    (
        {"tool": "wire_money", "arguments": {"amount": 10_000}},
        ("terminate", {"reason": "stop this task"}),
        {"outcome": "terminated", "run": False, "reason": "stop this task"},
    ),
    (
        {"tool": "edit_nothing", "arguments": {"a": 1}},
        ("edit", {"arguments": {"a": 1}}),  # an edit that changed nothing is an approval
        {"outcome": "approved", "run": True, "arguments": {"a": 1}},
    ),
    (
        {"tool": "page_oncall", "arguments": {}, "deadline": 1, "fallback": "approve"},
        None,
        {
            "outcome": "timed_out",
            "run": True,
            "fallback": "approve",
            "decided_by": "deadline-fallback",
        },
    ),
    (
        {"tool": "drop_table", "arguments": {"t": "users"}, "deadline": 1},
        None,
        {"outcome": "timed_out", "run": False, "fallback": "reject", "arguments": None},
    ),
]


async def approvals_decided(server: Any, db: Path) -> dict[str, Any]:
    """Ask approval for each call of DECISIONS, decide it through the store, read the result."""
    found: dict[str, Any] = {"results": []}
    async with Client(server, client_info=Implementation(name="deployer", version="1")) as client:
        for call, decision, _ in DECISIONS:
            asking = asyncio.ensure_future(client.call_tool("request_approval", call))
            if decision is not None:
                request_id = await pending_approval(db, call["tool"])
                found.setdefault("parameters", {})[call["tool"]] = await asyncio.to_thread(
                    shown_parameters, db, request_id
                )
                decided_at = time.monotonic()
                await asyncio.to_thread(decide, db, request_id, decision[0], **decision[1])
            result = await asking
            if decision is not None:
                found.setdefault("latency", []).append(time.monotonic() - decided_at)
            assert not result.is_error, result
            found["results"].append(result.structured_content)
        # Asked again with the same id (the client gave up meanwhile): the same decision.
        again = await client.call_tool("request_approval", DECISIONS[0][0])
        found["again"] = again.structured_content
        bad = await client.call_tool(
            "request_approval", {"tool": "x", "arguments": {}, "fallback": "maybe"}
        )
        found["bad"] = (bad.is_error, getattr(bad.content[0], "text", ""))
    return found


def check_approvals(found: dict[str, Any], db: Path) -> None:
    for (call, _, expected), got in zip(DECISIONS, found["results"], strict=True):
        assert {k: got[k] for k in expected} == expected, (call, got)
    assert found["again"] == found["results"][0]
    # The client's schema, where it gave one; else the types of the proposed arguments.
    assert found["parameters"]["delete_file"] == [
        ("path", "string", True),
        ("force", "boolean", False),
    ]
    assert found["parameters"]["send_email"] == [("to", "string", False)]
    assert found["bad"][0] and "use 'reject' (the default) or 'approve'" in found["bad"][1]
    assert max(found["latency"]) < 5  # polls every 0.5 s
    store = SessionStore(db)
    try:
        [session] = store.list_sessions()
        events = store.events(session.id)
        requests = [
            store.humans.get_human_request(e.request_id)
            for e in events
            if isinstance(e, ApprovalRequestedEvent)
        ]
    finally:
        store.close()
    assert session.model == "mcp:deployer"
    asked = [e.tool for e in events if isinstance(e, ApprovalRequestedEvent)]
    decided = [e.outcome for e in events if isinstance(e, ApprovalDecidedEvent)]
    assert asked == [call["tool"] for call, _, _ in DECISIONS]  # once each, though c1 asked twice
    assert decided == [expected["outcome"] for _, _, expected in DECISIONS]
    assert [r.kind for r in requests if r is not None] == ["approval"] * len(DECISIONS)


def test_stdio_client_gets_each_kind_of_decision(tmp_path: Path) -> None:
    db = tmp_path / "desk.db"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "aah", "mcp", "serve", "--db", str(db)],
        env=SERVE_ENV,
        cwd=str(tmp_path),
    )
    check_approvals(asyncio.run(approvals_decided(stdio_client(params), db)), db)
    [agent] = json.loads(report(db))["external_agents"]
    assert (agent["agent"], agent["questions"], agent["approval_calls"]) == ("deployer", 0, 7)
    assert agent["approvals"] == {
        "approved": 2, "edited": 1, "rejected": 1, "responded": 0, "timed_out": 2,
        "terminated": 1, "undecided": 0,
    }  # fmt: skip
    assert agent["decide_seconds_median"] is not None


def http_transport(url: str) -> Any:
    """The SDK's streamable HTTP transport to ``url``, sending the desk's token."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    bearer = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {TOKEN}"}, timeout=httpx2.Timeout(30, read=300)
    )
    return streamable_http_client(url, http_client=bearer)


def test_http_client_gets_each_kind_of_decision(tmp_path: Path) -> None:
    with http_server(tmp_path / "desk.db") as url:
        found = asyncio.run(approvals_decided(http_transport(url), tmp_path / "desk.db"))
    check_approvals(found, tmp_path / "desk.db")


# -- the server restarted while a question and a call wait ---------------------

QUESTION = {"question": "Which branch?", "id": "br"}
CALL = {"tool": "deploy", "arguments": {"branch": "main"}, "id": "d1"}


async def ask_until_killed(url: str, process: subprocess.Popen[bytes], db: Path) -> int:
    """Ask a question and for an approval; kill the server while both wait.

    Returns:
        How many of the two calls returned a result (none should: nobody answered).
    """
    client_info = Implementation(name="restarted", version="1")
    async with Client(http_transport(url), client_info=client_info) as client:
        asking = asyncio.ensure_future(client.call_tool("ask_human", QUESTION))
        approving = asyncio.ensure_future(client.call_tool("request_approval", CALL))
        await pending_request(db, "Which branch?")
        await pending_approval(db, "deploy")
        process.kill()  # as a crash would
        await asyncio.to_thread(process.wait, 10)
        both = asyncio.gather(asking, approving, return_exceptions=True)
        results = await asyncio.wait_for(both, 15)
        return sum(not isinstance(r, BaseException) and not r.is_error for r in results)


async def ask_again(url: str) -> tuple[str, dict[str, Any] | None]:
    client_info = Implementation(name="restarted", version="1")
    async with Client(http_transport(url), client_info=client_info) as client:
        answer_text = text_of(await client.call_tool("ask_human", QUESTION))
        decision = (await client.call_tool("request_approval", CALL)).structured_content
    return answer_text, decision


def test_a_question_and_a_call_survive_a_server_restart(tmp_path: Path) -> None:
    db, port = tmp_path / "desk.db", free_port()
    with http_process(db, port) as (url, process):
        try:
            returned = asyncio.run(asyncio.wait_for(ask_until_killed(url, process, db), 60))
        except (TimeoutError, OSError, ExceptionGroup):
            returned = 0  # the client noticed the dead server its own way
    assert returned == 0
    # While no server runs, people answer and decide in the web page (here, the store).
    question_id = asyncio.run(pending_request(db, "Which branch?", timeout=5))
    call_id = asyncio.run(pending_approval(db, "deploy", timeout=5))
    answer(db, question_id, "release-2.1")
    decide(db, call_id, "edit", arguments={"branch": "release-2.1"})
    with http_server(db, port) as url:
        text, decision = asyncio.run(ask_again(url))
    assert text == "release-2.1"
    assert decision is not None and decision["outcome"] == "edited"
    assert decision["arguments"] == {"branch": "release-2.1"}
    store = SessionStore(db)
    try:
        [session] = store.list_sessions()
        kinds = [e.kind for e in store.events(session.id)]
        records = [
            store.humans.get_human_request(question_id),
            store.humans.get_human_request(call_id),
        ]
        pending = store.humans.pending_human_requests()
    finally:
        store.close()
    # Nothing lost, nothing twice: one of each step, both requests settled once.
    assert sorted(kinds) == sorted(
        ["human_question", "approval_requested", "human_answer", "approval_decided"]
    )
    assert [r.status for r in records if r is not None] == ["answered", "answered"]
    assert pending == []


# -- the same id asked twice at once: one request, one log ---------------------

TWINS = 6


async def ask_twice_at_once(db: Path) -> tuple[list[str], list[dict[str, Any]]]:
    from aah.mcp import ApprovalAsk, HumanTools, Question

    store = SessionStore(db)
    desk = HumanTools(store, poll_seconds=0.05)
    try:
        question = Question("Which region?", ask_id="r1")
        call = ApprovalAsk("scale_up", {"nodes": 3}, ask_id="s1")
        asks = [asyncio.ensure_future(desk.ask(question, "twin")) for _ in range(TWINS)]
        approvals = [asyncio.ensure_future(desk.approve(call, "twin")) for _ in range(TWINS)]
        await asyncio.to_thread(answer, db, await pending_request(db, "Which region?"), "eu")
        call_id = await pending_approval(db, "scale_up")
        shown = store.humans.get_human_request(call_id)
        # No schema given: a person's edit is checked against the proposed arguments' types.
        assert shown is not None
        assert [(p["name"], p["type"]) for p in shown.context["call"]["parameters"]] == [
            ("nodes", "integer")
        ]
        await asyncio.to_thread(decide, db, call_id, "approve")
        return list(await asyncio.gather(*asks)), list(await asyncio.gather(*approvals))
    finally:
        store.close()


def test_the_same_id_asked_twice_at_once_is_one_request_logged_once(tmp_path: Path) -> None:
    db = tmp_path / "desk.db"
    answers, decisions = asyncio.run(ask_twice_at_once(db))
    assert answers == ["eu"] * TWINS
    assert [d["outcome"] for d in decisions] == ["approved"] * TWINS
    store = SessionStore(db)
    try:
        [session] = store.list_sessions()
        kinds = sorted(e.kind for e in store.events(session.id))
    finally:
        store.close()
    assert kinds == ["approval_decided", "approval_requested", "human_answer", "human_question"]
