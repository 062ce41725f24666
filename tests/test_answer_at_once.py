"""A channel that answers at once is asked within the step; batch runs ask awareness in the agent's step.

Both save graph steps (perf/batch_bench.py) and must leave the same log,
the same answers and the same outcome as the paused path they replace.
"""

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from http_server import make_spec
from runtime_support import ask_then_call_script, awareness_rule, call, runtime_on

from aah.desk import QuestionContext
from aah.events import HumanAnswerEvent, HumanQuestionEvent
from aah.runtime.humans import HumanRequest, ScriptedHuman
from aah.runtime.session import SessionRequest, run_session
from aah.testing.fake_llm import FakeLLMServer
from aah.tools.spec import ParameterSpec

CITY = ParameterSpec(name="city", required=True)


def _asks_with_id(question: str, call_id: str, text: str | None = None) -> dict[str, Any]:
    asking = {"name": "ask_human", "arguments": {"question": question}, "id": call_id}
    return {"tool_calls": [asking]} | ({"text": text} if text else {})


def _ask_then_call(text: str) -> dict[str, Any]:
    """``ask_then_call_script``, but the agent says ``text`` as it asks (the person sees it)."""
    script = ask_then_call_script("local__forecast", {"city": "Lisbon"})
    asking = {"when": {"has_tools": True}, "reply": {**call("ask_human", question="Which city?")}}
    asking["reply"]["text"] = text
    return {"rules": [*script["rules"][:-1], asking]}


async def _run(
    llm: FakeLLMServer, db: Path, human: ScriptedHuman, durability: str
) -> tuple[list[tuple[str, str]], str, int]:
    """The session's log (kind, and the text a person or the agent wrote), its status, its checkpoints."""
    spec = make_spec("https://api.example.org/forecast", name="forecast", params=[CITY])
    async with runtime_on(llm, db, human=human, durability=durability) as rt:
        outcome = await run_session(SessionRequest("Weather where I live?", [spec]), rt)
        events = rt.store.events(outcome.session_id)
    with sqlite3.connect(db) as conn:
        (saved,) = conn.execute(
            "SELECT count(*) FROM checkpoints WHERE thread_id = ?", [outcome.session_id]
        ).fetchone()
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    log = [(e.kind, str(getattr(e, "question", "") or getattr(e, "answer", ""))) for e in events]
    return log, outcome.final_answer, saved


@pytest.mark.parametrize("durability", ["step", "exit"])
async def test_an_answer_at_once_logs_and_answers_as_a_pause_does(
    tmp_path: Path, durability: str
) -> None:
    with FakeLLMServer(_ask_then_call("I need your city first.")) as llm:
        paused_human = ScriptedHuman(["Lisbon"], at_once=False)
        paused = await _run(llm, tmp_path / "paused.db", paused_human, durability)
        paused_requests = len(llm.requests)
        at_once_human = ScriptedHuman(["Lisbon"])
        at_once = await _run(llm, tmp_path / "at-once.db", at_once_human, durability)
        tool_reply = [m for m in llm.requests[-2]["messages"] if m["role"] == "tool"][-1]
    assert at_once[:2] == paused[:2]  # the same log, in the same order, and the same answer
    assert ("human_answer", "Lisbon") in at_once[0] and tool_reply["content"] == "Lisbon"
    assert len(llm.requests) == 2 * paused_requests
    # The person's context is the same, and holds the steps before the
    # question, stored or still held for the step's checkpoint (a batch run
    # holds them all), but not the question itself.
    (asked_paused,), (asked_at_once,) = paused_human.asked, at_once_human.asked
    assert asked_at_once.context == asked_paused.context
    said = [(line.role, line.text) for line in asked_at_once.context.conversation]
    assert said == [("agent", "I need your city first.")]
    # No pause: a batch run (exit) saves one checkpoint, at the end.
    if durability == "exit":
        assert (paused[2], at_once[2]) == (2, 1)


