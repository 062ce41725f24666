"""``aah mcp serve`` as tasks: the SDK's own client, with the MCP Tasks extension, over both transports.

A client that declares ``io.modelcontextprotocol/tasks`` gets a task handle
for ``ask_human`` and ``request_approval`` at once, polls ``tasks/get`` until
a person answered (through the store, from this process, as the web page
does), and may cancel it; the task is the store's request, so it outlives
the server.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aah.events import ApprovalDecidedEvent, HumanAnswerEvent, HumanQuestionEvent
from aah.store import SessionStore

pytest.importorskip("mcp", reason="the MCP tests need the mcp extra: pip install 'aah[mcp]'")

from mcp import Client, Implementation, MCPError, StdioServerParameters  # noqa: E402
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp_types import (  # noqa: E402
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    CallToolResult,
    EmptyResult,
)
from test_mcp_serve import (  # noqa: E402
    SERVE_ENV,
    answer,
    decide,
    http_server,
    http_transport,
    pending_approval,
    pending_request,
    text_of,
)

from aah.mcp import (  # noqa: E402
    CANCELLED_ANSWER,
    CANCELLED_BY,
    TASKS_EXTENSION,
    CancelTaskRequest,
    CreateTaskResult,
    GetTaskRequest,
    GetTaskResult,
    TaskIdParams,
)

TERMINAL = ("completed", "failed", "cancelled")


async def get_task(session: Any, task_id: str) -> GetTaskResult:
    """``tasks/get`` through the SDK client's session."""
    request = GetTaskRequest(params=TaskIdParams(task_id=task_id))
    result: GetTaskResult = await session.send_request(request, GetTaskResult)
    return result


async def cancel_task(session: Any, task_id: str) -> None:
    """``tasks/cancel`` through the SDK client's session."""
    request = CancelTaskRequest(params=TaskIdParams(task_id=task_id))
    await session.send_request(request, EmptyResult)


async def until_done(session: Any, task_id: str, timeout: float = 60) -> GetTaskResult:
    """Poll ``task_id`` (at the interval the server asks for) until it ends."""
    deadline = time.monotonic() + timeout
    state = await get_task(session, task_id)
    while state.status not in TERMINAL:
        assert time.monotonic() < deadline, f"task {task_id} still {state.status}"
        await asyncio.sleep((state.poll_interval_ms or 500) / 1000)
        state = await get_task(session, task_id)
    return state


async def resolve_task(handle: CreateTaskResult, ctx: ClaimContext) -> CallToolResult:
    """Finish a task handle the way a requester does: poll it until it ends."""
    state = await until_done(ctx.session, handle.task_id)
    assert state.status == "completed", state
    return CallToolResult.model_validate(state.result)


class Tasks(ClientExtension):
    """The requester side of the tasks extension, on the SDK's client extension interface."""

    identifier = TASKS_EXTENSION

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=resolve_task)]


def task_client(transport: Any, name: str) -> Client:
    return Client(
        transport, client_info=Implementation(name=name, version="1"), extensions=[Tasks()]
    )


def plain_client(transport: Any, name: str) -> Client:
    return Client(transport, client_info=Implementation(name=name, version="1"))


def stdio(db: Path) -> Any:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "aah", "mcp", "serve", "--db", str(db)],
        env=SERVE_ENV,
        cwd=str(db.parent),
    )
    return stdio_client(params)


async def handle_of(client: Client, tool: str, arguments: dict[str, Any]) -> CreateTaskResult:
    """Call ``tool`` and keep the task handle it returns (no polling)."""
    result = await client.session.call_tool(tool, arguments, allow_claimed=True)
    assert isinstance(result, CreateTaskResult), result
    return result


def sent(result: Any) -> dict[str, Any]:
    """What a tool call's result says (content, structured content, error), without its envelope."""
    shown = CallToolResult.model_validate(result) if isinstance(result, dict) else result
    return shown.model_dump(include={"content", "structured_content", "is_error"})


