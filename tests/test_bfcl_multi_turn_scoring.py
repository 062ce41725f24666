"""BFCL multi-turn scores: each entry's turn checks read back from the store, the figures, the report."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from aah.benchmark.bfcl import bfcl_run_scores
from aah.benchmark.bfcl.multi_turn_scoring import (
    GRADER,
    MULTI_TURN_FIGURES,
    score_multi_turn_run,
)
from aah.benchmark.bfcl.multi_turn_tasks import (
    MULTI_TURN_CATEGORIES,
    MultiTurnTask,
    load_multi_turn,
)
from aah.benchmark.bfcl.tasks import turn_text
from aah.events import (
    ErrorEvent,
    Event,
    HumanAnswerEvent,
    HumanQuestionEvent,
    ModelCallEvent,
    StoppedEvent,
    StopReason,
    ToolCallEvent,
    TurnEndedEvent,
    UserTurnEvent,
)
from aah.report import build_report, render_csv, render_html, render_json, render_markdown
from aah.report.text import escape_markdown
from aah.store import SessionStatus, SessionStore
from aah.tools import ASK_HUMAN

MODEL = "fake-model"


@pytest.fixture(scope="module")
def tasks(shared_data: Path) -> dict[str, MultiTurnTask]:
    """BFCL's own multi-turn entries, by id."""
    return {t.id: t for t in load_multi_turn(shared_data / "bfcl", MULTI_TURN_CATEGORIES)}


# -- a whole session from a compact description ---------------------------------


@dataclass(frozen=True)
class Call:
    """A reply with one call to a BFCL function, and how the turn's check reads the call."""

    name: str
    offered: bool = True
    guessed: tuple[str, ...] = ()


@dataclass(frozen=True)
class Ask:
    """A reply that asks a person (``ask_human``), and the person's answer."""

    question: str


IFE = "IFE"  # a reply whose call could not be read


@dataclass(frozen=True)
class Turn:
    """One turn: its replies in order, whether it passes (each reading), whether it ended.

    A step is a reply without a call (text), a ``Call``, an ``Ask`` or ``IFE``.
    """

    steps: tuple[str | Call | Ask, ...] = ()
    passes: bool = True
    official: bool | None = None  # None: as ``passes``
    ended: bool = True
    restored: bool = False
    error_type: str = "instance_state_mismatch"


def default_turn(task: MultiTurnTask, index: int) -> Turn:
    """A right turn: a call and a closing reply, or a refusal where nothing can be done."""
    if not task.ground_truth[index]:
        return Turn(("I cannot do that with the functions I have.",))
    return Turn((Call("ls"), "Done."))


@dataclass
class _Log:
    session_id: str
    events: list[Event] = field(default_factory=list)
    n: int = 0

    def next_id(self) -> str:
        self.n += 1
        return f"{self.session_id}-{self.n}"


