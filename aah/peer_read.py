"""Every peer's bytes through one bounded reader: a size cap, a depth cap, a total deadline.

A peer is anything aah reads from that it does not control: a model server,
a tool's API, an MCP server, a trace receiver, a file someone handed over.
A cap per read is no cap: a server that trickles a byte a second never trips
a ten-second read timeout, and one that answers with a gigabyte fills memory
before any size check runs. So every exchange with a peer is read under one
:class:`PeerBound`:

- **size**: at most ``max_bytes`` (counted after decompression) are held;
  reading stops as soon as the count passes it, so memory stays bounded
  whatever the peer sends;
- **time**: the whole exchange, from the first byte asked to the last byte
  read, takes at most ``seconds`` (:class:`Exchange` keeps the one clock;
  a blocking socket is shut down when it runs out, see :class:`SocketDeadline`);
- **depth**: JSON from the peer nests at most ``max_depth`` levels, found
  before parsing (:func:`parse_json`), and an integer longer than Python
  reads is refused, not a crash.

Each refusal is a :class:`PeerOutOfBounds`: one line naming the peer, the
bound and the setting that raises it. The readers here are the only loops
that gather a peer's bytes; the faces (the model client, the tool caller,
the MCP client, the trace exporter, the file loaders) only say which bound
applies to which peer.
"""

from __future__ import annotations

import errno
import json
import math
import os
import socket
import stat
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, NamedTuple

from aah.bounds import MAX_NESTING, OutOfBounds, text_nests_deeper

READ_CHUNK = 64 * 1024

BoundKind = Literal["size", "time", "depth"]


@dataclass(frozen=True)
class PeerBound:
    """How much one exchange with a peer may bring, and how long it may take.

    Attributes:
        peer: The peer as a refusal names it ("the trace receiver at http://...").
        max_bytes: The most bytes one exchange may bring (after decompression).
        seconds: The whole exchange's deadline (``math.inf``: the caller's own).
        max_depth: The most levels its JSON may nest.
        setting: What raises the size cap (an ``AAH_*`` variable), named in refusals.
        verb: How a refusal says the peer gave it ("sent"; a file "holds").
    """

    peer: str
    max_bytes: int
    seconds: float = math.inf
    max_depth: int = MAX_NESTING
    setting: str | None = None
    verb: str = "sent"


class PeerOutOfBounds(OutOfBounds):
    """A peer sent more, slower or deeper than its bound allows; the message says which."""

    def __init__(self, message: str, *, bound: PeerBound, kind: BoundKind) -> None:
        super().__init__(message)
        self.bound = bound
        self.kind = kind


def too_large(bound: PeerBound, size: int | None = None) -> PeerOutOfBounds:
    """The refusal of a reply over ``bound``'s size cap (``size``: how much was seen)."""
    seen = f" ({size:,} bytes or more)" if size is not None else ""
    fix = f"raise {bound.setting}" if bound.setting else "check what it sends"
    return PeerOutOfBounds(
        f"{bound.peer} {bound.verb} more than {bound.max_bytes:,} bytes{seen}: {fix}",
        bound=bound,
        kind="size",
    )


def too_slow(bound: PeerBound) -> PeerOutOfBounds:
    """The refusal of an exchange that passed ``bound``'s deadline."""
    return PeerOutOfBounds(
        f"{bound.peer} did not finish its reply within {bound.seconds:g} s: "
        "check that it is up and answering",
        bound=bound,
        kind="time",
    )


def too_deep(bound: PeerBound, why: str | None = None) -> PeerOutOfBounds:
    """The refusal of JSON past ``bound``'s depth (or holding an unreadable number)."""
    what = why or f"JSON nested deeper than {bound.max_depth} levels"
    return PeerOutOfBounds(
        f"{bound.peer} {bound.verb} {what}: aah does not read it", bound=bound, kind="depth"
    )


