"""τ²'s limits (10 failed calls, 200 steps) end a simulation where τ²'s orchestrator ends it: after
the step that reaches one, inside a turn of many calls too, and after a user's failing phone call;
counted as its run loop counts them (a step is one message, or one message's results together)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
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
from aah.benchmark.tau2.simulation import (
    MAX_ERRORS,
    MAX_STEPS,
    RunCall,
    Tau2Simulation,
    tau2_limit,
)
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


Unit = tuple[Any, ...]  # ("user",), ("agent",), ("call", calls, failed), ("phone", failed)


def _messages(units: Sequence[Unit]) -> list[list[Tau2Message]]:
    """Each unit as the messages τ² records for it (after the greeting)."""
    out: list[list[Tau2Message]] = []
    for n, (kind, *args) in enumerate(units):
        if kind in ("user", "agent"):
            text = Tau2UserMessage(text="hi") if kind == "user" else Tau2AgentMessage(text="ok")
            out.append([text])
            continue
        calls, failed = (args[0], args[1]) if kind == "call" else (1, args[0])
        who = "assistant" if kind == "call" else "user"
        made = tuple(Tau2ToolCall("t", {}, f"c{n}.{i}", who) for i in range(calls))
        message = Tau2AgentMessage(calls=made) if kind == "call" else Tau2UserMessage(calls=made)
        results = [Tau2ToolResult(c.id, "x", who, error=i < failed) for i, c in enumerate(made)]
        out.append([message, *results])
    return out


def _taus_loop(units: Sequence[Unit]) -> tuple[str | None, int | None]:
    """τ²'s orchestrator's run loop over ``units``: its end and after how many units.

    Its counters as its code keeps them: every step adds one (a call message
    is one, bound to the environment, so unchecked), each failed result an
    error; after each step not bound to the environment, steps >= 200 ends
    it, then errors >= 10 (which names the end when both hold).
    """
    steps = errors = 0
    for n, (kind, *args) in enumerate(units, 1):
        if kind in ("call", "phone"):
            steps += 1  # the call message, to the environment: not checked
            errors += args[1] if kind == "call" else args[0]
        steps += 1
        ended = "max_steps" if steps >= MAX_STEPS else None
        ended = "too_many_errors" if errors >= MAX_ERRORS else ended
        if ended is not None:
            return ended, n
    return None, None


def _aahs_end(units: Sequence[Unit]) -> tuple[str | None, int | None]:
    """Where :func:`tau2_limit`, asked after each unit, ends the simulation."""
    so_far: list[Tau2Message] = []
    for n, messages in enumerate(_messages(units), 1):
        so_far += messages
        ended = tau2_limit(so_far)
        if ended is not None:
            return ended, n
    return None, None


CORPUS = [
    json.loads(line)
    for line in (Path(__file__).parent / "fixtures" / "hostile" / "tau2_limits.jsonl")
    .read_text(encoding="utf-8")
    .splitlines()
    if line.strip()
]


@pytest.mark.parametrize("case", CORPUS, ids=[case["case"] for case in CORPUS])
def test_corpus_limits_end_where_taus_loop_ends(case: dict[str, Any]) -> None:
    units = [
        tuple(unit) for repeat, *group in case["units"] for _ in range(repeat) for unit in group
    ]
    assert _aahs_end(units) == (case["ends"], case["after"]) == _taus_loop(units), case["why"]


_UNIT = st.one_of(
    st.just(("user",)),
    st.just(("agent",)),
    st.integers(1, 4).flatmap(lambda n: st.tuples(st.just("call"), st.just(n), st.integers(0, n))),
    st.tuples(st.just("phone"), st.integers(0, 1)),
)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.lists(
        st.one_of(
            _UNIT.map(lambda unit: [unit]),
            st.tuples(st.integers(10, 60), _UNIT).map(lambda rep: [rep[1]] * rep[0]),
        ),
        max_size=12,
    ).map(lambda groups: [unit for group in groups for unit in group])
)
def test_any_conversation_ends_where_taus_loop_ends(units: list[Unit]) -> None:
    assert _aahs_end(units) == _taus_loop(units)


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
