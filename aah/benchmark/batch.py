"""The batch machinery every benchmark shares: run options, shards, epochs, the session loop.

A benchmark (one folder beside this module: ``failtalms/``, ``when2call/``,
``bfcl/``) says how a run is described (its manifest) and what session each
task is (``SessionRequest``); this module does the rest the same way for all
of them: ``RunOptions``, ``shard_tasks`` and ``epoch_tasks`` choose and repeat
the tasks; ``run_batch`` refuses to resume a run under another setup, skips
the tasks the run finished, runs the others ``concurrency`` at a time with a
timeout each, and records a task that failed outside its session as failed,
never losing the run.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal, Protocol, Self, TypeVar, cast

from aah import __version__
from aah.config import DEFAULT_DISCOVER_K
from aah.errors import AahError
from aah.extensions import BaseHttpModeName, BatchHumanName
from aah.llm import ModelConfig
from aah.runtime import (
    DEFAULT_TOOL_RESULT_TOKENS,
    Activity,
    AnswerWatcher,
    ApprovalPolicy,
    Runtime,
    ScriptedHuman,
    SessionOutcome,
    SessionRequest,
    ToolMode,
    fewer_gc_pauses,
    open_runtime,
    record_failure,
    run_session,
    within_work_time,
    worker_threads,
)
from aah.runtime.prompts import prompt_versions
from aah.store import (
    STOPPED_STATUSES,
    RunRecord,
    SessionStore,
    StoreFileError,
    pinned_difference,
)
from aah.telemetry import export_wanted

UnavailableMode = Literal["hidden", "broken"]
# How a task's endpoints reach the agent: handed to it, or found with find_tools.
ToolSource = Literal["given", "registry"]


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
    # ``registry``: no endpoint is handed to the agent; it has find_tools over
    # the whole registry (minus what the setting removes). ``discover`` adds
    # find_tools beside the given endpoints; ``discover_k``: hits per search.
    tools: ToolSource = "given"
    discover: bool = False
    discover_k: int = DEFAULT_DISCOVER_K
    # What ``aah models check``'s probe found about the agent's server before
    # the run (``ProbeReport.model_dump()``); stored, never pinned.
    probe: dict[str, Any] | None = None
    # Which calls wait for a person's approval (``--approve*``); None: none.
    approvals: ApprovalPolicy | None = None
    # Processes that share the run (``--workers``; ``aah.benchmark.workers``); not pinned.
    workers: int = 1
    # The Ray cluster whose actors run the workers (``--ray``: auto or an address); not pinned.
    ray: str | None = None


class RepeatableTask(Protocol):
    """Any benchmark's task: an id, unique within the run, and a copy with another (a repeat)."""

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

# A task handed over from a worker killed for silence runs once the killed
# process's hold on its session has ended (at its death, which ``ray.kill``
# brings about some moments later): waited for this long, then left to it.
HANDED_OVER_WAIT_S = 60.0


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
        # Given the tools, or found them: the report sets the two side by side.
        "tools": options.tools,
        "discover": options.discover or options.tools == "registry",
        "discover_k": options.discover_k,
        "probe": options.probe,
        # Which calls needed a person's approval (pinned: another policy is another run).
        "approvals": (
            options.approvals.model_dump(mode="json") if options.approvals is not None else None
        ),
        # Not pinned: a run may be resumed with more epochs.
        "epochs": options.epochs,
        # Every text a model reads in this run: the session's and the batch humans'.
        "prompt_versions": {**prompt_versions(), **batch_human_prompt_versions()},
        "registry_hash": registry_hash,
        "aah_version": __version__,
    }


def check_run_setup(db: Path, run: str, wanted: Mapping[str, Any], fields: Sequence[str]) -> None:
    """Refuse to resume ``run`` in ``db`` when a benchmark's own ``fields`` differ.

    For what makes a run another run beyond the store's pinned fields (a
    benchmark's name, its turn count...), checked before the run opens.

    Raises:
        AahError: a field of the stored run's manifest differs from ``wanted``.
    """
    if not db.is_file():
        return
    with SessionStore(db) as store:
        existing = store.get_run(run)
    if existing is None:
        return
    for name in fields:
        ours, theirs = existing.manifest.get(name), wanted.get(name)
        if ours != theirs:
            raise AahError(
                f"run {run!r} was made with {name}={ours!r}, not {theirs!r}: "
                "use the same flags to resume it, or another --run name"
            )


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


