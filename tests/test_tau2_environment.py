"""One simulation's τ² environment: τ²'s own results, fresh state, the user's phone, and the fence."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from tau2_data import domain

from aah.benchmark.tau2 import (
    Tau2Environment,
    Tau2ToolCall,
    Tau2UserMessage,
    load_tau2_tasks,
    new_fence,
    tau2_code,
)
from aah.benchmark.tau2.messages import tau2_tool_call
from aah.errors import AahError

USER = "chen_jackson_3290"
RESERVATION = "4WQ150"


def _environment(name: str, wheel: Path, **options: Any) -> Tau2Environment:
    loaded = domain(name, wheel)
    return Tau2Environment.create(loaded, load_tau2_tasks(loaded)[0], **options)


@pytest.fixture(scope="module")
def airline_pair(tau2_wheel: Path) -> tuple[Tau2Environment, Any]:
    """aah's environment and τ²'s own, side by side, for calls that change nothing."""
    return _environment("airline", tau2_wheel), domain("airline", tau2_wheel).new_environment()


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("get_user_details", {"user_id": USER}),
        ("get_user_details", {"user_id": "nobody_0000"}),
        ("get_user_details", {}),
        ("get_user_details", {"user_id": USER, "extra": 1}),
        ("get_reservation_details", {"reservation_id": RESERVATION}),
        ("search_direct_flight", {"origin": "JFK", "destination": "SEA", "date": "2024-05-20"}),
        ("calculate", {"expression": "(120 + 35.5) * 2"}),
        ("calculate", {"expression": "import os"}),
        ("list_all_airports", {}),
        ("teleport", {"to": "SEA"}),
    ],
)
def test_results_are_taus_own_text(
    airline_pair: tuple[Tau2Environment, Any], name: str, arguments: dict[str, Any]
) -> None:
    ours, theirs = airline_pair
    result = ours.execute(Tau2ToolCall(name, arguments, "c1"))
    expected = theirs.get_response(
        tau2_tool_call(ours.domain.code, Tau2ToolCall(name, arguments, "c1"))
    )
    assert (result.content, result.error, result.outcome) == (
        expected.content,
        expected.error,
        "ran",
    )
    assert result.call_id == "c1" and result.text == result.content


def test_known_results(airline_pair: tuple[Tau2Environment, Any]) -> None:
    env = airline_pair[0]
    missing = env.execute(Tau2ToolCall("teleport", {}, "c1"))
    assert (missing.content, missing.error) == ("Error: Tool 'teleport' not found.", True)
    assert env.execute(Tau2ToolCall("calculate", {"expression": "2**10"})).content == "1024.0"
    unknown = env.execute(Tau2ToolCall("get_user_details", {"user_id": "nobody_0000"}))
    assert unknown.content == "Error: User nobody_0000 not found"


def test_each_simulation_has_a_database_of_its_own(tau2_wheel: Path) -> None:
    first, second = _environment("airline", tau2_wheel), _environment("airline", tau2_wheel)
    cancelled = first.execute(Tau2ToolCall("cancel_reservation", {"reservation_id": RESERVATION}))
    assert '"status": "cancelled"' in cancelled.content
    assert (
        '"status": "cancelled"'
        in first.execute(
            Tau2ToolCall("get_reservation_details", {"reservation_id": RESERVATION})
        ).content
    )
    untouched = second.execute(
        Tau2ToolCall("get_reservation_details", {"reservation_id": RESERVATION})
    )
    assert '"status": "cancelled"' not in untouched.content


def test_the_specs_and_the_users_phone(tau2_wheel: Path) -> None:
    airline = _environment("airline", tau2_wheel)
    assert len(airline.agent_tools) == 14 and airline.user_tools == []
    assert airline.policy.startswith("# Airline Agent Policy")
    telecom = _environment("telecom", tau2_wheel)
    names = {spec["function"]["name"] for spec in telecom.user_tools}
    assert {"toggle_airplane_mode", "check_status_bar", "make_payment"} <= names
    status = telecom.execute(Tau2ToolCall("check_status_bar", {}, "u1", requestor="user"))
    assert status.requestor == "user" and not status.error and "Airplane Mode" in status.content
    toggled = telecom.execute(Tau2ToolCall("toggle_airplane_mode", {}, "u2", requestor="user"))
    assert not toggled.error
    # The agent cannot use the user's phone, nor the user the agent's tools.
    assert telecom.execute(Tau2ToolCall("toggle_airplane_mode", {})).error
    assert telecom.execute(
        Tau2ToolCall("get_customer_by_phone", {"phone_number": "555-123-2002"}, requestor="user")
    ).error


def test_the_initial_history_is_replayed_and_given(tau2_wheel: Path) -> None:
    mock = domain("mock", tau2_wheel)
    [task] = load_tau2_tasks(mock, ids=["update_task_with_message_history"])
    env = Tau2Environment.create(mock, task)
    assert isinstance(env.history[0], Tau2UserMessage)
    assert env.history[1].calls[0].name == "create_task"  # type: ignore[union-attr]
    assert len(env.history) == 4
    # The history's create_task ran here: its task_2 is there to complete.
    done = env.execute(
        Tau2ToolCall("update_task_status", {"task_id": "task_2", "status": "completed"})
    )
    assert not done.error and '"status": "completed"' in done.content
    [plain] = load_tau2_tasks(mock, ids=["update_task_1"])
    fresh = Tau2Environment.create(mock, plain)
    assert fresh.execute(
        Tau2ToolCall("update_task_status", {"task_id": "task_2", "status": "completed"})
    ).error
    [broken] = load_tau2_tasks(mock, ids=["update_task_with_user_tools"])
    with pytest.raises(
        AahError, match="its initial state cannot be set .*add_notification"
    ) as caught:
        Tau2Environment.create(mock, broken)
    assert "\n" not in str(caught.value)


def _deep(levels: int) -> Any:
    value: Any = []
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        (
            {"expression": "9**9**9**9"},
            "not run: a power in the expression is not to a plain number",
        ),
        ({"expression": "*".join(["2**100000"] * 20)}, "could pass 1,000,000 bits"),
        ({"expression": "1+" * 6000 + "1"}, "longer than 10,000 characters"),
        ({"expression": "1", "deep": _deep(150)}, "nest deeper than 100"),
        ({"expression": "1", "n": 10**5000}, "over 4,300 digits"),
    ],
)
def test_arguments_that_could_hold_the_interpreter_are_answered_unrun(
    airline_pair: tuple[Tau2Environment, Any], arguments: dict[str, Any], why: str
) -> None:
    env = airline_pair[0]
    started = time.monotonic()
    result = env.execute(Tau2ToolCall("calculate", arguments, "c9"))
    assert time.monotonic() - started < 2
    assert (result.outcome, result.error, result.call_id) == ("refused", True, "c9")
    assert result.content.startswith("Error: not run: ") and why in result.content


# book_reservation builds every passenger and deep-copies the list before it
# checks anything: most of a second of pure Python with 150,000 of them.
SLOW = Tau2ToolCall(
    "book_reservation",
    {
        "user_id": USER, "origin": "JFK", "destination": "SEA", "flight_type": "one_way",
        "cabin": "economy", "flights": [], "payment_methods": [], "total_baggages": 0,
        "nonfree_baggages": 0, "insurance": "no",
        "passengers": [{"first_name": "A", "last_name": "B", "dob": "1990-01-01"}] * 150_000,
    },
    "slow",
)  # fmt: skip


def test_a_call_past_its_time_bound_stops_the_environment(tau2_wheel: Path) -> None:
    env = _environment("airline", tau2_wheel, fence=new_fence(0.1))
    started = time.monotonic()
    stopped = env.execute(SLOW)
    assert time.monotonic() - started < 5
    assert stopped.outcome == "stopped" and stopped.error
    assert "took longer than 0.1 s and was stopped (AAH_BENCH_CALL_TIMEOUT)" in stopped.content
    after = env.execute(Tau2ToolCall("list_all_airports", {}))
    assert after.outcome == "stopped" and "not run: before this call" in after.content
    assert env.stopped is not None


def test_the_async_calls_leave_the_event_loop_free(tau2_wheel: Path) -> None:
    airline = domain("airline", tau2_wheel)
    task = load_tau2_tasks(airline)[0]

    async def run() -> tuple[int, str, str]:
        ticks = 0
        env = await Tau2Environment.acreate(airline, task, fence=new_fence(0.5))

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticker = asyncio.create_task(tick())
        slow = await env.aexecute(SLOW)
        quick = await _environment("airline", tau2_wheel).aexecute(
            Tau2ToolCall("list_all_airports", {})
        )
        ticker.cancel()
        return ticks, slow.outcome, quick.content

    ticks, outcome, quick = asyncio.run(run())
    # A call that held the loop would let no tick through until it ended.
    assert outcome == "stopped" and ticks >= 5
    assert quick.startswith('[{"iata": "SFO"')


def test_setting_up_under_its_time_bound(tau2_wheel: Path) -> None:
    airline = domain("airline", tau2_wheel)
    # A fresh airline database (7 MB) takes far longer than a millisecond to build.
    with pytest.raises(AahError, match="initial state cannot be set .*took longer than 0.001 s"):
        Tau2Environment.create(airline, load_tau2_tasks(airline)[0], setup_seconds=0.001)
    assert tau2_code(tau2_wheel) is airline.code
