"""τ²'s evaluator on aah's simulations: wrong plays score 0 for τ²'s reason; NL verdicts apart."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from tau2_data import domain

from aah.benchmark.tau2 import (
    Tau2AgentMessage,
    Tau2Domain,
    Tau2Environment,
    Tau2Message,
    Tau2Task,
    Tau2ToolCall,
    Tau2ToolResult,
    Tau2UserMessage,
    agrade_simulation,
    grade_simulation,
    load_tau2_tasks,
    new_fence,
    play_gold,
)
from aah.errors import AahError


def _task(name: str, task_id: str, wheel: Path) -> tuple[Tau2Domain, Tau2Task]:
    loaded = domain(name, wheel)
    return loaded, load_tau2_tasks(loaded, ids=[task_id])[0]


def _gold_calls(task: Tau2Task) -> list[Tau2ToolCall]:
    return [
        Tau2ToolCall(a.name, dict(a.arguments), f"call_{i}", a.requestor)
        for i, a in enumerate(task.gold_actions)
    ]


def _play(
    loaded: Tau2Domain, task: Tau2Task, calls: Sequence[Tau2ToolCall], text: str | None
) -> list[Tau2Message]:
    """A conversation that makes ``calls`` (each answered by a fresh environment), then says ``text``."""
    env = Tau2Environment.create(loaded, task)
    messages: list[Tau2Message] = [*env.history, Tau2UserMessage(text="Hello, I need help.")]
    for call in calls:
        side = Tau2UserMessage if call.requestor == "user" else Tau2AgentMessage
        messages += [side(calls=(call,)), env.execute(call)]
    if text is not None:
        messages.append(Tau2AgentMessage(text=text))
    return messages


def test_a_right_play_scores_1_whatever_else_is_said(tau2_wheel: Path) -> None:
    loaded, task = _task("airline", "11", tau2_wheel)
    grade = grade_simulation(
        loaded, task, _play(loaded, task, _gold_calls(task), "Refund: 5,244 USD."), "agent_stop"
    )
    assert (grade.reward, grade.success, grade.failures) == (1.0, True, ())
    assert grade.components == {"DB": 1.0, "COMMUNICATE": 1.0}
    assert grade.details is not None and grade.details["db_check"]["db_match"] is True


def test_a_missed_action_fails_the_database(tau2_wheel: Path) -> None:
    loaded, task = _task("airline", "11", tau2_wheel)
    grade = grade_simulation(loaded, task, _play(loaded, task, [], "5244"), "user_stop")
    assert (grade.reward, grade.components) == (0.0, {"DB": 0.0, "COMMUNICATE": 1.0})
    assert grade.failures == (
        "DB: after the conversation's calls the database is not the one the gold actions "
        "make (τ²'s hashes differ)",
    )


def test_a_wrong_argument_fails_the_database(tau2_wheel: Path) -> None:
    loaded, task = _task("airline", "11", tau2_wheel)
    [gold] = _gold_calls(task)
    wrong = Tau2ToolCall(gold.name, {**gold.arguments, "cabin": "business"}, gold.id)
    assert gold.arguments["cabin"] != "business"
    grade = grade_simulation(loaded, task, _play(loaded, task, [wrong], "5244"), "user_stop")
    assert grade.reward == 0.0 and grade.failures[0].startswith("DB: ")


def test_a_forbidden_write_fails_the_database(tau2_wheel: Path) -> None:
    loaded, task = _task("airline", "11", tau2_wheel)
    calls = _gold_calls(task)
    extra = Tau2ToolCall(
        "cancel_reservation", {"reservation_id": calls[0].arguments["reservation_id"]}, "x"
    )
    grade = grade_simulation(
        loaded, task, _play(loaded, task, [*calls, extra], "5244"), "user_stop"
    )
    assert grade.reward == 0.0 and grade.components["DB"] == 0.0


def test_information_not_given_fails_communicate(tau2_wheel: Path) -> None:
    loaded, task = _task("airline", "11", tau2_wheel)
    grade = grade_simulation(
        loaded,
        task,
        _play(loaded, task, _gold_calls(task), "All done, refund on its way."),
        "user_stop",
    )
    assert grade.components == {"DB": 1.0, "COMMUNICATE": 0.0}
    assert grade.failures == ("COMMUNICATE: Information '5244' not communicated.",)


TELECOM = "[service_issue]airplane_mode_on|lock_sim_card_pin[PERSONA:Easy]"


def test_a_missed_agent_action_fails_actions(tau2_wheel: Path) -> None:
    loaded, task = _task("telecom", TELECOM, tau2_wheel)
    assert task.reward_basis == ("ENV_ASSERTION", "ACTION")
    calls = _gold_calls(task)
    users = [call for call in calls if call.requestor == "user"]
    right = grade_simulation(loaded, task, _play(loaded, task, calls, None), "user_stop")
    assert right.reward == 1.0
    grade = grade_simulation(loaded, task, _play(loaded, task, users, None), "user_stop")
    assert grade.components == {"ENV_ASSERTION": 1.0, "ACTION": 0.0}
    assert grade.failures == (
        "ACTION: not taken: transfer_to_human_agents(summary=I cannot fix the issue.)",
    )


ROAMING = "[mobile_data_issue]airplane_mode_on|user_abroad_roaming_enabled_off[PERSONA:None]"


def test_a_missed_user_action_fails_the_phones_assertions(tau2_wheel: Path) -> None:
    loaded, task = _task("telecom", ROAMING, tau2_wheel)
    calls = _gold_calls(task)
    assert [(c.requestor, c.name) for c in calls] == [
        ("user", "toggle_airplane_mode"),
        ("user", "toggle_roaming"),
    ]
    assert grade_simulation(loaded, task, _play(loaded, task, calls, None), "user_stop").success
    grade = grade_simulation(loaded, task, _play(loaded, task, calls[:1], None), "user_stop")
    assert (grade.reward, grade.components) == (0.0, {"ENV_ASSERTION": 0.0})
    assert grade.failures and all(line.startswith("ENV_ASSERTION: ") for line in grade.failures)
    assert "\n" not in "".join(grade.failures)


@pytest.mark.parametrize(
    "termination", ["max_steps", "too_many_errors", "agent_error", "user_error"]
)
def test_any_other_end_is_reward_0(tau2_wheel: Path, termination: str) -> None:
    loaded, task = _task("airline", "11", tau2_wheel)
    play = play_gold(loaded, task)
    grade = grade_simulation(loaded, task, play.messages, termination)
    assert (grade.reward, grade.success, grade.termination) == (0.0, False, termination)
    assert grade.failures == (
        f"Simulation terminated prematurely. Termination reason: {termination}",
    )


def test_an_unknown_end_is_one_line(tau2_wheel: Path) -> None:
    loaded, task = _task("mock", "create_task_1", tau2_wheel)
    with pytest.raises(
        AahError, match="unknown termination 'bored': use one of user_stop, agent_stop"
    ):
        grade_simulation(loaded, task, [], "bored")


def test_nl_assertions_wait_for_aahs_grader_and_count_in_the_reward(tau2_wheel: Path) -> None:
    loaded, task = _task("retail", "19", tau2_wheel)
    assert task.reward_basis == ("DB", "NL_ASSERTION") and len(task.nl_assertions) == 2
    play = play_gold(loaded, task)
    grade = grade_simulation(loaded, task, play.messages, play.termination)
    assert (grade.tau2_reward, grade.reward, grade.nl_pending, grade.success) == (
        1.0,
        None,
        True,
        False,
    )
    assert grade.nl_assertions == task.nl_assertions
    held = grade.with_nl_verdicts([True, True])
    assert (held.reward, held.success, held.nl_reward, held.components["NL_ASSERTION"]) == (
        1.0,
        True,
        1.0,
        1.0,
    )
    failed = grade_simulation(loaded, task, play.messages, "user_stop", nl_verdicts=[True, False])
    assert (failed.reward, failed.nl_reward) == (0.0, 0.0)
    assert failed.failures == (f"NL_ASSERTION: not met: {task.nl_assertions[1]}",)
    with pytest.raises(AahError, match="has 2 NL assertions, got 1 verdicts"):
        grade.with_nl_verdicts([True])


def test_nl_assertions_outside_the_basis_are_reported_apart(tau2_wheel: Path) -> None:
    loaded, task = _task("airline", "11", tau2_wheel)
    assert task.nl_assertions and "NL_ASSERTION" not in task.reward_basis
    play = play_gold(loaded, task)
    grade = grade_simulation(
        loaded, task, play.messages, play.termination, nl_verdicts=[False] * len(task.nl_assertions)
    )
    assert (grade.reward, grade.nl_reward, grade.success) == (1.0, 0.0, True)


def test_refused_calls_are_left_out_of_the_replay(tau2_wheel: Path) -> None:
    loaded, task = _task("airline", "11", tau2_wheel)
    bomb = Tau2ToolCall("calculate", {"expression": "9**9**9**9"}, "bomb")
    messages = _play(loaded, task, [bomb, *_gold_calls(task)], "5244")
    assert any(isinstance(m, Tau2ToolResult) and m.outcome == "refused" for m in messages)
    grade = grade_simulation(loaded, task, messages, "user_stop")
    assert grade.reward == 1.0


def test_a_simulation_whose_call_ran_out_of_time_is_not_replayed(tau2_wheel: Path) -> None:
    loaded, task = _task("airline", "11", tau2_wheel)
    messages: list[Tau2Message] = [
        *play_gold(loaded, task).messages,
        Tau2AgentMessage(calls=(Tau2ToolCall("list_all_airports", {}, "late"),)),
        Tau2ToolResult(
            "late", "Error: not run: before this call, ...", error=True, outcome="stopped"
        ),
    ]
    grade = grade_simulation(loaded, task, messages, "user_stop")
    assert grade.reward == 0.0
    assert grade.failures == ("not run: before this call, ...: τ² cannot replay the calls",)


def test_a_replay_that_does_not_match_is_reward_0_with_taus_reason(tau2_wheel: Path) -> None:
    loaded, task = _task("mock", "create_task_1", tau2_wheel)
    messages: list[Tau2Message] = [
        Tau2AgentMessage(calls=(Tau2ToolCall("get_users", {}, "c1"),)),
        Tau2ToolResult("c1", '"a result τ² would not give"'),
    ]
    grade = grade_simulation(loaded, task, messages, "user_stop")
    assert grade.reward == 0.0 and grade.failures[0].startswith("τ²'s evaluator failed: Tool call:")
    assert "\n" not in grade.failures[0]


def test_grading_off_the_event_loop(tau2_wheel: Path) -> None:
    loaded, task = _task("airline", "11", tau2_wheel)
    play = play_gold(loaded, task)

    async def grade_both() -> list[Any]:
        return list(
            await asyncio.gather(
                agrade_simulation(loaded, task, play.messages, "user_stop"),
                agrade_simulation(
                    loaded, task, play.messages[:-1], "user_stop", fence=new_fence(30)
                ),
            )
        )

    right, silent = asyncio.run(grade_both())
    assert (right.reward, silent.reward) == (1.0, 0.0)
    assert silent.failures == ("COMMUNICATE: Information '5244' not communicated.",)
