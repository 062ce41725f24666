"""Repeats: --epochs runs each task K times (resumable), the report adds pass@k, pass^k
and agreement across epochs."""

from __future__ import annotations

import asyncio
import json
from math import comb
from pathlib import Path

import pytest
from runtime_support import fake_config
from test_cli import aah

from aah.benchmark import RunOptions, epoch_task_id, epoch_tasks
from aah.benchmark.failtalms import BatchRunner, batch_human_factory, choose_tasks
from aah.benchmark.failtalms.dataset import load_tasks
from aah.errors import AahError
from aah.events import FinalAnswerEvent
from aah.report import build_report, render_json
from aah.report.tables import report_tables
from aah.scoring.metrics import TaskOutcome
from aah.scoring.repeats import (
    Estimate,
    base_task_id,
    bootstrap_mean,
    epoch_of,
    pass_at_k,
    pass_hat_k,
    repeat_scores,
)
from aah.store.sessions import SessionStore
from aah.testing.fake_llm import FakeLLMServer
from aah.tools.registry.build import build_registry
from aah.tools.registry.read import Registry

AGENT = {
    "rules": [
        {"when": {"has_tools": False}, "reply": "Yes: I have what I need."},
        {"reply": "Done: here it is."},
    ]
}


# -- the estimators ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "c", "k", "at", "hat"),
    [
        (5, 2, 1, 0.4, 0.4),  # k = 1: both are c / n
        (5, 2, 2, 1 - comb(3, 2) / comb(5, 2), comb(2, 2) / comb(5, 2)),  # 0.7, 0.1
        (5, 2, 4, 1.0, 0.0),  # 4 draws cannot all miss 2 passes; cannot all pass
        (3, 3, 3, 1.0, 1.0),
        (3, 0, 2, 0.0, 0.0),
        (4, 1, 4, 1.0, 0.0),
    ],
)
def test_pass_at_k_and_pass_hat_k_by_hand(n: int, c: int, k: int, at: float, hat: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(at)
    assert pass_hat_k(n, c, k) == pytest.approx(hat)


@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (3, 1, 0), (3, 1, 4), (0, 0, 1), (3, -1, 1)])
def test_impossible_counts_are_refused(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError, match="need 0 <= c <= n"):
        pass_at_k(n, c, k)
    with pytest.raises(ValueError, match="need 0 <= c <= n"):
        pass_hat_k(n, c, k)


def test_bootstrap_is_reproducible_and_brackets_the_mean() -> None:
    values = [1.0, 0.0, 0.5, 1.0, 0.0, 1.0, 1 / 3, 2 / 3]
    first, again = bootstrap_mean(values), bootstrap_mean(values)
    assert first == again
    assert first.value == pytest.approx(sum(values) / len(values))
    assert first.low is not None and first.high is not None
    assert first.low < first.value < first.high and first.tasks == 8
    assert bootstrap_mean([0.5, 0.5]) == Estimate(0.5, 0.5, 0.5, 2)
    assert bootstrap_mean([]) == Estimate(None, None, None, 0)


@pytest.mark.parametrize(
    ("task_id", "base", "epoch"),
    [("perfect-12", "perfect-12", 1), ("perfect-12#epoch3", "perfect-12", 3), ("a#b", "a#b", 1)],
)
def test_epoch_ids_round_trip(task_id: str, base: str, epoch: int) -> None:
    assert (base_task_id(task_id), epoch_of(task_id)) == (base, epoch)
    assert epoch_task_id(base, epoch) == task_id or epoch == 1


def outcome(task: str, passed: bool | None, status: str = "finished") -> TaskOutcome:
    return TaskOutcome(
        session_id=f"s-{task}-{passed}-{id(object())}",
        run="r",
        setting="perfect",
        aah=True,
        status=status,
        skipped=False,
        passed=passed,
        info_awareness=None,
        tool_awareness="yes",
        awareness="yes",
        asked=0,
        steps=1,
        tool_calls=0,
        human_seconds=0.0,
        tokens=0,
        latency_ms=0.0,
        final_answer="",
        query="q",
        task_id=task,
    )


def test_repeat_scores_of_three_tasks_by_hand() -> None:
    # t1 passes every epoch, t2 once of three, t3 never; t4's only trial is ungraded.
    trials = {"t1": [True] * 3, "t2": [True, False, False], "t3": [False] * 3}
    outcomes = [
        outcome(epoch_task_id(task, epoch), passed)
        for task, results in trials.items()
        for epoch, passed in enumerate(results, start=1)
    ]
    outcomes.append(outcome("t4", None))
    scores = repeat_scores("r", "perfect", outcomes)
    assert (scores.tasks, scores.epochs, scores.least_trials) == (3, 3, 3)
    assert scores.pass_at[1].value == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert scores.pass_at[3].value == pytest.approx(2 / 3)
    assert scores.pass_hat[3].value == pytest.approx(1 / 3)
    assert scores.pass_hat[2].value == pytest.approx((1 + 0 + 0) / 3)
    assert (scores.unanimous.k, scores.unanimous.n) == (2, 3)
    # Pairs that agree: t1 3 of 3, t2 1 of 3, t3 3 of 3.
    assert scores.pairwise == pytest.approx((1 + 1 / 3 + 1) / 3)