async def test_an_answer_asked_again_after_a_lost_checkpoint_is_logged_once(
    tmp_path: Path,
) -> None:
    # The failed run's question and answer are stored with its error; its
    # checkpoint is lost (as when a process dies between the two writes), so
    # the rerun starts over and asks again, with the same call id (a model
    # that numbers its calls): the log keeps the question and answer once.
    script: dict[str, Any] = {
        "rules": [
            awareness_rule("IDK: the city is not given."),
            {
                "when": {"last_tool_name": "ask_human"},
                "reply": {"error": {"status": 400}},
                "times": 1,
            },
            {"when": {"last_tool_name": "ask_human"}, "reply": "Done: Lisbon it is."},
            {"when": {"has_tools": True}, "reply": _asks_with_id("Which city?", "call_city")},
        ]
    }
    human = ScriptedHuman(["Lisbon", "Lisbon"])
    request = SessionRequest("Weather where I live?", run="r", task_id="t")
    with FakeLLMServer(script) as llm:
        async with runtime_on(llm, tmp_path / "s.db", human=human, durability="exit") as rt:
            rt.store.create_run("r", {})
            failed = await run_session(request, rt)
            assert failed.status == "error"
            with sqlite3.connect(tmp_path / "s.db") as conn:
                conn.execute("DELETE FROM checkpoints")
                conn.execute("DELETE FROM writes")
            again = await run_session(SessionRequest(**{**vars(request), "retry_errors": True}), rt)
            events = rt.store.events(again.session_id)
    assert again.session_id == failed.session_id
    assert (again.status, again.final_answer) == ("finished", "Done: Lisbon it is.")
    assert len(human.asked) == 2
    questions = [e for e in events if isinstance(e, HumanQuestionEvent)]
    answers = [e for e in events if isinstance(e, HumanAnswerEvent)]
    assert [e.question for e in questions] == ["Which city?"]
    assert [e.answer for e in answers] == ["Lisbon"]
    assert len(questions) == len(answers) == 1


@pytest.mark.parametrize("durability", ["step", "exit"])
async def test_a_no_from_awareness_skips_before_the_agent_is_called(
    tmp_path: Path, durability: str
) -> None:
    # In a batch run (exit) the awareness questions are asked in the agent's
    # first step: a "no" still ends the session before the agent's model call.
    script = {"rules": [awareness_rule("No: the city is missing."), {"reply": "Should not run."}]}
    spec = make_spec("https://api.example.org/forecast", name="forecast", params=[CITY])
    with FakeLLMServer(script) as llm:
        async with runtime_on(llm, tmp_path / "s.db", durability=durability) as rt:
            outcome = await run_session(SessionRequest("Weather?", [spec]), rt)
            kinds = [e.kind for e in rt.store.events(outcome.session_id)]
        agent_calls = [r for r in llm.requests if r.get("tools")]
    assert outcome.status == "skipped" and not agent_calls
    assert kinds == ["model_call", "awareness", "final_answer"]
    assert "missing" in outcome.final_answer


@pytest.mark.parametrize("durability", ["step", "exit"])
async def test_awareness_answers_come_before_the_agents_first_call(
    tmp_path: Path, durability: str
) -> None:
    script = {"rules": [awareness_rule("Yes."), {"reply": "Sunny."}]}
    spec = make_spec("https://api.example.org/forecast", name="forecast", params=[CITY])
    with FakeLLMServer(script) as llm:
        async with runtime_on(llm, tmp_path / "s.db", durability=durability) as rt:
            outcome = await run_session(SessionRequest("Weather in Lisbon?", [spec]), rt)
            events = rt.store.events(outcome.session_id)
    kinds = [(e.kind, getattr(e, "purpose", None)) for e in events]
    assert kinds == [
        ("model_call", "awareness"),
        ("awareness", None),
        ("model_call", "awareness"),
        ("awareness", None),
        ("model_call", "agent"),
        ("final_answer", None),
    ]
    assert outcome.final_answer == "Sunny."


def test_a_request_context_compares_by_value() -> None:
    # The first test compares two requests' contexts; a context that compared
    # by identity would make it pass for nothing.
    one = HumanRequest(request_id="a", session_id="s", question="q", context=QuestionContext())
    assert one.context == QuestionContext() and one.context != QuestionContext(query="x")
