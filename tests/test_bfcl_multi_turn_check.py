"""The multi-turn checker against the official ``bfcl-eval`` checker's verdicts, and its rules.

``tests/fixtures/bfcl_multi_turn_corpus.jsonl`` holds model runs of many
kinds for real multi-turn entries with the official checker's verdict and
error type on each, written by ``scripts/bfcl_multi_turn_corpus.py`` from
``bfcl-eval==2026.3.23`` in a venv of its own: the official checker is never
a dependency of aah's tests. BFCL's API classes come from the pinned wheel.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from aah.benchmark.bfcl.multi_turn_check import ModelCall, check_multi_turn, parse_call_text
from aah.benchmark.bfcl.multi_turn_tasks import (
    MULTI_TURN_CATEGORIES,
    MultiTurnTask,
    load_multi_turn,
)
from aah.benchmark.bfcl.wheel import api_classes
from aah.errors import AahError

CORPUS = Path(__file__).parent / "fixtures" / "bfcl_multi_turn_corpus.jsonl"
PADDING_RUNS = Path(__file__).parent / "fixtures" / "bfcl_padding_runs.jsonl"
Turns = list[list[list[ModelCall]]]


def turns_of(record: dict[str, Any]) -> Turns:
    return [
        [[ModelCall(name, args) for call in step for name, args in call.items()] for step in turn]
        for turn in record["turns"]
    ]


def truth_turns(task: MultiTurnTask, names: dict[str, tuple[str, ...]]) -> Turns:
    return [[[parse_call_text(text, names) for text in turn]] for turn in task.ground_truth]


@pytest.fixture(scope="module")
def tasks(shared_data: Path) -> dict[str, MultiTurnTask]:
    return {t.id: t for t in load_multi_turn(shared_data / "bfcl", MULTI_TURN_CATEGORIES)}


@pytest.fixture(scope="module")
def classes(bfcl_wheel: Path) -> Any:
    return api_classes(bfcl_wheel)


def test_the_checker_agrees_with_the_official_one_on_the_whole_corpus(
    tasks: dict[str, MultiTurnTask], classes: Any
) -> None:
    records = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    kinds = Counter(record["kind"] for record in records)
    assert len(records) > 5000 and len(kinds) >= 50
    assert {tasks[r["id"]].category for r in records} == set(MULTI_TURN_CATEGORIES)
    assert {r["error"] for r in records} == {
        None,
        "force_terminated",
        "empty_turn_model_response",
        "instance_state_mismatch",
        "execution_response_mismatch",
    }
    differ = []
    stricter = 0
    for record in records:
        task = tasks[record["id"]]
        turns = turns_of(record)
        verdict = check_multi_turn(task, turns, classes=classes)
        if (verdict.passed_official, verdict.official_error) != (
            record["official"],
            record["error"],
        ):
            differ.append((record["id"], record["kind"], record["error"], verdict.official_error))
        # science.md's reading differs only where a call falls on an empty-ground-truth turn
        # (and where a long-context run changes a padding record: tests/fixtures/bfcl_padding_runs).
        called_on_empty = any(
            not truth and any(step for step in turn)
            for truth, turn in zip(task.ground_truth, turns, strict=False)
        )
        if verdict.passed != verdict.passed_official:
            assert called_on_empty and verdict.error == "call_on_empty_turn", record["kind"]
            stricter += 1
    assert differ == []
    assert stricter > 100


def test_bfcls_reading_shares_the_padding_records_as_bfcl_eval_does(
    tasks: dict[str, MultiTurnTask], classes: Any
) -> None:
    # Runs that charge a long-context entry's padding cards, with bfcl-eval's own verdicts
    # (scripts/bfcl_padding_runs.py). Before, aah's passed_official failed the extra charges.
    records = [json.loads(line) for line in PADDING_RUNS.read_text(encoding="utf-8").splitlines()]
    assert {r["kind"] for r in records} >= {"extra_charge_to_padding_card", "right"}
    for record in records:
        verdict = check_multi_turn(tasks[record["id"]], turns_of(record), classes=classes)
        assert (verdict.passed_official, verdict.official_error) == (
            record["official"],
            record["error"],
        ), record["kind"]
        if record["kind"] == "extra_charge_to_padding_card":
            # aah's own reading sees the charge: its instances share nothing.
            assert verdict.passed is False and verdict.error == "instance_state_mismatch"
            assert "TravelAPI.credit_card_list" in verdict.reason
        else:
            assert verdict.passed is verdict.passed_official


@pytest.fixture(scope="module")
def entry(tasks: dict[str, MultiTurnTask]) -> MultiTurnTask:
    # Turn 0 finds files, turn 1 is empty (the folder's name is missing), turn 2 copies.
    return tasks["multi_turn_miss_param_3"]


def test_a_right_run_passes_and_says_so(
    entry: MultiTurnTask, classes: Any, tasks: dict[str, MultiTurnTask]
) -> None:
    names = {"find": ("path", "name")}
    right = [
        [[ModelCall("find", {"path": ".", "name": "test"})]],
        [],
        [[], [parse_call_text(t, names) for t in entry.ground_truth[2]]],
    ]
    verdict = check_multi_turn(entry, right, classes=classes)
    assert (verdict.passed, verdict.passed_official, verdict.failed_turn) == (True, True, None)
    assert verdict.reason == "all 3 turns pass"
    assert [(t.passed, t.truth_empty, t.calls) for t in verdict.turns] == [
        (True, False, 1),
        (True, True, 0),
        (True, False, 4),
    ]


def test_a_call_on_an_empty_turn_fails_only_aahs_reading(
    entry: MultiTurnTask, classes: Any
) -> None:
    turns = truth_turns(entry, {})
    turns[1] = [[ModelCall("pwd", {})]]
    verdict = check_multi_turn(entry, turns, classes=classes)
    assert (verdict.passed, verdict.passed_official) == (False, True)
    assert (verdict.failed_turn, verdict.error, verdict.official_error) == (
        1,
        "call_on_empty_turn",
        None,
    )
    assert verdict.reason.startswith("turn 2: 1 call(s) on a turn the model cannot do")


def test_each_failure_is_named(entry: MultiTurnTask, classes: Any) -> None:
    right = truth_turns(entry, {})
    no_call = [right[0], [], []]
    verdict = check_multi_turn(entry, no_call, classes=classes)
    assert (verdict.failed_turn, verdict.error) == (2, "empty_turn_model_response")
    # Copying one file to the wrong folder: the state differs, shown short.
    wrong = [
        right[0],
        [],
        [[*right[2][0][:3], ModelCall("cp", {"source": "x", "destination": "y"})]],
    ]
    verdict = check_multi_turn(entry, wrong, classes=classes)
    assert verdict.error == verdict.official_error == "instance_state_mismatch"
    assert verdict.reason == (
        "turn 3: the state differs from the ground truth's in GorillaFileSystem.root"
    )
    shown = verdict.turns[2].differences["GorillaFileSystem"]["root"]
    assert set(shown) == {"model", "ground_truth"} and len(shown["model"]) <= 200
    # Another read in place of the ground truth's: the state is right, its result is missing.
    read_late = [[[ModelCall("pwd", {})]], [], right[2]]
    verdict = check_multi_turn(entry, read_late, classes=classes)
    assert verdict.error == "execution_response_mismatch" and verdict.failed_turn == 0
    assert verdict.turns[0].missing and verdict.turns[0].missing[0].startswith('{"matches"')
    stopped = check_multi_turn(entry, right[:2], classes=classes)
    assert (stopped.passed, stopped.failed_turn, stopped.error) == (False, 2, "force_terminated")
    assert stopped.official_error == "force_terminated" and len(stopped.turns) == 2
    assert stopped.reason == "the run stopped after 2 of 3 turns"


class Counter_:
    """A stand-in API: ``read`` answers the same each time, ``add`` changes the state."""

    def _load_scenario(self, config: dict[str, Any], long_context: bool = False) -> None:
        self.total = config.get("total", 0)

    def read(self) -> str:
        return "same"

    def add(self, n: int) -> dict[str, int]:
        self.total += n
        return {"total": self.total}


def test_results_count_with_repeats_over_all_turns_so_far() -> None:
    task = SimpleNamespace(
        involved_classes=("Counter",),
        initial_config={"Counter": {"total": 1}},
        long_context=False,
        ground_truth=(("add(n=2)",), ("read()", "read()")),
    )
    classes = {"Counter": Counter_}
    add, read = ModelCall("add", {"n": 2}), ModelCall("read")
    once = check_multi_turn(task, [[[add]], [[read]]], classes=classes)
    assert (once.error, once.turns[1].missing) == ("execution_response_mismatch", ("same",))
    twice = check_multi_turn(task, [[[add]], [[read], [read]]], classes=classes)
    assert twice.passed
    earlier = check_multi_turn(task, [[[read, add]], [[read]]], classes=classes)
    assert earlier.passed
    wrong = check_multi_turn(
        task, [[[ModelCall("add", {"n": 3})]], [[read, read]]], classes=classes
    )
    assert wrong.error == "instance_state_mismatch" and not wrong.turns[0].passed
    assert wrong.turns[0].differences == {"Counter": {"total": {"model": "4", "ground_truth": "3"}}}
    assert wrong.turns[1].error == "instance_state_mismatch"  # the state stays wrong


def test_call_text_is_read_never_run() -> None:
    assert parse_call_text("cd(folder='document')") == ModelCall("cd", {"folder": "document"})
    assert parse_call_text("mean([1, -2.5])", {"mean": ["numbers"]}) == ModelCall(
        "mean", {"numbers": [1, -2.5]}
    )
    assert parse_call_text(" post(a={'k': (1, None)}, b=True) ") == ModelCall(
        "post", {"a": {"k": (1, None)}, "b": True}
    )
    bad = [
        ("cd(folder=__import__('os').system('touch /tmp/x'))", "not a literal"),
        ("cd('docs')", "positional"),
        ("cd(**{'folder': 'x'})", "unpacks"),
        ("cd(folder='a', folder='b')", "not Python|twice"),
        ("cd", "not a call"),
        ("(lambda: 1)()", "does not name"),
        ("cd(", "not Python"),
    ]
    for text, problem in bad:
        with pytest.raises(AahError, match=problem) as error:
            parse_call_text(text)
        assert "\n" not in str(error.value)
