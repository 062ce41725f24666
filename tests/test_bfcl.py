"""BFCL as a benchmark: loading both formats, runs through the batch runner, scores, report."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from runtime_support import fake_config

from aah.benchmark import RunOptions, shard_tasks
from aah.benchmark.bfcl import (
    ALL_SINGLE_TURN,
    CATEGORIES,
    BfclRunner,
    BfclTask,
    bfcl_run_scores,
    bfcl_source,
    choose_items,
    function_specs,
    load_bfcl,
    parse_categories,
    published_for,
    score_bfcl_run,
)
from aah.errors import AahError
from aah.events import ModelCallEvent
from aah.report import build_report, render_csv, render_json, render_markdown
from aah.store import SessionStore, merge_databases
from aah.testing.fake_llm import FakeLLMServer


def function(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"The {name} function.",
        "parameters": {"type": "dict", "properties": properties, "required": required},
    }


FACTORIAL = function("math.factorial", {"number": {"type": "integer"}}, ["number"])
AREA = function("area", {"base": {"type": "integer"}, "unit": {"type": "string"}}, ["base"])
WEATHER = function("get_weather", {"city": {"type": "string"}}, ["city"])


def item(item_id: str, query: str, functions: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": item_id,
        "question": [[{"role": "user", "content": query}]],
        "function": functions,
    }


ITEMS = {
    "simple_python": [
        (item("simple_python_0", "Factorial of 5 (case right)", [FACTORIAL]),
         [{"math.factorial": {"number": [5]}}]),
        (item("simple_python_1", "Area for base 10 (case wrongtype)", [AREA]),
         [{"area": {"base": [10], "unit": ["units", ""]}}]),
    ],
    "parallel": [
        (item("parallel_0", "Weather in Paris and London (case parallel)", [WEATHER]),
         [{"get_weather": {"city": ["Paris"]}}, {"get_weather": {"city": ["London"]}}]),
    ],
    "irrelevance": [
        (item("irrelevance_0", "Tell me a joke (case refuse)", [WEATHER]), None),
        (item("irrelevance_1", "Who won in 1998? (case malformed)", [WEATHER]), None),
        (item("irrelevance_2", "Write a poem (case textcall)", [WEATHER]), None),
    ],
    "live_irrelevance": [
        (item("live_irrelevance_0-0-0", "Sing a song (case brokentext)", [WEATHER]), None),
        (item("live_irrelevance_1-0-1", "Draw me a cat (case refuse)", [WEATHER]), None),
    ],
    "live_relevance": [
        (item("live_relevance_0-0-0", "Weather where I am (case relevant)", [WEATHER]), None),
    ],
}  # fmt: skip

PRESENT = list(ITEMS)
SCRIPT = {
    "rules": [
        {
            "when": {"last_message_contains": "(case right)"},
            "reply": {"tool_calls": [{"name": "math-factorial", "arguments": {"number": 5}}]},
        },
        {
            "when": {"last_message_contains": "(case wrongtype)"},
            "reply": {"tool_calls": [{"name": "area", "arguments": {"base": "10"}}]},
        },
        {
            "when": {"last_message_contains": "(case parallel)"},
            "reply": {
                "tool_calls": [
                    {"name": "get_weather", "arguments": {"city": "london"}},
                    {"name": "get_weather", "arguments": {"city": "Paris"}},
                ]
            },
        },
        {"when": {"last_message_contains": "(case refuse)"}, "reply": "I cannot do that."},
        {
            "when": {"last_message_contains": "(case malformed)"},
            "reply": {"tool_calls": [{"name": "get_weather", "arguments": '{"city": "Par'}]},
        },
        {
            "when": {"last_message_contains": "(case textcall)"},
            "reply": '<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}'
            "</tool_call>",
        },
        {
            "when": {"last_message_contains": "(case brokentext)"},
            "reply": 'Calling it: {"name": "get_weather", "arguments": {"city": "Paris"',
        },
        {
            "when": {"last_message_contains": "(case relevant)"},
            "reply": {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]},
        },
    ]
}


def write_bfcl(folder: Path, items: dict[str, Any] = ITEMS) -> Path:
    (folder / "possible_answer").mkdir(parents=True, exist_ok=True)
    for category, entries in items.items():
        lines = [json.dumps(entry) for entry, _ in entries]
        (folder / f"BFCL_v4_{category}.json").write_text("\n".join(lines) + "\n")
        answers = [
            json.dumps({"id": entry["id"], "ground_truth": truth})
            for entry, truth in entries
            if truth is not None
        ]
        if answers:
            (folder / "possible_answer" / f"BFCL_v4_{category}.json").write_text(
                "\n".join(answers) + "\n"
            )
    return folder


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return write_bfcl(tmp_path / "data" / "bfcl")


def run(
    tasks: list[BfclTask], db: Path, llm: FakeLLMServer, name: str = "b", **options: Any
) -> Any:
    runner = BfclRunner(RunOptions(run=name, aah=False, concurrency=4, **options), fake_config(llm))
    summary = asyncio.run(runner.run(tasks, db, categories=CATEGORIES, data_source="test"))
    with SessionStore(db) as store:
        score_bfcl_run(store, name, tasks)
    return summary


def figures(db: Path, run_name: str = "b") -> dict[str, tuple[int, int]]:
    with SessionStore(db) as store:
        (scores,) = bfcl_run_scores(store, run_name, "fake-model")
    return {name: (value.k, value.n) for name, value in scores.figures.items()}


EXPECTED = {
    "ast": (2, 3),
    "ast_simple_python": (1, 2),
    "ast_parallel": (1, 1),
    "irrelevance_standard": (2, 3),
    "irrelevance_intent": (1, 3),
    "irrelevance_gap": (1, 3),
    "live_relevance": (1, 1),
    "live_hallucination_standard": (3, 3),
    "live_hallucination_intent": (2, 3),
    "live_hallucination_gap": (1, 2),
}


def test_a_scripted_model_gives_the_expected_figures(data: Path, tmp_path: Path) -> None:
    tasks = load_bfcl(data, PRESENT)
    db = tmp_path / "b.db"
    with FakeLLMServer(SCRIPT) as llm:
        summary = run(tasks, db, llm)
        # One model turn per item: never a second call after the calls are answered.
        assert len(llm.requests) == len(tasks) == 9
    assert summary.finished == 9 and summary.errors == 0
    assert figures(db) == EXPECTED
    with SessionStore(db) as store:
        (scores,) = bfcl_run_scores(store, "b", "fake-model")
    disagreeing = {d.id: d.raw for d in scores.disagreements}
    assert set(disagreeing) == {"irrelevance_1", "live_irrelevance_0-0-0"}
    # The raw reply is kept beside the parsed calls: the broken text call is all there,
    # and so is a native call whose arguments are not JSON.
    assert disagreeing["live_irrelevance_0-0-0"].startswith('Calling it: {"name": "get_weather"')
    assert json.loads(disagreeing["irrelevance_1"]) == {
        "name": "get_weather",
        "arguments": '{"city": "Par',
    }


def test_the_raw_reply_of_a_text_call_is_stored_beside_the_call(data: Path, tmp_path: Path) -> None:
    tasks = [t for t in load_bfcl(data, ["irrelevance"]) if t.id == "irrelevance_2"]
    db = tmp_path / "b.db"
    with FakeLLMServer(SCRIPT) as llm:
        run(tasks, db, llm)
    with SessionStore(db) as store:
        (session,) = store.list_sessions(run="b")
        (grade,) = store.grades(session.id)
        (model_call,) = [e for e in store.events(session.id) if isinstance(e, ModelCallEvent)]
    vote = grade.votes[0]
    assert vote["calls"] == [{"get_weather": {"city": "Rome"}}]
    assert vote["standard_call"] and vote["intent_call"] and vote["raw"] is None
    assert model_call.text == "" and model_call.raw is not None
    assert model_call.raw.startswith('<tool_call>{"name": "get_weather"')


def test_prompt_mode_reads_calls_from_text_and_dotted_names_map_back(
    data: Path, tmp_path: Path
) -> None:
    tasks = [t for t in load_bfcl(data, ["simple_python"]) if t.id == "simple_python_0"]
    script = {"rules": [{"reply": "[math.factorial(number=5)]"}]}
    db = tmp_path / "b.db"
    with FakeLLMServer(script) as llm:
        run(tasks, db, llm, tool_mode="prompt")
        assert "tools" not in llm.requests[0]
    assert figures(db)["ast"] == (1, 1)


def test_a_rerun_does_nothing_new_and_shards_merge_to_the_whole(data: Path, tmp_path: Path) -> None:
    tasks = load_bfcl(data, PRESENT)
    whole, parts = tmp_path / "whole.db", [tmp_path / "1.db", tmp_path / "2.db"]
    with FakeLLMServer(SCRIPT) as llm:
        run(tasks, whole, llm)
        again = run(tasks, whole, llm)
        assert again.already_done == 9 and len(llm.requests) == 9
        for index, db in enumerate(parts, start=1):
            run(shard_tasks(tasks, (index, 2)), db, llm)
    merged = tmp_path / "merged.db"
    merge_databases(parts, merged)
    assert figures(merged) == figures(whole) == EXPECTED


def test_epochs_repeat_each_item(data: Path, tmp_path: Path) -> None:
    tasks = load_bfcl(data, ["simple_python"])
    db = tmp_path / "b.db"
    with FakeLLMServer(SCRIPT) as llm:
        run(tasks, db, llm, epochs=2)
        assert len(llm.requests) == 4
    assert figures(db)["ast_simple_python"] == (2, 4)


def test_the_report_has_a_bfcl_section_in_every_format(data: Path, tmp_path: Path) -> None:
    db = tmp_path / "b.db"
    with FakeLLMServer(SCRIPT) as llm:
        run(load_bfcl(data, PRESENT), db, llm)
    with SessionStore(db) as store:
        report = build_report(store, ["b"], data_dir=tmp_path / "none")
    text = render_markdown(report)
    assert "BFCL AST per category" in text and "standard and intent readings disagree" in text
    assert "Calling it:" in text
    (section,) = json.loads(render_json(report))["bfcl"]
    assert section["language"] == "en" and section["published"] is None
    for name, (k, n) in EXPECTED.items():
        figure = section["figures"][name]
        assert (figure["k"], figure["n"]) == (k, n)
        assert {"value", "low", "high", "n"} <= set(figure)
        assert figure["low"] <= figure["value"] <= figure["high"]
    rows = list(csv.reader(io.StringIO(render_csv(report))))
    assert ["b", "fake-model", "en", "ast", repr(2 / 3)] == rows[rows.index([]) + 2][:5]


# -- Multilingual-BFCL files ------------------------------------------------------------

MBFCL = {
    "vi": [
        {"id": "irrelevance_1_vi", "subset": "irrelevance", "language": "vi",
         "test_category": "irrelevance",
         "question": [[{"role": "user", "content": "Kể cho tôi một câu chuyện cười (case refuse)"}]],
         "function": [{"name": "search_database", "description": "Tìm trong cơ sở dữ liệu",
                       "parameters": {"type": "object",
                                      "properties": {"query": {"type": "string"}}}}],
         "ground_truth": []},
        {"id": "simple_1_vi", "subset": "simple", "language": "vi",
         "test_category": "simple",
         "question": [[{"role": "user", "content": "Tính giai thừa của 5 (case right)"}]],
         "function": [FACTORIAL],
         "ground_truth": [{"math.factorial": {"number": [5]}}]},
    ],
    "th": [
        {"id": "irrelevance_1_th", "subset": "irrelevance", "language": "th",
         "test_category": "irrelevance",
         "question": [[{"role": "user", "content": "เล่าเรื่องตลกให้ฟังหน่อย (case malformed)"}]],
         "function": [{"name": "search_database", "description": "ค้นหาในฐานข้อมูล",
                       "parameters": {"type": "object",
                                      "properties": {"query": {"type": "string"}}}}],
         "ground_truth": []},
    ],
}  # fmt: skip


def write_mbfcl(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for language, records in MBFCL.items():
        (folder / f"bfcl_single_turn_{language}.jsonl").write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8"
        )
    return folder


def test_multilingual_files_load_and_report_per_language(tmp_path: Path) -> None:
    folder = write_mbfcl(tmp_path / "mbfcl")
    assert bfcl_source(folder) == folder
    tasks = load_bfcl(folder, CATEGORIES)
    assert {(t.id, t.category, t.language) for t in tasks} == {
        ("irrelevance_1_vi", "irrelevance", "vi"),
        ("simple_1_vi", "simple_python", "vi"),
        ("irrelevance_1_th", "irrelevance", "th"),
    }
    assert tasks[0].query.startswith(("Tính", "Kể", "เล่า"))
    db = tmp_path / "b.db"
    with FakeLLMServer(SCRIPT) as llm:
        run(tasks, db, llm)
    with SessionStore(db) as store:
        by_language = {s.language: s for s in bfcl_run_scores(store, "b", "fake-model")}
    assert set(by_language) == {"th", "vi"}
    assert by_language["vi"].figures["ast_simple_python"].k == 1
    assert by_language["vi"].figures["irrelevance_intent"].k == 1
    thai = by_language["th"].figures
    assert (thai["irrelevance_standard"].k, thai["irrelevance_intent"].k) == (1, 0)
    # One file alone is a source too.
    only_thai = load_bfcl(bfcl_source(folder / "bfcl_single_turn_th.jsonl"), CATEGORIES)
    assert [t.language for t in only_thai] == ["th"]


def test_published_figures_match_model_and_language() -> None:
    assert published_for("google/gemma-3-1b-it-Q4_K_M.gguf", "TH") is not None
    row = published_for("gemma-3-1b-it", "en")
    assert row is not None and (row.h_s, row.h_i) == (69, 37)
    assert published_for("gemma-3-1b-it", "de") is None
    assert published_for("SmolLM2-135M", "en") is None


# -- choosing items and categories ----------------------------------------------------


def test_categories_and_limits_per_category(data: Path) -> None:
    assert parse_categories(ALL_SINGLE_TURN) == list(CATEGORIES)
    assert parse_categories("parallel, irrelevance,parallel") == ["parallel", "irrelevance"]
    tasks = load_bfcl(data, parse_categories("simple_python,irrelevance"))
    assert [t.category for t in tasks] == ["simple_python"] * 2 + ["irrelevance"] * 3
    chosen = choose_items(tasks, 1, [])
    assert [t.id for t in chosen] == ["simple_python_0", "irrelevance_0"]
    assert [t.id for t in choose_items(tasks, None, ["irrelevance_2"])] == ["irrelevance_2"]
    multi = ["multi_turn_base", "multi_turn_miss_param", "multi_turn_miss_func"]
    multi.append("multi_turn_long_context")
    assert parse_categories("all-multi-turn") == multi
    assert parse_categories("multi_turn_miss_param,simple_python,all-multi-turn") == [
        "multi_turn_miss_param",
        "simple_python",
        *(c for c in multi if c != "multi_turn_miss_param"),
    ]


BAD_CATEGORIES = [
    "",
    "simple",
    "java",
    "all",
    "parallel,nope",
    "multi_turn",
    "multi_turn_composite",
]


@pytest.mark.parametrize("value", BAD_CATEGORIES)
def test_unknown_categories_are_one_line(value: str) -> None:
    with pytest.raises(AahError, match="unknown --category") as error:
        parse_categories(value)
    assert "\n" not in str(error.value)


def good_item() -> dict[str, Any]:
    return item("simple_python_9", "Factorial of 3", [FACTORIAL])


BAD_LINES = [
    ("not json", lambda line: "{not json", "not JSON"),
    ("a list", lambda line: "[1, 2]", "not a JSON object"),
    ("no question", lambda line: json.dumps({**json.loads(line), "question": []}), "question"),
    ("question text", lambda line: json.dumps({**json.loads(line), "question": "hi"}), "question"),
    ("no functions", lambda line: json.dumps({**json.loads(line), "function": None}), "function"),
    (
        "function without name",
        lambda line: json.dumps({**json.loads(line), "function": [{"description": "x"}]}),
        "string 'name'",
    ),
    (
        "name with a space",
        lambda line: json.dumps({**json.loads(line), "function": [{**FACTORIAL, "name": "a b"}]}),
        "cannot be mapped reversibly",
    ),
    (
        "name with a dash",
        lambda line: json.dumps({**json.loads(line), "function": [{**FACTORIAL, "name": "a-b"}]}),
        "cannot be mapped reversibly",
    ),
    (
        "unknown type",
        lambda line: json.dumps(
            {
                **json.loads(line),
                "function": [function("f", {"x": {"type": "HashMap"}}, ["x"])],
            }
        ),
        "unknown type",
    ),
    (
        "message without role",
        lambda line: json.dumps({**json.loads(line), "question": [[{"content": "hi"}]]}),
        "role",
    ),
]


@pytest.mark.parametrize(("change", "problem"), [(c, p) for _, c, p in BAD_LINES],
                         ids=[name for name, _, _ in BAD_LINES])  # fmt: skip
def test_bad_item_lines_are_one_line_errors(tmp_path: Path, change: Any, problem: str) -> None:
    folder = tmp_path / "bfcl"
    write_bfcl(folder, {"simple_python": [(good_item(), [{"math.factorial": {"number": [3]}}])]})
    path = folder / "BFCL_v4_simple_python.json"
    path.write_text(change(json.dumps(good_item())) + "\n")
    with pytest.raises(AahError, match=problem) as error:
        load_bfcl(folder, ["simple_python"])
    assert "\n" not in str(error.value) and str(path) in str(error.value)


BAD_ANSWERS = [
    {"id": "simple_python_9"},
    {"id": "simple_python_9", "ground_truth": {"math.factorial": {}}},
    {"id": "simple_python_9", "ground_truth": [{"math.factorial": {"number": 3}}]},
    {"id": "simple_python_9", "ground_truth": ["math.factorial"]},
    {"id": "another", "ground_truth": [{"math.factorial": {"number": [3]}}]},
]


@pytest.mark.parametrize("answer", BAD_ANSWERS)
def test_bad_possible_answers_are_one_line_errors(tmp_path: Path, answer: Any) -> None:
    folder = write_bfcl(tmp_path / "bfcl", {"simple_python": [(good_item(), [])]})
    (folder / "possible_answer" / "BFCL_v4_simple_python.json").write_text(json.dumps(answer))
    with pytest.raises(AahError) as error:
        load_bfcl(folder, ["simple_python"])
    assert (
        "\n" not in str(error.value)
        and "possible answer" in str(error.value)
        or ("ground_truth" in str(error.value))
    )


def test_missing_data_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(AahError, match="aah data fetch bfcl"):
        bfcl_source(tmp_path)
    folder = write_bfcl(tmp_path / "bfcl", {"irrelevance": ITEMS["irrelevance"]})
    with pytest.raises(AahError, match="no BFCL file at .*BFCL_v4_parallel.json"):
        load_bfcl(folder, ["parallel"])


# -- the real data ---------------------------------------------------------------------


def test_the_whole_single_turn_set_loads_and_every_function_becomes_a_tool(
    shared_data: Path,
) -> None:
    from aah.tools.calls import wrap_endpoint

    tasks = load_bfcl(bfcl_source(shared_data / "bfcl"), CATEGORIES)
    counts = {c: sum(t.category == c for t in tasks) for c in CATEGORIES}
    assert counts["live_multiple"] == 1053 and counts["irrelevance"] == 240
    assert counts["simple_java"] == 100 and counts["simple_javascript"] == 50
    assert sum(counts.values()) == 3641
    for task in tasks[::97]:
        for spec in function_specs(task):
            assert wrap_endpoint(spec, executor=None).name == spec.name  # type: ignore[arg-type]


# -- the command line ------------------------------------------------------------------


def test_bench_run_then_report_through_the_cli(data: Path, tmp_path: Path) -> None:
    db = tmp_path / "aah.db"
    with FakeLLMServer(SCRIPT) as llm:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
        env.update(
            {
                "AAH_BASE_URL": llm.base_url,
                "AAH_MODEL": "fake-model",
                "AAH_API_KEY": "fake",
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

        base = ("bench", "run", "--benchmark", "bfcl", "--data", str(data), "--no-probe")
        ran = aah(*base, "--run", "b", "--category", "simple_python,irrelevance", "--limit", "1")
        assert "2 BFCL items" in ran.stdout and "turns checked now: 2" in ran.stdout
        more = aah(*base, "--run", "b", "--category", ",".join(PRESENT))
        assert "9 BFCL items" in more.stdout and "turns checked now: 7" in more.stdout
        shown = aah("report", "--run", "b").stdout
        report = json.loads(aah("report", "--run", "b", "--format", "json").stdout)
        bad = aah(*base, "--run", "c", "--category", "simple", code=2)
    assert "BFCL AST per category" in shown
    assert report["bfcl"][0]["figures"]["irrelevance_gap"]["k"] == 1
    assert report["runs"][0]["manifest"]["benchmark"] == "bfcl"
    assert bad.stderr.startswith("error: unknown --category 'simple':")
    assert len(bad.stderr.strip().splitlines()) == 1
