"""The graph's SQLite checkpointer, run inline on the event loop.

LangGraph's async SQLite saver sends every query to a worker thread and back;
a session makes over a hundred such trips, and at 64 concurrent sessions those
hand-offs cost more CPU than the queries (perf/batch_bench.py). The queries
themselves take well under a millisecond on a WAL database, so this saver runs
the synchronous saver's methods directly inside the async ones. A write that
has to wait for another process's lock blocks the loop for that wait, bounded
by the busy timeout.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
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

BUSY_TIMEOUT_SECONDS = 30.0


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


@contextmanager
def inline_checkpointer(path: Path) -> Iterator[InlineSqliteSaver]:
    """A checkpointer on ``path`` in WAL mode, safe beside other processes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_SECONDS, check_same_thread=False)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        saver = InlineSqliteSaver(conn)
        saver.setup()
        yield saver
    finally:
        conn.close()
