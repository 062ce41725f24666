"""Generated hostile tool calls against every τ² domain, through the fence: always text, never raised."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tau2_data import domain

from aah.benchmark.tau2 import (
    Tau2Environment,
    Tau2ToolCall,
    Tau2ToolResult,
    grade_simulation,
    load_tau2_tasks,
)
from aah.benchmark.tau2.messages import Tau2AgentMessage, Tau2Message, Tau2UserMessage

SIDES = [("airline", "assistant"), ("retail", "assistant"), ("telecom", "assistant"),
         ("telecom", "user"), ("mock", "assistant")]  # fmt: skip


def _nested(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = {"x": [value]}
    return value


unicode_text = st.text(
    alphabet=st.characters(codec=None, blacklist_categories=()), max_size=40
) | st.sampled_from(["\ud800", "a\udfffb", "\x00", "\u202e\u2066", "é" * 300, "🙂" * 50, ""])
numbers = st.one_of(
    st.integers(min_value=-(10**20), max_value=10**20),
    st.sampled_from([2**63, -1, 0]),
    # Integers past Python's 4,300 printable digits (built by a map: Hypothesis cannot print them).
    st.sampled_from([4299, 4300, 5000]).map(lambda digits: 10**digits),
    st.floats(allow_nan=True, allow_infinity=True),
)
leaves = st.one_of(st.none(), st.booleans(), numbers, unicode_text)
values = st.one_of(
    leaves,
    st.recursive(
        leaves,
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(unicode_text, inner, max_size=4)
        ),
        max_leaves=12,
    ),
    st.integers(min_value=90, max_value=160).map(_nested),
)


@st.composite
def calls(
    draw: st.DrawFn, names: list[str], parameters: dict[str, list[str]]
) -> tuple[str, dict[str, Any]]:
    name = draw(st.sampled_from(names) | unicode_text)
    known = parameters.get(name, [])
    keys = draw(
        st.lists(st.sampled_from(known) if known else unicode_text, max_size=5)
        | st.lists(unicode_text, max_size=3)
    )
    return name, {key: draw(values) for key in keys}


@pytest.mark.parametrize(("name", "side"), SIDES)
def test_generated_calls_are_always_text(tau2_wheel: Path, name: str, side: str) -> None:
    loaded = domain(name, tau2_wheel)
    task = load_tau2_tasks(loaded)[0]
    env = Tau2Environment.create(loaded, task)
    specs = loaded.user_tools if side == "user" else loaded.agent_tools
    parameters = {
        spec["function"]["name"]: list(spec["function"]["parameters"].get("properties", {}))
        for spec in specs
    }
    names = sorted(parameters)
    played: list[Tau2Message] = []

    @settings(
        max_examples=40,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(call=calls(names, parameters))
    def check(call: tuple[str, dict[str, Any]]) -> None:
        tool, arguments = call
        request = Tau2ToolCall(tool, arguments, f"c{len(played)}", side)  # type: ignore[arg-type]
        result = env.execute(request)
        assert isinstance(result, Tau2ToolResult) and isinstance(result.content, str)
        result.text.encode("utf-8")  # always printable
        assert (result.call_id, result.requestor) == (request.id, side)
        assert result.outcome in ("ran", "refused", "stopped") and isinstance(result.error, bool)
        if result.outcome == "refused":
            assert result.error and result.content.startswith("Error: not run: ")
        sender = Tau2UserMessage if side == "user" else Tau2AgentMessage
        played.extend([sender(calls=(request,)), result])

    check()
    assert played and env.stopped is None
    # τ²'s evaluator replays all of it (refused calls left out) and grades without raising.
    grade = grade_simulation(loaded, task, [*env.history, *played], "user_stop")
    assert grade.tau2_reward in (0.0, 1.0) and all("\n" not in line for line in grade.failures)
    assert not any(math.isnan(value) for value in grade.components.values())


# What τ²'s calculate lets through its character check: digits, + - * / ( ) . and spaces.
expressions = st.text(alphabet="0123456789+-*/(). ", max_size=60) | st.builds(
    lambda parts: "**".join(parts),
    st.lists(st.sampled_from(["9", "99", "(2)", "-3", "10"]), min_size=2, max_size=5),
)


def test_generated_expressions_never_hold_the_interpreter(tau2_wheel: Path) -> None:
    loaded = domain("retail", tau2_wheel)
    env = Tau2Environment.create(loaded, load_tau2_tasks(loaded)[0])

    @settings(max_examples=150, deadline=2000, derandomize=True)
    @given(expression=expressions)
    def check(expression: str) -> None:
        result = env.execute(Tau2ToolCall("calculate", {"expression": expression}))
        assert result.outcome in ("ran", "refused") and isinstance(result.content, str)

    check()
    assert env.stopped is None