class Exchange:
    """One exchange's budget: the bytes read so far and a deadline over the whole of it.

    Args:
        bound: The peer's bound.
        clock: Seconds on a monotonic clock (a parameter for tests).
    """

    def __init__(self, bound: PeerBound, clock: Callable[[], float] = time.monotonic) -> None:
        self.bound = bound
        self.size = 0
        self._clock = clock
        self._ends = clock() + bound.seconds

    def remaining(self) -> float:
        """Seconds left of the deadline, never below zero (``inf`` with none)."""
        return max(0.0, self._ends - self._clock())

    def check_time(self) -> None:
        """Raise :func:`too_slow` once the deadline has passed."""
        if self.remaining() <= 0:
            raise too_slow(self.bound)

    def count(self, size: int) -> bool:
        """Count ``size`` more bytes; whether the total is still within the cap."""
        self.size += size
        return self.size <= self.bound.max_bytes


class CappedBody(NamedTuple):
    """A body read up to a cap: its bytes (the start, when cut), their count, whether whole."""

    data: bytes
    size: int
    whole: bool


def read_capped(read: Callable[[int], bytes], cap: int, chunk: int = READ_CHUNK) -> CappedBody:
    """What ``read`` gives until it ends, or its start once it passes ``cap`` bytes.

    ``read(n)`` returns at most ``n`` bytes, and ``b""`` at the end (a file's
    or a raw stream's ``read``). At most ``cap + chunk`` bytes are ever held.
    """
    return _gather(iter(lambda: read(min(chunk, cap + 1)), b""), cap)


def gather_capped(chunks: Iterable[bytes], cap: int) -> CappedBody:
    """``chunks`` joined, or their start once they pass ``cap`` bytes (the rest is not read)."""
    return _gather(iter(chunks), cap)


def _gather(chunks: Iterable[bytes], cap: int) -> CappedBody:
    held: list[bytes] = []
    size = 0
    for piece in chunks:
        if not piece:
            continue
        held.append(piece)
        size += len(piece)
        if size > cap:
            return CappedBody(b"".join(held), size, False)
    return CappedBody(b"".join(held), size, True)


async def aread_capped(
    read: Callable[[int], Awaitable[bytes]], cap: int, chunk: int = READ_CHUNK
) -> CappedBody:
    """:func:`read_capped` for an async ``read`` (an aiohttp body, an asyncio stream)."""
    held: list[bytes] = []
    size = 0
    while piece := await read(chunk):
        held.append(piece)
        size += len(piece)
        if size > cap:
            return CappedBody(b"".join(held), size, False)
    return CappedBody(b"".join(held), size, True)


async def aread(read: Callable[[int], Awaitable[bytes]], bound: PeerBound) -> bytes:
    """A whole reply from an async ``read``, within ``bound``'s size and deadline.

    Raises:
        PeerOutOfBounds: the reply passed the size cap or the deadline.
    """
    import asyncio  # here: the command table imports this module, and asyncio is heavy

    try:
        async with asyncio.timeout(None if math.isinf(bound.seconds) else bound.seconds):
            body = await aread_capped(read, bound.max_bytes)
    except TimeoutError:
        raise too_slow(bound) from None
    if not body.whole:
        raise too_large(bound, body.size)
    return body.data


def read_whole(read: Callable[[int], bytes], bound: PeerBound) -> bytes:
    """A whole reply from a blocking ``read``, within ``bound``'s size cap.

    The deadline of a blocking read is kept by :class:`SocketDeadline`
    around the exchange (a read cannot be interrupted from inside it).

    Raises:
        PeerOutOfBounds: the reply passed the size cap.
    """
    body = read_capped(read, bound.max_bytes)
    if not body.whole:
        raise too_large(bound, body.size)
    return body.data


