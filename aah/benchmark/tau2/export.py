"""An aah τ² run in τ²'s own results format (``Results``/``SimulationRun`` of the pinned wheel).

Each simulation's last turn report holds the conversation as τ² records it
and τ²'s reward info (``Tau2Simulation.turn_ended``); this module puts them
into τ²'s ``Results`` model with the domain's tasks and an ``Info`` saying
how the run was made, so τ²'s own evaluator can grade the file again. A
file holds one domain (τ²'s ``Info`` names one environment).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aah.benchmark.batch import EPOCH_MARK
from aah.benchmark.tau2.domains import load_tau2_domain
from aah.benchmark.tau2.simulation import MAX_ERRORS, MAX_STEPS
from aah.benchmark.tau2.tasks import load_tau2_tasks
from aah.errors import AahError
from aah.events import TurnEndedEvent
from aah.store import SessionRecord, SessionStore


def tau2_results_json(
    store: SessionStore, sessions: Sequence[SessionRecord], data: Path | None = None
) -> tuple[str, int]:
    """τ²'s ``Results`` JSON for the ended τ² simulations among ``sessions``, and how many.

    Raises:
        AahError: none of them is an ended τ² simulation, or they span domains.
    """
    from aah.data import find_data_dir

    found: list[tuple[SessionRecord, dict[str, Any], dict[str, Any]]] = []
    for session in sessions:
        ended = [
            e
            for e in store.events(session.id)
            if isinstance(e, TurnEndedEvent) and e.state and "tau2_messages" in e.state
        ]
        if ended and ended[-1].check is not None:
            found.append((session, ended[-1].state or {}, ended[-1].check))
    if not found:
        raise AahError(
            "no ended τ² simulation among these sessions: "
            "export a run of `aah bench run --benchmark tau2`"
        )
    domains = {str(s.task_id or "").split("/", 1)[0] for s, _, _ in found}
    if len(domains) != 1:
        raise AahError(
            f"these sessions span τ² domains {', '.join(sorted(domains))}: τ²'s results "
            "file holds one; export each domain's sessions by id"
        )
    name = domains.pop()
    domain = load_tau2_domain(name, data if data is not None else find_data_dir(None))
    code = domain.code
    simulation_run = code.attribute("tau2.data_model.simulation", "SimulationRun")
    reason = code.attribute("tau2.data_model.simulation", "TerminationReason")
    reward_info = code.attribute("tau2.data_model.simulation", "RewardInfo")
    message = code.attribute("tau2.data_model.simulation", "Message")
    ids = sorted({str(s.task_id).split("/", 1)[1].split(EPOCH_MARK, 1)[0] for s, _, _ in found})
    tasks = load_tau2_tasks(domain, ids=ids)
    simulations = []
    trials = 1
    for session, state, check in found:
        task_id = str(session.task_id).split("/", 1)[1]
        base, _, epoch = task_id.partition(EPOCH_MARK)
        trial = int(epoch) if epoch.isdigit() else 1
        trials = max(trials, trial)
        started, ended_at = session.started, session.ended or session.started
        details = state.get("reward_info")
        simulations.append(
            simulation_run(
                id=session.id,
                task_id=base,
                start_time=started.isoformat(),
                end_time=ended_at.isoformat(),
                duration=(ended_at - started).total_seconds(),
                termination_reason=reason(str(check.get("termination"))),
                reward_info=reward_info.model_validate(details) if details else None,
                messages=_messages(message, state.get("tau2_messages") or []),
                trial=trial - 1,
            )
        )
    info = code.attribute("tau2.data_model.simulation", "Info")(
        git_commit="aah",
        num_trials=trials,
        max_steps=MAX_STEPS,
        max_errors=MAX_ERRORS,
        user_info=code.attribute("tau2.data_model.simulation", "UserInfo")(implementation="aah"),
        agent_info=code.attribute("tau2.data_model.simulation", "AgentInfo")(
            implementation="aah", llm=found[0][0].model
        ),
        environment_info=code.attribute("tau2.environment.environment", "EnvironmentInfo")(
            domain_name=name, policy=domain.policy
        ),
    )
    results = code.attribute("tau2.data_model.simulation", "Results")(
        info=info, tasks=[task.task for task in tasks], simulations=simulations
    )
    return results.model_dump_json(indent=2), len(simulations)


def _messages(message: Any, stored: Sequence[Any]) -> list[Any]:
    """τ²'s messages from their stored JSON (``Message`` is τ²'s union of message models)."""
    from pydantic import TypeAdapter

    adapter: TypeAdapter[Any] = TypeAdapter(message)
    return [adapter.validate_python(item) for item in stored]
