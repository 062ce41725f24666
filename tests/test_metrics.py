"""Metrics: Wilson intervals, awareness resolution, every formula per setting, edge cases."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from runtime_support import ask_then_call_script, runtime_on

from aah.events import (
    AwarenessEvent,
    AwarenessQuestion,
    Event,
    HumanAnswerEvent,
    HumanQuestionEvent,
    ModelCallEvent,
    ToolCallEvent,
)
from aah.runtime.humans import ScriptedHuman
from aah.runtime.session import SessionRequest, run_session
from aah.scoring.intervals import wilson
from aah.scoring.metrics import (
    CellMetrics,
    cell_metrics,
    cell_to_json,
    compute_metrics,
    load_outcomes,
    resolve_awareness,
)
from aah.scoring.redundancy import is_redundant_question, key_words
from aah.store.sessions import SessionStore
from aah.testing.fake_llm import FakeLLMServer

pytestmark = pytest.mark.usefixtures("allow_private_tool_hosts")

CANNOT = "I'm sorry, but I cannot do this: none of the available tools can provide that."


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    with SessionStore(tmp_path / "m.db") as opened:
        yield opened


class Tasks:
    """Hand-made sessions in one store, one call per task."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.count = 0

    def add(
        self,
        run: str = "r",
        setting: str | None = "perfect",
        *,
        info: str | None = None,
        tool: str | None = None,
        status: str = "finished",
        verdicts: Sequence[str] = (),
        questions: Sequence[str] = (),
        final: str = "Here it is.",
        aah: bool = True,
        model: str = "m",
        query: str = "What is the weather in Oslo?",
        events: Sequence[Event] = (),
    ) -> str:
        self.count += 1
        if self.store.get_run(run) is None:
            self.store.create_run(run, {})
        session = self.store.open_session(
            query, run=run, task_id=f"t{self.count}", setting=setting, aah=aah, model=model
        )
        sid = session.id
        answers: tuple[tuple[AwarenessQuestion, Any], ...] = (
            ("information", info),
            ("tool", tool),
        )
        for question, answer in answers:
            if answer is not None:
                self.store.append_event(
                    AwarenessEvent(session_id=sid, question=question, answer=answer)
                )
        for index, text in enumerate(questions):
            rid = f"{sid}-{index}"
            self.store.append_event(
                HumanQuestionEvent(session_id=sid, request_id=rid, question=text)
            )
            self.store.append_event(
                HumanAnswerEvent(
                    session_id=sid, request_id=rid, answer="ok", answered_by="x", seconds=2.5
                )
            )
        for event in events:
            self.store.append_event(event.model_copy(update={"session_id": sid}))
        if status not in ("running", "waiting"):
            self.store.finish_session(sid, status, final)  # type: ignore[arg-type]
        else:
            self.store.set_status(sid, status)  # type: ignore[arg-type]
        for verdict in verdicts:
            self.store.add_grade(sid, "g", "v1", [], verdict)  # type: ignore[arg-type]
        return sid

    def cells(self, runs: Sequence[str] | None = None) -> list[CellMetrics]:
        return compute_metrics(load_outcomes(self.store, runs))

    def cell(self) -> CellMetrics:
        (only,) = self.cells()
        return only


@pytest.fixture
def tasks(store: SessionStore) -> Tasks:
    return Tasks(store)


def kn(value: object) -> tuple[int, int] | None:
    if value is None:
        return None
    return (value.k, value.n)  # type: ignore[attr-defined]


# -- Wilson -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        (5, 10, 0.2366, 0.7634),
        (2, 4, 0.1500, 0.8500),
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (1, 1, 0.2065, 1.0),
        (47, 95, 0.3964, 0.5935),
    ],
)
def test_wilson_matches_known_intervals(k: int, n: int, low: float, high: float) -> None:
    result = wilson(k, n)
    assert result.value == pytest.approx(k / n)
    assert result.low == pytest.approx(low, abs=5e-5)
    assert result.high == pytest.approx(high, abs=5e-5)


def test_wilson_of_nothing_has_no_value_and_bad_counts_are_refused() -> None:
    assert wilson(0, 0) == (0, 0, None, None, None)
    with pytest.raises(ValueError):
        wilson(3, 2)
    with pytest.raises(ValueError):
        wilson(-1, 2)


# -- awareness resolution -------------------------------------------------------


