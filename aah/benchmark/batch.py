"""The session loop every benchmark runner shares: resume, concurrency, one summary.

A benchmark says how a run is described (its manifest) and what session each
task is (``SessionRequest``); this loop does the rest the same way for all of
them: refuse to resume a run under another setup, skip the tasks the run
finished, run the others ``concurrency`` at a time with a timeout each, and
record a task that failed outside its session as failed, never lose the run.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

from aah.benchmark.runner import ProgressHook, RunOptions, RunSummary, check_manifest
from aah.errors import AahError
from aah.llm import ModelConfig
from aah.runtime import (
    AnswerWatcher,
    Runtime,
    ScriptedHuman,
    SessionOutcome,
    SessionRequest,
    fewer_gc_pauses,
    open_runtime,
    record_failure,
    run_session,
    within_work_time,
    worker_threads,
)
from aah.store import STOPPED_STATUSES, StoreFileError


class BatchTask(Protocol):
    """What the loop needs of a task: an id, unique within the run."""

    @property
    def id(self) -> str:
        """The task's id."""
        ...


TaskT = TypeVar("TaskT", bound=BatchTask)


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

    Raises:
        AahError: the run exists with a different setup.
    """
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
    ) as runtime:
        existing = runtime.store.get_run(options.run)
        if existing is not None:
            check_manifest(existing.manifest, manifest, options.run)
        runtime.store.create_run(options.run, manifest)
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

        async def watch() -> None:
            while not all_ended.is_set():
                await asyncio.sleep(watcher.poll_seconds)
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
        async with worker_threads(options.concurrency):
            with fewer_gc_pauses():
                watching = asyncio.ensure_future(watch())
                try:
                    for task in todo:
                        start(task)
                    await all_ended.wait()
                finally:
                    watching.cancel()
                    stopped = list(running)
                    for job in stopped:
                        job.cancel()
                    # A session stopped here may fail as it stops (its held
                    # events meet the same full disk): its error is heard here,
                    # not printed as a traceback when the event loop closes.
                    await asyncio.gather(*stopped, return_exceptions=True)
                    watcher.close()
        if crashed:
            raise crashed[0]
    summary.seconds = time.perf_counter() - started
    return summary


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


def shard_tasks(tasks: Sequence[TaskT], shard: tuple[int, int] | None) -> list[TaskT]:
    """Every n-th task from the i-th (``shard = (i, n)``): shards are disjoint and cover all."""
    if shard is None:
        return list(tasks)
    index, count = shard
    return [task for position, task in enumerate(tasks) if position % count == index - 1]
