"""The AST checker against the official ``bfcl-eval`` checker's verdicts, and its rules one by one.

``tests/fixtures/bfcl_checker_corpus.jsonl`` holds model outputs of many kinds
for real BFCL items with the official checker's verdict on each, written by
``scripts/bfcl_checker_corpus.py`` from ``bfcl-eval==2026.3.23`` in a venv of
its own: the official checker is never a dependency of aah's tests. Rows of
the kinds where aah keeps its own reading (``DOCUMENTED`` in the script,
docs/researchers/bfcl.md) are marked ``documented`` and counted apart.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from aah.benchmark.bfcl import (
    AST_CATEGORIES,
    BfclTask,
    Call,
    Turn,
    bfcl_source,
    called_intent,
    called_standard,
    check_calls,
    load_bfcl,
    normalise,
)
from aah.benchmark.when2call import function_tool

CORPUS = Path(__file__).parent / "fixtures" / "bfcl_checker_corpus.jsonl"
SCRIPT = Path(__file__).parents[1] / "scripts" / "bfcl_checker_corpus.py"
TUPLE = "__tuple__"
# Rows of the documented kinds in the corpus: aah's reading, not BFCL's.
DOCUMENTED_ROWS = 55


def decoded(value: Any) -> Any:
    """A corpus value with its tuples (written ``{"__tuple__": [...]}``) back."""
    if isinstance(value, dict):
        if set(value) == {TUPLE}:
            return tuple(decoded(v) for v in value[TUPLE])
        return {k: decoded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decoded(v) for v in value]
    return value


def calls_of(record: dict[str, Any]) -> list[Call]:
    return [Call(name, args) for call in decoded(record["calls"]) for name, args in call.items()]


@pytest.fixture(scope="module")
def items(shared_data: Path) -> dict[str, BfclTask]:
    folder = shared_data / "bfcl"
    return {t.id: t for t in load_bfcl(bfcl_source(folder), AST_CATEGORIES)}


def test_the_checker_agrees_with_the_official_one_on_the_whole_corpus(
    items: dict[str, BfclTask],
) -> None:
    records = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    kinds = Counter(record["kind"] for record in records)
    assert len(records) > 9000 and len(kinds) >= 250
    assert {record["category"] for record in records} == set(AST_CATEGORIES)
    assert {True, False} == {record["official"] for record in records}
    verdicts = [check_calls(items[r["id"]], calls_of(r)).ok for r in records]
    differ = [
        (record["id"], record["kind"], record["official"])
        for record, ok in zip(records, verdicts, strict=True)
        if ok != record["official"] and not record.get("documented")
    ]
    assert differ == []
    documented = [
        (record["kind"], ok != record["official"])
        for record, ok in zip(records, verdicts, strict=True)
        if record.get("documented")
    ]
    # Each documented row is one where aah keeps its own reading.
    assert len(documented) == DOCUMENTED_ROWS and all(differs for _, differs in documented)


@pytest.mark.skipif(
    importlib.util.find_spec("bfcl_eval") is None,
    reason="bfcl-eval is not installed here (it is no dependency of aah): install "
    "bfcl-eval==2026.3.23 with --no-deps into this venv to compare with it live",
)
def test_a_fresh_corpus_agrees_with_the_installed_official_checker(
    shared_data: Path, items: dict[str, BfclTask], tmp_path: Path
) -> None:
    out = tmp_path / "fresh.jsonl"
    subprocess.run(
        [sys.executable, str(SCRIPT), str(shared_data / "bfcl"), str(out), "--seed", "5"],
        check=True,
        timeout=600,
    )
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    differ = [
        r["id"]
        for r in records
        if check_calls(items[r["id"]], calls_of(r)).ok != r["official"] and not r.get("documented")
    ]
    assert differ == []


# -- the rules, each on an item of its own ---------------------------------------------

SCHEMA = {
    "name": "trip.plan",
    "description": "Plan a trip.",
    "parameters": {
        "type": "dict",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer"},
            "budget": {"type": "float"},
            "stops": {"type": "array", "items": {"type": "string"}},
            "options": {"type": "dict", "properties": {"rail": {"type": "boolean"}}},
            "note": {"type": "any"},
        },
        "required": ["city", "days"],
    },
}
ANSWER = {
    "trip.plan": {
        "city": ["New York", "NYC"],
        "days": [3],
        "budget": [1500.0, ""],
        "stops": [["Boston", "Philadelphia"], ""],
        "options": [{"rail": [True]}, ""],
        "note": ["", "quick"],
    }
}


def task(category: str = "simple_python", answer: list[Any] | None = None) -> BfclTask:
    return BfclTask(
        id="x",
        category=category,
        messages=({"role": "user", "content": "q"},),  # type: ignore[arg-type]
        functions=(function_tool(SCHEMA, "test"),),
        ground_truth=tuple(answer or [ANSWER]),
    )


RIGHT = {"city": "New York", "days": 3}
CASES = [
    ("minimal", RIGHT, True),
    ("strings ignore case and punctuation", {**RIGHT, "city": "new-york."}, True),
    ("another acceptable value", {**RIGHT, "city": "nyc"}, True),
    ("an int for a float", {**RIGHT, "budget": 1500}, True),
    ("a float for an int", {**RIGHT, "days": 3.0}, False),
    ("a bool for an int", {**RIGHT, "days": True}, False),
    ("a string for an int", {**RIGHT, "days": "3"}, False),
    ("missing required", {"city": "New York"}, False),
    ("argument outside the schema", {**RIGHT, "hotel": "Ritz"}, False),
    ("wrong value", {**RIGHT, "city": "Boston"}, False),
    ("list in order", {**RIGHT, "stops": ["boston", "Philadelphia"]}, True),
    ("list out of order", {**RIGHT, "stops": ["Philadelphia", "Boston"]}, False),
    ("list items typed", {**RIGHT, "stops": [1, 2]}, False),
    ("nested object", {**RIGHT, "options": {"rail": True}}, True),
    ("nested object wrong", {**RIGHT, "options": {"rail": False}}, False),
    ("nested object extra key", {**RIGHT, "options": {"rail": True, "bus": 1}}, False),
    ("any takes a string", {**RIGHT, "note": "Quick"}, True),
    ("any takes no number", {**RIGHT, "note": 5}, False),
    ('"" is no float', {**RIGHT, "budget": ""}, False),
    ('"" is no list', {**RIGHT, "stops": ""}, False),
    ('"" is no object', {**RIGHT, "options": ""}, False),
    ('"" is a string where the answer allows it', {**RIGHT, "note": ""}, True),
    ("null where the answer does not list it", {**RIGHT, "budget": None}, False),
    ("a tuple is no array", {**RIGHT, "stops": ("Boston", "Philadelphia")}, False),
    ("an optional list may be empty", {**RIGHT, "stops": []}, True),
    ("list items compared exactly past the top", {**RIGHT, "options": {"rail": 1}}, False),
]


@pytest.mark.parametrize(("arguments", "ok"), [(a, ok) for _, a, ok in CASES],
                         ids=[name for name, _, _ in CASES])  # fmt: skip
def test_one_call_rules(arguments: dict[str, Any], ok: bool) -> None:
    assert check_calls(task(), [Call("trip.plan", arguments)]).ok is ok


def test_names_and_counts() -> None:
    assert not check_calls(task(), [Call("trip_plan", RIGHT)]).ok
    assert not check_calls(task(), []).ok
    assert not check_calls(task(), [Call("trip.plan", RIGHT)] * 2).ok


def test_parallel_calls_match_in_any_order_but_each_once() -> None:
    two = [
        {"trip.plan": {"city": ["Paris"], "days": [2]}},
        {"trip.plan": {"city": ["Rome"], "days": [4]}},
    ]
    parallel = task("parallel", two)
    rome, paris = (
        Call("trip.plan", {"city": "Rome", "days": 4}),
        Call("trip.plan", {"city": "Paris", "days": 2}),
    )
    assert check_calls(parallel, [rome, paris]).ok
    assert not check_calls(parallel, [rome, rome]).ok
    assert not check_calls(parallel, [rome]).ok


def test_strings_normalise_as_bfcl_documents() -> None:
    assert normalise("April 1, 2024") == normalise("april 1 2024") == "april12024"
    assert normalise("it's") == normalise('it"s')


# -- the two readings of a reply without parsed calls ---------------------------------

NAMES = ["get_weather", "math-factorial"]
ATTEMPTS = [
    '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"</tool_call>',
    '{"name": "get_weather", "arguments": {"city": "Paris"',
    'Sure: {"name": "get_weather", "arguments": {city: Paris}}',
    "[get_weather(city='Paris'), get_weather(city=",
    "get_weather(city='Paris'",
    "I will call get_weather(city='Paris') for you now.",
    '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"',
    '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"',
    "<think>maybe a call</think>get_weather('Paris')",
]
NOT_ATTEMPTS = [
    "I'm sorry, none of my functions can tell a joke.",
    "Here is the code you asked for:\n```python\nprint(factorial(5))\n```\nRun it locally.",
    "The weather function needs a city; which city do you mean?",
    "<think>I could call get_weather(city='Paris')</think>I cannot help with that.",
    "",
]


@pytest.mark.parametrize("raw", ATTEMPTS)
def test_a_failed_attempt_is_no_call_to_the_standard_reading_and_a_call_by_intent(
    raw: str,
) -> None:
    turn = Turn([], 0, raw, "")
    assert not called_standard(turn)
    assert called_intent(turn, NAMES)


@pytest.mark.parametrize("raw", NOT_ATTEMPTS)
def test_a_reply_without_an_attempt_is_no_call_either_way(raw: str) -> None:
    turn = Turn([], 0, raw, raw)
    assert not called_standard(turn) and not called_intent(turn, NAMES)


def test_parsed_and_malformed_calls() -> None:
    parsed = Turn([Call("get_weather", {"city": "Paris"})], 0, "", "")
    malformed = Turn([], 1, "", "")
    assert called_standard(parsed) and called_intent(parsed, NAMES)
    assert not called_standard(malformed) and called_intent(malformed, NAMES)