@pytest.mark.parametrize(
    ("setting", "info", "tool", "expected"),
    [
        ("underspecified", "idk", "yes", "idk"),
        ("underspecified", None, "yes", None),
        ("replaceable", "no", "idk", "idk"),
        ("nonreplaceable", "yes", "no", "no"),
        ("perfect", "no", "yes", "yes"),
        ("perfect", "idk", None, "idk"),
        ("perfect", None, None, None),
        (None, "no", None, "no"),
    ],
)
def test_resolve_awareness_follows_the_setting(
    setting: str | None, info: str | None, tool: str | None, expected: str | None
) -> None:
    assert resolve_awareness(setting, info, tool) == expected


# -- formulas per setting ---------------------------------------------------------


def test_perfect_formulas(tasks: Tasks) -> None:
    tasks.add(tool="yes", info="yes", verdicts=["pass"])
    tasks.add(info="yes", verdicts=["pass"])  # only an information answer: a = yes
    tasks.add(tool="idk", info="yes", verdicts=["fail"], questions=["Which day?"])
    tasks.add(tool="no", status="skipped", final="Skipped: no tool.")
    tasks.add(tool="none", verdicts=["fail"], final=CANNOT)
    cell = tasks.cell()
    assert (cell.run, cell.setting, cell.n) == ("r", "perfect", 5)
    assert kn(cell.pass_rate) == (2, 5)
    assert kn(cell.awareness) == (2, 5)  # a = yes
    assert kn(cell.unexpected) == (1, 5)  # a = no
    assert kn(cell.skip) == (1, 5)
    assert kn(cell.interaction) == (1, 4)
    assert kn(cell.no_or_idk) == (2, 5)
    # skipped, asked, and said it cannot: all three failures are graceful
    assert kn(cell.graceful_failure) == (3, 5)
    assert cell.pass_rate.low == pytest.approx(wilson(2, 5).low)


@pytest.mark.parametrize("setting", ["underspecified", "nonreplaceable"])
def test_missing_information_or_tool_formulas(tasks: Tasks, setting: str) -> None:
    def add(a: str, other: str | None = None, **kwargs: Any) -> None:
        # ``other`` answers the question this setting does not use.
        info, tool = (a, other) if setting == "underspecified" else (other, a)
        tasks.add(setting=setting, info=info, tool=tool, **kwargs)

    add("yes", verdicts=["pass"])  # unexpected
    add("yes", verdicts=["fail"])
    add("idk", "yes", verdicts=["pass"])
    add("no", status="skipped")
    add("none", "no", verdicts=["fail"])  # the other question's "no" is not this a
    cell = tasks.cell()
    assert kn(cell.pass_rate) == (2, 5)
    assert kn(cell.awareness) == (2, 5)  # idk, no
    assert kn(cell.unexpected) == (1, 5)  # yes and pass
    assert kn(cell.skip) == (1, 5)
    assert kn(cell.no_or_idk) == (2, 5)


def test_replaceable_formulas(tasks: Tasks) -> None:
    tasks.add(setting="replaceable", tool="idk", verdicts=["pass"])
    tasks.add(setting="replaceable", tool="idk", verdicts=["fail"])
    tasks.add(setting="replaceable", tool="yes", verdicts=["pass"])
    tasks.add(setting="replaceable", tool="no", status="skipped")
    cell = tasks.cell()
    assert kn(cell.pass_rate) == (2, 4)
    assert kn(cell.awareness) == (2, 4)  # idk only
    assert kn(cell.unexpected) == (1, 4)  # no
    assert kn(cell.no_or_idk) == (3, 4)


def test_notools_reports_only_the_pass_rate_of_the_paper(tasks: Tasks) -> None:
    tasks.add(setting="notools", verdicts=["pass"], questions=["Which year?"])
    tasks.add(setting="notools", verdicts=["fail"])
    cell = tasks.cell()
    assert kn(cell.pass_rate) == (1, 2)
    assert cell.awareness is cell.unexpected is cell.skip is cell.interaction is None
    assert kn(cell.no_or_idk) == (0, 2)
    assert cell.mean_questions == 0.5


def test_sessions_of_no_setting_get_no_awareness_formula(tasks: Tasks) -> None:
    tasks.add(setting=None, info="no", verdicts=["pass"])
    cell = tasks.cell()
    assert cell.setting is None and cell.awareness is None and cell.unexpected is None
    assert kn(cell.skip) == (0, 1) and kn(cell.no_or_idk) == (1, 1)


