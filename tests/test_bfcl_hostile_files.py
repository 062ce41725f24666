"""BFCL files and model outputs as hostile input: one-line refusals, failed checks, no crash.

Each corpus holds shapes an attacker (or a broken download) may bring: lines
past the cap, JSON nested past the one nesting limit, ids missing or repeated,
possible answers of every wrong shape, functions that are not functions. The
loader refuses each in one line that names the file and the line; the checker
turns each malformed answer or call into a failed check with a reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from aah.benchmark.bfcl import BfclTask, Call, check_call, check_calls, load_bfcl, read_value
from aah.benchmark.bfcl.reading import Turn
from aah.benchmark.bfcl.records import MAX_LINE_BYTES
from aah.benchmark.bfcl.scoring import turn_vote
from aah.bounds import MAX_NESTING
from aah.errors import AahError

FACTORIAL = {
    "name": "math.factorial",
    "description": "The factorial of a number.",
    "parameters": {
        "type": "dict",
        "properties": {"number": {"type": "integer"}},
        "required": ["number"],
    },
}
ITEM: dict[str, Any] = {
    "id": "simple_python_0",
    "question": [[{"role": "user", "content": "Factorial of 5"}]],
    "function": [FACTORIAL],
}
ANSWER: dict[str, Any] = {
    "id": "simple_python_0",
    "ground_truth": [{"math.factorial": {"number": [5]}}],
}
QUESTIONS = "BFCL_v4_simple_python.json"
ANSWERS = f"possible_answer/{QUESTIONS}"


def nested(depth: int, leaf: Any = 1) -> Any:
    """A value ``depth`` levels deep: lists inside a dict at the top."""
    value = leaf
    for _ in range(depth - 1):
        value = [value]
    return {"x": value}


def write_data(folder: Path, files: dict[str, bytes | str]) -> Path:
    """A BFCL folder with one good item, then ``files`` written over it (text or bytes)."""
    (folder / "possible_answer").mkdir(parents=True, exist_ok=True)
    contents: dict[str, bytes | str] = {
        QUESTIONS: json.dumps(ITEM) + "\n",
        ANSWERS: json.dumps(ANSWER) + "\n",
        **files,
    }
    for name, content in contents.items():
        path = folder / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return folder


def lines(*records: Any) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


def item(**changes: Any) -> dict[str, Any]:
    return {**ITEM, **changes}


def answer(truth: Any = None, **changes: Any) -> dict[str, Any]:
    return {**ANSWER, **({"ground_truth": truth} if truth is not None else {}), **changes}


def function(**changes: Any) -> dict[str, Any]:
    return item(function=[{**FACTORIAL, **changes}])


def parameters(**changes: Any) -> dict[str, Any]:
    return function(parameters={**FACTORIAL["parameters"], **changes})


OVER_CAP = "x" * MAX_LINE_BYTES
# (name, files written over the good ones, the file refused, its line, words of the refusal)
REFUSED: list[tuple[str, dict[str, bytes | str], str, int, str]] = [
    # size and depth
    ("line over the cap", {QUESTIONS: lines(item(id=OVER_CAP))}, QUESTIONS, 1, "262,144 bytes"),
    ("second line over the cap", {QUESTIONS: lines(ITEM, item(id="b" + OVER_CAP))}, QUESTIONS, 2, "262,144"),
    ("over the cap, no line break", {QUESTIONS: json.dumps(item(id=OVER_CAP))}, QUESTIONS, 1, "262,144"),
    ("answer over the cap", {ANSWERS: lines(answer(note=OVER_CAP))}, ANSWERS, 1, "MAX_LINE_BYTES"),
    ("parameters 600 deep", {QUESTIONS: lines(parameters(properties={"number": nested(600)}))}, QUESTIONS, 1, "deeper than 100"),
    ("parameters 101 deep", {QUESTIONS: lines(function(parameters=nested(MAX_NESTING + 1)))}, QUESTIONS, 1, "deeper than 100"),
    ("question 5,000 deep", {QUESTIONS: lines('{"id": "simple_python_0", "question": ' + "[" * 5000 + "]" * 5000 + "}")}, QUESTIONS, 1, "deeper than 100"),
    ("ground truth 600 deep", {ANSWERS: lines(answer([{"math.factorial": {"number": [nested(600)]}}]))}, ANSWERS, 1, "deeper than 100"),
    # encoding and framing
    ("not UTF-8", {QUESTIONS: b'{"id": "\xff\xfe"}\n'}, QUESTIONS, 1, "not UTF-8"),
    ("not UTF-8 on line 2", {QUESTIONS: (lines(ITEM) + '{"id": "caf\u00e9"}\n').encode("latin-1")}, QUESTIONS, 2, "not UTF-8"),
    ("UTF-16", {QUESTIONS: lines(ITEM).encode("utf-16")}, QUESTIONS, 1, "not UTF-8"),
    ("a BOM on line 2", {QUESTIONS: lines(ITEM) + "\ufeff" + lines(item(id="b"))}, QUESTIONS, 2, "not JSON"),
    ("not JSON", {QUESTIONS: lines("{not json")}, QUESTIONS, 1, "not JSON"),
    ("a cut line", {QUESTIONS: lines(ITEM, json.dumps(item(id="b"))[:40])}, QUESTIONS, 2, "not JSON"),
    ("an integer of 5,000 digits", {QUESTIONS: lines('{"id": ' + "9" * 5000 + "}")}, QUESTIONS, 1, "not JSON"),
    ("a list", {QUESTIONS: lines([ITEM])}, QUESTIONS, 1, "not a JSON object"),
    ("null", {QUESTIONS: lines("null")}, QUESTIONS, 1, "not a JSON object"),
    ("a string", {ANSWERS: lines('"simple_python_0"')}, ANSWERS, 1, "not a JSON object"),
    ("a number after a blank line", {QUESTIONS: lines(ITEM, "", "5")}, QUESTIONS, 3, "not a JSON object"),
    # ids
    ("no id", {QUESTIONS: lines({k: v for k, v in ITEM.items() if k != "id"})}, QUESTIONS, 1, "'id'"),
    ("id null", {QUESTIONS: lines(item(id=None))}, QUESTIONS, 1, "'id'"),
    ("id a number", {QUESTIONS: lines(item(id=0))}, QUESTIONS, 1, "'id'"),
    ("id empty", {QUESTIONS: lines(item(id=""))}, QUESTIONS, 1, "'id'"),
    ("id with a space", {QUESTIONS: lines(item(id="simple python"))}, QUESTIONS, 1, "'id'"),
    ("id with a line break", {QUESTIONS: lines(item(id="a\nb"))}, QUESTIONS, 1, "'id'"),
    ("id of 201 characters", {QUESTIONS: lines(item(id="i" * 201))}, QUESTIONS, 1, "'id'"),
    ("answer without id", {ANSWERS: lines({"ground_truth": ANSWER["ground_truth"]})}, ANSWERS, 1, "'id'"),
    ("id repeats", {QUESTIONS: lines(ITEM, ITEM)}, QUESTIONS, 2, "repeats"),
    ("answer repeats", {ANSWERS: lines(ANSWER, ANSWER)}, ANSWERS, 2, "a second possible answer"),
    ("answer for no item", {ANSWERS: lines(ANSWER, answer(id="simple_python_7"))}, ANSWERS, 2, "does not hold"),
    ("item without answer", {QUESTIONS: lines(ITEM, item(id="simple_python_1"))}, QUESTIONS, 2, "no possible answer"),
    # questions and functions
    ("no question", {QUESTIONS: lines({k: v for k, v in ITEM.items() if k != "question"})}, QUESTIONS, 1, "question"),
    ("question empty", {QUESTIONS: lines(item(question=[[]]))}, QUESTIONS, 1, "question"),
    ("question a string", {QUESTIONS: lines(item(question="hi"))}, QUESTIONS, 1, "question"),
    ("message not an object", {QUESTIONS: lines(item(question=[["hi"]]))}, QUESTIONS, 1, "fix the data file"),
    ("content a number", {QUESTIONS: lines(item(question=[[{"role": "user", "content": 5}]]))}, QUESTIONS, 1, "content"),
    ("functions a dict", {QUESTIONS: lines(item(function=FACTORIAL))}, QUESTIONS, 1, "function list"),
    ("function a number", {QUESTIONS: lines(item(function=[5]))}, QUESTIONS, 1, "'name'"),
    ("function without name", {QUESTIONS: lines(item(function=[{"parameters": {}}]))}, QUESTIONS, 1, "'name'"),
    ("parameters a string", {QUESTIONS: lines(function(parameters="x"))}, QUESTIONS, 1, "'parameters'"),
    ("parameters a list", {QUESTIONS: lines(function(parameters=[]))}, QUESTIONS, 1, "'parameters'"),
    ("properties a string", {QUESTIONS: lines(parameters(properties="number"))}, QUESTIONS, 1, "'properties'"),
    ("a property a number", {QUESTIONS: lines(parameters(properties={"number": 5}))}, QUESTIONS, 1, "'properties'"),
    ("required a string", {QUESTIONS: lines(parameters(required="number"))}, QUESTIONS, 1, "'required'"),
    ("required names no property", {QUESTIONS: lines(parameters(required=["count"]))}, QUESTIONS, 1, "'required'"),
    # possible answers
    ("ground_truth missing", {ANSWERS: lines({"id": "simple_python_0"})}, ANSWERS, 1, "ground_truth must be a list"),
    ("ground_truth {}", {ANSWERS: lines(answer({}))}, ANSWERS, 1, "ground_truth must be a list"),
    ("ground_truth null", {ANSWERS: lines('{"id": "simple_python_0", "ground_truth": null}')}, ANSWERS, 1, "ground_truth must be a list"),
    ("ground_truth a string", {ANSWERS: lines(answer("math.factorial"))}, ANSWERS, 1, "ground_truth must be a list"),
    ("ground_truth []", {ANSWERS: lines(answer([]))}, ANSWERS, 1, "ground_truth is empty"),
    ("ground_truth [[]]", {ANSWERS: lines(answer([[]]))}, ANSWERS, 1, "call 1 must name one function"),
    ("ground_truth [{}]", {ANSWERS: lines(answer([{}]))}, ANSWERS, 1, "call 1 must name one function"),
    ("ground_truth [name]", {ANSWERS: lines(answer(["math.factorial"]))}, ANSWERS, 1, "call 1 must name one function"),
    ("two functions in one call", {ANSWERS: lines(answer([{"math.factorial": {"number": [5]}, "other": {}}]))}, ANSWERS, 1, "must name one function"),
    ("second call malformed", {ANSWERS: lines(answer([{"math.factorial": {"number": [5]}}, {}]))}, ANSWERS, 1, "call 2 must name one function"),
    ("function named ''", {ANSWERS: lines(answer([{"": {}}]))}, ANSWERS, 1, "names no function"),
    ("arguments null", {ANSWERS: lines(answer([{"math.factorial": None}]))}, ANSWERS, 1, "map each argument"),
    ("arguments a list", {ANSWERS: lines(answer([{"math.factorial": [5]}]))}, ANSWERS, 1, "map each argument"),
    ("values not a list", {ANSWERS: lines(answer([{"math.factorial": {"number": "notalist"}}]))}, ANSWERS, 1, "list of acceptable values"),
    ("values a number", {ANSWERS: lines(answer([{"math.factorial": {"number": 5}}]))}, ANSWERS, 1, "list of acceptable values"),
    ("values null", {ANSWERS: lines(answer([{"math.factorial": {"number": None}}]))}, ANSWERS, 1, "list of acceptable values"),
    ("a function not offered", {ANSWERS: lines(answer([{"math.gamma": {"number": [5]}}]))}, ANSWERS, 1, "does not offer"),
    # whole files
    ("an empty file", {QUESTIONS: ""}, QUESTIONS, 0, "holds no items"),
    ("blank lines only", {QUESTIONS: "\n \n\r\n"}, QUESTIONS, 0, "holds no items"),
    ("an empty answer file", {ANSWERS: b""}, ANSWERS, 0, "holds no items"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("files", "refused", "line", "words"),
    [case[1:] for case in REFUSED],
    ids=[case[0] for case in REFUSED],
)
def test_a_hostile_file_is_refused_in_one_line_naming_file_and_line(
    tmp_path: Path, files: dict[str, bytes | str], refused: str, line: int, words: str
) -> None:
    folder = write_data(tmp_path / "bfcl", files)
    with pytest.raises(AahError) as error:
        load_bfcl(folder, ["simple_python"])
    message = str(error.value)
    where = str(folder / refused) + (f":{line}:" if line else "")
    assert where in message and words in message, message
    assert "\n" not in message and len(message) < 600
    assert "fix the data file" in message or "fetch" in message or "save the file" in message


ACCEPTED: list[tuple[str, dict[str, bytes | str]]] = [
    ("a BOM", {QUESTIONS: "\ufeff" + lines(ITEM), ANSWERS: "\ufeff" + lines(ANSWER)}),
    ("blank lines", {QUESTIONS: "\n" + lines(ITEM) + "\n  \n"}),
    ("CRLF line breaks", {QUESTIONS: lines(ITEM).replace("\n", "\r\n")}),
    ("no final line break", {QUESTIONS: json.dumps(ITEM)}),
    ("a line exactly at the cap", {QUESTIONS: lines(item(note="n" * (MAX_LINE_BYTES - len(json.dumps(item(note=""))))))}),
    ("a line nesting exactly 100 levels", {QUESTIONS: lines(parameters(properties={"number": {"type": "integer", "x": nested(MAX_NESTING - 6)}}))}),
    ("an empty list of values", {ANSWERS: lines(answer([{"math.factorial": {"number": []}}]))}),
]  # fmt: skip


@pytest.mark.parametrize("files", [c[1] for c in ACCEPTED], ids=[c[0] for c in ACCEPTED])
def test_what_real_files_may_hold_still_loads(
    tmp_path: Path, files: dict[str, bytes | str]
) -> None:
    folder = write_data(tmp_path / "bfcl", files)
    (task,) = load_bfcl(folder, ["simple_python"])
    assert task.id == "simple_python_0" and task.functions[0].original == "math.factorial"


def test_an_over_cap_line_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    """A line of 16 MiB is refused after the first MAX_LINE_BYTES: time and memory stay small."""
    folder = write_data(tmp_path / "bfcl", {})
    with (folder / QUESTIONS).open("w") as file:
        file.write('{"id": "simple_python_0", "note": "')
        for _ in range(16):
            file.write("x" * (1 << 20))
        file.write('"}\n')
    started = time.perf_counter()
    with pytest.raises(AahError, match=r"BFCL_v4_simple_python.json:1: a line over the cap"):
        load_bfcl(folder, ["simple_python"])
    assert time.perf_counter() - started < 5  # read whole and parsed, it takes several times that


def test_multilingual_files_get_the_same_bounds(tmp_path: Path) -> None:
    mbfcl = {**ITEM, "subset": "simple", "language": "th", **ANSWER}
    cases = {
        "language a number": (lines({**mbfcl, "language": 5}), 1, "'language'"),
        "language with a space": (lines({**mbfcl, "language": "th TH"}), 1, "'language'"),
        "ground_truth [] in an AST subset": (lines({**mbfcl, "ground_truth": []}), 1, "is empty"),
        "id repeats": (lines(mbfcl, mbfcl), 2, "repeats"),
        "over the cap": (lines(mbfcl, {**mbfcl, "id": OVER_CAP}), 2, "262,144"),
        "600 deep": (lines({**mbfcl, "function": [nested(600)]}), 1, "deeper than 100"),
    }
    for name, (text, line, words) in cases.items():
        path = tmp_path / f"bfcl_single_turn_{len(name)}.jsonl"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(AahError) as error:
            load_bfcl(path, ["simple_python"])
        assert f"{path}:{line}:" in str(error.value) and words in str(error.value), name
        path.unlink()
    good = tmp_path / "bfcl_single_turn_th.jsonl"
    good.write_text(lines(mbfcl, {**mbfcl, "id": "irrelevance_0", "subset": "irrelevance"}))
    assert [t.language for t in load_bfcl(good, ["simple_python", "irrelevance"])] == ["th", "th"]


# -- the checker: malformed answers and calls are failed checks ---------------------


@pytest.fixture
def task(tmp_path: Path) -> BfclTask:
    (loaded,) = load_bfcl(write_data(tmp_path / "bfcl", {}), ["simple_python"])
    return loaded


def deep(depth: int) -> Any:
    """A value nested ``depth`` levels, built without recursion (past the parser's reach too)."""
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


BAD_TRUTHS: list[tuple[str, Any]] = [
    ("empty", []),
    ("a dict", {"math.factorial": {"number": [5]}}),
    ("None", None),
    ("[[]]", [[]]),
    ("[{}]", [{}]),
    ("[{f: None}]", [{"math.factorial": None}]),
    ("[{f: {x: str}}]", [{"math.factorial": {"number": "notalist"}}]),
    ("two functions", [{"math.factorial": {"number": [5]}, "g": {}}]),
    ("a name", ["math.factorial"]),
]


@pytest.mark.parametrize("truth", [t for _, t in BAD_TRUTHS], ids=[n for n, _ in BAD_TRUTHS])
@pytest.mark.parametrize("category", ["simple_python", "parallel"])
def test_a_malformed_ground_truth_is_a_failed_check_not_a_crash(
    task: BfclTask, truth: Any, category: str
) -> None:
    broken = task.model_copy(update={"ground_truth": truth, "category": category})
    for calls in ([], [Call("math.factorial", {"number": 5})]):
        verdict = check_calls(broken, calls)
        assert not verdict.ok and "possible answer is malformed" in verdict.reason
    answer = truth[0] if isinstance(truth, list) and truth else truth
    assert not check_call({}, Call("math.factorial", {"number": 5}), answer).ok


BAD_CALLS: list[tuple[str, Any, str]] = [
    ("arguments 101 deep", Call("math.factorial", {"number": deep(MAX_NESTING)}), "deeper than 100"),
    ("arguments 600 deep", Call("math.factorial", {"number": deep(600)}), "deeper than 100"),
    ("arguments 5,000 deep", Call("math.factorial", {"number": deep(5000)}), "deeper than 100"),
    ("a dict 600 deep", Call("math.factorial", nested(600)), "deeper than 100"),
    ("arguments a string", Call("math.factorial", "5"), "not an object"),  # type: ignore[arg-type]
    ("arguments None", Call("math.factorial", None), "not an object"),  # type: ignore[arg-type]
    ("a name that is no string", Call(None, {"number": 5}), "without a function name"),  # type: ignore[arg-type]
    ("no Call at all", ("math.factorial", {"number": 5}), "without a function name"),
    ("a name of a million characters", Call("f" * 1_000_000, {"number": 5}), "expected math.factorial"),
    ("a value of a million characters", Call("math.factorial", {"number": ["1" * 1_000_000]}), "wrong type"),
    ("an int of 5,000 digits", Call("math.factorial", {"number": 10**5000}), "too long to show"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("call", "words"), [c[1:] for c in BAD_CALLS], ids=[c[0] for c in BAD_CALLS]
)
def test_a_malformed_call_is_a_failed_check_with_a_short_reason(
    task: BfclTask, call: Any, words: str
) -> None:
    verdict = check_calls(task, [call])
    assert not verdict.ok and words in verdict.reason and len(verdict.reason) < 400, verdict.reason
    parallel = check_calls(task.model_copy(update={"category": "parallel"}), [call, call])
    assert not parallel.ok and len(parallel.reason) < 400


def test_a_vote_keeps_no_call_the_checker_cannot_read(task: BfclTask) -> None:
    turn = Turn([Call("math.factorial", {"number": deep(600)})], 0, "raw", "")
    vote = turn_vote(task, turn)
    assert vote["right"] is False and "deeper than 100" in vote["reason"]
    assert vote["calls"] == [{"note": "math.factorial: arguments nest deeper than 100 levels"}]
    json.dumps(vote)  # storable


# Java and JavaScript source text: deep brackets, huge numbers, text that made patterns backtrack.
SOURCE_TEXTS: list[tuple[str, str, str | None, str]] = [
    ("[" * 600 + "]" * 600, "array", None, "javascript"),
    ('{"a":' * 600 + "1" + "}" * 600, "dict", None, "javascript"),
    ("[" + "[" * 300 + "]" * 300 + "]", "array", "array", "javascript"),
    ("9" * 5000, "integer", None, "javascript"),
    ("9" * 5000 + "n", "Bigint", None, "javascript"),
    ("[" + "9" * 5000 + "]", "array", None, "javascript"),
    ("9" * 5000, "integer", None, "java"),
    ("9" * 5000 + "L", "long", None, "java"),
    ("new int[]{" + "9" * 5000 + "}", "Array", None, "java"),
    ("new ArrayList<>(Arrays.asList(" + "9" * 5000 + "L))", "ArrayList", None, "java"),
    ("new " + " " * 5000 + "x", "Array", None, "java"),
    ("new " + " " * 5000 + "int[]{1}", "Array", "integer", "java"),
    ('new HashMap<>() {{ put("k", ' + " " * 5000 + "x; }}", "HashMap", None, "java"),
    ("x" * 20_000, "String", None, "java"),
]


@pytest.mark.parametrize(("text", "declared", "items", "language"), SOURCE_TEXTS)
def test_source_text_is_read_in_bounded_time_and_never_raises(
    text: str, declared: str, items: str | None, language: str
) -> None:
    started = time.perf_counter()
    read_value(text, declared, items, language)
    assert time.perf_counter() - started < 2  # the cubic patterns took minutes on these


# -- the command line ---------------------------------------------------------------


CLI_CASES = [
    ({QUESTIONS: lines(item(id=OVER_CAP))}, QUESTIONS, 1, "over the cap"),
    ({QUESTIONS: lines(parameters(properties={"number": nested(600)}))}, QUESTIONS, 1, "deeper"),
    ({ANSWERS: lines(answer([]))}, ANSWERS, 1, "ground_truth is empty"),
    ({ANSWERS: lines(answer([{"math.factorial": {"number": "notalist"}}]))}, ANSWERS, 1, "list"),
]


@pytest.mark.parametrize(("files", "refused", "line", "words"), CLI_CASES)
def test_bench_run_shows_the_refusal_in_one_line(
    tmp_path: Path, files: dict[str, bytes | str], refused: str, line: int, words: str
) -> None:
    folder = write_data(tmp_path / "bfcl", files)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    env.update({"AAH_DB": str(tmp_path / "aah.db"), "AAH_CACHE_DIR": str(tmp_path / "cache")})
    env.update({"AAH_MODEL": "m", "AAH_BASE_URL": "http://127.0.0.1:9/v1", "COLUMNS": "400"})
    result = subprocess.run(
        [sys.executable, "-m", "aah", "bench", "run", "--benchmark", "bfcl", "--data",
         str(folder), "--category", "simple_python", "--run", "r", "--no-probe"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    error = result.stderr.strip()
    assert result.returncode != 0 and "Traceback" not in error
    assert len(error.splitlines()) == 1, error
    assert f"{folder / refused}:{line}:" in error and words in error
