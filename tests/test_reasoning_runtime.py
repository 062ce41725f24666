"""Reasoning models through the whole runtime: think blocks and reasoning fields.

Two kinds of reasoning server, both played by the real fake server over HTTP:
one that writes ``<think>…</think>`` at the start of the content (Qwen3,
DeepSeek-R1 distills without a reasoning parser) and one that sends the
thinking in ``reasoning_content`` (vLLM and llama.cpp with a reasoning parser).
Either way the answer is read without the reasoning, and the reasoning is kept
in its own event field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from http_server import LocalServer, make_spec
from runtime_support import call, fake_config, runtime_on

from aah.cli.trace import render_event
from aah.desk import ConversationLine
from aah.event_text import conversation_lines
from aah.events import AwarenessEvent, FinalAnswerEvent, ModelCallEvent, parse_event
from aah.runtime.session import SessionRequest, run_session
from aah.scoring.grader.vote import grade_session
from aah.store.sessions import SessionStore
from aah.testing.fake_llm import FakeLLMServer
from aah.tools.spec import ParameterSpec
from aah.ui.tui.widgets import entry_view
from aah.ui.web.format import conversation_text

pytestmark = pytest.mark.usefixtures("allow_private_tool_hosts")

CITY = ParameterSpec(name="city", required=True, description="City name")
THOUGHT = "The user wants the weather in Oslo. Is the city given? Yes, Oslo. No? Fail? Pass?"


def think(answer: str) -> dict[str, Any]:
    """A reply with the thinking in the content, as a server without a reasoning parser."""
    return {"text": f"<think>\n{THOUGHT}\n</think>\n\n{answer}"}


def field(answer: str) -> dict[str, Any]:
    """A reply with the thinking in ``reasoning_content``."""
    return {"text": answer, "reasoning": THOUGHT}


def field_call(name: str, **arguments: Any) -> dict[str, Any]:
    return {**call(name, **arguments), "reasoning": THOUGHT}


def think_call(name: str, **arguments: Any) -> dict[str, Any]:
    # A think block, then a Hermes call in the text: the shared parser reads it.
    args = ", ".join(f'"{k}": "{v}"' for k, v in arguments.items())
    body = f'<tool_call>{{"name": "{name}", "arguments": {{{args}}}}}</tool_call>'
    return {"text": f"<think>{THOUGHT}</think>\n{body}"}


STYLES = {"think": (think, think_call), "reasoning_content": (field, field_call)}


@pytest.mark.parametrize("style", list(STYLES))
async def test_reasoning_is_split_off_awareness_calls_and_the_final_answer(
    tmp_path: Path, style: str
) -> None:
    reply, reply_call = STYLES[style]
    with LocalServer() as api:
        spec = make_spec(api.url("/json"), name="forecast", params=[CITY])
        script = {
            "rules": [
                {"when": {"has_tools": False}, "reply": reply("Yes: the city is given.")},
                {
                    "when": {"last_tool_name": "local__forecast"},
                    "reply": reply("It is 21 in Oslo."),
                },
                {"when": {"has_tools": True}, "reply": reply_call("local__forecast", city="Oslo")},
            ]
        }
        with FakeLLMServer(script) as llm:
            async with runtime_on(llm, tmp_path / "s.db", http_mode="live") as rt:
                outcome = await run_session(SessionRequest("Weather in Oslo?", [spec]), rt)
                events = rt.store.events(outcome.session_id)
            sent = [m for r in llm.requests for m in r["messages"]]
        assert api.count("/json") == 1  # the call was read and run
    assert outcome.status == "finished" and outcome.final_answer == "It is 21 in Oslo."
    awareness = [e for e in events if isinstance(e, AwarenessEvent)]
    assert [e.answer for e in awareness] == ["yes", "yes"]
    assert all(e.reasoning == THOUGHT and "think" not in e.raw for e in awareness)
    agent_calls = [e for e in events if isinstance(e, ModelCallEvent) and e.purpose == "agent"]
    assert agent_calls[0].n_tool_calls == 1 and agent_calls[0].reasoning == THOUGHT
    (final,) = [e for e in events if isinstance(e, FinalAnswerEvent)]
    assert final.text == "It is 21 in Oslo." and final.reasoning == THOUGHT
    # The reasoning is never sent back to the model as part of the conversation.
    assert not any(THOUGHT in str(m.get("content")) for m in sent if m["role"] == "assistant")


@pytest.mark.parametrize("style", list(STYLES))
async def test_votes_of_a_reasoning_grader_are_read_without_the_reasoning(
    tmp_path: Path, style: str
) -> None:
    reply = STYLES[style][0]
    with SessionStore(tmp_path / "g.db") as store:
        store.create_run("r", {"model": "m"})
        session = store.open_session("Weather in Oslo?", run="r", task_id="t")
        store.append_event(FinalAnswerEvent(session_id=session.id, text="It is 21."))
        store.finish_session(session.id, "finished", "It is 21.")
        votes = [
            reply("Pass"),
            reply("Pass: grounded."),
            reply("Fail"),
            reply("Pass"),
            reply("Pass"),
        ]
        with FakeLLMServer(votes) as llm:
            result = await grade_session(store, session.id, fake_config(llm))
    assert result.grade is not None and result.grade.verdict == "pass"
    assert not result.grade.flagged
    assert [v["vote"] for v in result.grade.votes] == ["pass", "pass", "fail", "pass", "pass"]


def test_old_events_without_reasoning_still_read() -> None:
    stored = {"kind": "final_answer", "session_id": "s", "seq": 3, "text": "Done."}
    event = parse_event(stored)
    assert isinstance(event, FinalAnswerEvent) and event.reasoning is None
    old_awareness = {"kind": "awareness", "session_id": "s", "question": "tool", "answer": "yes"}
    assert parse_event(old_awareness).reasoning is None  # type: ignore[union-attr]


def test_faces_show_reasoning_folded_never_as_the_answer() -> None:
    reasoning = "x" * 1234
    final = FinalAnswerEvent(session_id="s", text="It is 21.", reasoning=reasoning)
    step = ModelCallEvent(session_id="s", model="m", text="Let me look.", reasoning=reasoning)
    trace = render_event(final)
    assert trace is not None and "reasoning (1,234 chars)" in trace and "xxx" not in trace
    view = entry_view(final)
    assert view is not None and view.reasoning == "reasoning (1,234 chars)"
    assert "xxx" not in view.body
    lines = [ConversationLine.model_validate(line._asdict()) for line in conversation_lines([step])]
    shown = conversation_text(lines)
    assert "Let me look." in shown and "1,234 chars, not shown" in shown and "xxx" not in shown
    # An event without reasoning shows no such line.
    plain = render_event(FinalAnswerEvent(session_id="s", text="It is 21."))
    assert plain is not None and "reasoning" not in plain
    assert "reasoning" not in conversation_text([ConversationLine(role="agent", text="hi")])


def test_a_long_reasoning_is_cut_in_the_event() -> None:
    event = ModelCallEvent(session_id="s", model="m", reasoning="y" * 50_000)
    assert event.reasoning is not None and len(event.reasoning) <= 8_000
    assert event.reasoning.endswith("chars]")
    assert ModelCallEvent(session_id="s", model="m", reasoning="").reasoning is None


async def test_an_awareness_re_ask_quotes_only_the_start_of_the_unread_reply(
    tmp_path: Path,
) -> None:
    rambling = "Well, let me consider every angle of this request. " * 100  # ~5,000 chars
    script = {"rules": [{"reply": {"text": rambling, "reasoning": THOUGHT}}]}
    with FakeLLMServer(script) as llm:
        async with runtime_on(llm, tmp_path / "s.db") as rt:
            outcome = await run_session(SessionRequest("Hi", [], awareness="tool"), rt)
            events = rt.store.events(outcome.session_id)
        requests = llm.requests
    (awareness,) = [e for e in events if isinstance(e, AwarenessEvent)]
    assert awareness.answer == "none" and awareness.attempts == 3
    assert awareness.reasoning == THOUGHT
    quoted = [m["content"] for m in requests[1]["messages"] if m["role"] == "assistant"]
    assert len(quoted) == 1 and len(quoted[0]) <= 400 and quoted[0].endswith("chars]")
    assert THOUGHT not in str(requests[2]["messages"])