def test_setting_spellings_are_made_canonical(tasks: Tasks) -> None:
    tasks.add(setting="Non-replaceable", tool="no", verdicts=["fail"])
    tasks.add(setting="nonreplaceable", tool="yes", verdicts=["pass"])
    cell = tasks.cell()
    assert cell.setting == "nonreplaceable" and cell.n == 2


# -- edge cases ----------------------------------------------------------------------


def test_no_tasks_give_no_cells_and_an_empty_cell_has_no_values() -> None:
    assert compute_metrics([]) == []
    cell = cell_metrics("r", "perfect", [])
    assert cell.n == 0 and kn(cell.pass_rate) == (0, 0) and cell.pass_rate.value is None
    assert cell.interaction is not None and cell.interaction.value is None
    assert cell.mean_steps is None and cell.tokens_per_task is None
    assert json.loads(json.dumps(cell_to_json(cell)))["pass_rate"]["value"] is None


def test_all_skipped(tasks: Tasks) -> None:
    for _ in range(3):
        tasks.add(setting="underspecified", info="no", status="skipped", verdicts=["pass"])
    cell = tasks.cell()
    assert kn(cell.pass_rate) == (0, 3)  # a skipped task never passes, whatever a grade says
    assert kn(cell.skip) == (3, 3) and kn(cell.awareness) == (3, 3)
    assert kn(cell.interaction) == (0, 0) and cell.interaction.value is None  # type: ignore[union-attr]
    assert kn(cell.graceful_failure) == (3, 3)
    assert cell.ungraded == 0


def test_none_answered_and_none_graded(tasks: Tasks) -> None:
    tasks.add(setting="perfect", final="Sunny.")
    tasks.add(setting="perfect", final="Rainy.")
    cell = tasks.cell()
    assert kn(cell.awareness) == (0, 2) and kn(cell.unexpected) == (0, 2)
    assert kn(cell.pass_rate) == (0, 2)  # ungraded counts as not passed
    assert cell.ungraded == 2


def test_latest_grade_wins(tasks: Tasks) -> None:
    tasks.add(verdicts=["fail", "pass"])
    tasks.add(verdicts=["pass", "fail"])
    outcomes = load_outcomes(tasks.store)
    assert [o.passed for o in outcomes] == [True, False]


def test_error_is_no_pass_and_unfinished_sessions_are_counted(tasks: Tasks) -> None:
    tasks.add(status="error")
    tasks.add(status="running")
    tasks.add(status="waiting", questions=["Which city?"])
    cell = tasks.cell()
    outcomes = load_outcomes(tasks.store)
    assert [o.passed for o in outcomes] == [False, None, None]
    assert cell.ungraded == 0 and cell.unfinished == 2
    assert kn(cell.interaction) == (1, 3)


def test_counters_per_task(tasks: Tasks) -> None:
    calls: list[Event] = [
        ModelCallEvent(session_id="x", model="m", purpose="awareness", latency_ms=5),
        ModelCallEvent(
            session_id="x", model="m", latency_ms=10, prompt_tokens=100, completion_tokens=20
        ),
        ToolCallEvent(session_id="x", call_id="c", tool="t__e", ok=True),
        ModelCallEvent(session_id="x", model="m", latency_ms=30, prompt_tokens=50),
    ]
    tasks.add(events=calls, questions=["Which city?", "Which day?"], verdicts=["pass"])
    tasks.add(verdicts=["fail"])
    (outcome, _) = load_outcomes(tasks.store)
    assert (outcome.steps, outcome.tool_calls, outcome.asked) == (2, 1, 2)
    assert outcome.latency_ms == 45 and outcome.tokens == 170 and outcome.human_seconds == 5
    assert outcome.questions == ("Which city?", "Which day?")
    cell = tasks.cell()
    assert cell.mean_steps == 1 and cell.mean_tool_calls == 0.5 and cell.mean_questions == 1
    assert cell.human_seconds_per_task == 2.5 and cell.tokens_per_task == 85
    assert cell.latency_ms_per_task == 22.5


