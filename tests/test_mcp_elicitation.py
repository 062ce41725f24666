"""An MCP server's questions for the user reach aah's desk and their answers reach the server.

The servers (tests/mcp_elicit_server.py) are written with the SDK as their
authors would, in each protocol's style: one asks mid-call with
``ctx.elicit`` (2025-11-25), the other answers ``input_required`` and reads
the answer when called again (2026-07-28); each asks in form and URL mode.
The agent is the fake model server driven over HTTP; the answer comes from
a scripted channel, the console, the oracle, the simulated user, or a
person through the store's queue. Each face is driven by a server of each
style (the queue's, by the terminal app and the web page, in
test_mcp_elicitation_faces.py).
"""

from __future__ import annotations

import asyncio
import json
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from runtime_support import awareness_rule, call, runtime_on

from aah.desk import ElicitationRequest, ElicitationResult, stored_answer
from aah.event_text import describe_event
from aah.events import ElicitationAnsweredEvent, ElicitationAskedEvent, ToolCallEvent
from aah.runtime.humans import HumanChannel, QueueHuman, ScriptedHuman
from aah.runtime.session import SessionRequest, run_session
from aah.store import SessionStore
from aah.testing.fake_llm import FakeLLMServer

pytest.importorskip("mcp", reason="the MCP tests need the mcp extra: pip install 'aah[mcp]'")

from aah.mcp import open_mcp_tools, parse_server  # noqa: E402 - after the skip

SERVER = Path(__file__).resolve().parent / "mcp_elicit_server.py"
GUEST = {"name": "Ada", "nights": 3, "breakfast": True, "room": "double"}
STYLES = ["2025", "2026"]


def target(style: str) -> str:
    """The hotel server asking in ``style``'s way, started over stdio."""
    return f"hotel={shlex.quote(sys.executable)} {shlex.quote(str(SERVER))} {style}"


@pytest.fixture(params=STYLES)
def style(request: pytest.FixtureRequest) -> str:
    """Each protocol's way of asking: mid-call (2025), or by input_required (2026)."""
    return str(request.param)


def _one_call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "rules": [
            awareness_rule("YES: I can do it."),
            {"when": {"last_tool_name": tool}, "reply": "Done, see above."},
            {"when": {"has_tools": True}, "reply": call(tool, **arguments)},
        ]
    }


async def _run(
    tmp_path: Path,
    tool: str,
    arguments: dict[str, Any],
    human: HumanChannel,
    answer_from_queue: Callable[[SessionStore], None] | None = None,
    style: str = "2025",
) -> tuple[ToolCallEvent, list[Any]]:
    """Run one session whose agent calls ``tool`` of the ``style`` server; its events."""
    with (
        open_mcp_tools([parse_server(target(style))], http_mode="live") as tools,
        FakeLLMServer(_one_call(f"hotel__{tool}", arguments)) as llm,
    ):
        async with runtime_on(
            llm, tmp_path / "s.db", human=human, http_mode="live", executor=tools.executor
        ) as rt:
            session = asyncio.ensure_future(
                run_session(SessionRequest("Do it.", tools.specs, aah=False), rt)
            )
            if answer_from_queue is not None:
                await asyncio.to_thread(answer_from_queue, rt.store)
            outcome = await asyncio.wait_for(session, 60)
            events = rt.store.events(outcome.session_id)
    [tool_event] = [e for e in events if isinstance(e, ToolCallEvent)]
    return tool_event, events


def _scripted(result: ElicitationResult) -> ScriptedHuman:
    return ScriptedHuman([], elicitations=lambda request: result)