def test_an_error_is_a_failed_trial_and_uneven_trials_average_over_eligible_tasks() -> None:
    outcomes = [
        outcome("t1", True),
        outcome("t1#epoch2", False, status="error"),
        outcome("t2", True),
    ]
    scores = repeat_scores("r", "perfect", outcomes)
    assert (scores.epochs, scores.least_trials) == (2, 1)
    assert scores.pass_at[1].value == pytest.approx((0.5 + 1) / 2)
    assert scores.pass_at[2] == Estimate(1.0, 1.0, 1.0, 1)  # only t1 has 2 trials
    assert scores.pass_hat[2].value == 0.0


# -- the runner --------------------------------------------------------------------------


def test_epoch_tasks_go_epoch_by_epoch_under_their_own_ids(shared_data: Path) -> None:
    tasks = choose_tasks(load_tasks(shared_data, ["perfect"]), 2, [])
    ids = [task.id for task in epoch_tasks(tasks, 3)]
    first, second = (task.id for task in tasks)
    assert ids == [
        first,
        second,
        f"{first}#epoch2",
        f"{second}#epoch2",
        f"{first}#epoch3",
        f"{second}#epoch3",
    ]
    assert epoch_tasks(tasks, 1) == tasks
    with pytest.raises(AahError, match="at least once"):
        epoch_tasks(tasks, 0)


@pytest.fixture(scope="module")
def registry_path(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("registry") / "registry.db"
    build_registry(shared_data, path)
    return path


def run_epochs(tasks: list, db: Path, server: FakeLLMServer, registry: Path, epochs: int) -> object:  # type: ignore[type-arg]
    runner = BatchRunner(
        RunOptions(run="rep", concurrency=4, epochs=epochs),
        Registry(registry),
        fake_config(server),
        batch_human_factory("oracle", Registry(registry)),
    )
    return asyncio.run(runner.run(tasks, db))


def test_epochs_run_every_task_k_times_and_resume_per_epoch(
    shared_data: Path, registry_path: Path, tmp_path: Path
) -> None:
    tasks = choose_tasks(load_tasks(shared_data, ["perfect"]), 2, [])
    db = tmp_path / "rep.db"
    with FakeLLMServer(AGENT) as llm:
        first = run_epochs(tasks, db, llm, registry_path, 2)
    assert first.finished == 4  # type: ignore[attr-defined]
    # More epochs later: only the new epoch's sessions run.
    with FakeLLMServer(AGENT) as llm:
        more = run_epochs(tasks, db, llm, registry_path, 3)
    assert (more.already_done, more.finished) == (4, 2)  # type: ignore[attr-defined]
    with SessionStore(db) as store:
        ids = sorted(s.task_id or "" for s in store.list_sessions(run="rep"))
        assert ids == sorted(epoch_task_id(t.id, e) for t in tasks for e in (1, 2, 3))
        # Grade: the first task passes every epoch, the second only in epoch 1.
        for session in store.list_sessions(run="rep"):
            task_id = session.task_id or ""
            verdict = (
                "pass" if task_id.startswith(tasks[0].id) or epoch_of(task_id) == 1 else "fail"
            )
            store.add_grade(session.id, "grader", "v1", [verdict], verdict)  # type: ignore[arg-type]
        report = build_report(store, data_dir=shared_data)
    data = json.loads(render_json(report))
    (repeats,) = data["repeats"]
    assert (repeats["tasks"], repeats["epochs"]) == (2, 3)
    assert repeats["pass_at"]["1"]["value"] == pytest.approx((1 + 1 / 3) / 2)
    assert repeats["pass_at"]["3"]["value"] == pytest.approx(1.0)
    assert repeats["pass_hat"]["3"]["value"] == pytest.approx(0.5)
    assert (repeats["unanimous"]["k"], repeats["unanimous"]["n"]) == (1, 2)
    table = next(t for t in report_tables(report) if t.title == "Repeats: pass@k and pass^k")
    assert table.columns[4:] == [
        "pass@1",
        "pass@2",
        "pass@3",
        "pass^1",
        "pass^2",
        "pass^3",
        "all epochs agree",
        "pair agreement",
    ]
    assert any("repeats its tasks (epochs)" in note for note in report.notes)
    # IAC finds each repeat's task: every session is scored.
    (patterns,) = data["error_patterns"]
    assert patterns["tasks"] == 6


def test_a_report_without_repeats_has_no_repeat_table(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "one.db") as store:
        store.create_run("once", {"model": "m"})
        opened = store.open_session("q", run="once", task_id="perfect-1", setting="perfect")
        store.append_event(FinalAnswerEvent(session_id=opened.id, text="x"))
        store.finish_session(opened.id, "finished", "x")
        report = build_report(store)
    assert report.repeats == []
    assert not any(t.title.startswith("Repeats") for t in report_tables(report))


def test_cli_epochs_flag(tmp_path: Path) -> None:
    bad = aah("bench", "run", "--run", "r", "--epochs", "0", "--db", str(tmp_path / "a.db"))
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
