"""``--ray``: the workers of ``aah.benchmark.workers`` as Ray actors on a cluster.

The design is the workers' own: the driver (``aah bench run``) creates or
checks the run, keeps the list of tasks still to run and hands them out by
index to whichever actor asks; each actor runs a worker (``_Worker``) with
its own event loop, its share of the concurrency and its own connection to
the store, which must be PostgreSQL (a SQLite file cannot be shared between
hosts). The messages are the pipe's, carried by actor calls: the driver
calls ``send`` with ``("tasks", ...)`` or ``("stop",)``, and keeps one
``events`` call out per actor, which returns what the worker said since.

An actor whose process dies (killed, out of memory, its node lost) makes its
``events`` call fail: the driver hands each task it held once more to the
other actors, as for a worker process, and a task whose second actor dies
too is left to the rerun. Actors are never restarted. An actor that stops
answering (its process stopped, its worker's event loop blocked) is silent:
once past ``AAH_WORKER_TIMEOUT`` it is killed with ``ray.kill`` and its tasks
are handed over the same way (``worker_watch``). Its heartbeat is the
worker's own: the ``activity`` line its event loop puts in the outbox every
second, which ``events`` carries; an empty ``events`` call proves only that
the actor's process answers, and counts for nothing.

Ray is an optional extra (``pip install 'aah[ray]'``); it is imported only here.
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import socket
import threading
import time
from typing import TYPE_CHECKING, Any, cast

from aah.benchmark.workers import (
    STOP_WAIT_SECONDS,
    WorkerJob,
    _Parent,
    _Worker,
    flush_traces_if_wanted,
)
from aah.db_url import is_database_url
from aah.errors import AahError

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from pathlib import Path

log = logging.getLogger(__name__)

INSTALL = "pip install 'aah[ray]'"
# How long an actor's ``events`` call waits for something to say before it returns empty.
EVENTS_WAIT_SECONDS = 5.0
# How long the driver waits for the head's port to answer before it says so.
CONNECT_SECONDS = 5.0
# How long ``events`` lingers after the first message, gathering more into the
# same call (each actor call costs CPU on both sides and in the raylet).
EVENTS_LINGER_SECONDS = 0.05


def import_ray() -> Any:
    """The ``ray`` module.

    Raises:
        AahError: Ray is not installed.
    """
    try:
        import ray
    except ImportError:
        raise AahError(
            f"--ray needs Ray, which is not installed: {INSTALL} (on every machine of the "
            "cluster too)"
        ) from None
    return ray


def check_ray_store(db: Path) -> None:
    """The store of a Ray run must be PostgreSQL: every host reaches it.

    Raises:
        AahError: the store is a SQLite file.
    """
    if not is_database_url(db):
        raise AahError(
            f"--ray needs the store on PostgreSQL, which every machine of the cluster reaches; "
            f"{db} is a SQLite file, which cannot be shared between hosts: pass "
            "--db postgresql://USER@HOST:5432/DATABASE (or set AAH_DB)"
        )


def check_ray(db: Path) -> None:
    """What ``--ray`` needs, checked before any data is read: Ray, and PostgreSQL.

    Raises:
        AahError: Ray is missing or the store is SQLite.
    """
    check_ray_store(db)
    import_ray()


def check_ray_job(job: WorkerJob[Any]) -> None:
    """A Ray run's job can be sent to the actors.

    Raises:
        AahError: Ray is missing, the store is SQLite, or the job cannot be pickled.
    """
    check_ray(job.db)
    ray = import_ray()
    try:
        ray.cloudpickle.dumps(job)
    except Exception as exc:
        raise AahError(
            f"--ray: this run cannot be sent to Ray actors ({type(exc).__name__}: {exc}); "
            "run it without --ray (--workers N runs it in processes on this machine)"
        ) from None


def connect(address: str) -> Any:
    """Join the Ray cluster at ``address`` (``auto``: the one on this machine or RAY_ADDRESS).

    Raises:
        AahError: no cluster answers there.
    """
    ray = import_ray()
    if ray.is_initialized():
        return ray
    _reachable(address)
    try:
        ray.init(
            address=address,
            logging_level=logging.WARNING,
            log_to_driver=False,
            include_dashboard=False,
        )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        text = " ".join(str(exc).split())[:300]
        raise AahError(
            f"--ray {address}: cannot join a Ray cluster there ({text}); start one with "
            "`ray start --head`, or pass its address (HOST:6379)"
        ) from None
    return ray


def _reachable(address: str) -> None:
    """A HOST:PORT address answers (Ray itself waits minutes on one that does not).

    Raises:
        AahError: nothing listens there.
    """
    host, _, port = address.rpartition(":")
    if "://" in address or not host or not port.isdigit():
        return  # auto, or ray://: Ray's own checks
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_SECONDS).close()
    except OSError as exc:
        raise AahError(
            f"--ray {address}: no Ray cluster answers there ({exc.strerror or exc}); start one "
            "with `ray start --head`, or pass its head's address (HOST:6379)"
        ) from None


class RayParent(_Parent[Any]):
    """The driver's side: ``_Parent``'s handout, over actor calls instead of pipes."""

    async def run(self, jobs: list[WorkerJob[Any]], method: str) -> None:
        """Start one actor per job, serve them until every task ended, then let them go."""
        address = jobs[0].options.ray or "auto"
        ray = connect(address)
        cpus = int(ray.cluster_resources().get("CPU", 0))
        if len(jobs) > cpus:
            raise AahError(
                f"--workers {len(jobs)} with --ray: the Ray cluster has {cpus} CPU(s), one per "
                "worker is needed; lower --workers or add machines (`ray start --address`)"
            )
        actor_class = ray.remote(num_cpus=1, max_concurrency=8, max_restarts=0)(RayWorkerActor)
        count = len(jobs)
        self._prepare(count)
        self.ray: Any = ray
        self.actors = [actor_class.remote(job) for job in jobs]
        self.alive = set(range(count))
        for number in range(count):
            self.watch.started(number)
        listening = [asyncio.ensure_future(self._listen(ray, n)) for n in range(count)]
        self.listening = listening
        watching = asyncio.ensure_future(self._watch_silence())
        try:
            await self.ended.wait()
        finally:
            watching.cancel()
            for number in sorted(self.alive):
                self._send(number, [("stop",)])
            done, pending = await asyncio.wait(listening, timeout=STOP_WAIT_SECONDS)
            for late in pending:
                late.cancel()
            for actor in self.actors:
                ray.kill(actor, no_restart=True)
        if self.crashed:
            from aah.benchmark.batch import _to_go_on

            raise _to_go_on(self.crashed[0])

    async def _listen(self, ray: Any, number: int) -> None:
        """Read actor ``number``'s messages until it stops or dies."""
        actor = self.actors[number]
        while True:
            try:
                messages = await actor.events.remote()
            except ray.exceptions.RayError as exc:
                if number in self.alive:
                    self._lost(number, f"Ray worker {number + 1}", _died_text(exc))
                return
            if number not in self.alive:  # dropped while this call was out
                return
            stopped = isinstance(messages, list) and bool(messages) and messages[-1] is None
            said = messages[:-1] if stopped else messages
            problem = self._take(number, [said] if said != [] else [])
            if problem is not None:
                self._drop(number, f"{problem}: killed")
                return
            if stopped:  # its worker stopped
                self.alive.discard(number)
                return

    def _send(self, number: int, messages: list[tuple[Any, ...]]) -> None:
        self.actors[number].send.remote(messages)

    def _kill(self, number: int) -> None:
        """End actor ``number`` for good; its pending ``events`` call fails or is dropped."""
        try:
            self.ray.kill(self.actors[number], no_restart=True)
        except self.ray.exceptions.RayError as exc:  # gone already: nothing to end
            log.debug("ray.kill of worker %d: %s", number + 1, exc)

    def _gone(self, number: int, how: str) -> None:
        current = asyncio.current_task()
        if self.listening[number] is not current:
            self.listening[number].cancel()
        self._lost(number, f"Ray worker {number + 1}", how)


