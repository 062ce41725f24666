"""The batch runner: whole benchmark settings, concurrently, resumable.

One session per task through the session driver. A run is named; running the
same name again skips finished tasks and continues unfinished ones from their
checkpoints, so a run killed at any moment loses nothing and never holds a
task twice (the store keeps one session per run and task).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self, TypeVar

from aah import __version__
from aah.benchmark.fact_fit import TaskFacts
from aah.benchmark.humans import BatchHumanOptions, benchmark_prompt_versions, task_human_factory
from aah.errors import AahError
from aah.extensions import BaseHttpModeName, BatchHumanName
from aah.llm import ModelConfig
from aah.runtime import (
    DEFAULT_TOOL_RESULT_TOKENS,
    SETTING_AWARENESS,
    HumanChannel,
    Runtime,
    SessionOutcome,
    SessionRequest,
    ToolMode,
    first_prompt_tokens,
)
from aah.runtime.prompts import prompt_versions
from aah.store import pinned_difference
from aah.tools.http import Executor, make_executor

if TYPE_CHECKING:
    from aah.benchmark.dataset import Task
    from aah.tools.registry import Registry

UnavailableMode = Literal["hidden", "broken"]


@dataclass
class RunOptions:
    """Everything that defines a batch run."""

    run: str
    aah: bool = True
    human: BatchHumanName = "oracle"
    concurrency: int = 8
    http: BaseHttpModeName = "mock"
    unavailable: UnavailableMode = "hidden"
    broken_as: str = "404"
    step_limit: int = 10
    task_timeout: float = 600.0
    seed: int | None = None
    human_deadline: float | None = None
    tool_result_tokens: int = DEFAULT_TOOL_RESULT_TOKENS
    tool_mode: ToolMode = "native"
    epochs: int = 1
    # What ``aah models check``'s probe found about the agent's server before
    # the run (``ProbeReport.model_dump()``); stored, never pinned.
    probe: dict[str, Any] | None = None


class RepeatableTask(Protocol):
    """Any benchmark's task (Fail-TaLMs, When2Call): an id, and a copy with another."""

    @property
    def id(self) -> str:
        """The task's id in the run."""
        ...

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with ``update`` applied (pydantic's)."""
        ...


TaskT = TypeVar("TaskT", bound=RepeatableTask)

# A repeat of a task is its own session, whose task id carries the epoch
# (the store keeps one session per run and task id): "perfect-12#epoch2".
# Epoch 1 keeps the plain id, so a run made before repeats reads as epoch 1.
EPOCH_MARK = "#epoch"


def epoch_task_id(task_id: str, epoch: int) -> str:
    """The task id of ``task_id``'s ``epoch``-th run (numbered from 1)."""
    return task_id if epoch == 1 else f"{task_id}{EPOCH_MARK}{epoch}"


def epoch_tasks(tasks: Sequence[TaskT], epochs: int) -> list[TaskT]:
    """Every task ``epochs`` times, epoch by epoch, each repeat under its own id.

    Epoch by epoch, so that a run stopped midway has whole epochs done first,
    and running it again with the same ``--epochs`` continues where it stopped.

    Raises:
        AahError: ``epochs`` is below 1.
    """
    if epochs < 1:
        raise AahError(f"--epochs {epochs}: run each task at least once (1 or more)")
    return [
        task if epoch == 1 else task.model_copy(update={"id": epoch_task_id(task.id, epoch)})
        for epoch in range(1, epochs + 1)
        for task in tasks
    ]


@dataclass
class RunSummary:
    """How a batch run went."""

    total: int
    finished: int = 0
    skipped: int = 0
    errors: int = 0
    already_done: int = 0
    seconds: float = 0.0
    # Sessions that stopped at a limit without a final answer, by status
    # (``step_limit``, ``cut_off``): ended, not failed, and never a pass.
    stopped: Counter[str] = field(default_factory=Counter)
    error_messages: list[str] = field(default_factory=list)
    # Every failed task's error, counted by message.
    error_counts: Counter[str] = field(default_factory=Counter)

    @property
    def tasks_per_second(self) -> float:
        """Tasks completed per wall-clock second."""
        done = self.finished + self.skipped + self.errors + self.stopped.total()
        return done / self.seconds if self.seconds > 0 else 0.0

    def failures(self, kinds: int = 3) -> str:
        """The failed tasks in one line, grouped by error, the ``kinds`` most frequent."""
        common = self.error_counts.most_common()
        groups = [f"{n} × {error.rstrip('.')}" for error, n in common[:kinds]]
        if len(common) > kinds:
            groups.append(
                f"{sum(n for _, n in common[kinds:])} × {len(common) - kinds} other errors"
            )
        return f"{self.errors} of {self.total} task(s) failed ({'; '.join(groups)})"


ProgressHook = Callable[[str, SessionOutcome], None]


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``"2/4"`` → ``(2, 4)``: the second of four shards (numbered from 1).

    Raises:
        AahError: the text is not ``i/n`` with 1 ≤ i ≤ n.
    """
    if not text:
        return None
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise AahError(f"--shard {text!r} must look like i/n, e.g. 1/4") from None
    if not 1 <= index <= count:
        raise AahError(f"--shard {text!r}: i must be between 1 and n")
    return index, count


def select_shard(tasks: Sequence[Task], shard: tuple[int, int] | None) -> list[Task]:
    """Every n-th task, starting at the i-th: shards are disjoint and cover all."""
    if shard is None:
        return list(tasks)
    index, count = shard
    return [task for position, task in enumerate(tasks) if position % count == index - 1]


def run_manifest(
    options: RunOptions, model: ModelConfig, registry_hash: str, settings: Sequence[str]
) -> dict[str, Any]:
    """What a run is made of, stored with it so results stay interpretable."""
    return {
        "model": model.describe()["model"],
        "model_base_url": model.describe()["base_url"],
        # Its reply limits, timeout and retries too: a run is read with them.
        "model_settings": model.describe(),
        "aah": options.aah,
        "human": options.human,
        "http": options.http,
        "unavailable": options.unavailable,
        "step_limit": options.step_limit,
        "seed": options.seed,
        "settings": list(settings),
        # How much of each tool result the model reads, and how it is told of tools.
        "tool_result_tokens": options.tool_result_tokens,
        "tool_mode": options.tool_mode,
        "probe": options.probe,
        # Not pinned: a run may be resumed with more epochs.
        "epochs": options.epochs,
        # Every text a model reads in this run: the session's and the batch humans'.
        "prompt_versions": {**prompt_versions(), **benchmark_prompt_versions()},
        "registry_hash": registry_hash,
        "aah_version": __version__,
    }


def check_manifest(existing: dict[str, Any], wanted: dict[str, Any], run: str) -> None:
    """Refuse to resume a run under a different setup (``aah.store.PINNED_FIELDS``).

    Raises:
        AahError: a pinned field differs.
    """
    differs = pinned_difference(existing, wanted)
    if differs is not None:
        raise AahError(
            f"run {run!r} was made with {differs.field}={differs.ours!r}, "
            f"not {differs.theirs!r}: use the same flags to resume it, or another --run name"
        )


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
                ``options.human`` names (see ``aah.benchmark.humans.BATCH_HUMANS``).

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
    ) -> RunSummary:
        """Run every task not finished yet; return what happened.

        The loop is the one every benchmark shares (``aah.benchmark.batch``):
        resume, concurrency, a timeout per task, failures recorded, sessions
        waiting for a person parked. ``on_waiting`` is told how many wait.
        """
        # Imported here: the shared loop builds on this module's types.
        from aah.benchmark.batch import run_batch

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
        )

    def largest_prompt_tokens(self, tasks: Sequence[Task]) -> int:
        """About how many tokens the largest first request among ``tasks`` holds."""
        return max(
            (
                first_prompt_tokens(
                    task.query,
                    [self.registry.get(name) for name in task.offered if name in self.registry],
                    self.options.aah,
                )
                for task in tasks
            ),
            default=0,
        )

    def request_for(self, task: Task, runtime: Runtime) -> SessionRequest:
        """The session request for one task, with its own human and tools."""
        offered = [n for n in task.offered if n in self.registry]
        unavailable = [n for n in task.unavailable if n in self.registry]
        executor: Executor | None = None
        if self.options.unavailable == "broken" and unavailable:
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
            retry_errors=True,
        )


def _unavailable_lines(registry: Registry, names: Sequence[str]) -> list[str]:
    """``name: description`` of each endpoint a task's setting made unavailable."""
    lines = []
    for name in names:
        description = registry.get(name).description if name in registry else ""
        summary = " ".join(description.split())[:100]
        lines.append(f"{name}: {summary}" if summary else name)
    return lines