def write_entry(
    store: SessionStore,
    run: str,
    task: MultiTurnTask,
    turns: Mapping[int, Turn] | None = None,
    *,
    upto: int | None = None,
    stop: StopReason | None = None,
    status: SessionStatus | None = None,
) -> str:
    """Write one entry's session: its first ``upto`` turns (all by default) as described.

    Turns not in ``turns`` are ``default_turn``s. ``stop`` ends the session
    with a ``StoppedEvent`` (the status is then that reason unless given).
    """
    session = store.open_session(
        task.query, run=run, task_id=task.id, setting="bfcl", aah=True, model=MODEL
    )
    log = _Log(session.id)
    passed = official = True
    first_failure: tuple[str, int] | None = None
    for index in range(len(task.turns) if upto is None else upto):
        turn = (turns or {}).get(index) or default_turn(task, index)
        if index:
            log.events.append(
                UserTurnEvent(
                    session_id=log.session_id, turn=index, text=turn_text(task.turns[index])
                )
            )
        calls = _write_steps(log, turn.steps)
        if not turn.ended:
            continue
        passed &= turn.passes
        official &= turn.passes if turn.official is None else turn.official
        if not turn.passes and first_failure is None:
            first_failure = (turn.error_type, index)
        check = {
            "passed": passed,
            "passed_official": official,
            "turn_passed": turn.passes,
            "ground_truth_empty": not task.ground_truth[index],
            "error_type": first_failure[0] if first_failure else None,
            "failed_turn": first_failure[1] if first_failure else None,
            "reason": f"turn {first_failure[1]} failed" if first_failure else "",
            "calls": calls,
            "guessed": any(call["guessed"] for call in calls),
            "restored": turn.restored,
        }
        log.events.append(
            TurnEndedEvent(session_id=log.session_id, turn=index, state={}, check=check)
        )
    if stop is not None:
        log.events.append(StoppedEvent(session_id=log.session_id, reason=stop, message="stopped"))
    if status == "error":
        log.events.append(ErrorEvent(session_id=log.session_id, message="boom", where="agent"))
    store.append_events(log.events)
    ending: Any = status or stop or "finished"
    if ending != "running":
        store.end_session(log.session_id, ending, None if stop or status else "Done.")
    return log.session_id


def _write_steps(log: _Log, steps: Sequence[str | Call | Ask]) -> list[dict[str, Any]]:
    """Log a turn's replies and calls; return its calls as the turn's check has them."""
    calls: list[dict[str, Any]] = []
    sid = log.session_id
    for step in steps:
        if isinstance(step, Call):
            log.events.append(ModelCallEvent(session_id=sid, model=MODEL, n_tool_calls=1))
            log.events.append(
                ToolCallEvent(
                    session_id=sid,
                    call_id=log.next_id(),
                    tool=step.name,
                    arguments={"value": "x"},
                    ok=step.offered,
                    check="ok" if step.offered else "IFN",
                )
            )
            calls.append(
                {"name": step.name, "offered": step.offered, "guessed": list(step.guessed)}
            )
        elif isinstance(step, Ask):
            request = log.next_id()
            log.events.append(ModelCallEvent(session_id=sid, model=MODEL, n_tool_calls=1))
            log.events.append(
                ToolCallEvent(session_id=sid, call_id=request, tool=ASK_HUMAN, ok=True)
            )
            log.events.append(
                HumanQuestionEvent(session_id=sid, request_id=request, question=step.question)
            )
            log.events.append(
                HumanAnswerEvent(
                    session_id=sid, request_id=request, answer="It is report.pdf.",
                    answered_by="bfcl-oracle",
                )
            )  # fmt: skip
        elif step == IFE:
            log.events.append(
                ModelCallEvent(
                    session_id=sid, model=MODEL, n_tool_calls=0, raw='<tool_call>{"name": "mv"'
                )
            )
            log.events.append(
                ToolCallEvent(
                    session_id=sid, call_id=log.next_id(), tool="mv", ok=False, check="IFE"
                )
            )
        else:
            log.events.append(ModelCallEvent(session_id=sid, model=MODEL, text=step))
    return calls


def new_run(store: SessionStore, name: str, *, aah: bool = False) -> str:
    store.create_run(name, {"benchmark": "bfcl", "model": MODEL, "aah": aah, "turns": "multi"})
    return name


def votes_of(store: SessionStore, run: str) -> dict[str, dict[str, Any]]:
    """Each scored entry's vote, by entry id."""
    with store.queries() as queries:
        return {
            stored[0]["id"]: stored[0] for _, stored in queries.grade_votes([run], GRADER) if stored
        }


def empty_index(task: MultiTurnTask) -> int:
    return next(i for i, truth in enumerate(task.ground_truth) if not truth)


def figure(store: SessionStore, run: str, name: str) -> tuple[int, int]:
    (scores,) = bfcl_run_scores(store, run, MODEL)
    value = scores.figures[name]
    return value.k, value.n


