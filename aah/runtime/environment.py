"""Opening what sessions share: store, checkpointer, model, HTTP executor."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from aah.llm import ChatClient, ModelConfig
from aah.runtime.checkpoints import EventOutbox, session_checkpointer
from aah.runtime.humans import HumanChannel
from aah.runtime.session import Durability, EventListener, Runtime
from aah.store import SessionStore
from aah.telemetry import export_wanted, require_otel_sdk
from aah.tools.http import Executor, make_executor


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
    durability: Durability = "step",
    executor: Executor | None = None,
    wait_for_held: float = 0.0,
) -> AsyncIterator[Runtime]:
    """Everything sessions need, opened together and closed together.

    Checkpoints live in the session database ``db`` itself, so that each
    one commits with the events of the steps it saves. ``executor``, when
    given, answers the tool calls instead of one made from ``http_mode``
    (a run with MCP tools routes them beside the HTTP ones); it is closed
    with the rest. ``wait_for_held``: how long a session that another
    process runs is waited for before it is left to it. With traces wanted
    (``--otel`` or an OTLP endpoint set), every session's spans are exported
    as its parts end.
    """
    tracing = export_wanted()
    if tracing:
        require_otel_sdk()
    if executor is None:
        executor = make_executor(
            http_mode, cache_path=cache_path, fault_plan=fault_plan, base_mode=base_mode
        )
    store: SessionStore | None = None
    chat: ChatClient | None = None
    try:
        store = SessionStore(db)
        store.move_wal_in_background()  # its loop commits: the copy's fsync must not hold it up
        chat = ChatClient(model, temperature=temperature, seed=seed)
        told = list(listeners)
        if tracing:
            # Loaded only now: without an exporter nothing of OpenTelemetry is imported.
            from aah.telemetry import TraceListener

            told.append(TraceListener(store, server_url=model.base_url))
        outbox = EventOutbox()
        with session_checkpointer(db, outbox, store) as saver:
            runtime = Runtime(
                store=store,
                model=chat,
                model_config=model,
                executor=executor,
                human=human,
                checkpointer=saver,
                http_mode=http_mode,
                listeners=told,
                outbox=outbox,
                durability=durability,
                wait_for_held=wait_for_held,
            )
            outbox.publish = runtime.publish
            yield runtime
    finally:
        # Close the model's connections inside this event loop: left to the
        # garbage collector, they would be closed after the loop is gone.
        if chat is not None:
            await chat.aclose()
        executor.close()
        if store is not None:
            store.close()
        if tracing:
            from aah.telemetry import flush_traces

            flush_traces()
