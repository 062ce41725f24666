"""Answers from people and simulated users are capped, with a marker; huge replies are refused.

The cap (``AAH_MAX_ANSWER_CHARS``) applies where an answer enters the
session, so the agent's next request and the log both hold the cut answer,
whoever gave it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr
from runtime_support import awareness_rule, call, runtime_on

from aah.benchmark.failtalms.fact_fit import TaskFacts
from aah.benchmark.failtalms.humans import SimulatedHuman
from aah.events import HumanAnswerEvent
from aah.llm import ModelConfig
from aah.runtime.humans import HumanChannel, ScriptedHuman
from aah.runtime.session import SessionRequest, run_session
from aah.store.sessions import SessionStore
from aah.testing.fake_llm import FakeLLMServer

LIMIT = 500
SCRIPT = {
    "rules": [
        awareness_rule("Yes, all there."),
        {"when": {"last_tool_name": "ask_human"}, "reply": "Done."},
        {"when": {"has_tools": True}, "reply": call("ask_human", question="Which city?")},
    ]
}


def simulated(base_url: str) -> HumanChannel:
    facts = TaskFacts(query="Weather?", original_query="Weather in Oslo?", hidden_facts=["Oslo"])
    config = ModelConfig(base_url=base_url, model="m", api_key=SecretStr("sk-x"), role="human")
    return SimulatedHuman(facts, config)


@pytest.mark.parametrize("who", ["person", "simulated user"])
async def test_a_huge_answer_reaches_agent_and_log_cut_with_a_marker(
    who: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AAH_MAX_ANSWER_CHARS", str(LIMIT))
    huge = "Oslo " * 20_000  # 100,000 characters
    with FakeLLMServer([huge]) as user, FakeLLMServer(SCRIPT) as llm:
        human = ScriptedHuman([huge]) if who == "person" else simulated(user.base_url)
        async with runtime_on(llm, tmp_path / "s.db", human=human) as rt:
            outcome = await run_session(SessionRequest("Weather?", []), rt)
        sent = llm.requests[-1]["messages"][-1]
    assert outcome.status == "finished", outcome.error
    [answer] = [
        e
        for e in SessionStore(tmp_path / "s.db").events(outcome.session_id)
        if isinstance(e, HumanAnswerEvent)
    ]
    assert answer.answer.startswith("Oslo Oslo")
    assert answer.answer.endswith("more characters]") and "[answer cut: " in answer.answer
    assert len(answer.answer) < LIMIT + 60
    assert sent["role"] == "tool" and sent["content"] == answer.answer


async def test_an_answer_within_the_cap_is_kept_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AAH_MAX_ANSWER_CHARS", str(LIMIT))
    exact = "x" * LIMIT
    with FakeLLMServer(SCRIPT) as llm:
        async with runtime_on(llm, tmp_path / "s.db", human=ScriptedHuman([exact])) as rt:
            outcome = await run_session(SessionRequest("Weather?", []), rt)
    events = SessionStore(tmp_path / "s.db").events(outcome.session_id)
    assert [e.answer for e in events if isinstance(e, HumanAnswerEvent)] == [exact]
