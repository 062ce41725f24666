"""Opening what sessions share: store, checkpointer, model, HTTP executor."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from aah.chat_client import ChatClient
from aah.llm import ModelConfig
from aah.runtime.checkpoints import inline_checkpointer
from aah.runtime.humans import HumanChannel
from aah.runtime.session import EventListener, Runtime
from aah.store import SessionStore
from aah.tools.modes import make_executor

# Checkpoints hold whole conversations and are written at every step; their
# own file keeps those writes from queueing behind the event log's.
CHECKPOINT_SUFFIX = ".checkpoints"


def checkpoint_path(db: Path) -> Path:
    """The checkpoint database that belongs to the session database ``db``."""
    return db.with_name(db.stem + CHECKPOINT_SUFFIX + (db.suffix or ".db"))


@asynccontextmanager
async def open_runtime(
    *,
    db: Path,
    model: ModelConfig,
    human: HumanChannel,
    http_mode: str = "mock",
    fault_plan: str | Sequence[str] | None = None,
    base_mode: str = "mock",
    cache_path: Path | None = None,
    listeners: Sequence[EventListener] = (),
    temperature: float | None = None,
    seed: int | None = None,
) -> AsyncIterator[Runtime]:
    """Everything sessions need, opened together and closed together."""
    executor = make_executor(
        http_mode, cache_path=cache_path, fault_plan=fault_plan, base_mode=base_mode
    )
    store = SessionStore(db)
    chat = ChatClient(model, temperature=temperature, seed=seed)
    try:
        with inline_checkpointer(checkpoint_path(db)) as saver:
            yield Runtime(
                store=store,
                model=chat,
                model_config=model,
                executor=executor,
                human=human,
                checkpointer=saver,
                http_mode=http_mode,
                listeners=list(listeners),
            )
    finally:
        # Close the model's connections inside this event loop: left to the
        # garbage collector, they would be closed after the loop is gone.
        await chat.aclose()
        executor.close()
        store.close()