def _died_text(exc: BaseException) -> str:
    name = type(exc).__name__
    return "its Ray actor died" if "Actor" in name else f"its Ray actor failed ({name})"


class RayWorkerActor:
    """A Ray actor holding one worker, whose event loop runs in a thread of its own."""

    def __init__(self, job: WorkerJob[Any]) -> None:
        self.outbox: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
        self.worker = _QueueWorker(job, self.outbox)
        self.thread = threading.Thread(target=self._serve, name="aah-ray-worker", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        from aah.runtime import run_async

        try:
            run_async(self.worker.serve())
        except BaseException as exc:  # told to the driver, which stops the run
            from aah.benchmark.workers import _sendable

            self.outbox.put(("crashed", _sendable(exc)))
        finally:
            flush_traces_if_wanted()
            self.worker.ready.set()
            self.outbox.put(None)

    def pid(self) -> int:
        """The actor's process id (for the kill drills)."""
        return os.getpid()

    def send(self, messages: list[tuple[Any, ...]]) -> None:
        """Messages from the driver, handed to the worker's event loop."""
        worker = self.worker
        worker.ready.wait()
        if worker.loop is not None:
            try:
                worker.loop.call_soon_threadsafe(worker._receive_all, messages)
            except RuntimeError:  # its loop has closed: it stopped already
                pass

    def events(self) -> list[tuple[Any, ...] | None]:
        """What the worker said since the last call (None: it stopped); waits a while for one."""
        try:
            said = [self.outbox.get(timeout=EVENTS_WAIT_SECONDS)]
        except queue.Empty:
            return []
        time.sleep(EVENTS_LINGER_SECONDS)
        while True:
            try:
                said.append(self.outbox.get_nowait())
            except queue.Empty:
                return said


class _QueueWorker(_Worker):
    """A worker whose messages go to a queue (read by ``events``) and come by ``send``."""

    # A whole share held ahead, asked for half a share at a time: an actor call
    # costs far more than a pipe's write, and the tasks held ahead cover the
    # time ``events`` lingers to gather what it says.
    ahead_share = 1

    def __init__(self, job: WorkerJob[Any], outbox: queue.SimpleQueue[Any]) -> None:
        super().__init__(cast("Connection", None), job)
        self.outbox = outbox
        self.loop: asyncio.AbstractEventLoop | None = None
        self.ready = threading.Event()

    def _attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.ready.set()

    def _detach(self, loop: asyncio.AbstractEventLoop) -> None:
        pass

    def _flush(self) -> None:
        messages, self.outgoing = self.outgoing, []
        for message in messages:
            self.outbox.put(message)
