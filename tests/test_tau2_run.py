"""τ² simulations as aah sessions: a scripted agent (the fake model) plays the gold actions with a
scripted user, every step stored, τ²'s evaluator grading each simulation as it ends."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from runtime_support import fake_config
from tau2_data import domain

from aah.benchmark import RunOptions
from aah.benchmark.tau2 import GOLD_UNREACHABLE, load_tau2_tasks
from aah.benchmark.tau2.runner import Tau2Runner, run_tasks, score_tau2_run, tau2_results
from aah.benchmark.tau2.scripted import ScriptedTau2User, gold_agent_script, gold_plan
from aah.store import SessionStore
from aah.testing.fake_llm import FakeLLMServer


def _run(
    tau2_wheel: Path,
    db: Path,
    picks: dict[str, list[str]],
    *,
    script: dict[str, Any] | None = None,
    plans: dict[str, Any] | None = None,
    aah: bool = False,
) -> dict[str, dict[str, Any]]:
    domains = {name: domain(name, tau2_wheel) for name in picks}
    tasks = [
        task
        for name, ids in picks.items()
        for task in load_tau2_tasks(domains[name], ids=ids or None)
    ]
    plan_of = {f"{t.domain}/{t.id}": gold_plan(t) for t in tasks}
    if plans:
        plan_of.update(plans)
    script = script or gold_agent_script(tasks, plans=plans)

    def user(_domain: Any, task: Any) -> ScriptedTau2User:
        return ScriptedTau2User(plan_of[f"{task.domain}/{task.id}"])

    options = RunOptions(run="t", aah=aah, concurrency=16)
    with FakeLLMServer(script) as llm:
        runner = Tau2Runner(options, fake_config(llm), domains, tasks, user, call_seconds=60)
        summary = asyncio.run(runner.run(run_tasks(tasks), db))
    assert summary.errors == 0, summary.error_messages
    with SessionStore(db) as store:
        score_tau2_run(store, "t")
        return {row["task_id"]: row for row in tau2_results(store, "t")}


def test_gold_plays_score_1_in_every_domain(tau2_wheel: Path, tmp_path: Path) -> None:
    picks = {"airline": ["0", "5"], "retail": ["0"], "telecom": [], "mock": []}
    tel = load_tau2_tasks(domain("telecom", tau2_wheel))
    picks["telecom"] = [t.id for t in tel if any(a.requestor == "user" for a in t.gold_actions)][:2]
    mock = load_tau2_tasks(domain("mock", tau2_wheel))
    picks["mock"] = [t.id for t in mock if ("mock", t.id) not in GOLD_UNREACHABLE][:2]
    results = _run(tau2_wheel, tmp_path / "g.db", picks)
    assert len(results) == sum(len(ids) for ids in picks.values())
    for task_id, row in results.items():
        assert row["termination"] == "user_stop", (task_id, row)
        assert row["tau2_reward"] == 1.0, (task_id, row["failures"])
