"""ACEBench Special: upstream's string rules on a reply corpus, the loader, both readings end to end."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from runtime_support import fake_config

from aah.benchmark import RunOptions
from aah.benchmark.acebench.benchmark import BENCHMARK
from aah.benchmark.acebench.blockers import item_blockers
from aah.benchmark.acebench.runner import AceRunner, system_prompt, user_prompt
from aah.benchmark.acebench.scoring import Turn, behavior_vote, names_parameter, upstream_vote
from aah.benchmark.acebench.tasks import (
    AceTask,
    answer_file,
    data_file,
    load_acebench,
    load_prompts,
    parse_item,
    prompt_file,
)
from aah.benchmark.acebench.upstream import special_eval
from aah.benchmark.protocol import RunFlags
from aah.errors import AahError
from aah.report import build_report, render_markdown
from aah.store import SessionStore
from aah.testing.fake_llm import FakeLLMServer

FIXTURES = Path(__file__).parent / "fixtures"
CORPUS = FIXTURES / "acebench_special_replies.jsonl"
HOSTILE = FIXTURES / "hostile" / "acebench_lines.jsonl"
IRR = "Due to the limitations of the function, I cannot solve this problem."


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _truth(raw: Any) -> dict[str, tuple[str, ...]] | str:
    return raw if isinstance(raw, str) else {k: tuple(v) for k, v in raw.items()}


# -- upstream's string rules on the scripted reply set -----------------------------

REPLIES = _jsonl(CORPUS)


def test_the_reply_corpus_covers_every_category_both_ways_and_both_languages() -> None:
    assert len(REPLIES) >= 100
    for category in ("incomplete", "error_param", "irrelevant"):
        mine = [r for r in REPLIES if r["category"] == category]
        assert {r["right"] for r in mine} == {True, False}
        assert {r["lang"] for r in mine} == {"en", "zh"}
    assert {r["error_type"] for r in REPLIES} == {None, "error_detection", "error_correction"}
    assert all(r["why"] for r in REPLIES)


@pytest.mark.parametrize("case", REPLIES, ids=lambda c: f"{c['category']}:{c['why'][:40]}")
def test_upstream_rules_score_each_reply_as_the_corpus_says(case: dict[str, Any]) -> None:
    verdict = special_eval(case["reply"], _truth(case["ground_truth"]), case["category"])
    assert (verdict.valid, verdict.error_type) == (case["right"], case["error_type"]), case["why"]
    # The stored vote of the acebench reading says the same.
    task = AceTask(
        id=f"{case['lang']}-x",
        lang=case["lang"],
        category=case["category"],
        upstream_id="x",
        question="user: q",
        functions=(),
        time="",
        ground_truth=_truth(case["ground_truth"]),
    )
    vote = upstream_vote(task, case["reply"])
    assert (vote["right"], vote["error_type"]) == (case["right"], case["error_type"])


# -- the published data, when the shared copy is here ------------------------------


def test_the_shared_data_loads_as_300_items_with_upstreams_prompts(shared_data: Path) -> None:
    loaded = load_acebench(shared_data)
    assert loaded.problems == []
    assert len(loaded.tasks) == 300
    assert len({task.id for task in loaded.tasks}) == 300
    first = loaded.tasks[0]
    prompts = load_prompts(shared_data, "en")
    system = system_prompt(prompts.system, first)
    assert "{function}" not in system and f"'name': '{first.functions[0]['name']}'" in system
    assert user_prompt(prompts.user, first).endswith(first.question)
    assert [b.name for b in item_blockers(first)] == [
        "propertyDetails",
        "rentalManagement",
        "maintenanceScheduling",
    ]


# -- a synthetic data folder ---------------------------------------------------------

FLIGHT = {
    "name": "book_flight",
    "description": "Books a flight.",
    "parameters": {
        "type": "dict",
        "properties": {
            "date": {"type": "string", "description": "The travel date."},
            "seat": {"type": "string", "description": "The seat."},
        },
        "required": ["date", "seat"],
    },
}
# (category, marker, ground truth) for each language's items.
ITEMS = [
    ("incomplete", "inc-ok", {"book_flight": ["date"]}),
    ("incomplete", "inc-bad", {"book_flight": ["date", "seat"]}),
    ("error_param", "err-ok", {"date": ["32-13-2024"]}),
    ("irrelevant", "irr-ok", IRR),
    ("irrelevant", "irr-bad", IRR),
]


def write_data(folder: Path, damaged: str | None = None) -> Path:
    """An ``acebench/`` folder of ITEMS in both languages; ``damaged``: a line added to en/incomplete."""
    for lang in ("en", "zh"):
        for category in ("incomplete", "error_param", "irrelevant"):
            mine = [(i, m, gt) for i, (c, m, gt) in enumerate(ITEMS) if c == category]
            lines = [
                json.dumps(
                    {
                        "id": f"special_{category}_{i}",
                        "question": f"user: Please help (m: {lang}-{marker})",
                        "function": [FLIGHT],
                        "time": "The current time is 2024-05-01." if lang == "en" else "",
                    },
                    ensure_ascii=False,
                )
                for i, marker, _ in mine
            ]
            if damaged is not None and (lang, category) == ("en", "incomplete"):
                lines.insert(1, damaged)
            answers = [
                json.dumps({"id": f"special_{category}_{i}", "ground_truth": gt})
                for i, _, gt in mine
            ]
            path = data_file(folder, lang, category)  # type: ignore[arg-type]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            answers_path = answer_file(folder, lang, category)  # type: ignore[arg-type]
            answers_path.parent.mkdir(parents=True, exist_ok=True)
            answers_path.write_text("\n".join(answers) + "\n", encoding="utf-8")
        system = prompt_file(folder, f"system_special_{lang}")
        system.parent.mkdir(parents=True, exist_ok=True)
        system.write_text(f"SPECIAL-PROMPT-{lang} {{time}}\nAPI:\n{{function}}", encoding="utf-8")
        prompt_file(folder, f"user_{lang}").write_text("History:\n{question}", encoding="utf-8")
    return folder


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    (folder / "fail-talms" / "tools").mkdir(parents=True)
    return write_data(folder, damaged='{"id": "special_incomplete_9", "question": "user: cut')


def ask(question: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "ask_human", "arguments": {"question": question}}]}


SPECIAL = "SPECIAL-PROMPT"
SCRIPT = {
    "rules": [
        # The acebench reading: upstream's prompt replaces aah's (SPECIAL-PROMPT), no tools.
        {
            "when": {
                "system_contains": "'name': 'book_flight'",
                "last_message_contains": "-inc-ok)",
            },
            "reply": '["Missing necessary parameters (date) for the api (book_flight)"]',
        },
        {
            "when": {"system_contains": SPECIAL, "last_message_contains": "-inc-bad)"},
            "reply": '["Missing necessary parameters (date) for the api (book_flight)"]',
        },
        {
            "when": {"system_contains": SPECIAL, "last_message_contains": "-err-ok)"},
            "reply": '["There is incorrect value (32-13-2024) for the parameters (date)."]',
        },
        {
            "when": {"system_contains": SPECIAL, "last_message_contains": "-irr-ok)"},
            "reply": f"由于函数的限制。{IRR}",
        },
        {
            "when": {"system_contains": SPECIAL, "last_message_contains": "-irr-bad)"},
            "reply": "由于函数的限制，我无法解决这个问题。",
        },
        # The aah reading: the item's functions and ask_human as tools.
        {
            "when": {"tool_offered": "ask_human", "last_message_contains": "-inc-ok)"},
            "reply": ask("Which travel date would you like?"),
        },
        {
            "when": {"tool_offered": "book_flight", "last_message_contains": "-inc-bad)"},
            "reply": {"tool_calls": [{"name": "book_flight", "arguments": {"date": "today"}}]},
        },
        {
            "when": {"tool_offered": "book_flight", "last_message_contains": "-err-ok)"},
            "reply": "The date 32-13-2024 is not a valid date. Which date did you mean?",
        },
        {
            "when": {"tool_offered": "book_flight", "last_message_contains": "-irr-ok)"},
            "reply": "I'm sorry, but I cannot do that with the tools I have.",
        },
        {
            "when": {"tool_offered": "book_flight", "last_message_contains": "-irr-bad)"},
            "reply": "The answer is 42.",
        },
    ]
}


def _cells(entry: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(c["lang"], c["category"]): c for c in entry["cells"]}


def test_both_readings_and_languages_run_through_the_cli_and_report(
    data_dir: Path, tmp_path: Path
) -> None:
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

        bench = ("bench", "run", "--benchmark", "acebench", "--no-probe")
        upstream = aah(*bench, "--run", "a")
        behaviour = aah(*bench, "--run", "h", "--reading", "aah", "--lang", "both")
        chinese = aah(*bench, "--run", "z", "--lang", "zh", "--limit", "1")
        report = json.loads(aah("report", "--format", "json").stdout)
        with SessionStore(db) as store:
            shown = render_markdown(build_report(store, ["a", "h"], data_dir))
        runner = AceRunner(
            RunOptions(run="a"),
            fake_config(llm),
            reading="aah",
            lang="both",
            prompts={},
            prompts_sha256="",
        )
        with pytest.raises(AahError, match="was made with reading='acebench', not 'aah'"):
            asyncio.run(runner.run([], db))
    said = upstream.stdout + upstream.stderr
    assert "10 ACEBench Special items" in upstream.stdout
    assert "aah off, reading acebench (no tools)" in upstream.stdout
    assert "replies read now: 10 by upstream's string rules" in upstream.stdout
    assert "not JSON" in said and "the item is left out" in said
    assert "replies read now: 10 by the behaviour rules" in behaviour.stdout
    assert "3 ACEBench Special items" in chinese.stdout
    by_run = {entry["run"]: entry for entry in report["acebench"]}
    a, h, z = by_run["a"], by_run["h"], by_run["z"]
    assert (a["reading"], a["labelled"], a["unlabelled"]) == ("acebench", 10, 0)
    for lang_code in ("en", "zh"):
        cells = _cells(a)
        inc, err, irr = (cells[(lang_code, c)] for c in ("incomplete", "error_param", "irrelevant"))
        assert (inc["accuracy"]["k"], inc["accuracy"]["n"]) == (1, 2)
        assert inc["error_types"] == {"error_detection": 0, "error_correction": 1}
        assert (err["accuracy"]["k"], err["accuracy"]["n"]) == (1, 1)
        assert (irr["accuracy"]["k"], irr["accuracy"]["n"]) == (1, 2)
        assert irr["error_types"] == {"error_detection": 1, "error_correction": 0}
        assert a["summary"][lang_code] == pytest.approx((0.5 + 1 + 0.5) / 3)
        bcells = _cells(h)
        hinc = bcells[(lang_code, "incomplete")]
        assert hinc["classes"]["request_for_info"] == 1 and hinc["classes"]["tool_call"] == 1
        assert (hinc["blockers"], hinc["blockers_addressed"]) == (3, 1)
        assert hinc["accuracy"]["k"] == 1
        assert bcells[(lang_code, "error_param")]["accuracy"]["k"] == 1
        hirr = bcells[(lang_code, "irrelevant")]
        assert (hirr["classes"]["cannot_answer"], hirr["classes"]["direct"]) == (1, 1)
    assert h["reading"] == "aah" and h["aah"] is True and a["aah"] is False
    assert {c["lang"] for c in z["cells"]} == {"zh"} and z["labelled"] == 3
    assert z["summary"]["en"] is None and z["summary"]["zh"] == 1.0
    assert "ACEBench Special: accuracy per category" in shown and "Chen et al." in shown
    assert "ACEBench Special (aah reading): behaviour classes" in shown


def _flags(data_dir: Path, **own: Any) -> RunFlags:
    return RunFlags(
        run="x",
        aah=own.pop("aah", None),
        limit=None,
        ids=own.pop("ids", ()),
        concurrency=1,
        workers=1,
        ray=None,
        shard=None,
        model=None,
        seed=None,
        task_timeout=None,
        epochs=1,
        tool_mode="native",
        probe=False,
        db=data_dir / "aah.db",
        data=data_dir,
        own={"reading": "acebench", "lang": "both", **own},
    )


@pytest.mark.parametrize(
    ("own", "words"),
    [
        ({"lang": "fr"}, "--lang 'fr': use en or zh or both"),
        ({"reading": "upstream"}, "--reading 'upstream': use acebench or aah"),
        ({"aah": True}, "--reading acebench offers no tools, ask_human included"),
        ({"ids": ["en-special_incomplete_77"]}, "no task with id 'en-special_incomplete_77'"),
    ],
)
def test_bad_flags_are_one_line(data_dir: Path, own: dict[str, Any], words: str) -> None:
    with pytest.raises(AahError) as caught:
        BENCHMARK.prepare(_flags(data_dir, **own))
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_the_items_left_out_are_said_while_the_run_is_prepared(data_dir: Path) -> None:
    said: list[str] = []
    flags = _flags(data_dir, ids=["zh-special_irrelevant_3"])
    prepared = BENCHMARK.prepare(RunFlags(**{**flags.__dict__, "say": said.append}))
    assert [task.id for task in prepared.tasks] == ["zh-special_irrelevant_3"]
    assert len(said) == 1 and said[0].startswith("acebench/data_en/data_special_incomplete.json:2")


# -- the aah reading's rules ---------------------------------------------------------


def _task(category: str, truth: Any) -> AceTask:
    return AceTask(
        id="en-x",
        lang="en",
        category=category,  # type: ignore[arg-type]
        upstream_id="x",
        question="user: q",
        functions=(FLIGHT,),
        time="",
        ground_truth=_truth(truth),
    )


@pytest.mark.parametrize(
    ("category", "truth", "turn", "right", "label"),
    [
        (
            "incomplete",
            {"book_flight": ["travelDate"]},
            Turn("", 1, ["ask_human"], ["Travel date?"]),
            True,
            "request_for_info",
        ),
        (
            "incomplete",
            {"book_flight": ["travelDate", "seat"]},
            Turn("", 1, ["ask_human"], ["Travel date?"]),
            False,
            "request_for_info",
        ),
        (
            "incomplete",
            {"book_flight": ["date"]},
            Turn("", 1, ["book_flight"], []),
            False,
            "tool_call",
        ),
        (
            "incomplete",
            {"book_flight": ["date"]},
            Turn("What date do you want to fly?", 0, [], []),
            True,
            "request_for_info",
        ),
        (
            "error_param",
            {"date": ["32-13"]},
            Turn("", 1, ["ask_human"], ["32-13 is no date: which one?"]),
            True,
            "request_for_info",
        ),
        (
            "error_param",
            {"date": ["32-13"]},
            Turn("", 1, ["ask_human"], ["Which date?"]),
            False,
            "request_for_info",
        ),
        (
            "irrelevant",
            IRR,
            Turn("I'm sorry, but I cannot do that with the tools I have.", 0, [], []),
            True,
            "cannot_answer",
        ),
        ("irrelevant", IRR, Turn("", 1, ["book_flight"], []), False, "tool_call"),
        ("irrelevant", IRR, None, True, "cannot_answer"),
    ],
)
def test_the_aah_reading_needs_the_right_class_and_names_the_blockers(
    category: str, truth: Any, turn: Turn | None, right: bool, label: str
) -> None:
    vote = behavior_vote(_task(category, truth), turn, ["book_flight", "ask_human"])
    assert (vote["right"], vote["class"]) == (right, label)


def test_a_parameter_is_named_in_any_case_and_spacing() -> None:
    assert names_parameter("What is the property's details?", "propertyDetails") is False
    assert names_parameter("Please give the property details.", "propertyDetails")
    assert names_parameter("请提供 time_period", "timePeriod")
    assert not names_parameter("anything", "")


# -- bad input: each damaged item one line, the others load ------------------------------

HOSTILE_CASES = _jsonl(HOSTILE)


def _hostile_line(case: dict[str, Any]) -> str:
    if "long_question" in case:
        return json.dumps(
            {"id": "special_incomplete_9", "question": "q" * case["long_question"], "function": []}
        )
    if "deep" in case:
        return "[" * case["deep"] + "]" * case["deep"]
    if "long_line" in case:
        return json.dumps({"id": "special_incomplete_9", "question": "x" * case["long_line"]})
    line: str = case["line"]
    return line


@pytest.mark.parametrize("case", HOSTILE_CASES, ids=lambda c: c["why"][:50])
def test_each_hostile_line_is_one_line_and_the_others_load(
    case: dict[str, Any], tmp_path: Path
) -> None:
    import re

    folder = write_data(tmp_path / "data")
    # The hostile line is the only item of its file, with the case's ground truth.
    category = case["category"]
    data_file(folder, "en", category).write_text(_hostile_line(case) + "\n", encoding="utf-8")
    answer_file(folder, "en", category).write_text(
        json.dumps({"id": "special_incomplete_9", "ground_truth": case["answer"]}) + "\n",
        encoding="utf-8",
    )
    kept = len(ITEMS) * 2 - sum(item[0] == category for item in ITEMS)
    loaded = load_acebench(folder)
    assert len(loaded.problems) == 1, loaded.problems
    (problem,) = loaded.problems
    assert "\n" not in problem and len(problem) < 600
    assert re.search(case["problem"], problem), problem
    assert len(loaded.tasks) == kept


def test_a_line_that_is_not_utf8_is_one_line_and_a_missing_file_is_an_error(
    tmp_path: Path,
) -> None:
    folder = write_data(tmp_path / "data")
    path = data_file(folder, "zh", "irrelevant")
    path.write_bytes(b"\xff\xfe broken\n" + path.read_bytes())
    loaded = load_acebench(folder)
    assert len(loaded.tasks) == 10 and len(loaded.problems) == 1
    assert "not UTF-8" in loaded.problems[0]
    data_file(folder, "en", "error_param").unlink()
    with pytest.raises(AahError, match="run `aah data fetch acebench` or pass --data DIR"):
        load_acebench(folder)
    prompt_file(folder, "user_zh").write_text("no field here", encoding="utf-8")
    with pytest.raises(AahError, match=r"user_zh.txt lacks \{question\}"):
        load_prompts(folder, "zh")
    prompt_file(folder, "system_special_en").write_text(
        "{time} {function} {profile}", encoding="utf-8"
    )
    with pytest.raises(AahError, match=r"is no template upstream's format fills \(KeyError"):
        load_prompts(folder, "en")


# -- the line reader never fails but in one line ---------------------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
_ITEMS = st.fixed_dictionaries(
    {},
    optional={
        "id": st.sampled_from(["special_incomplete_9", ""]) | _JSON,
        "question": st.text(max_size=50) | _JSON,
        "function": st.lists(
            st.fixed_dictionaries(
                {"name": st.sampled_from(["book_flight", "a b", "x"])},
                optional={"parameters": _JSON, "description": _JSON},
            ),
            max_size=3,
        )
        | _JSON,
        "time": st.text(max_size=10) | _JSON,
    },
)


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    line=st.text(max_size=200) | _ITEMS.map(json.dumps),
    category=st.sampled_from(["incomplete", "error_param", "irrelevant"]),
    truth=_JSON | st.just({"book_flight": ["date"]}),
)
def test_any_line_is_an_item_or_one_line(line: str, category: str, truth: Any) -> None:
    try:
        task = parse_item(line, "en", category, {"special_incomplete_9": truth}, "f:1")  # type: ignore[arg-type]
    except AahError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("f:1")
    else:
        assert task.upstream_id == "special_incomplete_9"
        special_eval("any reply", task.ground_truth, task.category)


def test_a_reply_cut_off_at_the_length_limit_is_still_read_by_upstreams_rules(
    data_dir: Path, tmp_path: Path
) -> None:
    from aah.benchmark.acebench.scoring import label_run, run_scores

    loaded = load_acebench(data_dir, ("en",))
    task = next(t for t in loaded.tasks if t.upstream_id == "special_incomplete_0")
    cut = {
        "rules": [
            {
                "when": {"system_contains": SPECIAL},
                "reply": {
                    "text": '["Missing necessary parameters (date) for the api (book_flight',
                    "finish_reason": "length",
                },
            }
        ]
    }
    db = tmp_path / "cut.db"
    with FakeLLMServer(cut) as llm:
        runner = AceRunner(
            RunOptions(run="c"),
            fake_config(llm),
            reading="acebench",
            lang="en",
            prompts={"en": load_prompts(data_dir, "en")},
            prompts_sha256="p",
        )
        asyncio.run(runner.run([task], db))
    with SessionStore(db) as store:
        (session,) = store.list_sessions(run="c")
        assert session.status == "cut_off"
        assert label_run(store, "c", loaded.tasks, "acebench") == (1, [])
        (scores,) = run_scores(store, "c")
    assert (scores.labelled, scores.cells[0].accuracy.k) == (1, 1)