# -- entries: pass, fail, cut short, in error -------------------------------------


def test_an_entry_passes_when_every_turn_ended_and_passed(
    tasks: dict[str, MultiTurnTask], tmp_path: Path
) -> None:
    task = tasks["multi_turn_base_0"]
    with SessionStore(tmp_path / "s.db") as store:
        write_entry(store, new_run(store, "r"), task)
        assert score_multi_turn_run(store, "r", list(tasks.values())) == 1
        vote = votes_of(store, "r")["multi_turn_base_0"]
    assert vote["passed"] is True and vote["passed_official"] is True
    assert (vote["turns"], vote["turns_ended"]) == (4, 4)
    assert vote["error_type"] is None and vote["failed_turn"] is None
    assert vote["category"] == "multi_turn_base" and vote["language"] == "en"
    assert vote["empty_turns"] == [] and vote["restored"] is False


def test_an_entry_that_fails_at_a_turn_names_it(
    tasks: dict[str, MultiTurnTask], tmp_path: Path
) -> None:
    task = tasks["multi_turn_base_1"]
    with SessionStore(tmp_path / "s.db") as store:
        write_entry(
            store, new_run(store, "r"), task, {2: Turn((Call("ls"), "Done."), passes=False)}
        )
        score_multi_turn_run(store, "r", list(tasks.values()))
        vote = votes_of(store, "r")["multi_turn_base_1"]
        assert figure(store, "r", "mt_multi_turn_base") == (0, 1)
    assert vote["passed"] is False and vote["passed_official"] is False
    assert vote["error_type"] == "instance_state_mismatch" and vote["failed_turn"] == 2
    assert vote["turns_ended"] == len(task.turns)


def test_an_entry_cut_short_at_the_step_limit_is_force_terminated(
    tasks: dict[str, MultiTurnTask], store_location: Path
) -> None:
    task = tasks["multi_turn_long_context_0"]
    loop = Turn((Call("ls"), Call("ls"), Call("ls")), ended=False)
    with SessionStore(store_location) as store:
        write_entry(store, new_run(store, "r"), task, {2: loop}, upto=3, stop="step_limit")
        score_multi_turn_run(store, "r", list(tasks.values()))
        vote = votes_of(store, "r")["multi_turn_long_context_0"]
        assert figure(store, "r", "mt_multi_turn_long_context_official") == (0, 1)
    assert vote["passed"] is False and vote["passed_official"] is False
    assert vote["error_type"] == "force_terminated"
    assert (vote["turns_ended"], vote["failed_turn"]) == (2, 2)
    assert vote["reason"] == "2 of 4 turns ended (step_limit)"


def test_sessions_in_error_or_unfinished_are_counted_not_scored(
    tasks: dict[str, MultiTurnTask], store_location: Path, tmp_path: Path
) -> None:
    with SessionStore(store_location) as store:
        run = new_run(store, "r")
        write_entry(store, run, tasks["multi_turn_base_0"])
        write_entry(store, run, tasks["multi_turn_base_1"], upto=1, status="error")
        write_entry(store, run, tasks["multi_turn_base_2"], upto=2, status="running")
        assert score_multi_turn_run(store, run, list(tasks.values())) == 1
        (scores,) = bfcl_run_scores(store, run, MODEL)
        report = build_report(store, [run], data_dir=tmp_path / "none")
    assert scores.multi_turn is not None
    assert (scores.multi_turn.scored, scores.multi_turn.errors, scores.multi_turn.unscored) == (
        1,
        1,
        1,
    )
    assert (scores.scored, scores.unscored) == (0, 0)  # no single-turn item
    assert scores.figures["mt_accuracy"].n == 1
    text = render_markdown(report)
    assert "1 session(s) ended in error and are not scored" in text
    assert "1 session(s) are not finished or not scored yet" in text


