"""τ²'s limits (10 failed calls, 200 steps) end a simulation where τ²'s orchestrator ends it: after
the step that reaches one, inside a turn of many calls too, and after a user's failing phone call;
counted as its run loop counts them (a step is one message, or one message's results together)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from runtime_support import fake_config
from tau2_data import domain

from aah.benchmark import RunOptions
from aah.benchmark.tau2 import (
    Tau2AgentMessage,
    Tau2Message,
    Tau2ToolCall,
    Tau2ToolResult,
    Tau2UserMessage,
    load_tau2_tasks,
)
from aah.benchmark.tau2.runner import Tau2Runner, run_tasks, score_tau2_run, tau2_results
from aah.benchmark.tau2.simulation import MAX_ERRORS, RunCall, Tau2Simulation, tau2_limit
from aah.events import FinalAnswerEvent, TurnEndedEvent
from aah.store import SessionStore
from aah.testing.fake_llm import FakeLLMServer

BAD = {"name": "get_reservation_details", "arguments": {"reservation_id": "ZZZZZZ"}}
# A tool the agent lacks: aah refuses it, and τ²'s own answer (an error) is recorded.
MISSING = {"name": "no_such_tool", "arguments": {}}
GOOD = {"name": "get_user_details", "arguments": {"user_id": "mia_li_3668"}}
CANCEL = ("cancel_reservation", {"reservation_id": "4WQ150"})


class _User:
    """A user who makes ``calls`` before each message (counting those that ran), then says ``text``."""

    def __init__(self, text: str, calls: Sequence[tuple[str, dict[str, Any]]] = ()) -> None:
        self.text = text
        self.calls = list(calls)
        self.ran = 0

    async def respond(
        self, turn: int, agent_text: str, run: RunCall, history: Sequence[Tau2Message] = ()
    ) -> str:
        for name, arguments in self.calls:
            await run(name, arguments)
            self.ran += 1
        return self.text


def _agent(n: int) -> Tau2AgentMessage:
    return Tau2AgentMessage(calls=(Tau2ToolCall("t", {}, f"a{n}"),))


def _results(n: int, errors: int, size: int = 1) -> list[Tau2Message]:
    return [Tau2ToolResult(f"a{n}-{i}", "x", "assistant", error=i < errors) for i in range(size)]


def test_taus_loop_counts_steps_and_errors() -> None:
    """τ²'s orchestrator: `step_count >= max_steps`, then `num_errors >= max_errors`, checked
    after each step not bound to the environment; one message's results are one step."""
    nine = [m for n in range(9) for m in [_agent(n), *_results(n, 1)]]
    assert tau2_limit(nine) is None
    assert tau2_limit([*nine, _agent(9), *_results(9, 1)]) == "too_many_errors"
    # Three results of one message: one step, three errors.
    batch = [_agent(0), *_results(0, 3, size=3)]
    assert tau2_limit(batch * 3) is None and tau2_limit(batch * 4) == "too_many_errors"
    talk = [Tau2UserMessage(text="hi"), Tau2AgentMessage(text="hello")]
    assert tau2_limit(talk * 99 + talk[:1]) is None  # 199 steps
    assert tau2_limit(talk * 100) == "max_steps"  # 200
    # Results of one message count once towards the steps.
    many = [Tau2UserMessage(text="hi"), _agent(0), *_results(0, 0, size=5)]
    assert tau2_limit(many * 66 + [Tau2UserMessage(text="hi")]) is None  # 199 steps, 330 results
    assert tau2_limit(talk * 100 + [_agent(1), *_results(1, MAX_ERRORS, MAX_ERRORS)]) == (
        "too_many_errors"
    )  # both reached: the error limit is checked last


def _session(
    tau2_wheel: Path, db: Path, user: _User, script: dict[str, Any]
) -> tuple[dict[str, Any], int, list[Any]]:
    airline = domain("airline", tau2_wheel)
    tasks = load_tau2_tasks(airline, ids=["3"])
    with FakeLLMServer(script) as llm:
        runner = Tau2Runner(
            RunOptions(run="l", aah=False), fake_config(llm), {"airline": airline}, tasks,
            lambda d, t: user,
        )  # fmt: skip
        summary = asyncio.run(runner.run(run_tasks(tasks), db))
        asked = len(llm.requests)
    assert summary.errors == 0, summary.error_messages
    with SessionStore(db) as store:
        score_tau2_run(store, "l")
        (row,) = tau2_results(store, "l")
        return row, asked, store.events(row["session_id"])