def events_of(db: Path) -> list[Any]:
    store = SessionStore(db)
    try:
        [session] = store.list_sessions()
        return list(store.events(session.id))
    finally:
        store.close()


# -- a question as a task, over stdio ------------------------------------------


async def question_task(db: Path) -> dict[str, Any]:
    found: dict[str, Any] = {}
    async with task_client(stdio(db), "tasker") as client:
        capabilities = client.server_capabilities
        found["advertised"] = TASKS_EXTENSION in (capabilities.extensions or {})
        handle = await handle_of(client, "ask_human", {"question": "Which city?", "id": "q1"})
        found["handle"] = handle
        found["request_id"] = await pending_request(db, "Which city?")
        found["before"] = (await get_task(client.session, handle.task_id)).status
        answered_at = time.monotonic()
        await asyncio.to_thread(answer, db, found["request_id"], "Paris")
        done = await until_done(client.session, handle.task_id)
        found["latency"] = time.monotonic() - answered_at
        found["done"] = done
        found["again"] = await get_task(client.session, handle.task_id)  # still there, unchanged
        # The SDK's own call_tool finishes a task through the claim: the caller sees a result.
        late = await client.call_tool(
            "ask_human", {"question": "Budget?", "deadline": 1, "fallback": "use 100 EUR"}
        )
        found["fallback"] = text_of(late)
    async with plain_client(stdio(db), "tasker") as client:  # no tasks: today's call, same answer
        found["plain"] = await client.call_tool(
            "ask_human", {"question": "Which city?", "id": "q1"}
        )
    return found


def test_stdio_question_as_a_task_is_answered_and_polled(tmp_path: Path) -> None:
    db = tmp_path / "desk.db"
    found = asyncio.run(asyncio.wait_for(question_task(db), 180))
    handle, done = found["handle"], found["done"]
    assert found["advertised"]
    assert handle.task_id == found["request_id"]  # the task is the store's request
    assert (handle.status, handle.ttl_ms, found["before"]) == ("working", None, "working")
    assert done.status == "completed" and found["latency"] < 5
    assert sent(done.result) == sent(found["plain"])
    assert text_of(found["plain"]) == "Paris"
    assert found["again"].status == "completed" and found["again"].result == done.result
    assert found["fallback"] == "use 100 EUR"
    events = events_of(db)
    assert [e.question for e in events if isinstance(e, HumanQuestionEvent)] == [
        "Which city?",
        "Budget?",
    ]
    assert [(e.answer, e.answered_by) for e in events if isinstance(e, HumanAnswerEvent)] == [
        ("Paris", "alice"),
        ("use 100 EUR", "deadline-fallback"),
    ]


# -- a call to approve as a task, and cancels, over streamable HTTP -------------

CALL = {"tool": "deploy", "arguments": {"branch": "main"}, "id": "d1"}


async def approval_and_cancels(url: str, db: Path) -> dict[str, Any]:
    found: dict[str, Any] = {}
    async with task_client(http_transport(url), "deployer") as client:
        handle = await handle_of(client, "request_approval", CALL)
        request_id = await pending_approval(db, "deploy")
        found["same_id"] = handle.task_id == request_id
        await asyncio.to_thread(decide, db, request_id, "edit", arguments={"branch": "rc"})
        found["decided"] = await until_done(client.session, handle.task_id)
        # Cancelled while waiting: a question, and a call to approve.
        asked = await handle_of(client, "ask_human", {"question": "Which port?", "id": "p1"})
        call = {"tool": "drop_table", "arguments": {"name": "users"}}
        approving = await handle_of(client, "request_approval", call)
        for task_id in (asked.task_id, approving.task_id, asked.task_id):  # twice: logged once
            await cancel_task(client.session, task_id)
        found["cancelled"] = [
            (await get_task(client.session, t)).status for t in (asked.task_id, approving.task_id)
        ]
        found["cancelled_ids"] = (asked.task_id, approving.task_id)
    async with plain_client(http_transport(url), "deployer") as client:
        found["plain"] = await client.call_tool("request_approval", CALL)
        found["re_asked"] = await client.call_tool(
            "ask_human", {"question": "Which port?", "id": "p1"}
        )
    return found


