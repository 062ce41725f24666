"""τ²'s users in a run: the simulated user (its own model, τ²'s guidelines and the scenario,
temperature 0, phone calls one at a time) and the agent's questions (aah) reaching the same user."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from runtime_support import fake_config
from tau2_data import domain

from aah.benchmark import RunOptions
from aah.benchmark.tau2 import load_tau2_tasks
from aah.benchmark.tau2.runner import Tau2Runner, run_tasks, score_tau2_run, tau2_results
from aah.benchmark.tau2.scripted import ScriptedTau2User, gold_agent_script, gold_plan
from aah.benchmark.tau2.users import SimulatedTau2User, user_prompt_version
from aah.llm import ModelConfig
from aah.store import SessionStore
from aah.testing.fake_llm import FakeLLMServer


def test_the_simulated_user_plays_the_scenario_on_its_own_model(
    tau2_wheel: Path, tmp_path: Path
) -> None:
    telecom = domain("telecom", tau2_wheel)
    task = load_tau2_tasks(telecom)[0]
    tools = sorted(telecom.user_tool_names)
    status = next(name for name in tools if "status_bar" in name or "check" in name)
    user_script = {
        "rules": [
            # First the user looks at their phone (two calls asked at once: one is made).
            {"when": {"last_message_contains": "How can I help you today?"},
             "reply": {"tool_calls": [{"name": status, "arguments": {}},
                                      {"name": status, "arguments": {}}]}},
            {"when": {"last_role": "tool"}, "reply": "My phone has no data."},
            {"reply": "###STOP###"},
        ]
    }  # fmt: skip
    with FakeLLMServer(user_script) as user_llm, FakeLLMServer({"replies": ["Try again."]}) as llm:
        user_config: ModelConfig = fake_config(user_llm)

        def user(d: Any, t: Any) -> SimulatedTau2User:
            return SimulatedTau2User(d, t, user_config)

        runner = Tau2Runner(
            RunOptions(run="s", aah=False), fake_config(llm), {"telecom": telecom}, [task], user
        )
        summary = asyncio.run(runner.run(run_tasks([task]), tmp_path / "s.db"))
        asked = user_llm.requests
        agent_saw = llm.requests
    assert summary.errors == 0, summary.error_messages
    first = asked[0]
    assert first["temperature"] == 0.0
    system = first["messages"][0]["content"]
    assert telecom.guidelines.strip()[:200] in system
    assert task.user_scenario.strip()[:200] in system
    assert {t["function"]["name"] for t in first["tools"]} == set(tools)
    # One call made, its result read before the user's words.
    assert [m["role"] for m in asked[1]["messages"]][-2:] == ["assistant", "tool"]
    assert len(asked[1]["messages"][-2]["tool_calls"]) == 1
    assert "My phone has no data." in str(agent_saw[0]["messages"])
    with SessionStore(tmp_path / "s.db") as store:
        score_tau2_run(store, "s")
        (row,) = tau2_results(store, "s")
    assert row["termination"] == "user_stop"
    assert user_prompt_version() == "tau2-user/1"


def test_with_aah_the_agents_question_goes_to_the_same_user(
    tau2_wheel: Path, tmp_path: Path
) -> None:
    airline = domain("airline", tau2_wheel)
    (task,) = load_tau2_tasks(airline, ids=["3"])
    plan = gold_plan(task)
    script = gold_agent_script([task])
    ask = {"tool_calls": [{"name": "ask_human", "arguments": {"question": "Which reservation?"}}]}
    # Before anything else the agent asks the user a question, through ask_human.
    script["rules"].insert(0, {"when": {"last_role": "user", "last_message_contains": plan[0].text},
                               "reply": ask, "times": 1})  # fmt: skip
    users: list[ScriptedTau2User] = []

    def user(_d: Any, _t: Any) -> ScriptedTau2User:
        users.append(ScriptedTau2User(plan))
        return users[-1]

    with FakeLLMServer(script) as llm:
        runner = Tau2Runner(
            RunOptions(run="a", aah=True), fake_config(llm), {"airline": airline}, [task], user
        )
        summary = asyncio.run(runner.run(run_tasks([task]), tmp_path / "a.db"))
    assert summary.errors == 0, summary.error_messages
    assert "Which reservation?" in users[0].said
    with SessionStore(tmp_path / "a.db") as store:
        score_tau2_run(store, "a")
        (row,) = tau2_results(store, "a")
    assert row["termination"] == "user_stop"


def test_a_person_at_the_desk_plays_the_user(tau2_wheel: Path, tmp_path: Path) -> None:
    """`--user person`: each agent message is a question in the store's queue, shown with the
    scenario as "you are this user" and the phone's tools; the person's answers are the turns."""
    import threading
    import time

    telecom = domain("telecom", tau2_wheel)
    task = load_tau2_tasks(telecom)[0]
    db = tmp_path / "p.db"
    answers = iter(["My phone has no data.", "###STOP###"])
    seen: list[Any] = []
    stop = threading.Event()

    troubles: list[str] = []

    def person() -> None:
        while not stop.is_set():
            try:
                with SessionStore(db) as store:
                    for request in store.humans.pending_human_requests():
                        seen.append(request)
                        # Past the two planned answers the person ends the conversation.
                        said = next(answers, "###STOP###")
                        store.humans.answer_human_request(request.id, "ann", said)
            except Exception as exc:  # noqa: BLE001 - kept for the assertion, the person goes on
                troubles.append(repr(exc))
            time.sleep(0.05)

    with FakeLLMServer({"replies": ["Please restart your phone."]}) as llm:
        runner = Tau2Runner(
            RunOptions(run="p", aah=False), fake_config(llm), {"telecom": telecom}, [task],
            lambda d, t: ScriptedTau2User([]), user_name="person",
        )  # fmt: skip
        with SessionStore(db):
            pass
        thread = threading.Thread(target=person)
        thread.start()
        try:
            # A bound: a conversation that never ends fails here instead of holding CI.
            summary = asyncio.run(asyncio.wait_for(runner.run(run_tasks([task]), db), 120))
        finally:
            stop.set()
            thread.join()
    assert summary.errors == 0, (summary.error_messages, troubles)
    assert [r.question for r in seen] == [
        "Hi! How can I help you today?",
        "Please restart your phone.",
    ]
    context = seen[0].context
    assert (
        context["query"].startswith("You are this user.")
        and task.user_scenario[:80] in context["query"]
    )
    # The phone's tools come as the desk's typed tools (buttons and forms), not as text.
    phone = context["user_tools"]
    assert not context.get("tools") and {t["name"] for t in phone["tools"]} == set(
        telecom.user_tool_names
    )
    with SessionStore(db) as store:
        score_tau2_run(store, "p")
        (row,) = tau2_results(store, "p")
    assert row["termination"] == "user_stop"
