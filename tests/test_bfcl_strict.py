"""BFCL's exact rules where they are easy to get wrong, and a prompt-mode tuple end to end.

The rules (explicit ``""``, ints in float lists, nested values, tuples) are
those of the official ``ast_checker``; ``tests/test_bfcl_checker.py`` holds
aah to its verdicts on a corpus, these cases name each rule.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from runtime_support import fake_config

from aah.benchmark import RunOptions
from aah.benchmark.bfcl import (
    CATEGORIES,
    BfclRunner,
    BfclTask,
    Call,
    bfcl_run_scores,
    check_calls,
    load_bfcl,
    score_bfcl_run,
)
from aah.benchmark.bfcl.tasks import tuple_parameters
from aah.benchmark.when2call import function_tool
from aah.store import SessionStore
from aah.testing.fake_llm import FakeLLMServer

DISTANCE = {
    "name": "geo.distance",
    "description": "Distance between two points.",
    "parameters": {
        "type": "dict",
        "properties": {
            "start": {"type": "tuple", "items": {"type": "float"}},
            "stops": {"type": "array", "items": {"type": "float"}},
            "limits": {"type": "array", "items": {"type": "float"}},
            "rounds": {"type": "integer"},
            "fast": {"type": "boolean"},
            "unit": {"type": "string"},
            "filters": {"type": "dict", "properties": {}},
            "legs": {"type": "array", "items": {"type": "dict"}},
        },
        "required": ["start", "stops"],
    },
}
ANSWER = {
    "geo.distance": {
        "start": [[33.5, -112.0]],
        "stops": [[1.0, 2.0]],
        "limits": [[-1.0, 2.0], ""],
        "rounds": ["", 3],
        "fast": [True, ""],
        "unit": ["km", ""],
        "filters": [{"tags": [["Park", "Lake"]], "level": [2.5], "note": ["", "x"]}, ""],
        "legs": [[{"mode": ["walk"], "slow": [False]}], ""],
    }
}
RIGHT: dict[str, Any] = {"start": [33.5, -112.0], "stops": [1.0, 2.0]}


def distance_task(category: str = "simple_python") -> BfclTask:
    return BfclTask(
        id="x",
        category=category,
        messages=({"role": "user", "content": "q"},),  # type: ignore[arg-type]
        functions=(function_tool(DISTANCE, "test"),),
        ground_truth=(ANSWER,),  # type: ignore[arg-type]
        declared_types=tuple_parameters([DISTANCE]),
    )


CASES = [
    ("right", RIGHT, True),
    ("a tuple for a tuple parameter", {**RIGHT, "start": (33.5, -112.0)}, True),
    ("a tuple for an array parameter", {**RIGHT, "stops": (1.0, 2.0)}, False),
    ("an int for a float at the top", {**RIGHT, "start": [33.5, -112]}, False),
    ("ints in a required float list", {**RIGHT, "stops": [1, 2]}, False),
    ("ints in an optional float list", {**RIGHT, "limits": [-1, 2]}, True),
    ('"" for an optional integer', {**RIGHT, "rounds": ""}, False),
    ('"" for an optional boolean', {**RIGHT, "fast": ""}, False),
    ('"" for an optional float list', {**RIGHT, "limits": ""}, False),
    ('"" for an optional object', {**RIGHT, "filters": ""}, False),
    ('"" for an optional string', {**RIGHT, "unit": ""}, True),
    ("null for an optional integer", {**RIGHT, "rounds": None}, False),
    (
        "an object's string list compared exactly",
        {**RIGHT, "filters": {"tags": ["park", "lake"], "level": 2.5}},
        False,
    ),
    (
        "an object's own list as given",
        {**RIGHT, "filters": {"tags": ["Park", "Lake"], "level": 2.5}},
        True,
    ),
    ("an int for an object's float", {**RIGHT, "filters": {"tags": ["Park", "Lake"], "level": 2}}, False),
    (
        '"" for an object key that may be left out',
        {**RIGHT, "filters": {"tags": ["Park", "Lake"], "level": 2.5, "note": ""}},
        True,
    ),
    (
        "a tuple inside an object",
        {**RIGHT, "filters": {"tags": ("Park", "Lake"), "level": 2.5}},
        False,
    ),
    ("a list of objects", {**RIGHT, "legs": [{"mode": "WALK", "slow": False}]}, True),
    ("0 for false in a list of objects", {**RIGHT, "legs": [{"mode": "walk", "slow": 0}]}, False),
]  # fmt: skip


@pytest.mark.parametrize(("arguments", "ok"), [(a, ok) for _, a, ok in CASES],
                         ids=[name for name, _, _ in CASES])  # fmt: skip
def test_the_exact_rules(arguments: dict[str, Any], ok: bool) -> None:
    assert check_calls(distance_task(), [Call("geo.distance", arguments)]).ok is ok


def test_a_word_answer_takes_an_explicit_empty_string_for_a_number() -> None:
    answer = {"geo.distance": {**ANSWER["geo.distance"], "rounds": ["dontcare", ""]}}
    task = distance_task().model_copy(update={"ground_truth": (answer,)})
    assert check_calls(task, [Call("geo.distance", {**RIGHT, "rounds": ""})]).ok
    assert not check_calls(task, [Call("geo.distance", {**RIGHT, "rounds": "DontCare"})]).ok


def test_without_its_declared_type_a_tuple_parameter_takes_no_tuple() -> None:
    task = distance_task().model_copy(update={"declared_types": {}})
    assert not check_calls(task, [Call("geo.distance", {**RIGHT, "start": (33.5, -112.0)})]).ok


def test_tuple_parameters_reads_bfcl_schemas() -> None:
    assert tuple_parameters([DISTANCE, {"name": 3}, "x"]) == {
        "geo.distance": {"start": ("tuple", "float")}
    }


# -- prompt mode, end to end through a fake OpenAI-compatible server -----------------

ITEMS = [
    ("simple_python_0", "Distance (case tuple)"),
    ("simple_python_1", "Distance (case tuple for array)"),
]
REPLIES = {
    "(case tuple)": "[geo.distance(start=(33.5, -112.0), stops=[1.0, 2.0])]",
    "(case tuple for array)": "[geo.distance(start=[33.5, -112.0], stops=(1.0, 2.0))]",
}


def write_items(folder: Path) -> Path:
    (folder / "possible_answer").mkdir(parents=True)
    items = [
        {"id": i, "question": [[{"role": "user", "content": q}]], "function": [DISTANCE]}
        for i, q in ITEMS
    ]
    answers = [{"id": i, "ground_truth": [ANSWER]} for i, _ in ITEMS]
    name = "BFCL_v4_simple_python.json"
    (folder / name).write_text("\n".join(json.dumps(x) for x in items) + "\n")
    (folder / "possible_answer" / name).write_text("\n".join(json.dumps(a) for a in answers))
    return folder


def test_a_prompt_mode_tuple_reaches_the_checker_as_a_tuple(tmp_path: Path) -> None:
    tasks = [
        task.model_copy(update={"declared_types": tuple_parameters([DISTANCE])})
        for task in load_bfcl(write_items(tmp_path / "bfcl"), ["simple_python"])
    ]
    script = {
        "rules": [{"when": {"last_message_contains": k}, "reply": v} for k, v in REPLIES.items()]
    }
    db = tmp_path / "b.db"
    with FakeLLMServer(script) as llm:
        runner = BfclRunner(
            RunOptions(run="b", aah=False, concurrency=2, tool_mode="prompt"), fake_config(llm)
        )
        asyncio.run(runner.run(tasks, db, categories=CATEGORIES, data_source="test"))
        assert all("tools" not in request for request in llm.requests)
    with SessionStore(db) as store:
        score_bfcl_run(store, "b", tasks)
        votes = {
            grade.votes[0]["id"]: grade.votes[0]
            for session in store.list_sessions(run="b")
            for grade in store.grades(session.id)
        }
        (scores,) = bfcl_run_scores(store, "b", "fake-model")
    assert votes["simple_python_0"]["ast"] is True
    assert votes["simple_python_1"]["ast"] is False
    assert "stops: wrong type tuple" in votes["simple_python_1"]["reason"]
    assert (scores.figures["ast"].k, scores.figures["ast"].n) == (1, 2)