async def test_a_form_accepted_by_a_script_reaches_the_server_with_its_content(
    tmp_path: Path, style: str
) -> None:
    seen: list[ElicitationRequest] = []

    def fill(request: ElicitationRequest) -> ElicitationResult:
        seen.append(request)
        return ElicitationResult(action="accept", content=GUEST)

    tool, events = await _run(
        tmp_path, "book", {"city": "Lyon"}, ScriptedHuman([], elicitations=fill), style=style
    )
    assert tool.ok and tool.result == f"accept {json.dumps(GUEST, sort_keys=True)}"
    [request] = seen
    assert request.asker == "hotel" and request.mode == "form"
    assert [f.name for f in request.fields] == ["name", "nights", "breakfast", "room"]
    room = request.fields[3]
    assert room.kind == "enum" and room.option_title("double") == "Double room"
    asked = next(e for e in events if isinstance(e, ElicitationAskedEvent))
    answered = next(e for e in events if isinstance(e, ElicitationAnsweredEvent))
    assert asked.server == "hotel" and asked.fields == ["name", "nights", "breakfast", "room"]
    assert answered.action == "accept" and answered.answered_by == "scripted"
    asked_line, answered_line = describe_event(asked), describe_event(answered)
    assert asked_line is not None and "MCP server hotel asks" in asked_line.label
    assert answered_line is not None and "scripted accepted hotel's question" in answered_line.label


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_decline_and_cancel_reach_the_server(tmp_path: Path, action: str) -> None:
    result = ElicitationResult(action=action)  # type: ignore[arg-type]
    tool, events = await _run(tmp_path, "book", {"city": "Lyon"}, _scripted(result))
    assert tool.ok and tool.result == action
    answered = next(e for e in events if isinstance(e, ElicitationAnsweredEvent))
    assert answered.action == action


async def test_a_link_is_shown_not_opened_and_done_is_an_accept(tmp_path: Path, style: str) -> None:
    seen: list[ElicitationRequest] = []

    def done(request: ElicitationRequest) -> ElicitationResult:
        seen.append(request)
        return ElicitationResult(action="accept")

    human = ScriptedHuman([], elicitations=done)
    tool, _ = await _run(tmp_path, "sign_in", {"service": "mail"}, human, style=style)
    assert tool.ok and tool.result == "accept"
    [request] = seen
    assert request.mode == "url" and request.url == "https://auth.example.org/sign-in?state=abc123"
    # 2025-11-25 carries the elicitation id; 2026-07-28 drops it from the wire.
    assert request.fields == []
    assert request.elicitation_id == ("sign-in-1" if style == "2025" else None)


async def test_a_schema_that_is_not_primitives_only_is_declined_in_one_line(
    tmp_path: Path,
) -> None:
    asked: list[ElicitationRequest] = []
    human = ScriptedHuman(
        [], elicitations=lambda r: asked.append(r) or ElicitationResult(action="accept")
    )
    tool, events = await _run(tmp_path, "nested", {}, human)
    assert tool.ok and tool.result == "decline" and asked == []
    refused = next(e for e in events if isinstance(e, ElicitationAskedEvent))
    assert "address" in refused.refused and "\n" not in refused.refused


async def test_a_channel_without_a_script_declines(tmp_path: Path) -> None:
    tool, _ = await _run(tmp_path, "book", {"city": "Lyon"}, ScriptedHuman([]))
    assert tool.result == "decline"


# --- the queue: a person answers through the store -----------------------------------


def _answer_pending(answer: Callable[[SessionStore, str], None]) -> Callable[[SessionStore], None]:
    """Wait (bounded) for the pending elicitation, then answer it as a person would."""

    def run(store: SessionStore) -> None:
        for _ in range(600):
            pending = [r for r in store.humans.pending_human_requests() if r.kind == "elicitation"]
            if pending:
                [record] = pending
                request = ElicitationRequest.model_validate(record.context)
                assert request.asker == "hotel"
                # The tools the agent was offered go with the form (issue 46), not only those used.
                assert "hotel__book" in request.tools and "hotel__sign_in" in request.tools
                answer(store, record.id)
                return
            time.sleep(0.05)
        raise AssertionError("no elicitation reached the queue within 30 s")

    return run


