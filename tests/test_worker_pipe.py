"""The parent's reader of a worker's pipe: whatever a worker writes, the parent neither waits nor crashes.

The corpus ``tests/fixtures/hostile/worker_messages.jsonl`` holds the
concrete cases (each with why); Hypothesis cuts valid and garbled streams at
every point and sends the parent messages of every shape.
"""

from __future__ import annotations

import asyncio
import json
import math
import multiprocessing
import pickle
import socket
import struct
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aah.benchmark import RunSummary
from aah.benchmark.worker_pipe import (
    MAX_MESSAGE_BYTES,
    FrameDecoder,
    PipeReader,
    load_message,
    message_problem,
)
from aah.benchmark.worker_watch import Heartbeats
from aah.benchmark.workers import _Parent, _plain, _sendable
from aah.errors import AahError
from aah.runtime import SessionOutcome

CORPUS = Path(__file__).parent / "fixtures" / "hostile" / "worker_messages.jsonl"
CASES = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
FINISHED = SessionOutcome("s1", "finished", "Done.")


class Task:
    """A task of the fewest parts (the parent reads only ids)."""

    def __init__(self, task_id: str) -> None:
        self.id = task_id


def parent() -> _Parent[Any]:
    """A parent with one worker holding task 0 of two; no process behind it."""
    summary = RunSummary(total=2)
    made: _Parent[Any] = _Parent(
        [Task("a"), Task("b")], [], summary, None, None, None, None, Heartbeats(60.0)
    )
    made._prepare(1)
    made.left = 2
    made.alive = {0}
    made.held[0] = {0}
    made.watch.started(0)
    return made


def frame(batch: Any, *, raw: bytes | None = None) -> bytes:
    """What ``Connection.send(batch)`` writes (or a frame of ``raw`` bytes)."""
    body = raw if raw is not None else pickle.dumps(batch)
    return struct.pack("!i", len(body)) + body


def _outcome(fields: dict[str, Any]) -> SessionOutcome:
    """A SessionOutcome with these fields over a finished one's, types unchecked (as a pickle)."""
    made = object.__new__(SessionOutcome)
    made.__dict__.update({**vars(FINISHED), **fields})
    return made


def _value(node: Any) -> Any:
    """A corpus message: lists are tuples, ``{"outcome": {...}}`` an outcome."""
    if isinstance(node, dict) and set(node) == {"outcome"}:
        return _outcome(node["outcome"])
    if isinstance(node, list):
        return tuple(_value(part) for part in node)
    return node


def _nested_ask(levels: int) -> bytes:
    """A pickle of ``[("ask", [[[...]]])]`` nested ``levels`` deep, written opcode by opcode."""
    ask = b"X" + struct.pack("<I", 3) + b"ask"
    return b"](" + ask + b"]" * levels + b"a" * (levels - 1) + b"ta."


def stream(case: dict[str, Any]) -> bytes:
    """The bytes a corpus case puts in the pipe."""
    if "frame_hex" in case:
        return bytes.fromhex(case["frame_hex"])
    if "pickle" in case:
        return frame(None, raw=case["pickle"].encode("latin-1"))
    if "nested" in case:
        return frame(None, raw=_nested_ask(case["nested"]))
    if "message_batch" in case:
        batch = case["message_batch"]
        return frame({k: v for k, v in batch.items()} if isinstance(batch, dict) else batch)
    if case.get("good_then_garbage"):
        return frame([("ended", 0, FINISHED)]) + frame(None, raw=b"\x80\x04garbage")
    if case.get("message_batch_ok"):
        good = [("ask", 3), ("waiting", 1), ("activity", 2, 1, 0.5), ("ended", 0, FINISHED)]
        return frame(good)
    return frame([_value(case["message"])])


