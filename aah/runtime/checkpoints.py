"""The graph's checkpointer: in the session database, committing each step's events.

A session's nodes do not write their events (model calls, tool calls,
awareness answers) one by one: they leave them in an ``EventOutbox``, and the
checkpointer writes them in the same transaction as the checkpoint that
saves those steps. So a process killed at any moment leaves the log and the
checkpoint in agreement: a step is either saved with its events or re-run
from the last checkpoint, never logged twice and never lost.

The saver runs the synchronous SQLite saver's methods inline in the async
ones: the queries take well under a millisecond on a WAL database, and
LangGraph's async SQLite saver would hand each one to a worker thread and
back, which at 64 concurrent sessions costs more CPU than the queries
(perf/batch_bench.py). A write that has to wait for another process's lock
blocks the loop for that wait, bounded by the busy timeout. On PostgreSQL,
where each statement waits a network round trip, the saver's calls run on
threads of its own instead (``_ThreadedAsync``), each session's in order.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, TypeVar, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.sqlite import SqliteSaver

from aah.db_url import DatabaseURL, is_database_url
from aah.events import Event
from aah.runtime.checkpoint_serde import ScrubbingSerializer
from aah.store import (
    Database,
    SessionStore,
    StoreFileError,
    insert_events,
    needs_exclusive,
    on_thread,
    send_events,
    write_lock,
    write_transaction,
)
from aah.store import schema as schema

Publish = Callable[[list[Event]], None]
_T = TypeVar("_T")
# The threads a server saver's calls run on. Two: more cost Python's GIL more
# CPU than they save waiting on a nearby server (perf/postgres_store.py: at
# 64 sessions, 8 threads ran 5-10% fewer tasks per second than 2).
_SAVER_THREADS = 2


class EventOutbox:
    """Events that sessions' graphs emitted since their last checkpoint, by thread.

    ``publish`` is told of events once they are stored (with their seq).
    """

    def __init__(self, publish: Publish | None = None) -> None:
        self._pending: dict[str, list[Event]] = {}
        self.publish: Publish = publish or (lambda events: None)
        self.stopped = False

    def add(self, thread_id: str, event: Event) -> None:
        """Hold ``event`` until ``thread_id``'s next checkpoint."""
        if not self.stopped:
            self._pending.setdefault(thread_id, []).append(event)

    def held(self, thread_id: str) -> list[Event]:
        """The events held for ``thread_id``, in order; they stay held."""
        return list(self._pending.get(thread_id, ()))

    def take(self, thread_id: str) -> list[Event]:
        """The events held for ``thread_id``, in order; the outbox forgets them."""
        return self._pending.pop(thread_id, [])

    def stop(self) -> None:
        """Drop every held event and refuse every later checkpoint write.

        For a run whose store file failed: the steps held since each
        session's last checkpoint are run (and logged) again by the rerun.
        A write still on its way (LangGraph saves a step's writes in a task of
        its own, which outlives the session's cancellation) must not save
        those steps without their events, so none is saved.
        """
        self.stopped = True
        self._pending.clear()

    def put_back(self, thread_id: str, events: list[Event]) -> None:
        """Return events whose write failed, ahead of any held since."""
        if events and not self.stopped:
            self._pending[thread_id] = events + self._pending.get(thread_id, [])


class CheckpointsStopped(StoreFileError):
    """A checkpoint write came after ``EventOutbox.stop``: it is not written.

    A ``StoreFileError``, so the session it stops is left as its last
    checkpoint left it, as for the failure that stopped the run.
    """

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"the run stopped once {path} failed", "run the same command again to go on", path
        )