@pytest.mark.parametrize(
    ("given", "expected", "style"),
    [
        (
            ElicitationResult(action="accept", content=GUEST),
            f"accept {json.dumps(GUEST, sort_keys=True)}",
            "2025",
        ),
        (ElicitationResult(action="cancel"), "cancel", "2025"),
    ],
)
async def test_a_person_answers_a_form_through_the_queue(
    tmp_path: Path, given: ElicitationResult, expected: str, style: str
) -> None:
    queue = QueueHuman(SessionStore(tmp_path / "s.db"), poll_seconds=0.05)
    answer = _answer_pending(
        lambda store, rid: store.humans.answer_human_request(rid, "alice", stored_answer(given))
    )
    tool, events = await _run(tmp_path, "book", {"city": "Lyon"}, queue, answer, style=style)
    assert tool.ok and tool.result == expected
    answered = next(e for e in events if isinstance(e, ElicitationAnsweredEvent))
    assert answered.answered_by == "alice" and answered.action == given.action


async def test_a_person_declines_a_link_through_the_queue(tmp_path: Path) -> None:
    queue = QueueHuman(SessionStore(tmp_path / "s.db"), poll_seconds=0.05)
    answer = _answer_pending(
        lambda store, rid: store.humans.answer_human_request(rid, "bob", "", declined=True)
    )
    tool, _ = await _run(tmp_path, "sign_in", {"service": "mail"}, queue, answer)
    assert tool.result == "decline"


async def test_content_that_does_not_fit_the_form_is_sent_as_a_decline(tmp_path: Path) -> None:
    queue = QueueHuman(SessionStore(tmp_path / "s.db"), poll_seconds=0.05)
    wrong = ElicitationResult(action="accept", content={"name": "Ada", "nights": 99})
    answer = _answer_pending(
        lambda store, rid: store.humans.answer_human_request(rid, "alice", stored_answer(wrong))
    )
    tool, events = await _run(tmp_path, "book", {"city": "Lyon"}, queue, answer)
    assert tool.result == "decline"
    answered = next(e for e in events if isinstance(e, ElicitationAnsweredEvent))
    assert "at most 14" in answered.why


async def test_past_its_deadline_the_queue_declines_for_the_person(tmp_path: Path) -> None:
    # The request is found already stored with a deadline that has passed (a
    # restarted runner): no wait on the clock, the fallback answers at once.
    store = SessionStore(tmp_path / "s.db")

    class PastDeadline(QueueHuman):
        async def elicit(self, ask: Any) -> ElicitationResult:
            self.store.humans.create_human_request(
                ask.session_id, ask.request.message, ask.request.model_dump(mode="json"),
                request_id=ask.request_id, kind="elicitation",
                deadline=datetime.now(UTC) - timedelta(seconds=1), fallback="decline",
            )  # fmt: skip
            return await super().elicit(ask)

    tool, events = await _run(tmp_path, "book", {"city": "Lyon"}, PastDeadline(store))
    assert tool.result == "decline"
    answered = next(e for e in events if isinstance(e, ElicitationAnsweredEvent))
    assert answered.answered_by == "deadline-fallback"
    record = store.humans.get_human_request(answered.request_id)
    assert record is not None and record.kind == "elicitation" and record.status == "expired"


async def test_the_oracle_fills_the_form_from_the_tasks_facts(tmp_path: Path, style: str) -> None:
    from aah.benchmark.failtalms.fact_fit import TaskFacts
    from aah.benchmark.failtalms.humans import OracleHuman

    facts = TaskFacts(
        query="Book me a room in Lyon.",
        hidden_facts=["The guest name is Ada.", "She stays 2 nights.", "A single room."],
    )
    tool, events = await _run(tmp_path, "book", {"city": "Lyon"}, OracleHuman(facts), style=style)
    content = {"name": "Ada", "nights": 2, "room": "single"}
    assert tool.result == f"accept {json.dumps(content, sort_keys=True)}"
    answered = next(e for e in events if isinstance(e, ElicitationAnsweredEvent))
    assert answered.answered_by == "oracle"
    # A link is never opened by the oracle: it declines.
    link, _ = await _run(
        tmp_path / "link", "sign_in", {"service": "mail"}, OracleHuman(facts), style=style
    )
    assert link.result == "decline"


