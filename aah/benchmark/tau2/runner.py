"""τ²-bench runs: every task a simulation (``simulation``), graded by τ²'s evaluator as it ends.

:func:`run_tau2` is the run recipe the CLI calls: the tasks of the chosen
domains and split (``Tau2RunTask``, one per task and epoch), each a session
whose executor and user side is a :class:`Tau2Simulation`, through the
batch machinery every benchmark shares (resume, shards, epochs, workers).
:func:`score_tau2_run` then stores each ended session's grade (read from
its last turn's report; a session that ended otherwise, at the step limit
or in error, scores 0 with τ²'s termination for it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from aah.benchmark.batch import (
    ProgressHook,
    RunOptions,
    RunSummary,
    run_manifest,
    run_pinned,
)
from aah.benchmark.tau2.domains import Tau2Domain
from aah.benchmark.tau2.simulation import GREETING, MAX_STEPS, Tau2Simulation, Tau2User
from aah.benchmark.tau2.tasks import Tau2Task
from aah.benchmark.tau2.users import user_prompt_version
from aah.benchmark.when2call import When2CallTool, endpoint_spec
from aah.errors import AahError
from aah.llm import ModelConfig
from aah.runtime import Activity, Runtime, SessionRequest
from aah.store import SessionStore
from aah.tools import EndpointSource, EndpointSpec

TAU2_BENCHMARK = "tau2"
TAU2_SETTING = "tau2"
TOOL_HOST = "tau2.invalid"
TAU2_PINNED = ("benchmark", "domains", "split", "user")
GRADER = "tau2:evaluator"
GRADER_VERSION = "1"
# How a session that ended without the simulation's own end is terminated for τ².
_STATUS_TERMINATION = {"step_limit": "max_steps", "error": "agent_error", "cut_off": "agent_error"}
# The statuses of a session that has ended, one way or another.
ENDED_STATUSES = frozenset({"finished", "skipped", "step_limit", "cut_off", "terminated", "error"})

UserFactory = Callable[[Tau2Domain, Tau2Task], Tau2User]


class Tau2RunTask(BaseModel):
    """One task of a run: ``domain/id`` (``#epochN`` on a repeat)."""

    model_config = ConfigDict(frozen=True)

    id: str
    domain: str
    task_id: str


def run_tasks(tasks: Sequence[Tau2Task]) -> list[Tau2RunTask]:
    """The run's tasks of ``tasks`` (ids unique across domains)."""
    return [Tau2RunTask(id=f"{t.domain}/{t.id}", domain=t.domain, task_id=t.id) for t in tasks]


def agent_specs(domain: Tau2Domain) -> list[EndpointSpec]:
    """The agent's tools of ``domain`` as tool specs (calls run on τ²'s environment)."""
    specs = []
    for tool in domain.agent_tools:
        function = tool.get("function", tool)
        w2c = When2CallTool(
            name=str(function["name"]),
            original=str(function["name"]),
            description=str(function.get("description") or ""),
            parameters=dict(function.get("parameters") or {"type": "object", "properties": {}}),
        )
        specs.append(
            endpoint_spec(w2c).model_copy(
                update={
                    "category": "tau2",
                    "url_template": f"https://{TOOL_HOST}/{w2c.name}",
                    "source": EndpointSource(kind="builtin", file="tau2", id=w2c.name),
                }
            )
        )
    return specs


class Tau2Runner:
    """Runs τ² tasks as sessions of one named, resumable run."""

    def __init__(
        self,
        options: RunOptions,
        model: ModelConfig,
        domains: Mapping[str, Tau2Domain],
        tasks: Sequence[Tau2Task],
        user: UserFactory,
        *,
        split: str = "base",
        user_name: str = "scripted",
        call_seconds: float | None = None,
    ) -> None:
        """Prepare a run; nothing starts until :meth:`run`."""
        self.options = options
        self.model = model
        self.domains = dict(domains)
        self.tasks = {(t.domain, t.id): t for t in tasks}
        self.user = user
        self.split = split
        self.user_name = user_name
        self.call_seconds = call_seconds
        self._specs = {name: agent_specs(domain) for name, domain in self.domains.items()}

    def manifest(self) -> dict[str, Any]:
        """What the run is made of, stored with it (the pinned fields included)."""
        base = run_manifest(self.options, self.model, "", [TAU2_SETTING])
        return {
            **base,
            "benchmark": TAU2_BENCHMARK,
            "human": self.user_name,
            "user": self.user_name,
            "http": "tau2",
            "unavailable": None,
            "step_limit": MAX_STEPS,
            "registry_hash": None,
            "turns": "conversation",
            "awareness": self.options.aah,
            "domains": sorted(self.domains),
            "split": self.split,
            "user_prompt_version": user_prompt_version(),
        }

    def request_for(self, task: Tau2RunTask, runtime: Runtime) -> SessionRequest:
        """The session of one simulation: the domain's policy and tools, its user."""
        domain = self.domains[task.domain]
        tau2_task = self.tasks[(task.domain, task.task_id)]
        if self.user_name == "person":
            from aah.benchmark.tau2.users import PersonTau2User
            from aah.runtime import QueueHuman

            user: Tau2User = PersonTau2User(
                QueueHuman(runtime.store), domain, tau2_task, self.options.run
            )
        else:
            user = self.user(domain, tau2_task)
        simulation = Tau2Simulation(
            domain,
            tau2_task,
            user,
            call_seconds=self.call_seconds,
            session_label=task.id,
        )
        return SessionRequest(
            query=GREETING,
            specs=self._specs[task.domain],
            aah=self.options.aah,
            awareness="both" if self.options.aah else "none",
            step_limit=MAX_STEPS,
            tool_mode=self.options.tool_mode,
            run=self.options.run,
            task_id=task.id,
            setting=TAU2_SETTING,
            context={"domain": task.domain, "tau2_task": task.task_id},
            human=simulation,
            executor=simulation,
            conversation=simulation,
            instructions=f"<policy>\n{domain.policy}\n</policy>",
            retry_errors=True,
            check_calls="names",
        )

    async def run(
        self,
        tasks: Sequence[Tau2RunTask],
        db: Path,
        on_done: ProgressHook | None = None,
        *,
        activity: Activity | None = None,
    ) -> RunSummary:
        """Run every simulation the run has not finished; return what happened.

        Raises:
            AahError: the run exists with another setup.
        """
        manifest = self.manifest()
        return await run_pinned(self, tasks, db, manifest, TAU2_PINNED, on_done, activity)


def user_factory(name: str, config: ModelConfig | None) -> UserFactory:
    """The users of a run by ``--user`` name: ``gold`` (scripted) or ``simulated`` (``config``'s).

    Raises:
        AahError: an unknown name, or ``simulated`` without a model.
    """
    from aah.benchmark.tau2.scripted import ScriptedTau2User, gold_plan

    if name == "gold":
        return lambda _domain, task: ScriptedTau2User(gold_plan(task))
    if name == "person":  # built per session from the run's store (Tau2Runner.request_for)
        return lambda _domain, _task: ScriptedTau2User([])
    if name == "simulated" and config is not None:
        from aah.benchmark.tau2.users import SimulatedTau2User

        return lambda domain, task: SimulatedTau2User(domain, task, config)
    raise AahError(f"unknown τ² user {name!r}: use simulated (with a model) or gold")


def failed_termination(status: str) -> str:
    """τ²'s termination for a session that ended (``status``) without its simulation's end."""
    return _STATUS_TERMINATION.get(status, "agent_error")


def score_tau2_run(store: SessionStore, run: str) -> int:
    """Store the grade of every ended session of ``run`` not yet scored; how many now."""
    with store.queries() as queries:
        sessions = queries.session_tasks([run])
        done = {session_id for session_id, _ in queries.grade_votes([run], GRADER)}
        checks: dict[str, dict[str, Any]] = {}
        for mark in queries.turn_marks([run]):
            if isinstance(mark.check, dict) and mark.check.get("tau2"):
                checks[mark.session_id] = mark.check
    grades: list[tuple[str, list[Any], Any]] = []
    for session_id, task_id, status in sessions:
        if status not in ENDED_STATUSES or session_id in done or task_id is None:
            continue
        check = checks.get(session_id)
        if check is None or "reward" not in check:
            termination = failed_termination(status)
            vote: dict[str, Any] = {
                "termination": termination,
                "reward": 0.0,
                "tau2_reward": 0.0,
                "success": False,
                "components": {},
                "failures": [f"the simulation ended as {termination} ({status})"],
            }
        else:
            vote = dict(check)
        grades.append((session_id, [vote], "pass" if vote.get("success") else "fail"))
    return store.add_grades(GRADER, GRADER_VERSION, grades)


def tau2_results(store: SessionStore, run: str) -> list[dict[str, Any]]:
    """Each scored session of ``run``: task id, status and its grade (the stored vote)."""
    with store.queries() as queries:
        sessions = {sid: (task_id, status) for sid, task_id, status in queries.session_tasks([run])}
        votes = queries.grade_votes([run], GRADER)
    out = []
    for session_id, vote_list in votes:
        task_id, status = sessions.get(session_id, (None, None))
        vote = vote_list[0] if vote_list and isinstance(vote_list[0], dict) else {}
        out.append({"session_id": session_id, "task_id": task_id, "status": status, **vote})
    return out


def summarize_tau2_run(store: SessionStore, run: str) -> list[str]:
    """The run's rewards per domain in a few lines (success rate, terminations)."""
    by_domain: dict[str, list[dict[str, Any]]] = {}
    for row in tau2_results(store, run):
        domain = str(row.get("task_id") or "?").split("/", 1)[0]
        by_domain.setdefault(domain, []).append(row)
    lines = []
    for domain, rows in sorted(by_domain.items()):
        passed = sum(1 for row in rows if row.get("success"))
        ends: dict[str, int] = {}
        for row in rows:
            ends[str(row.get("termination"))] = ends.get(str(row.get("termination")), 0) + 1
        said = ", ".join(f"{n} {end}" for end, n in sorted(ends.items()))
        share = 100 * passed / len(rows)
        lines.append(
            f"τ² {domain}: {passed}/{len(rows)} simulations reward 1 ({share:.1f}%); ended: {said}"
        )
    return lines
