"""An aah τ² run in τ²'s own results format (``Results``/``SimulationRun`` of the pinned wheel).

Each simulation's last turn report holds the conversation as τ² records it
and τ²'s reward info (``Tau2Simulation.turn_ended``); this module puts them
into τ²'s ``Results`` model with the domain's tasks and an ``Info`` saying
how the run was made, so τ²'s own evaluator can grade the file again. A
file holds one domain (τ²'s ``Info`` names one environment).

A simulation whose session ended without one of τ²'s ends (an error such as
a request over the model's context or the task's time limit, a reply cut
off, aah's step limit) goes in as τ²'s run records a failed sample
(``skip_failed_samples``): its termination as graded, reward 0, no
messages, ``skipped``, and why in the reward info's note. Every simulation
of the run is in the file, so τ²'s figures from it are the run's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aah.benchmark.batch import EPOCH_MARK
from aah.benchmark.tau2.domains import load_tau2_domain
from aah.benchmark.tau2.runner import (
    ENDED_STATUSES,
    GRADER,
    TAU2_SETTING,
    failed_termination,
)
from aah.benchmark.tau2.simulation import MAX_ERRORS, MAX_STEPS
from aah.benchmark.tau2.tasks import load_tau2_tasks
from aah.errors import AahError
from aah.events import ErrorEvent, TurnEndedEvent
from aah.store import SessionRecord, SessionStore

# The most of a failed simulation's reason the file keeps (a note, not a log).
MAX_NOTE_CHARS = 500


@dataclass(frozen=True)
class _Ended:
    """A τ² session that has ended: its simulation's record, or why it failed."""

    session: SessionRecord
    termination: str
    state: dict[str, Any] = field(default_factory=dict)
    failure: str | None = None


def tau2_results_json(
    store: SessionStore, sessions: Sequence[SessionRecord], data: Path | None = None
) -> tuple[str, int]:
    """τ²'s ``Results`` JSON for the ended τ² simulations among ``sessions``, and how many.

    Raises:
        AahError: none of them is an ended τ² simulation, or they span domains.
    """
    from aah.data import find_data_dir

    found = [ended for session in sessions if (ended := _ended(store, session)) is not None]
    if not found:
        raise AahError(
            "no ended τ² simulation among these sessions: "
            "export a run of `aah bench run --benchmark tau2`"
        )
    domains = {str(e.session.task_id or "").split("/", 1)[0] for e in found}
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
    ids = sorted({str(e.session.task_id).split("/", 1)[1].split(EPOCH_MARK, 1)[0] for e in found})
    tasks = load_tau2_tasks(domain, ids=ids)
    simulations = []
    trials = 1
    for ended in found:
        session = ended.session
        task_id = str(session.task_id).split("/", 1)[1]
        base, _, epoch = task_id.partition(EPOCH_MARK)
        trial = int(epoch) if epoch.isdigit() else 1
        trials = max(trials, trial)
        started, ended_at = session.started, session.ended or session.started
        details = ended.state.get("reward_info")
        if ended.failure is not None:
            details = {"reward": 0.0, "info": {"note": f"aah: {ended.failure}"}}
        simulations.append(
            simulation_run(
                id=session.id,
                task_id=base,
                start_time=started.isoformat(),
                end_time=ended_at.isoformat(),
                duration=(ended_at - started).total_seconds(),
                termination_reason=reason(ended.termination),
                reward_info=reward_info.model_validate(details) if details else None,
                messages=_messages(message, ended.state.get("tau2_messages") or []),
                trial=trial - 1,
                skipped=ended.failure is not None,
            )
        )
    info = code.attribute("tau2.data_model.simulation", "Info")(
        git_commit="aah",
        num_trials=trials,
        max_steps=MAX_STEPS,
        max_errors=MAX_ERRORS,
        user_info=code.attribute("tau2.data_model.simulation", "UserInfo")(implementation="aah"),
        agent_info=code.attribute("tau2.data_model.simulation", "AgentInfo")(
            implementation="aah", llm=found[0].session.model
        ),
        environment_info=code.attribute("tau2.environment.environment", "EnvironmentInfo")(
            domain_name=name, policy=domain.policy
        ),
    )
    results = code.attribute("tau2.data_model.simulation", "Results")(
        info=info, tasks=[task.task for task in tasks], simulations=simulations
    )
    return results.model_dump_json(indent=2), len(simulations)


def _ended(store: SessionStore, session: SessionRecord) -> _Ended | None:
    """``session``'s simulation if it is a τ² session that has ended; else None."""
    events = store.events(session.id)
    reports = [
        e
        for e in events
        if isinstance(e, TurnEndedEvent) and e.state and "tau2_messages" in e.state
    ]
    if reports and reports[-1].check is not None:
        termination = str(reports[-1].check.get("termination"))
        return _Ended(session, termination, state=reports[-1].state or {})
    if session.setting != TAU2_SETTING or session.status not in ENDED_STATUSES:
        return None
    errors = [e.message for e in events if isinstance(e, ErrorEvent)]
    why = errors[-1] if errors else f"the session ended as {session.status}"
    return _Ended(session, _graded_termination(store, session), failure=why[:MAX_NOTE_CHARS])


def _graded_termination(store: SessionStore, session: SessionRecord) -> str:
    """The termination a failed simulation was graded with (as it would be, if not yet)."""
    for grade in reversed(store.grades(session.id)):
        vote = grade.votes[0] if grade.grader_model == GRADER and grade.votes else None
        if isinstance(vote, dict) and vote.get("termination"):
            return str(vote["termination"])
    return failed_termination(session.status)


def _messages(message: Any, stored: Sequence[Any]) -> list[Any]:
    """τ²'s messages from their stored JSON (``Message`` is τ²'s union of message models)."""
    from pydantic import TypeAdapter

    adapter: TypeAdapter[Any] = TypeAdapter(message)
    return [adapter.validate_python(item) for item in stored]