async def test_the_simulated_user_fills_the_form_or_declines_a_bad_reply(
    tmp_path: Path, style: str
) -> None:
    from runtime_support import fake_config

    from aah.benchmark.failtalms.fact_fit import TaskFacts
    from aah.benchmark.failtalms.humans import SimulatedHuman

    facts = TaskFacts(
        query="Book me a room in Lyon.",
        original_query="Book a single room in Lyon for Ada, 2 nights.",
        hidden_facts=["Ada", "2 nights", "single room"],
    )
    content = {"name": "Ada", "nights": 2, "room": "single"}
    replies = [f"<think>Ada, 2 nights.</think>{json.dumps(content)}", '{"name": "Ada", "pin": 1}']
    with FakeLLMServer(replies) as user_llm:
        user = SimulatedHuman(facts, fake_config(user_llm))
        tool, events = await _run(tmp_path, "book", {"city": "Lyon"}, user, style=style)
        bad, bad_events = await _run(tmp_path / "bad", "book", {"city": "Lyon"}, user, style=style)
        asked = user_llm.requests[0]["messages"][1]["content"]
    assert "Booking a room in Lyon: who stays, and for how long?" in asked
    assert tool.result == f"accept {json.dumps(content, sort_keys=True)}"
    answered = next(e for e in events if isinstance(e, ElicitationAnsweredEvent))
    assert answered.answered_by == "simulated" and answered.content == content
    # Content the form did not ask for never reaches the server: a decline, saying why.
    assert bad.result == "decline"
    declined = next(e for e in bad_events if isinstance(e, ElicitationAnsweredEvent))
    assert declined.why == (
        "the simulated user's content does not fit the form: the form has no field 'pin'"
    )


async def test_the_report_counts_what_servers_asked_and_what_went_back(tmp_path: Path) -> None:
    from aah.scoring.elicitations import load_elicitation_cells

    await _run(tmp_path, "book", {"city": "Lyon"}, _scripted(ElicitationResult(action="cancel")))
    await _run(tmp_path, "nested", {}, _scripted(ElicitationResult(action="accept")))
    store = SessionStore(tmp_path / "s.db")
    [cell] = load_elicitation_cells(store)
    assert (cell.sessions, cell.asked, cell.cancelled, cell.refused) == (2, 2, 1, 1)
    assert (cell.accepted, cell.declined, cell.timed_out, cell.unanswered) == (0, 0, 0, 0)
    assert cell.wait_seconds_median is not None


async def test_a_store_that_cannot_queue_it_cancels_and_says_why(tmp_path: Path) -> None:
    import sqlite3

    from aah.store.schema import SCHEMA_SQL, SCHEMA_VERSION

    # A store written before requests of kind 'elicitation' existed.
    old = SCHEMA_SQL.replace("('question', 'approval', 'elicitation')", "('question', 'approval')")
    assert old != SCHEMA_SQL
    with sqlite3.connect(tmp_path / "s.db") as conn:
        conn.executescript(old)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    queue = QueueHuman(SessionStore(tmp_path / "s.db"), poll_seconds=0.05)
    tool, events = await _run(tmp_path, "book", {"city": "Lyon"}, queue)
    assert tool.result == "cancel"
    answered = next(e for e in events if isinstance(e, ElicitationAnsweredEvent))
    assert answered.why.startswith("no one could be asked:") and "CHECK" in answered.why