def test_rescoring_adds_nothing_and_keeps_the_figures(
    tasks: dict[str, MultiTurnTask], tmp_path: Path
) -> None:
    with SessionStore(tmp_path / "s.db") as store:
        run = new_run(store, "r")
        write_entry(store, run, tasks["multi_turn_base_0"])
        write_entry(store, run, tasks["multi_turn_miss_param_0"])
        assert score_multi_turn_run(store, run, list(tasks.values())) == 2
        before = bfcl_run_scores(store, run, MODEL)
        assert score_multi_turn_run(store, run, list(tasks.values())) == 0
        with store.queries() as queries:
            assert len(queries.grade_votes([run], GRADER)) == 2
        assert bfcl_run_scores(store, run, MODEL) == before


# -- the empty-ground-truth turns ------------------------------------------------

# miss_param entry -> (what its empty turn did, the reading): each reading, and each precedence.
MISS_PARAM_CASES: dict[int, tuple[tuple[str | Call | Ask, ...], str]] = {
    0: ((Ask("Which file?"), Call("mv", guessed=("report.pdf",)), "Moved."), "guessed"),
    1: ((Call("ls"), "Which file in the document directory should I move?"), "called"),
    2: ((IFE, "Which file do you mean?"), "attempted"),
    3: (('mv(source="a.pdf", destination="temp")',), "attempted"),
    4: ((Ask("Which file should I move?"), "I cannot do this without the file name."), "asked"),
    5: (("Which file in the document directory should I move?",), "asked"),
    6: (("I cannot do this: the file to move was not named, and I have no way to find it.",),
        "declined"),
    7: (("Done! Everything has been moved.",), "answered"),
}  # fmt: skip


def test_each_reading_of_a_missing_parameter_turn_and_their_precedence(
    tasks: dict[str, MultiTurnTask], store_location: Path
) -> None:
    with SessionStore(store_location) as store:
        run = new_run(store, "r")
        for number, (steps, _) in MISS_PARAM_CASES.items():
            task = tasks[f"multi_turn_miss_param_{number}"]
            write_entry(store, run, task, {empty_index(task): Turn(steps)})
        score_multi_turn_run(store, run, list(tasks.values()))
        votes = votes_of(store, run)
        (scores,) = bfcl_run_scores(store, run, MODEL)
    for number, (_, reading) in MISS_PARAM_CASES.items():
        task = tasks[f"multi_turn_miss_param_{number}"]
        turns = votes[task.id]["empty_turns"]
        assert [(t["turn"], t["reading"]) for t in turns] == [(empty_index(task), reading)], number
    assert votes["multi_turn_miss_param_0"]["empty_turns"][0]["asked_any"] is True
    assert votes["multi_turn_miss_param_7"]["empty_turns"][0]["reply"] == (
        "Done! Everything has been moved."
    )
    counts = {name: (v.k, v.n) for name, v in scores.figures.items()}
    assert counts["miss_param_guessed"] == (1, 8)
    assert counts["miss_param_called"] == (1, 8)
    assert counts["miss_param_attempted"] == (2, 8)
    assert counts["miss_param_asked"] == (2, 8)
    assert counts["miss_param_declined"] == (1, 8)
    assert counts["miss_param_answered"] == (1, 8)
    # 0, 1, 2, 4, 5: a question to a person or a question in the last reply, whatever else
    assert counts["miss_param_asked_any"] == (5, 8)
    assert "miss_func_noticed" not in counts  # no miss_func entry: no such figure