def test_http_call_as_a_task_is_decided_and_tasks_cancel(tmp_path: Path) -> None:
    db = tmp_path / "desk.db"
    with http_server(db) as url:
        found = asyncio.run(asyncio.wait_for(approval_and_cancels(url, db), 180))
    decided = found["decided"]
    assert found["same_id"] and decided.status == "completed"
    assert sent(decided.result) == sent(found["plain"])
    structured = found["plain"].structured_content
    assert structured["outcome"] == "edited" and structured["arguments"] == {"branch": "rc"}
    assert found["cancelled"] == ["cancelled", "cancelled"]
    # Asked again without tasks, the cancelled question says so at once (no new request).
    assert text_of(found["re_asked"]) == CANCELLED_ANSWER
    question_id, call_id = found["cancelled_ids"]
    store = SessionStore(db)
    try:
        statuses = [store.humans.get_human_request(i).status for i in (question_id, call_id)]  # type: ignore[union-attr]
        pending = store.humans.pending_human_requests()
        # A person answering after the cancel settles nothing: the request left the queue.
        late = store.humans.answer_human_request(question_id, "bob", "8080")
    finally:
        store.close()
    assert statuses == ["expired", "expired"] and pending == [] and not late
    events = events_of(db)
    cancels = [
        (e.request_id, e.declined)
        for e in events
        if isinstance(e, HumanAnswerEvent) and e.answered_by == CANCELLED_BY
    ]
    terminated = [
        (e.request_id, e.outcome)
        for e in events
        if isinstance(e, ApprovalDecidedEvent) and e.decided_by == CANCELLED_BY
    ]
    assert cancels == [(question_id, True)]
    assert terminated == [(call_id, "terminated")]


# -- the server restarts between a task's creation and its result ---------------


async def create_tasks(db: Path) -> list[str]:
    async with task_client(stdio(db), "restarted") as client:
        asked = await handle_of(client, "ask_human", {"question": "Which branch?", "id": "b"})
        late = await handle_of(
            client, "ask_human", {"question": "Which tag?", "deadline": 1, "fallback": "latest"}
        )
        approving = await handle_of(client, "request_approval", CALL)
    return [asked.task_id, late.task_id, approving.task_id]


async def collect_tasks(db: Path, task_ids: list[str]) -> list[GetTaskResult]:
    async with task_client(stdio(db), "restarted") as client:
        return [await until_done(client.session, t) for t in task_ids]


def test_a_task_survives_a_server_restart(tmp_path: Path) -> None:
    db = tmp_path / "desk.db"
    task_ids = asyncio.run(asyncio.wait_for(create_tasks(db), 120))
    # No server runs now: a person answers and decides (the store), and a deadline passes.
    answer(db, task_ids[0], "release-2.1")
    decide(db, task_ids[2], "approve")
    time.sleep(1.2)
    states = asyncio.run(asyncio.wait_for(collect_tasks(db, task_ids), 120))
    assert [s.status for s in states] == ["completed"] * 3
    results = [CallToolResult.model_validate(s.result) for s in states]
    assert [text_of(r) for r in results[:2]] == ["release-2.1", "latest"]
    assert results[2].structured_content is not None
    assert results[2].structured_content["outcome"] == "approved"
    kinds = sorted(e.kind for e in events_of(db))
    assert kinds == sorted(
        ["human_question"] * 2 + ["human_answer"] * 2 + ["approval_requested", "approval_decided"]
    )


# -- what a task request may not reach ------------------------------------------


@pytest.fixture(scope="module")
def http_desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    db = tmp_path_factory.mktemp("tasks") / "desk.db"
    store = SessionStore(db)
    try:  # a question of one of aah's own runs: no MCP client's task
        store.open_session("an aah run", session_id="run-1")
        store.humans.create_human_request("run-1", "Internal?", request_id="run-1-q")
    finally:
        store.close()
    with http_server(db) as url:
        yield url, db