async def test_the_console_asks_field_by_field_and_asks_again_for_a_bad_value(
    tmp_path: Path, style: str
) -> None:
    from aah.runtime.humans import ConsoleHuman

    lines = iter(["y", "Ada", "twenty", "", "3", "n", "double"])
    shown: list[str] = []

    def prompt(text: str) -> str:
        shown.append(text)
        return next(lines, "")

    tool, _ = await _run(tmp_path, "book", {"city": "Lyon"}, ConsoleHuman(prompt), style=style)
    content = {"breakfast": False, "name": "Ada", "nights": 3, "room": "double"}
    assert tool.result == f"accept {json.dumps(content, sort_keys=True)}"
    assert shown[0].startswith("MCP server hotel asks: Booking a room in Lyon")
    # The field's name, or the title the SDK's model gives it ("Nights").
    assert any(line.lower().startswith("not taken: nights: a whole number") for line in shown)
    # A link is printed, never opened; n declines it.
    lines = iter(["n"])
    link, _ = await _run(
        tmp_path / "link", "sign_in", {"service": "mail"}, ConsoleHuman(prompt), style=style
    )
    assert link.result == "decline"
    # Said as the web page says it: where it leads, then the address, and no "(aah does not open it)".
    assert "it leads to auth.example.org" in shown[-1]
    assert "https://auth.example.org/sign-in?state=abc123" in shown[-1]
    assert "aah does not open it" not in shown[-1]


def test_the_report_table_shows_each_run_and_setting() -> None:
    from types import SimpleNamespace
    from typing import cast

    from aah.report.build import Report
    from aah.report.elicitation_tables import elicitation_tables
    from aah.scoring.elicitations import ElicitationCell

    cell = ElicitationCell("r1", None, 2, 3, 1, 1, 0, 1, 0, 0, 4.0, 9.5)
    report = cast(Report, SimpleNamespace(elicitation_cells=[cell]))
    [table] = elicitation_tables(report)
    assert table.title == "Questions from MCP servers"
    assert table.rows == [
        ["r1", "(no setting)", "2", "3", "1", "1", "0", "1", "0", "0", "4.0", "9.5"]
    ]
    assert elicitation_tables(cast(Report, SimpleNamespace(elicitation_cells=[]))) == []


# --- two sessions asked at once: each question to its own session ---------------------


@pytest.mark.parametrize(
    ("style", "over", "expected"),
    [
        # Asked inside its call (an input_required round; the call's own HTTP stream).
        ("2026", "stdio", ["accept Ada", "accept Bob"]),
        ("2025", "http", ["accept Ada", "accept Bob"]),
        # Mid-call over stdio, a question names no call: no one can tell whose it is.
        ("2025", "stdio", ["cancel", "cancel"]),
    ],
)
async def test_questions_of_two_calls_at_once_go_each_to_its_own_session(
    style: str, over: str, expected: list[str]
) -> None:
    from test_mcp_client_bounds import wait_for_port
    from test_mcp_tools import free_port

    from aah.mcp import McpConnections

    def person(name: str) -> Any:
        async def answer(server: str, params: dict[str, Any]) -> dict[str, Any]:
            await asyncio.sleep(0.2)  # both questions wait at once
            return {"action": "accept", "content": {"name": name, "nights": 2}}

        return answer

    process = None
    if over == "http":
        port = free_port()
        command = [sys.executable, str(SERVER), style, str(port)]
        process = subprocess.Popen(command, stderr=subprocess.DEVNULL)
        wait_for_port(port)
        server = parse_server(f"hotel=http://127.0.0.1:{port}/mcp")
    else:
        server = parse_server(target(style))
    pool = McpConnections(start_timeout=60, call_timeout=60)
    try:
        replies = await asyncio.gather(
            pool.acall(server, "book", {"city": "Lyon"}, person("Ada")),
            pool.acall(server, "book", {"city": "Nice"}, person("Bob")),
        )
    finally:
        pool.close()
        if process is not None:
            process.terminate()
            process.wait(timeout=10)
    said = [reply.content[0]["text"] for reply in replies]
    shown = [
        f"accept {json.loads(text.partition(' ')[2])['name']}"
        if text.startswith("accept")
        else text
        for text in said
    ]
    assert shown == expected