def batch_human_prompt_versions() -> dict[str, str]:
    """The versions of the prompts the batch humans (oracle, simulated) may send."""
    # Imported here: the humans are Fail-TaLMs's, built on this module's types.
    from aah.benchmark.failtalms import benchmark_prompt_versions

    versions: dict[str, str] = benchmark_prompt_versions()
    return versions


async def run_batch(
    tasks: Sequence[TaskT],
    *,
    db: Path,
    model: ModelConfig,
    options: RunOptions,
    manifest: dict[str, Any],
    request_for: Callable[[TaskT, Runtime], SessionRequest],
    on_done: ProgressHook | None = None,
    on_waiting: Callable[[int], None] | None = None,
    activity: Activity | None = None,
) -> RunSummary:
    """Run every task of ``tasks`` the run ``options.run`` has not finished.

    A session whose question waits for a person (a parking queue human)
    leaves the loop and holds no coroutine while it waits: one
    ``AnswerWatcher`` runs it again when its request settles, its deadline
    passes or it is cancelled. The call returns once every task has ended.

    Args:
        tasks: The tasks, in the order to start them.
        db: The session database.
        model: The agent's model.
        options: The run's options (name, concurrency, HTTP mode, seed, timeout).
        manifest: What the run is made of; a stored run must match its pinned fields.
        request_for: The session of one task.
        on_done: Told each task's id and outcome as it ends.
        on_waiting: Told how many sessions wait for a person, whenever that changes.
        activity: Kept up to date with the run's live work (sessions running,
            model calls out, the last step), for a progress display.

    With ``options.workers`` above 1 the run is shared by that many worker
    processes (``aah.benchmark.workers``), with the same result.

    Raises:
        AahError: the run exists with a different setup.
    """
    if options.workers > 1 or options.ray is not None:
        from aah.benchmark.workers import run_in_workers

        return await run_in_workers(
            tasks,
            db=db,
            model=model,
            options=options,
            manifest=manifest,
            request_for=request_for,
            on_done=on_done,
            on_waiting=on_waiting,
            activity=activity,
        )
    summary = RunSummary(total=len(tasks))
    started = time.perf_counter()
    async with open_runtime(
        db=db,
        model=model,
        human=ScriptedHuman([]),
        http_mode=options.http,
        seed=options.seed,
        # Checkpoint when a session pauses or ends: a batch has no live view,
        # and a crash re-runs at most the steps since the pause.
        durability="exit",
        wait_for_held=HANDED_OVER_WAIT_S,
    ) as runtime:
        if activity is not None:
            activity.requests_out = runtime.activity.requests_out
            runtime.activity = activity
        existing = runtime.store.get_run(options.run)
        if existing is not None:
            check_manifest(existing.manifest, manifest, options.run)
        created = runtime.store.create_run(options.run, manifest)
        done = {
            s.task_id
            for s in runtime.store.list_sessions(run=options.run)
            if s.status in ("finished", "skipped", *STOPPED_STATUSES)
        }
        summary.already_done = sum(task.id in done for task in tasks)
        todo = [task for task in tasks if task.id not in done]
        limit = asyncio.Semaphore(options.concurrency)
        watcher = AnswerWatcher(db)
        running: set[asyncio.Task[None]] = set()
        left = len(todo)
        all_ended = asyncio.Event()
        crashed: list[BaseException] = []

        def ended(job: asyncio.Task[None]) -> None:
            running.discard(job)
            if not job.cancelled() and job.exception() is not None:
                # Outside any session (building a task's request): the run stops, as it must.
                crashed.append(cast(BaseException, job.exception()))
                all_ended.set()

        def start(task: TaskT) -> None:
            job = asyncio.ensure_future(one(task))
            running.add(job)
            job.add_done_callback(ended)

        async def one(task: TaskT) -> None:
            nonlocal left
            async with limit:
                request = request_for(task, runtime)
                outcome = await run_request(request, runtime, options.task_timeout)
            if outcome.status == "waiting" and outcome.waiting_on is not None:
                watcher.watch(outcome.waiting_on, outcome.deadline, partial(start, task))
                if on_waiting is not None:
                    on_waiting(len(watcher))
                return
            count_outcome(summary, outcome)
            if on_done is not None:
                on_done(task.id, outcome)
            left -= 1
            if left == 0:
                all_ended.set()
            elif same_failure_every_time(summary):
                (message,) = summary.error_counts
                crashed.append(
                    AahError(
                        f"the first {summary.errors} tasks all failed the same way "
                        f"({message.rstrip('.')}): stopped the run; fix that, then run the "
                        "same command again (it retries them)"
                    )
                )
                all_ended.set()

        async def watch() -> None:
            while not all_ended.is_set():
                await watcher.pause()
                try:
                    woken = watcher.check()
                except sqlite3.Error as exc:
                    # Parked sessions are safe in the store; without the watch
                    # nothing would wake them, so the run stops and says so.
                    crashed.append(
                        exc
                        if isinstance(exc, AahError)  # the file failed: it says what to do
                        else AahError(
                            f"cannot watch the waiting questions in {db} ({exc}): the waiting "
                            "sessions stay parked; run the same command again to go on"
                        )
                    )
                    all_ended.set()
                    return
                if woken and on_waiting is not None:
                    on_waiting(len(watcher))

        if not todo:
            all_ended.set()
        async with worker_threads(options.concurrency), run_span(created, len(todo)):
            with fewer_gc_pauses():
                watching = asyncio.ensure_future(watch())
                try:
                    for task in todo:
                        start(task)
                    await all_ended.wait()
                finally:
                    watching.cancel()
                    if runtime.outbox is not None and any(
                        isinstance(exc, StoreFileError) for exc in crashed
                    ):
                        # The file failed: the steps the running sessions hold
                        # since their last checkpoint are run again by the
                        # rerun. Writing them now would fail, or log some of
                        # them twice once the rerun logs its own; and no
                        # checkpoint may now save a step without its events.
                        runtime.outbox.stop()
                    stopped = list(running)
                    for job in stopped:
                        job.cancel()
                    # A session stopped here may fail as it stops (its held
                    # events meet the same full disk): its error is heard here,
                    # not printed as a traceback when the event loop closes.
                    await asyncio.gather(*stopped, return_exceptions=True)
                    watcher.close()
        if crashed:
            raise _to_go_on(crashed[0])
    summary.seconds = time.perf_counter() - started
    return summary