class _InlineAsync(BaseCheckpointSaver[str]):
    """A saver's async methods, run inline by its sync ones (no thread hand-off).

    Each goes through ``_read`` or ``_write``, which a saver that runs its
    calls elsewhere (``_ThreadedAsync``) overrides.
    """

    async def _read(self, config: RunnableConfig | None, call: Callable[[], _T]) -> _T:
        return call()

    async def _write(self, config: RunnableConfig, call: Callable[[], _T]) -> _T:
        return call()

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """See the sync ``get_tuple``."""
        return await self._read(config, lambda: self.get_tuple(config))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002 - the base class's name
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """See the sync ``list``."""
        items = await self._read(
            config, lambda: list(self.list(config, filter=filter, before=before, limit=limit))
        )
        for item in items:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """See the sync ``put``."""
        return await self._write(
            config, lambda: self.put(config, checkpoint, metadata, new_versions)
        )

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """See the sync ``put_writes``."""
        await self._write(config, lambda: self.put_writes(config, writes, task_id, task_path))

    async def adelete_thread(self, thread_id: str) -> None:
        """See the sync ``delete_thread``."""
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        await self._read(config, lambda: self.delete_thread(thread_id))

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, Any]:
        """See the sync ``get_delta_channel_history``."""
        return await self._read(
            config, lambda: self.get_delta_channel_history(config=config, channels=channels)
        )


class InlineSqliteSaver(_InlineAsync, SqliteSaver):
    """``SqliteSaver`` with async methods that run inline (no thread hand-off)."""


class SessionSaver(InlineSqliteSaver):
    """Checkpoints in the session database, written with the events they cover.

    Every write (a checkpoint, or a finished step's writes) takes the
    events ``outbox`` holds for its thread and appends them to the event log
    in the same transaction.
    """

    def __init__(
        self, path: Path, outbox: EventOutbox, shared: Callable[[], Database] | None = None
    ) -> None:
        """Save in ``path``, with the events ``outbox`` holds.

        ``shared`` gives the calling thread's connection of the session store
        that logs the events: the saver writes through it rather than a
        connection of its own. Two connections that write in turn each find
        the other's commit and drop their page cache, reading the pages
        again from the file on every transaction.
        """
        self._shared = shared
        self._own = schema.connect(path) if shared is None else None
        self._path = path
        super().__init__(self._db().conn, serde=ScrubbingSerializer())
        self._outbox = outbox
        self._write_lock = write_lock(path)
        self._thread: str | None = None
        self.setup()

    def _db(self) -> Database:
        """The connection to use in the calling thread."""
        return self._own if self._own is not None else cast(Callable[[], Database], self._shared)()

    @property
    def conn(self) -> sqlite3.Connection:
        """The calling thread's connection (see ``__init__``)."""
        return cast(sqlite3.Connection, self._db().conn)

    @conn.setter
    def conn(self, _: sqlite3.Connection) -> None:
        """Set by the base class: the connection is always the calling thread's (``_db``)."""

    def close(self) -> None:
        """Close the saver's own connection (a shared one is the store's to close)."""
        if self._own is not None:
            self._own.close()

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Save ``checkpoint`` with the events its thread emitted since the last one."""
        with self._writing(config):
            return super().put(config, checkpoint, metadata, new_versions)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Save a finished step's writes with the events its thread emitted."""
        with self._writing(config):
            super().put_writes(config, writes, task_id, task_path)

    @contextmanager
    def _writing(self, config: RunnableConfig) -> Iterator[None]:
        self._thread = str(config["configurable"]["thread_id"])
        try:
            yield
        finally:
            self._thread = None

    @contextmanager
    def cursor(self, transaction: bool = True) -> Iterator[Any]:
        """A cursor; a writing one runs in a write transaction that logs held events."""
        if not transaction:
            with super().cursor(transaction=False) as cur:
                yield cur
            return
        if self._outbox.stopped:
            raise CheckpointsStopped(self._path)
        thread = self._thread
        events = self._outbox.take(thread) if thread is not None else []
        try:
            with self.lock, write_transaction(self._db(), self._write_lock) as db:
                stored = insert_events(db, events)
                cur = self.conn.cursor()
                try:
                    yield cur
                finally:
                    cur.close()
        except BaseException:
            if thread is not None:
                self._outbox.put_back(thread, events)
            raise
        self._outbox.publish(stored)