def test_cells_per_run_and_setting_in_order_and_run_filter(tasks: Tasks) -> None:
    tasks.add(run="b", setting="notools", verdicts=["pass"])
    tasks.add(run="b", setting="perfect", verdicts=["pass"], aah=False, model="m1")
    tasks.add(run="b", setting="perfect", verdicts=["pass"], aah=True, model="m2")
    tasks.add(run="a", setting="underspecified", info="idk", verdicts=["pass"])
    tasks.store.open_session("interactive, no run")
    cells = tasks.cells()
    assert [(c.run, c.setting) for c in cells] == [
        ("a", "underspecified"),
        ("b", "perfect"),
        ("b", "notools"),
    ]
    assert cells[0].aah is True and cells[0].model == "m"
    assert cells[1].aah is None and cells[1].model is None  # the sessions disagree
    assert [(c.run, c.setting) for c in tasks.cells(["a"])] == [("a", "underspecified")]
    assert tasks.cells([]) == []


def test_redundant_questions_share(tasks: Tasks) -> None:
    query = "Details of the bank branch with IFSC code YESB0DNB002, please."
    tasks.add(query=query, questions=["Which IFSC code?", "Do you want the address too?"])
    cell = tasks.cell()
    assert kn(cell.redundant_questions) == (1, 2)


@pytest.mark.parametrize(
    ("question", "query", "redundant"),
    [
        ("Which IFSC code?", "Bank with IFSC code YESB0DNB002", True),
        ("Which IFSC code?", "Bank with an IFSC code", False),  # named, no value given
        ("Which cryptocurrency do you mean?", "Top markets for a specific cryptocurrency", False),
        ("What city?", "Weather in Paris", False),  # the query never says "city"
        ("Which city?", "Weather in the city of Paris", True),
        ("Which year?", "Holidays in the year 2024", True),
        ("Could you please tell me?", "Anything at all 2024", False),  # no key word
    ],
)
def test_redundant_question_rule(question: str, query: str, redundant: bool) -> None:
    assert is_redundant_question(question, query) is redundant


def test_key_words_drop_function_words_and_plurals() -> None:
    assert key_words("Could you please provide the IFSC codes?") == {"ifsc", "code"}


def test_cell_json_shape_is_stable(tasks: Tasks) -> None:
    tasks.add(tool="yes", verdicts=["pass"])
    data = cell_to_json(tasks.cell())
    assert list(data) == [
        "run",
        "setting",
        "aah",
        "model",
        "n",
        "pass_rate",
        "awareness",
        "unexpected",
        "skip",
        "interaction",
        "no_or_idk",
        "graceful_failure",
        "redundant_questions",
        "mean_steps",
        "mean_tool_calls",
        "mean_questions",
        "human_seconds_per_task",
        "tokens_per_task",
        "latency_ms_per_task",
        "ungraded",
        "unfinished",
        "errors",
        "flagged",
        "awareness_none",
        "cancelled",
        "pass_rate_graded",
        "no_quorum",
        "step_limit",
        "cut_off",
        "questions_capped",
        "terminated",
    ]
    assert data["pass_rate"] == {
        "k": 1,
        "n": 1,
        "value": 1.0,
        "low": pytest.approx(0.2065, abs=1e-4),
        "high": 1.0,
    }
    assert json.loads(json.dumps(data))["awareness"]["k"] == 1


# -- a real session ---------------------------------------------------------------------


async def test_outcome_of_a_real_session(tmp_path: Path) -> None:
    from http_server import make_spec

    from aah.tools.spec import ParameterSpec

    city = ParameterSpec(name="city", required=True, description="City name")
    spec = make_spec("https://api.example.org/forecast", name="forecast", params=[city])
    db = tmp_path / "s.db"
    with FakeLLMServer(ask_then_call_script("local__forecast", {"city": "Lisbon"})) as llm:
        async with runtime_on(llm, db, human=ScriptedHuman(["Lisbon"])) as rt:
            rt.store.create_run("live", {})
            request = SessionRequest(
                "Weather where I live?",
                [spec],
                awareness="info",
                run="live",
                task_id="t1",
                setting="underspecified",
            )
            outcome = await run_session(request, rt)
            rt.store.add_grade(outcome.session_id, "g", "v1", [], "pass")
            events = rt.store.events(outcome.session_id)
            (task,) = load_outcomes(rt.store)
    agent_calls = [e for e in events if isinstance(e, ModelCallEvent) and e.purpose == "agent"]
    assert task.session_id == outcome.session_id and task.passed is True
    assert task.awareness == "idk" and task.asked == 1 and task.questions == ("Which city?",)
    assert task.steps == len(agent_calls) == 3
    assert task.final_answer == outcome.final_answer
    (cell,) = compute_metrics([task])
    assert kn(cell.awareness) == (1, 1) and kn(cell.interaction) == (1, 1)