def test_missing_function_turns_read_noticed_called_missing_or_misused(
    tasks: dict[str, MultiTurnTask], tmp_path: Path
) -> None:
    cases = {
        0: Turn((Call("sort", offered=False), "Sorted.")),
        1: Turn((Call("cat"), "Here it is.")),
        2: Turn(("None of the available functions can do that, so I am unable to.",)),
        3: Turn(("Which function should I use for that?",)),
        4: Turn((Call("sort", offered=False), Call("cat"), "Done.")),
    }
    with SessionStore(tmp_path / "s.db") as store:
        run = new_run(store, "r")
        for number, turn in cases.items():
            task = tasks[f"multi_turn_miss_func_{number}"]
            write_entry(store, run, task, {empty_index(task): turn})
        score_multi_turn_run(store, run, list(tasks.values()))
        votes = votes_of(store, run)
        (scores,) = bfcl_run_scores(store, run, MODEL)
    read = {number: votes[f"multi_turn_miss_func_{number}"]["empty_turns"][0] for number in cases}
    assert [read[n]["reading"] for n in cases] == [
        "called",
        "called",
        "declined",
        "asked",
        "called",
    ]
    assert [(read[n]["called_missing"], read[n]["misused"]) for n in cases] == [
        (True, False),
        (False, True),
        (False, False),
        (False, False),
        (True, True),
    ]
    assert read[4]["calls"] == ["sort", "cat"]
    counts = {name: (v.k, v.n) for name, v in scores.figures.items()}
    assert counts["miss_func_noticed"] == (2, 5)
    assert counts["miss_func_called_missing"] == (2, 5)
    assert counts["miss_func_misused"] == (2, 5)


def test_a_turn_that_never_ended_is_read_from_its_tool_calls(
    tasks: dict[str, MultiTurnTask], tmp_path: Path
) -> None:
    task = tasks["multi_turn_miss_func_0"]
    empty = empty_index(task)
    loop = Turn((Call("sort", offered=False), Call("cat")), ended=False)
    with SessionStore(tmp_path / "s.db") as store:
        run = new_run(store, "r")
        write_entry(store, run, task, {empty: loop}, upto=empty + 1, stop="step_limit")
        score_multi_turn_run(store, run, list(tasks.values()))
        (turn,) = votes_of(store, run)[task.id]["empty_turns"]
    assert turn["ended"] is False and turn["reading"] == "called"
    assert (turn["called_missing"], turn["misused"]) == (True, True)


def test_a_call_on_an_empty_turn_fails_science_md_but_not_bfcl_eval(
    tasks: dict[str, MultiTurnTask], tmp_path: Path
) -> None:
    task = tasks["multi_turn_miss_param_0"]
    harmless = Turn(
        (Call("ls"), "Which file?"), passes=False, official=True, error_type="call_on_empty_turn"
    )
    with SessionStore(tmp_path / "s.db") as store:
        run = new_run(store, "r")
        write_entry(store, run, task, {empty_index(task): harmless})
        write_entry(store, run, tasks["multi_turn_miss_param_1"])
        score_multi_turn_run(store, run, list(tasks.values()))
        vote = votes_of(store, run)[task.id]
        (scores,) = bfcl_run_scores(store, run, MODEL)
    assert vote["passed"] is False and vote["passed_official"] is True
    assert vote["error_type"] == "call_on_empty_turn"
    assert vote["failed_turn"] == empty_index(task)
    assert (scores.figures["mt_accuracy"].k, scores.figures["mt_accuracy"].n) == (1, 2)
    official = scores.figures["mt_accuracy_official"]
    assert (official.k, official.n) == (2, 2)


def test_restored_entries_are_counted(tasks: dict[str, MultiTurnTask], tmp_path: Path) -> None:
    with SessionStore(tmp_path / "s.db") as store:
        run = new_run(store, "r")
        write_entry(
            store, run, tasks["multi_turn_base_0"], {2: Turn((Call("ls"), "Done."), restored=True)}
        )
        write_entry(store, run, tasks["multi_turn_base_1"])
        score_multi_turn_run(store, run, list(tasks.values()))
        assert votes_of(store, run)["multi_turn_base_0"]["restored"] is True
        (scores,) = bfcl_run_scores(store, run, MODEL)
        report = build_report(store, [run], data_dir=tmp_path / "none")
    assert scores.multi_turn is not None and scores.multi_turn.restored == 1
    text = render_markdown(report)
    assert "1 entry was restored" in text
    assert "turns without ground truth" not in text  # base entries have none here