def _postgres_saver(url: Path, outbox: EventOutbox) -> Any:
    """A ``SessionPostgresSaver`` (LangGraph's ``PostgresSaver``, the ``postgres`` extra).

    Made here, not at import: the extra is optional, and SQLite users never load it.
    """
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    from aah.store import PgPool, setting_up, translated_errors

    server = cast(DatabaseURL, url)  # session_checkpointer checked it is one

    class SessionPostgresSaver(_ThreadedAsync, PostgresSaver):
        """Checkpoints in the PostgreSQL store, written with the events they cover.

        A checkpoint or a step's writes and the events its thread emitted
        commit in one transaction, under the store's write lock (as
        ``SessionSaver`` does in SQLite); reads run outside any transaction.
        Each call borrows a connection of the saver's pool, so sessions'
        calls run side by side in worker threads (``_ThreadedAsync``).
        """

        def __init__(self) -> None:
            self._pool = PgPool(server)
            self._path = url
            self._outbox = outbox
            self._write_lock = write_lock(url)
            self._local = threading.local()
            self._order: dict[str, _Turns] = {}
            self._threads = ThreadPoolExecutor(_SAVER_THREADS, "aah-checkpoints")
            # No connection of its own: ``_cursor`` borrows the pool's.
            super().__init__(None, serde=ScrubbingSerializer())  # type: ignore[arg-type]
            with translated_errors(server):
                self.setup()

        def setup(self) -> None:
            """Make the checkpoint tables, one process at a time (``setting_up``).

            LangGraph's migrations run on the connection that holds the lock.
            """
            with self._pool.connection() as db, setting_up(db, f"the checkpoints of {server}"):
                self._local.setup = db
                try:
                    super().setup()
                finally:
                    self._local.setup = None

        def close(self) -> None:
            self._threads.shutdown(wait=True)
            self._pool.close()

        def put(
            self,
            config: RunnableConfig,
            checkpoint: Checkpoint,
            metadata: CheckpointMetadata,
            new_versions: ChannelVersions,
        ) -> RunnableConfig:
            with _writing(self, config), translated_errors(server):
                return super().put(config, checkpoint, metadata, new_versions)

        def put_writes(
            self,
            config: RunnableConfig,
            writes: Sequence[tuple[str, Any]],
            task_id: str,
            task_path: str = "",
        ) -> None:
            with _writing(self, config), translated_errors(server):
                super().put_writes(config, writes, task_id, task_path)

        def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
            with translated_errors(server):
                return super().get_tuple(config)

        @contextmanager
        def _cursor(self, *, pipeline: bool = False) -> Iterator[Any]:
            setting_up = getattr(self._local, "setup", None)
            if setting_up is not None:
                with setting_up.raw.cursor(binary=True, row_factory=dict_row) as cur:
                    yield cur
                return
            with self._pool.connection() as db:
                if not pipeline:  # a read, or the saver's own setup
                    with db.raw.cursor(binary=True, row_factory=dict_row) as cur:
                        yield cur
                    return
                # The write transaction is a pipeline (``write_transaction``):
                # the write's statements go out without waiting for each
                # reply, one round trip in all.
                with (
                    _logging_events(self, db) as db,
                    db.raw.cursor(binary=True, row_factory=dict_row) as cur,
                ):
                    yield cur

    return SessionPostgresSaver()