def _recorded(events: list[Any]) -> list[dict[str, Any]]:
    (ended,) = [e for e in events if isinstance(e, TurnEndedEvent) and e.state]
    return list(ended.state["tau2_messages"])


def test_a_turn_of_failing_calls_ends_at_the_tenth_error(tau2_wheel: Path, tmp_path: Path) -> None:
    """One failing call a message, all in the user's first turn: the tenth failure ends it (not
    the step limit 200 replies later), finished, graded reward 0 as too_many_errors."""
    script = {"replies": [{"tool_calls": [BAD]}]}
    row, asked, events = _session(tau2_wheel, tmp_path / "e.db", _User("Hi."), script)
    assert (row["termination"], row["reward"], row["status"]) == (
        "too_many_errors",
        0.0,
        "finished",
    )
    assert asked == MAX_ERRORS
    recorded = _recorded(events)
    assert sum(1 for m in recorded if m["role"] == "tool" and m.get("error")) == MAX_ERRORS
    assert recorded[-1]["role"] == "tool"
    (final,) = [e for e in events if isinstance(e, FinalAnswerEvent)]
    assert "error limit" in final.text


def test_a_batch_of_failing_calls_is_one_step_as_in_tau2(tau2_wheel: Path, tmp_path: Path) -> None:
    """Three failing calls a message (one of a tool the agent lacks): τ² checks after each
    message's results, so the fourth message ends it with 12 errors, not the tenth call."""
    script = {"replies": [{"tool_calls": [BAD, MISSING, BAD]}]}
    row, asked, events = _session(tau2_wheel, tmp_path / "b.db", _User("Hi."), script)
    assert row["termination"] == "too_many_errors" and asked == 4
    recorded = _recorded(events)
    assert sum(1 for m in recorded if m["role"] == "tool" and m.get("error")) == 12


def test_a_turn_of_calls_ends_at_the_step_limit(tau2_wheel: Path, tmp_path: Path) -> None:
    """Calls that succeed, all in one turn: 200 of τ²'s steps (the user's message, then a call
    and its result each) end it after 100 replies, not at aah's 200 replies a turn."""
    script = {"replies": [{"tool_calls": [GOOD]}]}
    row, asked, _ = _session(tau2_wheel, tmp_path / "s.db", _User("Hi."), script)
    assert (row["termination"], row["status"]) == ("max_steps", "finished")
    assert asked == 100


def test_the_users_failing_phone_calls_end_it_at_the_tenth(tau2_wheel: Path) -> None:
    """The user's calls fail (airline users have no tools): the tenth ends the simulation;
    the rest are never made, and the user's message is never sent."""
    airline = domain("airline", tau2_wheel)
    (task,) = load_tau2_tasks(airline, ids=["3"])
    user = _User("I want to cancel.", [CANCEL] * 15)
    simulation = Tau2Simulation(airline, task, user)
    messages = [SystemMessage("s"), HumanMessage("hi"), AIMessage("How can I help?")]
    assert asyncio.run(simulation.reply(0, messages)) is None
    assert simulation.termination == "too_many_errors"
    assert user.ran == MAX_ERRORS - 1  # the tenth call raised inside `run`
    assert simulation.grade is not None and simulation.grade.reward == 0.0
    last = simulation.messages[-1]  # the tenth call's result; no message of the user after it
    assert isinstance(last, Tau2ToolResult) and last.requestor == "user" and last.error
    assert sum(1 for m in simulation.messages if isinstance(m, Tau2ToolResult)) == MAX_ERRORS


def test_failing_phone_calls_before_the_first_message_end_it_before_the_agent(
    tau2_wheel: Path, tmp_path: Path
) -> None:
    """The user's calls before answering τ²'s greeting reach the error limit: the model is
    never asked, and the session still finishes with τ²'s grade."""
    user = _User("Hello.", [CANCEL] * 15)
    row, asked, events = _session(tau2_wheel, tmp_path / "o.db", user, {"replies": ["Hi!"]})
    assert (row["termination"], row["status"]) == ("too_many_errors", "finished")
    assert asked == 0 and user.ran == MAX_ERRORS - 1