@asynccontextmanager
async def run_span(run: RunRecord, tasks: int) -> AsyncIterator[None]:
    """With traces wanted, a span over the run's tasks in this process; else nothing."""
    if not export_wanted():
        yield
        return
    from aah.telemetry import run_trace

    with run_trace(run, tasks):
        yield


def _to_go_on(failure: BaseException) -> BaseException:
    """The error that stopped a run, saying that the same command goes on from where it stopped."""
    if not isinstance(failure, StoreFileError) or "same command again" in failure.advice:
        return failure
    go_on = "then run the same command again to go on (what was saved is kept)"
    said = StoreFileError(
        failure.problem, f"{failure.advice}; {go_on}", failure.path, damaged=failure.damaged
    )
    said.__cause__ = failure
    return said


async def run_request(request: SessionRequest, runtime: Runtime, timeout: float) -> SessionOutcome:
    """One task's session, recorded as failed when it times out or crashes.

    The timeout counts the session's work only: while it waits for a person
    (the queue), its clock stops, so a question outstanding keeps the task
    alive until someone answers, the deadline's fallback does, or the
    session is cancelled.
    """
    try:
        return await within_work_time(run_session(request, runtime), timeout)
    except TimeoutError:
        message = f"task timed out after {timeout:.0f} s of model and tool work"
        return await asyncio.to_thread(record_failure, request, runtime, message, "runner")
    except StoreFileError:
        raise  # not one task's failure: every task writes to that file, so the run stops
    except Exception as exc:  # one task's failure must not end the run
        message = f"{type(exc).__name__}: {exc}"
        return await asyncio.to_thread(record_failure, request, runtime, message, "runner")
    finally:
        if request.executor is not None:
            request.executor.close()


