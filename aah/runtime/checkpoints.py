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
blocks the loop for that wait, bounded by the busy timeout.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.sqlite import SqliteSaver

from aah.events import Event
from aah.runtime.checkpoint_serde import ScrubbingSerializer
from aah.store import StoreFileError, insert_events, write_lock, write_transaction
from aah.store import schema as schema

Publish = Callable[[list[Event]], None]


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


class InlineSqliteSaver(SqliteSaver):
    """``SqliteSaver`` with async methods that run inline (no thread hand-off)."""

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """See ``SqliteSaver.get_tuple``."""
        return self.get_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002 - the base class's name
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """See ``SqliteSaver.list``."""
        for item in self.list(config, filter=filter, before=before, limit=limit):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """See ``SqliteSaver.put``."""
        return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """See ``SqliteSaver.put_writes``."""
        self.put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """See ``SqliteSaver.delete_thread``."""
        self.delete_thread(thread_id)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, Any]:
        """See ``SqliteSaver.get_delta_channel_history``."""
        return self.get_delta_channel_history(config=config, channels=channels)


class SessionSaver(InlineSqliteSaver):
    """Checkpoints in the session database, written with the events they cover.

    Every write (a checkpoint, or a finished step's writes) takes the
    events ``outbox`` holds for its thread and appends them to the event log
    in the same transaction.
    """

    def __init__(self, path: Path, outbox: EventOutbox) -> None:
        self._db = schema.connect(path)
        self._path = path
        super().__init__(self._db.conn, serde=ScrubbingSerializer())
        self._outbox = outbox
        self._write_lock = write_lock(path)
        self._thread: str | None = None
        self.setup()

    def close(self) -> None:
        """Close the saver's connection."""
        self._db.close()

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
            with self.lock, write_transaction(self._db, self._write_lock) as db:
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


@contextmanager
def session_checkpointer(path: Path, outbox: EventOutbox) -> Iterator[SessionSaver]:
    """A checkpointer in the session database ``path`` (WAL, safe beside other processes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    saver = SessionSaver(path, outbox)
    try:
        yield saver
    finally:
        saver.close()
