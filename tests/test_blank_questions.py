"""A blank ask_human question goes back to the model as invalid; no person sees it."""

from __future__ import annotations

from pathlib import Path

import pytest
from runtime_support import awareness_rule, call, runtime_on

from aah.events import HumanQuestionEvent, ToolCallEvent
from aah.runtime.humans import ScriptedHuman
from aah.runtime.session import SessionRequest, run_session
from aah.store.sessions import SessionStore
from aah.testing.fake_llm import FakeLLMServer

BLANK_QUESTIONS = ["", " ", "   \n\t  ", "\u00a0\u3000", "\u200b", " \u2028 \ufeff "]


@pytest.mark.parametrize("question", BLANK_QUESTIONS)
async def test_a_blank_question_is_returned_to_the_model(question: str, tmp_path: Path) -> None:
    script = {
        "rules": [
            awareness_rule("Yes, all there."),
            {"when": {"last_message_contains": "left blank"}, "reply": "Done without asking."},
            {"when": {"has_tools": True}, "reply": call("ask_human", question=question)},
        ]
    }
    human = ScriptedHuman(["Oslo"])
    with FakeLLMServer(script) as llm:
        async with runtime_on(llm, tmp_path / "s.db", human=human) as rt:
            outcome = await run_session(SessionRequest("Weather?", []), rt)
        feedback = llm.requests[-1]["messages"][-1]
    assert outcome.status == "finished" and outcome.final_answer == "Done without asking."
    assert human.asked == []
    assert feedback["role"] == "tool" and "question" in feedback["content"]
    events = SessionStore(tmp_path / "s.db").events(outcome.session_id)
    assert not any(isinstance(e, HumanQuestionEvent) for e in events)
    rejected = [e for e in events if isinstance(e, ToolCallEvent)]
    assert [(e.tool, e.ok, e.check) for e in rejected] == [("ask_human", False, "IAV")]


async def test_a_question_with_text_still_reaches_the_person(tmp_path: Path) -> None:
    script = {
        "rules": [
            awareness_rule("Yes, all there."),
            {"when": {"last_tool_name": "ask_human"}, "reply": "Done."},
            {"when": {"has_tools": True}, "reply": call("ask_human", question="  Which city?  ")},
        ]
    }
    human = ScriptedHuman(["Oslo"])
    with FakeLLMServer(script) as llm:
        async with runtime_on(llm, tmp_path / "s.db", human=human) as rt:
            outcome = await run_session(SessionRequest("Weather?", []), rt)
    assert outcome.status == "finished"
    assert [r.question for r in human.asked] == ["  Which city?  "]
