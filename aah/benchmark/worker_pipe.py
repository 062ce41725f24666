"""The parent's reader of a worker's pipe: whole messages, never a wait, never a crash.

A worker writes its messages with ``Connection.send``: a 4-byte signed
length (-1: an 8-byte length follows), then a pickle of a list of tuples.
The parent reads them here rather than with ``Connection.recv``, which waits
until a whole message is in: a worker stopped (SIGSTOP) halfway through
writing one would hold the parent's event loop, and with it the watch that
notices silent workers, for ever. ``PipeReader`` takes what the pipe holds
now and keeps a partial message for the next call.

A length past :data:`MAX_MESSAGE_BYTES` is refused before its bytes are read,
and each pickle is loaded by an unpickler that builds only what workers send
(tuples, numbers, text, ``SessionOutcome``, exceptions, datetimes, paths)
and imports nothing. Whatever else the pipe holds is a :class:`BadMessage`,
and the parent treats the worker that sent it as lost. The worker is the
parent's own child, so this guards against garbled bytes and bugs rather
than a hostile process; it also means no pipe can make the parent import a
module or call a function.
"""

from __future__ import annotations

import datetime
import io
import os
import pickle
import struct
import sys
from pathlib import PurePath
from typing import Any, NamedTuple

from aah.runtime import SessionOutcome

# The largest message the parent reads from a worker: a batch of outcomes,
# each with its final answer (AAH_MAX_REPLY_BYTES, 1 MB by default).
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
# Bytes taken from the pipe in one read, and reads in one turn of the loop.
CHUNK_BYTES = 65536
READS_PER_TURN = 16

# The classes a worker's messages hold besides exceptions and built-in values.
_SENT_CLASSES: tuple[type, ...] = (
    SessionOutcome,
    datetime.datetime,
    datetime.date,
    datetime.time,
    datetime.timedelta,
    datetime.timezone,
    PurePath,
)


class BadMessage(ValueError):
    """What a worker wrote is not a message it sends; the text says what was wrong."""


class _SentOnly(pickle.Unpickler):
    """An unpickler that builds only the classes workers send, from modules already loaded."""

    def find_class(self, module: str, name: str) -> Any:
        found: Any = sys.modules.get(module)  # never imports: a pipe cannot load code
        for part in name.split("."):
            found = getattr(found, part, None)
        if isinstance(found, type) and (
            issubclass(found, BaseException) or issubclass(found, _SENT_CLASSES)
        ):
            return found
        raise BadMessage(f"it holds {_short(module)}.{_short(name)}, which workers never send")


def load_message(body: bytes) -> Any:
    """The value of one pickled message, built only from what workers send.

    Raises:
        BadMessage: the bytes are no such pickle.
    """
    try:
        return _SentOnly(io.BytesIO(body)).load()
    except BadMessage:
        raise
    except (Exception, RecursionError) as exc:  # a garbled pickle fails in many ways
        raise BadMessage(f"it is no pickle ({type(exc).__name__})") from None


def loads_back(value: Any) -> bool:
    """Whether ``value`` pickled comes back through :func:`load_message` (a worker checks)."""
    try:
        load_message(pickle.dumps(value))
    except Exception:  # unpicklable, or refused
        return False
    return True


def message_problem(message: Any) -> str | None:
    """What is wrong with one message from a worker (its kind, its parts), or None."""
    if not isinstance(message, tuple) or not message or not isinstance(message[0], str):
        return f"a message is {type(message).__name__}, not a tuple naming its kind"
    kind, parts = message[0], message[1:]
    shape = _SHAPES.get(kind)
    if shape is None:
        return f"a message of unknown kind {_short(kind)!r}"
    if len(parts) != len(shape) or not all(
        fits(part) for fits, part in zip(shape, parts, strict=True)
    ):
        return f"a {kind!r} message has wrong parts"
    return None


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _age(value: Any) -> bool:
    return value is None or (type(value) in (int, float) and 0 <= value < float("inf"))


_TEXT_FIELDS = ("session_id", "status", "final_answer")


def _outcome(value: Any) -> bool:
    return (
        type(value) is SessionOutcome
        and all(type(getattr(value, name, None)) is str for name in _TEXT_FIELDS)
        and type(getattr(value, "step_limit_hit", None)) is bool
        and type(getattr(value, "error", None)) in (str, type(None))
        and type(getattr(value, "waiting_on", None)) in (str, type(None))
        and isinstance(getattr(value, "deadline", None), datetime.datetime | type(None))
    )


