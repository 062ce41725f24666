"""One batch run in several worker processes, each with its own event loop.

``run_batch`` with ``RunOptions.workers`` above 1 comes here. The parent
process creates (or checks) the run, then starts the workers with the fork
start method where there is one (they inherit the imported modules, the
tasks and the runner, so they pay no import bill), else spawn. It keeps
the list of tasks still to run and hands them out by index to whichever
worker asks: a worker asks for more as its sessions end or park, so a worker
held up by slow tasks takes fewer and no static share leaves one worker with
the slow tail. A worker holds up to a quarter of its share ahead (waiting for
a free place) and asks a few at a time, in one message with the outcomes it
reports: a round trip per task woke the parent for each one, which took a
busy worker's core and cost ~3 ms of CPU a task with two workers on two
cores (perf/workers_bench.py). ``options.concurrency`` stays the
run's total; each worker runs its share of it at a time.

A worker keeps its own ``AnswerWatcher`` for the sessions it parked (their
questions wait in the store for a person in ``aah web``), and runs each
again when its answer comes. It tells the parent every ended task's
outcome and how many sessions it holds parked; the parent feeds the one
progress bar and adds the outcomes up in one ``RunSummary``.

A worker that dies (killed, out of memory) loses nothing: the parent sees its
process end, and hands each task it held (running or parked) once more to
another worker, where ``run_session`` resumes it from the store (a task that
finished before the worker died is not run again). A task whose second
worker dies too is left for the run's rerun and counted as failed; no
worker is started in a dead one's place.

A worker that hangs (stopped with SIGSTOP, its event loop blocked) is
treated the same way once it has been silent past ``AAH_WORKER_TIMEOUT``
(60 s by default): the parent kills it (SIGKILL) and hands over what it held
(``worker_watch`` says where the heartbeat comes from, and why). The parent
reads each worker's pipe without waiting and refuses what is no message
(``worker_pipe``): a worker that writes one is lost the same way.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import multiprocessing
import os
import pickle
import signal
import sqlite3
import time
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Generic

from aah.benchmark.batch import (
    HANDED_OVER_WAIT_S,
    ProgressHook,
    RunOptions,
    RunSummary,
    TaskT,
    _to_go_on,
    check_manifest,
    count_outcome,
    run_request,
    run_span,
    same_failure_every_time,
)
from aah.benchmark.worker_pipe import PipeReader, loads_back, message_problem
from aah.benchmark.worker_watch import BEAT_SECONDS, Heartbeats
from aah.errors import AahError
from aah.llm import ModelConfig
from aah.runtime import (
    Activity,
    AnswerWatcher,
    Runtime,
    ScriptedHuman,
    SessionOutcome,
    SessionRequest,
    fewer_gc_pauses,
    open_runtime,
    worker_threads,
)
from aah.store import STOPPED_STATUSES, SessionStore, StoreFileError

log = logging.getLogger(__name__)

# How long the parent waits for its workers to leave once the run has ended.
STOP_WAIT_SECONDS = 30.0
WorkerProbe = Callable[[], Coroutine[Any, Any, None]]


def parse_workers(text: str | int, cores: int | None = None) -> int:
    """``--workers``: a number of processes (1 or more) or ``auto`` (the machine's cores).

    Raises:
        AahError: anything else.
    """
    if isinstance(text, str) and text.strip().lower() == "auto":
        return max(1, cores if cores is not None else (os.cpu_count() or 1))
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise AahError(f"--workers {text!r}: use a number of processes (1 or more) or auto")
    return count


# Worker processes one machine may run at most, per core: more only share the
# same cores (and each holds its own connections and memory).
WORKERS_PER_CORE = 4


def check_local_workers(workers: int, cores: int | None = None) -> None:
    """Refuse more worker processes than this machine can use (``--ray`` spreads more).

    Raises:
        AahError: more than ``WORKERS_PER_CORE`` a core.
    """
    cores = max(1, cores if cores is not None else (os.cpu_count() or 1))
    if workers > WORKERS_PER_CORE * cores:
        raise AahError(
            f"--workers {workers}: this machine has {cores} core(s), and more than "
            f"{WORKERS_PER_CORE} worker processes a core only share them; use at most "
            f"{WORKERS_PER_CORE * cores} (or auto), or --ray for a cluster"
        )


def concurrency_shares(concurrency: int, workers: int) -> list[int]:
    """Each worker's share of the run's ``concurrency``: as even as whole numbers allow.

    Raises:
        AahError: fewer sessions at once than workers (a worker would run none).
    """
    if workers > concurrency:
        raise AahError(
            f"--workers {workers} is more than --concurrency {concurrency}: each worker runs "
            "at least one session at a time; lower --workers or raise --concurrency"
        )
    base, extra = divmod(concurrency, workers)
    return [base + (1 if number < extra else 0) for number in range(workers)]


def start_method() -> str:
    """The start method: fork where the platform has it (no second import bill), else spawn."""
    return "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"


@dataclass
class WorkerJob(Generic[TaskT]):
    """What one worker process needs: the whole task list (it is sent indices) and its setup."""

    tasks: Sequence[TaskT]
    db: Path
    model: ModelConfig
    options: RunOptions
    request_for: Callable[[TaskT, Runtime], SessionRequest]
    share: int
    probe: WorkerProbe | None = None
    # Fork only: the other ends of every pipe, inherited and closed at once.
    inherited: list[Connection] = field(default_factory=list)
    # How often it tells the parent what it is doing: its heartbeat (worker_watch).
    beat: float = BEAT_SECONDS


async def run_in_workers(
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
    on_handout: Callable[[int, str], None] | None = None,
    probe: WorkerProbe | None = None,
    method: str | None = None,
) -> RunSummary:
    """``run_batch`` in ``options.workers`` processes; the same summary as one process's.

    Args:
        tasks: The tasks, in the order to hand them out.
        db: The session database (SQLite in WAL on this host, or PostgreSQL).
        model: The agent's model.
        options: The run's options; ``concurrency`` is shared among the workers.
        manifest: What the run is made of; a stored run must match its pinned fields.
        request_for: The session of one task, called in the worker that runs it.
        on_done: Told each task's id and outcome as it ends.
        on_waiting: Told how many sessions wait for a person, in all workers.
        activity: Kept up to date with the workers' live work, for a progress display.
        on_handout: Told the worker number and task id of every task handed out.
        probe: A coroutine run in each worker's event loop for the worker's life
            (cancelled at its end), for measurements.
        method: The start method (default: ``start_method()``).

    Raises:
        AahError: the run exists with a different setup, every worker died, a
            worker's run failed outside a session, or the first tasks all
            failed alike; ``AAH_WORKER_TIMEOUT`` is wrong.
    """
    from aah.config import get_settings

    watch = Heartbeats(get_settings().worker_timeout)
    summary = RunSummary(total=len(tasks))
    started = time.perf_counter()
    method = method or start_method()
    parent_class: type[_Parent[TaskT]] = _Parent
    if options.ray is not None:  # checked before the run is made: nothing to undo
        from aah.benchmark.ray_workers import RayParent, check_ray_job

        check_ray_job(WorkerJob(tasks, db, model, options, request_for, 1, probe))
        parent_class = RayParent
    elif method != "fork":
        _check_picklable(WorkerJob(tasks, db, model, options, request_for, 1, probe))
    with SessionStore(db) as store:
        existing = store.get_run(options.run)
        if existing is not None:
            check_manifest(existing.manifest, manifest, options.run)
        created = store.create_run(options.run, manifest)
        done = {
            s.task_id
            for s in store.list_sessions(run=options.run)
            if s.status in ("finished", "skipped", *STOPPED_STATUSES)
        }
    summary.already_done = sum(task.id in done for task in tasks)
    todo = [index for index, task in enumerate(tasks) if task.id not in done]
    if todo:
        shares = concurrency_shares(options.concurrency, min(options.workers, len(todo)))
        parent = parent_class(
            tasks, todo, summary, on_done, on_waiting, activity, on_handout, watch
        )
        jobs = [
            WorkerJob(tasks, db, model, options, request_for, share, probe, beat=watch.every)
            for share in shares
        ]
        # Forked workers inherit the run's span: their sessions hang under it.
        async with run_span(created, len(todo)):
            await parent.run(jobs, method)
    summary.seconds = time.perf_counter() - started
    return summary


class _Parent(Generic[TaskT]):
    """The parent's side: the tasks left, who holds what, the summary, the progress hooks."""

    def __init__(
        self,
        tasks: Sequence[TaskT],
        todo: list[int],
        summary: RunSummary,
        on_done: ProgressHook | None,
        on_waiting: Callable[[int], None] | None,
        activity: Activity | None,
        on_handout: Callable[[int, str], None] | None,
        watch: Heartbeats,
    ) -> None:
        self.tasks, self.summary = tasks, summary
        self.on_done, self.on_waiting, self.on_handout = on_done, on_waiting, on_handout
        self.activity = activity
        self.watch = watch
        self.queue = deque(todo)
        self.left = len(todo)
        self.handed_again: set[int] = set()
        self.ended = asyncio.Event()
        self.crashed: list[BaseException] = []

    def _prepare(self, count: int) -> None:
        """What the parent keeps for each of ``count`` workers, before any starts."""
        self.want = [0] * count
        self.held: list[set[int]] = [set() for _ in range(count)]
        self.parked = [0] * count
        self.live: list[tuple[int, int, float | None]] = [(0, 0, None)] * count
        self.alive: set[int] = set()
        if self.activity is not None:
            self.activity.requests_out = lambda: sum(out for _, out, _ in self.live)
            self.activity.quiet = self.watch.describe

    async def run(self, jobs: list[WorkerJob[TaskT]], method: str) -> None:
        """Start the workers, serve them until every task ended, then let them go."""
        context = multiprocessing.get_context(method)
        count = len(jobs)
        pipes = [context.Pipe() for _ in range(count)]
        self.conns = [ours for ours, _ in pipes]
        self.readers = [PipeReader(conn.fileno()) for conn in self.conns]
        self._prepare(count)
        self.processes: list[multiprocessing.process.BaseProcess] = []
        loop = asyncio.get_running_loop()
        watching: asyncio.Future[None] | None = None
        # What the workers inherit is never scanned by their collector, so its
        # pages stay shared rather than copied into each (Python's advice for fork).
        gc.freeze()
        try:
            for number, (job, (_, theirs)) in enumerate(zip(jobs, pipes, strict=True)):
                if method == "fork":
                    job.inherited = [c for pair in pipes for c in pair if c is not theirs]
                process = context.Process(  # type: ignore[attr-defined]
                    target=_worker_main,
                    args=(theirs, job),
                    name=f"aah-worker-{number + 1}",
                    daemon=True,
                )
                process.start()
                theirs.close()
                self.processes.append(process)
                loop.add_reader(self.conns[number].fileno(), self._read, number)
                loop.add_reader(process.sentinel, self._died, number)
                self.alive.add(number)
                self.watch.started(number)
            watching = asyncio.ensure_future(self._watch_silence())
            await self.ended.wait()
        finally:
            if watching is not None:
                watching.cancel()
            gc.unfreeze()
            for number in range(len(self.processes)):
                self._forget(loop, number)
            for number in sorted(self.alive):
                self._send(number, [("stop",)])
            await asyncio.to_thread(_join, self.processes, STOP_WAIT_SECONDS)
            for conn in self.conns:
                conn.close()
        if self.crashed:
            raise _to_go_on(self.crashed[0])

    def _forget(self, loop: asyncio.AbstractEventLoop, number: int) -> None:
        loop.remove_reader(self.conns[number].fileno())
        loop.remove_reader(self.processes[number].sentinel)

    def _send(self, number: int, messages: list[tuple[Any, ...]]) -> None:
        try:
            self.conns[number].send(messages)
        except BlockingIOError:  # its pipe is full: it has not read for a long while
            if number in self.alive:
                self._drop(number, "not reading its pipe: taken for hung and killed")
        except OSError:  # the worker is gone: its sentinel says so
            pass

    def _read(self, number: int) -> None:
        reader = self.readers[number]
        said = reader.read()
        problem = self._take(number, said.messages) or said.problem
        if problem is not None:
            reader.refuse(problem)  # nothing more it wrote counts
            self._drop(number, f"{problem}: killed")
        elif said.closed:
            loop = asyncio.get_running_loop()
            loop.remove_reader(self.conns[number].fileno())  # its sentinel follows

    def _take(self, number: int, batches: list[Any]) -> str | None:
        """Handle the message batches worker ``number`` sent; what was wrong with one, if any."""
        if batches:
            self.watch.heard_from(number)
        for batch in batches:
            if not isinstance(batch, list):
                return f"it sent {type(batch).__name__}, not a list of messages"
            mine = self.held[number]
            for message in batch:
                problem = message_problem(message)
                if problem is None and message[0] == "ended" and message[1] not in mine:
                    problem = f"it reported task {message[1]}, which it does not hold"
                if problem is not None:
                    return problem
                self._handle(number, message)
        return None

    def _handle(self, number: int, message: tuple[Any, ...]) -> None:
        """One message from worker ``number``, of a shape ``message_problem`` checked."""
        kind = message[0]
        if kind == "ask":
            self.want[number] += message[1]
            self._hand_out()
        elif kind == "ended":
            self.held[number].discard(message[1])
            self._count(message[1], message[2])
        elif kind == "waiting":
            self.parked[number] = message[1]
            self._tell_waiting()
        elif kind == "activity":
            self.live[number] = message[1:]
            self._show_activity()
        elif kind == "crashed":
            self.crashed.append(message[1])
            self.ended.set()

    def _hand_out(self) -> None:
        for number in sorted(self.alive):
            if not self.queue:
                return
            take = min(self.want[number], len(self.queue))
            if not take:
                continue
            indices = [self.queue.popleft() for _ in range(take)]
            self.want[number] -= take
            self.held[number].update(indices)
            self._send(number, [("tasks", indices)])
            if self.on_handout is not None:
                for index in indices:
                    self.on_handout(number, self.tasks[index].id)

    def _count(self, index: int, outcome: SessionOutcome) -> None:
        count_outcome(self.summary, outcome)
        if self.on_done is not None:
            self.on_done(self.tasks[index].id, outcome)
        self.left -= 1
        if self.left == 0:
            self.ended.set()
        elif same_failure_every_time(self.summary):
            (message,) = self.summary.error_counts
            self.crashed.append(
                AahError(
                    f"the first {self.summary.errors} tasks all failed the same way "
                    f"({message.rstrip('.')}): stopped the run; fix that, then run the "
                    "same command again (it retries them)"
                )
            )
            self.ended.set()

    async def _watch_silence(self) -> None:
        """Drop each worker silent past the bound, as if it had died."""
        while True:
            await asyncio.sleep(self.watch.every)
            for number, seconds in self.watch.past_bound():
                if number in self.alive and not self.ended.is_set():
                    try:
                        self._drop(number, self.watch.lost_text(seconds))
                    except Exception:  # a hook's failure must not end the watch
                        log.exception("handing over the tasks of silent worker %d", number + 1)

    def _drop(self, number: int, how: str) -> None:
        """Worker ``number`` is hung or talks nonsense (``how``): end it, as after a death."""
        if number not in self.alive:
            return
        self.alive.discard(number)  # nothing more is read from it, nor handed to it
        self._kill(number)
        self._gone(number, how)

    def _kill(self, number: int) -> None:
        """End worker ``number`` for good: SIGKILL, which a stopped process cannot ignore."""
        self.processes[number].kill()

    def _gone(self, number: int, how: str) -> None:
        """Worker ``number`` was killed (``how``): what it held goes to the others, once."""
        self._died(number, how)

    def _died(self, number: int, how: str | None = None) -> None:
        """A worker's process ended: what it held goes to the others, once."""
        loop = asyncio.get_running_loop()
        self._forget(loop, number)
        process = self.processes[number]
        process.join(5)  # its sentinel may be closed a moment before it can be reaped
        # What it said before it ended counts (unless it said something wrong).
        self._take(number, self.readers[number].read(reads=None).messages)
        self._lost(number, f"worker {process.name}", how or _exit_text(process.exitcode))

    def _lost(self, number: int, name: str, how: str) -> None:
        """Worker ``number`` is gone (``how``): what it held goes to the others, once."""
        self.alive.discard(number)
        self.watch.forget(number)
        held, self.held[number] = sorted(self.held[number]), set()
        self.parked[number], self.live[number] = 0, (0, 0, None)
        self._tell_waiting()
        if self.ended.is_set():
            return
        log.warning("%s ended (%s) holding %d task(s): handed to the others", name, how, len(held))
        for index in reversed(held):
            if index in self.handed_again:
                # Its second worker died too: the rerun resumes it from the store.
                failed = SessionOutcome(
                    "",
                    "error",
                    "",
                    error="the worker processes running it died twice; run the same "
                    "command again to go on",
                )
                self._count(index, failed)
            else:
                self.handed_again.add(index)
                self.queue.appendleft(index)
        if not self.alive and not self.ended.is_set():
            self.crashed.append(
                AahError(
                    f"every worker process died (the last: {how}) "
                    f"with {self.left} task(s) left; what they finished is kept: run the "
                    "same command again to go on"
                )
            )
            self.ended.set()
        self._hand_out()

    def _tell_waiting(self) -> None:
        if self.on_waiting is not None:
            self.on_waiting(sum(self.parked))

    def _show_activity(self) -> None:
        if self.activity is None:
            return
        self.activity.running = sum(running for running, _, _ in self.live)
        ages = [age for _, _, age in self.live if age is not None]
        if ages:
            self.activity.last_step = self.activity.clock() - min(ages)


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def _join(processes: list[multiprocessing.process.BaseProcess], seconds: float) -> None:
    """Wait for the workers to leave; kill any still there after ``seconds``."""
    deadline = time.monotonic() + seconds
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
    for process in processes:
        if process.is_alive():
            process.kill()
            process.join()


def _check_picklable(job: WorkerJob[Any]) -> None:
    """Spawned workers get their job pickled: say so in one line where it cannot be.

    Raises:
        AahError: the tasks or the runner cannot be sent to another process.
    """
    try:
        pickle.dumps(job)
    except Exception as exc:
        raise AahError(
            f"--workers: this run cannot be sent to worker processes started with spawn "
            f"({type(exc).__name__}: {exc}); use --workers 1 on this platform"
        ) from None


# -- the worker's side ---------------------------------------------------------------


def _worker_main(conn: Connection, job: WorkerJob[Any]) -> None:
    """A worker process: its own event loop, serving the parent until told to stop."""
    from aah.runtime import run_async

    for other in job.inherited:
        other.close()
    job.inherited = []
    # Ctrl-C reaches the whole process group: the parent decides, and says stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        run_async(_Worker(conn, job).serve())
    finally:
        flush_traces_if_wanted()  # the process leaves by os._exit: no atexit runs


def flush_traces_if_wanted() -> None:
    """Export the spans this process still holds, when it exports any (a bounded wait)."""
    from aah.telemetry import export_wanted

    if export_wanted():
        from aah.telemetry import flush_traces

        flush_traces()


class _Worker:
    """One worker's loop: asks for tasks while it has room, runs them, reports each end."""

    # It holds up to its share / ahead_share tasks beyond those it runs, and
    # asks again once half of those places are free.
    ahead_share = 4

    def __init__(self, conn: Connection, job: WorkerJob[Any]) -> None:
        self.conn, self.job = conn, job
        self.active = 0  # tasks started here and not ended or parked
        self.asked = 0  # tasks asked for and not received yet
        self.stop = asyncio.Event()
        self.crashed: list[BaseException] = []
        self.running: set[asyncio.Task[None]] = set()
        self.outgoing: list[tuple[Any, ...]] = []  # sent together once the loop comes round

    async def serve(self) -> None:
        job = self.job
        async with open_runtime(
            db=job.db,
            model=job.model,
            human=ScriptedHuman([]),
            http_mode=job.options.http,
            seed=job.options.seed,
            durability="exit",  # as run_batch: checkpoints when a session pauses or ends
            wait_for_held=HANDED_OVER_WAIT_S,
        ) as runtime:
            self.runtime = runtime
            self.limit = asyncio.Semaphore(job.share)
            self.watcher = AnswerWatcher(job.db)
            loop = asyncio.get_running_loop()
            self._attach(loop)
            side = [asyncio.ensure_future(self._watch()), asyncio.ensure_future(self._beat())]
            if job.probe is not None:
                side.append(asyncio.ensure_future(job.probe()))
            async with worker_threads(job.share):
                with fewer_gc_pauses():
                    try:
                        self._top_up()
                        await self.stop.wait()
                    finally:
                        self._detach(loop)
                        for extra in side:
                            extra.cancel()
                        await asyncio.gather(*side, return_exceptions=True)
                        if runtime.outbox is not None and any(
                            isinstance(exc, StoreFileError) for exc in self.crashed
                        ):
                            runtime.outbox.stop()  # as run_batch: the rerun runs those steps
                        stopped = list(self.running)
                        for running in stopped:
                            running.cancel()
                        await asyncio.gather(*stopped, return_exceptions=True)
                        self.watcher.close()
        if self.crashed:
            self.outgoing.append(("crashed", _sendable(self.crashed[0])))
        self._flush()

    def _attach(self, loop: asyncio.AbstractEventLoop) -> None:
        loop.add_reader(self.conn.fileno(), self._read)

    def _detach(self, loop: asyncio.AbstractEventLoop) -> None:
        loop.remove_reader(self.conn.fileno())

    def _send(self, message: tuple[Any, ...]) -> None:
        """Send ``message`` with the others of this turn of the loop: one write, one wake-up."""
        if not self.outgoing:
            asyncio.get_running_loop().call_soon(self._flush)
        self.outgoing.append(message)

    def _flush(self) -> None:
        if not self.outgoing:
            return
        messages, self.outgoing = self.outgoing, []
        try:
            self.conn.send(messages)
        except OSError:  # the parent is gone: stop
            self.stop.set()

    def _read(self) -> None:
        try:
            messages = self.conn.recv()
        except (EOFError, OSError):  # the parent is gone: its sessions stay resumable
            self.stop.set()
            return
        self._receive_all(messages)

    def _receive_all(self, messages: list[tuple[Any, ...]]) -> None:
        for message in messages:
            self._receive(message)

    def _receive(self, message: tuple[Any, ...]) -> None:
        """A message from the parent: tasks to start, or stop."""
        if message[0] == "tasks":
            self.asked -= len(message[1])
            for index in message[1]:
                self._start(index)
        elif message[0] == "stop":
            self.stop.set()

    def _top_up(self) -> None:
        # A few tasks held ahead (waiting for a free place here) and asked for a
        # few at a time: the parent is asked once every few ended tasks, not
        # after each (each round trip wakes it and preempts a busy worker).
        ahead = self.job.share // self.ahead_share
        room = self.job.share + ahead - self.active - self.asked
        if room >= max(1, ahead // 2) and not self.stop.is_set():
            self.asked += room
            self._send(("ask", room))

    def _start(self, index: int) -> None:
        self.active += 1
        running = asyncio.ensure_future(self._one(index))
        self.running.add(running)
        running.add_done_callback(self._gone)

    def _gone(self, running: asyncio.Task[None]) -> None:
        self.running.discard(running)
        if not running.cancelled() and running.exception() is not None:
            # Outside any session (building a task's request): the run stops, as run_batch's.
            self.crashed.append(running.exception())  # type: ignore[arg-type]
            self.stop.set()

    async def _one(self, index: int) -> None:
        task = self.job.tasks[index]
        try:
            async with self.limit:
                request = self.job.request_for(task, self.runtime)
                outcome = await run_request(request, self.runtime, self.job.options.task_timeout)
        finally:
            self.active -= 1
        if outcome.status == "waiting" and outcome.waiting_on is not None:
            self.watcher.watch(outcome.waiting_on, outcome.deadline, partial(self._start, index))
            self._send(("waiting", len(self.watcher)))
        else:
            self._send(("ended", index, _plain(outcome)))
        self._top_up()

    async def _watch(self) -> None:
        """Wake the sessions parked here, as run_batch's watch does."""
        while not self.stop.is_set():
            await self.watcher.pause()
            try:
                woken = self.watcher.check()
            except sqlite3.Error as exc:
                self.crashed.append(
                    exc
                    if isinstance(exc, AahError)
                    else AahError(
                        f"cannot watch the waiting questions in {self.job.db} ({exc}): the "
                        "waiting sessions stay parked; run the same command again to go on"
                    )
                )
                self.stop.set()
                return
            if woken:
                self._send(("waiting", len(self.watcher)))

    async def _beat(self) -> None:
        """Tell the parent, every ``job.beat`` seconds, what this worker's sessions are doing.

        The parent takes it for a heartbeat: it comes from this event loop, so
        it stops when the loop stops turning (``worker_watch``).
        """
        activity = self.runtime.activity
        while True:
            await asyncio.sleep(self.job.beat)
            age = None if activity.last_step is None else activity.clock() - activity.last_step
            self._send(("activity", activity.running, activity.requests_out(), age))


def _plain(outcome: SessionOutcome) -> SessionOutcome:
    """``outcome`` with plain ``str`` text: a model's text may be a subclass the parent refuses."""
    return replace(
        outcome,
        session_id=str(outcome.session_id),
        status=str(outcome.status),
        final_answer=str(outcome.final_answer),
        error=None if outcome.error is None else str(outcome.error),
        waiting_on=None if outcome.waiting_on is None else str(outcome.waiting_on),
    )


def _sendable(failure: BaseException) -> BaseException:
    """The failure itself where the parent's reader takes it back, else an AahError saying it."""
    if isinstance(failure, Exception) and loads_back(failure):
        return failure
    return AahError(str(failure) or type(failure).__name__)
