"""The checkpointer writes each checkpoint with the events held for its thread."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from postgres_cluster import raw_rows
from runtime_support import ASK_FIRST_SCRIPT, runtime_on

from aah.db_url import DatabaseURL
from aah.events import Event, FinalAnswerEvent, ModelCallEvent
from aah.runtime import ScriptedHuman, SessionRequest, run_session
from aah.runtime.checkpoint_serde import ScrubbingSerializer, scrub_state
from aah.runtime.checkpoints import CheckpointsStopped, EventOutbox, session_checkpointer
from aah.store import StoreFileError
from aah.store.sessions import SessionStore
from aah.testing.fake_llm import FakeLLMServer


def _config(thread: str, checkpoint: str = "c1") -> Any:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": "", "checkpoint_id": checkpoint}}


def _count(db: Path, table: str) -> int:
    """Rows of the checkpointer's ``table`` (PostgresSaver names its writes' table its own way)."""
    if isinstance(db, DatabaseURL) and table == "writes":
        table = "checkpoint_writes"
    return int(raw_rows(db, f"SELECT count(*) FROM {table}")[0][0])  # type: ignore[call-overload]


def test_a_write_commits_the_threads_held_events_and_publishes_them(store_location: Path) -> None:
    db = store_location
    store = SessionStore(db)
    session = store.open_session("Hi")
    published: list[Event] = []
    outbox = EventOutbox(published.extend)
    with session_checkpointer(db, outbox) as saver:
        outbox.add(session.thread_id, ModelCallEvent(session_id=session.id, model="m", text="a"))
        outbox.add("another-thread", FinalAnswerEvent(session_id=session.id, text="later"))
        saver.put_writes(_config(session.thread_id), [("messages", [])], "task-1")
    assert [e.kind for e in store.events(session.id)] == ["model_call"]
    assert [e.seq for e in published] == [1]
    assert _count(db, "writes") == 1
    assert outbox.take("another-thread")  # other threads' events wait for their own write


def test_a_failed_write_stores_nothing_and_keeps_the_events(store_location: Path) -> None:
    db = store_location
    store = SessionStore(db)
    session = store.open_session("Hi")
    outbox = EventOutbox()
    held = [
        ModelCallEvent(session_id=session.id, model="m", text="first"),
        ModelCallEvent(session_id="no-such-session", model="m", text="second"),
    ]
    with session_checkpointer(db, outbox) as saver:
        for event in held:
            outbox.add("t", event)
        with pytest.raises(KeyError, match="no-such-session"):
            saver.put_writes(_config("t"), [("messages", [])], "task-1")
    assert store.events(session.id) == []
    assert _count(db, "writes") == 0
    assert [e.text for e in outbox.take("t")] == ["first", "second"]  # type: ignore[attr-defined]


def test_a_stopped_outbox_drops_its_events_and_refuses_every_later_write(
    store_location: Path,
) -> None:
    # A run whose store file failed stops the outbox. A step's writes still
    # on their way (LangGraph saves them in a task of their own, which runs
    # after the session is cancelled) must not save the step without the
    # events it held: the rerun would resume past them and they would be lost.
    db = store_location
    store = SessionStore(db)
    session = store.open_session("Hi")
    outbox = EventOutbox()
    with session_checkpointer(db, outbox) as saver:
        outbox.add(session.thread_id, ModelCallEvent(session_id=session.id, model="m", text="a"))
        outbox.stop()
        outbox.add(session.thread_id, FinalAnswerEvent(session_id=session.id, text="later"))
        outbox.put_back(session.thread_id, [FinalAnswerEvent(session_id=session.id, text="x")])
        with pytest.raises(CheckpointsStopped) as stopped:
            saver.put_writes(_config(session.thread_id), [("messages", [])], "task-1")
        with pytest.raises(StoreFileError):  # the session stays as its last checkpoint left it
            saver.put(_config(session.thread_id), empty_checkpoint(), {}, {})
    assert str(db) in str(stopped.value) and "run the same command again" in str(stopped.value)
    assert store.events(session.id) == []
    assert _count(db, "writes") == 0 and _count(db, "checkpoints") == 0
    assert outbox.take(session.thread_id) == []


def test_checkpoint_values_are_scrubbed_but_keep_their_shape() -> None:
    secret = "sk-" + "x" * 20
    value = {
        "messages": [
            HumanMessage(f"my key is {secret}"),
            AIMessage(
                "",
                tool_calls=[{"name": "t", "args": {"api_key": "k-123", "q": "x"}, "id": "1"}],
            ),
            AIMessage("nothing secret"),
        ],
        "steps": 2,
        "seen": ("a", "b"),
    }
    scrubbed = scrub_state(value)
    assert secret not in scrubbed["messages"][0].content
    assert scrubbed["messages"][1].tool_calls[0]["args"] == {"api_key": "[redacted]", "q": "x"}
    assert scrubbed["messages"][2] is value["messages"][2]  # untouched messages are not copied
    assert scrubbed["steps"] == 2 and scrubbed["seen"] == ("a", "b")
    kind, data = ScrubbingSerializer().dumps_typed(value)
    assert secret.encode() not in data and b"k-123" not in data
    restored = ScrubbingSerializer().loads_typed((kind, data))
    assert restored["messages"][1].tool_calls[0]["name"] == "t"


class _CountingReads:
    """Counts a saver's checkpoint reads, by thread, and passes them on."""

    def __init__(self, saver: Any) -> None:
        self.threads: list[str] = []
        read = saver.aget_tuple

        async def counted(config: Any) -> Any:
            self.threads.append(str(config["configurable"]["thread_id"]))
            return await read(config)

        saver.aget_tuple = counted


def test_a_new_session_reads_its_checkpoint_only_where_the_graph_does(
    store_location: Path,
) -> None:
    # The graph reads a thread's checkpoint each time it runs: once at the
    # start, once more after the question it paused on. A session made
    # just now has nothing saved, so the driver's own read before the
    # first run (which finds what a resumed session paused on) is skipped.
    # Opened again, a session of the same run and task is read first.
    async def run(llm: FakeLLMServer) -> tuple[list[str], list[str], str]:
        human = ScriptedHuman(["Lisbon"], at_once=False)  # pauses, as for a person
        async with runtime_on(llm, store_location, human) as runtime:
            runtime.store.create_run("r", {})
            reads = _CountingReads(runtime.checkpointer)
            request = SessionRequest(query="Weather where I live?", run="r", task_id="t1")
            first = await run_session(request, runtime)
            assert first.status == "finished"
            new_reads = list(reads.threads)
            reads.threads.clear()
            runtime.store.set_status(first.session_id, "error")  # to be retried
            again = await run_session(replace(request, retry_errors=True), runtime)
            assert again.session_id == first.session_id
            return new_reads, reads.threads, first.session_id

    with FakeLLMServer(ASK_FIRST_SCRIPT) as llm:
        new_reads, reopened_reads, session_id = asyncio.run(run(llm))
    assert new_reads == [session_id, session_id]
    assert reopened_reads[0] == session_id and len(reopened_reads) == 2
