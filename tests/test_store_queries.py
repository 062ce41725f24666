"""The store's read-only bulk queries: a small store written through the public API, read back exactly."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from aah.events import (
    AwarenessEvent,
    FinalAnswerEvent,
    HumanAnswerEvent,
    HumanQuestionEvent,
    ModelCallEvent,
    ToolCallEvent,
)
from aah.store import (
    AnnotatorAnswer,
    GradeVerdict,
    SessionStore,
    SessionSummary,
    Step,
)


@pytest.fixture
def store(store_location: Path) -> Iterator[SessionStore]:
    """Two runs and one interactive session, with events, grades and people's answers.

    - s1 (run r1, t1, perfect): awareness, an awareness model call, an agent
      turn with two tool calls, an agent turn that asks two questions, a
      final agent turn; graded fail, labelled pass by a person, regraded pass.
    - s2 (run r1, t2, underspecified, no asking): awareness "no", skipped.
    - s3 (run r2, no task, no setting): still running, nothing logged.
    - s4 (no run): one agent turn; labelled fail by a person; one question.
    """
    with SessionStore(store_location) as opened:
        fill(opened)
        yield opened


def fill(store: SessionStore) -> None:
    store.create_run("r1", {"model": "m"})
    store.create_run("r2", {"model": "m"})
    s1 = store.open_session(
        "Weather in Oslo?", run="r1", task_id="t1", setting="perfect", model="m", session_id="s1"
    )
    store.open_session(
        "Weather?",
        run="r1",
        task_id="t2",
        setting="underspecified",
        aah=False,
        model="m",
        session_id="s2",
    )
    store.open_session("Anything", run="r2", session_id="s3")
    store.open_session("hello", model="n", session_id="s4")
    store.append_events(
        [
            AwarenessEvent(session_id="s1", question="tool", answer="yes"),
            ModelCallEvent(
                session_id="s1",
                model="m",
                purpose="awareness",
                prompt_tokens=3,
                completion_tokens=1,
                latency_ms=2.0,
            ),
            ModelCallEvent(
                session_id="s1",
                model="m",
                prompt_tokens=10,
                completion_tokens=5,
                latency_ms=10.0,
                n_tool_calls=2,
                text="calling",
            ),
            ToolCallEvent(
                session_id="s1",
                call_id="c1",
                tool="weather__current",
                status_code=200,
                ok=True,
                result="sunny",
            ),
            ToolCallEvent(session_id="s1", call_id="c2", tool="nope__x", ok=False, check="IFN"),
            ModelCallEvent(session_id="s1", model="m", latency_ms=5.5, text="Which city?"),
            HumanQuestionEvent(session_id="s1", request_id="q1", question="Which city?"),
            HumanAnswerEvent(
                session_id="s1", request_id="q1", answer="Oslo", answered_by="ann", seconds=4.0
            ),
            HumanQuestionEvent(session_id="s1", request_id="q2", question="Which day?"),
            HumanAnswerEvent(
                session_id="s1", request_id="q2", answer="", answered_by="bob", seconds=1.5
            ),
            ModelCallEvent(
                session_id="s1", model="m", prompt_tokens=20, completion_tokens=2, text="Sunny."
            ),
            FinalAnswerEvent(session_id="s1", text="Sunny."),
            AwarenessEvent(session_id="s2", question="information", answer="no"),
            ModelCallEvent(session_id="s4", model="n", latency_ms=1.0, text="hi"),
        ]
    )
    # People answer while the sessions still run: an ended session takes no answers.
    store.humans.create_human_request("s1", "Which city?", k=2, request_id="q1")
    store.humans.answer_human_request("q1", "ann", "Oslo", rating=1, seconds=4.0)
    store.humans.answer_human_request("q1", "bob", "", declined=True, rating=0, seconds=9.0)
    store.humans.create_human_request("s4", "Which language?", request_id="q4")
    store.humans.answer_human_request("q4", "ann", "English")
    store.finish_session(s1.id, "finished", "Sunny.")
    store.finish_session("s2", "skipped")
    store.add_grade("s1", "grader", "v1", ["fail"], "fail")
    store.add_grade("s1", "human:ann", "label", [], "pass")
    store.add_grade("s1", "grader", "v2", ["pass", "pass"], "pass")
    store.add_grade("s4", "human:bob", "label", [], "fail")


S1 = SessionSummary(
    id="s1",
    run="r1",
    task_id="t1",
    setting="perfect",
    aah=True,
    model="m",
    status="finished",
    query="Weather in Oslo?",
    final_answer="Sunny.",
    info_awareness=None,
    tool_awareness="yes",
    human_questions=2,
    tool_calls=2,
    tokens=3 + 1 + 10 + 5 + 20 + 2,
    agent_calls=3,
    latency_ms=2.0 + 10.0 + 5.5,
    human_seconds=4.0 + 1.5,
    questions_capped=0,
    questions=("Which city?", "Which day?"),
)
S2 = SessionSummary(
    id="s2",
    run="r1",
    task_id="t2",
    setting="underspecified",
    aah=False,
    model="m",
    status="skipped",
    query="Weather?",
    final_answer=None,
    info_awareness="no",
    tool_awareness=None,
    human_questions=0,
    tool_calls=0,
    tokens=0,
    agent_calls=0,
    latency_ms=0.0,
    human_seconds=0.0,
    questions_capped=0,
    questions=(),
)
S3 = SessionSummary(
    id="s3",
    run="r2",
    task_id=None,
    setting=None,
    aah=True,
    model=None,
    status="running",
    query="Anything",
    final_answer=None,
    info_awareness=None,
    tool_awareness=None,
    human_questions=0,
    tool_calls=0,
    tokens=0,
    agent_calls=0,
    latency_ms=0.0,
    human_seconds=0.0,
    questions_capped=0,
    questions=(),
)
S4 = SessionSummary(
    id="s4",
    run=None,
    task_id=None,
    setting=None,
    aah=True,
    model="n",
    status="running",
    query="hello",
    final_answer=None,
    info_awareness=None,
    tool_awareness=None,
    human_questions=0,
    tool_calls=0,
    tokens=0,
    agent_calls=1,
    latency_ms=1.0,
    human_seconds=0.0,
    questions_capped=0,
    questions=(),
)


@pytest.mark.parametrize(
    ("runs", "outside_runs", "expected"),
    [
        (None, False, [S1, S2, S3]),
        (["r1"], False, [S1, S2]),
        (["r2", "r2"], False, [S3]),
        ([], False, []),
        (["missing"], False, []),
        # Sessions outside a run sort first: a NULL run sorts before any name.
        (None, True, [S4, S1, S2, S3]),
        (["r2"], True, [S4, S3]),
        ([], True, [S4]),
    ],
)
def test_session_summaries_by_selection(
    store: SessionStore,
    runs: Sequence[str] | None,
    outside_runs: bool,
    expected: list[SessionSummary],
) -> None:
    with store.queries() as read:
        assert read.session_summaries(runs, outside_runs=outside_runs) == expected


def step(session_id: str, seq: int, kind: str, **fields: object) -> Step:
    row: dict[str, object] = dict.fromkeys(Step._fields)
    row |= {"session_id": session_id, "seq": seq, "kind": kind, **fields}
    return Step(**row)  # type: ignore[arg-type]


S1_STEPS = [
    step("s1", 2, "model_call", purpose="awareness", n_tool_calls=0, text=""),
    step("s1", 3, "model_call", purpose="agent", n_tool_calls=2, text="calling"),
    step("s1", 4, "tool_call", tool="weather__current", status_code=200, check="ok"),
    step("s1", 5, "tool_call", tool="nope__x", check="IFN"),
    step("s1", 6, "model_call", purpose="agent", n_tool_calls=0, text="Which city?"),
    step("s1", 7, "human_question"),
    step("s1", 9, "human_question"),
    step("s1", 11, "model_call", purpose="agent", n_tool_calls=0, text="Sunny."),
]
S4_STEPS = [step("s4", 1, "model_call", purpose="agent", n_tool_calls=0, text="hi")]


@pytest.mark.parametrize(
    ("runs", "outside_runs", "expected"),
    [
        (None, False, S1_STEPS),
        (["r2"], False, []),
        (None, True, S1_STEPS + S4_STEPS),
        ([], True, S4_STEPS),
    ],
)
def test_steps_carry_only_their_kinds_fields(
    store: SessionStore, runs: Sequence[str] | None, outside_runs: bool, expected: list[Step]
) -> None:
    with store.queries() as read:
        assert list(read.steps(runs, outside_runs=outside_runs)) == expected


def test_task_ids_leave_out_sessions_without_one(store: SessionStore) -> None:
    with store.queries() as read:
        assert read.task_ids() == {"s1": "t1", "s2": "t2"}
        assert read.task_ids(["r2"]) == {}
        assert read.task_ids(["r1"], outside_runs=True) == {"s1": "t1", "s2": "t2"}


def test_grade_verdicts_are_every_grade_oldest_first(store: SessionStore) -> None:
    s1_grades = [
        GradeVerdict("s1", "grader", "fail"),
        GradeVerdict("s1", "human:ann", "pass"),
        GradeVerdict("s1", "grader", "pass"),
    ]
    with store.queries() as read:
        assert list(read.grade_verdicts()) == s1_grades
        assert list(read.grade_verdicts(["r2"])) == []
        assert list(read.grade_verdicts(outside_runs=True)) == [
            *s1_grades,
            GradeVerdict("s4", "human:bob", "fail"),
        ]


def test_annotator_answers_by_request_first_first(store: SessionStore) -> None:
    q1 = [AnnotatorAnswer("q1", "ann", False, 1), AnnotatorAnswer("q1", "bob", True, 0)]
    with store.queries() as read:
        assert read.annotator_answers(["r1"]) == q1
        assert read.annotator_answers(["r2"]) == []
        assert read.annotator_answers(outside_runs=True) == [
            *q1,
            AnnotatorAnswer("q4", "ann", False, None),
        ]


def test_queries_see_writes_made_after_they_opened(store: SessionStore) -> None:
    with store.queries() as read:
        store.add_grade("s2", "grader", "v1", [], "fail")
        assert list(read.grade_verdicts(["r1"]))[-1] == GradeVerdict("s2", "grader", "fail")


def test_queries_do_not_wait_for_a_writer(store: SessionStore) -> None:
    with store._write() as db:  # the test holds the write lock open on purpose
        db.execute("UPDATE sessions SET task_id = 'renamed' WHERE id = 's1'")
        with store.queries() as read:
            assert read.task_ids(["r1"]) == {"s1": "t1", "s2": "t2"}  # the last commit
    with store.queries() as read:
        assert read.task_ids(["r1"]) == {"s1": "renamed", "s2": "t2"}


def test_a_run_name_alone_is_refused(store: SessionStore) -> None:
    with store.queries() as read, pytest.raises(TypeError, match="sequence of run names"):
        read.steps("r1")
