"""When2Call: the loader, tool names and schemas, scripted runs, labels, report, CLI."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from runtime_support import fake_config

from aah.benchmark import RunOptions, shard_tasks
from aah.benchmark.when2call import (
    When2CallRunner,
    When2CallTask,
    choose_questions,
    endpoint_spec,
    json_schema,
    label_run_with_judge,
    label_run_with_rules,
    load_when2call,
    original_tool_name,
    parse_question,
    questions_file,
    run_scores,
    tool_name,
)
from aah.errors import AahError
from aah.report import build_report, render_json, render_markdown
from aah.store import SessionStore, merge_databases
from aah.testing.fake_llm import FakeLLMServer

VALID_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
BOOK = "travel.api.FlightApi.book_flight"
CANCEL = "travel.api.FlightApi.cancel_flight"


# -- the published file ---------------------------------------------------------


def test_the_published_file_loads_as_300_balanced_tasks(shared_data: Path) -> None:
    tasks = load_when2call(shared_data)
    assert len(tasks) == 300 == len({task.id for task in tasks})
    golds = [task.gold for task in tasks]
    assert {gold: golds.count(gold) for gold in set(golds)} == {
        "tool_call": 100,
        "request_for_info": 100,
        "cannot_answer": 100,
    }
    assert sum(not task.tools for task in tasks) == 17
    assert all(task.target_tool for task in tasks if task.gold == "tool_call")
    assert all(task.target_tool is None for task in tasks if task.gold == "cannot_answer")


def test_every_tool_name_in_the_file_maps_to_a_valid_name_and_back(shared_data: Path) -> None:
    tasks = load_when2call(shared_data)
    originals = {tool.original for task in tasks for tool in task.tools}
    assert len(originals) > 200 and any("." in name for name in originals)
    for original in originals:
        name = tool_name(original)
        assert VALID_NAME.match(name), name
        assert original_tool_name(name) == original
    for task in tasks:
        names = [tool.name for tool in task.tools]
        assert len(names) == len(set(names)), task.id
        if task.target_tool is not None:
            assert task.target_tool_name in names


def test_every_tool_becomes_a_spec_the_runtime_can_offer(shared_data: Path) -> None:
    from aah.tools.calls import wrap_endpoint

    for task in load_when2call(shared_data):
        for tool in task.tools:
            spec = endpoint_spec(tool)
            assert spec.qualified_name == tool.name
            assert [p.name for p in spec.parameters] == list(tool.parameters["properties"])
            assert wrap_endpoint(spec, executor=None).name == tool.name  # type: ignore[arg-type]


# -- BFCL schemas ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("bfcl", "expected"),
    [
        ({"type": "dict", "properties": {}}, {"type": "object", "properties": {}}),
        ({"type": "float", "default": 0.5}, {"type": "number", "default": 0.5}),
        ({"type": "integer"}, {"type": "integer"}),
        ({"type": "boolean"}, {"type": "boolean"}),
        ({"type": "string", "enum": ["a", "b"]}, {"type": "string", "enum": ["a", "b"]}),
        ({"type": "any", "description": "anything"}, {"description": "anything"}),
        ({"type": "tuple", "items": {"type": "float"}}, {"type": "array", "items": {"type": "number"}}),
        (
            {"type": "array", "items": {"type": "dict", "properties": {"x": {"type": "any"}}}},
            {"type": "array", "items": {"type": "object", "properties": {"x": {}}}},
        ),
        (
            {"type": "dict", "required": ["a"], "properties": {"a": {"type": "dict",
             "properties": {"b": {"type": "float"}}}}},
            {"type": "object", "required": ["a"], "properties": {"a": {"type": "object",
             "properties": {"b": {"type": "number"}}}}},
        ),
    ],
)  # fmt: skip
def test_bfcl_types_map_to_json_schema(bfcl: dict[str, Any], expected: dict[str, Any]) -> None:
    assert json_schema(bfcl) == expected


@pytest.mark.parametrize(
    ("bfcl", "problem"),
    [
        ({"type": "decimal"}, "unknown type 'decimal'"),
        ({"type": "dict", "properties": {"a": {"type": 3}}}, "parameters.a: unknown type 3"),
        ({"type": "array", "items": "string"}, r"parameters\[\]: a schema must be a JSON object"),
    ],
)
def test_bad_bfcl_schemas_are_one_line(bfcl: dict[str, Any], problem: str) -> None:
    with pytest.raises(AahError, match=problem) as caught:
        json_schema(bfcl)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("original", ["a-b", "a b", "a/b", "x" * 65, "", "café"])
def test_names_that_cannot_map_reversibly_are_refused(original: str) -> None:
    with pytest.raises(AahError, match="cannot be mapped reversibly"):
        tool_name(original)


# -- a synthetic data folder ------------------------------------------------------


def bfcl_tool(name: str) -> str:
    return json.dumps(
        {
            "name": name,
            "description": f"{name.rpartition('.')[2]} for a traveller.",
            "parameters": {
                "type": "dict",
                "required": ["flight"],
                "properties": {
                    "flight": {"type": "string", "description": "The flight number."},
                    "seats": {"type": "integer", "default": 1},
                    "budget": {"type": "float"},
                    "extras": {"type": "any"},
                },
            },
        }
    )


def record(uuid: str, gold: str, question: str, tools: bool = True) -> dict[str, Any]:
    offered = [bfcl_tool(BOOK), bfcl_tool(CANCEL)] if tools else []
    target = bfcl_tool(BOOK) if gold != "cannot_answer" and tools else None
    return {
        "uuid": uuid,
        "source": "BFCL v2 Live Multiple",
        "source_id": f"live_multiple_{uuid[:4]}",
        "question": question,
        "correct_answer": gold,
        "target_tool": target,
        "tools": offered,
        "orig_tools": offered,
    }


# Each question says how the scripted model answers it (see SCRIPT).
QUESTIONS = [
    record("10000000-0000", "tool_call", "Book flight LH400 for me (mode: call)"),
    record("20000000-0000", "tool_call", "Book flight LH401, quick (mode: direct)"),
    record("30000000-0000", "tool_call", "Book flight LH402 please (mode: ask)"),
    record("40000000-0000", "request_for_info", "Book me a flight (mode: ask)"),
    record("50000000-0000", "request_for_info", "Book a flight for me (mode: question)"),
    record("60000000-0000", "request_for_info", "I need a flight booked (mode: call)"),
    record("70000000-0000", "cannot_answer", "Refund my hotel (mode: decline)"),
    record("80000000-0000", "cannot_answer", "Upgrade my hotel room (mode: direct)"),
    record("90000000-0000", "cannot_answer", "Book my train (mode: call)", tools=False),
]
BOOK_NAME = "travel-api-FlightApi-book_flight"
SCRIPT = {
    "rules": [
        {
            "when": {"last_message_contains": "(mode: call)"},
            "reply": {"tool_calls": [{"name": BOOK_NAME, "arguments": {"flight": "LH400"}}]},
        },
        {
            "when": {"last_message_contains": "(mode: ask)", "tool_offered": "ask_human"},
            "reply": {
                "tool_calls": [{"name": "ask_human", "arguments": {"question": "Which date?"}}]
            },
        },
        {"when": {"last_message_contains": "(mode: ask)"}, "reply": "Which date do you mean?"},
        {"when": {"last_message_contains": "(mode: question)"}, "reply": "Which city, please?"},
        {
            "when": {"last_message_contains": "(mode: decline)"},
            "reply": "I'm sorry, but I cannot do that with the tools I have.",
        },
        {"when": {"last_message_contains": "(mode: direct)"}, "reply": "The answer is 42."},
    ]
}
LABELS = ("tool_call", "request_for_info", "cannot_answer", "direct")
# Rows gold (tool_call, request_for_info, cannot_answer, direct), columns predicted.
EXPECTED_MATRIX = [[1, 1, 0, 1], [1, 2, 0, 0], [1, 0, 1, 1], [0, 0, 0, 0]]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    (folder / "fail-talms" / "tools").mkdir(parents=True)
    path = questions_file(folder)
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(item) + "\n" for item in QUESTIONS), encoding="utf-8")
    return folder


def run(
    tasks: list[When2CallTask], db: Path, llm: FakeLLMServer, name: str = "w", **options: Any
) -> Any:
    aah = options.pop("aah", True)
    runner = When2CallRunner(
        RunOptions(run=name, aah=aah, concurrency=4), fake_config(llm), **options
    )
    summary = asyncio.run(runner.run(tasks, db))
    with SessionStore(db) as store:
        label_run_with_rules(store, name, tasks)
    return summary


def test_a_scripted_model_gives_the_expected_confusion_matrix_and_f1(
    data_dir: Path, tmp_path: Path
) -> None:
    tasks = load_when2call(data_dir)
    db = tmp_path / "w.db"
    with FakeLLMServer(SCRIPT) as llm:
        summary = run(tasks, db, llm)
        # One model turn per question: no second call after a tool result or an answer.
        assert len(llm.requests) == 9
    assert (summary.finished, summary.errors) == (9, 0)
    with SessionStore(db) as store:
        [scores] = run_scores(store, "w")
        manifest = store.get_run("w").manifest  # type: ignore[union-attr]
    assert manifest["benchmark"] == "when2call" and manifest["awareness"] is False
    assert manifest["turns"] == 1
    matrix = scores.matrix
    assert [list(row) for row in matrix.counts] == EXPECTED_MATRIX
    assert (matrix.accuracy.k, matrix.accuracy.n) == (4, 9)
    f1 = {label: matrix.scores(label).f1 for label in LABELS}
    assert f1 == pytest.approx(
        {"tool_call": 1 / 3, "request_for_info": 2 / 3, "cannot_answer": 0.5, "direct": 0.0}
    )
    assert matrix.macro_f1 == pytest.approx(0.375)
    assert (scores.tool_hallucination.k, scores.tool_hallucination.n) == (1, 1)
    assert (scores.answer_hallucination.k, scores.answer_hallucination.n) == (2, 9)
    assert (scores.target_tool.k, scores.target_tool.n) == (1, 1)
    assert (scores.labeller, scores.labelled, scores.unlabelled) == ("rules", 9, 0)


def test_the_judge_labels_replies_without_calls_and_is_stored_beside_the_rules(
    data_dir: Path, tmp_path: Path
) -> None:
    tasks = load_when2call(data_dir)
    db = tmp_path / "w.db"
    with FakeLLMServer(SCRIPT) as llm:
        run(tasks, db, llm)
    with (
        FakeLLMServer({"rules": [{"reply": "QUESTION: it asks."}]}) as judge,
        SessionStore(db) as store,
    ):
        judged = asyncio.run(label_run_with_judge(store, "w", tasks, fake_config(judge)))
        assert judged == 9 and len(judge.requests) == 4  # only the four text replies
        assert asyncio.run(label_run_with_judge(store, "w", tasks, fake_config(judge))) == 0
        rules, by_judge = run_scores(store, "w")
    assert rules.labeller == "rules" and by_judge.labeller == "judge fake-model"
    assert [list(row) for row in by_judge.matrix.counts] == [
        [1, 2, 0, 0],
        [1, 2, 0, 0],
        [1, 2, 0, 0],
        [0, 0, 0, 0],
    ]


def test_without_aah_a_question_is_plain_text_and_ask_human_is_not_offered(
    data_dir: Path, tmp_path: Path
) -> None:
    tasks = load_when2call(data_dir)
    db = tmp_path / "off.db"
    with FakeLLMServer(SCRIPT) as llm:
        run(tasks, db, llm, aah=False)
        offered = [tool["function"]["name"] for r in llm.requests for tool in r.get("tools", [])]
    assert "ask_human" not in offered
    with SessionStore(db) as store:
        [scores] = run_scores(store, "w", aah=False)
    # The "ask" questions now get "Which date do you mean?": still follow-up questions.
    assert [list(row) for row in scores.matrix.counts] == EXPECTED_MATRIX


def test_awareness_is_off_by_default_and_on_when_asked(data_dir: Path, tmp_path: Path) -> None:
    tasks = load_when2call(data_dir)[:1]
    aware = {
        "rules": [
            {"when": {"last_message_contains": "Before anything is done"}, "reply": "Yes: I can."}
        ]
    }
    with FakeLLMServer({"rules": [*aware["rules"], *SCRIPT["rules"]]}) as llm:
        run(tasks, tmp_path / "a.db", llm, name="plain")
        plain = len(llm.requests)
        run(tasks, tmp_path / "a.db", llm, name="aware", awareness="both")
        assert plain == 1 and len(llm.requests) > 2
    with SessionStore(tmp_path / "a.db") as store:
        assert store.get_run("aware").manifest["awareness"] is True  # type: ignore[union-attr]
        kinds = [[e.kind for e in store.events(s.id)] for s in store.list_sessions(run="aware")]
    assert kinds and all("awareness" in k for k in kinds)


def test_a_rerun_does_nothing_new(data_dir: Path, tmp_path: Path) -> None:
    tasks = load_when2call(data_dir)
    db = tmp_path / "w.db"
    with FakeLLMServer(SCRIPT) as llm:
        run(tasks, db, llm)
        before = len(llm.requests)
        again = run(tasks, db, llm)
        assert len(llm.requests) == before
    assert (again.already_done, again.finished) == (9, 0)
    with SessionStore(db) as store:
        assert len(store.list_sessions(run="w")) == 9
        assert all(len(store.grades(s.id)) == 1 for s in store.list_sessions(run="w"))
        assert label_run_with_rules(store, "w", tasks) == 0
    for change, problem in (
        ({"turns": 2}, "made with turns=1, not 2"),
        ({"awareness": "both"}, "made with awareness=False, not True"),
    ):
        with FakeLLMServer(SCRIPT) as llm, pytest.raises(AahError, match=problem):
            run(tasks, db, llm, **change)


def test_shards_merged_equal_an_unsharded_run(data_dir: Path, tmp_path: Path) -> None:
    tasks = load_when2call(data_dir)
    with FakeLLMServer(SCRIPT) as llm:
        run(tasks, tmp_path / "whole.db", llm)
        for index in (1, 2):
            run(shard_tasks(tasks, (index, 2)), tmp_path / f"shard{index}.db", llm)
    merge_databases([tmp_path / "shard1.db", tmp_path / "shard2.db"], tmp_path / "merged.db")

    def digest(db: Path) -> list[tuple[object, ...]]:
        with SessionStore(db) as store:
            return sorted(
                (
                    s.task_id,
                    s.status,
                    s.final_answer,
                    tuple(e.kind for e in store.events(s.id)),
                    tuple(json.dumps(g.votes) for g in store.grades(s.id)),
                )
                for s in store.list_sessions(run="w")
            )

    assert digest(tmp_path / "merged.db") == digest(tmp_path / "whole.db")
    with SessionStore(tmp_path / "merged.db") as store:
        [scores] = run_scores(store, "w")
    assert [list(row) for row in scores.matrix.counts] == EXPECTED_MATRIX


def test_the_report_has_a_when2call_section(data_dir: Path, tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    with FakeLLMServer(SCRIPT) as llm:
        run(load_when2call(data_dir), db, llm)
    with SessionStore(db) as store:
        report = build_report(store, ["w"], data_dir)
    data = json.loads(render_json(report))
    [section] = data["when2call"]
    assert section["confusion"]["counts"] == EXPECTED_MATRIX
    assert section["macro_f1"] == pytest.approx(0.375)
    assert section["tool_hallucination"]["k"] == 1
    text = render_markdown(report)
    assert "## When2Call" in text and "When2Call confusion matrix: w (rules)" in text
    assert "GPT-4o" in text and "61.3" in text and "LLM-as-judge" in text
    assert "ask\\_human counts as a follow-up question" in text
    assert not any("IAC" in note for note in data["notes"])


# -- bad input --------------------------------------------------------------------


def good_line() -> dict[str, Any]:
    return record("abcdef00-1111", "tool_call", "Book LH1")


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda r: r.pop("question"), "question: Field required"),
        (lambda r: r.update(correct_answer="direct"), "correct_answer"),
        (lambda r: r.update(tools="not a list"), "tools"),
        (lambda r: r.update(tools=["{not json"]), "a tool is not JSON"),
        (lambda r: r.update(tools=['{"description": "no name"}']), "needs a string 'name'"),
        (lambda r: r.update(tools=[bfcl_tool("a/b")]), "cannot be mapped reversibly"),
        (lambda r: r.update(tools=[bfcl_tool(BOOK), bfcl_tool(BOOK)]), "two tools share"),
        (lambda r: r.update(tools=[bfcl_tool(CANCEL)]), "target_tool .* is not offered"),
    ],
)
def test_bad_question_lines_are_one_line_errors(change: Any, problem: str) -> None:
    item = good_line()
    change(item)
    with pytest.raises(AahError, match=problem) as caught:
        parse_question(json.dumps(item), "q.jsonl:1")
    assert str(caught.value).startswith("q.jsonl:1") and "\n" not in str(caught.value)


def test_a_line_that_is_not_json_and_a_missing_file_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(AahError, match="q.jsonl:1"):
        parse_question("{broken", "q.jsonl:1")
    with pytest.raises(AahError, match="no When2Call questions at .*aah data fetch"):
        load_when2call(tmp_path)


def test_limit_takes_each_gold_behaviour_and_ids_must_exist(data_dir: Path) -> None:
    tasks = load_when2call(data_dir)
    chosen = choose_questions(tasks, 1, [])
    assert [t.gold for t in chosen] == ["tool_call", "request_for_info", "cannot_answer"]
    assert choose_questions(tasks, None, [tasks[4].id]) == [tasks[4]]
    with pytest.raises(AahError, match="ids look like when2call-"):
        choose_questions(tasks, None, ["when2call-nope"])


# -- the command line ---------------------------------------------------------------


def test_bench_run_then_report_through_the_cli(data_dir: Path, tmp_path: Path) -> None:
    db = tmp_path / "aah.db"
    with FakeLLMServer(SCRIPT) as llm:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
        env.update(
            {
                "AAH_BASE_URL": llm.base_url,
                "AAH_MODEL": "fake-model",
                "AAH_API_KEY": "fake",
                "AAH_DATA_DIR": str(data_dir),
                "AAH_DB": str(db),
                "AAH_CACHE_DIR": str(tmp_path / "cache"),
                "COLUMNS": "200",
            }
        )

        def aah(*args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
            result = subprocess.run(
                [sys.executable, "-m", "aah", *args],
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert result.returncode == code, result.stderr
            return result

        ran = aah("bench", "run", "--benchmark", "when2call", "--run", "w")
        assert "9 When2Call questions" in ran.stdout and "aah report --run w" in ran.stdout
        assert "labelled now: 9 by the rules" in ran.stdout
        shown = aah("report", "--run", "w").stdout
        report = json.loads(aah("report", "--run", "w", "--format", "json").stdout)
        bad = aah("bench", "run", "--benchmark", "gorilla", "--run", "x", code=2)
    assert "When2Call confusion matrix" in shown and "GPT-4o-mini" in shown
    assert report["when2call"][0]["confusion"]["counts"] == EXPECTED_MATRIX
    assert bad.stderr.strip().splitlines() == [
        "error: unknown --benchmark 'gorilla': use fail-talms or when2call or bfcl or tau2 or acebench"
    ]


def test_a_question_the_awareness_gate_skips_counts_as_cannot_answer(
    data_dir: Path, tmp_path: Path
) -> None:
    tasks = load_when2call(data_dir)[:3]
    declines = {"when": {"last_message_contains": "Before anything is done"}, "reply": "No: none."}
    with FakeLLMServer({"rules": [declines, *SCRIPT["rules"]]}) as llm:
        summary = run(tasks, tmp_path / "s.db", llm, awareness="both")
    assert summary.skipped == 3
    with SessionStore(tmp_path / "s.db") as store:
        [scores] = run_scores(store, "w")
        rules = {
            g.votes[0]["rule"] for s in store.list_sessions(run="w") for g in store.grades(s.id)
        }
    assert [list(row) for row in scores.matrix.counts][0] == [0, 0, 3, 0]
    assert rules == {"awareness_no"}


def test_epochs_repeat_each_question_and_a_rerun_adds_epochs(
    data_dir: Path, tmp_path: Path
) -> None:
    tasks = load_when2call(data_dir)
    db = tmp_path / "w.db"

    def run_epochs(epochs: int, llm: FakeLLMServer) -> Any:
        runner = When2CallRunner(
            RunOptions(run="w", aah=True, concurrency=4, epochs=epochs), fake_config(llm)
        )
        summary = asyncio.run(runner.run(tasks, db))
        with SessionStore(db) as store:
            label_run_with_rules(store, "w", tasks)
        return summary

    with FakeLLMServer(SCRIPT) as llm:
        first = run_epochs(2, llm)
        more = run_epochs(3, llm)
        assert len(llm.requests) == 27
    assert (first.finished, more.finished, more.already_done) == (18, 9, 18)
    with SessionStore(db) as store:
        sessions = store.list_sessions(run="w")
        [scores] = run_scores(store, "w")
    assert len(sessions) == 27
    assert sum(s.task_id.endswith("#epoch3") for s in sessions if s.task_id) == 9
    # Every repeat is labelled against its own question's gold behaviour.
    assert [list(row) for row in scores.matrix.counts] == [
        [3 * count for count in row] for row in EXPECTED_MATRIX
    ]


def test_tool_mode_prompt_reaches_every_when2call_session(data_dir: Path, tmp_path: Path) -> None:
    db = tmp_path / "aah.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    with FakeLLMServer(SCRIPT) as llm:
        env |= {
            "AAH_BASE_URL": llm.base_url,
            "AAH_MODEL": "fake-model",
            "AAH_API_KEY": "fake",
            "AAH_DATA_DIR": str(data_dir),
            "AAH_DB": str(db),
            "COLUMNS": "200",
        }
        args = ["bench", "run", "--benchmark", "when2call", "--run", "p", "--limit", "1"]
        args += ["--tool-mode", "prompt", "--no-probe"]
        ran = subprocess.run(
            [sys.executable, "-m", "aah", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        requests = llm.requests
    assert ran.returncode == 0, ran.stderr
    assert "tools prompt (as asked)" in ran.stdout
    assert requests and not any(request.get("tools") for request in requests)
    with SessionStore(db) as store:
        run = store.get_run("p")
        assert run is not None and run.manifest["tool_mode"] == "prompt"