# -- the report --------------------------------------------------------------------

HOSTILE = "<script>alert('x')</script> I cannot do this without the file name."


def test_the_report_shows_plain_and_aah_runs_in_every_format(
    tasks: dict[str, MultiTurnTask], tmp_path: Path
) -> None:
    task = tasks["multi_turn_miss_param_0"]
    func = tasks["multi_turn_miss_func_0"]
    with SessionStore(tmp_path / "s.db") as store:
        plain = new_run(store, "mt-plain")
        write_entry(store, plain, task, {empty_index(task): Turn((HOSTILE,))})
        called = Turn((Call("sort", offered=False),), passes=False, official=True)
        write_entry(store, plain, func, {empty_index(func): called})
        write_entry(store, plain, tasks["multi_turn_base_0"])
        aah = new_run(store, "mt-aah", aah=True)
        write_entry(store, aah, task, {empty_index(task): Turn((Ask("Which file?"), "Thanks."))})
        write_entry(store, aah, func, {empty_index(func): Turn(("Which function should I use?",))})
        write_entry(store, aah, tasks["multi_turn_base_0"], {1: Turn((Call("ls"),), passes=False)})
        for run in (plain, aah):
            score_multi_turn_run(store, run, list(tasks.values()))
        report = build_report(store, [plain, aah], data_dir=tmp_path / "none")
    text = render_markdown(report)
    for title in (
        "BFCL multi-turn accuracy",
        "BFCL multi-turn: miss_param turns without ground truth",
        "BFCL multi-turn: miss_func turns without ground truth",
        "BFCL multi-turn: replies on turns without ground truth",
    ):
        assert escape_markdown(title) in text
    assert "<script>" not in text
    assert "BFCL AST per category" not in text  # no single-turn item in these runs
    assert "mt-plain" in text and "mt-aah" in text and "bfcl-eval" in text

    sections = {s["run"]: s for s in json.loads(render_json(report))["bfcl"]}
    assert (sections["mt-plain"]["aah"], sections["mt-aah"]["aah"]) == (False, True)
    plain_figures, aah_figures = sections["mt-plain"]["figures"], sections["mt-aah"]["figures"]
    for name in (
        "mt_accuracy",
        "mt_multi_turn_miss_param",
        "miss_param_asked",
        "miss_param_guessed",
    ):
        assert name in plain_figures and {"value", "low", "high", "n", "k"} <= set(
            plain_figures[name]
        )
    assert "miss_func_noticed" in plain_figures
    assert (plain_figures["mt_accuracy"]["k"], plain_figures["mt_accuracy"]["n"]) == (2, 3)
    assert (aah_figures["mt_accuracy"]["k"], aah_figures["mt_accuracy"]["n"]) == (2, 3)
    assert (plain_figures["miss_param_declined"]["k"], aah_figures["miss_param_asked"]["k"]) == (
        1,
        1,
    )
    assert (plain_figures["miss_func_noticed"]["k"], aah_figures["miss_func_noticed"]["k"]) == (
        0,
        1,
    )
    multi = sections["mt-plain"]["multi_turn"]
    assert (multi["scored"], multi["errors"], multi["unscored"], multi["restored"]) == (3, 0, 0, 0)
    assert {
        "id": task.id,
        "category": task.category,
        "turn": empty_index(task),
        "reading": "declined",
        "reply": HOSTILE,
    } in multi["empty_turns"]
    assert set(plain_figures) <= set(MULTI_TURN_FIGURES)

    html = render_html(report)
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
    assert "BFCL multi-turn accuracy" in html

    rows = list(csv.reader(io.StringIO(render_csv(report))))
    assert any(row[:4] == ["mt-aah", MODEL, "en", "miss_func_noticed"] for row in rows)