def _failure(value: Any) -> bool:
    return isinstance(value, Exception)


# Each kind of message a worker sends, and a check for each of its parts.
_SHAPES: dict[str, tuple[Any, ...]] = {
    "ask": (_count,),  # tasks it has room for
    "ended": (_count, _outcome),  # a task's index, and how it ended
    "waiting": (_count,),  # sessions it holds parked
    "activity": (_count, _count, _age),  # running, model calls out, seconds since a step
    "crashed": (_failure,),  # what stopped it outside any session
}


class FrameDecoder:
    """Whole messages out of the bytes of ``Connection.send``, however the bytes are cut."""

    def __init__(self, limit: int = MAX_MESSAGE_BYTES) -> None:
        self.limit = limit
        self.buffer = bytearray()
        self.problem: str | None = None  # set once; nothing is read after it

    def feed(self, data: bytes) -> list[Any]:
        """The messages ``data`` completes, in order; a partial one waits for more bytes.

        Once a frame is wrong (a bad length, a bad pickle) ``problem`` says
        so and the rest is ignored: the stream's boundaries are lost.
        """
        if self.problem is not None:
            return []
        self.buffer += data
        messages: list[Any] = []
        while self.problem is None:
            frame = self._frame()
            if frame is None:
                break
            header, size = frame
            body = bytes(self.buffer[header : header + size])
            del self.buffer[: header + size]
            try:
                messages.append(load_message(body))
            except BadMessage as exc:
                self.refuse(f"a message was refused: {exc}")
        return messages

    def _frame(self) -> tuple[int, int] | None:
        """The header's length and the body's, once the whole frame is in; else None."""
        if len(self.buffer) < 4:
            return None
        (size,) = struct.unpack("!i", self.buffer[:4])
        header = 4
        if size == -1:
            if len(self.buffer) < 12:
                return None
            (size,) = struct.unpack("!Q", self.buffer[4:12])
            header = 12
        if size < 0:
            self.refuse(f"a message's length is {size}")
            return None
        if size > self.limit:
            self.refuse(f"a message of {size:,} bytes, over the cap of {self.limit:,}")
            return None
        return (header, size) if len(self.buffer) >= header + size else None

    def refuse(self, problem: str) -> None:
        """Take no more bytes: the stream's boundaries are lost (``problem`` says why)."""
        self.problem = problem
        self.buffer = bytearray()


class PipeRead(NamedTuple):
    """What one read of a worker's pipe gave: whole messages, and how the pipe ended if it did."""

    messages: list[Any]
    problem: str | None = None  # the pipe held something that is no message
    closed: bool = False  # the worker's end is closed: it has ended


class PipeReader:
    """Reads a worker's pipe without waiting (the descriptor is made non-blocking)."""

    def __init__(self, fd: int, limit: int = MAX_MESSAGE_BYTES) -> None:
        os.set_blocking(fd, False)
        self.fd = fd
        self.decoder = FrameDecoder(limit)

    def read(self, reads: int | None = READS_PER_TURN) -> PipeRead:
        """The messages the pipe holds now (at most ``reads`` chunks; None: until it is empty)."""
        messages: list[Any] = []
        done = 0
        while reads is None or done < reads:
            done += 1
            try:
                data = os.read(self.fd, CHUNK_BYTES)
            except BlockingIOError:
                break
            except OSError:  # reset, or closed under us: the worker is gone
                return PipeRead(messages, self.decoder.problem, closed=True)
            if not data:
                return PipeRead(messages, self.decoder.problem, closed=True)
            messages += self.decoder.feed(data)
            if self.decoder.problem is not None:
                break
        return PipeRead(messages, self.decoder.problem)

    def refuse(self, problem: str) -> None:
        """Read nothing more from this pipe: what it holds was found wrong (``problem``)."""
        self.decoder.refuse(problem)


def _short(text: str) -> str:
    """``text`` as a refusal quotes it: printable and short."""
    shown = text.encode("ascii", "backslashreplace").decode()
    return shown if len(shown) <= 60 else shown[:57] + "..."
