"""Hostile BFCL calls (texts and arguments) through the fence: always text back, never a raise.

``tests/fixtures/hostile/bfcl_calls.jsonl`` holds the concrete cases, each
with why it is there: a call text (read as aah reads BFCL's call texts), or
a function name with JSON arguments, or arguments nested ``nest`` levels;
the result must hold ``expect``, come within the bound, and leave the
process's ``mpmath`` and ``decimal`` precision as they were. Hypothesis then
writes many more (huge integers, floats, NaN, nested values, any Unicode,
wrong types, unknown and forbidden names).
"""

from __future__ import annotations

import decimal
import json
import sys
import time
from pathlib import Path
from typing import Any

import mpmath
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aah.benchmark.bfcl.environments import FORBIDDEN_NAMES, BfclEnvironment, bfcl_fence
from aah.benchmark.bfcl.multi_turn_check import parse_call_text
from aah.benchmark.bfcl.wheel import CLASS_MODULES, api_classes
from aah.errors import AahError

CORPUS = Path(__file__).parent / "fixtures" / "hostile" / "bfcl_calls.jsonl"
FILES = {
    "root": {
        "alex": {
            "type": "directory",
            "contents": {"notes.txt": {"type": "file", "content": "b\na\nc"}},
        }
    }
}
# The bound the generated calls run under: none of them may come near it.
SECONDS = 5.0


@pytest.fixture(scope="module")
def classes(bfcl_wheel: Path) -> Any:
    return api_classes(bfcl_wheel)


def every_api(classes: Any, seconds: float = SECONDS) -> BfclEnvironment:
    """All eight of BFCL's APIs in one environment, as an entry of all of them would have."""
    return BfclEnvironment(
        list(CLASS_MODULES),
        {"GorillaFileSystem": FILES},
        classes=classes,
        fence=bfcl_fence(seconds),
    )


def process_state() -> tuple[int, int, int]:
    return mpmath.mp.dps, decimal.getcontext().prec, sys.getrecursionlimit()


def test_every_hostile_call_in_the_corpus_comes_back_as_text(classes: Any) -> None:
    cases = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    assert len(cases) >= 20 and all(case["why"] for case in cases)
    before = process_state()
    for case in cases:
        seconds = case.get("seconds", SECONDS)
        env = every_api(classes, seconds)
        if "call" in case:
            call = parse_call_text(case["call"], env.parameter_names())
            name, arguments = call.name, dict(call.arguments)
        else:
            name = case["name"]
            arguments = json.loads(case["arguments_json"]) if "arguments_json" in case else {}
            if "nest" in case:
                nested: Any = [1.5]
                for _ in range(case["nest"]):
                    nested = [nested]
                arguments = {"numbers": nested}
        started = time.monotonic()
        text = env.execute(name, arguments)
        took = time.monotonic() - started
        assert isinstance(text, str), case["why"]
        assert case["expect"] in text, (case["why"], text[:300])
        assert took < seconds + 1.5, (case["why"], took)
        assert process_state() == before, case["why"]


# -- generated -----------------------------------------------------------------

# Integers of 2,000 to 7,200 digits (Python prints 4,300 at most), and of a few dozen.
HUGE_INTEGERS = st.integers(min_value=7_000, max_value=24_000).map(lambda bits: (1 << bits) - 1)
BIG_INTEGERS = st.integers(min_value=60, max_value=400).map(lambda bits: (1 << bits) + 1)
NUMBERS = st.one_of(
    st.integers(),
    st.integers(min_value=-(10**12), max_value=10**12),
    HUGE_INTEGERS,
    HUGE_INTEGERS.map(lambda n: -n),
    BIG_INTEGERS,
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
)
LEAVES = st.one_of(st.none(), NUMBERS, st.text(max_size=40), st.text(st.characters(), max_size=8))
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(max_size=8), inner, max_size=4),
        st.tuples(inner, inner),
    ),
    max_leaves=12,
)


def deep(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = {"x": [value]}
    return value


NAMES = st.one_of(
    st.sampled_from(sorted(set(CLASS_MODULES) | FORBIDDEN_NAMES)),
    st.sampled_from(
        [
            "power",
            "logarithm",
            "square_root",
            "round_number",
            "multiply",
            "mean",
            "cd",
            "echo",
            "tail",
            "place_order",
            "book_flight",
            "compute_exchange_rate",
            "send_message",
            "post_tweet",
            "create_ticket",
            "set_navigation",
            "os.kill",
        ]
    ),
    st.text(min_size=1, max_size=20),
)
PARAMETERS = st.sampled_from(
    [
        "base",
        "exponent",
        "value",
        "precision",
        "number",
        "decimal_places",
        "numbers",
        "a",
        "b",
        "folder",
        "content",
        "file_name",
        "lines",
        "amount",
        "price",
    ]
)


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_generated_arguments_always_come_back_as_text(classes: Any, data: st.DataObject) -> None:
    env = every_api(classes)
    math = sorted(set(vars(classes["MathAPI"])) & env.method_names())
    every = sorted(env.method_names())
    name = data.draw(st.one_of(st.sampled_from(math), st.sampled_from(every), NAMES), "name")
    parameters = env.parameter_names().get(name) or ("x",)
    keys = st.one_of(st.sampled_from(parameters), PARAMETERS, st.text(max_size=6))
    value = st.one_of(NUMBERS, VALUES, st.integers(min_value=100, max_value=300).map(deep))
    arguments = data.draw(
        st.dictionaries(keys, value, min_size=min(len(parameters), 2), max_size=4), "arguments"
    )
    before = process_state()
    started = time.monotonic()
    text = env.execute(name, arguments)
    assert isinstance(text, str)
    assert time.monotonic() - started < SECONDS
    assert "took longer than" not in text
    assert process_state() == before


@st.composite
def call_texts(draw: st.DrawFn) -> str:
    """A call as a model writes one in text: a name, then literal arguments (or junk)."""
    name = draw(NAMES)
    arguments = draw(st.dictionaries(PARAMETERS, VALUES, max_size=3))
    written = [f"{key}={literal(value)}" for key, value in arguments.items()]
    tail = draw(st.sampled_from(["", "", ")", ", **x", "; import os", "(1)"]))
    return f"{name}({', '.join(written)}){tail}"


def literal(value: Any) -> str:
    """``value`` as Python source (NaN and infinity as the names a model would write)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return hex(value) if value.bit_length() > 4000 else repr(value)  # long decimals don't parse
    if isinstance(value, list):
        return f"[{', '.join(literal(item) for item in value)}]"
    if isinstance(value, tuple):
        return f"({''.join(literal(item) + ', ' for item in value)})"
    if isinstance(value, dict):
        return f"{{{', '.join(f'{literal(k)}: {literal(v)}' for k, v in value.items())}}}"
    return repr(value)


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(text=st.one_of(call_texts(), st.text(max_size=60)))
def test_generated_call_texts_are_refused_in_one_line_or_come_back_as_text(
    classes: Any, text: str
) -> None:
    env = every_api(classes)
    before = process_state()
    try:
        call = parse_call_text(text, env.parameter_names())
    except AahError as refused:
        assert "\n" not in str(refused)
        return
    started = time.monotonic()
    result = env.execute(call.name, dict(call.arguments))
    assert isinstance(result, str)
    assert time.monotonic() - started < SECONDS
    assert process_state() == before