async def another_clients_task(url: str) -> str:
    async with task_client(http_transport(url), "someone-else") as client:
        return (await handle_of(client, "ask_human", {"question": "Theirs?"})).task_id


# Task ids that are no task of the asking client: each is refused as invalid params.
NO_TASK: list[str] = [
    "",
    "nope",
    "run-1-q",
    "x' OR '1'='1",
    "mcp-" + "0" * 16,
    "\u00e9\x00",
    "OTHER",
]


@pytest.mark.parametrize("method", ["get", "cancel"])
@pytest.mark.parametrize("task_id", NO_TASK)
def test_a_task_id_that_is_not_the_clients_is_refused(
    http_desk: tuple[str, Path], task_id: str, method: str
) -> None:
    url, db = http_desk

    async def ask() -> MCPError:
        wanted = await another_clients_task(url) if task_id == "OTHER" else task_id
        async with task_client(http_transport(url), "asker") as client:
            with pytest.raises(MCPError) as refused:
                if method == "get":
                    await get_task(client.session, wanted)
                else:
                    await cancel_task(client.session, wanted)
            return refused.value

    error = asyncio.run(asyncio.wait_for(ask(), 60))
    assert error.error.code == INVALID_PARAMS, error
    store = SessionStore(db)
    try:
        internal = store.humans.get_human_request("run-1-q")
    finally:
        store.close()
    assert internal is not None and internal.status == "pending"  # untouched


# Calls a task cannot start from: the tool's error comes back at once, nothing is queued.
BAD_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("request_approval", {"tool": "rm", "arguments": {}, "fallback": "maybe"}),
    ("request_approval", {"tool": "rm"}),
    ("request_approval", {"tool": "rm", "arguments": "all"}),
    ("ask_human", {}),
    ("ask_human", {"question": "Q?", "deadline": "soon"}),
]


@pytest.mark.parametrize(("tool", "arguments"), BAD_CALLS)
def test_a_bad_call_is_no_task(
    http_desk: tuple[str, Path], tool: str, arguments: dict[str, Any]
) -> None:
    url, db = http_desk

    async def call() -> Any:
        async with task_client(http_transport(url), "careless") as client:
            return await client.session.call_tool(tool, arguments, allow_claimed=True)

    result = asyncio.run(asyncio.wait_for(call(), 60))
    assert isinstance(result, CallToolResult) and result.is_error


def test_a_client_without_the_extension_gets_no_task(http_desk: tuple[str, Path]) -> None:
    url, _ = http_desk

    async def call() -> tuple[Any, MCPError]:
        async with plain_client(http_transport(url), "plain") as client:
            result = await client.call_tool(
                "ask_human", {"question": "Quick?", "deadline": 0.5, "fallback": "no"}
            )
            with pytest.raises(MCPError) as refused:
                await get_task(client.session, "anything")
            return result, refused.value

    result, error = asyncio.run(asyncio.wait_for(call(), 60))
    assert text_of(result) == "no"  # waited for the answer, as before tasks
    assert error.error.code == MISSING_REQUIRED_CLIENT_CAPABILITY


def test_a_client_on_an_older_protocol_gets_no_task(http_desk: tuple[str, Path]) -> None:
    url, _ = http_desk

    async def call() -> tuple[str, Any]:
        client = Client(
            http_transport(url),
            client_info=Implementation(name="legacy", version="1"),
            extensions=[Tasks()],
            mode="legacy",  # the initialize handshake: 2025-11-25 at the latest, no tasks
        )
        async with client:
            result = await client.session.call_tool(
                "ask_human",
                {"question": "Old?", "deadline": 0.5, "fallback": "yes"},
                allow_claimed=True,
            )
            return client.protocol_version, result

    version, result = asyncio.run(asyncio.wait_for(call(), 60))
    assert version < "2026"
    assert isinstance(result, CallToolResult) and text_of(result) == "yes"
