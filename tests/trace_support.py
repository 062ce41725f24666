"""A session for the trace tests: a question that parks, a failing tool, an approval that times out.

Real model client against the fake server, real HTTP against the loopback
tool server, the real store; the session is resumed by a second runtime, as
another process would resume it days later.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from http_server import LocalServer, make_spec
from runtime_support import awareness_rule, call, runtime_on

from aah.clock import FakeClock
from aah.events import Event
from aah.runtime import (
    ApprovalPolicy,
    ApprovalRule,
    QueueHuman,
    ScriptedApprover,
    SessionOutcome,
    SessionRequest,
    run_session,
)
from aah.testing.fake_llm import FakeLLMServer
from aah.tools import ParameterSpec

POLICY = ApprovalPolicy(rules=(ApprovalRule(methods=("POST",)),), on_timeout=("reject",))
QUERY = "Book two rooms in my city."


def agent_script(query_extra: str = "") -> dict[str, Any]:
    """Awareness yes; ask which city; call a broken tool; book (needs approval); answer."""
    return {
        "rules": [
            awareness_rule("Yes, all there."),
            {"when": {"last_tool_name": "ask_human"}, "reply": call("local__broken")},
            {"when": {"last_tool_name": "local__broken"}, "reply": call("local__book", rooms=2)},
            {"when": {"last_tool_name": "local__book"}, "reply": f"Done.{query_extra}"},
            {"when": {"has_tools": True}, "reply": call("ask_human", question="Which city?")},
        ]
    }


def specs(server: LocalServer) -> list[Any]:
    rooms = ParameterSpec(name="rooms", type="integer", required=True, location="body")
    book = make_spec(server.url("/echo/book"), method="POST", name="book", params=[rooms])
    broken = make_spec(server.url("/broken"), name="broken")
    return [book, broken]


@dataclass
class Traced:
    """What the scenario left: the session's outcome and its stored events."""

    outcome: SessionOutcome
    events: list[Event]
    db: Path


async def parked_then_resumed(
    tmp_path: Path, *, answer: str = "Oslo", query: str = QUERY, run: str | None = None
) -> Traced:
    """The session parks at its question; a person answers; a new runtime runs it to its end."""
    db = tmp_path / "s.db"
    clock = FakeClock()
    with LocalServer() as server, FakeLLMServer(agent_script()) as llm:
        async with runtime_on(llm, db, http_mode="live") as first:
            queue = QueueHuman(first.store, park=True, clock=clock, deadline_seconds=3600)
            request = SessionRequest(
                query, specs(server), approvals=POLICY, approver=ScriptedApprover([None]),
                human=queue, run=run, task_id="t1",
            )  # fmt: skip
            if run is not None:
                first.store.create_run(run, {})
            parked = await run_session(request, first)
            assert parked.status == "waiting", parked
            assert first.store.humans.answer_human_request(parked.waiting_on or "", "ann", answer)
        async with runtime_on(llm, db, http_mode="live") as second:
            request.human = QueueHuman(second.store, park=True, clock=clock)
            request.session_id = parked.session_id
            done = await run_session(request, second)
            events = second.store.events(done.session_id)
    return Traced(done, events, db)
