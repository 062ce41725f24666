"""τ² telecom with a person at the desk who holds the phone: their calls go through the desk.

The person answers through the store's queue with the desk's own workflow (as the web page
and the terminal app do): in place of words they press one of the phone's tools; the
simulation makes the call on its environment (as the simulated user's calls are made),
the next question shows its result and the message they had typed, and the calls land in
τ²'s trajectory and its grade. A resumed turn finds the replies given and makes each call
again, once, on the rebuilt environment.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from runtime_support import fake_config
from tau2_data import domain

from aah.benchmark import RunOptions
from aah.benchmark.tau2 import load_tau2_tasks
from aah.benchmark.tau2.messages import Tau2ToolResult
from aah.benchmark.tau2.runner import Tau2Runner, run_tasks, score_tau2_run, tau2_results
from aah.benchmark.tau2.scripted import ScriptedTau2User
from aah.benchmark.tau2.users import PersonTau2User
from aah.desk import ContentInvalid, DeskWorkflow, question_context
from aah.events import TurnEndedEvent
from aah.runtime import QueueHuman
from aah.store import HumanRequestRecord, SessionStore
from aah.testing.fake_llm import FakeLLMServer

TASK = "[mobile_data_issue]airplane_mode_on|bad_network_preference[PERSONA:Hard]"
ADVICE = "Please turn airplane mode off, then set your network mode to 4g_5g_preferred."
Step = Callable[[DeskWorkflow, HumanRequestRecord], HumanRequestRecord | None]


def _person(db: Path, steps: list[Step], troubles: list[str], stop: threading.Event) -> None:
    """A person at the desk: opens each question as it comes and plays the next step on it."""
    with SessionStore(db) as store:
        workflow = DeskWorkflow(store)
        request: HumanRequestRecord | None = None
        while steps and not stop.is_set():
            try:
                request = request or workflow.next_for("ann").request
                if request is None:
                    time.sleep(0.02)
                    continue
                request = steps.pop(0)(workflow, request)
            except Exception as exc:  # noqa: BLE001 - kept for the assertion; the person stops
                troubles.append(repr(exc))
                return


def _call(tool: str, values: Mapping[str, Any], draft: str) -> Step:
    """Press a tool of the phone, then wait for the question that shows its result."""

    def step(workflow: DeskWorkflow, request: HumanRequestRecord) -> HumanRequestRecord | None:
        opened = workflow.opened("ann", request)
        sent = workflow.called("ann", opened, tool, values, draft)
        assert sent.outcome == "settled", sent
        return workflow.follow_up("ann", wait_seconds=30)

    return step


def _say(text: str, seen: list[HumanRequestRecord]) -> Step:
    def step(workflow: DeskWorkflow, request: HumanRequestRecord) -> None:
        seen.append(request)
        sent = workflow.answer("ann", workflow.opened("ann", request), text)
        assert sent.outcome == "settled", sent

    return step


def test_the_person_presses_the_phones_tools_and_the_calls_are_graded(
    tau2_wheel: Path, tmp_path: Path
) -> None:
    telecom = domain("telecom", tau2_wheel)
    (task,) = load_tau2_tasks(telecom, ids=[TASK])
    db = tmp_path / "phone.db"
    seen: list[HumanRequestRecord] = []
    refused: list[str] = []

    def refused_then_set(workflow: DeskWorkflow, request: HumanRequestRecord) -> Any:
        seen.append(request)
        opened = workflow.opened("ann", request)
        # A mode the phone does not offer is refused at the desk in one line; nothing stored.
        with pytest.raises(ContentInvalid) as bad:
            workflow.called("ann", opened, "set_network_mode_preference", {"mode": "5g"}, "x")
        refused.append(str(bad.value))
        return _call("set_network_mode_preference", {"mode": "4g_5g_preferred"}, "Done:")(
            workflow, request
        )

    steps: list[Step] = [
        _say("My mobile data does not work.", seen),
        _call("toggle_airplane_mode", {}, "I turned it"),
        refused_then_set,
        _say("Done: excellent speed now. ###STOP###", seen),
    ]
    troubles: list[str] = []
    stop = threading.Event()
    with SessionStore(db):
        pass
    person = threading.Thread(target=_person, args=(db, steps, troubles, stop))
    with FakeLLMServer({"replies": [ADVICE]}) as llm:
        runner = Tau2Runner(
            RunOptions(run="p", aah=False), fake_config(llm), {"telecom": telecom}, [task],
            lambda d, t: ScriptedTau2User([]), user_name="person",
        )  # fmt: skip
        person.start()
        try:
            summary = asyncio.run(asyncio.wait_for(runner.run(run_tasks([task]), db), 60))
        finally:
            stop.set()
            person.join()
    assert summary.errors == 0, (summary.error_messages, troubles)
    assert not troubles and not steps
    assert refused == ["Mode is one of: 4g_5g_preferred, 4g_only, 3g_only, 2g_only"]
    # The question after a call shows its result and keeps what the person had typed.
    after_toggle, after_set = (question_context(r.context).user_tools for r in seen[1:])
    assert after_toggle is not None and after_set is not None
    assert [r.tool for r in after_toggle.results] == ["toggle_airplane_mode"]
    assert after_toggle.draft == "I turned it" and after_toggle.results[0].text
    assert [r.tool for r in after_set.results] == [
        "toggle_airplane_mode",
        "set_network_mode_preference",
    ]
    assert after_set.draft == "Done:" and after_set.calls_left == 18
    assert seen[2].id == f"{seen[1].id.removesuffix('.call1')}.call2"
    # The conversation so far beside it: what the person said; the agent's question apart.
    lines = [(line.role, line.text) for line in question_context(seen[1].context).conversation]
    assert ("you", "My mobile data does not work.") in lines and ("agent", ADVICE) not in lines
    with SessionStore(db) as store:
        score_tau2_run(store, "p")
        (row,) = tau2_results(store, "p")
        ended = [e for e in store.events(row["session_id"]) if isinstance(e, TurnEndedEvent)]
    assert row["termination"] == "user_stop"
    assert row["tau2_reward"] == 1.0, row["failures"]
    recorded = ended[-1].state["tau2_messages"] if ended[-1].state else []
    made = [
        (call["name"], call["arguments"])
        for message in recorded
        if message["role"] == "user"
        for call in message.get("tool_calls") or []
    ]
    assert made == [
        ("toggle_airplane_mode", {}),
        ("set_network_mode_preference", {"mode": "4g_5g_preferred"}),
    ]


class _Runs:
    """The phone's calls as a simulation makes them: counted, each with τ²'s result."""

    def __init__(self) -> None:
        self.made: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, name: str, arguments: Mapping[str, Any]) -> Tau2ToolResult:
        self.made.append((name, dict(arguments)))
        return Tau2ToolResult(f"u{len(self.made)}", f"{name}: done")


def test_a_resumed_turn_finds_the_calls_made_and_makes_each_once(
    tau2_wheel: Path, tmp_path: Path
) -> None:
    """Cut off while the person reads a call's result: the rerun's same turn finds the
    stored call (made again once, on the rebuilt phone) and the question already asked."""
    telecom = domain("telecom", tau2_wheel)
    task = load_tau2_tasks(telecom)[0]
    db = tmp_path / "resume.db"

    async def turn(store: SessionStore, runs: _Runs, session: str) -> str:
        user = PersonTau2User(QueueHuman(store, poll_seconds=0.02), telecom, task, run=None)
        user.bind_session(session)
        return await user.respond(1, "Turn on your data.", runs)

    async def first_run(store: SessionStore, session: str) -> _Runs:
        runs = _Runs()
        waiting = asyncio.create_task(turn(store, runs, session))
        workflow = DeskWorkflow(store)
        while (asked := workflow.next_for("ann").request) is None:
            await asyncio.sleep(0.02)
        workflow.called("ann", workflow.opened("ann", asked), "toggle_data", {}, "ok")
        while not store.humans.pending_human_requests():  # the result's question is asked
            await asyncio.sleep(0.02)
        waiting.cancel()  # the process is gone here
        with pytest.raises(asyncio.CancelledError):
            await waiting
        return runs

    async def second_run(store: SessionStore, session: str) -> tuple[_Runs, str]:
        runs = _Runs()
        waiting = asyncio.create_task(turn(store, runs, session))
        while not runs.made:
            await asyncio.sleep(0.02)
        (pending,) = store.humans.pending_human_requests()
        store.humans.answer_human_request(pending.id, "ann", "It works.")
        return runs, await asyncio.wait_for(waiting, 20)

    with SessionStore(db) as store:
        session = store.open_session("τ²", setting="tau2").id
        before = asyncio.run(first_run(store, session))
        after, said = asyncio.run(second_run(store, session))
        asked = [r.id for r in store.humans.pending_human_requests()]
    assert before.made == [("toggle_data", {})]
    assert after.made == [("toggle_data", {})]  # once, on the rebuilt phone
    assert said == "It works." and asked == []


def test_a_call_stored_past_the_desk_is_checked_again_and_never_made(
    tau2_wheel: Path, tmp_path: Path
) -> None:
    """A reply written to the store by something other than the desk's faces (a call of the
    agent's tool, a value the form has not, 10,000 characters typed): refused as not made,
    shown to the person in the next question, the words kept within the desk's bound."""
    telecom = domain("telecom", tau2_wheel)
    task = load_tau2_tasks(telecom)[0]
    runs = _Runs()

    async def turn(store: SessionStore, session: str) -> str:
        user = PersonTau2User(QueueHuman(store, poll_seconds=0.02), telecom, task)
        user.bind_session(session)
        return await user.respond(1, "Turn on your data.", runs)

    async def play(store: SessionStore, session: str) -> tuple[str, list[Any]]:
        waiting = asyncio.create_task(turn(store, session))
        shown = []
        for call in (
            {"tool": "enable_roaming", "arguments": {}},
            {"tool": "set_network_mode_preference", "arguments": {"mode": "6g"}},
            {"tool": "toggle_data", "arguments": {}, "draft": "x" * 10_000},
        ):
            while not (pending := store.humans.pending_human_requests()):
                await asyncio.sleep(0.02)
            shown.append(question_context(pending[0].context).user_tools)
            store.humans.answer_human_request(pending[0].id, "raw", "", user_call=call)
        while not (pending := store.humans.pending_human_requests()):
            await asyncio.sleep(0.02)
        shown.append(question_context(pending[0].context).user_tools)
        store.humans.answer_human_request(pending[0].id, "raw", "Fine.")
        return await asyncio.wait_for(waiting, 20), shown

    with SessionStore(tmp_path / "raw.db") as store:
        session = store.open_session("τ²", setting="tau2").id
        said, shown = asyncio.run(play(store, session))
    assert said == "Fine." and runs.made == []
    last = shown[-1]
    assert [(r.tool, r.made, r.error) for r in last.results] == [
        ("enable_roaming", False, True),
        ("set_network_mode_preference", False, True),
        ("toggle_data", False, True),
    ]
    said_of = [r.text for r in last.results]
    assert "you have no tool 'enable_roaming'" in said_of[0] and "Mode is one of" in said_of[1]
    assert "shorten your message" in said_of[2]
    assert len(last.draft) == 4_000 and last.calls_left == 17