class _Turns:
    """The calls one session's thread has in flight, taken in the order they came."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.waiting = 0


class _ThreadedAsync(_InlineAsync):
    """A server saver's async methods, each run by its sync one on the saver's threads.

    Every statement to a server waits a network round trip, which inline
    would stall every other session on the event loop; in a thread the
    loop goes on while it waits. The saver has threads of its own
    (``_SAVER_THREADS``), so tool calls on the loop's default threads do
    not hold its writes up. One session's calls still run one at
    a time and in the order they came (``_Turns``): a checkpoint must not
    overtake the step writes before it. The events a write logs are taken
    from the outbox on the loop when the call is made, handed to the thread,
    and told to listeners back on the loop once stored. A session cancelled
    meanwhile waits for its call already running, and puts back the events
    of one that never ran.
    """

    _outbox: EventOutbox
    _local: threading.local
    _order: dict[str, _Turns]
    _threads: ThreadPoolExecutor

    async def _read(self, config: RunnableConfig | None, call: Callable[[], _T]) -> _T:
        thread = _thread_of(config)
        turns = None
        if thread is not None:
            turns = self._order.get(thread) or self._order.setdefault(thread, _Turns())
            turns.waiting += 1
        try:
            async with turns.lock if turns is not None else nullcontext():
                # Cancelled, the session waits for the call already running,
                # so that what it writes next (its held events, its error)
                # comes after it.
                return await on_thread(self._threads, call)
        finally:
            if turns is not None and thread is not None:
                turns.waiting -= 1
                if not turns.waiting:
                    del self._order[thread]

    async def _write(self, config: RunnableConfig, call: Callable[[], _T]) -> _T:
        thread = _thread_of(config)
        events = self._outbox.take(thread) if thread is not None else []
        stored: list[Event] = []
        done = False

        def handed() -> _T:
            nonlocal done
            self._local.events, self._local.stored = events, stored
            try:
                result = call()
                done = True
                return result
            finally:
                self._local.events = self._local.stored = None

        try:
            result = await self._read(config, handed)
        except BaseException:
            # Not written (failed, or cancelled before its turn): the events
            # wait for the next write, or for the session's own last word.
            if not done and thread is not None:
                self._outbox.put_back(thread, events)
            raise
        self._outbox.publish(stored)
        return result


def _thread_of(config: RunnableConfig | None) -> str | None:
    thread = (config or {}).get("configurable", {}).get("thread_id")
    return None if thread is None else str(thread)


@contextmanager
def _writing(saver: Any, config: RunnableConfig) -> Iterator[None]:
    """Tell ``saver`` whose thread the write in progress (in this OS thread) is for."""
    saver._local.thread = str(config["configurable"]["thread_id"])
    try:
        yield
    finally:
        saver._local.thread = None


@contextmanager
def _logging_events(saver: Any, db: Any) -> Iterator[Any]:
    """A write transaction on ``db`` that first logs the held events of ``saver``'s thread.

    Events an async call handed over (``_ThreadedAsync``) are logged once,
    by the call's first write, and told to listeners by the call on the
    loop; a sync call takes its thread's events from the outbox here.
    """
    if saver._outbox.stopped:
        raise CheckpointsStopped(saver._path)
    handed: list[Event] | None = getattr(saver._local, "events", None)
    thread: str | None = getattr(saver._local, "thread", None)
    if handed is not None:
        events, saver._local.events = handed, []
    else:
        events = saver._outbox.take(thread) if thread is not None else []
    exclusive = needs_exclusive(events)
    try:
        # Pipelined: the events' appends and the saver's statements go out
        # together, and their replies are read once the block has committed.
        with write_transaction(db, saver._write_lock, exclusive=exclusive) as db:
            sent = send_events(db, events)
            yield db
        stored = sent.stored()
    except BaseException:
        if handed is None and thread is not None:  # else the call puts them back
            saver._outbox.put_back(thread, events)
        raise
    if handed is not None:
        saver._local.stored.extend(stored)
    else:
        saver._outbox.publish(stored)


@contextmanager
def session_checkpointer(
    path: Path, outbox: EventOutbox, store: SessionStore | None = None
) -> Iterator[Any]:
    """A checkpointer in the session store ``path`` (safe beside other processes).

    An SQLite file gets ``SessionSaver`` (WAL), sharing ``store``'s
    connections when given (``store`` must be of ``path``); a PostgreSQL URL
    gets LangGraph's ``PostgresSaver`` in the same database, its writes
    committed with their events the same way.
    """
    saver: Any
    if is_database_url(path):
        saver = _postgres_saver(path, outbox)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        saver = SessionSaver(path, outbox, store.thread_connection if store is not None else None)
    try:
        yield saver
    finally:
        saver.close()
