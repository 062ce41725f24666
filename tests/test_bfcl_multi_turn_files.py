"""Multi-turn BFCL files read as input from outside: every malformed entry is one line.

A corpus of bad entries and possible answers, each written beside a copy of
the real function docs; the loader names the file and line and says what to do.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from aah.benchmark.bfcl import load_multi_turn
from aah.benchmark.bfcl.multi_turn_tasks import ADDED_FUNCTIONS_MESSAGE
from aah.errors import AahError

CATEGORY = "multi_turn_miss_func"


def entry(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": f"{CATEGORY}_0",
        "question": [
            [{"role": "user", "content": "Go to the document folder."}],
            [],
            [{"role": "user", "content": "Sort the report."}],
        ],
        "initial_config": {
            "GorillaFileSystem": {"root": {"w": {"type": "directory", "contents": {}}}}
        },
        "involved_classes": ["GorillaFileSystem"],
        "missed_function": {"1": ["sort"]},
        "excluded_function": ["rm"],
    }
    return base | changes


def answer(**changes: Any) -> dict[str, Any]:
    return {
        "id": f"{CATEGORY}_0",
        "ground_truth": [["cd(folder='document')"], [], ["sort(file_name='r')"]],
    } | changes


def write(folder: Path, shared: Path, entries: list[Any], answers: list[Any] | None) -> Path:
    (folder / "possible_answer").mkdir(parents=True, exist_ok=True)
    shutil.copytree(shared / "bfcl" / "multi_turn_func_doc", folder / "multi_turn_func_doc")
    lines = [e if isinstance(e, str) else json.dumps(e) for e in entries]
    (folder / f"BFCL_v4_{CATEGORY}.json").write_text("\n".join(lines) + "\n")
    if answers is not None:
        text = "\n".join(a if isinstance(a, str) else json.dumps(a) for a in answers)
        (folder / "possible_answer" / f"BFCL_v4_{CATEGORY}.json").write_text(text + "\n")
    return folder


def test_a_good_entry_withholds_and_excludes_its_functions(
    shared_data: Path, tmp_path: Path
) -> None:
    folder = write(tmp_path / "bfcl", shared_data, [entry()], [answer()])
    (task,) = load_multi_turn(folder, [CATEGORY])
    offered = {tool.name for tool in task.functions}
    assert "sort" not in offered and "rm" not in offered and "cd" in offered
    assert [tool.name for tool in task.added[1]] == ["sort"]
    assert task.turns[1][0].content == ADDED_FUNCTIONS_MESSAGE
    assert {tool.name for tool in task.functions_at(2)} == offered | {"sort"}


BAD_ENTRIES = [
    ("no classes", entry(involved_classes=[]), "involved_classes must name BFCL's APIs"),
    ("unknown class", entry(involved_classes=["Shell"]), "not Shell"),
    ("classes not a list", entry(involved_classes="GorillaFileSystem"), "must be a list"),
    (
        "turns differ",
        entry(question=[[{"role": "user", "content": "x"}]]),
        "as many as ground_truth",
    ),
    ("no question", entry(question=[]), "question must be a list of turns"),
    ("turn not a list", entry(question=["x", [], []]), "turn 0 must be a list of messages"),
    ("message not an object", entry(question=[["hi"], [], []]), "fix the data file"),
    ("empty turn adds nothing", entry(missed_function={}), "turn 1 has no message"),
    ("missed turn 0", entry(missed_function={"0": ["sort"]}), "missed_function names turn '0'"),
    ("missed turn past the end", entry(missed_function={"9": ["sort"]}), "names turn '9'"),
    ("missed turn not a number", entry(missed_function={"x": ["sort"]}), "names turn 'x'"),
    ("missed unknown function", entry(missed_function={"1": ["teleport"]}), "names teleport"),
    ("missed not a map", entry(missed_function=["sort"]), "must map turns to names"),
    ("excluded not names", entry(excluded_function=[1]), "excluded_function must be a list"),
    ("config not an object", entry(initial_config=[1]), "initial_config must be an object"),
]


@pytest.mark.parametrize(("case", "bad", "said"), BAD_ENTRIES, ids=[c[0] for c in BAD_ENTRIES])
def test_a_bad_entry_is_one_line(
    shared_data: Path, tmp_path: Path, case: str, bad: dict[str, Any], said: str
) -> None:
    folder = write(tmp_path / "bfcl", shared_data, [bad], [answer()])
    with pytest.raises(AahError) as error:
        load_multi_turn(folder, [CATEGORY])
    message = str(error.value)
    assert said in message and "\n" not in message
    assert f"BFCL_v4_{CATEGORY}.json:1" in message


BAD_ANSWERS = [
    ("empty", answer(ground_truth=[]), "ground_truth must be a list of turns"),
    ("not a list", answer(ground_truth="cd()"), "ground_truth must be a list of turns"),
    ("a turn not a list", answer(ground_truth=["cd()", [], []]), "each turn of ground_truth"),
    ("a call not text", answer(ground_truth=[[1], [], []]), "each turn of ground_truth"),
    ("an empty call", answer(ground_truth=[[""], [], []]), "each turn of ground_truth"),
    ("a huge call", answer(ground_truth=[["x" * 20_001], [], []]), "each turn of ground_truth"),
    ("too many calls", answer(ground_truth=[["ls()"] * 201, [], []]), "each turn of ground_truth"),
]


@pytest.mark.parametrize(("case", "bad", "said"), BAD_ANSWERS, ids=[c[0] for c in BAD_ANSWERS])
def test_a_bad_possible_answer_is_one_line(
    shared_data: Path, tmp_path: Path, case: str, bad: dict[str, Any], said: str
) -> None:
    folder = write(tmp_path / "bfcl", shared_data, [entry()], [bad])
    with pytest.raises(AahError) as error:
        load_multi_turn(folder, [CATEGORY])
    assert said in str(error.value) and "\n" not in str(error.value)
    assert "possible_answer" in str(error.value)


@pytest.mark.parametrize(
    ("entries", "answers", "said"),
    [
        ([entry(), entry()], [answer()], "repeats"),
        ([entry()], [answer(), answer()], "a second possible answer"),
        ([entry()], [answer(id="other_1")], "no possible answer for"),
        ([entry()], [answer(), answer(id="other_1")], "which"),
        ([entry()], None, "no possible answers at"),
        (["{not json"], [answer()], "fix the data file"),
        ([json.dumps([1])], [answer()], "fix the data file"),
    ],
)
def test_files_that_do_not_match_are_one_line(
    shared_data: Path, tmp_path: Path, entries: list[Any], answers: list[Any] | None, said: str
) -> None:
    folder = write(tmp_path / "bfcl", shared_data, entries, answers)
    with pytest.raises(AahError) as error:
        load_multi_turn(folder, [CATEGORY])
    assert said in str(error.value) and "\n" not in str(error.value)


def test_missing_files_are_one_line(shared_data: Path, tmp_path: Path) -> None:
    folder = write(tmp_path / "bfcl", shared_data, [entry()], [answer()])
    with pytest.raises(
        AahError, match="no BFCL file at .*multi_turn_base.json: run `aah data fetch bfcl`"
    ):
        load_multi_turn(folder, ["multi_turn_base"])
    shutil.rmtree(folder / "multi_turn_func_doc")
    with pytest.raises(AahError, match="no function docs at .*: run `aah data fetch bfcl` again"):
        load_multi_turn(folder, [CATEGORY])