def parse_json(data: bytes | str, bound: PeerBound) -> Any:
    """The JSON value in ``data``, within ``bound``'s size and depth.

    The depth is found by a scan before parsing, so no parser (nor any later
    walk of the value) meets more levels than the bound; an integer longer
    than Python reads is refused too, in the same one line.

    Raises:
        PeerOutOfBounds: over the size cap, nested too deep, or an unreadable number.
        json.JSONDecodeError: ``data`` is not JSON (a ValueError).
    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if len(raw) > bound.max_bytes:
        raise too_large(bound, len(raw))
    if text_nests_deeper(raw, limit=bound.max_depth):
        raise too_deep(bound)
    try:
        return json.loads(data)
    except RecursionError:
        raise too_deep(bound) from None
    except ValueError as exc:
        if "digits" in str(exc) and not isinstance(exc, json.JSONDecodeError):
            # Python refuses to read an integer of thousands of digits.
            raise too_deep(bound, "a number of thousands of digits") from None
        raise


def read_file(path: Path, bound: PeerBound) -> bytes:
    """``path``'s bytes, refused past ``bound``'s size cap without reading the rest.

    Only a regular file is read: a pipe or a device (``/dev/zero``, a FIFO
    nobody writes to) would never end. The cap holds even when the file
    grows while it is read.

    Raises:
        PeerOutOfBounds: the file holds more than the cap.
        NotARegularFile: ``path`` is a folder, a pipe or a device (an OSError).
        OSError: the file cannot be read.
    """
    # Checked before opening too: opening a FIFO nobody writes to blocks.
    if path.exists() and not path.is_dir() and not stat.S_ISREG(path.stat().st_mode):
        raise NotARegularFile(errno.EINVAL, "not a regular file", str(path))
    with path.open("rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise NotARegularFile(errno.EINVAL, "not a regular file", str(path))
        body = read_capped(handle.read, bound.max_bytes)
    if not body.whole:
        raise too_large(bound, body.size)
    return body.data


class NotARegularFile(OSError):
    """A path that names a folder, a pipe or a device where a file's contents are read."""


class SocketDeadline:
    """A deadline over a blocking exchange: its sockets are shut down when the time is up.

    A blocked ``recv`` returns at once when its socket is shut down, so a
    peer that trickles bytes cannot hold the thread past the deadline, what
    ever each read's own timeout. Entered on the thread that makes the
    exchange; sockets opened meanwhile are registered with :func:`watch_socket`
    (the tool caller's adapter and the trace exporter's do).

    Args:
        seconds: The time the whole exchange may take.
        clock: Seconds on a monotonic clock (a parameter for tests).
    """

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self._clock = clock
        self._ends = clock() + seconds
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._expired = False
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._outer: SocketDeadline | None = None

    @property
    def expired(self) -> bool:
        """The time is up (the exchange's sockets were shut down)."""
        return self._expired

    def remaining(self) -> float:
        """Seconds left, never below zero."""
        return max(0.0, self._ends - self._clock())

    def watch(self, sock: socket.socket) -> None:
        """Shut ``sock`` down when the time is up (at once if it already is)."""
        with self._lock:
            if self._expired:
                _shut(sock)
            else:
                self._sockets.append(sock)

    def __enter__(self) -> SocketDeadline:
        self._outer = getattr(_current, "deadline", None)
        _current.deadline = self
        self._timer.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._timer.cancel()
        _current.deadline = self._outer
        with self._lock:
            # Pooled sockets outlive the exchange; the next one watches them anew.
            self._sockets.clear()

    def _expire(self) -> None:
        with self._lock:
            self._expired = True
            for sock in self._sockets:
                _shut(sock)
            self._sockets.clear()


_current = threading.local()


def watch_socket(sock: socket.socket | None) -> None:
    """Put ``sock`` under the deadline of the exchange this thread is in, if any."""
    deadline: SocketDeadline | None = getattr(_current, "deadline", None)
    if deadline is not None and sock is not None:
        deadline.watch(sock)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed: nothing left to stop
