"""`aah sessions export --tau2` keeps a run's failed simulations, as τ²'s run records failed samples.

Found with the real tiny model (tests/interop/test_tau2_real.py): retail's
first request overflows its context, a mock simulation runs into the task's
time limit. Such a session ends in error, graded 0 as agent_error, but the
export left it out, so τ²'s figures from the file counted only the
simulations that reached an end (every one failing: no file at all).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from runtime_support import fake_config
from tau2_data import domain
from typer.testing import CliRunner

from aah.benchmark import RunOptions
from aah.benchmark.tau2 import load_tau2_tasks
from aah.benchmark.tau2.grading import _without_nl
from aah.benchmark.tau2.runner import Tau2Runner, run_tasks, score_tau2_run, tau2_results
from aah.benchmark.tau2.scripted import ScriptedTau2User, gold_agent_script, gold_plan, marker
from aah.cli import app
from aah.store import SessionStore
from aah.testing.fake_llm import FakeLLMServer

# What llama-cpp-python's server answers a request over its context (as the tiny model's did).
OVERFLOW = {
    "error": {
        "status": 400,
        "message": "This model's maximum context length is 4096 tokens. However, you "
        "requested 4903 tokens (4855 in the messages, 48 in the completion).",
        "type": "invalid_request_error",
        "code": "context_length_exceeded",
    }
}


def _run(wheel: Path, db: Path, gold: list[str], failing: list[str]) -> dict[str, dict[str, Any]]:
    """Airline tasks: ``gold`` played to their end, ``failing`` refused at the agent's first step."""
    airline = domain("airline", wheel)
    tasks = load_tau2_tasks(airline, ids=gold + failing)
    script = gold_agent_script([t for t in tasks if t.id in gold])
    refusals = [
        {"when": {"last_role": "user", "last_message_contains": marker(t, 0)}, "reply": OVERFLOW}
        for t in tasks
        if t.id in failing
    ]
    script["rules"] = refusals + script["rules"]

    def user(_domain: Any, task: Any) -> ScriptedTau2User:
        return ScriptedTau2User(gold_plan(task))

    options = RunOptions(run="t", aah=False, concurrency=4)
    with FakeLLMServer(script) as llm:
        runner = Tau2Runner(options, fake_config(llm), {"airline": airline}, tasks, user)
        summary = asyncio.run(runner.run(run_tasks(tasks), db))
    assert summary.errors == len(failing), summary.error_messages
    with SessionStore(db) as store:
        score_tau2_run(store, "t")
        return {row["task_id"]: row for row in tau2_results(store, "t")}


def _export(db: Path, out: Path) -> Any:
    return CliRunner().invoke(
        app, ["sessions", "export", "--tau2", str(out), "--run", "t", "--db", str(db)]
    )


def test_failed_simulations_are_exported_as_taus_failed_samples(
    tau2_wheel: Path, tmp_path: Path
) -> None:
    """The file holds every simulation: a failed one as agent_error, reward 0, skipped, with why;
    τ²'s evaluator grades each to the stored reward, and τ²'s average is the run's."""
    db = tmp_path / "t.db"
    stored = _run(tau2_wheel, db, gold=["3"], failing=["14"])
    assert stored["airline/3"]["reward"] == 1.0
    assert stored["airline/14"]["termination"] == "agent_error"
    out = tmp_path / "results.json"
    done = _export(db, out)
    assert done.exit_code == 0, done.output
    airline = domain("airline", tau2_wheel)
    code = airline.code
    results = code.attribute("tau2.data_model.simulation", "Results").model_validate_json(
        out.read_text(encoding="utf-8")
    )
    by_task = {s.task_id: s for s in results.simulations}
    assert sorted(by_task) == ["14", "3"] and sorted(t.id for t in results.tasks) == ["14", "3"]
    failed = by_task["14"]
    assert failed.termination_reason.value == "agent_error" and failed.skipped
    assert failed.messages == [] and failed.reward_info.reward == 0.0
    assert "context" in failed.reward_info.info["note"]
    assert not by_task["3"].skipped and by_task["3"].messages
    evaluator = code.module("tau2.evaluator.evaluator")
    tasks = {t.id: t for t in load_tau2_tasks(airline, ids=["3", "14"])}
    for simulation in results.simulations:
        info = evaluator.evaluate_simulation(
            simulation, _without_nl(tasks[simulation.task_id]), evaluator.EvaluationType.ALL,
            False, airline.registry_key,
        )  # fmt: skip
        assert info.reward == stored[f"airline/{simulation.task_id}"]["tau2_reward"]
    # τ²'s average reward (compute_metrics: every simulation's reward) is the run's: 1 of 2.
    rewards = [s.reward_info.reward for s in results.simulations]
    assert sum(rewards) / len(rewards) == 0.5


def test_a_run_whose_every_simulation_failed_is_exported(tau2_wheel: Path, tmp_path: Path) -> None:
    """Before, no file at all ("no ended τ² simulation"): now τ²'s record of the failure."""
    db = tmp_path / "f.db"
    _run(tau2_wheel, db, gold=[], failing=["14"])
    out = tmp_path / "results.json"
    done = _export(db, out)
    assert done.exit_code == 0, done.output
    results = (
        domain("airline", tau2_wheel)
        .code.attribute("tau2.data_model.simulation", "Results")
        .model_validate_json(out.read_text(encoding="utf-8"))
    )
    (only,) = results.simulations
    assert only.task_id == "14" and only.termination_reason.value == "agent_error"