@pytest.mark.parametrize("case", CASES, ids=[case["why"][:60] for case in CASES])
def test_every_hostile_worker_message_is_refused_without_harm(
    case: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # where the os.system case would write, were it run
    ours, theirs = socket.socketpair()
    with ours, theirs:
        reader = PipeReader(ours.fileno())
        theirs.sendall(stream(case))
        if case.get("closed"):
            theirs.shutdown(socket.SHUT_WR)
        said = reader.read()
        watched = parent()
        problem = watched._take(0, said.messages) or said.problem
    assert said.closed == bool(case.get("closed"))
    if "refused" in case:
        assert problem is not None and case["refused"] in problem, problem
        assert "\n" not in problem
    else:
        assert problem is None
    # Nothing ran, nothing was imported, and the parent counted only good messages.
    assert not (tmp_path / "AAH_PWNED").exists() and "antigravity" not in sys.modules
    assert watched.summary.finished == case.get("messages", 0) == 2 - watched.left
    assert not watched.crashed


def test_the_reader_reads_what_connection_send_writes_and_never_waits() -> None:
    # Small messages go in one write; over 16 KiB the header and body go apart.
    ours, theirs = multiprocessing.Pipe()
    reader = PipeReader(ours.fileno())
    batches = [[("ask", 3)], [("ended", 0, _plain(FINISHED))], [("activity", 1, 1, "x" * 200_000)]]
    sent: list[Any] = []
    writer = threading.Thread(target=lambda: [theirs.send(b) for b in batches])
    writer.start()
    while len(sent) < len(batches):
        sent += reader.read().messages
    writer.join()
    assert sent == batches
    assert reader.read() == ([], None, False)  # nothing there: back at once
    theirs.close()
    assert reader.read().closed


def test_a_message_half_written_waits_in_the_reader_for_the_rest() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        reader = PipeReader(ours.fileno())
        whole = frame([("waiting", 2)])
        theirs.sendall(whole[:3])
        assert reader.read() == ([], None, False)
        theirs.sendall(whole[3:9])
        assert reader.read() == ([], None, False)
        theirs.sendall(whole[9:])
        assert reader.read().messages == [[("waiting", 2)]]


def test_a_worker_sends_the_parent_only_failures_it_takes_back() -> None:
    assert isinstance(_sendable(KeyError("k")), KeyError)
    lock = threading.Lock()
    for failure in (KeyboardInterrupt(), OSError(lock), SystemExit(3)):
        sent = _sendable(failure)
        assert type(sent) is AahError and load_message(pickle.dumps(sent)).args == sent.args
    # A model's text may be a str subclass (LangChain's TextAccessor): sent as plain str.
    fancy = type("Fancy", (str,), {})
    plain = _plain(SessionOutcome(fancy("s"), fancy("finished"), fancy("Done.")))
    assert message_problem(("ended", 0, plain)) is None
    assert message_problem(("ended", 0, SessionOutcome("s", "finished", fancy("x")))) is not None


# -- generated -------------------------------------------------------------------------

OUTCOMES = st.builds(
    SessionOutcome,
    st.text(max_size=8),
    st.sampled_from(["finished", "error", "step_limit", "waiting", "skipped"]),
    st.text(max_size=40),
    st.booleans(),
    st.none() | st.text(max_size=20),
)
MESSAGES = st.one_of(
    st.tuples(st.just("ask"), st.integers(0, 10**6)),
    st.tuples(st.just("waiting"), st.integers(0, 10**6)),
    st.tuples(
        st.just("activity"),
        st.integers(0, 1000),
        st.integers(0, 1000),
        st.none() | st.floats(0, 1e6, allow_nan=False, allow_infinity=False),
    ),
    st.tuples(st.just("ended"), st.integers(0, 1000), OUTCOMES),
)
BATCHES = st.lists(st.lists(MESSAGES, min_size=1, max_size=4), min_size=1, max_size=6)


def cut(data: bytes, points: list[int]) -> list[bytes]:
    """``data`` cut at ``points`` (any order, repeats allowed)."""
    edges = sorted({0, len(data), *(p % (len(data) + 1) for p in points)})
    return [data[a:b] for a, b in zip(edges, edges[1:], strict=False)]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(BATCHES, st.lists(st.integers(0, 10**6), max_size=20))
def test_valid_messages_come_out_whole_however_the_pipe_cuts_them(
    batches: list[Any], points: list[int]
) -> None:
    data = b"".join(frame(batch) for batch in batches)
    decoder = FrameDecoder()
    out: list[Any] = []
    for piece in cut(data, points):
        out += decoder.feed(piece)
    assert out == batches and decoder.problem is None and not decoder.buffer
    assert all(message_problem(m) is None for batch in out for m in batch)


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    BATCHES,
    st.binary(max_size=300),
    st.lists(st.integers(0, 10**6), max_size=20),
    st.integers(16, 4096),
)
def test_garbage_after_good_messages_never_crashes_the_reader(
    batches: list[Any], garbage: bytes, points: list[int], limit: int
) -> None:
    good = b"".join(frame(batch) for batch in batches if len(frame(batch)) - 4 <= limit)
    kept = [batch for batch in batches if len(frame(batch)) - 4 <= limit]
    decoder = FrameDecoder(limit=limit)
    out: list[Any] = []
    for piece in cut(good + garbage, points):
        out += decoder.feed(piece)  # never raises
        assert len(decoder.buffer) <= 12 + limit  # never holds more than one frame
    assert out[: len(kept)] == kept
    if decoder.problem is not None:
        assert "\n" not in decoder.problem and decoder.feed(frame([("ask", 1)])) == []