def count_outcome(summary: RunSummary, outcome: SessionOutcome) -> None:
    """Add one session's outcome to a run's summary."""
    if outcome.status == "finished":
        summary.finished += 1
    elif outcome.status == "skipped":
        summary.skipped += 1
    elif outcome.status in STOPPED_STATUSES:
        summary.stopped[outcome.status] += 1
    else:
        summary.errors += 1
        summary.error_counts[outcome.error or "no error message"] += 1
        if outcome.error and len(summary.error_messages) < 20:
            summary.error_messages.append(outcome.error)


# A run whose first tasks all fail with one message (an unreachable server, a
# wrong model name) stops there, rather than running every task into it.
SAME_FAILURE_STOP = 8


def same_failure_every_time(summary: RunSummary, limit: int = SAME_FAILURE_STOP) -> bool:
    """Whether every task so far failed, ``limit`` or more of them, all with one message."""
    ended = summary.finished + summary.skipped + summary.stopped.total() + summary.errors
    return summary.errors >= limit and ended == summary.errors and len(summary.error_counts) == 1


def shard_tasks(tasks: Sequence[TaskT], shard: tuple[int, int] | None) -> list[TaskT]:
    """Every n-th task from the i-th (``shard = (i, n)``): shards are disjoint and cover all."""
    if shard is None:
        return list(tasks)
    index, count = shard
    return [task for position, task in enumerate(tasks) if position % count == index - 1]


def pick_tasks(
    tasks: Sequence[TaskT],
    limit: int | None,
    ids: Sequence[str],
    group: Callable[[TaskT], str],
    id_example: str,
) -> list[TaskT]:
    """Tasks named by ``--ids``, else at most ``limit`` per ``group``, in data order.

    Raises:
        AahError: an id names no task (the message shows ``id_example``).
    """
    if ids:
        wanted = set(ids)
        chosen = [task for task in tasks if task.id in wanted]
        missing = wanted - {task.id for task in chosen}
        if missing:
            raise AahError(f"no task with id {sorted(missing)[0]!r}: ids look like {id_example}")
        return chosen
    if limit is None:
        return list(tasks)
    taken: Counter[str] = Counter()
    chosen = []
    for task in tasks:
        key = group(task)
        if taken[key] < limit:
            taken[key] += 1
            chosen.append(task)
    return chosen


TaskIn = TypeVar("TaskIn", bound=RepeatableTask, contravariant=True)


class PinnedRunner(Protocol[TaskIn]):
    """A benchmark's runner as ``run_pinned`` needs it: its options, model and sessions."""

    options: RunOptions
    model: ModelConfig

    def request_for(self, task: TaskIn, runtime: Runtime) -> SessionRequest:
        """The session of one task."""
        ...


async def run_pinned(
    runner: PinnedRunner[TaskT],
    tasks: Sequence[TaskT],
    db: Path,
    manifest: dict[str, Any],
    pinned: Sequence[str],
    on_done: ProgressHook | None = None,
    activity: Activity | None = None,
) -> RunSummary:
    """A benchmark's run: refused when it exists with another setup, else every task to go.

    Raises:
        AahError: the run exists with other values of its ``pinned`` fields.
    """
    check_run_setup(db, runner.options.run, manifest, pinned)
    return await run_batch(
        epoch_tasks(tasks, runner.options.epochs),
        db=db,
        model=runner.model,
        options=runner.options,
        manifest=manifest,
        request_for=runner.request_for,
        on_done=on_done,
        activity=activity,
    )
