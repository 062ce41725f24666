"""Tool-call ids are unique in a session whatever ids the model server sends.

Some servers number calls per turn (``call_0`` every turn) or send the same
id twice in one turn. The session must still ask every question, run every
call, and pair each result with its own call when the conversation goes back
to the server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from http_server import make_spec
from runtime_support import awareness_rule, runtime_on

from aah.events import HumanAnswerEvent, HumanQuestionEvent, ToolCallEvent
from aah.runtime.humans import ScriptedHuman
from aah.runtime.session import SessionRequest, run_session
from aah.store.sessions import SessionStore
from aah.testing.fake_llm import FakeLLMServer
from aah.tools.spec import ParameterSpec

pytestmark = pytest.mark.usefixtures("allow_private_tool_hosts")

FORECAST = "local__forecast"


def calls(*named: tuple[str, dict[str, Any]], call_id: str = "call_0") -> dict[str, Any]:
    return {
        "tool_calls": [
            {"name": name, "arguments": arguments, "id": call_id} for name, arguments in named
        ]
    }


def turn(reply: dict[str, Any] | str) -> dict[str, Any]:
    return {"when": {"has_tools": True}, "reply": reply, "times": 1}


# Each script: the agent's turns, every call under the same id.
SCRIPTS = {
    "same id every turn": [
        calls((FORECAST, {"city": "Paris"})),
        calls(("ask_human", {"question": "Which city?"})),
        calls(("ask_human", {"question": "Which day?"})),
        calls((FORECAST, {"city": "Oslo"})),
    ],
    "same id twice in one turn": [
        calls(("ask_human", {"question": "Which city?"}), (FORECAST, {"city": "Paris"})),
        calls(("ask_human", {"question": "Which day?"}), ("ask_human", {"question": "Units?"})),
        calls((FORECAST, {"city": "Oslo"})),
    ],
    "empty id": [
        calls(("ask_human", {"question": "Which city?"}), call_id=""),
        calls(("ask_human", {"question": "Which day?"}), call_id=""),
        calls((FORECAST, {"city": "Oslo"}), call_id=""),
    ],
}


def _pairs(messages: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    called = [
        c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls", [])
    ]
    answered = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    return called, answered


@pytest.mark.parametrize("name", list(SCRIPTS))
async def test_reused_call_ids_still_ask_and_pair_every_call(name: str, tmp_path: Path) -> None:
    turns = SCRIPTS[name]
    script = {
        "rules": [
            awareness_rule("Yes, all there."),
            *(turn(reply) for reply in turns),
            turn("Done: the forecast is above."),
        ]
    }
    questions = [
        c["arguments"]["question"]
        for reply in turns
        for c in reply["tool_calls"]
        if c["name"] == "ask_human"
    ]
    spec = make_spec(
        "https://api.example.org/forecast",
        name="forecast",
        params=[ParameterSpec(name="city", required=True)],
    )
    human = ScriptedHuman([f"answer {i}" for i in range(len(questions))])
    with FakeLLMServer(script) as llm:
        async with runtime_on(llm, tmp_path / "s.db", human=human) as rt:
            outcome = await run_session(SessionRequest("Weather?", [spec]), rt)
        last_request = llm.requests[-1]["messages"]
    assert outcome.status == "finished", outcome.error
    assert outcome.final_answer == "Done: the forecast is above."
    assert [r.question for r in human.asked] == questions

    called, answered = _pairs(last_request)
    assert len(set(called)) == len(called), called
    assert sorted(answered) == sorted(called)
    answers = {m["tool_call_id"]: m["content"] for m in last_request if m["role"] == "tool"}
    for i, question in enumerate(questions):
        [asked_id] = [
            c["id"]
            for m in last_request
            if m["role"] == "assistant"
            for c in m.get("tool_calls", [])
            if c["function"]["name"] == "ask_human" and question in c["function"]["arguments"]
        ]
        assert answers[asked_id] == f"answer {i}"

    events = SessionStore(tmp_path / "s.db").events(outcome.session_id)
    asked = [e.request_id for e in events if isinstance(e, HumanQuestionEvent)]
    answered_requests = [e.request_id for e in events if isinstance(e, HumanAnswerEvent)]
    assert len(set(asked)) == len(questions) and answered_requests == asked
    runs = [e.call_id for e in events if isinstance(e, ToolCallEvent)]
    assert (
        len(set(runs))
        == len(runs)
        == sum(1 for reply in turns for c in reply["tool_calls"] if c["name"] == FORECAST)
    )