ANYTHING = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=10)
    | st.binary(max_size=10)
    | st.sampled_from(["ask", "ended", "waiting", "activity", "crashed"])
    | st.builds(ValueError, st.text(max_size=5))
    | OUTCOMES,
    lambda inner: st.lists(inner, max_size=4) | st.lists(inner, max_size=4).map(tuple),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(ANYTHING, max_size=4))
def test_the_parent_takes_or_refuses_any_batch_without_crashing(batches: list[Any]) -> None:
    watched = parent()
    problem = watched._take(0, batches)
    assert problem is None or ("\n" not in problem and len(problem) < 200)
    assert watched.left in (1, 2) and watched.summary.finished + watched.summary.errors <= 1
    assert all(isinstance(failure, Exception) for failure in watched.crashed)
    for _, out, age in watched.live:
        assert out >= 0 and (age is None or math.isfinite(age))


def test_the_cap_on_a_message_is_what_the_module_says() -> None:
    decoder = FrameDecoder()
    assert decoder.limit == MAX_MESSAGE_BYTES == 64 * 1024 * 1024
    decoder.feed(struct.pack("!i", MAX_MESSAGE_BYTES + 1))
    assert decoder.problem is not None and "over the cap of 67,108,864" in decoder.problem


def test_frames_written_in_pieces_are_read_whole_while_the_loop_turns() -> None:
    # A writer slow to finish its frame never holds the loop (Connection.recv would wait).
    async def main() -> list[Any]:
        ours, theirs = socket.socketpair()
        reader = PipeReader(ours.fileno())
        got: list[Any] = []
        done = asyncio.Event()

        def readable() -> None:
            said = reader.read()
            got.extend(said.messages)
            if said.closed:
                asyncio.get_running_loop().remove_reader(ours.fileno())
                done.set()

        asyncio.get_running_loop().add_reader(ours.fileno(), readable)
        whole = frame([("ask", 7)]) * 3
        for start in range(0, len(whole), 5):
            theirs.sendall(whole[start : start + 5])
            await asyncio.sleep(0.001)  # the loop turns between the pieces
        theirs.close()
        await asyncio.wait_for(done.wait(), 5)
        ours.close()
        return got

    assert asyncio.run(main()) == [[("ask", 7)]] * 3
