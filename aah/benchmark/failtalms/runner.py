"""The Fail-TaLMs runner: whole benchmark settings, concurrently, resumable.

One session per task through the session driver. A run is named; running the
same name again skips finished tasks and continues unfinished ones from their
checkpoints, so a run killed at any moment loses nothing and never holds a
task twice (the store keeps one session per run and task).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from aah.benchmark.batch import (
    ProgressHook,
    RunOptions,
    RunSummary,
    epoch_tasks,
    run_batch,
    run_manifest,
)
from aah.benchmark.failtalms.fact_fit import TaskFacts
from aah.benchmark.failtalms.humans import BatchHumanOptions, task_human_factory
from aah.llm import ModelConfig
from aah.runtime import (
    SETTING_AWARENESS,
    Activity,
    HumanChannel,
    Runtime,
    SessionRequest,
    ToolFinder,
    first_prompt_tokens,
)
from aah.tools.http import Executor, make_executor

if TYPE_CHECKING:
    from aah.benchmark.failtalms.dataset import Task
    from aah.tools.registry import Registry


def task_facts(task: Task, registry: Registry) -> TaskFacts:
    """What a batch human knows about a task: the original request and hidden facts."""
    descriptions = [registry.get(name).description for name in task.unavailable if name in registry]
    return TaskFacts(
        query=task.query,
        original_query=task.original_query,
        hidden_facts=list(task.hidden_facts),
        setting=task.setting,
        unavailable=list(task.unavailable),
        unavailable_descriptions=descriptions,
    )


def batch_human_factory(
    kind: str, registry: Registry, deadline: float | None = None
) -> Callable[[Task, Runtime], HumanChannel]:
    """A function giving each task its own batch human called ``kind``.

    Raises:
        AahError: ``kind`` names no batch human, or it needs a model that is
            not configured.
    """
    make = task_human_factory(kind, BatchHumanOptions(deadline_seconds=deadline))

    def factory(task: Task, runtime: Runtime) -> HumanChannel:
        return make(task_facts(task, registry), runtime.store)

    return factory


class BatchRunner:
    """Runs tasks as sessions of one named run, ``concurrency`` at a time."""

    def __init__(
        self,
        options: RunOptions,
        registry: Registry,
        model: ModelConfig,
        human_factory: Callable[[Task, Runtime], HumanChannel] | None = None,
    ) -> None:
        """Prepare a run; nothing starts until :meth:`run`.

        Args:
            options: What defines the run.
            registry: The tools the tasks name.
            model: The agent's model.
            human_factory: Each task's human channel; default: the batch human
                ``options.human`` names (see ``aah.benchmark.failtalms.humans.BATCH_HUMANS``).

        Raises:
            AahError: ``options.human`` names no batch human, or it needs a model
                that is not configured.
        """
        self.options = options
        self.registry = registry
        self.model = model
        self.human_factory = human_factory or batch_human_factory(
            options.human, registry, options.human_deadline
        )

    async def run(
        self,
        tasks: Sequence[Task],
        db: Path,
        on_done: ProgressHook | None = None,
        on_waiting: Callable[[int], None] | None = None,
        activity: Activity | None = None,
    ) -> RunSummary:
        """Run every task not finished yet; return what happened.

        The loop is the one every benchmark shares (``aah.benchmark.batch``):
        resume, concurrency, a timeout per task, failures recorded, sessions
        waiting for a person parked. ``on_waiting`` is told how many wait.
        """
        settings = sorted({task.setting for task in tasks})
        tasks = epoch_tasks(tasks, self.options.epochs)
        manifest = run_manifest(self.options, self.model, self.registry.registry_hash, settings)
        return await run_batch(
            tasks,
            db=db,
            model=self.model,
            options=self.options,
            manifest=manifest,
            request_for=self.request_for,
            on_done=on_done,
            on_waiting=on_waiting,
            activity=activity,
        )

    def largest_prompt_tokens(self, tasks: Sequence[Task]) -> int:
        """About how many tokens the largest first request among ``tasks`` holds."""
        given = self.options.tools == "given"
        return max(
            (
                first_prompt_tokens(
                    task.query,
                    [self.registry.get(n) for n in task.offered if n in self.registry]
                    if given
                    else [],
                    self.options.aah,
                    discover=self.discovers,
                )
                for task in tasks
            ),
            default=0,
        )

    @property
    def discovers(self) -> bool:
        """Whether the run's agent has ``find_tools``."""
        return self.options.discover or self.options.tools == "registry"

    def finder_for(self, task: Task) -> ToolFinder | None:
        """The task's ``find_tools`` search, or None without discovery.

        With ``--unavailable hidden`` the endpoints the setting took away are
        not findable either; ``broken`` ones are, and fail when called.
        """
        if not self.discovers:
            return None
        removed = task.unavailable if self.options.unavailable == "hidden" else ()
        return ToolFinder(self.registry, self.options.discover_k, removed)

    def request_for(self, task: Task, runtime: Runtime) -> SessionRequest:
        """The session request for one task, with its own human and tools."""
        # Found the tools: the agent starts with find_tools (and ask_human) alone.
        offered = [n for n in task.offered if n in self.registry]
        offered = offered if self.options.tools == "given" else []
        unavailable = [n for n in task.unavailable if n in self.registry]
        executor: Executor | None = None
        if self.options.unavailable == "broken" and unavailable:
            if self.options.tools == "given":
                offered += [n for n in unavailable if n not in offered]
            plan = [f"{name}={self.options.broken_as}" for name in unavailable]
            executor = make_executor("fault", fault_plan=plan, base_mode=self.options.http)
        return SessionRequest(
            query=task.query,
            specs=[self.registry.get(name) for name in offered],
            aah=self.options.aah,
            awareness=SETTING_AWARENESS[task.setting],
            step_limit=self.options.step_limit,
            tool_result_tokens=self.options.tool_result_tokens,
            tool_mode=self.options.tool_mode,
            run=self.options.run,
            task_id=task.id,
            setting=task.setting,
            context={
                "original_query": task.original_query or task.query,
                # The endpoints the setting took away, for the person answering.
                "unavailable": _unavailable_lines(self.registry, task.unavailable),
            },
            human=self.human_factory(task, runtime),
            executor=executor,
            approvals=self.options.approvals,
            retry_errors=True,
            finder=self.finder_for(task),
        )


def _unavailable_lines(registry: Registry, names: Sequence[str]) -> list[str]:
    """``name: description`` of each endpoint a task's setting made unavailable."""
    lines = []
    for name in names:
        description = registry.get(name).description if name in registry else ""
        summary = " ".join(description.split())[:100]
        lines.append(f"{name}: {summary}" if summary else name)
    return lines
